"""What the inspection tools share: the model behind a Pipeline, its data, matplotlib."""

import numpy as np

from ..utils._validation import check_topic_word

__all__ = ["axes_for", "check_matplotlib", "finished", "model_and_counts", "topic_word_of"]


def check_matplotlib(caller):
    """``matplotlib.pyplot``, or an ImportError that says how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the test extra
        raise ImportError(
            f"{caller} needs matplotlib, which sktopics does not install: "
            'pip install "sktopics[plot]" (or matplotlib).'
        ) from exc
    return plt


def axes_for(caller, ax, figsize):
    """``ax``, or the Axes of a new figure of ``figsize`` (matplotlib checked)."""
    plt = check_matplotlib(caller)
    if ax is None:
        _, ax = plt.subplots(figsize=figsize)
    return ax


def finished(display, ax):
    """Lay the figure out and record ``figure_`` / ``ax_`` on ``display``; returns it."""
    ax.figure.tight_layout()
    display.figure_, display.ax_ = ax.figure, ax
    return display


def model_and_counts(estimator, X):
    """(the topic model, ``X`` as counts over its vocabulary) for a model or Pipeline."""
    if hasattr(estimator, "steps"):
        model = estimator[-1]
        counts = estimator[:-1].transform(X) if X is not None and len(estimator.steps) > 1 else X
        return model, counts
    return estimator, X


def topic_word_of(estimator):
    """The normalised topic-word matrix of a model, Pipeline or array, (K, V)."""
    topic_word = check_topic_word(estimator, name="estimator")
    return topic_word / topic_word.sum(axis=1, keepdims=True)


def as_dense_rowsums(X, axis):
    return np.asarray(X.sum(axis=axis)).ravel().astype(np.float64)
