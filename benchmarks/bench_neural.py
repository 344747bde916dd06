"""AVITM / ProdLDA on the AVITM 20 Newsgroups data, with scikit-learn's LDA in the same run.

Measures training seconds, seconds per epoch, NPMI with the test set as reference
(boolean documents, both the epsilon/gensim and the zero/Lau conventions, top 10
words) and topic diversity (top 10 and top 25), at K = 50 and 200.

Usage::

    python benchmarks/bench_neural.py                 # full run (about 15 min on 2 cores)
    python benchmarks/bench_neural.py --topics 50 --epochs 20 --skip-sklearn   # quick

Writes ``benchmarks/results/neural.{json,rst}`` (``--output-name``, ``--output-dir``;
``--report-only`` redraws the page from the JSON).
"""

import argparse
import time

import numpy as np
from _common import (
    add_result_arguments,
    default_data_home,
    machine,
    markdown_table,
    report_only,
    write_results,
)
from sklearn.decomposition import LatentDirichletAllocation

from sktopics import AVITM, ProdLDA
from sktopics.datasets import load_20news_avitm
from sktopics.metrics import npmi_coherence, topic_diversity


def quality(model_or_topic_word, X_test):
    return {
        "npmi_eps": npmi_coherence(model_or_topic_word, X_test, 10).mean,
        "npmi_zero": npmi_coherence(
            model_or_topic_word, X_test, 10, zero_cooccurrence="zero"
        ).mean,
        "td10": topic_diversity(model_or_topic_word, 10),
        "td25": topic_diversity(model_or_topic_word, 25),
    }


def run_neural(name, model, X, X_test):
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    durations = [row["dur"] for row in model.history_]
    row = {
        "model": name,
        "K": model.n_components,
        "epochs": model.n_iter_,
        "fit_s": seconds,
        "s_per_epoch_median": float(np.median(durations)),
        "score_test": model.score(X_test),
        **quality(model, X_test),
    }
    return row


def run_sklearn_lda(n_topics, X, X_test, max_iter, seed):
    model = LatentDirichletAllocation(
        n_components=n_topics, learning_method="batch", max_iter=max_iter, random_state=seed
    )
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    return {
        "model": "sklearn LDA (batch VB)",
        "K": n_topics,
        "epochs": model.n_iter_,
        "fit_s": seconds,
        "s_per_epoch_median": seconds / model.n_iter_,
        **quality(model, X_test),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--topics", type=int, nargs="+", default=[50, 200])
    parser.add_argument("--epochs", type=int, default=None, help="override every model's epochs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--sklearn-iter", type=int, default=20)
    parser.add_argument("--skip-sklearn", action="store_true")
    parser.add_argument("--threads", type=int, default=None,
                        help="torch threads for this run (default: torch's own choice)")
    parser.add_argument("--models", nargs="+", default=["prodlda", "prodlda-avitm", "avitm"],
                        choices=["prodlda", "prodlda-avitm", "avitm"])
    add_result_arguments(parser, "neural")
    args = parser.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)

    X = load_20news_avitm(args.data_home, subset="train").data
    X_test = load_20news_avitm(args.data_home, subset="test").data
    info = machine()
    info["torch_threads"] = __import__("torch").get_num_threads()
    rows = []
    for n_topics in args.topics:
        candidates = {
            "prodlda": ("ProdLDA (defaults)", ProdLDA(n_topics)),
            "prodlda-avitm": ("ProdLDA (preset 'avitm', the paper's)",
                              ProdLDA.from_preset("avitm", n_components=n_topics)),
            "avitm": ("AVITM (defaults)", AVITM(n_topics)),
        }
        for name, model in (candidates[key] for key in args.models):
            model.set_params(random_state=args.seed, device="cpu")
            if args.epochs is not None:
                model.set_params(max_iter=args.epochs)
            rows.append(run_neural(name, model, X, X_test))
            print(rows[-1], flush=True)
        if not args.skip_sklearn:
            rows.append(run_sklearn_lda(n_topics, X, X_test, args.sklearn_iter, args.seed))
            print(rows[-1], flush=True)

    data = {"corpus": "20news_avitm", "n_train": X.shape[0], "n_test": X_test.shape[0],
            "n_features": X.shape[1]}
    write_results(args.output_name, {"machine": info, "args": vars(args), "data": data,
                                     "rows": rows}, report, directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, data = out["machine"], out["data"]
    columns = ["model", "K", "epochs", "fit_s", "s_per_epoch_median", "npmi_eps",
               "npmi_zero", "td10", "td25", "score_test"]
    header = (
        f"Measured on {info['cpu']} ({info['cpu_count']} cores, torch {info['torch']}, "
        f"{info['torch_threads']} threads, GPU: {info['gpu']}); {data['corpus']} "
        f"{data['n_train']} train / {data['n_test']} test documents, V = {data['n_features']}; "
        "NPMI: test set as reference, boolean documents, top 10 words; score_test: "
        "held-out log-likelihood per token from `score` (importance sampling, 64 samples).\n\n"
    )
    return header + markdown_table(out["rows"], columns)


if __name__ == "__main__":
    main()
