"""Where a Gibbs sweep's time goes on a GPU: its parts, timed one by one.

20 Newsgroups (AVITM's training set) tiled 16 times, as in the GPU kit. K = 50: the
uniforms, the eager dense chunk path, the fused kernel, the count rebuild, the
log-likelihood. K = 1024 with MH: the uniforms, the MH draws, the count rebuild.

Usage (a CUDA machine): ``python research/gibbs_gpu_profile.py --data-home DIR
[--output DIR]``; prints a table and writes ``gibbs_gpu_profile.json`` to ``--output``
(default: ``research/results``).
"""

import argparse
import json
import sys
import time
from pathlib import Path

import scipy.sparse as sp
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sktopics._gibbs import _sweeps as sw  # noqa: E402
from sktopics._gibbs._fused import fused_dense_available, fused_dense_chunk  # noqa: E402
from sktopics._gibbs._state import GibbsCorpus, GibbsState, default_chunk  # noqa: E402
from sktopics._random import counter_uniform, stream_key  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402


def timed(fn, repeat=5):
    fn()
    torch.cuda.synchronize()
    tic = time.perf_counter()
    for _ in range(repeat):
        fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - tic) / repeat


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-home", required=True)
    p.add_argument("--output", default=str(ROOT / "research" / "results"), metavar="DIR",
                   help="folder for gibbs_gpu_profile.json (default: research/results)")
    args = p.parse_args()
    X = load_20news_avitm(args.data_home, subset="train").data
    X = sp.vstack([X] * 16).tocsr()
    corpus = GibbsCorpus(X, "cuda")
    n = corpus.n_tokens
    rows = []

    def row(name, seconds):
        rows.append({"part": name, "ms": 1e3 * seconds, "M tokens/s": n / seconds / 1e6})
        print(f"{name:48s} {1e3 * seconds:9.2f} ms  {n / seconds / 1e6:9.1f} M tokens/s",
              flush=True)

    for K in (50, 1024):
        z = sw.random_init(corpus, K, 0)
        state = GibbsState(corpus, K, z)
        alpha = torch.full((K,), 0.1, device="cuda")
        beta = 0.01
        key = stream_key(0, 1, 1)
        index = torch.arange(n, device="cuda")
        row(f"K={K} uniforms (all tokens)", timed(lambda: counter_uniform(key, index)))
        row(f"K={K} rebuild_counts", timed(state.rebuild_counts))
        row(f"K={K} frozen tables", timed(lambda: sw._frozen_tables(state, alpha, beta)))
        theta, phi = sw._frozen_tables(state, alpha, beta)
        u = counter_uniform(key, index)
        if fused_dense_available("cuda", K):
            out = torch.empty(n, dtype=torch.int32, device="cuda")
            row(f"K={K} fused dense kernel (all tokens)", timed(lambda: fused_dense_chunk(
                corpus.doc, corpus.word, state.z, theta, phi, state.n_dk, state.n_wk,
                state.n_k, alpha, beta, u, out=out)))
        chunk = default_chunk(K, device="cuda")
        buffers = (torch.empty((chunk, K), device="cuda"), torch.empty((chunk, K), device="cuda"))

        def eager():
            for start in range(0, n, chunk):
                stop = min(n, start + chunk)
                sw.dense_chunk(corpus.doc[start:stop], corpus.word[start:stop],
                               state.z[start:stop], theta, phi, state.n_dk, state.n_wk,
                               state.n_k, alpha, beta, u[start:stop], buffers)
        row(f"K={K} eager dense chunks (chunk {chunk})", timed(eager, repeat=2))
        row(f"K={K} parallel_sweep (as fit runs it)",
            timed(lambda: sw.parallel_sweep(state, alpha.cpu().numpy(), beta, 0, 1, chunk),
                  repeat=3))
        row(f"K={K} log_joint", timed(lambda: sw.log_joint(state, alpha.cpu().numpy(), beta),
                                      repeat=2))
        if K == 1024:
            _ = corpus.doc_perm
            row(f"K={K} mh_sweep (as fit runs it)", timed(
                lambda: sw.mh_sweep(state, alpha.cpu().numpy(), beta, 0, 1, 1 << 22), repeat=3))
            row(f"K={K} z_by_doc gather", timed(lambda: state.z[corpus.doc_perm]))
        state = theta = phi = None  # free the K = 50 tables before K = 1024
        torch.cuda.empty_cache()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gibbs_gpu_profile.json").write_text(json.dumps(
        {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "n_tokens": n,
         "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
