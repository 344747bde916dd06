"""LDAGibbs on a large synthetic corpus: does it fit in memory, and how fast does it train.

The question is whether a 100 M-token synthetic corpus fits and trains (on one GPU). This
script draws such a corpus from a known LDA model (``K`` topics over ``V`` words,
``phi_k ~ Dirichlet(0.05)``, ``theta_d ~ Dirichlet(0.1)``, Poisson document lengths;
:func:`sktopics.datasets.make_lda_corpus`),
fits :class:`~sktopics.LDAGibbs` for a few sweeps and records:

* the corpus (tokens, documents, non-zero cells) and the time to draw it;
* the fit's wall time and the sweeps' tokens/s (``verbose`` lines: a sweep plus
  its log-likelihood evaluation), and the log-likelihood of the first and last sweep;
* the fit's peak memory above the resident set before the fit (CPU: ``VmRSS``
  sampled every 50 ms; CUDA: ``torch.cuda.max_memory_allocated``);
* as a sanity check that it trained, the mean cosine similarity between each true
  topic and its best-matching learned topic.

Usage::

    python benchmarks/bench_gibbs_scale.py --tokens 100e6               # CPU
    python benchmarks/bench_gibbs_scale.py --tokens 100e6 --device cuda

Writes ``benchmarks/results/gibbs_scale_<device>.{json,rst}`` (``--report-only``
redraws the page from the JSON).
"""

import argparse
import contextlib
import io
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    PeakRSS,
    add_result_arguments,
    commit_text,
    machine,
    markdown_table,
    report_only,
    write_results,
)

from sktopics import LDAGibbs  # noqa: E402
from sktopics.datasets import make_lda_corpus  # noqa: E402


def topic_recovery(phi_true, phi_learned):
    """Mean over true topics of the best cosine similarity to a learned topic."""
    a = phi_true / np.linalg.norm(phi_true, axis=1, keepdims=True)
    b = phi_learned / np.linalg.norm(phi_learned, axis=1, keepdims=True)
    return float((a @ b.T).max(1).mean())


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tokens", type=float, default=100e6)
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--words", type=int, default=20000)
    parser.add_argument("--mean-length", type=int, default=250)
    parser.add_argument("--sweeps", type=int, default=3)
    parser.add_argument("--algorithm", default="parallel")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (CPU)")
    parser.add_argument("--seed", type=int, default=0)
    add_result_arguments(parser, None)  # default name: gibbs_scale_<device type>
    args = parser.parse_args(argv)
    name = args.output_name or f"gibbs_scale_{torch.device(args.device).type}"
    if args.report_only:
        return report_only([args.output_dir / f"{name}.json"], report)
    if args.threads:
        torch.set_num_threads(args.threads)

    tic = time.perf_counter()
    X, phi_true, _ = make_lda_corpus(
        n_samples=int(round(args.tokens / args.mean_length)), n_features=args.words,
        n_components=args.topics, doc_topic_prior=0.1, topic_word_prior=0.05,
        doc_length=args.mean_length, random_state=args.seed)
    draw_seconds = time.perf_counter() - tic
    n_tokens = int(X.sum())
    print(f"corpus: {n_tokens / 1e6:.1f} M tokens, {X.shape[0]} documents, "
          f"{X.nnz / 1e6:.1f} M cells, drawn in {draw_seconds:.0f} s", flush=True)

    model = LDAGibbs(n_components=args.topics, max_iter=args.sweeps, burn_in=args.sweeps - 1,
                     evaluate_every=1, algorithm=args.algorithm, device=args.device,
                     random_state=args.seed, verbose=1)
    cuda = torch.device(args.device).type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    log = io.StringIO()
    with PeakRSS() as rss, contextlib.redirect_stdout(log):
        tic = time.perf_counter()
        model.fit(X)
        if cuda:
            torch.cuda.synchronize()
        fit_seconds = time.perf_counter() - tic
    progress = log.getvalue().strip()
    print(progress)
    # One line per sweep: "[LDAGibbs] sweep N  S M tokens/s  log p(w,z)/token L".
    sweep_speed = [float(line.split()[3]) for line in progress.splitlines()]

    row = dict(
        device=args.device, threads=torch.get_num_threads(), algorithm=model.algorithm_,
        K=args.topics, V=args.words, M_tokens=round(n_tokens / 1e6, 2), docs=X.shape[0],
        M_cells=round(X.nnz / 1e6, 2), sweeps=args.sweeps, draw_s=round(draw_seconds, 1),
        fit_s=round(fit_seconds, 1), sweep_M_tokens_s_median=float(np.median(sweep_speed)),
        log_joint_per_token_first_last=[round(float(v) / n_tokens, 3) for v in
                                        model.log_likelihood_trace_[[0, -1]]],
        peak_rss_above_baseline_GB=round((rss.peak - rss.baseline) / 2**30, 2),
        rss_before_fit_GB=round(rss.baseline / 2**30, 2),
        topic_recovery_cosine=round(topic_recovery(phi_true, model.components_), 3),
    )
    if cuda:
        row["cuda_peak_allocated_GB"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
    print(row, flush=True)
    write_results(name, dict(rows=[row], machine=machine(), args=vars(args)), report,
                  directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, row = out["machine"], out["rows"][0]
    # An early results file has no arguments: the corpus's settings are in its row.
    args = out.get("args") or {"topics": row["K"], "words": row["V"], "sweeps": row["sweeps"],
                               "mean_length": row["M_tokens"] * 1e6 / row["docs"]}
    return (
        "# LDAGibbs on a synthetic corpus (a 100 M-token corpus fits and trains)\n\n"
        f"Machine: {info['cpu']}, {info['cpu_count']} cores, {info['torch_threads']} torch "
        f"threads, GPU: {info['gpu']}; torch {info['torch']}; commit {commit_text(info)}; "
        f"load average at the start {', '.join(f'{v:.2f}' for v in info['load_average_at_start'])}."
        "\n\n"
        f"Corpus drawn from LDA (K = {args['topics']}, V = {args['words']}, phi ~ Dir(0.05), "
        f"theta ~ Dir(0.1), Poisson lengths, mean {args['mean_length']:.0f}). `fit_s` includes "
        "building the token arrays, the random initialisation, the sweeps and a "
        "log-likelihood per sweep; `sweep_M_tokens_s_median` is the median of the verbose "
        "lines' rates (a sweep plus its log-likelihood). `peak_rss_above_baseline_GB`: "
        "resident memory during `fit` above the resident memory before it (the corpus "
        "matrix is part of the baseline). "
        "`topic_recovery_cosine`: mean best-match cosine of true to learned topics after "
        f"{args['sweeps']} sweeps (a check that it trains, not a quality target).\n\n"
        + markdown_table([row], list(row)) + "\n"
    )


if __name__ == "__main__":
    main()
