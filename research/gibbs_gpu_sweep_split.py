"""Where a parallel Gibbs sweep's time goes on a GPU, by part, at several K.

Builds the sampler's state for the 20 Newsgroups training set directly (as LDAGibbs
does), runs ``BURN_IN`` sweeps, then times each part with the GPU kit's timer
(``benchmarks/_sweep_timing.py``: blocks bracketed by CUDA events, median and range
over ``REPEATS`` blocks): the whole sweep, the frozen tables, the uniforms, the fused
kernel's calls alone (the uniforms drawn beforehand), the recount, and the kernel
alone at other tile sizes and warp counts. Then the three figures the kit once gave
for one sweep side by side: the sweep on the burnt-in state, the same sweeps inside
pairs of fits (both fits' times and their difference, repeated), and the profiler's
device time by kernel; with the memory-traffic floor over the measured copy
bandwidth. On the GPU kit's corpus (``COPIES=16`` stacked training sets); on a
machine without CUDA it times the CPU's sweep instead, as a check of the script
(``COPIES=1 REPEATS=2 BURN_IN=2``, which ``SKTOPICS_RESEARCH_TINY=1`` sets, with
K = 50 alone unless K are given). Its results:
``research/results/gibbs_gpu_sweep_split.json``.

Usage: ``python research/gibbs_gpu_sweep_split.py DATA_HOME OUT.json [K ...]``
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from sktopics import LDAGibbs
from sktopics._gibbs import _sweeps
from sktopics._gibbs._state import default_chunk
from sktopics._random import stream_key
from sktopics.datasets import load_20news_avitm

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _sweep_timing import (  # noqa: E402
    copy_bandwidth,
    fit_pairs,
    profile_sweeps,
    sweeper,
    time_calls,
    time_sweeps,
    traffic_floor_bytes,
)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _tiny import TINY  # noqa: E402

REPEATS = int(os.environ.get("REPEATS", 2 if TINY else 5))
BURN_IN = int(os.environ.get("BURN_IN", 2 if TINY else 50))
data_home, out = sys.argv[1], sys.argv[2]
topics = [int(k) for k in sys.argv[3:]] or ([50] if TINY else [50, 1024])
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
on_gpu = device.type == "cuda"
# The GPU kit's corpus: the training set stacked COPIES times (16: 15.9 M tokens).
COPIES = int(os.environ.get("COPIES", 1 if TINY else 16))
X = sp.vstack([load_20news_avitm(data_home, subset="train").data.astype(np.float64)]
              * COPIES).tocsr()
beta = 0.01
blocks_of = dict(repeats=REPEATS, per_block=1 if TINY else 10)


def median_ms(fn):
    times = time_calls(fn, device, **blocks_of)
    return {k: times[k] for k in ("median_ms", "min_ms", "max_ms")}


bandwidth = copy_bandwidth(device) if on_gpu else None
rows = []
for K in topics:
    state, sweep = sweeper(X, K, "parallel", device)
    corpus = state.corpus
    row = {"K": K, "device": str(device), "tokens": corpus.n_tokens, "burn_in": BURN_IN,
           "fused": _sweeps.fused_dense_available(device, K)}
    # the sweep as the kit times it: blocks of 50 sweeps (2 in the tiny check)
    row["sweep"] = time_sweeps(sweep, device, burn_in=BURN_IN, timed=2 if TINY else 50,
                               repeats=REPEATS)
    alpha = torch.full((K,), 5.0 / K, device=device)
    key = stream_key(0, _sweeps.STREAMS["dense"], 0)
    chunk = default_chunk(K, device=device)
    row["tables"] = median_ms(lambda: _sweeps._frozen_tables(state, alpha, beta))
    block = _sweeps._FUSED_CHUNK if row["fused"] else chunk
    row["uniforms"] = median_ms(lambda: list(_sweeps._uniform_blocks(key, corpus, block)))
    row["recount"] = median_ms(state.rebuild_counts)
    if row["fused"]:
        theta_tab, phi_tab = _sweeps._frozen_tables(state, alpha, beta)
        blocks = list(_sweeps._uniform_blocks(key, corpus, block))
        new_z = torch.empty_like(state.z)

        def kernel_only():
            for start, stop, u in blocks:
                _sweeps.fused_dense_chunk(
                    corpus.doc[start:stop], corpus.word[start:stop], state.z[start:stop],
                    theta_tab, phi_tab, state.n_dk, state.n_wk, state.n_k, alpha, beta, u,
                    out=new_z[start:stop])

        row["kernel"] = median_ms(kernel_only)
    row["M_tokens_per_s"] = corpus.n_tokens / row["sweep"]["median_ms"] / 1e3
    if row["fused"] and on_gpu:
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
                    configs[f"tile{tile}_warps{warps}"] = median_ms(launch)
                except Exception as exc:  # noqa: BLE001 - a configuration Triton refuses
                    configs[f"tile{tile}_warps{warps}"] = repr(exc)[:120]
        row["kernel_configs"] = configs
    if on_gpu:
        row["profile"] = profile_sweeps(sweep)
        floor, table_bytes = traffic_floor_bytes(X, K)
        row.update(floor_ms=1e3 * floor / bandwidth, document_table_bytes=table_bytes)
    print(json.dumps(row), flush=True)
    rows.append(row)

# The same sweeps inside fits, timed as the GPU kit once timed them alone (a fit of
# burn-in + M sweeps minus a fit of burn-in sweeps), repeated, with both fits' times.
for row in rows:
    K = row["K"]

    def fit(n):
        return LDAGibbs(K, algorithm="parallel", max_iter=n, optimize_interval=None,
                        n_kept_samples=1, evaluate_every=10**6, device=device,
                        random_state=0).fit(X)

    row["fits"] = fit_pairs(fit, device, burn_in=BURN_IN, timed=2 if TINY else 50,
                            repeats=REPEATS)
    print(json.dumps({"K": K, "fits": row["fits"]}), flush=True)
with open(out, "w") as f:
    commit = os.environ.get("SKTOPICS_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
        cwd=Path(__file__).resolve().parent).stdout.strip()
    json.dump({"commit": commit, "repeats": REPEATS, "burn_in": BURN_IN, "copies": COPIES,
               "copy_bandwidth_bytes_per_s": bandwidth, "rows": rows}, f, indent=1)
