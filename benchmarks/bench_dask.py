"""GridSearchCV on a Dask cluster against one process: same results, wall time.

``GridSearchCV(Pipeline(CountVectorizer, LDAGibbs), {"n_components": [5, 10, 20, 40]},
cv=3)`` scored by left-to-right and NPMI on 1,500 BBC News training documents (shipped
with sktopics), with ``n_jobs=1`` and under ``joblib.parallel_config(backend="dask")``
on a ``LocalCluster`` of ``--workers`` single-threaded process workers (the default
``n_jobs=None`` of the estimators then runs one torch thread per task). Writes
``benchmarks/results/dask.{json,md}``.
"""

import argparse
import os
import sys
import time

import joblib
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, write_results


def search(texts, n_jobs):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from sktopics import LDAGibbs
    from sktopics.model_selection import make_coherence_scorer, make_left_to_right_scorer

    pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+", min_df=2),
                         LDAGibbs(max_iter=100, device="cpu", random_state=0))
    scoring = {"left_to_right": make_left_to_right_scorer(), "npmi": make_coherence_scorer()}
    return GridSearchCV(pipe, {"ldagibbs__n_components": [5, 10, 20, 40]}, cv=3,
                        scoring=scoring, refit="left_to_right", n_jobs=n_jobs).fit(texts)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args()
    from dask.distributed import Client, LocalCluster

    from sktopics.datasets import load_bbc_news

    texts = load_bbc_news(subset="train").texts
    tic = time.perf_counter()
    serial = search(texts, 1)
    serial_s = time.perf_counter() - tic
    with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster, Client(cluster):
        tic = time.perf_counter()
        with joblib.parallel_config(backend="dask"):
            distributed = search(texts, -1)
        dask_s = time.perf_counter() - tic
    diff = max(float(np.max(np.abs(serial.cv_results_[f"mean_test_{k}"]
                                   - distributed.cv_results_[f"mean_test_{k}"])))
               for k in ("left_to_right", "npmi"))
    out = {"machine": machine(), "workers": args.workers, "serial_s": serial_s,
           "dask_s": dask_s, "max_abs_difference": diff}
    lines = ["# GridSearchCV on a Dask LocalCluster", "",
             (f"Machine: {out['machine']['cpu']}, {os.cpu_count()} cores. 1,556 BBC News "
              "documents, Pipeline(CountVectorizer, LDAGibbs(max_iter=100)), K in {5, 10, 20, "
              "40}, cv=3, left-to-right and NPMI scorers (12 fits, 24 scores)."), "",
             "| run | seconds | largest difference of the mean scores |", "|---|---|---|",
             f"| n_jobs=1, one process | {serial_s:.1f} | - |",
             f"| Dask LocalCluster, {args.workers} process workers x 1 thread | {dask_s:.1f} | "
             f"{diff:.2e} |"]
    write_results("dask", out, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
