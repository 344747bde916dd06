"""One row per topic: top words, weights, prevalence, coherence, distinctness."""

import numpy as np

from .._topwords import top_words
from ..utils._pipeline import split_pipeline
from ._common import as_dense_rowsums

__all__ = ["topic_report"]


def _check_pandas():
    """``pandas``, or an ImportError that says how to get it."""
    try:
        import pandas as pd
    except ImportError as exc:
        raise ImportError(
            "topic_report returns a pandas DataFrame and needs pandas, which sktopics "
            'does not install: pip install "sktopics[report]" (or pandas).'
        ) from exc
    return pd


def topic_report(estimator, X=None, *, top_n=10, X_ref=None, feature_names=None):
    """A table of the topics of a fitted model, one row per topic.

    Needs pandas (``pip install "sktopics[report]"``); without it, an
    :class:`ImportError` says so. The result is always a
    :class:`pandas.DataFrame`, whatever else is installed.

    Parameters
    ----------
    estimator : fitted sktopics estimator or Pipeline ending in one
        A Pipeline's leading steps turn ``X`` and ``X_ref`` into counts and give the
        vocabulary.
    X : {array-like, sparse matrix} of shape (n_samples, n_features), or raw \
documents for a Pipeline, default=None
        A corpus for the ``prevalence`` column (the share of its tokens in each
        topic, from ``transform``); ``None`` leaves the column out.
    top_n : int, default=10
        Top words per topic.
    X_ref : {array-like, sparse matrix} of shape (n_samples, n_features), or raw \
documents for a Pipeline, default=None
        The reference corpus of the ``npmi`` column
        (:func:`sktopics.metrics.npmi_coherence` of the ``top_n`` words);
        ``None`` leaves the column out.
    feature_names : array-like of str or None, default=None
        Explicit vocabulary (else the pipeline's vectorizer's, else the model's
        ``feature_names_in_``, else word indices as strings).

    Returns
    -------
    report : pandas.DataFrame of shape (n_topics, n_columns)
        Indexed by topic number (the index is named ``"topic"``), with the columns

        * ``top_words``: list of the ``top_n`` words, most probable first;
        * ``weights``: list of their probabilities in the topic;
        * ``distinct``: the share of the topic's top words that are in no other
          topic's top words (1.0: all its own);
        * ``prevalence`` (when ``X`` is given): the share of the corpus's tokens
          in the topic; the column sums to 1;
        * ``npmi`` (when ``X_ref`` is given): the topic's NPMI coherence.

    Examples
    --------
    >>> from sklearn.feature_extraction.text import CountVectorizer
    >>> from sklearn.pipeline import make_pipeline
    >>> from sktopics import LDAGibbs
    >>> from sktopics.inspection import topic_report
    >>> texts = ["apple banana apple cherry", "banana cherry apple",
    ...          "dog cat dog mouse", "cat mouse dog"] * 5
    >>> pipe = make_pipeline(CountVectorizer(), LDAGibbs(2, max_iter=20, device="cpu",
    ...                                                  random_state=0)).fit(texts)
    >>> report = topic_report(pipe, texts, top_n=3)
    >>> report.shape
    (2, 4)
    >>> list(report.columns)
    ['top_words', 'weights', 'distinct', 'prevalence']
    >>> round(float(report["prevalence"].sum()), 6)
    1.0
    """
    pd = _check_pandas()
    words, weights = top_words(estimator, top_n, feature_names, return_weights=True)
    n_topics = len(words)
    seen = {}
    for row in words:
        for w in row:
            seen[w] = seen.get(w, 0) + 1
    columns = {
        "top_words": [list(words[k]) for k in range(n_topics)],
        "weights": [weights[k].tolist() for k in range(n_topics)],
        "distinct": [float(np.mean([seen[w] == 1 for w in words[k]])) for k in range(n_topics)],
    }
    if X is not None:
        model, counts = split_pipeline(estimator, X)  # the vectorizer runs once
        lengths = as_dense_rowsums(counts, axis=1)
        tokens = np.asarray(model.transform(counts), dtype=np.float64).T @ lengths
        columns["prevalence"] = (tokens / max(tokens.sum(), 1e-300)).tolist()
    if X_ref is not None:
        from ..metrics import npmi_coherence

        model, ref = split_pipeline(estimator, X_ref)
        columns["npmi"] = [float(v) for v in npmi_coherence(model, ref, top_n=top_n).per_topic]
    return pd.DataFrame(columns, index=pd.RangeIndex(n_topics, name="topic"))
