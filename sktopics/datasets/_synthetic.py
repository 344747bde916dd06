"""Synthetic corpora drawn from the LDA generative process."""

import numbers

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_random_state

__all__ = ["make_lda_corpus"]

# Documents are sampled in blocks of at most this many dense cells (rows x words),
# or of about this many tokens, so memory stays bounded for large corpora.
_BLOCK_CELLS = 2**22
_BLOCK_TOKENS = 2**22
# Large, sparse corpora are sampled token by token: a multinomial over the whole
# vocabulary per document costs O(V) per document (minutes for 100 M tokens over
# 20,000 words), topic counts and then words per topic cost O(tokens).
_TOKEN_LEVEL_MIN_CELLS = 2**26
_TOKEN_LEVEL_SPARSITY = 16


def _prior(value, size, name):
    """A positive Dirichlet concentration vector of length ``size``."""
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        prior = np.full(size, float(value))
    else:
        prior = np.asarray(value, dtype=np.float64)
        if prior.shape != (size,):
            raise ValueError(
                f"{name} must be a positive float or an array of shape ({size},); "
                f"got shape {prior.shape}."
            )
    if not np.all(np.isfinite(prior)) or np.any(prior <= 0):
        raise ValueError(f"{name} must be positive and finite; got {value!r}.")
    return prior


def _check_count(value, name):
    if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be an integer >= 1; got {value!r}.")
    return int(value)


def _generator(random_state):
    """A :class:`numpy.random.Generator` derived from a scikit-learn random_state."""
    if isinstance(random_state, np.random.Generator):
        return random_state
    rs = check_random_state(random_state)
    return np.random.default_rng(rs.randint(np.iinfo(np.int32).max, size=4))


def _document_lengths(doc_length, n_samples, rng):
    if isinstance(doc_length, numbers.Integral) and not isinstance(doc_length, bool):
        if doc_length < 1:
            raise ValueError(f"doc_length must be >= 1; got {doc_length!r}.")
        # Zero-truncated Poisson: redraw empty documents.
        lengths = rng.poisson(doc_length, size=n_samples)
        while True:
            empty = lengths == 0
            if not empty.any():
                return lengths.astype(np.int64)
            lengths[empty] = rng.poisson(doc_length, size=int(empty.sum()))
    try:
        low, high = doc_length
        ok = all(isinstance(v, numbers.Integral) and not isinstance(v, bool) for v in (low, high))
    except (TypeError, ValueError):
        ok = False
    if not ok or not 1 <= low <= high:
        raise ValueError(
            "doc_length must be an int >= 1 (Poisson mean) or a pair of ints "
            f"(low, high) with 1 <= low <= high; got {doc_length!r}."
        )
    return rng.integers(int(low), int(high), size=n_samples, endpoint=True, dtype=np.int64)


def _sample_by_document(doc_topic, topic_word, lengths, rng):
    """CSR blocks of ``x_d ~ Multinomial(N_d, theta_d @ phi)``."""
    n_samples, n_features = doc_topic.shape[0], topic_word.shape[1]
    block = max(1, _BLOCK_CELLS // n_features)
    parts = []
    for start in range(0, n_samples, block):
        stop = min(start + block, n_samples)
        pvals = doc_topic[start:stop] @ topic_word
        pvals /= pvals.sum(axis=1, keepdims=True)  # guard against round-off
        parts.append(sp.csr_matrix(rng.multinomial(lengths[start:stop], pvals)))
    return parts


def _sample_by_token(doc_topic, topic_word, lengths, rng):
    """CSR blocks of the same counts, drawn through the topic assignments.

    ``n_d ~ Multinomial(N_d, theta_d)`` over topics, then each topic's tokens
    draw their words from ``phi_k``; summing ``z`` out gives the same
    distribution as :func:`_sample_by_document`.
    """
    n_samples, n_features = doc_topic.shape[0], topic_word.shape[1]
    block = max(1, int(_BLOCK_TOKENS // max(lengths.mean(), 1)))
    parts = []
    for start in range(0, n_samples, block):
        stop = min(start + block, n_samples)
        n_dk = rng.multinomial(lengths[start:stop], doc_topic[start:stop])
        docs, words = [], []
        for k in range(topic_word.shape[0]):
            doc = np.repeat(np.arange(stop - start, dtype=np.int32), n_dk[:, k])
            docs.append(doc)
            words.append(rng.choice(n_features, size=doc.size, p=topic_word[k]))
        doc, word = np.concatenate(docs), np.concatenate(words)
        parts.append(sp.csr_matrix((np.ones(doc.size, dtype=np.int64), (doc, word)),
                                   shape=(stop - start, n_features)))
    return parts


def make_lda_corpus(
    n_samples=100,
    n_features=50,
    n_components=5,
    *,
    doc_topic_prior=0.1,
    topic_word_prior=0.05,
    doc_length=50,
    random_state=None,
):
    """Sample a document-term count matrix from the LDA generative process.

    For topics ``k = 1..K``: ``phi_k ~ Dirichlet(topic_word_prior)``; for documents
    ``d = 1..N``: ``theta_d ~ Dirichlet(doc_topic_prior)``, a length ``N_d`` and
    word counts ``x_d ~ Multinomial(N_d, theta_d @ phi)``. Summing the topic
    assignments out gives exactly LDA's distribution of the counts, so the
    parameters that generated the corpus are known and can be compared with a
    fitted model's ``components_`` / ``transform`` output.

    Parameters
    ----------
    n_samples : int, default=100
        Number of documents ``N``.
    n_features : int, default=50
        Vocabulary size ``V``.
    n_components : int, default=5
        Number of topics ``K``.
    doc_topic_prior : float or array-like of shape (n_components,), default=0.1
        Dirichlet concentration of the document-topic proportions (symmetric if a
        float).
    topic_word_prior : float or array-like of shape (n_features,), default=0.05
        Dirichlet concentration of the topic-word distributions (symmetric if a
        float).
    doc_length : int or tuple of (int, int), default=50
        An int is the mean of a Poisson document length (documents of length 0
        are redrawn, so every length is >= 1); a pair ``(low, high)`` draws
        lengths uniformly from the integers ``low..high`` inclusive
        (``1 <= low <= high``).
    random_state : int, RandomState instance, Generator or None, default=None
        Seed or generator; an int gives reproducible output.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), dtype int64
        Word counts; row ``d`` sums to the length of document ``d`` (>= 1).
    topic_word : ndarray of shape (n_components, n_features)
        The topic-word distributions ``phi``; rows sum to 1.
    doc_topic : ndarray of shape (n_samples, n_components)
        The document-topic proportions ``theta``; rows sum to 1.

    Notes
    -----
    Corpora with more than ``2**26`` cells and fewer than one token per 16 cells
    (large vocabularies, short documents) are drawn through the topic
    assignments: topic counts per document, then each topic's words. It is the
    same distribution at ``O(tokens)`` instead of ``O(documents x words)`` cost,
    but a different random stream from the per-document draw used otherwise.

    Examples
    --------
    >>> from sktopics.datasets import make_lda_corpus
    >>> X, topic_word, doc_topic = make_lda_corpus(
    ...     n_samples=20, n_features=30, n_components=3, random_state=0)
    >>> X.shape, topic_word.shape, doc_topic.shape
    ((20, 30), (3, 30), (20, 3))
    >>> bool((X.sum(axis=1) >= 1).all())
    True
    >>> X, _, _ = make_lda_corpus(doc_length=(10, 20), random_state=0)
    >>> int(X.sum(axis=1).min()) >= 10 and int(X.sum(axis=1).max()) <= 20
    True
    """
    n_samples = _check_count(n_samples, "n_samples")
    n_features = _check_count(n_features, "n_features")
    n_components = _check_count(n_components, "n_components")
    alpha = _prior(doc_topic_prior, n_components, "doc_topic_prior")
    beta = _prior(topic_word_prior, n_features, "topic_word_prior")
    rng = _generator(random_state)

    topic_word = rng.dirichlet(beta, size=n_components)
    doc_topic = rng.dirichlet(alpha, size=n_samples)
    lengths = _document_lengths(doc_length, n_samples, rng)

    n_cells = n_samples * n_features
    if n_cells > _TOKEN_LEVEL_MIN_CELLS and n_cells > _TOKEN_LEVEL_SPARSITY * lengths.sum():
        parts = _sample_by_token(doc_topic, topic_word, lengths, rng)
    else:
        parts = _sample_by_document(doc_topic, topic_word, lengths, rng)
    X = sp.vstack(parts, format="csr") if len(parts) > 1 else parts[0]
    X = sp.csr_matrix(
        (X.data.astype(np.int64), X.indices.astype(np.int32), X.indptr.astype(np.int32)),
        shape=(n_samples, n_features),
    )
    X.sort_indices()
    return X, topic_word, doc_topic
