"""aviPAM benchmark: PAMVI (4-PAM, 5-PAM) and MoLDA against tomotopy's Gibbs PAModel at equal time.

The settings of the aviPAM paper's Tables 1-4 (Srivastava & Sutton 2018): 20 Newsgroups
(AVITM's preprocessing) and NIPS (UCI, words with count > 20), with 2 super- / 50
sub-topics ("small") or 50 / 100 ("large", 5-PAM with 10 / 50 / 100, MoLDA (50, 100)).
Every model is trained in one process, one after the other, on the same cores
(``--n-jobs`` torch threads, as many tomotopy workers).

Each neural model is **one default fit** (``max_iter="auto"``, batch 64 unless
``--batch-size``), timed around ``fit``; a callback copies the topics at a few epochs
(the time of the copies is subtracted), so the held-out NPMI can be drawn against
seconds without interrupting the fit. tomotopy's ``PAModel`` then trains in chunks of
sweeps, its NPMI measured between chunks outside the timer, until it has run
``--tomotopy-ratio`` times the 4-PAM fit's time and at least ``--tomotopy-iters``
sweeps, or for ``--tomotopy-max-seconds``.

Coherence: NPMI of the top 10 words, boolean-document counts over the **test split**
(``sktopics.metrics.npmi_coherence``), in gensim's "epsilon" convention (a pair that
never co-occurs scores about -1) and Lau's "zero" convention (such pairs score 0; the
paper used Lau et al.'s toolkit). Topic diversity (TD) of the top 10 words.

Usage::

    python benchmarks/bench_pam.py                       # 20NG and NIPS, both settings
    python benchmarks/bench_pam.py --datasets 20ng --settings small --models 4pam tomotopy

Writes ``benchmarks/results/pam.{json,rst,png}`` (``--output-name``, ``--output-dir``);
``--report-only`` redraws the page and the picture from the JSON.
"""

import argparse
import json
import os
import sys
import time
import warnings

import numpy as np
import torch
from _common import (
    MachineLoad,
    add_result_arguments,
    commit_text,
    doc_words,
    load_pam_corpus,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)
from skorch.callbacks import Callback

import sktopics
from sktopics import PAMVI, MoLDA
from sktopics.metrics import npmi_coherence, topic_diversity

#: Sub-topics, super-topics, the 5-PAM's top level and MoLDA's components, per the paper.
SETTINGS = {
    "small": dict(k_sub=50, k_super=2, k_duper=2, molda=(10, 50)),  # Tables 1 and 3
    "large": dict(k_sub=100, k_super=50, k_duper=10, molda=(50, 100)),  # Tables 2 and 4
}

#: The paper's numbers (NPMI, Lau toolkit; GPU minutes), for the table.
PAPER = {
    ("20ng", "small"): {"tomotopy": "0.20", "4pam": "0.24", "5pam": "0.24", "molda": "0.29 / 0.21"},
    ("20ng", "large"): {"tomotopy": "0.19 (594 min)", "4pam": "0.22 (11 min)",
                        "5pam": "0.21 (16 min)", "molda": "0.24 / 0.21 (16 min)"},
    ("nips", "small"): {"tomotopy": "0.033", "4pam": "0.042", "5pam": "0.039",
                        "molda": "0.036 / 0.024"},
    ("nips", "large"): {"tomotopy": "0.047 (892 min)", "4pam": "0.041 (19 min)",
                        "5pam": "0.045 (26 min)", "molda": "0.025 / 0.024 (11 min)"},
}

#: Epochs at which the callback copies the topics (and the last one).
SNAPSHOT_EPOCHS = (1, 2, 3, 5, 7, 10, 15, 20, 30, 40, 50, 60, 70, 80, 90, 100, 120, 150, 200)

#: Sweeps at which tomotopy's NPMI is measured (and every ``step`` sweeps, see run_tomotopy).
CHECK_SWEEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000)


def quality(topic_word, X_test):
    """NPMI (epsilon and zero conventions) and topic diversity of the top 10 words."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        eps = npmi_coherence(topic_word, X_test, top_n=10, zero_cooccurrence="epsilon").mean
        zero = npmi_coherence(topic_word, X_test, top_n=10, zero_cooccurrence="zero").mean
    return dict(npmi_eps=float(eps), npmi_zero=float(zero),
                td=float(topic_diversity(topic_word, top_n=10)))


class TopicSnapshots(Callback):
    """Copies the decoder's topics at :data:`SNAPSHOT_EPOCHS`, with the seconds since
    ``started`` less the time the copies took."""

    def __init__(self, started):
        self.started = started

    def initialize(self):
        self.snapshots, self.overhead = [], 0.0
        return self

    def on_epoch_end(self, net, **kwargs):
        epoch = len(net.history)
        if epoch not in SNAPSHOT_EPOCHS:
            return
        tic = time.perf_counter()
        with torch.no_grad():
            topic_word = net.module_.decoder.topic_word().double().cpu().numpy()
        self.snapshots.append(dict(epochs=epoch, seconds=tic - self.started[0] - self.overhead,
                                   topic_word=topic_word / topic_word.sum(1, keepdims=True)))
        self.overhead += time.perf_counter() - tic


def run_neural(key, name, make, X, X_test):
    """One default fit, its topics' quality at the snapshot epochs and at the end."""
    started = [0.0]
    snapshots = TopicSnapshots(started)
    model = make(callbacks=[("snapshots", snapshots)])
    started[0] = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - started[0] - snapshots.overhead
    trace = [dict(epochs=s["epochs"], seconds=s["seconds"], **quality(s["topic_word"], X_test))
             for s in snapshots.snapshots]
    result = dict(key=key, model=name, fit_seconds=seconds, iterations=int(model.n_iter_),
                  n_topics=int(model.components_.shape[0]), trace=trace,
                  **quality(model.components_, X_test))
    if isinstance(model, MoLDA):
        result["per_component"] = [quality(c, X_test) for c in model.components_per_model_]
    return result


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


def run_tomotopy(X, X_test, vocab, cfg, seed, workers, budget, min_sweeps, max_seconds):
    """Sweeps until ``budget`` seconds and ``min_sweeps`` sweeps (or ``max_seconds``),
    the topics' quality measured between chunks, outside the timer."""
    import tomotopy as tp

    model = tp.PAModel(k1=cfg["k_super"], k2=cfg["k_sub"], seed=seed)
    tomotopy_add_docs(model, X, vocab)
    seconds, sweeps, trace, step = 0.0, 0, [], None
    while True:
        due = [s for s in CHECK_SWEEPS if s > sweeps]
        target = min(due) if due else sweeps + step
        if step is not None:  # about 20 checks over the budget besides the fixed ones
            target = min(target, (sweeps // step + 1) * step)
        tic = time.perf_counter()
        model.train(target - sweeps, workers=workers)
        seconds += time.perf_counter() - tic
        sweeps = target
        if step is None:
            step = max(1, int(round(budget / 20 / (seconds / sweeps))))
        trace.append(dict(epochs=sweeps, seconds=seconds,
                          **quality(tomotopy_topic_word(model, vocab, cfg["k_sub"]), X_test)))
        print(f"    tomotopy {sweeps} sweeps {seconds:.1f} s NPMI {trace[-1]['npmi_eps']:.3f}",
              flush=True)
        if (seconds >= budget and sweeps >= min_sweeps) or seconds >= max_seconds:
            break
    last = trace[-1]
    return dict(key="tomotopy", model=f"tomotopy PAModel ({sweeps} sweeps)", fit_seconds=seconds,
                iterations=sweeps, n_topics=cfg["k_sub"], trace=trace,
                capped=seconds >= max_seconds and not (seconds >= budget and sweeps >= min_sweeps),
                ll_per_word=float(model.ll_per_word),
                **{k: last[k] for k in ("npmi_eps", "npmi_zero", "td")})


def run_setting(args, dataset, setting, X, X_test, vocab):
    """The rows of every model of ``args.models`` at one (data, setting)."""
    cfg = SETTINGS[setting]
    print(f"[{dataset} / {setting}] {cfg}", flush=True)
    common = dict(batch_size=args.batch_size, n_jobs=args.n_jobs, random_state=args.seed)
    if args.epochs is not None:
        common["max_iter"] = args.epochs
    neural = {
        "4pam": (f"PAMVI {(cfg['k_super'], cfg['k_sub'])}",
                 lambda **kw: PAMVI((cfg["k_super"], cfg["k_sub"]), **common, **kw)),
        "5pam": (f"PAMVI {(cfg['k_duper'], cfg['k_super'], cfg['k_sub'])}",
                 lambda **kw: PAMVI((cfg["k_duper"], cfg["k_super"], cfg["k_sub"]),
                                    **common, **kw)),
        "molda": (f"MoLDA{cfg['molda']}", lambda **kw: MoLDA(cfg["molda"], **common, **kw)),
    }
    results = []
    for key in args.models:
        if key in neural:
            result = run_neural(key, *neural[key], X, X_test)
            results.append(result)
            print(f"  {result['model']:<24} NPMI {result['npmi_eps']:.3f}  TD {result['td']:.2f}"
                  f"  {result['fit_seconds']:.1f} s ({result['iterations']} epochs)", flush=True)
    if "tomotopy" in args.models:
        reference = next((r["fit_seconds"] for r in results if r["key"] == "4pam"), 0.0)
        results.append(run_tomotopy(
            X, X_test, vocab, cfg, args.seed, args.n_jobs if args.n_jobs > 0 else os.cpu_count(),
            args.tomotopy_ratio * reference, args.tomotopy_iters, args.tomotopy_max_seconds))
    for result in results:
        result.update(dataset=dataset, setting=setting, seed=args.seed)
    return results


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--datasets", nargs="+", default=["20ng", "nips"], choices=["20ng", "nips"])
    parser.add_argument("--settings", nargs="+", default=["small", "large"], choices=list(SETTINGS))
    parser.add_argument("--models", nargs="+", default=["4pam", "5pam", "molda", "tomotopy"],
                        choices=["4pam", "5pam", "molda", "tomotopy"])
    parser.add_argument("--epochs", type=int, default=None,
                        help="max_iter of the neural models (default: their own, 'auto')")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--n-jobs", type=int, default=os.cpu_count(),
                        help="torch threads of the neural fits, and tomotopy's workers")
    parser.add_argument("--tomotopy-ratio", type=float, default=3.0,
                        help="tomotopy trains for this many times the 4-PAM fit's seconds")
    parser.add_argument("--tomotopy-iters", type=int, default=200,
                        help="and for at least this many sweeps")
    parser.add_argument("--tomotopy-max-seconds", type=float, default=1500.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--note", default="", help="a sentence added to the page")
    add_result_arguments(parser, "pam")
    args = parser.parse_args(argv)
    if args.report_only:
        report_only([args.output_dir / f"{args.output_name}.json"], report)
        return draw(json.loads((args.output_dir / f"{args.output_name}.json").read_text()),
                    args.output_dir / f"{args.output_name}.png")

    info = machine()
    header = dict(date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), machine=info["cpu"],
                  cores=os.cpu_count(), python=info["python"], torch=info["torch"],
                  sktopics=sktopics.__version__, commit=commit_text(info), args=vars(args))
    results = []
    warnings.filterwarnings("ignore", message="The training result may differ")  # tomotopy's
    warm_up()
    with MachineLoad() as machine_load:
        for dataset in args.datasets:
            train, _, X, X_test = load_pam_corpus(dataset)
            vocab = list(train.feature_names)
            print(f"{dataset}: train {X.shape}, test {X_test.shape}", flush=True)
            for setting in args.settings:
                results += run_setting(args, dataset, setting, X, X_test, vocab)
    header.update(load=machine_load.summary())
    payload = dict(header=header, results=results)
    path = write_results(args.output_name, payload, report, directory=args.output_dir)
    draw(payload, path.with_suffix(".png"))
    return 0


def warm_up():
    """One tiny fit, so that the first timed fit does not pay the imports and first calls."""
    from sktopics.datasets import make_pam_corpus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        PAMVI((2, 5), max_iter=1).fit(make_pam_corpus(n_samples=64, random_state=0)[0])


def at_time(trace, seconds):
    """The last point of ``trace`` reached within ``seconds`` (None if none)."""
    points = [p for p in trace if p["seconds"] <= seconds * (1 + 1e-9)]
    return points[-1] if points else None


def comparisons(results):
    """Per neural fit: tomotopy's NPMI at the fit's time and at three times it, and the
    neural model's NPMI at tomotopy's time for ``--tomotopy-iters`` sweeps."""
    rows = []
    groups = {}
    for r in results:
        groups.setdefault((r["dataset"], r["setting"]), []).append(r)
    for (dataset, setting), group in groups.items():
        gibbs = next((r for r in group if r["key"] == "tomotopy"), None)
        if gibbs is None:
            continue
        for r in group:
            if r is gibbs:
                continue
            row = {"data": dataset, "setting": setting, "model": r["model"],
                   "fit s": r["fit_seconds"], "NPMI": r["npmi_eps"], "TD": r["td"]}
            for factor, label in ((1, "equal time"), (3, "3x time")):
                point = at_time(gibbs["trace"], factor * r["fit_seconds"])
                short = factor * r["fit_seconds"] > gibbs["fit_seconds"] * 1.05
                row[f"tomotopy at {label}"] = (
                    "no sweep done" if point is None
                    else f"{point['npmi_eps']:.3f} (TD {point['td']:.2f}, {point['epochs']} sweeps"
                    + (f"; its last, at {point['seconds']:.0f} s)" if short else ")"))
            rows.append(row)
    return rows


def report(payload):
    """The results page of :func:`main`'s JSON."""
    header, results = payload["header"], payload["results"]
    args = {k: v for k, v in header["args"].items()
            if k not in ("output_name", "output_dir", "report_only")}
    lines = [
        "# PAMVI / MoLDA against tomotopy's PAModel",
        "",
        f"*measured on {header['machine']}, {header['cores']} CPU cores*, {header['date']}; "
        f"Python {header['python']}, torch {header['torch']}, sktopics {header['sktopics']}, "
        f"commit {header['commit']}. {load_sentence(header['load'])} "
        f"Arguments: `{json.dumps(args)}`. {header['args'].get('note', '')}",
        "",
        "NPMI: top 10 words, boolean-document counts over the **test split**, gensim's "
        "epsilon convention (`zero`: Lau's, pairs that never co-occur score 0). TD: "
        "unique fraction of the top-10 words. Seconds: `fit` (one default fit, topics "
        "copied at a few epochs, the copies' time subtracted) or tomotopy's `train` calls.",
        "",
    ]
    rows = []
    for r in results:
        paper = PAPER.get((r["dataset"], r["setting"]), {}).get(r["key"], "")
        model = r["model"] + (" (capped)" if r.get("capped") else "")
        if "per_component" in r:
            model += " (components: " + " / ".join(
                f"{c['npmi_eps']:.3f}" for c in r["per_component"]) + ")"
        rows.append({"data": r["dataset"], "setting": r["setting"], "model": model,
                     "NPMI": r["npmi_eps"], "NPMI zero": r["npmi_zero"], "TD": r["td"],
                     "fit s": r["fit_seconds"], "epochs / sweeps": r["iterations"],
                     "paper": paper})
    lines.append(markdown_table(rows, ["data", "setting", "model", "NPMI", "NPMI zero", "TD",
                                       "fit s", "epochs / sweeps", "paper"]))
    compared = comparisons(results)
    if compared:
        lines += ["", "At equal time: tomotopy's NPMI (epsilon) at the last sweep within each "
                  "neural fit's seconds, and within three times them (tomotopy ran three "
                  "times the 4-PAM fit's seconds, and at least its minimum sweeps: where "
                  "that is short of three times another fit's, its last point).", "",
                  markdown_table(compared, list(compared[0]))]
    lines += ["", "Paper column: aviPAM (Srivastava & Sutton 2018), NPMI with Lau et al.'s "
              "toolkit (sliding window 20, zero convention) on its own reference corpus, GPU "
              "training minutes in parentheses; not comparable with this test-split "
              "boolean-document NPMI.", ""]
    return "\n".join(lines)


def draw(payload, path):
    """NPMI and topic diversity against seconds, a column per (data, setting)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    results = payload["results"]
    panels = list(dict.fromkeys((r["dataset"], r["setting"]) for r in results))
    fig, axes = plt.subplots(2, len(panels), figsize=(4.2 * len(panels), 6.4), squeeze=False,
                             sharex="col", constrained_layout=True)
    colours = {"4pam": "C0", "5pam": "C2", "molda": "C4", "tomotopy": "C3"}
    for column, panel in enumerate(panels):
        for r in (r for r in results if (r["dataset"], r["setting"]) == panel):
            points = r["trace"] + ([] if r["key"] == "tomotopy" else [
                dict(seconds=r["fit_seconds"], npmi_eps=r["npmi_eps"], td=r["td"])])
            seconds = [p["seconds"] for p in points]
            for row, metric in enumerate(("npmi_eps", "td")):
                ax = axes[row, column]
                ax.plot(seconds, [p[metric] for p in points], "o-", ms=3, lw=1.2,
                        color=colours[r["key"]], label=r["model"])
                if r["key"] != "tomotopy":
                    ax.axvline(r["fit_seconds"], color=colours[r["key"]], lw=0.6, ls=":")
        axes[0, column].set_title(f"{panel[0]}, {panel[1]} setting", fontsize=10)
        axes[0, column].set_ylabel("held-out NPMI" if column == 0 else "")
        axes[1, column].set_ylabel("topic diversity" if column == 0 else "")
        axes[1, column].set_xlabel("seconds (log scale)")
        axes[1, column].set_xscale("log")
        axes[1, column].xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        axes[0, column].legend(fontsize=7, loc="best")
        for ax in axes[:, column]:
            ax.grid(alpha=0.3)
    fig.suptitle("Against training seconds on the same cores (dotted: a neural fit's end)",
                 fontsize=10)
    fig.savefig(path, dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
