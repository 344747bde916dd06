"""Synthetic corpora drawn from the Pachinko Allocation Machine generative process."""

import numpy as np
import scipy.sparse as sp

from ..pam import PAMStructure
from ._synthetic import _check_count, _document_lengths, _generator, _prior

__all__ = ["make_pam_corpus"]

_BLOCK_CELLS = 2**22


def make_pam_corpus(
    n_samples=100,
    n_features=50,
    structure=(2, 5),
    *,
    doc_topic_prior=1.0,
    subtopic_prior=0.3,
    topic_word_prior=0.05,
    doc_length=50,
    return_node_proportions=False,
    random_state=None,
):
    """Sample a document-term count matrix from a PAM with known parameters.

    Leaf topics ``phi_k ~ Dirichlet(topic_word_prior)``; for each document, every
    internal node draws its distribution over its children from a Dirichlet
    (``doc_topic_prior`` for the root, ``subtopic_prior`` for the others, restricted
    to the node's children in a sparse DAG), then ``x_d ~ Multinomial(N_d, pi_d @
    phi)`` where ``pi_d`` is the probability of reaching each leaf topic. Summing
    the per-token paths out gives exactly PAM's distribution of the counts.

    Parameters
    ----------
    n_samples : int, default=100
        Number of documents.
    n_features : int, default=50
        Vocabulary size.
    structure : tuple of int, list of masks, dict or PAMStructure, default=(2, 5)
        The DAG, as for :class:`~sktopics.PAMVI`: ``(k1, k2)`` is 4-PAM.
    doc_topic_prior : float or array-like of shape (levels[0],), default=1.0
        The root's Dirichlet concentration.
    subtopic_prior : float or array-like, default=0.3
        Every other internal node's Dirichlet concentration over its children:
        a float, an array of shape ``(levels[l],)`` or ``(levels[l-1], levels[l])``,
        or a list with one entry per non-root level.
    topic_word_prior : float or array-like of shape (n_features,), default=0.05
        Dirichlet concentration of the leaf topics' word distributions.
    doc_length : int or tuple of (int, int), default=50
        Poisson mean of the document lengths (zero lengths redrawn) or a
        ``(low, high)`` range of uniform integer lengths.
    return_node_proportions : bool, default=False
        Also return every node's per-document distribution.
    random_state : int, RandomState instance, Generator or None, default=None
        Seed or generator.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), dtype int64
        Word counts; every document has at least one token.
    topic_word : ndarray of shape (n_leaf_topics, n_features)
        The leaf topics ``phi``; rows sum to 1.
    doc_topic : ndarray of shape (n_samples, n_leaf_topics)
        Per-document probability of each leaf topic (the paths summed out).
    node_proportions : list of ndarray
        Only with ``return_node_proportions``: ``node_proportions[l]`` of shape
        ``(n_samples, n_parents, n_children)``, zero on masked edges.

    Examples
    --------
    >>> from sktopics.datasets import make_pam_corpus
    >>> X, phi, pi = make_pam_corpus(n_samples=20, n_features=30, structure=(2, 4),
    ...                              random_state=0)
    >>> X.shape, phi.shape, pi.shape
    ((20, 30), (4, 30), (20, 4))
    """
    from .._generative_pam import pam_level_alphas

    n_samples = _check_count(n_samples, "n_samples")
    n_features = _check_count(n_features, "n_features")
    structure = PAMStructure.from_spec(structure)
    alphas = pam_level_alphas(structure, doc_topic_prior, subtopic_prior)
    beta = _prior(topic_word_prior, n_features, "topic_word_prior")
    rng = _generator(random_state)

    topic_word = rng.dirichlet(beta, size=structure.n_leaf_topics)
    node_proportions = []
    for mask, alpha in zip(structure.masks, alphas):
        probs = np.zeros((n_samples,) + mask.shape)
        for node in range(mask.shape[0]):
            children = np.flatnonzero(mask[node])
            if children.size == 1:
                probs[:, node, children[0]] = 1.0
            else:
                probs[:, node, children] = rng.dirichlet(alpha[node, children], size=n_samples)
        node_proportions.append(probs)
    doc_topic = structure.leaf_marginals(node_proportions)[-1]
    doc_topic = doc_topic / doc_topic.sum(axis=1, keepdims=True)
    lengths = _document_lengths(doc_length, n_samples, rng)

    block = max(1, _BLOCK_CELLS // n_features)
    parts = []
    for start in range(0, n_samples, block):
        stop = min(start + block, n_samples)
        pvals = doc_topic[start:stop] @ topic_word
        pvals /= pvals.sum(axis=1, keepdims=True)
        parts.append(sp.csr_matrix(rng.multinomial(lengths[start:stop], pvals)))
    X = sp.vstack(parts, format="csr") if len(parts) > 1 else parts[0]
    X = sp.csr_matrix(
        (X.data.astype(np.int64), X.indices.astype(np.int32), X.indptr.astype(np.int32)),
        shape=(n_samples, n_features),
    )
    X.sort_indices()
    if return_node_proportions:
        return X, topic_word, doc_topic, node_proportions
    return X, topic_word, doc_topic
