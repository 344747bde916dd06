"""Torch threads on an idle and on a loaded machine: what ``n_jobs`` should default to.

Times ``LDAGibbs`` (K = 20, 100 sweeps, and ``transform`` and ``score`` of the test
set) and ``ProdLDA`` (K = 50, 5 epochs) on 20 Newsgroups with 1 thread and with every
core, on the idle machine and with one busy process per ``--load`` (a pure-Python loop,
like a notebook's neighbour), each measurement in a fresh process, alternating.
Writes ``benchmarks/results/threads.{json,rst}`` (``--report-only`` redraws the page
from the JSON).
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_result_arguments, commit_text, default_data_home, machine, report_only, write_results

CHILD = r'''
import json, sys, time, numpy as np, torch
from sktopics import LDAGibbs, ProdLDA
from sktopics.datasets import load_20news_avitm
model, n_jobs, data = sys.argv[1], int(sys.argv[2]), sys.argv[3]
X = load_20news_avitm(data, subset="train").data
T = load_20news_avitm(data, subset="test").data[:2000]
out = {}
if model == "gibbs":
    est = LDAGibbs(20, max_iter=100, device="cpu", random_state=0, n_jobs=n_jobs)
    t = time.perf_counter(); est.fit(X); out["fit_s"] = time.perf_counter() - t
    t = time.perf_counter(); est.transform(T); out["transform_s"] = time.perf_counter() - t
    t = time.perf_counter(); est.score(T); out["score_s"] = time.perf_counter() - t
else:
    est = ProdLDA(50, max_iter=5, batch_size=200, device="cpu", random_state=0, n_jobs=n_jobs)
    t = time.perf_counter(); est.fit(X.astype(np.float32)); out["fit_s"] = time.perf_counter() - t
out["threads_after"] = torch.get_num_threads()
print("RESULT " + json.dumps(out))
'''


def run(model, n_jobs, data):
    out = subprocess.run([sys.executable, "-c", CHILD, model, str(n_jobs), data],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out.split("RESULT ", 1)[1])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--load", type=int, default=1, help="busy processes in the loaded case")
    add_result_arguments(p, "threads")
    args = p.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    data = default_data_home()
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    rows = []
    for condition in ("idle", "loaded"):
        busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"])
                for _ in range(args.load if condition == "loaded" else 0)]
        try:
            time.sleep(1.0)
            for _ in range(args.repeats):
                for model in ("gibbs", "prodlda"):
                    for n_jobs in (1, cores):
                        r = run(model, n_jobs, data)
                        rows.append({"condition": condition, "model": model, "n_jobs": n_jobs, **r})
                        print(rows[-1], flush=True)
        finally:
            for b in busy:
                b.kill()
    write_results(args.output_name, {"machine": machine(), "args": vars(args), "rows": rows},
                  report, directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    import numpy as np

    rows, args = out["rows"], out["args"]
    cores = max(r["n_jobs"] for r in rows)  # every core: the larger n_jobs
    lines = ["# Torch threads, idle and loaded (20 Newsgroups)", "",
             (f"Machine: {out['machine']['cpu']}, {cores} cores; commit "
              f"{commit_text(out['machine'])}; 'loaded': {args['load']} busy "
              "pure-Python process(es) beside the run. LDAGibbs K = 20, 100 sweeps (fit), "
              "transform and score of 2,000 test documents; ProdLDA K = 50, 5 epochs. "
              f"Median of {args['repeats']} runs, each in a fresh process."), "",
             "| machine | model | n_jobs | fit s | transform s | score s |", "|---|---|---|---|---|---|"]
    for condition in ("idle", "loaded"):
        for model in ("gibbs", "prodlda"):
            for n_jobs in (1, cores):
                sel = [r for r in rows if (r["condition"], r["model"], r["n_jobs"])
                       == (condition, model, n_jobs)]
                med = {k: float(np.median([r[k] for r in sel])) for k in ("fit_s", "transform_s",
                                                                        "score_s") if k in sel[0]}
                lines.append(f"| {condition} | {model} | {n_jobs} | {med['fit_s']:.2f} | "
                             f"{med.get('transform_s', float('nan')):.2f} | "
                             f"{med.get('score_s', float('nan')):.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
