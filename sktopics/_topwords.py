"""``top_words``: the most probable words of each topic."""

import numpy as np

from .utils._pipeline import vocabulary_of
from .utils._validation import check_topic_word

__all__ = ["top_words"]


def top_words(estimator, top_n=10, feature_names=None, *, return_weights=False):
    """Most probable words of each topic of a fitted model or pipeline.

    Parameters
    ----------
    estimator : fitted topic model or Pipeline
        Anything with ``components_``, or a :class:`~sklearn.pipeline.Pipeline`
        whose last step has them. When ``feature_names`` is None, the vocabulary
        comes from the pipeline's preceding steps (``get_feature_names_out``,
        e.g. a :class:`~sklearn.feature_extraction.text.CountVectorizer`), else
        from the model's ``feature_names_in_``, else word indices are returned.
    top_n : int, default=10
        Words per topic, in decreasing order of probability (ties: lower index).
        The same name as in :mod:`sktopics.metrics`.
    feature_names : array-like of str, default=None
        Explicit vocabulary, overriding the above.
    return_weights : bool, default=False
        Also return the words' probabilities in their topics.

    Returns
    -------
    words : list of list
        ``words[k]`` lists the top ``top_n`` words of topic ``k``.
    weights : ndarray of shape (n_topics, top_n)
        Only with ``return_weights=True``: ``weights[k, i]`` is the probability of
        ``words[k][i]`` in topic ``k`` (the rows of ``components_`` normalised).

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics import top_words
    >>> top_words(np.array([[0.1, 0.7, 0.2], [0.5, 0.2, 0.3]]), 2, ["a", "b", "c"])
    [['b', 'c'], ['a', 'c']]
    >>> words, weights = top_words(np.array([[1.0, 3.0]]), 1, ["a", "b"], return_weights=True)
    >>> words, weights
    ([['b']], array([[0.75]]))
    """
    topic_word = check_topic_word(estimator, name="estimator")
    if not isinstance(top_n, (int, np.integer)) or top_n < 1:
        raise ValueError(f"top_n must be a positive int; got {top_n!r}.")
    if feature_names is None:
        feature_names = vocabulary_of(estimator)
    if feature_names is not None:
        feature_names = np.asarray(feature_names, dtype=object)
        if feature_names.shape[0] != topic_word.shape[1]:
            raise ValueError(
                f"feature_names has {feature_names.shape[0]} entries but the model has "
                f"{topic_word.shape[1]} words."
            )
    order = np.argsort(-topic_word, axis=1, kind="stable")[:, :top_n]
    words = ([row.tolist() for row in order] if feature_names is None
             else [feature_names[row].tolist() for row in order])
    if not return_weights:
        return words
    probabilities = topic_word / topic_word.sum(axis=1, keepdims=True)
    return words, np.take_along_axis(probabilities, order, axis=1)

