"""The collapsed Gibbs sweep of the z-space evaluators (AIS, ratio-AIS, iteration-AIS),
compiled: one (document, chain) row at a time, all its positions in turn.

The torch engine (:mod:`sktopics._evaluation._zspace`) runs the sweep in lock-step
over rows, one position of every row per step, and solves the last positions of
the few long rows by fixed-point iteration. Here each row's tokens are swept in
order with the row's counts in the cache. Each token draws from the same float32
conditional with the same uniform (``stream_uniform(base, stage, temperature)``,
23 bits), the cumulative weights accumulated in float64 and rounded to float32 as
torch's CPU ``cumsum`` does, and the same search, so the draws are the torch
engine's, bit for bit.

Tokens are in the flat layout of :class:`~sktopics._evaluation._tokens.TokenBatch`:
token ``(j, r)`` (position ``j`` of row ``r``) at ``offsets[j] + r``.
"""

import numpy as np

from ._jit import jit
from ._random import keyed_uniform32

__all__ = ["geometric_sweep", "sequential_draw", "shifted_sweep"]


@jit(inline=True)
def _search(cum, target, K):
    """torch's ``searchsorted`` (left) in one row: the first topic whose cumulative
    weight reaches ``target``."""
    for k in range(K):
        if cum[k] >= target:
            return k
    return K - 1


@jit
def _shifted_rows(state, z, base, stage, tok, table, offsets, lengths, start, stop):
    K = state.shape[1]
    cum = np.empty(K, np.float32)
    for r in range(start, stop):
        for j in range(lengths[r]):
            i = offsets[j] + r
            word = tok[i]
            state[r, z[i]] -= np.float32(1.0)
            acc = 0.0
            for k in range(K):
                acc += np.float64(state[r, k] * table[word, k])
                cum[k] = np.float32(acc)
            new = _search(cum, keyed_uniform32(np.uint64(base[i]), stage) * cum[K - 1], K)
            z[i] = new
            state[r, new] += np.float32(1.0)


@jit
def _geometric_rows(counts, factor, z, base, stage, tok, table, prior, offsets, lengths,
                    start, stop):
    K = counts.shape[1]
    cum = np.empty(K, np.float32)
    for r in range(start, stop):
        for j in range(lengths[r]):
            i = offsets[j] + r
            word = tok[i]
            old = z[i]
            counts[r, old] -= 1
            factor[r, old] = prior[counts[r, old], old]
            acc = 0.0
            for k in range(K):
                acc += np.float64(factor[r, k] * table[word, k])
                cum[k] = np.float32(acc)
            new = _search(cum, keyed_uniform32(np.uint64(base[i]), stage) * cum[K - 1], K)
            z[i] = new
            counts[r, new] += 1
            factor[r, new] = prior[counts[r, new], new]


@jit
def _sequential_rows(state, z, u, tok, table, a_sum, offsets, lengths, logw, start, stop):
    K = state.shape[1]
    for r in range(start, stop):
        total_log = 0.0
        for j in range(lengths[r]):
            i = offsets[j] + r
            word = tok[i]
            acc = 0.0
            for k in range(K):
                acc += state[r, k] * table[word, k]
            total_log += np.log(acc) - np.log(j + a_sum)
            target = u[i] * acc
            acc = 0.0
            new = K - 1
            for k in range(K):
                acc += state[r, k] * table[word, k]
                if acc >= target:
                    new = k
                    break
            z[i] = new
            state[r, new] += 1.0
        logw[r] = total_log


def shifted_sweep(state, z, base, stage, tok, table, offsets, lengths, start, stop):
    """The collapsed sweep of rows ``start:stop`` for the conditional ``(c + alpha_b)
    x table[w]``: ``state`` (rows, K) float32 holds ``c + alpha_b``; ``z``, ``base``,
    ``tok`` are per token (int64; ``base`` the tokens' random states); ``stage`` the
    folded counter constant (uint64); ``table`` (V', K) float32. In place."""
    _shifted_rows(state, z, base, stage, tok, table, offsets, lengths, start, stop)


def geometric_sweep(counts, factor, z, base, stage, tok, table, prior, offsets, lengths,
                    start, stop):
    """The collapsed sweep for the geometric path between different alphas: ``counts``
    (rows, K) int64, ``factor`` (rows, K) float32 ``prior[counts, k]``, ``prior`` (M + 1,
    K) float32 the count factor at this temperature. In place."""
    _geometric_rows(counts, factor, z, base, stage, tok, table, prior, offsets, lengths,
                    start, stop)


def sequential_draw(state, z, u, tok, table, a_sum, offsets, lengths, logw, start, stop):
    """Left-to-right draws from ``(c_<j + alpha) x table[w_j]`` in float64 (``state``
    starts at alpha), and each row's log-weight in ``logw``. In place."""
    _sequential_rows(state, z, u, tok, table, a_sum, offsets, lengths, logw, start, stop)
