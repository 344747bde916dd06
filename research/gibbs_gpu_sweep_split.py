"""Where a parallel Gibbs sweep's time goes on a GPU, by part, at several K.

Builds the sampler's state for the 20 Newsgroups training set directly (as LDAGibbs
does) and times, with CUDA synchronisation around each part and the median of
``REPEATS`` repeats: the whole sweep (``parallel_sweep``), the frozen tables, the
uniforms, the fused kernel's calls alone (the uniforms drawn beforehand), the recount,
the kernel alone at other tile sizes and warp counts, and the sweep inside a fit (timed
as the GPU kit times it, with a profile by operation). On the GPU kit's corpus
(``COPIES=16`` stacked training sets); on a machine without CUDA it times the CPU's
sweep instead, as a check of the script (``COPIES=1 REPEATS=2``, which
``SKTOPICS_RESEARCH_TINY=1`` sets, with K = 50 alone unless K are given). Its results:
``research/results/gibbs_gpu_sweep_split.json``.

Usage: ``python research/gibbs_gpu_sweep_split.py DATA_HOME OUT.json [K ...]``
"""

import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp
import torch

from sktopics._gibbs import _sweeps
from sktopics._gibbs._state import GibbsCorpus, GibbsState, default_chunk
from sktopics._random import stream_key
from sktopics.datasets import load_20news_avitm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tiny import TINY  # noqa: E402

REPEATS = int(os.environ.get("REPEATS", 2 if TINY else 10))
data_home, out = sys.argv[1], sys.argv[2]
topics = [int(k) for k in sys.argv[3:]] or ([50] if TINY else [50, 1024])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# The GPU kit's corpus: the training set stacked COPIES times (16: 15.9 M tokens).
COPIES = int(os.environ.get("COPIES", 1 if TINY else 16))
X = sp.vstack([load_20news_avitm(data_home, subset="train").data.astype(np.float64)] * COPIES)
corpus = GibbsCorpus(X.tocsr(), device)
beta = 0.01


def timed(fn):
    times = []
    for _ in range(REPEATS):
        if device.type == "cuda":
            torch.cuda.synchronize()
        tic = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize()
        times.append(time.perf_counter() - tic)
    return 1e3 * statistics.median(times)


rows = []
for K in topics:
    generator = torch.Generator().manual_seed(0)
    z = torch.randint(0, K, (corpus.n_tokens,), generator=generator)
    state = GibbsState(corpus, K, z)
    alpha = torch.full((K,), 50.0 / K, device=device)
    chunk = default_chunk(K, device=device)
    key = stream_key(0, _sweeps.STREAMS["dense"], 0)
    fused = _sweeps.fused_dense_available(device, K)
    row = {"K": K, "device": str(device), "tokens": corpus.n_tokens, "fused": fused}
    row["sweep_ms"] = timed(lambda: _sweeps.parallel_sweep(state, alpha, beta, 0, 0, chunk))
    row["tables_ms"] = timed(lambda: _sweeps._frozen_tables(state, alpha, beta))
    block = _sweeps._FUSED_CHUNK if fused else chunk
    row["uniforms_ms"] = timed(lambda: list(_sweeps._uniform_blocks(key, corpus, block)))
    row["recount_ms"] = timed(state.rebuild_counts)
    if fused:
        theta_tab, phi_tab = _sweeps._frozen_tables(state, alpha, beta)
        blocks = list(_sweeps._uniform_blocks(key, corpus, block))
        new_z = torch.empty_like(state.z)

        def kernel_only():
            for start, stop, u in blocks:
                _sweeps.fused_dense_chunk(
                    corpus.doc[start:stop], corpus.word[start:stop], state.z[start:stop],
                    theta_tab, phi_tab, state.n_dk, state.n_wk, state.n_k, alpha, beta, u,
                    out=new_z[start:stop])

        row["kernel_ms"] = timed(kernel_only)
    row["M_tokens_per_s"] = corpus.n_tokens / row["sweep_ms"] / 1e3
    if fused and device.type == "cuda":
        # The kernel alone at other tile sizes and warp counts (the package uses a
        # 4096-element tile and Triton's default of 4 warps).
        from sktopics._gibbs._fused import _dense_kernel

        kernel = _dense_kernel(False)
        block_k = 1 << max(0, K - 1).bit_length()
        V = corpus.n_features
        configs = {}
        for tile in (2048, 4096, 8192, 16384):
            for warps in (2, 4, 8, 16):
                block_t = max(1, tile // block_k)

                def launch():
                    for start, stop, u in blocks:
                        C = stop - start
                        kernel[(-(-C // block_t),)](
                            corpus.doc[start:stop], corpus.word[start:stop],
                            state.z[start:stop], u, theta_tab, phi_tab, state.n_dk,
                            state.n_wk, state.n_k, alpha, new_z[start:stop], C, K,
                            beta - 1.0, V * beta - 1.0, BLOCK_T=block_t, BLOCK_K=block_k,
                            num_warps=warps)

                try:
                    launch()
                    configs[f"tile{tile}_warps{warps}"] = timed(launch)
                except Exception as exc:  # noqa: BLE001 - a configuration Triton refuses
                    configs[f"tile{tile}_warps{warps}"] = repr(exc)[:120]
        row["kernel_configs_ms"] = configs
    print(json.dumps(row), flush=True)
    rows.append(row)

if device.type == "cuda":
    # The sweep inside a fit, timed as the GPU kit times it (burn-in + M sweeps minus
    # burn-in sweeps), and a profile of the fit's host and device time by operation.
    from sktopics import LDAGibbs

    def fit(K, n):
        return LDAGibbs(K, algorithm="parallel", max_iter=n, optimize_interval=None,
                        n_kept_samples=1, evaluate_every=10**6, device="cuda",
                        random_state=0).fit(X)

    for row in rows:
        K = row["K"]
        fit(K, 2)
        times = {}
        for n in (5, 25):
            torch.cuda.synchronize()
            tic = time.perf_counter()
            fit(K, n)
            torch.cuda.synchronize()
            times[n] = time.perf_counter() - tic
        row["fit_sweep_ms"] = 1e3 * (times[25] - times[5]) / 20
        row["fit_M_tokens_per_s"] = corpus.n_tokens / row["fit_sweep_ms"] / 1e3
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                                torch.profiler.ProfilerActivity.CUDA]) as prof:
            fit(K, 10)
        row["fit_profile"] = prof.key_averages().table(sort_by="self_device_time_total",
                                                       row_limit=15)
        print(json.dumps({k: v for k, v in row.items() if k != "fit_profile"}), flush=True)
        print(row["fit_profile"], flush=True)
with open(out, "w") as f:
    commit = os.environ.get("SKTOPICS_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    json.dump({"commit": commit, "repeats": REPEATS, "copies": COPIES, "rows": rows}, f,
              indent=1)
