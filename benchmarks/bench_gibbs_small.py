"""Where users start: whole LDAGibbs fits on small corpora against tomotopy, and a
fresh process's first call.

Two sections, one command each; the machine's load is recorded with each.

``fits``
    Whole fits at both libraries' defaults (500 sweeps, alpha learned every 10 sweeps;
    sktopics also learns beta), one thread each (``n_jobs=1``, ``workers=1``), on
    slices of four corpora between 20,000 and 200,000 tokens (the first documents of
    the training splits of BBC News, 20 Newsgroups, the NIPS papers and the
    GoogleNews titles) at K = 10, 20 and 50. sktopics's time is ``fit`` on a CSR
    matrix; tomotopy's is ``LDAModel`` and ``add_doc`` (the documents' tokens built
    beforehand) plus ``train(500)``. Two more timings of sktopics split what learning
    the priors costs: with ``optimize_interval=None`` (the priors fixed at their
    defaults) and with the priors fixed at the values a warm-up fit learned. The
    fit's time less the second is the updates' own cost (histograms and Newton's
    iterations); the second less the first is the sampler sweeping at the learned
    priors (flatter conditionals, so its inversion searches further). The split is
    approximate: the learning fit sweeps its burn-in at the defaults and moves its
    priors towards the learned values over the updates. The systems alternate within
    a round, ``--repeats`` rounds (default 3), each with its own seed: per
    configuration, the median and range of the seconds and of the per-round ratio to
    tomotopy.
``first-call``
    The README's quick start (BBC News's training set through ``CountVectorizer`` into
    ``LDAGibbs(20)``, then ``score`` and ``transform`` of the test set) in a fresh
    process, twice in a row: the first call against the second, with numba's cache
    already on disk (``--repeats`` processes; median and range), and once with an empty
    cache (``NUMBA_CACHE_DIR`` a new folder: every kernel compiled), with the time to
    import and load the data apart.

Usage::

    python benchmarks/bench_gibbs_small.py --sections fits,first-call
    python benchmarks/bench_gibbs_small.py --quick --output-dir /tmp/small_trial

Writes ``benchmarks/results/gibbs_small.{json,rst}`` and, for the fits, the chart
``gibbs_small.png``; a section not run keeps its previous results; ``--report-only``
redraws the page and the chart.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    MachineLoad,
    add_result_arguments,
    commit_text,
    default_data_home,
    doc_words,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)

#: Slices of the training splits: (label, loader, first documents).
CORPORA = [("bbc", "bbc", 200), ("20ng", "20ng", 250), ("nips", "nips", 20),
           ("gnews", "gnews", 4000), ("bbc", "bbc", 1500), ("20ng", "20ng", 1300),
           ("nips", "nips", 100), ("gnews", "gnews", None)]


def load(name, data_home):
    from sktopics.datasets import load_20news_avitm, load_googlenews, load_nips, load_octis

    if name == "bbc":
        return load_octis("BBC_News", data_home, subset="train").data
    if name == "20ng":
        return load_20news_avitm(data_home, subset="train").data
    if name == "nips":
        return load_nips(data_home, subset="train").data
    return load_googlenews(data_home).data


def _stats(values):
    return [statistics.median(values), min(values), max(values)]


class _Tomotopy:
    """tomotopy's LDA at its defaults: the documents' tokens as strings, built once."""

    def __init__(self, X):
        self.docs = [[str(w) for w in words] for words in doc_words(X)]
        self.docs = [d for d in self.docs if d]

    def fit(self, K, seed, sweeps):
        import tomotopy as tp

        model = tp.LDAModel(k=K, seed=seed)
        for words in self.docs:
            model.add_doc(words)
        model.train(sweeps, workers=1)
        return model


def fits(data_home, ks, repeats, sweeps, corpora):
    import tomotopy  # noqa: F401 - a clear ImportError before any timing

    from sktopics import LDAGibbs

    loaded = {}
    rows = []
    for label, source, n_docs in corpora:
        if source not in loaded:
            loaded[source] = load(source, data_home)
        X = loaded[source] if n_docs is None else loaded[source][:n_docs]
        X = X.astype(np.float64).tocsr()
        tomo = _Tomotopy(X)
        name = f"{label}-{X.shape[0]}"
        for K in ks:
            def sktopics(seed, **params):
                return LDAGibbs(K, max_iter=sweeps, n_jobs=1, device="cpu",
                                random_state=seed, **params).fit(X)

            # warm-up (first calls of each kernel and library), and the learned priors
            learned = sktopics(1000)
            learned = {"optimize_interval": None,
                       "doc_topic_prior": learned.doc_topic_prior_,
                       "topic_word_prior": learned.topic_word_prior_}
            systems = {
                "sktopics": sktopics,
                "sktopics, no prior learning": lambda seed: sktopics(
                    seed, optimize_interval=None),
                "sktopics, priors fixed at learned values": lambda seed: sktopics(
                    seed, **learned),
                "tomotopy": lambda seed: tomo.fit(K, seed, sweeps),
            }
            runs = {system: [] for system in systems}
            for name_ in list(systems)[1:]:
                systems[name_](1000)
            for r in range(repeats):
                for system, fit in systems.items():
                    tic = time.perf_counter()
                    fit(r)
                    runs[system].append(time.perf_counter() - tic)
            ratio = [a / b for a, b in zip(runs["sktopics"], runs["tomotopy"])]
            share = [1 - b / a for a, b in zip(runs["sktopics"],
                                                runs["sktopics, no prior learning"])]
            updates = [1 - b / a for a, b in zip(
                runs["sktopics"], runs["sktopics, priors fixed at learned values"])]
            row = {"corpus": name, "tokens": int(X.sum()), "documents": X.shape[0], "K": K,
                   **{system: _stats(times) for system, times in runs.items()},
                   "ratio": _stats(ratio), "prior_share": _stats(share),
                   "update_share": _stats(updates), "runs": runs}
            print(json.dumps({k: v for k, v in row.items() if k != "runs"}), flush=True)
            rows.append(row)
    ratios = [r["ratio"][0] for r in rows]
    return {"rows": rows, "sweeps": sweeps, "repeats": repeats,
            "median_ratio": statistics.median(ratios), "max_ratio": max(ratios),
            "median_prior_share": statistics.median(r["prior_share"][0] for r in rows),
            "median_update_share": statistics.median(r["update_share"][0] for r in rows)}


QUICK_START = r"""
import time
tic = time.perf_counter()
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline
from sktopics import LDAGibbs, top_words
from sktopics.datasets import load_bbc_news
train, test = load_bbc_news(subset="train"), load_bbc_news(subset="test")
loaded = time.perf_counter() - tic
calls = []
for seed in range(2):
    tic = time.perf_counter()
    pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+"),
                         LDAGibbs(n_components=20, random_state=seed))
    pipe.fit(train.texts)
    top_words(pipe, top_n=8)
    pipe.score(test.texts)
    pipe.transform(test.texts)
    calls.append(time.perf_counter() - tic)
print("RESULT", loaded, *calls)
"""


def _quick_start(env):
    done = subprocess.run([sys.executable, "-c", QUICK_START], capture_output=True, text=True,
                          check=True, env={**os.environ, **env})
    loaded, first, second = map(float, done.stdout.split("RESULT", 1)[1].split())
    return {"import_and_load_s": loaded, "first_s": first, "second_s": second,
            "ratio": first / second}


def first_call(repeats):
    _quick_start({})  # the cache on disk, whatever state it was in
    warm = [_quick_start({}) for _ in range(repeats)]
    with tempfile.TemporaryDirectory() as cache:
        cold = _quick_start({"NUMBA_CACHE_DIR": cache})
    summary = {key: _stats([run[key] for run in warm])
               for key in ("import_and_load_s", "first_s", "second_s", "ratio")}
    return {"warm_cache": summary, "warm_runs": warm, "empty_cache": cold,
            "repeats": repeats}


def report(payload):
    info = payload["machine"]
    lines = ["# LDAGibbs where users start: small corpora and the first call", "",
             f"Machine: {info['cpu']} ({info.get('simd', '?')}), one thread per system.", ""]
    section = payload.get("fits")
    if section:
        lines += ["## Whole fits at the defaults against tomotopy", "",
                  f"Commit {commit_text(section['machine'])}. {load_sentence(section['load'])}",
                  "", f"{section['sweeps']} sweeps, alpha learned every 10 (sktopics also "
                  "learns beta), one thread each; median [min-max] of "
                  f"{section['repeats']} rounds, the systems alternating. `ratio`: "
                  "sktopics / tomotopy per round; `prior share`: the part of sktopics's fit "
                  "that learning the priors takes (1 - time without / time with); "
                  "`updates`: the updates' own part (1 - time with the priors fixed at the "
                  "learned values / time with), the rest of the prior share being the "
                  "sampler sweeping at the learned priors (approximately: the learning fit "
                  "sweeps its burn-in at the defaults). Goals: median ratio <= 0.85, "
                  "none > 1.0; prior share <= 10 %.", ""]

        def cell(values, digits=2):
            return f"{values[0]:.{digits}f} [{values[1]:.{digits}f}-{values[2]:.{digits}f}]"

        rows = [{"corpus": r["corpus"], "tokens": f"{r['tokens']:,}", "K": r["K"],
                 "sktopics s": cell(r["sktopics"]), "tomotopy s": cell(r["tomotopy"]),
                 "ratio": cell(r["ratio"]),
                 "prior share": cell([100 * v for v in r["prior_share"]], 0) + " %",
                 **({"updates": cell([100 * v for v in r["update_share"]], 0) + " %"}
                    if "update_share" in r else {})}
                for r in section["rows"]]
        lines += [markdown_table(rows, list(rows[0])), "",
                  f"Median ratio {section['median_ratio']:.2f} (goal <= 0.85), largest "
                  f"{section['max_ratio']:.2f} (goal <= 1.0); median prior share "
                  f"{100 * section['median_prior_share']:.0f} % (goal <= 10 %)"
                  + (f", of which the updates' own {100 * section['median_update_share']:.0f} %"
                     if "median_update_share" in section else "") + ".", ""]
    section = payload.get("first-call")
    if section:
        warm, cold = section["warm_cache"], section["empty_cache"]
        lines += ["## A fresh process's first call", "",
                  f"Commit {commit_text(section['machine'])}. {load_sentence(section['load'])}",
                  "", "The README's quick start (fit, top words, score and transform on BBC "
                  "News) twice in one fresh process; median [min-max] of "
                  f"{section['repeats']} processes with numba's cache on disk.", "",
                  markdown_table([
                      {"numba cache": "on disk", "import and load s": warm["import_and_load_s"][0],
                       "first call s": warm["first_s"][0], "second call s": warm["second_s"][0],
                       "first / second": f"{warm['ratio'][0]:.2f} [{warm['ratio'][1]:.2f}-"
                                         f"{warm['ratio'][2]:.2f}]"},
                      {"numba cache": "empty (one process)",
                       "import and load s": cold["import_and_load_s"],
                       "first call s": cold["first_s"], "second call s": cold["second_s"],
                       "first / second": f"{cold['ratio']:.2f}"}],
                      ["numba cache", "import and load s", "first call s", "second call s",
                       "first / second"]),
                  "Goal with the cache on disk: first / second <= 1.3.", ""]
    return "\n".join(lines) + "\n"


def plot_fits(section, path):
    """The ratio to tomotopy of every setting: corpora in order of size, one marker per
    K (median, whiskers min-max), with parity and the goal marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = section["rows"]
    corpora = sorted(dict.fromkeys(r["corpus"] for r in rows),
                     key=lambda c: next(r["tokens"] for r in rows if r["corpus"] == c))
    ks = sorted(dict.fromkeys(r["K"] for r in rows))
    fig, ax = plt.subplots(figsize=(8, 3.6))
    for j, K in enumerate(ks):
        mine = [next((r for r in rows if r["corpus"] == c and r["K"] == K), None)
                for c in corpora]
        x = [i + (j - (len(ks) - 1) / 2) * 0.22 for i, r in enumerate(mine) if r]
        ratio = [r["ratio"] for r in mine if r]
        ax.errorbar(x, [q[0] for q in ratio], yerr=[[q[0] - q[1] for q in ratio],
                                                    [q[2] - q[0] for q in ratio]],
                    fmt="o", ms=5, capsize=2, elinewidth=0.8, label=f"K = {K}")
    ax.axhline(1.0, color="0.3", lw=0.8)
    ax.axhline(0.85, color="0.3", lw=0.8, ls="--")
    ax.text(len(corpora) - 0.5, 1.0, " as fast as tomotopy", va="center", fontsize=8)
    ax.text(len(corpora) - 0.5, 0.85, " goal", va="center", fontsize=8)
    labels = [f"{c}\n{next(r['tokens'] for r in rows if r['corpus'] == c) / 1000:.0f}k tokens"
              for c in corpora]
    ax.set_xticks(range(len(corpora)), labels, fontsize=7)
    ax.set_xlim(-0.5, len(corpora) + 1.3)
    ax.set_ylabel("sktopics / tomotopy, whole fit")
    ax.legend(fontsize=8, loc="upper right")
    ax.set_title(f"LDAGibbs against tomotopy, {section['sweeps']} sweeps at the defaults, "
                 "one thread each (lower is faster); median, min-max", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sections", default="fits,first-call")
    p.add_argument("--data-home", default=default_data_home())
    p.add_argument("--ks", default="10,20,50")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true",
                   help="a check of the script: two corpora, K = 10, 20 sweeps, one round")
    add_result_arguments(p, "gibbs_small")
    args = p.parse_args()
    path = args.output_dir / f"{args.output_name}.json"
    figure = args.output_dir / f"{args.output_name}.png"
    if args.report_only:
        if "fits" in json.loads(path.read_text()):
            plot_fits(json.loads(path.read_text())["fits"], figure)
        return report_only([path], report)
    warnings.simplefilter("ignore")
    previous = json.loads(path.read_text()) if path.exists() else {}
    info = machine()
    payload = {"machine": info, **{k: v for k, v in previous.items() if k != "machine"}}
    ks = [int(k) for k in args.ks.split(",")]
    for section in args.sections.split(","):
        with MachineLoad() as load:
            if section == "fits":
                result = (fits(args.data_home, [10], 1, 20, CORPORA[:2]) if args.quick
                          else fits(args.data_home, ks, args.repeats, 500, CORPORA))
            elif section == "first-call":
                result = first_call(1 if args.quick else max(args.repeats, 5))
            else:
                raise SystemExit(f"unknown section {section!r}")
        payload[section] = {**result, "machine": info, "load": load.summary()}
        write_results(args.output_name, payload, report, directory=args.output_dir)
        if section == "fits":
            plot_fits(payload[section], figure)


if __name__ == "__main__":
    main()
