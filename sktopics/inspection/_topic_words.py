"""Each topic's top words with their weights, as bar panels."""

import math

import numpy as np

from .._topwords import top_words
from ..utils._pipeline import final_estimator
from ..utils._validation import check_topic_word
from ._common import DisplayMixin, check_matplotlib

__all__ = ["TopicWordsDisplay"]

#: The axis label of weights that are the rows of ``components_`` normalised.
PROBABILITY = "probability in topic"


def _ranking_weights(estimator, top_n, feature_names=None):
    """Each topic's top words and the numbers that rank them, with their name.

    For a model whose ``components_`` only rank the words (a product of experts,
    whose rows are near-uniform: :class:`~sktopics.ProdLDA`), the weights are the
    model's own scores (``_topic_word_scores()``, which rank the words the same way);
    otherwise the words' probabilities in their topics.

    Returns
    -------
    words : list of list
    weights : ndarray of shape (n_topics, top_n)
    label : str
    """
    words, weights = top_words(estimator, top_n, feature_names, return_weights=True)
    scores = getattr(final_estimator(estimator), "_topic_word_scores", None)
    if not callable(scores):
        return words, weights, PROBABILITY
    values, label = scores()
    order = np.argsort(-check_topic_word(estimator, name="estimator"), axis=1,
                       kind="stable")[:, :top_n]  # top_words' order
    return words, np.take_along_axis(np.asarray(values, dtype=np.float64), order, 1), label


class TopicWordsDisplay(DisplayMixin):
    """Top words of each topic with the numbers that rank them, one bar panel per topic.

    Build it with :meth:`from_estimator`; :meth:`plot` draws it. For most models
    the bars are the words' probabilities in their topics. A
    :class:`~sktopics.ProdLDA` topic is not a distribution over words but a
    vector of logits that the topics of a document add up (a product of
    experts), and its ``components_ = softmax(beta_)`` are near-uniform: its bars
    are the logits ``beta_`` over the topic's mean, which rank the words as
    ``components_`` does. The x axis says which.

    Parameters
    ----------
    words : list of list of str or int
        ``words[k]``: the top words of topic ``k``, most probable first.
    weights : ndarray of shape (n_topics, top_n)
        The numbers that rank them in their topics.
    topic_labels : list of str or None, default=None
        A title per topic; ``None``: "topic k".
    weight_label : str, default="probability in topic"
        What ``weights`` are (the x axis label).

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

    def __init__(self, words, weights, topic_labels=None, weight_label=PROBABILITY):
        self.words = words
        self.weights = np.asarray(weights, dtype=np.float64)
        self.topic_labels = topic_labels
        self.weight_label = weight_label

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
        words, weights, label = _ranking_weights(estimator, top_n, feature_names)
        selected = np.arange(len(words)) if topics is None else np.asarray(topics)
        if topic_labels is None:
            topic_labels = [f"topic {k}" for k in selected]
        display = cls([words[k] for k in selected], weights[selected], list(topic_labels),
                      weight_label=label)
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
            panel.set_xlabel(self.weight_label, fontsize=7)
            low = min(0.0, float(self.weights[k].min()) * 1.1)
            panel.set_xlim(low, float(self.weights[k].max()) * 1.1 or 1.0)
        return self._drawn(axes[:n_topics], fig)
