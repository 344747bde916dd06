"""Document-completion held-out log-likelihood: the Gibbs benchmark's common protocol.

1. Split each document's tokens at random into two halves (fixed seed).
2. Floor the topic-word matrix at 1e-12 and renormalise its rows.
3. Fold in ``theta`` on the first half with ``phi`` fixed: start from uniform
   ``theta`` and run EM, ``theta_d ∝ E[n_dk] + alpha``.
4. Return the log-likelihood ``sum log sum_k theta_dk phi_kw`` of the second-half
   tokens and their number.

The same function scores every system in ``bench_gibbs.py`` (sktopics, tomotopy,
Mallet, lda), so the numbers are comparable. It is a benchmark helper, not part of the
package: users have :func:`sktopics.model_selection.document_completion_log_likelihood`.
"""

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["split_halves", "document_completion", "document_completion_perplexity"]


def split_halves(X, seed=0):
    """Split every document's tokens at random into two count matrices.

    The first half gets ``floor(n_d / 2)`` tokens and the second the rest.
    """
    X = sp.csr_matrix(X)
    n_docs, n_features = X.shape
    counts = np.rint(X.data).astype(np.int64)
    doc = np.repeat(np.repeat(np.arange(n_docs), np.diff(X.indptr)), counts)
    word = np.repeat(X.indices, counts)
    rng = np.random.default_rng(seed)
    order = np.lexsort((rng.random(doc.shape[0]), doc))
    doc, word = doc[order], word[order]
    length = np.bincount(doc, minlength=n_docs)
    start = np.concatenate([[0], np.cumsum(length)])[:-1]
    rank = np.arange(doc.shape[0]) - start[doc]
    first = rank < (length[doc] // 2)

    def build(mask):
        ones = np.ones(int(mask.sum()), dtype=np.float64)
        return sp.csr_matrix((ones, (doc[mask], word[mask])), shape=(n_docs, n_features))

    return build(first), build(~first)


def _fold_in(X, phi, alpha, n_iter, chunk_elements=1 << 22):
    """EM estimate of theta for the rows of ``X`` with ``phi`` fixed (float64).

    Temporaries are bounded: non-zeros are visited in chunks of at most
    ``chunk_elements / K``.
    """
    n_docs = X.shape[0]
    K = phi.shape[0]
    alpha = torch.as_tensor(alpha, dtype=torch.float64).expand(K)
    theta = torch.full((n_docs, K), 1.0 / K, dtype=torch.float64)
    rows_t = torch.from_numpy(np.repeat(np.arange(n_docs), np.diff(X.indptr)))
    cols_t = torch.from_numpy(X.indices.astype(np.int64))
    vals_t = torch.from_numpy(np.asarray(X.data, dtype=np.float64))
    phi_t = phi.T.contiguous()
    step = max(1, chunk_elements // K)
    for _ in range(n_iter):
        expected = torch.zeros((n_docs, K), dtype=torch.float64)
        for start in range(0, rows_t.shape[0], step):
            r = rows_t[start:start + step]
            resp = theta[r] * phi_t[cols_t[start:start + step]]
            resp *= (vals_t[start:start + step] / resp.sum(1))[:, None]
            expected.index_add_(0, r, resp)
        theta = expected + alpha
        theta /= theta.sum(1, keepdim=True)
    return theta


def document_completion(X, topic_word, alpha=0.1, *, n_iter=100, seed=0, split=None):
    """Held-out log-likelihood of second halves given first halves.

    Parameters
    ----------
    X : sparse matrix (D, V) of counts
    topic_word : ndarray (K, V)
    alpha : float or ndarray (K,), default=0.1
        Dirichlet prior used by the EM fold-in.
    n_iter : int, default=100
    seed : int, default=0
        Seed of the random split.
    split : tuple of two sparse matrices, optional
        Precomputed ``(first, second)`` halves.

    Returns
    -------
    log_likelihood : float
        Sum over second-half tokens of ``log sum_k theta_dk phi_kw``.
    n_tokens : int
        Number of second-half tokens.
    """
    first, second = split if split is not None else split_halves(X, seed)
    phi = torch.as_tensor(np.asarray(topic_word, dtype=np.float64)).clamp_min(1e-12)
    phi = phi / phi.sum(1, keepdim=True)
    theta = _fold_in(sp.csr_matrix(first), phi, alpha, n_iter)
    second = sp.csr_matrix(second)
    rows = torch.from_numpy(np.repeat(np.arange(second.shape[0]), np.diff(second.indptr)))
    cols = torch.from_numpy(second.indices.astype(np.int64))
    vals = torch.from_numpy(np.asarray(second.data, dtype=np.float64))
    phi_t = phi.T.contiguous()
    step = max(1, (1 << 22) // phi.shape[0])
    total = 0.0
    for start in range(0, rows.shape[0], step):
        sl = slice(start, start + step)
        prob = (theta[rows[sl]] * phi_t[cols[sl]]).sum(1)
        total += float((vals[sl] * torch.log(prob)).sum())
    return total, int(round(float(vals.sum())))


def document_completion_perplexity(X, topic_word, alpha=0.1, *, n_iter=100, seed=0,
                                   split=None):
    """``exp(-log_likelihood / n_tokens)`` of :func:`document_completion`."""
    ll, n = document_completion(X, topic_word, alpha, n_iter=n_iter, seed=seed, split=split)
    return float(np.exp(-ll / max(n, 1)))
