"""aviPAM benchmark: PAMVI (4-PAM, 5-PAM) and MoLDA against tomotopy's Gibbs PAModel.

Reproduces the settings of the aviPAM paper's Tables 1-4 (Srivastava & Sutton 2018)
on 20 Newsgroups (AVITM preprocessing) and NIPS (UCI, words with count > 20), with
reduced epochs / iterations so that one run fits a few minutes on a 2-core CPU.
Every model is trained in the same process, one after the other, and timed with
``time.perf_counter`` around ``fit`` / ``train`` only.

Coherence: NPMI of the top 10 words, boolean-document counts over the **test
split** (``sktopics.metrics.npmi_coherence``), in two conventions: "eps" (gensim,
a pair that never co-occurs scores about -1) and "zero" (Lau / Scholar, such pairs
score 0; the paper used Lau et al.'s toolkit). Topic diversity (TD) on the top 10
words. For MoLDA the coherence is also reported per component (coarse / fine).

PAMVI is trained in chunks of ``--chunk`` epochs (warm start), the test NPMI being
measured after each chunk outside the timed region, to report when it first
reaches tomotopy's NPMI. ``--seeds`` repeats every fit with each seed (a row per
seed).

Usage::

    python benchmarks/bench_pam.py                     # 20NG, 50 sub / 2 super (Table 1)
    python benchmarks/bench_pam.py --settings small large --datasets 20ng nips --seeds 0 1 2
    python benchmarks/bench_pam.py --epochs 40 --tomotopy-iters 200

Writes ``benchmarks/results/pam.{json,rst}`` (``--output-name``, ``--output-dir``);
``--merge`` gathers the results of several runs into one file, a row per (data,
setting, seed, model) and each run's arguments; ``--report-only`` redraws the page
from the JSON.
"""

import argparse
import json
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from _common import (
    MachineLoad,
    add_result_arguments,
    commit_text,
    default_data_home,
    doc_words,
    load_sentence,
    machine,
    report_only,
    write_results,
)

import sktopics
from sktopics import PAMVI, MoLDA
from sktopics.metrics import npmi_coherence, topic_diversity

DATA_HOME = default_data_home()

#: (label, sub-topics, super-topics, super-duper-topics, MoLDA components), per the paper.
SETTINGS = {
    "small": dict(k_sub=50, k_super=2, k_duper=2, molda=(10, 50)),  # Tables 1 and 3
    "large": dict(k_sub=100, k_super=50, k_duper=10, molda=(50, 100)),  # Tables 2 and 4
}

#: The paper's numbers (NPMI, Lau toolkit; minutes), for the table.
PAPER = {
    ("20ng", "small"): {"4-PAM Gibbs": 0.20, "4-PAM": 0.24, "5-PAM": 0.24, "MoLDA": "0.29 / 0.21"},
    ("20ng", "large"): {"4-PAM Gibbs": "0.19 (594 min)", "4-PAM": "0.22 (11 min)",
                        "5-PAM": "0.21 (16 min)", "MoLDA": "0.24 / 0.21 (16 min)"},
    ("nips", "small"): {"4-PAM Gibbs": 0.033, "4-PAM": 0.042, "5-PAM": 0.039,
                        "MoLDA": "0.036 / 0.024"},
    ("nips", "large"): {"4-PAM Gibbs": "0.047 (892 min)", "4-PAM": "0.041 (19 min)",
                        "5-PAM": "0.045 (26 min)", "MoLDA": "0.025 / 0.024 (11 min)"},
}


def load(name):
    from sktopics.datasets import load_20news_avitm, load_nips

    loader = {"20ng": load_20news_avitm, "nips": load_nips}[name]
    train = loader(DATA_HOME, subset="train")
    test = loader(DATA_HOME, subset="test")
    return train.data.tocsr(), test.data.tocsr(), list(train.feature_names)


def coherence(topic_word, X_test):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = npmi_coherence(topic_word, X_test, top_n=10, zero_cooccurrence="epsilon").mean
        zero = npmi_coherence(topic_word, X_test, top_n=10, zero_cooccurrence="zero").mean
    return float(eps), float(zero)


def row(model_name, dataset, setting, topic_word, X_test, seconds, epochs, extra=None):
    eps, zero = coherence(topic_word, X_test)
    result = dict(
        model=model_name, dataset=dataset, setting=setting, npmi_eps=eps, npmi_zero=zero,
        td=float(topic_diversity(topic_word, top_n=10)), fit_seconds=seconds,
        iterations=epochs, n_topics=int(topic_word.shape[0]),
    )
    result.update(extra or {})
    print(f"  {model_name:<24} NPMI eps {eps:.3f} zero {zero:.3f}  TD {result['td']:.2f}  "
          f"{seconds:.1f}s ({epochs} it)", flush=True)
    return result


def run_neural(name, make, X, X_test, epochs, chunk, dataset, setting, target=None):
    """Fit in warm-started chunks; NPMI measured between chunks, outside the timer."""
    model = make(max_iter=chunk, warm_start=True)
    seconds, trace = 0.0, []
    done = 0
    while done < epochs:
        model.set_params(max_iter=min(chunk, epochs - done))
        start = time.perf_counter()
        model.fit(X)
        seconds += time.perf_counter() - start
        done += model.max_iter
        eps, zero = coherence(model.components_, X_test)
        trace.append(dict(epochs=done, seconds=seconds, npmi_eps=eps, npmi_zero=zero))
    extra = dict(trace=trace)
    if target is not None:
        hit = [t for t in trace if t["npmi_eps"] >= target]
        extra["seconds_to_tomotopy_npmi"] = hit[0]["seconds"] if hit else None
    if isinstance(model, MoLDA):
        parts = [coherence(c, X_test) for c in model.components_per_model_]
        extra["per_component_npmi_eps"] = [p[0] for p in parts]
        extra["per_component_npmi_zero"] = [p[1] for p in parts]
        extra["per_component_td"] = [float(topic_diversity(c, top_n=10))
                                     for c in model.components_per_model_]
    return row(name, dataset, setting, model.components_, X_test, seconds, done, extra), model


def tomotopy_add_docs(model, X, vocab):
    """Add each non-empty document of the counts ``X`` to a tomotopy model, as words."""
    for words in doc_words(X):
        if words.size:
            model.add_doc([vocab[w] for w in words])


def tomotopy_topic_word(model, vocab, n_topics):
    """A trained tomotopy model's (leaf) topic-word matrix, in the columns of ``vocab``."""
    index = {w: i for i, w in enumerate(vocab)}
    columns = np.array([index[w] for w in model.used_vocabs])
    topic_word = np.zeros((n_topics, len(vocab)))
    for k in range(n_topics):
        topic_word[k, columns] = model.get_topic_word_dist(k)
    return topic_word


def run_tomotopy(X, X_test, vocab, k_super, k_sub, iterations, seed, dataset, setting, workers):
    import tomotopy as tp

    model = tp.PAModel(k1=k_super, k2=k_sub, seed=seed)
    tomotopy_add_docs(model, X, vocab)
    start = time.perf_counter()
    step = max(1, iterations // 5)
    done = 0
    while done < iterations:
        n = min(step, iterations - done)
        model.train(n, workers=workers)
        done += n
    seconds = time.perf_counter() - start
    return row(f"tomotopy PAModel ({iterations} it)", dataset, setting,
               tomotopy_topic_word(model, vocab, k_sub), X_test, seconds, iterations,
               dict(ll_per_word=float(model.ll_per_word)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["20ng"], choices=["20ng", "nips"])
    parser.add_argument("--settings", nargs="+", default=["small"], choices=list(SETTINGS))
    parser.add_argument("--models", nargs="+", default=["4pam", "5pam", "molda", "tomotopy"],
                        choices=["4pam", "4pam-l2", "5pam", "molda", "tomotopy"])
    parser.add_argument("--epochs", type=int, default=30, help="PAMVI / MoLDA epochs")
    parser.add_argument("--chunk", type=int, default=5, help="epochs between NPMI checks")
    parser.add_argument("--tomotopy-iters", type=int, default=200)
    parser.add_argument("--threads", type=int, default=1,
                        help="torch intra-op threads; 1 is several times faster than 2 on a "
                             "shared, oversubscribed 2-core machine")
    parser.add_argument("--tomotopy-workers", type=int, default=1)
    parser.add_argument("--learning-rate", type=float, default=None)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0],
                        help="one fit of every model per seed")
    parser.add_argument("--dropout", type=float, default=None)
    parser.add_argument("--batch-size", type=int, default=None,
                        help="default: the paper's (200 on 20NG, 50 on NIPS)")
    parser.add_argument("--merge", nargs="+", default=None, metavar="JSON",
                        help="only merge the results of earlier runs into one file")
    parser.add_argument("--note", default="", help="a sentence added to the page")
    add_result_arguments(parser, "pam")
    args = parser.parse_args(argv)
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    if args.merge:
        write_results(args.output_name, merge([json.loads(Path(path).read_text())
                                               for path in args.merge], args.note), report,
                      directory=args.output_dir)
        return 0
    torch.set_num_threads(args.threads)

    results = []
    info = machine()
    header = dict(
        date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        machine=f"{info['cpu']}, {os.cpu_count()} CPU cores, no GPU"
        if not torch.cuda.is_available() else torch.cuda.get_device_name(0),
        python=platform.python_version(), torch=torch.__version__,
        sktopics=sktopics.__version__, commit=commit_text(info),
        torch_threads=torch.get_num_threads(), args=vars(args),
    )
    machine_load = MachineLoad().__enter__()
    for dataset in args.datasets:
        X, X_test, vocab = load(dataset)
        batch = 200 if dataset == "20ng" else 50  # the paper's batch sizes
        batch = args.batch_size or batch
        print(f"{dataset}: train {X.shape}, test {X_test.shape}", flush=True)
        for setting in args.settings:
            for seed in args.seeds:
                results += run_setting(args, dataset, setting, seed, X, X_test, vocab, batch)

    machine_load.__exit__(None, None, None)
    header.update(load=machine_load.summary())
    write_results(args.output_name, dict(header=header, results=results), report,
                  directory=args.output_dir)


def run_setting(args, dataset, setting, seed, X, X_test, vocab, batch):
    """The rows of every model of ``args.models`` at one (data, setting, seed)."""
    cfg = SETTINGS[setting]
    print(f"[{dataset} / {setting} / seed {seed}] {cfg}", flush=True)
    common = dict(batch_size=batch, device="auto", random_state=seed)
    if args.learning_rate is not None:
        common["learning_rate"] = args.learning_rate
    if args.dropout is not None:
        common["dropout"] = args.dropout
    results, target = [], None
    if "tomotopy" in args.models:
        res = run_tomotopy(X, X_test, vocab, cfg["k_super"], cfg["k_sub"],
                           args.tomotopy_iters, seed, dataset, setting, args.tomotopy_workers)
        results.append(res)
        target = res["npmi_eps"]
    neural = {
        "4pam": (f"PAMVI 4-PAM ({cfg['k_super']}/{cfg['k_sub']})",
                 lambda **kw: PAMVI((cfg["k_super"], cfg["k_sub"]), **common, **kw)),
        "4pam-l2": (f"PAMVI 4-PAM l2 ({cfg['k_super']}/{cfg['k_sub']})",
                    lambda **kw: PAMVI((cfg["k_super"], cfg["k_sub"]),
                                       logvar_norm="l2", **common, **kw)),
        "5pam": (f"PAMVI 5-PAM ({cfg['k_duper']}/{cfg['k_super']}/{cfg['k_sub']})",
                 lambda **kw: PAMVI((cfg["k_duper"], cfg["k_super"], cfg["k_sub"]),
                                    **common, **kw)),
        "molda": (f"MoLDA{cfg['molda']}",
                  lambda **kw: MoLDA(cfg["molda"], **common, **kw)),
    }
    for key in args.models:
        if key in neural:
            name, make = neural[key]
            res, _ = run_neural(name, make, X, X_test, args.epochs, args.chunk,
                                dataset, setting, target)
            results.append(res)
    for res in results:
        res["seed"] = seed
    return results


def merge(runs, note=""):
    """One results file of several runs: the first run's header with every run's
    arguments and date, the rows of all (each with its run's seed)."""
    header = dict(runs[0]["header"], note=note,
                  args=[arg for run in runs for arg in _as_list(run["header"]["args"])],
                  dates=[date for run in runs for date in _as_list(run["header"].get(
                      "dates", run["header"]["date"]))])
    results = []
    for run in runs:
        seed = _as_list(run["header"]["args"])[0].get("seed", 0)
        results += [{"seed": seed, **row} for row in run["results"]]
    return dict(header=header, results=results)


def _as_list(value):
    return value if isinstance(value, list) else [value]


def report(payload):
    """The results page of :func:`main`'s (or :func:`merge`'s) JSON."""
    header, results = payload["header"], payload["results"]
    runs = _as_list(header["args"])
    dates = _as_list(header.get("dates", header["date"]))
    if "load" in header:
        load = " " + load_sentence(header["load"])
    else:
        load = f" {header['load_sentence']}" if header.get("load_sentence") else ""
    commit = f", commit {header['commit']}" if header.get("commit") else ""
    # where the files went and how the run was called are not settings of the benchmark
    hidden = ("out", "merge", "output_name", "output_dir", "report_only")
    if len(runs) == 1:
        arguments = ("Arguments: `"
                     + json.dumps({k: v for k, v in runs[0].items() if k not in hidden}) + "`.")
    else:  # the arguments the runs share, then each run's own and its note
        keys = [k for k in dict.fromkeys(k for a in runs for k in a)
                if k not in hidden + ("note",)]
        common = {k: runs[0].get(k) for k in keys if all(a.get(k) == runs[0].get(k)
                                                          for a in runs)}
        arguments = f"{len(runs)} runs, with the arguments `{json.dumps(common)}` and: " + "; ".join(
            f"({i + 1}) {date}, `{json.dumps({k: a.get(k) for k in keys if k not in common})}`"
            + (f", {a['note'].rstrip('.')}" if a.get("note") else "")
            for i, (date, a) in enumerate(zip(dates, runs))) + "."
    lines = [
        "# PAMVI / MoLDA vs tomotopy PAModel",
        "",
        f"*measured on {header['machine']}*, {dates[0]}; Python {header['python']}, "
        f"torch {header['torch']} ({header['torch_threads']} threads), sktopics "
        f"{header['sktopics']}{commit}.{load} {arguments}",
        "",
        "NPMI: top 10 words, boolean-document counts over the **test split**; "
        "`eps` = gensim convention (never co-occurring pair ~ -1), `zero` = Lau/Scholar "
        "convention (such pairs score 0). TD: unique fraction of the top-10 words. "
        "Seconds: `fit` / `train` only; the models of one run are trained in the same "
        "process, one after the other. " + header.get("note", ""),
        "",
        "| data | setting | seed | model | NPMI eps | NPMI zero | TD | fit s | epochs/iters | "
        "s to tomotopy NPMI | paper |",
        "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for r in results:
        paper_key = ("4-PAM Gibbs" if r["model"].startswith("tomotopy") else
                     "5-PAM" if "5-PAM" in r["model"] else
                     "MoLDA" if r["model"].startswith("MoLDA") else "4-PAM")
        paper = PAPER.get((r["dataset"], r["setting"]), {}).get(paper_key, "")
        reach = r.get("seconds_to_tomotopy_npmi", "")
        reach = "" if reach == "" else ("not reached" if reach is None else f"{reach:.1f}")
        model = r["model"]
        if "per_component_npmi_eps" in r:
            model += " (per component eps: " + " / ".join(
                f"{v:.3f}" for v in r["per_component_npmi_eps"]) + ")"
        seed = r.get("seed", runs[0].get("seed", 0))
        lines.append(
            f"| {r['dataset']} | {r['setting']} | {seed} | {model} | {r['npmi_eps']:.3f} | "
            f"{r['npmi_zero']:.3f} | {r['td']:.2f} | {r['fit_seconds']:.1f} | "
            f"{r['iterations']} | {reach} | {paper} |"
        )
    lines += ["", "Paper column: aviPAM (Srivastava & Sutton 2018), NPMI with Lau et al.'s "
              "toolkit (sliding window 20, zero convention) on their own reference corpus, GPU "
              "training minutes in parentheses; not directly comparable with our test-split "
              "boolean-document NPMI.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
