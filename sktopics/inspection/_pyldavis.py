"""The keyword arguments of ``pyLDAvis.prepare`` for any sktopics model or Pipeline."""

import numpy as np
import scipy.sparse as sp

from .._evaluation._views import topic_distributions
from ..utils._pipeline import split_pipeline, vocabulary_of
from ._common import as_dense_rowsums

__all__ = ["to_pyldavis"]


def to_pyldavis(estimator, X, *, feature_names=None):
    """Everything ``pyLDAvis.prepare`` needs, for a fitted model and a corpus.

    ``pyLDAvis.prepare(**to_pyldavis(pipe, texts))`` shows the model in pyLDAvis;
    sktopics does not depend on pyLDAvis.

    Parameters
    ----------
    estimator : fitted sktopics estimator or Pipeline ending in one
        A Pipeline's leading steps turn ``X`` into counts and give the vocabulary.
    X : {array-like, sparse matrix} of shape (n_samples, n_features), or raw
        documents for a Pipeline
        The corpus the picture describes (often the training corpus).
    feature_names : array-like of str or None, default=None
        Explicit vocabulary (else the vectorizer's, else the model's
        ``feature_names_in_``, else word indices as strings).

    Returns
    -------
    kwargs : dict
        ``topic_term_dists`` (n_topics, n_features): the rows of ``components_``
        normalised, except for :class:`~sktopics.ProdLDA`, whose ``components_``
        only rank the words (near-uniform rows, all topics at one point of
        pyLDAvis' map): there, each topic's row is the word distribution the
        fitted model gives a document made of that topic alone. ``doc_topic_dists``
        (n_samples, n_topics), ``doc_lengths`` (n_samples,), ``vocab``
        (n_features,) and ``term_frequency`` (n_features,), as pyLDAvis documents
        them: rows of the two distributions sum to 1, lengths and frequencies are
        token counts of ``X``.

    Notes
    -----
    ``pyLDAvis.prepare`` recomputes the overall term frequency from
    ``topic_term_dists`` weighted by the documents' topic proportions, not from
    ``term_frequency``. For an LDA-type model that mixture is close to the
    corpus's word frequencies. A ProdLDA's documents are products of experts,
    not mixtures of its exported topics, so for a ProdLDA the panel's blue
    "overall term frequency" bars, and the relevance and lift computed from
    them, are not the corpus's.
    """
    model, counts = split_pipeline(estimator, X)  # the vectorizer runs once
    doc_topic = np.asarray(model.transform(counts), dtype=np.float64)
    counts = sp.csr_matrix(counts, dtype=np.float64)
    if feature_names is None:
        feature_names = vocabulary_of(estimator)
    # A product of experts (ProdLDA) has no topic-word distributions of its own; its
    # export is each topic's words in a document of that topic alone.
    own = getattr(model, "_topic_term_distributions", None)
    topic_word = (topic_distributions(own()) if callable(own)
                  else topic_distributions(model, name="estimator"))
    if feature_names is None:
        feature_names = [str(w) for w in range(topic_word.shape[1])]
    vocab = [str(w) for w in feature_names]
    if len(vocab) != topic_word.shape[1]:
        raise ValueError(f"feature_names has {len(vocab)} entries but the model has "
                         f"{topic_word.shape[1]} words.")
    return {
        "topic_term_dists": topic_word,
        "doc_topic_dists": doc_topic / doc_topic.sum(axis=1, keepdims=True),
        "doc_lengths": as_dense_rowsums(counts, axis=1),
        "vocab": vocab,
        "term_frequency": as_dense_rowsums(counts, axis=0),
    }
