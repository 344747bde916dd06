"""GridSearchCV on a Dask cluster and in joblib's processes against one process.

``GridSearchCV(Pipeline(CountVectorizer, LDAGibbs), {"n_components": [5, 10, 20, 40]},
cv=3)`` scored by left-to-right and NPMI on the 1,556 BBC News training documents
(shipped with sktopics), timed in four ways, in turn within each of ``--repeats``
rounds (default 5):

* ``n_jobs=1``, in this process;
* joblib's own processes (``n_jobs=--workers``, the loky backend): "cold" on a fresh
  pool (its workers start and import sktopics within the timing), then "warm", the same
  search again on the same pool;
* ``joblib.parallel_config(backend="dask")`` on a ``LocalCluster`` of ``--workers``
  single-threaded process workers, made afresh each round (its start is timed apart):
  "cold", the first search on it, then "warm", the same search again.

The estimators' default ``n_jobs=None`` then runs one torch thread per task. Every
search's mean test scores are compared with the one-process search's. Reported:
median seconds with the min-max range and every round's value, the machine, the
commit and the load (``_common.MachineLoad``). Writes
``<output-dir>/<output-name>.{json,rst}``, by default ``benchmarks/results/dask.*``
(``--report-only`` redraws the page from the JSON).

Trial run (toy sizes, elsewhere)::

    python benchmarks/bench_dask.py --max-docs 150 --grid 3,5 --max-iter 5 --repeats 1 \\
        --output-dir /tmp/dask_trial
"""

import argparse
import os
import sys
import time

import joblib
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    MachineLoad,
    add_result_arguments,
    commit_text,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)

SCORES = ("left_to_right", "npmi")


def search(texts, n_jobs, grid, max_iter):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV
    from sklearn.pipeline import make_pipeline

    from sktopics import LDAGibbs
    from sktopics.model_selection import make_coherence_scorer, make_left_to_right_scorer

    pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+", min_df=2),
                         LDAGibbs(max_iter=max_iter, device="cpu", random_state=0))
    scoring = {"left_to_right": make_left_to_right_scorer(), "npmi": make_coherence_scorer()}
    return GridSearchCV(pipe, {"ldagibbs__n_components": grid}, cv=3, scoring=scoring,
                        refit="left_to_right", n_jobs=n_jobs).fit(texts)


def _timed(fn):
    tic = time.perf_counter()
    result = fn()
    return result, time.perf_counter() - tic


def _difference(a, b):
    return max(float(np.max(np.abs(a.cv_results_[f"mean_test_{k}"]
                                   - b.cv_results_[f"mean_test_{k}"]))) for k in SCORES)


def _fresh_loky_pool():
    """Shut joblib's reusable process pool down, so that the next call starts one."""
    from joblib.externals.loky import get_reusable_executor

    get_reusable_executor().shutdown(wait=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--repeats", type=int, default=5, help="rounds; medians are reported")
    p.add_argument("--grid", default="5,10,20,40", help="n_components values")
    p.add_argument("--max-iter", type=int, default=100, help="LDAGibbs sweeps per fit")
    p.add_argument("--max-docs", type=int, default=None,
                   help="keep the first documents (trial runs)")
    add_result_arguments(p, "dask")
    args = p.parse_args(argv)
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    from dask.distributed import Client, LocalCluster

    from sktopics.datasets import load_bbc_news

    texts = list(load_bbc_news(subset="train").texts)[:args.max_docs]
    grid = [int(k) for k in args.grid.split(",")]
    info = machine()
    runs = {name: [] for name in ("one process", "joblib processes, cold",
                                  "joblib processes, warm", "Dask cluster start",
                                  "Dask, cold", "Dask, warm")}
    diff = 0.0
    with MachineLoad() as load:
        for round_ in range(args.repeats):
            serial, seconds = _timed(lambda: search(texts, 1, grid, args.max_iter))
            runs["one process"].append(seconds)
            _fresh_loky_pool()
            for name in ("joblib processes, cold", "joblib processes, warm"):
                result, seconds = _timed(lambda: search(texts, args.workers, grid, args.max_iter))
                runs[name].append(seconds)
                diff = max(diff, _difference(serial, result))
            _fresh_loky_pool()
            tic = time.perf_counter()
            with LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                              dashboard_address=None) as cluster, Client(cluster):
                runs["Dask cluster start"].append(time.perf_counter() - tic)
                with joblib.parallel_config(backend="dask"):
                    for name in ("Dask, cold", "Dask, warm"):
                        result, seconds = _timed(lambda: search(texts, -1, grid, args.max_iter))
                        runs[name].append(seconds)
                        diff = max(diff, _difference(serial, result))
            print(f"round {round_}: " + ", ".join(f"{k} {v[-1]:.1f} s" for k, v in runs.items()),
                  flush=True)

    out = {"machine": info, "load": load.summary(), "args": vars(args),
           "n_documents": len(texts), "runs_seconds": runs,
           "median_seconds": {k: float(np.median(v)) for k, v in runs.items()},
           "max_abs_difference": diff}
    write_results(args.output_name, out, report, directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, args = out["machine"], out["args"]
    grid = [int(k) for k in args["grid"].split(",")]
    workers, repeats = args["workers"], args["repeats"]
    rows = [{"run": name, "median s": f"{np.median(seconds):.1f}",
             "min-max s": f"{min(seconds):.1f}-{max(seconds):.1f}",
             "every round (s)": ", ".join(f"{s:.1f}" for s in seconds)}
            for name, seconds in out["runs_seconds"].items()]
    n_fits = len(grid) * 3
    lines = ["# GridSearchCV on a Dask LocalCluster and in joblib's processes", "",
             (f"Machine: {info['cpu']} ({info['simd']}), {info['cpu_count']} cores; commit "
              f"{commit_text(info)}. {load_sentence(out['load'])}"), "",
             (f"{out['n_documents']:,} BBC News documents, Pipeline(CountVectorizer, "
              f"LDAGibbs(max_iter={args['max_iter']})), K in {{{', '.join(map(str, grid))}}}, "
              f"cv=3, left-to-right and NPMI scorers ({n_fits} fits, {2 * n_fits} scores). "
              f"{workers} workers of one thread each (joblib: n_jobs={workers}; Dask: "
              f"LocalCluster of {workers} process workers, threads_per_worker=1). "
              f"Median over {repeats} round{'s' * (repeats > 1)}, the "
              "configurations in turn within a round; 'cold': a fresh pool or cluster whose "
              "workers start and import sktopics within the timing (the cluster's own start "
              "is its own row); 'warm': the same search again on it."), "",
             markdown_table(rows, ["run", "median s", "min-max s", "every round (s)"]),
             (f"Largest difference of any run's mean test scores from the one-process "
              f"search's: {out['max_abs_difference']:.2e}.")]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
