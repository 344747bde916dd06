"""A PAM's hierarchy: root, super-topics, the sub-topics they lead to, their words."""

import numpy as np

from .._topwords import top_words
from ..utils._pipeline import final_estimator, vocabulary_of
from ._common import DisplayMixin

__all__ = ["PAMHierarchyDisplay"]


class PAMHierarchyDisplay(DisplayMixin):
    """The hierarchy of a fitted two-level PAM (PAMVI 4-PAM, MoLDA), drawn left to right.

    Root, then the super-topics (MoLDA: the components), then the sub-topics, each
    labelled with its top words. An edge's width is its weight in
    ``level_weights_`` (the share of the tokens through a node that continue to a
    child); a super-topic draws its strongest ``max_edges`` edges above
    ``min_weight``. Sub-topics are grouped under the super-topic that leads to them
    most, so the picture stays readable at 50 sub-topics.

    Parameters
    ----------
    root_weights : ndarray of shape (n_super,)
    sub_weights : ndarray of shape (n_super, n_sub)
    super_labels, sub_labels : list of str
    min_weight : float
    max_edges : int

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    """

    def __init__(self, root_weights, sub_weights, super_labels, sub_labels, min_weight,
                 max_edges):
        self.root_weights = np.asarray(root_weights, dtype=np.float64)
        self.sub_weights = np.asarray(sub_weights, dtype=np.float64)
        self.super_labels = super_labels
        self.sub_labels = sub_labels
        self.min_weight = min_weight
        self.max_edges = max_edges

    @classmethod
    def from_estimator(cls, estimator, *, top_n=4, min_weight=None, max_edges=None,
                       feature_names=None, ax=None):
        """Draw the hierarchy of a fitted PAMVI (two levels) or MoLDA.

        Parameters
        ----------
        estimator : fitted PAMVI or MoLDA, or a Pipeline ending in one
        top_n : int, default=4
            Words per sub-topic label (super-topics get 3, from the words their
            sub-topics weigh most).
        min_weight : float or None, default=None
            Edges below it are not drawn; ``None``: ``1 / n_sub`` (uniform).
        max_edges : int or None, default=None
            Edges drawn per super-topic, the strongest; ``None``:
            ``max(3, 1.5 n_sub / n_super)``.
        feature_names : array-like of str or None, default=None
            Explicit vocabulary (else the pipeline's vectorizer's).
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : PAMHierarchyDisplay
        """
        model = final_estimator(estimator)
        weights = getattr(model, "level_weights_", None)
        if weights is None or len(weights) != 2:
            raise ValueError("PAMHierarchyDisplay needs a fitted two-level PAM (PAMVI with "
                             "structure=(k1, k2), or MoLDA).")
        root, sub = weights[0][0], weights[1]
        vocabulary = feature_names if feature_names is not None else vocabulary_of(estimator)
        words = top_words(model.components_, top_n, vocabulary)
        super_words = top_words(sub @ model.components_, 3, vocabulary)
        super_labels = [f"{s}: " + " ".join(map(str, w)) for s, w in enumerate(super_words)]
        sub_labels = [f"{k}: " + " ".join(map(str, w)) for k, w in enumerate(words)]
        n_super, n_sub = sub.shape
        min_weight = 1.0 / n_sub if min_weight is None else float(min_weight)
        if max_edges is None:
            max_edges = max(3, round(1.5 * n_sub / n_super))
        return cls(root, sub, super_labels, sub_labels, min_weight, int(max_edges)).plot(ax=ax)

    def plot(self, *, ax=None):
        """Draw the hierarchy.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : PAMHierarchyDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        n_super, n_sub = self.sub_weights.shape
        ax = self._axes(ax, (11, max(3.0, 0.28 * n_sub + 1.0)))
        owner = np.argmax(self.sub_weights, axis=0)
        order = np.lexsort((-self.sub_weights.max(0), owner))
        y_sub = {k: 1.0 - (i + 0.5) / n_sub for i, k in enumerate(order)}
        y_super = np.array([np.mean([y_sub[k] for k in order if owner[k] == s])
                            if np.any(owner == s) else 1.0 - (s + 0.5) / n_super
                            for s in range(n_super)])
        x_root, x_super, x_sub = 0.02, 0.30, 0.58
        scale = 7.0 / max(self.sub_weights.max(), 1e-12)
        for s in range(n_super):
            ax.plot([x_root, x_super], [0.5, y_super[s]], color="grey",
                    linewidth=0.5 + 6 * self.root_weights[s], alpha=0.6)
            for k in np.argsort(-self.sub_weights[s], kind="stable")[: self.max_edges]:
                if self.sub_weights[s, k] > self.min_weight:
                    ax.plot([x_super, x_sub], [y_super[s], y_sub[k]], color=f"C{s % 10}",
                            linewidth=0.5 + scale * self.sub_weights[s, k], alpha=0.6)
            ax.text(x_super, y_super[s], self.super_labels[s], ha="center", va="center",
                    fontsize=9, bbox=dict(boxstyle="round", facecolor=f"C{s % 10}", alpha=0.3))
        for k in range(n_sub):
            ax.text(x_sub + 0.01, y_sub[k], self.sub_labels[k], ha="left", va="center",
                    fontsize=8 if n_sub <= 30 else 7, color=f"C{owner[k] % 10}")
        ax.text(x_root, 0.5, "root", ha="left", va="bottom", fontsize=10)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        return self._drawn(ax)

