"""Compiled topic proportions of new documents with the topics held fixed.

Collapsed Gibbs on the topics ``z`` of one document given ``phi``: each token in
turn is drawn from ``p(z_i = k | z_-i) ∝ (n_dk^-i + alpha_k) phi_kw``, whose
stationary law is the posterior ``p(z | w, phi, alpha)``. The estimate is the
Rao-Blackwellised average of ``(n_dk + alpha) / (n_d + sum(alpha))`` over the
iterations after the burn-in, the posterior mean of ``theta``. The first iteration
draws the tokens in turn given the ones drawn before them (no token to exclude yet).

Documents are independent: each is sampled whole (its counts stay in cache) on one
of ``n_jobs`` threads. Every uniform is keyed by the document's key, the model's seed
mixed with the document's counts (:func:`~sktopics._random.document_keys`, the
evaluators' keys), not by its row number, so a document's estimate is the same in any
batch, at any position, on any number of threads.
"""

import numpy as np

from ._inversion import LANES, inversion_buffers
from ._jit import jit
from ._random import counter_uniform

__all__ = ["infer_documents"]


@jit
def _infer_documents(indptr, indices, counts, word_topic, alpha, n_iter, n_burn, doc_keys, out,
                     start, stop):
    K = word_topic.shape[1]
    L = LANES
    p, lane = inversion_buffers(K)
    blocks = p.shape[0] // L
    weights = np.empty(K, np.float32)
    n_dk = np.empty(K, np.int64)
    acc = np.empty(K, np.float64)
    alpha_sum = 0.0
    for k in range(K):
        alpha_sum += alpha[k]
    longest = 0
    for d in range(start, stop):
        n = 0
        for c in range(indptr[d], indptr[d + 1]):
            n += counts[c]
        longest = max(longest, n)
    words = np.empty(longest, np.int32)
    z = np.empty(longest, np.int32)
    for d in range(start, stop):
        doc_key = doc_keys[d]
        n = 0
        for c in range(indptr[d], indptr[d + 1]):
            for _ in range(counts[c]):
                words[n] = indices[c]
                n += 1
        for k in range(K):
            n_dk[k] = 0
            acc[k] = 0.0
            weights[k] = alpha[k]
        n_kept = 0
        for it in range(n_iter):
            for i in range(n):
                w = words[i]
                if it > 0:
                    old = z[i]
                    n_dk[old] -= 1
                    weights[old] = np.float32(n_dk[old]) + alpha[old]
                for k in range(K):
                    p[k] = weights[k] * word_topic[w, k]
                # Inversion in lane order (see ._inversion).
                for j in range(L):
                    lane[j] = p[j]
                for b in range(1, blocks):
                    for j in range(L):
                        lane[j] += p[b * L + j]
                total = np.float32(0.0)
                for j in range(L):
                    total += lane[j]
                target = total * counter_uniform(doc_key, np.int64(it) * n + i)
                below = np.float32(0.0)
                chosen = L - 1
                for j in range(L):
                    running = below + lane[j]
                    if running > target:
                        chosen = j
                        break
                    below = running
                new = K - 1
                for b in range(blocks):
                    below += p[b * L + chosen]
                    if below > target:
                        new = min(b * L + chosen, K - 1)
                        break
                z[i] = new
                n_dk[new] += 1
                weights[new] = np.float32(n_dk[new]) + alpha[new]
            if it >= n_burn:
                for k in range(K):
                    acc[k] += n_dk[k]
                n_kept += 1
        for k in range(K):
            mean = acc[k] / n_kept if n_kept else float(n_dk[k])
            out[d, k] = (mean + alpha[k]) / (n + alpha_sum)


def infer_documents(X, word_topic, alpha, n_iter, n_burn, doc_keys, out, start, stop):
    """Rows ``start:stop`` of ``out`` (float64, (D, K)): the posterior mean of theta of
    the documents of the CSR matrix ``X`` (integer counts) given ``word_topic``
    (float32 (V, K), ``phi`` transposed) and ``alpha`` (float32 (K,)); ``doc_keys``
    (int64 (D,)) key each document's uniforms."""
    _infer_documents(X.indptr, X.indices, X.data, word_topic, alpha, n_iter, n_burn,
                     doc_keys.view(np.uint64), out, start, stop)
