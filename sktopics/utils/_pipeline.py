"""The topic model behind a scikit-learn Pipeline, its input, and its vocabulary.

Every public function of sktopics that takes a fitted model also takes a
:class:`~sklearn.pipeline.Pipeline` ending in one (e.g. after a
``CountVectorizer``); these helpers are the one place that unwraps it.
"""

__all__ = ["final_estimator", "has_leading_steps", "split_pipeline", "vocabulary_of"]


def _is_pipeline(estimator):
    return hasattr(estimator, "steps")


def final_estimator(estimator):
    """The last step of a Pipeline, or ``estimator`` itself.

    Parameters
    ----------
    estimator : object
        A Pipeline, or anything else (returned as is).

    Returns
    -------
    model : object
    """
    return estimator[-1] if _is_pipeline(estimator) else estimator


def has_leading_steps(estimator):
    """Whether ``estimator`` is a Pipeline with steps before its model (a vectorizer).

    Parameters
    ----------
    estimator : object
        A Pipeline, or anything else (then False).

    Returns
    -------
    bool
        True when :func:`split_pipeline` transforms what it is given.
    """
    return _is_pipeline(estimator) and len(estimator.steps) > 1


def split_pipeline(estimator, X):
    """The model of a Pipeline and ``X`` transformed by the steps before it.

    Parameters
    ----------
    estimator : object
        A fitted Pipeline, or a model (returned with ``X`` unchanged).
    X : object or None
        What the Pipeline takes (raw documents after a vectorizer); ``None`` is
        returned as is.

    Returns
    -------
    model : object
        The Pipeline's last step, or ``estimator``.
    X : object or None
        ``X`` after the leading steps' ``transform``.
    """
    if not _is_pipeline(estimator):
        return estimator, X
    if X is not None and has_leading_steps(estimator):
        X = estimator[:-1].transform(X)
    return estimator[-1], X


def vocabulary_of(estimator):
    """The words of a fitted model's columns, or ``None`` when nothing names them.

    Parameters
    ----------
    estimator : object
        A fitted model or Pipeline.

    Returns
    -------
    feature_names : ndarray of str or None
        A Pipeline's leading steps' ``get_feature_names_out()`` (e.g. a
        ``CountVectorizer``'s vocabulary) when they have it, else the model's
        ``feature_names_in_`` (set when it was fitted on a DataFrame), else
        ``None``.
    """
    if has_leading_steps(estimator):
        try:
            return estimator[:-1].get_feature_names_out()
        except (AttributeError, ValueError, TypeError):
            pass
    return getattr(final_estimator(estimator), "feature_names_in_", None)
