"""The protocol that chooses the neural models' defaults: candidates over several corpora.

Every candidate configuration is fitted on every corpus, at every number of topics,
with several seeds, and scored on the corpus's held-out split: NPMI of the top 10
words (held-out documents as reference, boolean documents, epsilon convention),
topic diversity (TD@10), and the held-out log-likelihood per token from ``score``
(on at most 2,000 held-out documents). A default must keep TD@10 >= 0.8.

The corpora are general-purpose ones of several kinds (news, newsgroups, paper
titles, long and short documents, small and large vocabularies), plus the setting
of a new user: 4,000 raw 20 Newsgroups posts through ``CountVectorizer(
stop_words="english", min_df=5, max_df=0.5)`` (over 10,000 words), and the short
texts a new user brings: GoogleNews titles (``gnews``) and the subject lines of the
20 Newsgroups posts (``subjects``), through ``CountVectorizer(stop_words="english",
min_df=3, max_df=0.5)`` (``short_texts.load``). scikit-learn's
``LatentDirichletAllocation`` and ``LDAGibbs`` at their defaults can be fitted beside
the candidates as references (``--models sklearn_lda LDAGibbs``). The winner is
the candidate with the best mean rank over all (corpus, K) cells, not the best
on any one corpus.

Usage::

    python research/neural_defaults.py                      # the whole grid (hours)
    python research/neural_defaults.py --corpora 20ng bbc --topics 50 --seeds 0
    SKTOPICS_RESEARCH_TINY=1 python research/neural_defaults.py   # a check, seconds

A study, not a benchmark: it chose the defaults once, and the neural guide records
that choice. Writes ``research/results/<name>.{json,rst,png}`` and the mean ranks,
``<name>_ranks.{json,rst}``, after every fit (``--plot-only`` redraws the figure
and the ranks from the JSON). The tiny mode (``_tiny.py``) fits every ProdLDA
candidate for one epoch on 300 BBC News documents, K = 5, and writes elsewhere.
"""

import argparse
import json
import sys
import tarfile
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.feature_extraction.text import CountVectorizer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common
from _common import default_data_home, machine, markdown_table, write_results  # noqa: E402
from sklearn.decomposition import LatentDirichletAllocation  # noqa: E402

from sktopics import AVITM, PAMVI, LDAGibbs, ProdLDA  # noqa: E402
from sktopics._neural import _modules  # noqa: E402
from sktopics._neural._losses import gaussian_kl  # noqa: E402
from sktopics.datasets import load_20news_avitm, load_nyt, load_octis  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
import short_texts  # noqa: E402
from _tiny import TINY, results_dir  # noqa: E402

#: How each model is built for K topics (PAMVI: 2 super-topics over K sub-topics).
#: LDAGibbs and scikit-learn's LDA are references, fitted at their defaults.
ESTIMATORS = {
    "ProdLDA": ProdLDA,
    "AVITM": AVITM,
    "PAMVI": lambda k, **params: PAMVI(structure=(2, k), **params),
    "LDAGibbs": lambda k, random_state, n_jobs, **params: LDAGibbs(
        k, random_state=random_state, n_jobs=n_jobs, device="cpu"),
    "sklearn_lda": lambda k, random_state, **params: LatentDirichletAllocation(
        k, random_state=random_state),
}

#: Candidate configurations per model (constructor parameters on top of ``max_iter``).
#: "avitm" is the original code's configuration (the class defaults before this protocol).
CANDIDATES = {
    "ProdLDA": {
        "avitm": {"dropout": 0.6, "batch_size": 200, "batch_sampling": "with_replacement",
                  "free_bits": 0.0},
        "diverse": {"dropout": 0.2, "batch_size": 64, "batch_sampling": "shuffle",
                    "free_bits": 0.0},
        "light": {"dropout": 0.2, "batch_size": 200, "batch_sampling": "shuffle",
                  "free_bits": 0.0},
        "light_bg": {"dropout": 0.2, "batch_size": 200, "batch_sampling": "shuffle",
                     "word_background": True, "free_bits": 0.0},
        # the defaults since the short-text study: "diverse" with free bits
        "diverse_free_bits": {"dropout": 0.2, "batch_size": 64, "batch_sampling": "shuffle",
                              "free_bits": 0.25},
    },
    "AVITM": {
        "avitm": {"dropout": 0.25, "learning_rate": 1e-2, "batch_size": 200,
                  "batch_sampling": "with_replacement", "shared_noise": True, "free_bits": 0.0},
        "diverse": {"dropout": 0.2, "learning_rate": 2e-3, "batch_size": 64,
                    "batch_sampling": "shuffle", "shared_noise": False, "free_bits": 0.0},
        "diverse_free_bits": {"dropout": 0.2, "learning_rate": 2e-3, "batch_size": 64,
                              "batch_sampling": "shuffle", "shared_noise": False,
                              "free_bits": 0.25},
    },
    "LDAGibbs": {"default": {}},
    "sklearn_lda": {"default": {}},
    "PAMVI": {  # "current": the defaults before this protocol, their own 100 epochs
        "current": {"batch_size": 64, "learning_rate": 5e-3, "max_iter": 100},
        "b200": {"batch_size": 200, "learning_rate": 1e-2},
    },
}


class FloorCounter:
    """Stands in for the KL of ProdLDA's and AVITM's modules during a fit and counts
    the training steps in which free bits floored some latent dimension (a fit in
    which none did is, bit for bit, the fit with ``free_bits=0``)."""

    def __init__(self):
        self.steps = self.floored = 0

    def __call__(self, mu, logvar, prior_mean, prior_var, free_nats=0.0, collective=None):
        value = gaussian_kl(mu, logvar, prior_mean, prior_var, free_nats, collective)
        if free_nats > 0:
            self.steps += 1
            self.floored += not torch.equal(
                value, gaussian_kl(mu, logvar, prior_mean, prior_var))
        return value

    def share(self):
        """Share of the training steps with a floored dimension (NaN: no free bits)."""
        return self.floored / self.steps if self.steps else float("nan")


def raw_posts(data_home, n_train=4000, n_test=2000):
    path = Path(data_home) / "20news_bydate" / "20news-bydate.tar.gz"
    with tarfile.open(path) as archive:
        members = [m for m in archive.getmembers() if m.isfile()]
        train = [archive.extractfile(m).read().decode("latin-1") for m in members
                 if "-train/" in m.name]
        test = [archive.extractfile(m).read().decode("latin-1") for m in members
                if "-test/" in m.name]
    rng = np.random.default_rng(0)
    train = [train[i] for i in rng.permutation(len(train))[:n_train]]
    test = [test[i] for i in rng.permutation(len(test))[:n_test]]
    vectorizer = CountVectorizer(stop_words="english", min_df=5, max_df=0.5)
    return vectorizer.fit_transform(train), vectorizer.transform(test)


def load(name, data_home):
    if name == "20ng":
        return (load_20news_avitm(data_home, subset="train").data,
                load_20news_avitm(data_home, subset="test").data)
    if name == "nyt":
        return load_nyt(data_home, subset="train").data, load_nyt(data_home, subset="test").data
    if name == "20ng_raw":
        return raw_posts(data_home)
    if name in ("gnews", "subjects"):  # short texts: titles, post subjects
        return short_texts.load(name, data_home)
    octis = {"bbc": "BBC_News", "dblp": "DBLP", "m10": "M10"}[name]
    return (load_octis(octis, data_home, subset="train").data,
            load_octis(octis, data_home, subset="test").data)


def evaluate(model, X_test):
    kept = X_test[np.asarray(X_test.sum(1)).ravel() > 0]
    share, _ = short_texts.largest_share(model, kept)
    own = hasattr(model, "n_train_tokens_")  # scikit-learn's score is another quantity
    return {
        "npmi": npmi_coherence(model, kept, 10).mean,
        "td10": topic_diversity(model, 10),
        "loglik": model.score(kept[:2000]) if own else float("nan"),
        "largest_share": share,
    }


def summarise(rows):
    """Mean of every score per (model, corpus, K, candidate) over seeds."""
    cells = {}
    for r in rows:
        cells.setdefault((r["model"], r["corpus"], r["K"], r["candidate"]), []).append(r)
    means = []
    for (model, corpus, k, candidate), group in sorted(cells.items()):
        means.append({"model": model, "corpus": corpus, "K": k, "candidate": candidate,
                      "seeds": len(group),
                      **{m: float(np.mean([g.get(m, np.nan) for g in group]))
                         for m in ("npmi", "td10", "loglik", "largest_share", "floored_steps",
                                   "fit_s")}})
    return means


def mean_ranks(rows):
    """Each candidate's rank (1 = best) per (corpus, K) cell and score, averaged, and
    how many cells it wins on each score."""
    means = summarise(rows)
    ranks, wins = {}, {}
    for cell in sorted({(m["model"], m["corpus"], m["K"]) for m in means}):
        in_cell = [m for m in means if (m["model"], m["corpus"], m["K"]) == cell]
        for metric in ("npmi", "td10", "loglik"):
            ordered = sorted(in_cell, key=lambda m: -m[metric])
            for place, m in enumerate(ordered, 1):
                key = (m["model"], m["candidate"])
                ranks.setdefault(key, []).append(place)
                wins.setdefault(key, dict.fromkeys(("npmi", "td10", "loglik"), 0))
                wins[key][metric] += place == 1
    return [{"model": model, "candidate": c, "mean_rank": float(np.mean(v)),
             "cells": len(v) // 3, **{f"best_{m}": n for m, n in wins[(model, c)].items()}}
            for (model, c), v in sorted(ranks.items(), key=lambda kv: np.mean(kv[1]))]


def write_ranks(name, rows, directory):
    ranks = mean_ranks(rows)
    write_results(name + "_ranks", {"rows": ranks}, markdown_table(ranks, [
        "model", "candidate", "mean_rank", "cells", "best_npmi", "best_td10", "best_loglik"]),
        directory=directory)


def plot(rows, path):
    """NPMI against TD@10 per corpus and K: one point per fit, one colour per candidate."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cells = sorted({(r["corpus"], r["K"]) for r in rows}, key=lambda c: (c[1], c[0]))
    several = len({r["model"] for r in rows}) > 1
    label = (lambda r: f"{r['model']} {r['candidate']}") if several else (lambda r: r["candidate"])
    candidates = sorted({label(r) for r in rows})
    n_cols = min(len(cells), 3)
    n_rows = -(-len(cells) // n_cols)
    fig, axes = plt.subplots(n_rows, n_cols, figsize=(3.6 * n_cols, 3.0 * n_rows),
                             squeeze=False)
    for ax, (corpus, k) in zip(axes.ravel(), cells):
        for i, candidate in enumerate(candidates):
            points = [r for r in rows if (r["corpus"], r["K"], label(r)) == (corpus, k,
                                                                              candidate)]
            ax.scatter([p["td10"] for p in points], [p["npmi"] for p in points],
                       color=f"C{i}", label=candidate, s=22)
        ax.axvline(0.8, color="grey", lw=0.8, ls="--")
        ax.set_title(f"{corpus}, K = {k}", fontsize=10)
        ax.set_xlabel("topic diversity (top 10)")
        ax.set_ylabel("held-out NPMI")
    for ax in axes.ravel()[len(cells):]:
        ax.set_visible(False)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    if len(cells) % n_cols:  # an empty panel holds the legend
        fig.legend(handles, labels, loc="lower right", fontsize=8, frameon=False)
    else:
        axes[0, 0].legend(fontsize=8)
    models = ", ".join(sorted({r["model"] for r in rows}))
    fig.suptitle(f"{models}: one point per seed; dashed: TD = 0.8", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--models", nargs="+", default=["ProdLDA"], choices=list(ESTIMATORS))
    parser.add_argument("--corpora", nargs="+",
                        default=["20ng", "bbc", "m10", "20ng_raw", "nyt", "dblp", "gnews",
                                 "subjects"])
    parser.add_argument("--topics", type=int, nargs="+", default=[50, 20, 100])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--candidates", nargs="+", default=None,
                        help="names from CANDIDATES (default: all of each model's)")
    parser.add_argument("--max-iter", type=int, default=50,
                        help="epochs of every candidate that does not set its own")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--name", default="neural_defaults")
    parser.add_argument("--plot-only", action="store_true",
                        help="redraw results/<name>.png from results/<name>.json")
    args = parser.parse_args()
    if TINY:
        args.corpora, args.topics, args.seeds, args.max_iter = ["bbc"], [5], [0], 1
    results = results_dir()
    figure = results / f"{args.name}.png"
    if args.plot_only:
        rows = json.loads(figure.with_suffix(".json").read_text())["rows"]
        plot(rows, figure)
        write_ranks(args.name, rows, results)
        return
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore", UserWarning)
    info = machine()
    rows = []
    header = (
        f"Measured on {info['cpu']} ({info['cpu_count']} cores, torch {info['torch']}, "
        f"{args.threads} threads), commit {info.get('git_commit')}; max_iter={args.max_iter} "
        "unless a candidate sets its own; "
        "NPMI: held-out split as reference, boolean documents, epsilon convention, top 10; "
        "TD@10; loglik: `score` per token on at most 2,000 held-out documents (sktopics "
        "models); largest_share: mean largest topic share of `transform` on the held-out "
        "documents (uniform: 1 / K); floored_steps: share of the training steps in which "
        "free bits floored a latent dimension (0: the fit is the one without free bits, "
        "bit for bit); means over seeds.\n\n"
    )
    corpora = {name: tuple(X[:300] if TINY else X for X in load(name, args.data_home))
               for name in args.corpora}
    for k in args.topics:
        for corpus, (X, X_test) in corpora.items():
            for seed in args.seeds:
                for model_name in args.models:
                    for candidate in args.candidates or CANDIDATES[model_name]:
                        if candidate not in CANDIDATES[model_name]:
                            continue
                        params = {"max_iter": args.max_iter,
                                  **CANDIDATES[model_name][candidate]}
                        if TINY:
                            params["max_iter"] = 1
                        model = ESTIMATORS[model_name](
                            k, random_state=seed, device="cpu", n_jobs=args.threads, **params)
                        counter = _modules.gaussian_kl = FloorCounter()
                        start = time.perf_counter()
                        model.fit(X)
                        _modules.gaussian_kl = gaussian_kl
                        row = {"model": model_name, "corpus": corpus, "K": k,
                               "candidate": candidate, "seed": seed,
                               "fit_s": time.perf_counter() - start,
                               "floored_steps": counter.share(),
                               "n_docs": X.shape[0], "n_words": X.shape[1],
                               **evaluate(model, X_test)}
                        rows.append(row)
                        print(row, flush=True)
                        write_results(args.name, {"machine": info, "args": vars(args),
                                                  "rows": rows},
                                      header + markdown_table(summarise(rows), [
                                          "model", "corpus", "K", "candidate", "seeds",
                                          "npmi", "td10", "loglik", "largest_share",
                                          "floored_steps", "fit_s"]),
                                      directory=results)
                        write_ranks(args.name, rows, results)
                        plot(rows, figure)


if __name__ == "__main__":
    main()
