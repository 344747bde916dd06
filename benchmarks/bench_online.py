"""Online training over shards against one fit on the concatenation.

``ShardedCorpus.partial_fit(model, n_passes=P)`` over the AVITM 20 Newsgroups training
set cut into 5 shards, both random shards (the documents shuffled first) and shards
in the corpus's own order (grouped by newsgroup), against ``fit`` on the whole
training set with as many sweeps
(LDAGibbs, K = 50: ``max_iter=P``) or epochs (ProdLDA, K = 50), three seeds each, in
one process, one torch thread: held-out perplexity on the 20NG test set (the models'
own ``perplexity``), held-out NPMI of the top 10 words, the learned priors (LDAGibbs)
and the seconds. A second check on a synthetic corpus whose first 40 words occur
only in the first of 4 shards: the share of the topics' mass on those words after one
pass over the shards, against a full fit's.

Writes ``benchmarks/results/online.{json,rst}`` (``--report-only`` redraws the page
from the JSON)::

    python benchmarks/bench_online.py [--passes 200] [--epochs 50] [--seeds 0,1,2]
"""

import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    MachineLoad,
    add_result_arguments,
    commit_text,
    default_data_home,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)

from sktopics import LDAGibbs, ProdLDA  # noqa: E402
from sktopics.datasets import ShardedCorpus, load_20news_avitm, make_lda_corpus  # noqa: E402
from sktopics.metrics import npmi_coherence  # noqa: E402


def _measure(model, train, shards, test, streamed, n):
    tic = time.perf_counter()
    if streamed:
        shards.partial_fit(model, n_passes=n)
    else:
        model.fit(train)
    seconds = time.perf_counter() - tic
    row = {"seconds": seconds, "perplexity": model.perplexity(test),
           "npmi": float(npmi_coherence(model, test).mean)}
    if isinstance(model, LDAGibbs):
        row.update(alpha_sum=float(model.doc_topic_prior_.sum()),
                   beta=float(model.topic_word_prior_))
    return row


def _summary(rows, key):
    values = [r[key] for r in rows]
    return statistics.median(values), min(values), max(values)


def _first_shard_words(seeds):
    """Mass of the topics on words only the first shard has, streamed over full fit."""
    ratios = []
    for seed in seeds:
        X, _, _ = make_lda_corpus(n_samples=2000, n_features=400, n_components=10,
                                  doc_length=60, random_state=seed)
        X = X.tolil()
        X[500:, :40] = 0
        X = X.tocsr()
        X.eliminate_zeros()
        full = LDAGibbs(10, max_iter=200, device="cpu", random_state=seed).fit(X)
        online = LDAGibbs(10, device="cpu", random_state=seed)
        for start in range(0, 2000, 500):
            online.partial_fit(X[start:start + 500])
        ratios.append(online.components_[:, :40].sum() / full.components_[:, :40].sum())
    return ratios


SHARDINGS = {"fit": "fit", "random": "5 random shards, partial_fit",
             "ordered": "5 shards in corpus order, partial_fit"}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--passes", type=int, default=200, help="LDAGibbs sweeps / passes")
    p.add_argument("--epochs", type=int, default=50, help="ProdLDA epochs / passes")
    p.add_argument("--seeds", default="0,1,2")
    p.add_argument("--data-home", default=default_data_home())
    add_result_arguments(p, "online")
    args = p.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    torch.set_num_threads(1)
    seeds = [int(s) for s in args.seeds.split(",")]
    train = load_20news_avitm(args.data_home, subset="train").data
    test = load_20news_avitm(args.data_home, subset="test").data
    bounds = np.linspace(0, train.shape[0], 6).astype(int)
    # The training set comes grouped by newsgroup: contiguous shards are samples of a
    # few groups each, random shards samples of the whole corpus.
    shuffled = train[np.random.default_rng(0).permutation(train.shape[0])]
    shards = {name: ShardedCorpus.write((X[a:b] for a, b in zip(bounds, bounds[1:])),
                                        tempfile.mkdtemp())
              for name, X in (("random", shuffled), ("ordered", train))}

    runs = []
    load = MachineLoad().__enter__()
    for seed in seeds:
        for training in SHARDINGS:
            corpus = shards.get(training)
            gibbs = LDAGibbs(50, max_iter=args.passes, device="cpu", random_state=seed)
            runs.append({"model": "LDAGibbs", "seed": seed, "training": training,
                         **_measure(gibbs, train, corpus, test, corpus is not None,
                                    args.passes)})
            neural = ProdLDA(50, max_iter=args.epochs, device="cpu", random_state=seed)
            runs.append({"model": "ProdLDA", "seed": seed, "training": training,
                         **_measure(neural, train, corpus, test, corpus is not None,
                                    args.epochs)})
            print(runs[-2], runs[-1], flush=True)
    ratios = _first_shard_words(seeds)
    load.__exit__(None, None, None)
    gaps = {}
    for model in ("LDAGibbs", "ProdLDA"):
        fits = [r for r in runs if r["model"] == model and r["training"] == "fit"]
        for training in ("random", "ordered"):
            streamed = [r for r in runs if r["model"] == model and r["training"] == training]
            gaps[f"{model}, {training} shards"] = statistics.median(
                s["perplexity"] / f["perplexity"] - 1 for f, s in zip(fits, streamed))
    write_results(args.output_name, {"machine": machine(), "load": load.summary(),
                                     "args": vars(args), "runs": runs, "perplexity_gap": gaps,
                                     "first_shard_mass_ratio": ratios}, report,
                  directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, args, runs = out["machine"], out["args"], out["runs"]
    table = []
    for model in ("LDAGibbs", "ProdLDA"):
        for training, label in SHARDINGS.items():
            rows = [r for r in runs if r["model"] == model and r["training"] == training]
            row = {"model": model, "training": label}
            for key in ("perplexity", "npmi", "seconds", "alpha_sum", "beta"):
                if key in rows[0]:
                    median, low, high = _summary(rows, key)
                    row[key] = f"{median:.4g} ({low:.4g}-{high:.4g})"
            table.append(row)
    lines = ["# Online training over shards against one fit", "",
             f"Commit {commit_text(info)}. {load_sentence(out['load'])}", "",
             f"Machine: {info['cpu']}, one torch thread. AVITM 20 Newsgroups (11,258 "
             f"training documents in 5 shards, 7,487 test documents), K = 50; LDAGibbs "
             f"{args['passes']} sweeps or passes, ProdLDA {args['epochs']} epochs or passes; "
             f"seeds {args['seeds']}: median (min-max). The training set comes grouped by "
             "newsgroup: shards cut in corpus order hold a few newsgroups each, random "
             "shards (the documents shuffled first) are samples of the whole corpus.", "",
             markdown_table(table, ["model", "training", "perplexity", "npmi", "seconds",
                                    "alpha_sum", "beta"]),
             "Held-out perplexity of the streamed fit over the full fit's (median of the "
             "seeds' ratios): " + ", ".join(f"{m} {100 * g:+.1f} %"
                                            for m, g in out["perplexity_gap"].items())
             + ".", "",
             "Synthetic corpus (2,000 documents, 400 words, K = 10) whose first 40 words occur "
             "only in the first of 4 shards: their mass in the topics after one pass of "
             "partial_fit, over a 200-sweep fit's: "
             + ", ".join(f"{r:.3f}" for r in out["first_shard_mass_ratio"])
             + " (goal: at least 0.5).", ""]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
