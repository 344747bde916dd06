"""Compiled loops of the LDA Gibbs sampler: the parallel (frozen-count) sweep and the
count tables.

The draw of a token is the one of :func:`sktopics._gibbs._sweeps.dense_chunk`: its
exact collapsed conditional given the counts frozen at the start of the sweep, its
own assignment excluded, by inversion of one counter-based uniform (visiting the
topics in the order of :mod:`._inversion`).
"""

import numpy as np

from ._inversion import LANES, inversion_buffers
from ._jit import jit
from ._random import counter_uniform

__all__ = ["count_topics", "gather", "mh_draws", "parallel_draws"]


@jit
def _parallel_draws(doc, word, z, n_dk, n_wk, n_k, alpha, beta, key, shift, out, start,
                    stop):
    K = n_dk.shape[1]
    L = LANES
    p, lane = inversion_buffers(K)
    blocks = p.shape[0] // L
    beta_m1 = np.float32(beta - 1.0)
    vbeta = np.float32(n_wk.shape[0] * beta)
    vbeta_m1 = vbeta - np.float32(1.0)
    # The word's factor (n_wk + beta) / (n_k + V beta), made again when the word changes
    # (tokens are in word-major order: once per word and part).
    scale = np.empty(K, np.float32)
    for k in range(K):
        scale[k] = np.float32(1.0) / (np.float32(n_k[k]) + vbeta)
    phi = np.empty(K, np.float32)
    last_word = -1
    for t in range(start, stop):
        d = doc[t]
        w = word[t]
        k_old = z[t]
        if w != last_word:
            for k in range(K):
                phi[k] = (np.float32(n_wk[w, k]) + beta) * scale[k]
            last_word = w
        for k in range(K):
            p[k] = (np.float32(n_dk[d, k]) + alpha[k]) * phi[k]
        # The token's own topic: the counts without the token.
        own = np.float32(n_dk[d, k_old]) + (alpha[k_old] - np.float32(1.0))
        own = own * (np.float32(n_wk[w, k_old]) + beta_m1)
        p[k_old] = own / (np.float32(n_k[k_old]) + vbeta_m1)
        number = t + shift[w] if shift.shape[0] else t  # the token's number in the corpus
        # Inversion in lane order (see ._inversion).
        for j in range(L):
            lane[j] = p[j]
        for b in range(1, blocks):
            for j in range(L):
                lane[j] += p[b * L + j]
        total = np.float32(0.0)
        for j in range(L):
            total += lane[j]
        target = total * counter_uniform(key, number)
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
        out[t] = new


def parallel_draws(doc, word, z, n_dk, n_wk, n_k, alpha, beta, key, shift, out, start,
                   stop):
    """New topics of tokens ``start:stop`` into ``out``: the draws of
    :func:`~sktopics._gibbs._sweeps.dense_chunk` from the counts ``n_dk``, ``n_wk``,
    ``n_k`` (frozen during the sweep).

    numpy arrays; ``key`` from :func:`~sktopics._random.stream_key`; a token's counter
    is its position plus ``shift`` of its word (an empty ``shift``: its position), as
    in :meth:`~sktopics._gibbs._state.GibbsCorpus.token_index`.
    """
    _parallel_draws(doc, word, z, n_dk, n_wk, n_k, alpha, np.float32(beta),
                    np.uint64(key & 0xFFFFFFFFFFFFFFFF), shift, out, start, stop)


@jit
def _count_part(doc, word, z, n_dk, n_wk, n_k, first_doc, last_doc, first_word, last_word,
                first_token, last_token):
    """One part of the count: the rows of documents ``first_doc:last_doc`` of ``n_dk``
    (a pass over every token, the others skipped: cheaper than reaching a document's
    tokens through a permutation) and of words ``first_word:last_word`` of ``n_wk``
    (tokens ``first_token:last_token``), whose topic totals go to ``n_k``."""
    n_dk[first_doc:last_doc] = 0
    if first_doc == last_doc:
        pass
    elif first_doc == 0 and last_doc == n_dk.shape[0]:
        for t in range(z.shape[0]):
            n_dk[doc[t], z[t]] += 1
    else:
        for t in range(z.shape[0]):
            d = doc[t]
            if first_doc <= d < last_doc:
                n_dk[d, z[t]] += 1
    n_wk[first_word:last_word] = 0
    for t in range(first_token, last_token):
        n_wk[word[t], z[t]] += 1
    n_k[:] = 0
    for w in range(first_word, last_word):
        for k in range(n_wk.shape[1]):
            n_k[k] += n_wk[w, k]


def count_topics(doc, word, z, word_offsets, n_dk, n_wk, n_threads):
    """``n_dk`` and ``n_wk`` (int32, in place) counted from the topics ``z`` on
    ``n_threads`` threads; returns ``n_k`` (int64).

    ``doc`` and ``word`` are the tokens' documents and words (tokens in word-major
    order, word ``v``'s from ``word_offsets[v]``). Each part counts whole rows of one
    table (on one thread, both), so no two threads write to one row.
    """
    from ._pool import run_parts, split_by_weight, split_evenly

    n_docs = n_dk.shape[0]
    if n_threads == 1:  # one call for both tables, no thread handed work
        totals = np.zeros(n_wk.shape[1], np.int64)
        _count_part(doc, word, z, n_dk, n_wk, totals, 0, n_docs, 0, n_wk.shape[0], 0,
                    word_offsets[-1])
        return totals
    parts = [(d, (0, 0)) for d in split_evenly(n_docs, n_threads // 2)]
    parts += [((0, 0), w) for w in split_by_weight(word_offsets, n_threads - len(parts))]
    totals = np.zeros((len(parts), n_wk.shape[1]), np.int64)

    def part(i, _):
        (d0, d1), (w0, w1) = parts[i]
        _count_part(doc, word, z, n_dk, n_wk, totals[i], d0, d1, w0, w1, word_offsets[w0],
                    word_offsets[w1])

    run_parts(part, [(i, i + 1) for i in range(len(parts))], n_threads)
    return totals.sum(0)


@jit
def gather(values, index):
    """``values[index]`` (a numpy gather that starts no thread)."""
    out = np.empty(index.shape[0], values.dtype)
    for i in range(index.shape[0]):
        out[i] = values[index[i]]
    return out


@jit
def _mh_terms(k, k_old, d, w, n_dk, n_wk, n_k, q_wk, alpha, beta, vbeta):
    """The target (counts without the token) at topic ``k`` and the inclusive counts
    the proposals draw from, as in :func:`~sktopics._gibbs._sweeps.mh_chunk`."""
    cd = np.float32(n_dk[d, k])
    cw = np.float32(n_wk[w, k])
    ck = np.float32(n_k[k])
    own = np.float32(1.0) if k == k_old else np.float32(0.0)
    target = (cd - own + alpha[k]) * (cw - own + beta) / (ck - own + vbeta)
    return target, cd, np.float32(q_wk[w, k])


@jit
def _mh_draws(doc, word, z, z_by_word, word_start, word_length, z_by_doc, doc_start,
              doc_length, n_dk, n_wk, n_k, q_wk, alpha, alpha_cum, beta, keys, shift, out,
              start, stop):
    K = n_dk.shape[1]
    n_tokens = z_by_word.shape[0]
    beta32 = np.float32(beta)
    vbeta = np.float32(n_wk.shape[0] * beta)
    kbeta = np.float32(K * beta)
    alpha_sum = alpha_cum[K - 1]
    for t in range(start, stop):
        d = doc[t]
        w = word[t]
        k_old = z[t]
        number = t + shift[w] if shift.shape[0] else t
        nw = np.float32(word_length[w])
        nd = np.float32(doc_length[d])
        s = k_old
        pi_s, cd_s, qw_s = _mh_terms(s, k_old, d, w, n_dk, n_wk, n_k, q_wk, alpha, beta32,
                                     vbeta)
        for c in range(keys.shape[0]):
            # Word proposal: q(k) ∝ n_wk (this corpus's, inclusive) + beta.
            x = counter_uniform(keys[c, 0], number) * (nw + kbeta)
            if x < nw:
                pos = min(word_start[w] + np.int64(x), n_tokens - 1)
                k_new = z_by_word[pos]
            else:
                k_new = min(max(np.int64((x - nw) / beta32), 0), K - 1)
            pi_t, cd_t, qw_t = _mh_terms(k_new, k_old, d, w, n_dk, n_wk, n_k, q_wk, alpha,
                                         beta32, vbeta)
            ratio = pi_t * (qw_s + beta32) / (pi_s * (qw_t + beta32))
            if counter_uniform(keys[c, 1], number) < ratio:
                s, pi_s, cd_s, qw_s = k_new, pi_t, cd_t, qw_t
            # Document proposal: q(k) ∝ n_dk (inclusive) + alpha_k.
            x = counter_uniform(keys[c, 2], number) * (nd + alpha_sum)
            if x < nd:
                pos = min(doc_start[d] + np.int64(x), n_tokens - 1)
                k_new = z_by_doc[pos]
            else:
                # The prior branch: k ∝ alpha_k, the number of alpha_cum <= x - nd.
                k_new = min(np.searchsorted(alpha_cum, x - nd, side="right"), K - 1)
            pi_t, cd_t, qw_t = _mh_terms(k_new, k_old, d, w, n_dk, n_wk, n_k, q_wk, alpha,
                                         beta32, vbeta)
            ratio = pi_t * (cd_s + alpha[s]) / (pi_s * (cd_t + alpha[k_new]))
            if counter_uniform(keys[c, 3], number) < ratio:
                s, pi_s, cd_s, qw_s = k_new, pi_t, cd_t, qw_t
        out[t] = s


def mh_draws(doc, word, z, frozen, tables, word_proposal, alpha, alpha_cum, beta, keys,
             shift, out, start, stop):
    """:func:`~sktopics._gibbs._sweeps.mh_chunk` for tokens ``start:stop``, into ``out``.

    numpy arrays as there (``frozen`` and ``tables`` the same tuples; ``word_proposal``
    the counts the word proposal draws from); ``keys`` the stream keys, one row of
    four (word, word accept, document, document accept) per cycle; ``shift`` as in
    :func:`parallel_draws`. The same float32 arithmetic on the same uniforms: the
    same topics as the torch kernel.
    """
    keys = np.array(keys, dtype=np.int64).view(np.uint64).reshape(-1, 4)
    _mh_draws(doc, word, z, *frozen, *tables, word_proposal, alpha, alpha_cum,
              np.float32(beta), keys, shift, out, start, stop)
