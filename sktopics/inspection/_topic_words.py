"""Each topic's top words with their weights, as bar panels."""

import math

import numpy as np

from .._topwords import top_words
from ._common import DisplayMixin, check_matplotlib

__all__ = ["TopicWordsDisplay"]


class TopicWordsDisplay(DisplayMixin):
    """Top words of each topic with their probabilities, one bar panel per topic.

    Build it with :meth:`from_estimator`; :meth:`plot` draws it.

    Parameters
    ----------
    words : list of list of str or int
        ``words[k]``: the top words of topic ``k``, most probable first.
    weights : ndarray of shape (n_topics, top_n)
        Their probabilities in their topics.
    topic_labels : list of str or None, default=None
        A title per topic; ``None``: "topic k".

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : ndarray of matplotlib Axes
        One panel per topic (row-major), after :meth:`plot`.

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.inspection import TopicWordsDisplay
    >>> display = TopicWordsDisplay.from_estimator(
    ...     np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]]), top_n=2,
    ...     feature_names=["apple", "pear", "fig"])
    >>> display.words
    [['apple', 'pear'], ['fig', 'pear']]
    """

    def __init__(self, words, weights, topic_labels=None):
        self.words = words
        self.weights = np.asarray(weights, dtype=np.float64)
        self.topic_labels = topic_labels

    @classmethod
    def from_estimator(cls, estimator, *, top_n=10, topics=None, feature_names=None,
                       topic_labels=None, ax=None, n_cols=5):
        """Draw the top words of a fitted model's topics.

        Parameters
        ----------
        estimator : fitted topic model, Pipeline or array of shape (n_topics, n_features)
            The vocabulary comes from the pipeline's vectorizer, as in
            :func:`sktopics.top_words`.
        top_n : int, default=10
            Words per topic.
        topics : array-like of int or None, default=None
            Which topics to show (``None``: all).
        feature_names : array-like of str or None, default=None
            Explicit vocabulary.
        topic_labels : list of str or None, default=None
            Panel titles, one per shown topic.
        ax : array-like of matplotlib Axes or None, default=None
            Where to draw (one Axes per shown topic); ``None``: a new figure.
        n_cols : int, default=5
            Panels per row of a new figure.

        Returns
        -------
        display : TopicWordsDisplay
        """
        words, weights = top_words(estimator, top_n, feature_names, return_weights=True)
        selected = np.arange(len(words)) if topics is None else np.asarray(topics)
        if topic_labels is None:
            topic_labels = [f"topic {k}" for k in selected]
        display = cls([words[k] for k in selected], weights[selected], list(topic_labels))
        return display.plot(ax=ax, n_cols=n_cols)

    def plot(self, *, ax=None, n_cols=5, color="C0"):
        """Draw the panels.

        Parameters
        ----------
        ax : array-like of matplotlib Axes or None, default=None
            One Axes per topic; ``None``: a new figure with ``n_cols`` panels a row.
        n_cols : int, default=5
            Panels per row of a new figure.
        color : matplotlib color, default="C0"

        Returns
        -------
        display : TopicWordsDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        plt = check_matplotlib("TopicWordsDisplay")
        from matplotlib.ticker import MaxNLocator
        n_topics, top_n = self.weights.shape
        if ax is None:
            n_cols = max(1, min(n_cols, n_topics))
            n_rows = math.ceil(n_topics / n_cols)
            fig, axes = plt.subplots(n_rows, n_cols, squeeze=False,
                                     figsize=(2.6 * n_cols, 0.5 + 0.22 * top_n * n_rows + 0.5 * n_rows))
            axes = axes.ravel()
            for extra in axes[n_topics:]:
                extra.set_visible(False)
        else:
            axes = np.ravel(np.asarray(ax, dtype=object))
            if axes.size < n_topics:
                raise ValueError(f"ax holds {axes.size} Axes for {n_topics} topics.")
            fig = axes[0].figure
        labels = self.topic_labels or [f"topic {k}" for k in range(n_topics)]
        for k in range(n_topics):
            panel = axes[k]
            positions = np.arange(top_n)[::-1]
            panel.barh(positions, self.weights[k], color=color)
            panel.set_yticks(positions)
            panel.set_yticklabels([str(w) for w in self.words[k]], fontsize=8)
            panel.set_title(labels[k], fontsize=9)
            panel.tick_params(axis="x", labelsize=7)
            panel.xaxis.set_major_locator(MaxNLocator(3))
            panel.set_xlim(0, float(self.weights[k].max()) * 1.1 or 1.0)
        return self._drawn(axes[:n_topics], fig)
