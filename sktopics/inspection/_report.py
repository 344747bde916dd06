"""One row per topic: top words, weights, prevalence, coherence, distinctness."""

import numpy as np

from .._topwords import top_words
from ._common import as_dense_rowsums, model_and_counts

__all__ = ["topic_report"]


def topic_report(estimator, X=None, *, top_n=10, X_ref=None, feature_names=None):
    """A table of the topics of a fitted model.

    Parameters
    ----------
    estimator : fitted sktopics estimator or Pipeline ending in one
    X : {array-like, sparse matrix} or raw documents for a Pipeline, default=None
        A corpus for ``prevalence`` (the share of its tokens in each topic, from
        ``transform``); ``None`` leaves the column out.
    top_n : int, default=10
        Top words per topic.
    X_ref : {array-like, sparse matrix} or raw documents, default=None
        The reference corpus of the NPMI coherence (:func:`sktopics.metrics.npmi_coherence`);
        ``None`` leaves the column out.
    feature_names : array-like of str or None, default=None
        Explicit vocabulary (else the pipeline's vectorizer's).

    Returns
    -------
    report : pandas.DataFrame or list of dict
        One row per topic: ``topic``, ``top_words``, ``weights``, ``distinct``
        (the share of its top words in no other topic's top words), and
        ``prevalence`` and ``npmi`` when ``X`` / ``X_ref`` are given. A DataFrame
        when pandas is installed, else a list of records with the same keys.
    """
    words, weights = top_words(estimator, top_n, feature_names, return_weights=True)
    n_topics = len(words)
    seen = {}
    for row in words:
        for w in row:
            seen[w] = seen.get(w, 0) + 1
    rows = [{"topic": k, "top_words": words[k], "weights": weights[k].tolist(),
             "distinct": float(np.mean([seen[w] == 1 for w in words[k]]))}
            for k in range(n_topics)]
    if X is not None:
        model, counts = model_and_counts(estimator, X)  # the vectorizer runs once
        lengths = as_dense_rowsums(counts, axis=1)
        tokens = np.asarray(model.transform(counts), dtype=np.float64).T @ lengths
        for row, share in zip(rows, tokens / max(tokens.sum(), 1e-300)):
            row["prevalence"] = float(share)
    if X_ref is not None:
        from ..metrics import npmi_coherence

        model, ref = model_and_counts(estimator, X_ref)
        per_topic = npmi_coherence(model, ref, top_n=top_n).per_topic
        for row, value in zip(rows, per_topic):
            row["npmi"] = float(value)
    try:
        import pandas as pd
    except ImportError:
        return rows
    return pd.DataFrame(rows).set_index("topic")
