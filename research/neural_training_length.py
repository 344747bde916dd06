"""How long must a neural topic model train? Quality against optimiser steps, by corpus size.

A fixed number of epochs trains a small corpus far less than a large one: at batches of
64, 50 epochs are 100 optimiser steps on 140 documents and 40,000 on 54,000. This study
fits ProdLDA and AVITM (their defaults, K = 20) on corpora of 100 to 38,000 documents
and records, at checkpoints in optimiser steps (a warm fit continues to the next one),
the held-out NPMI of the top 10 words (the corpus's test split as reference, the
default epsilon convention), topic diversity (TD@10) and the mean training loss of the
last epochs, with ``still_improving``: the relative drop of the mean training loss
between the last two tenths of the epochs so far (at least 5 epochs each), recorded to
see whether the loss could tell when to stop (it could not: ``fit`` counts steps).
``20ng-N`` and ``nips-N`` are N random training documents of 20 Newsgroups and of the
NIPS papers.

Usage::

    python research/neural_training_length.py                 # all corpora (~20 minutes)
    python research/neural_training_length.py --corpora 20ng-100 20ng-150 20ng-500 \
        nips-140 --seeds 0 1 2 --checkpoints 100 300 600 1000 1500 2500 --add
                                                              # small corpora (~6 minutes)
    python research/neural_training_length.py --corpora 20ng-150 bbc --models ProdLDA
    SKTOPICS_RESEARCH_TINY=1 python research/neural_training_length.py   # a check, seconds

Writes ``research/results/neural_training_length.{json,rst}`` (or the tiny run's folder);
``--add`` adds a run's rows to the file (the two commands above made it).
The neural guide ("How long to train") states the finding in words.
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common
from _common import default_data_home, machine, markdown_table, write_results  # noqa: E402

from sktopics import AVITM, ProdLDA  # noqa: E402
from sktopics._neural._data import natural_batches  # noqa: E402
from sktopics.datasets import load_20news_avitm, load_nips, load_octis  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny import TINY, results_dir  # noqa: E402

MODELS = {"ProdLDA": ProdLDA, "AVITM": AVITM}
CORPORA = ["20ng-150", "20ng-500", "20ng-2000", "20ng", "nips", "bbc", "m10", "dblp"]
CHECKPOINTS = [150, 300, 600, 1200, 2400, 4800, 9600]


def load(name, data_home):
    """(train, test) count matrices; ``20ng-N`` (``nips-N``) is N random training
    documents of 20NG (NIPS papers)."""
    if name.startswith("20ng"):
        train = load_20news_avitm(data_home, subset="train").data
        test = load_20news_avitm(data_home, subset="test").data
        if "-" in name:
            n = int(name.split("-")[1])
            rows = np.random.default_rng(0).choice(train.shape[0], n, replace=False)
            train = train[np.sort(rows)]
        return train, test
    if name.startswith("nips"):
        train = load_nips(data_home, subset="train").data
        if "-" in name:  # N random papers: a small corpus of long documents
            n = int(name.split("-")[1])
            train = train[np.sort(np.random.default_rng(0).choice(train.shape[0], n,
                                                                  replace=False))]
        return train, load_nips(data_home, subset="test").data
    octis = {"bbc": "BBC_News", "dblp": "DBLP", "m10": "M10"}[name]
    return (load_octis(octis, data_home, subset="train").data,
            load_octis(octis, data_home, subset="test").data)


def still_improving(losses, fraction=0.1, minimum=5):
    """Relative drop of the mean loss from the second-last to the last tenth of epochs."""
    width = max(minimum, int(len(losses) * fraction))
    if len(losses) < 2 * width:
        return float("nan")
    last, before = np.mean(losses[-width:]), np.mean(losses[-2 * width:-width])
    return float((before - last) / abs(before))


def run(model_name, corpus, X, X_test, seed, checkpoints):
    kept = X_test[np.asarray(X_test.sum(1)).ravel() > 0]
    model = MODELS[model_name](20, warm_start=True, random_state=seed, n_jobs=1,
                               device="cpu")
    per_epoch = natural_batches(X.shape[0], model.batch_size, model.batch_sampling)
    rows, epochs, elapsed = [], 0, 0.0
    for steps in checkpoints:
        target = max(1, round(steps / per_epoch))
        if target <= epochs:
            continue
        model.set_params(max_iter=target - epochs)
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(X)
        elapsed += time.perf_counter() - start
        epochs = target
        losses = [row["train_loss"] for row in model.history_]
        rows.append({
            "model": model_name, "corpus": corpus, "n_documents": int(X.shape[0]),
            "seed": seed, "steps": epochs * per_epoch, "epochs": epochs,
            "seconds": elapsed,
            "npmi": float(npmi_coherence(model, kept, 10).mean),
            "td10": float(topic_diversity(model, 10)),
            "train_loss": float(np.mean(losses[-max(1, len(losses) // 10):])),
            "still_improving": still_improving(losses),
        })
        print(rows[-1], flush=True)
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-home", default=str(default_data_home()))
    parser.add_argument("--corpora", nargs="+", default=CORPORA)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--checkpoints", nargs="+", type=int, default=CHECKPOINTS)
    parser.add_argument("--add", action="store_true",
                        help="add this run to the results file instead of replacing it")
    args = parser.parse_args()
    corpora = ["20ng-150"] if TINY else args.corpora
    checkpoints = [2, 4] if TINY else args.checkpoints
    rows, started = [], time.time()
    for corpus in corpora:
        X, X_test = load(corpus, args.data_home)
        if TINY:
            X_test = X_test[:200]
        for model_name in args.models:
            for seed in args.seeds:
                rows += run(model_name, corpus, X, X_test, seed, checkpoints)
    runs = [{"machine": machine(), "command": sys.argv[1:],
             "total_seconds": time.time() - started}]
    path = results_dir() / "neural_training_length.json"
    earlier = json.loads(path.read_text()) if args.add and path.exists() else None
    if earlier is not None:
        runs = earlier["runs"] + runs
    for row in rows:
        row["run"] = len(runs) - 1
    if earlier is not None:
        rows = earlier["rows"] + rows
    columns = ["run", "model", "corpus", "seed", "n_documents", "steps", "epochs", "npmi",
               "td10", "still_improving", "seconds"]
    write_results("neural_training_length", {"runs": runs, "rows": rows},
                  "**Neural models: quality against optimiser steps**\n\n"
                  + markdown_table(rows, columns), directory=results_dir())


if __name__ == "__main__":
    main()
