"""Inference in bounded memory: ``transform``, ``score`` and ``score_samples`` of every
estimator need, beside their input and output, memory that does not grow with the
number of documents.

Each estimator is measured in a fresh process, where the kernel's high-water mark of
resident memory (``VmHWM``) is reset before each call (``/proc/self/clear_refs``) and
read after it; glibc is told to map every block over 128 kB on its own
(``MALLOC_MMAP_THRESHOLD_``), so that memory freed is memory returned. The same calls
on N and on 4N documents of float64 counts (no conversion to copy them): the rise of
the peak may grow by at most half the growth of the CSR input plus that of the output.
The benchmark's goal is 1.5 times the input plus the output (at 100,000 documents in
``benchmarks/bench_streaming.py``); the code needs none of the input's growth, so half
of it leaves room for the allocator and none for a copy of the values (two thirds of
the input) or a table per non-zero cell.

The work space of a block of documents is bounded by budgets of non-zero cells
(``sktopics.utils._blocks.EVALUATION_CELLS``, the neural batches' layouts'
``sktopics._neural._data._LAYOUT_ELEMENTS``); the child shrinks them, so that corpora
that take seconds are far above them and what grows is what grows with the documents.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._instances import FAST_PARAMS

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/clear_refs").exists() or sys.platform != "linux",
    reason="reads the resident high-water mark of Linux's /proc")

CHILD = r"""
import gc, json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np, scipy.sparse as sp, torch
torch.set_num_threads(1)
import sktopics
from sktopics._neural import _data
from sktopics.datasets import make_lda_corpus
from sktopics.utils import _blocks

from sktopics._gibbs import _lda_gibbs

_blocks.EVALUATION_CELLS = _data._LAYOUT_ELEMENTS = 1 << 11
# LDAGibbs's torch transform (GPUs, cpu_kernels="torch"): its blocks too
_lda_gibbs._TRANSFORM_ELEMENTS = _lda_gibbs._TRANSFORM_CELLS = 1 << 11

name, params, n_docs = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3])
cls = getattr(sktopics, name)
for key in ("structure", "component_sizes", "hidden_sizes"):
    if key in params:
        params[key] = tuple(params[key])
X, _, _ = make_lda_corpus(n_samples=1000, n_features=300, n_components=3, doc_length=40,
                          random_state=0)
X = X.astype(np.float64)
model = cls(**params).fit(X)
X = sp.vstack([X] * (n_docs // 1000)).tocsr()


def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith(field))


out = {"csr": X.data.nbytes + X.indices.nbytes + X.indptr.nbytes}
for call in ("transform", "score_samples", "score"):
    getattr(model, call)(X[:100])  # first calls: compilation, lazy imports
    gc.collect()
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    start = status("VmRSS")
    result = getattr(model, call)(X)
    out[call] = {"rise": status("VmHWM") - start, "output": getattr(result, "nbytes", 0)}
print("RESULT " + json.dumps(out))
"""


def _measure(cls, n_docs):
    params = {**FAST_PARAMS[cls], "random_state": 0, "n_jobs": 1}
    env = {**os.environ, "MALLOC_MMAP_THRESHOLD_": "131072", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-c", CHILD, cls.__name__, json.dumps(params),
                           str(n_docs)], capture_output=True, text=True, env=env,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.split("RESULT ", 1)[1])


@pytest.mark.parametrize("cls", list(FAST_PARAMS), ids=lambda c: c.__name__)
def test_inference_memory_does_not_grow_with_the_documents_beyond_the_bound(cls):
    small, large = _measure(cls, 10_000), _measure(cls, 40_000)
    more_input = large["csr"] - small["csr"]
    for call in ("transform", "score_samples", "score"):
        grown = large[call]["rise"] - small[call]["rise"]
        bound = 0.5 * more_input + large[call]["output"] - small[call]["output"]
        assert grown <= bound, (
            f"{cls.__name__}.{call}: the peak rose by {grown / 2**20:.1f} MB more on 40,000 "
            f"documents than on 10,000, against {bound / 2**20:.1f} MB allowed "
            f"(the input grew by {more_input / 2**20:.1f} MB)")
