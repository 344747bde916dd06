"""Where a parallel Gibbs sweep's time goes on a GPU, by part, at several K.

Builds the sampler's state for the 20 Newsgroups training set directly (as LDAGibbs
does) and times, with CUDA synchronisation around each part and the median of
``REPEATS`` repeats: the frozen tables, the recount and, with the fused kernel drawing
in word-major (position) order and in document order, the whole sweep
(``parallel_sweep``), the uniforms and the fused kernel's calls alone (the uniforms
drawn beforehand). On the GPU kit's corpus (``COPIES=16`` stacked training sets); on a
machine without CUDA it times the CPU's eager sweep instead, as a check of the script
(``COPIES=1 REPEATS=2``).

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

REPEATS = int(os.environ.get("REPEATS", 10))
data_home, out = sys.argv[1], sys.argv[2]
topics = [int(k) for k in sys.argv[3:]] or [50, 256, 1024]
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
# The GPU kit's corpus: the training set stacked COPIES times (16: 15.9 M tokens).
COPIES = int(os.environ.get("COPIES", 16))
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
    row["tables_ms"] = timed(lambda: _sweeps._frozen_tables(state, alpha, beta))
    row["recount_ms"] = timed(state.rebuild_counts)
    # The sweep with the fused kernel in word-major (position) order and in document
    # order, whatever the package's rule would pick.
    for name, min_topics in (("word_order", 10**9), ("doc_order", 1)):
        _sweeps._DOC_MAJOR_MIN_TOPICS = min_topics
        row[f"{name}_sweep_ms"] = timed(
            lambda: _sweeps.parallel_sweep(state, alpha, beta, 0, 0, chunk))
        row[f"{name}_M_tokens_per_s"] = corpus.n_tokens / row[f"{name}_sweep_ms"] / 1e3
        if fused:
            order = _sweeps.fused_order(corpus, K)
            theta_tab, phi_tab = _sweeps._frozen_tables(state, alpha, beta)
            blocks = list(_sweeps._fused_blocks(key, corpus, order))
            row[f"{name}_uniforms_ms"] = timed(
                lambda: list(_sweeps._fused_blocks(key, corpus, order)))
            new_z = torch.empty_like(state.z)

            def kernel_only():
                for start, stop, u in blocks:
                    if order is None:
                        _sweeps.fused_dense_chunk(
                            corpus.doc[start:stop], corpus.word[start:stop],
                            state.z[start:stop], theta_tab, phi_tab, state.n_dk, state.n_wk,
                            state.n_k, alpha, beta, u, out=new_z[start:stop])
                    else:
                        _sweeps.fused_dense_chunk(
                            corpus.doc, corpus.word, state.z, theta_tab, phi_tab, state.n_dk,
                            state.n_wk, state.n_k, alpha, beta, u, out=new_z,
                            order=order[start:stop])

            row[f"{name}_kernel_ms"] = timed(kernel_only)
    print(json.dumps(row), flush=True)
    rows.append(row)
with open(out, "w") as f:
    commit = os.environ.get("SKTOPICS_COMMIT") or subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    json.dump({"commit": commit, "repeats": REPEATS, "copies": COPIES, "rows": rows}, f,
              indent=1)
