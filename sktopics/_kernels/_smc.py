"""The left-to-right filter of LDA-like models, compiled: one document at a time.

The same filter as :func:`sktopics._evaluation._smc.smc_log_likelihood` (without
rejuvenation): each of a document's filters carries ``n_particles`` particles over
the topics of its prefix, the Polya urn ``(c_k + alpha_k) phi_kw`` gives a token's
predictive probability and its topic, and a filter whose effective sample size falls
below ``threshold`` times its particles is resampled systematically. It reads the
same counter-based uniforms (the draw of row ``r`` at position ``n`` is
``uniform(keys[r], 0, n)``, the resampling uniform of filter ``f`` is
``uniform(keys[f * n_particles], 1, n)``) and the same token order, so it draws
what the torch filter draws; only the order of a few float64 sums differs.

A document's particles (``filters x particles x K`` float64) stay in the cache for
its whole length instead of a batch's state being swept once per position.
"""

import numpy as np

from ._jit import jit
from ._random import keyed_uniform64, mix

__all__ = ["smc_documents"]

@jit
def _smc_documents(words, lengths, row_keys, stage_draw, stage_resample, phi_t, alpha, a_sum,
                   n_filters, n_particles, threshold, observed, log_p, n_resampled, start, stop):
    K = phi_t.shape[1]
    P = n_particles
    R = n_filters * P
    c = np.empty((R, K), np.float64)
    cum = np.empty((R, K), np.float64)
    moved = np.empty((R, K), np.float64)
    total = np.empty(R, np.float64)
    w = np.empty(R, np.float64)
    cw = np.empty(P, np.float64)
    ancestors = np.empty(P, np.int64)
    draw_base = np.empty(R, np.uint64)
    resample_base = np.empty(n_filters, np.uint64)
    for d in range(start, stop):
        n_tokens = lengths[d]
        for r in range(R):
            key = np.uint64(row_keys[d, r])
            draw_base[r] = mix(key + stage_draw)
            w[r] = 1.0 / P
            for k in range(K):
                c[r, k] = alpha[k]
        for f in range(n_filters):
            resample_base[f] = mix(np.uint64(row_keys[d, f * P]) + stage_resample)
            log_p[d, f] = 0.0
        events = 0
        for n in range(n_tokens):
            word = words[d, n]
            log_norm = np.log(n + a_sum)
            for f in range(n_filters):
                r0 = f * P
                z_sum = 0.0
                for p in range(P):
                    r = r0 + p
                    acc = 0.0
                    for k in range(K):
                        acc += c[r, k] * phi_t[word, k]
                        cum[r, k] = acc
                    total[r] = acc
                    w[r] *= acc
                    z_sum += w[r]
                if n >= observed[d]:
                    log_p[d, f] += np.log(z_sum) - log_norm
                for p in range(P):
                    r = r0 + p
                    w[r] /= z_sum
                    # searchsorted (left): the first topic whose cumulative weight
                    # reaches the target
                    target = keyed_uniform64(draw_base[r], n) * total[r]
                    k = K - 1
                    for j in range(K):
                        if cum[r, j] >= target:
                            k = j
                            break
                    c[r, k] += 1.0
                if threshold > 0.0 and n + 1 < n_tokens:
                    s = 0.0
                    s2 = 0.0
                    for p in range(P):
                        s += w[r0 + p]
                        s2 += w[r0 + p] * w[r0 + p]
                    if s * s / s2 < threshold * P:
                        events += 1
                        u0 = keyed_uniform64(resample_base[f], n)
                        running = 0.0
                        for p in range(P):
                            running += w[r0 + p] / s
                            cw[p] = running
                        cw[P - 1] = 1.0
                        j = 0
                        for m in range(P):
                            point = (u0 + m) / P
                            while j < P - 1 and cw[j] < point:
                                j += 1
                            ancestors[m] = j
                        for m in range(P):
                            for k in range(K):
                                moved[r0 + m, k] = c[r0 + ancestors[m], k]
                        for m in range(P):
                            for k in range(K):
                                c[r0 + m, k] = moved[r0 + m, k]
                            w[r0 + m] = 1.0 / P
        n_resampled[d] = events


def smc_documents(words, lengths, row_keys, stage_draw, stage_resample, phi_t, alpha,
                  n_filters, n_particles, threshold, observed, log_p, n_resampled, start, stop):
    """Fill rows ``start:stop`` of ``log_p`` (float64 (D, n_filters)) with each filter's
    estimate of log p(document) and of ``n_resampled`` (int64 (D,)) with the number of
    resampling events.

    ``words`` (D, N) int64: each document's tokens in their seeded order;
    ``lengths`` (D,); ``row_keys`` (D, n_filters * n_particles) int64: the rows'
    :func:`~sktopics._random.chain_keys`; ``stage_draw``, ``stage_resample``: the
    folded constants of the draw and resampling counters (``counter_key(0)``,
    ``counter_key(1)``, as uint64); ``phi_t`` (V, K) float64; ``alpha`` (K,) float64;
    ``observed`` (D,) int64: positions before it are not scored (0: all).
    """
    _smc_documents(words, lengths, row_keys, stage_draw, stage_resample, phi_t, alpha,
                   float(alpha.sum()), n_filters, n_particles, float(threshold), observed,
                   log_p, n_resampled, start, stop)
