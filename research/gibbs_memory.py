"""Peak memory of an LDAGibbs fit and transform against the (documents, K) result.

A synthetic corpus of many short documents at a large K, where the (documents, K)
tables dominate: 100,000 documents of 20 tokens, V = 2,000, K = 500, so ``doc_topic_``
(float64) is 400 MB and an int32 ``n_dk`` 200 MB. The peak resident memory above the
baseline is sampled every 5 ms in a thread.

Usage: ``python research/gibbs_memory.py``; prints the figures.
"""

import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import PeakRSS  # noqa: E402

from sktopics import LDAGibbs  # noqa: E402


def peak_above(fn):
    """``fn()`` and the peak of the resident memory above its start while it ran (MB)."""
    with PeakRSS(interval=0.005) as rss:
        out = fn()
    return out, rss.rise_mb


def main():
    rng = np.random.default_rng(0)
    n_docs, n_words, length, K = 100_000, 2_000, 20, 500
    rows = np.repeat(np.arange(n_docs), length)
    cols = rng.integers(0, n_words, rows.size)
    X = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n_docs, n_words))
    X.sum_duplicates()
    result_mb = n_docs * K * 8 / 2**20
    print(f"{n_docs} documents, {int(X.sum())} tokens, K = {K}: doc_topic_ is "
          f"{result_mb:.0f} MB (float64), n_dk {n_docs * K * 4 / 2**20:.0f} MB (int32)")
    model, fit_mb = peak_above(lambda: LDAGibbs(K, max_iter=12, burn_in=0, n_kept_samples=3,
                                                sample_interval=4, optimize_interval=None,
                                                random_state=0, device="cpu").fit(X))
    print(f"fit: peak {fit_mb:.0f} MB above the start ({fit_mb / result_mb:.2f}x the result)")
    _, transform_mb = peak_above(lambda: model.transform(X))
    print(f"transform: peak {transform_mb:.0f} MB above the start "
          f"({transform_mb / result_mb:.2f}x its (documents, K) float64 output)")


if __name__ == "__main__":
    main()
