"""A PAM's hierarchy: root, super-topics, the sub-topics they lead to, their words."""

import numpy as np

from .._topwords import top_words
from ..utils._pipeline import final_estimator, vocabulary_of
from ._common import DisplayMixin

__all__ = ["PAMHierarchyDisplay"]


class PAMHierarchyDisplay(DisplayMixin):
    """The hierarchy of a fitted two-level PAM (PAMVI 4-PAM, MoLDA), drawn left to right.

    Root, then the super-topics (MoLDA: the components), then the sub-topics, each
    labelled with its top words. A super-topic is labelled with the words that set it
    apart: those its sub-topics weigh far more than the super-topics do on average
    (``p_s(w) log(p_s(w) / p(w))``), not the words every super-topic shares.

    An edge shows how much more often than uniform a super-topic's tokens go on to a
    sub-topic: its weight in ``level_weights_`` (the share of the tokens through
    the node that continue to the child) times the number of sub-topics; its width
    grows with that ratio. The ratio (``x2.1``) is written where the edge arrives,
    in its super-topic's colour, before the sub-topic's words: one slot per edge,
    the strongest first, for at most four edges a sub-topic (the
    weaker ones are drawn, not labelled, and the caption says so), so that no two
    labels overlap and a row stays within the figure however many edges meet at a
    sub-topic (``edge_labels_`` holds them). On Axes too short for a line of text a
    row, the text shrinks to fit the rows. A super-topic draws its
    strongest ``max_edges`` edges above ``min_weight``, and every sub-topic its
    strongest edge, dotted when it is below ``min_weight``, so that none is left
    unconnected. Sub-topics are grouped under the super-topic that leads to them
    most, so the picture stays readable at 50 sub-topics.

    ``level_weights_`` averages the documents' own distributions over the
    children, which are much sharper (see the PAM user guide): weights near uniform
    mean that documents use different children, not that none is preferred.

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
    edge_labels_ : dict
        ``(super, sub) -> matplotlib Text`` of every labelled edge's label.
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
        super_words = top_words(_distinctive(sub @ model.components_, root), 3, vocabulary)
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
        # Text sizes that fit the Axes: a row of text per sub-topic, a boxed label
        # per super-topic (smaller than the defaults only on short Axes)
        height = ax.get_window_extent().height * 72 / ax.figure.dpi  # points
        word_font = 8 if n_sub <= 30 else 7
        shrink = min(1.0, height / n_sub / (_LINE * word_font))
        edge_font, word_font = _EDGE_FONT * shrink, word_font * shrink
        super_font = min(_SUPER_FONT, height / n_super / _BOX)
        owner = np.argmax(self.sub_weights, axis=0)
        order = np.lexsort((-self.sub_weights.max(0), owner))
        y_sub = {k: 1.0 - (i + 0.5) / n_sub for i, k in enumerate(order)}
        # each super-topic beside the sub-topics it leads to most (a super-topic
        # leading to none most, in its share of the height), then moved apart
        y_super = _spread(np.array([np.mean([y_sub[k] for k in order if owner[k] == s])
                                    if np.any(owner == s) else 1.0 - (s + 0.5) / n_super
                                    for s in range(n_super)]),
                          _BOX * super_font / height)
        x_root, x_super, x_sub = 0.02, 0.30, 0.58
        lift = self.sub_weights * n_sub  # 1: as often as uniform
        width = 6.0 / max(lift.max() - 1.0, 1e-12)
        for s in range(n_super):
            ax.plot([x_root, x_super], [0.5, y_super[s]], color="grey",
                    linewidth=0.5 + 6 * self.root_weights[s], alpha=0.6)
        edges = _drawn_edges(self.sub_weights, self.min_weight, self.max_edges)
        for s, k in edges:
            weak = self.sub_weights[s, k] <= self.min_weight
            ax.plot([x_super, x_sub], (y_super[s], y_sub[k]), color=f"C{s % 10}", alpha=0.6,
                    linestyle=":" if weak else "-", solid_capstyle="butt",
                    linewidth=0.5 + width * max(lift[s, k] - 1.0, 0.0))
        # Each edge's label where it arrives, in a slot of its sub-topic's row (rows at
        # least a line of text apart, slots wider than the widest label), the
        # strongest MAX_EDGE_LABELS first; the sub-topics' words start after the most
        # slots any row needs.
        arriving = {k: sorted((s for s, j in edges if j == k), key=lambda s: -lift[s, k])
                    for k in range(n_sub)}
        unlabelled = any(len(supers) > MAX_EDGE_LABELS for supers in arriving.values())
        arriving = {k: supers[:MAX_EDGE_LABELS] for k, supers in arriving.items()}
        slot, gap = 4.4 * edge_font, 3.0  # points
        self.edge_labels_ = {}
        for k, supers in arriving.items():
            for i, s in enumerate(supers):
                self.edge_labels_[s, k] = ax.annotate(
                    _lift_text(lift[s, k]), (x_sub, y_sub[k]),
                    xytext=(gap + i * slot, 0), textcoords="offset points",
                    fontsize=edge_font, color=f"C{s % 10}", ha="left", va="center")
        words_at = gap + slot * max(len(supers) for supers in arriving.values())
        for s in range(n_super):
            ax.text(x_super, y_super[s], self.super_labels[s], ha="center", va="center",
                    fontsize=super_font, bbox=dict(boxstyle="round", facecolor=_pale(f"C{s % 10}"),
                                          edgecolor=f"C{s % 10}"))
        for k in range(n_sub):
            ax.annotate(self.sub_labels[k], (x_sub, y_sub[k]), xytext=(words_at, 0),
                        textcoords="offset points", ha="left", va="center",
                        fontsize=word_font, color=f"C{owner[k] % 10}")
        ax.text(x_root, 0.5, "root", ha="left", va="bottom", fontsize=10)
        bound = (f" (its {MAX_EDGE_LABELS} strongest edges;\nweaker ones are not "
                 "labelled); " if unlabelled else ";\n")
        ax.text(x_root, -0.02, "edges: how often a super-topic's tokens go on to a "
                f"sub-topic, against uniform (1/{n_sub}),\nwritten before the sub-topic in "
                f"the super-topic's colour{bound}dotted: a sub-topic's strongest edge below "
                "min_weight", fontsize=7, color="grey", ha="left", va="top")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.axis("off")
        return self._drawn(ax)


#: Font size of the edges' labels, in points (smaller on Axes too short for it).
_EDGE_FONT = 7

#: The most edges labelled at one sub-topic, the strongest.
MAX_EDGE_LABELS = 4

#: A row's height, in font sizes, that keeps the rows' text apart.
_LINE = 1.4

#: Font size of the super-topics' labels, in points (smaller on short Axes), and the
#: height their boxes need, in font sizes.
_SUPER_FONT = 9
_BOX = 2.0


def _spread(y, gap):
    """Heights ``y`` (in (0, 1)) moved apart to at least ``gap`` (at most ``1 / len(y)``),
    in the same order, each no further than needed, all within ``gap / 2`` of the edges."""
    order = np.argsort(-y, kind="stable")
    out = np.array(y, dtype=np.float64)
    ceiling = 1.0 - gap / 2
    for i in order:  # downwards: below the one above
        out[i] = ceiling = min(out[i], ceiling)
        ceiling -= gap
    floor = gap / 2
    for i in order[::-1]:  # upwards: above the one below (and the bottom edge)
        out[i] = floor = max(out[i], floor)
        floor += gap
    return out


def _lift_text(lift):
    """``x2.1`` (``x12`` from 10 on: a label never needs more than its slot)."""
    return f"x{lift:.1f}" if lift < 9.95 else f"x{lift:.0f}"


def _pale(color):
    """``color`` mixed with three parts of white, opaque: a label box that hides the
    edges behind it."""
    from matplotlib.colors import to_rgb

    return tuple(0.7 + 0.3 * c for c in to_rgb(color))


def _distinctive(super_word, root_weights):
    """Scores ranking the words that set each super-topic apart: ``p_s(w) log(p_s(w) /
    p(w))``, with ``p(w)`` the super-topics' mixture under the root's weights."""
    p = super_word / super_word.sum(1, keepdims=True)
    mixture = np.asarray(root_weights, dtype=np.float64) @ p
    return p * np.log(np.maximum(p, 1e-300) / np.maximum(mixture, 1e-300))


def _drawn_edges(weights, min_weight, max_edges):
    """The edges to draw: each super-topic's strongest ``max_edges`` above ``min_weight``,
    and every sub-topic's strongest, as ``(super, sub)`` pairs."""
    edges = set()
    for s in range(weights.shape[0]):
        for k in np.argsort(-weights[s], kind="stable")[:max_edges]:
            if weights[s, k] > min_weight:
                edges.add((s, int(k)))
    edges.update((int(s), k) for k, s in enumerate(np.argmax(weights, axis=0)))
    return sorted(edges)
