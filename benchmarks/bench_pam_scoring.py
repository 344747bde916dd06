"""Held-out likelihood of PAMVI models: left-to-right over paths against path AIS.

Fits ``PAMVI`` on 20 Newsgroups (``20news_avitm``) for each ``--structures`` entry, then
scores ``--docs`` test documents (a seeded sample of the non-empty ones) with the
left-to-right SMC estimator over (super-topic, sub-topic) paths and with AIS over the
paths (``method="ais-z-pam"``), both under the Dirichlets the model's Laplace priors
approximate, at several budgets. All estimates are stochastic lower bounds in log space
(unbiased in probability), so a larger budget should raise them until they agree.

Run on a quiet machine (the seconds are reported):
``python benchmarks/bench_pam_scoring.py``. Results:
``benchmarks/results/pam_scoring.{json,rst}`` (``--report-only`` redraws the page from
the JSON).
"""

import argparse
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_result_arguments, load_pam_corpus, machine, report_only, write_results

from sktopics import PAMVI
from sktopics.model_selection import ais_log_likelihood, left_to_right_log_likelihood


def parse():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--structures", default="2x50,50x100",
                   help="comma-separated super x sub sizes")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--docs", type=int, default=100)
    p.add_argument("--threads", type=int, default=1)
    add_result_arguments(p, "pam_scoring")
    return p.parse_args()


def cases(n_paths):
    lr = [("left-to-right", left_to_right_log_likelihood, dict(n_particles=r, n_filters=2))
          for r in (20, 100, 500)]
    ais = [("path AIS", ais_log_likelihood, dict(n_temperatures=s, n_chains=2))
           for s in (20, 100, 500)]
    if n_paths > 1000:  # keep the large DAG's run short
        lr, ais = lr[:2], ais[:1]
    return lr + ais


def main():
    args = parse()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    torch.set_num_threads(args.threads)
    _, _, X, X_test = load_pam_corpus("20ng")
    keep = np.flatnonzero(np.asarray(X_test.sum(1)).ravel() > 0)
    rows = np.sort(np.random.default_rng(0).choice(keep, args.docs, replace=False))
    X_eval = X_test[rows]
    n_tokens = float(X_eval.sum())
    out = {"machine": machine(), "args": vars(args), "n_tokens": n_tokens, "rows": []}
    for spec in args.structures.split(","):
        structure = tuple(int(v) for v in spec.split("x"))
        model = PAMVI(structure=structure, max_iter=args.epochs, random_state=0, device="cpu",
                      batch_size=200 if structure[0] > 2 else 64)
        t = time.perf_counter()
        model.fit(X)
        fit_s = time.perf_counter() - t
        n_paths = structure[0] * structure[1]
        print(f"{structure}: fit {fit_s:.1f}s", flush=True)
        for name, fn, kw in cases(n_paths):
            t = time.perf_counter()
            res = fn(model, X_eval, random_state=0, **kw)
            s = time.perf_counter() - t
            row = {"structure": list(structure), "paths": n_paths, "method": name,
                   "budget": kw, "per_token": res.per_token,
                   "stderr_per_token": res.per_token_stderr,
                   "seconds": s, "documents_per_s": args.docs / s,
                   "token_updates_per_s": res.n_token_updates / s}
            out["rows"].append(row)
            print(row, flush=True)
    write_results(args.output_name, out, report, directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    lines = [
        "# PAMVI held-out likelihood: left-to-right over paths and path AIS",
        "",
        (f"Machine: {out['machine']['cpu']}, {out['args']['threads']} torch thread(s), load at "
         f"start {tuple(out['machine']['load_average_at_start'])}. 20 Newsgroups, "
         f"{out['args']['docs']} test documents ({int(out['n_tokens'])} tokens); PAMVI fitted "
         f"{out['args']['epochs']} epochs (batch 64 for 2 super-topics, 200 otherwise). Both "
         "estimators score the model under the Dirichlets its Laplace priors approximate; "
         "both are unbiased in probability, so their logs are lower bounds that rise with "
         "the budget. Two filters / chains per document give the standard error. "
         "Token-updates: particles (or temperatures x chains) x tokens, each a draw over "
         "all paths."),
        "",
        "| structure | paths | method | budget | log-likelihood per token | s.e. per token | s | "
        "documents/s | token-updates/s |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in out["rows"]:
        budget = ", ".join(f"{k}={v}" for k, v in r["budget"].items())
        lines.append(
            f"| {r['structure'][0]}/{r['structure'][1]} | {r['paths']} | {r['method']} | {budget} | "
            f"{r['per_token']:.4f} | {r['stderr_per_token']:.4f} | {r['seconds']:.1f} | "
            f"{r['documents_per_s']:.1f} | {r['token_updates_per_s'] / 1e3:.0f} k |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
