"""Pachinko Allocation Machine structures: one validated description of the DAG.

A PAM (Li & McCallum 2006) is a directed acyclic graph whose internal nodes each hold
a per-document distribution over their children and whose leaves are words. In
sktopics the DAG is layered: a single root, then ``levels[0]`` nodes, ...,
``levels[-1]`` leaf topics (the "sub-topics", each a distribution over words).
Consecutive levels are fully connected by default; a boolean mask per level gives a
sparse DAG. LDA is 3-PAM (``levels=(K,)``), the classic 4-PAM is ``(k1, k2)``,
5-PAM is ``(k1, k2, k3)``, and a mixture of LDAs (MoLDA) is a 4-PAM whose second
mask is block-diagonal.

:class:`PAMStructure` parameterises the neural heads of :class:`~sktopics.PAMVI`
and :class:`~sktopics.MoLDA`, their generative view and
:func:`~sktopics.datasets.make_pam_corpus`. Estimators keep the user's plain
``structure`` parameter (a tuple, list or dict) and convert it with
:meth:`PAMStructure.from_spec` during ``fit``, so ``clone`` and grid searches work.

This module imports only numpy.
"""

from dataclasses import dataclass
from numbers import Integral

import numpy as np

__all__ = ["PAMStructure"]


def _as_mask(mask, shape, where):
    array = np.asarray(mask)
    if array.dtype != bool:
        if not np.issubdtype(array.dtype, np.number) or not np.all(np.isin(array, (0, 1))):
            raise ValueError(f"{where} must be a boolean (or 0/1) matrix.")
        array = array.astype(bool)
    if array.ndim == 1 and shape[0] == 1:
        array = array[None, :]
    if array.shape != shape:
        raise ValueError(f"{where} must have shape {shape}; got {array.shape}.")
    return array


@dataclass(frozen=True)
class PAMStructure:
    """A layered PAM DAG: root -> ``levels[0]`` -> ... -> ``levels[-1]`` -> words.

    Parameters
    ----------
    levels : tuple of int
        Number of nodes per level below the root; the last level holds the leaf
        topics (distributions over words). ``(k1, k2)`` is 4-PAM with ``k1``
        super-topics and ``k2`` sub-topics.
    masks : tuple of ndarray of bool or None, default=None
        One ``(n_parents, n_children)`` boolean matrix per level: ``masks[0]`` has
        shape ``(1, levels[0])`` (root -> first level), ``masks[l]`` shape
        ``(levels[l-1], levels[l])``. ``True`` marks an edge. ``None`` (or a
        ``None`` entry) means fully connected. Every node needs at least one child
        and every non-root node at least one parent.

    Attributes
    ----------
    n_leaf_topics : int
        ``levels[-1]``.
    parent_sizes : tuple of int
        Number of internal nodes per internal level, starting with the root (1).
    depth : int
        Number of levels of the PAM counting the root and the words
        (``len(levels) + 2``): 4 for 4-PAM.

    Examples
    --------
    >>> from sktopics.pam import PAMStructure
    >>> s = PAMStructure.from_spec((2, 5))
    >>> s.levels, s.n_leaf_topics, s.depth
    ((2, 5), 5, 4)
    >>> sparse = PAMStructure.from_spec([[1, 1], [[1, 1, 0], [0, 1, 1]]])
    >>> sparse.levels, sparse.n_edges
    ((2, 3), 6)
    """

    levels: tuple
    masks: tuple = None

    def __post_init__(self):
        levels = self.levels
        if isinstance(levels, (Integral, np.integer)):
            levels = (levels,)
        try:
            levels = tuple(levels)
        except TypeError:
            raise ValueError(
                f"levels must be a sequence of positive ints; got {self.levels!r}."
            ) from None
        if len(levels) == 0:
            raise ValueError("levels must contain at least one level (the leaf topics).")
        for size in levels:
            if isinstance(size, bool) or not isinstance(size, (Integral, np.integer)) or size < 1:
                raise ValueError(
                    f"every level size must be an int >= 1; got levels={self.levels!r}."
                )
        levels = tuple(int(size) for size in levels)
        object.__setattr__(self, "levels", levels)

        parents = (1,) + levels[:-1]
        masks = self.masks
        if masks is None:
            masks = (None,) * len(levels)
        masks = list(masks)
        if len(masks) != len(levels):
            raise ValueError(
                f"masks needs one entry per level ({len(levels)}); got {len(masks)}."
            )
        checked = []
        for depth, (mask, n_parents, n_children) in enumerate(zip(masks, parents, levels)):
            shape = (n_parents, n_children)
            where = f"masks[{depth}]"
            mask = np.ones(shape, dtype=bool) if mask is None else _as_mask(mask, shape, where)
            childless = np.flatnonzero(~mask.any(axis=1))
            if childless.size:
                raise ValueError(
                    f"{where}: node(s) {childless.tolist()} of level {depth} have no child; "
                    "every internal node needs at least one edge."
                )
            orphans = np.flatnonzero(~mask.any(axis=0))
            if orphans.size:
                raise ValueError(
                    f"{where}: node(s) {orphans.tolist()} of level {depth + 1} have no parent "
                    "and could never be reached."
                )
            mask = mask.copy()
            mask.setflags(write=False)
            checked.append(mask)
        object.__setattr__(self, "masks", tuple(checked))

    # ---------------------------------------------------------------- creation
    @classmethod
    def from_spec(cls, spec):
        """Build a structure from an estimator's plain ``structure`` parameter.

        Parameters
        ----------
        spec : PAMStructure, int, sequence of int, sequence of masks or dict
            * ``(k1, k2)`` / ``(k1, k2, k3)``: fully connected levels;
            * a list of boolean matrices, one per level (``masks[0]`` may be a
              vector of length ``levels[0]``): the sizes are read from the masks;
            * ``{"levels": (...), "masks": [...]}``: both explicitly;
            * a :class:`PAMStructure` is returned unchanged.

        Returns
        -------
        structure : PAMStructure
        """
        if isinstance(spec, cls):
            return spec
        if isinstance(spec, dict):
            unknown = set(spec) - {"levels", "masks"}
            if unknown or "levels" not in spec:
                raise ValueError(
                    "a dict structure needs the key 'levels' and optionally 'masks'; "
                    f"got keys {sorted(spec)}."
                )
            return cls(spec["levels"], spec.get("masks"))
        if isinstance(spec, (Integral, np.integer)) and not isinstance(spec, bool):
            return cls((int(spec),))
        if isinstance(spec, str) or not hasattr(spec, "__len__"):
            raise ValueError(
                "structure must be a tuple of level sizes such as (k1, k2), a list of "
                f"boolean masks, a dict or a PAMStructure; got {spec!r}."
            )
        items = list(spec)
        if all(np.ndim(item) == 0 for item in items):
            return cls(tuple(items))
        if items and all(np.ndim(item) in (1, 2) for item in items):
            masks = [np.atleast_2d(np.asarray(item)) for item in items]
            return cls(tuple(mask.shape[1] for mask in masks), tuple(masks))
        raise ValueError(
            "structure must be a tuple of level sizes such as (k1, k2), a list of "
            f"boolean masks, a dict or a PAMStructure; got {spec!r}."
        )

    @classmethod
    def mixture(cls, n_topics):
        """The DAG of a mixture of LDAs: root -> M components -> their own topics.

        Parameters
        ----------
        n_topics : sequence of int
            Topics per component, e.g. ``(10, 50)`` for MoLDA(10:50).
        """
        sizes = tuple(int(k) for k in n_topics)
        if not sizes or min(sizes) < 1:
            raise ValueError(f"every component needs at least one topic; got {n_topics!r}.")
        mask = np.zeros((len(sizes), sum(sizes)), dtype=bool)
        start = 0
        for m, size in enumerate(sizes):
            mask[m, start:start + size] = True
            start += size
        return cls((len(sizes), sum(sizes)), (None, mask))

    # -------------------------------------------------------------- properties
    @property
    def n_leaf_topics(self):
        return self.levels[-1]

    @property
    def parent_sizes(self):
        return (1,) + self.levels[:-1]

    @property
    def depth(self):
        return len(self.levels) + 2

    @property
    def n_edges(self):
        """Number of edges between the root and the leaf topics."""
        return int(sum(mask.sum() for mask in self.masks))

    @property
    def is_dense(self):
        return all(mask.all() for mask in self.masks)

    def n_children(self, level):
        """Children count of each node of internal level ``level`` (0 = root)."""
        return self.masks[level].sum(axis=1)

    def leaf_marginals(self, node_probs):
        """Marginal probability of reaching each node, level by level.

        Parameters
        ----------
        node_probs : list of ndarray
            ``node_probs[l]`` of shape ``(..., parent_sizes[l], levels[l])``: each
            internal node's distribution over its children (zero on masked edges).

        Returns
        -------
        marginals : list of ndarray
            ``marginals[l]`` of shape ``(..., levels[l])``; the last entry is the
            distribution over leaf topics.
        """
        reach = None
        marginals = []
        for probs in node_probs:
            probs = np.asarray(probs)
            reach = probs[..., 0, :] if reach is None else np.einsum("...s,...sk->...k", reach, probs)
            marginals.append(reach)
        return marginals

    def __eq__(self, other):
        if not isinstance(other, PAMStructure):
            return NotImplemented
        return self.levels == other.levels and all(
            np.array_equal(a, b) for a, b in zip(self.masks, other.masks)
        )

    def __hash__(self):
        return hash((self.levels, tuple(mask.tobytes() for mask in self.masks)))

    def __repr__(self):
        if self.is_dense:
            return f"PAMStructure(levels={self.levels})"
        return f"PAMStructure(levels={self.levels}, n_edges={self.n_edges})"
