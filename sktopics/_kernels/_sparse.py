"""Compiled SparseLDA sweep: collapsed Gibbs token by token over partitions of the
documents (Yao, Mimno & McCallum 2009; AD-LDA partitions, Newman et al. 2009).

A token's collapsed conditional splits into three buckets,

    p(z = k) ∝ alpha_k beta / (n_k + V beta)              s: every topic
             + n_dk beta / (n_k + V beta)                 r: the document's topics
             + (alpha_k + n_dk) n_wk / (n_k + V beta)     q: the word's topics

(counts without the token). ``s`` and ``r`` are kept up to date as the counts move,
``q`` is summed over the word's non-zero topics with the cached coefficients
``(alpha_k + n_dk) / (n_k + V beta)``, and one uniform picks the bucket and the topic
in it: a draw costs the word's and the document's non-zero topics, not ``K``. The
uniform has 53 random bits, as many as the float64 masses it is compared with (24
would put a topic whose share of the mass is under 2**-24 out of reach, and round
every other's by up to as much).

A word's topic counts are a row of codes ``count << 32 | topic`` sorted in descending
order (largest counts first, so that the walk that picks a topic in ``q`` ends early;
an entry moves up or down a place or two when its count changes), followed by free
slots; a row has ``min(K, the word's total count)`` slots, as many as it can ever
fill. The rows of the counts frozen at the start of the sweep are built once per sweep
(:func:`build_word_rows`, from the tokens' topics without a ``V x K`` pass, unless the
counts hold a background of other shards' tokens). A partition of
the documents copies the rows of its words (their non-zero entries) and the topic
totals, then draws its documents' tokens in turn, exactly, updating its copies and its
documents' rows of ``n_dk``, which no other partition touches. After the sweep the
counts are recounted from the new topics: the partitions' moves merged. With one
partition the sweep is exact collapsed Gibbs; with several it is AD-LDA. A token's
uniform is keyed by its number in the corpus, so the draws do not depend on which
thread takes a partition, nor when.

Costs: per token, the word's non-zero topics (``q``, and finding the token's own
entry in the same pass) plus two divisions; per document, its non-zero topics; per
partition, ``K + V`` and the non-zero entries of its words' rows.
"""

import numpy as np

from ._jit import jit
from ._random import counter_uniform64

__all__ = ["build_word_rows", "scatter", "sparse_draws", "word_row_starts"]

_ONE = np.int64(1 << 32)  # a count of one in a code
_TOPIC = np.int64((1 << 32) - 1)  # the topic bits of a code


def word_row_starts(word_totals, n_components):
    """Where each word's row of codes starts (int64, ``V + 1``): ``min(K, total)``
    slots a word of ``word_totals`` tokens."""
    return np.concatenate([[0], np.cumsum(np.minimum(word_totals, n_components))])


@jit(inline=True)
def _sort_descending(codes, a, b):
    """Sort ``codes[a:b]`` in place, largest first (insertion sort for short rows)."""
    if b - a <= 32:
        for i in range(a + 1, b):
            value = codes[i]
            j = i
            while j > a and codes[j - 1] < value:
                codes[j] = codes[j - 1]
                j -= 1
            codes[j] = value
    else:
        codes[a:b].sort()
        i, j = a, b - 1
        while i < j:
            codes[i], codes[j] = codes[j], codes[i]
            i += 1
            j -= 1


@jit
def build_word_rows(n_wk, word_start, z, n_components, row_start, codes, n_nonzero,
                    first_word, last_word):
    """The sorted rows of words ``first_word:last_word`` into ``codes`` and their
    numbers of non-zero topics into ``n_nonzero``: of the counts ``n_wk``, or, given an
    empty ``n_wk``, of the topics ``z`` of the tokens (word ``v``'s from
    ``word_start[v]``), which is cheaper than reading ``V x K`` counts."""
    K = n_components
    counts = np.zeros(K if n_wk.shape[0] == 0 else 0, np.int32)
    for w in range(first_word, last_word):
        a = row_start[w]
        j = a
        if n_wk.shape[0]:
            for k in range(K):
                c = n_wk[w, k]
                if c > 0:
                    codes[j] = (np.int64(c) << 32) | k
                    j += 1
        else:
            for t in range(word_start[w], word_start[w + 1]):
                k = z[t]
                if counts[k] == 0:
                    codes[j] = k
                    j += 1
                counts[k] += 1
            for i in range(a, j):
                k = codes[i]
                codes[i] = (np.int64(counts[k]) << 32) | k
                counts[k] = 0
        _sort_descending(codes, a, j)
        n_nonzero[w] = j - a


@jit
def scatter(values, index, out):
    """``out[index] = values`` (a numpy scatter that starts no thread)."""
    for i in range(index.shape[0]):
        out[index[i]] = values[i]


@jit
def _sweep_part(doc_perm, doc_start, word, z, n_dk, frozen, frozen_nonzero, row_start,
                n_k_frozen, alpha, beta, key, shift, first_doc, last_doc):
    K = n_dk.shape[1]
    V = row_start.shape[0] - 1
    vbeta = V * beta
    # The partition's copy of the rows of its words, one after the other.
    local_start = np.full(V, -1, np.int64)
    n_nonzero = np.empty(V, np.int32)
    size = 0
    for i in range(doc_start[first_doc], doc_start[last_doc]):
        w = word[i]
        if local_start[w] < 0:
            local_start[w] = size
            size += row_start[w + 1] - row_start[w]
            n_nonzero[w] = frozen_nonzero[w]
    codes = np.empty(size, np.int64)
    for w in range(V):
        if local_start[w] >= 0:  # its non-zero entries: free slots are written first
            a = local_start[w]
            codes[a:a + n_nonzero[w]] = frozen[row_start[w]:row_start[w] + n_nonzero[w]]
    n_k = n_k_frozen.copy()
    inv = np.empty(K, np.float64)  # 1 / (n_k + V beta)
    coef = np.empty(K, np.float64)  # (alpha_k + n_dk) / (n_k + V beta)
    alpha_beta = np.empty(K, np.float64)
    smooth = 0.0  # s
    for k in range(K):
        inv[k] = 1.0 / (n_k[k] + vbeta)
        alpha_beta[k] = alpha[k] * beta
        coef[k] = alpha[k] * inv[k]
        smooth += alpha_beta[k] * inv[k]
    doc_topics = np.empty(K, np.int32)  # the document's non-zero topics ...
    doc_slot = np.full(K, -1, np.int32)  # ... and where each is in that list
    scores = np.empty(K, np.float64)  # the q terms of the word's row
    for d in range(first_doc, last_doc):
        n_topics = 0
        for i in range(doc_start[d], doc_start[d + 1]):
            k = z[i]
            if doc_slot[k] < 0:
                doc_slot[k] = n_topics
                doc_topics[n_topics] = k
                n_topics += 1
        doc_mass = 0.0  # r
        for j in range(n_topics):
            k = doc_topics[j]
            doc_mass += beta * n_dk[d, k] * inv[k]
            coef[k] = (alpha[k] + n_dk[d, k]) * inv[k]
        for i in range(doc_start[d], doc_start[d + 1]):
            w = word[i]
            old = z[i]
            a = local_start[w]
            end = a + n_nonzero[w]

            # The token leaves its topic: s, r and the topic's coefficient ...
            cd = n_dk[d, old]
            inv_old = inv[old]
            inv_new = 1.0 / (n_k[old] - 1 + vbeta)
            smooth += alpha_beta[old] * (inv_new - inv_old)
            doc_mass += beta * ((cd - 1) * inv_new - cd * inv_old)
            coef[old] = (alpha[old] + (cd - 1)) * inv_new
            inv[old] = inv_new
            n_k[old] -= 1
            n_dk[d, old] = cd - 1
            if cd == 1:
                slot = doc_slot[old]
                n_topics -= 1
                last = doc_topics[n_topics]
                doc_topics[slot] = last
                doc_slot[last] = slot
                doc_slot[old] = -1
            # q over the word's non-zero topics, the token's own count excluded, in the
            # pass that finds its entry ...
            word_mass = 0.0
            at = a
            for j in range(a, end):
                k = codes[j] & _TOPIC
                c = codes[j] >> 32
                if k == old:
                    c -= 1
                    at = j
                score = coef[k] * np.float64(c)
                scores[j - a] = score
                word_mass += score
            # ... which then moves down past the larger ones (with its score).
            codes[at] -= _ONE
            j = at
            while j + 1 < end and codes[j + 1] > codes[j]:
                codes[j], codes[j + 1] = codes[j + 1], codes[j]
                scores[j - a], scores[j + 1 - a] = scores[j + 1 - a], scores[j - a]
                j += 1
            if codes[j] < _ONE:
                end -= 1
            number = doc_perm[i] + shift[w] if shift.shape[0] else doc_perm[i]
            u = counter_uniform64(key, number) * (smooth + doc_mass + word_mass)
            if u < word_mass:
                j = a
                while j < end - 1:
                    if u < scores[j - a]:
                        break
                    u -= scores[j - a]
                    j += 1
                new = np.int32(codes[j] & _TOPIC)
                codes[j] += _ONE
            else:
                u -= word_mass
                if u < doc_mass:
                    new = doc_topics[n_topics - 1]
                    for jj in range(n_topics):
                        k = doc_topics[jj]
                        v = beta * n_dk[d, k] * inv[k]
                        if u < v:
                            new = k
                            break
                        u -= v
                else:
                    u -= doc_mass
                    new = np.int32(K - 1)
                    for k in range(K):
                        v = alpha_beta[k] * inv[k]
                        if u < v:
                            new = np.int32(k)
                            break
                        u -= v
                # The topic's entry in the word's row, or a new one after the others.
                j = a
                while j < end and (codes[j] & _TOPIC) != new:
                    j += 1
                if j == end:
                    codes[j] = _ONE | new
                    end += 1
                else:
                    codes[j] += _ONE
            while j > a and codes[j - 1] < codes[j]:  # the entry moves up
                codes[j - 1], codes[j] = codes[j], codes[j - 1]
                j -= 1
            n_nonzero[w] = end - a

            # The token joins its new topic.
            cd = n_dk[d, new]
            inv_old = inv[new]
            inv_new = 1.0 / (n_k[new] + 1 + vbeta)
            smooth += alpha_beta[new] * (inv_new - inv_old)
            doc_mass += beta * ((cd + 1) * inv_new - cd * inv_old)
            coef[new] = (alpha[new] + (cd + 1)) * inv_new
            inv[new] = inv_new
            n_k[new] += 1
            n_dk[d, new] = cd + 1
            if cd == 0:
                doc_slot[new] = n_topics
                doc_topics[n_topics] = new
                n_topics += 1
            z[i] = new
        for j in range(n_topics):
            k = doc_topics[j]
            coef[k] = alpha[k] * inv[k]
            doc_slot[k] = -1


def sparse_draws(doc_perm, doc_start, word, z, n_dk, rows, n_k, alpha, beta, key, shift,
                 first_doc, last_doc):
    """SparseLDA draws of the tokens of documents ``first_doc:last_doc`` (one
    partition), in place in ``z`` and in those documents' rows of ``n_dk``.

    numpy arrays: ``doc_perm`` the tokens' positions (word-major) in document-major
    order, ``doc_start`` each document's first there, and ``word`` and ``z`` the
    tokens' words and topics in that order; ``rows`` the triple ``(codes, n_nonzero,
    row_start)`` of :func:`build_word_rows` for the frozen ``n_wk``; ``n_k`` the frozen
    totals (int64); ``alpha`` float64; ``key`` from :func:`~sktopics._random.stream_key`.
    A token's counter is its position plus ``shift`` of its word (an empty ``shift``:
    its position), as in :func:`~._gibbs.parallel_draws`.
    """
    codes, n_nonzero, row_start = rows
    _sweep_part(doc_perm, doc_start, word, z, n_dk, codes, n_nonzero, row_start, n_k,
                alpha, np.float64(beta), np.uint64(key & 0xFFFFFFFFFFFFFFFF), shift,
                first_doc, last_doc)
