"""The generative view of PAM-shaped models (:class:`~sktopics.PAMVI`, :class:`~sktopics.MoLDA`).

A PAM document has one distribution per internal node of the DAG (the root, the
super-topics, ...). The view's latent is the concatenation ``h`` of the
unconstrained node vectors, flattened level by level and, inside a level, node by
node over the node's children only (masked edges carry no coordinate). Each node's
distribution is the softmax of its own block, ``theta = to_theta(h)`` in the same
flat layout.

The prior is the product of the nodes' logistic-normal Laplace approximations of
their Dirichlet priors; the likelihood sums the paths out analytically,
``p(w | theta) = sum_paths prod(theta along the path) phi_leaf[w]``, computed
level by level with batched products.

Capabilities for :mod:`sktopics.model_selection` (duck-typed, never type checks):

* ``view.prior.sample_h(n, generator, device, dtype)`` / ``view.prior.log_prob_h(h)``
  and ``view.prior.to_theta(h)`` (per-node softmax);
* ``view.likelihood.log_prob(x, theta)`` on the flat theta,
  ``view.likelihood.log_prob_h(x, h)`` on the flat latent;
* ``view.path_mixture()`` -> ``(phi, alpha_root, alpha_sub)`` for 4-PAM and MoLDA
  (``alpha_sub`` of shape ``(k1, k2)`` with zeros on masked edges), for AIS over
  per-token paths with the node distributions collapsed; ``view.level_alphas()``
  gives the per-level Dirichlet parameters for any depth;
* ``view.proposal(x) -> (loc, scale)``: the amortised posterior over the flat latent.

Maths only: imports numpy and torch (and :mod:`sktopics.pam`, numpy only).
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import torch

from ._generative import (
    PathMixture,
    diagonal_gaussian_log_prob,
    diagonal_gaussian_sample,
    laplace_logistic_normal,
    sequence_log_likelihood,
)
from .pam import PAMStructure
from .utils._modules import TensorCache

__all__ = [
    "EdgeLayout",
    "pam_level_alphas",
    "pam_laplace_prior",
    "PAMLogisticNormalPrior",
    "PAMMixtureLikelihood",
    "PAMGenerativeView",
]


def _level_prior_values(value, n_children, n_parents, name):
    """A (n_parents, n_children) array of Dirichlet parameters from a float/1-D/2-D."""
    array = np.asarray(value, dtype=np.float64)
    if array.ndim == 0:
        array = np.full((n_parents, n_children), float(array))
    elif array.ndim == 1:
        if array.shape[0] != n_children:
            raise ValueError(
                f"{name} must have one value per child node ({n_children}); got "
                f"shape {array.shape}."
            )
        array = np.broadcast_to(array, (n_parents, n_children)).copy()
    elif array.shape != (n_parents, n_children):
        raise ValueError(
            f"{name} must be a float, an array of shape ({n_children},) or "
            f"({n_parents}, {n_children}); got shape {array.shape}."
        )
    if not np.all(np.isfinite(array)) or np.any(array <= 0):
        raise ValueError(f"{name} must be positive and finite.")
    return array


def pam_level_alphas(structure, root_prior, node_prior):
    """Dirichlet parameters of every internal node, as one array per level.

    Parameters
    ----------
    structure : PAMStructure
    root_prior : float or array-like of shape (levels[0],)
        The root's Dirichlet over the first level (tomotopy's ``alpha``).
    node_prior : float, array-like or list
        The non-root nodes' Dirichlets (tomotopy's ``subalpha``): a float for
        every node; an array of shape ``(levels[l],)`` (shared by the level's
        nodes) or ``(levels[l-1], levels[l])``, applied to every non-root level;
        or, for deeper DAGs, a Python ``list`` with one such entry per non-root
        level.

    Returns
    -------
    alphas : list of ndarray
        ``alphas[l]`` of shape ``(parent_sizes[l], levels[l])``; zeros on masked
        edges.
    """
    structure = PAMStructure.from_spec(structure)
    n_sub_levels = len(structure.levels) - 1
    if isinstance(node_prior, list) and n_sub_levels >= 2 and len(node_prior) == n_sub_levels:
        per_level = list(node_prior)
    else:
        per_level = [node_prior] * n_sub_levels
    alphas = []
    for level, (n_parents, n_children) in enumerate(zip(structure.parent_sizes, structure.levels)):
        if level == 0:
            value = _level_prior_values(root_prior, n_children, 1, "doc_topic_prior")
        else:
            value = _level_prior_values(
                per_level[level - 1], n_children, n_parents, "subtopic_prior"
            )
        alphas.append(np.where(structure.masks[level], value, 0.0))
    return alphas


def pam_laplace_prior(structure, alphas):
    """Per-node Laplace (logistic-normal) approximations of the nodes' Dirichlets.

    Returns two lists of ``(parent_sizes[l], levels[l])`` arrays, the means and the
    variances; each node's approximation uses only its children, and masked edges
    get mean 0 and variance 1 (they carry no latent coordinate).
    """
    means, variances = [], []
    for mask, alpha in zip(structure.masks, alphas):
        mean = np.zeros(mask.shape)
        var = np.ones(mask.shape)
        for node in range(mask.shape[0]):
            children = mask[node]
            m, v = laplace_logistic_normal(alpha[node, children])
            mean[node, children] = m
            var[node, children] = v
        means.append(mean)
        variances.append(var)
    return means, variances


class EdgeLayout:
    """Where a DAG's edges sit in the flat latent, as tensors cached per device.

    Per level: ``index`` holds the flat (row-major) positions of the unmasked
    edges in the level's ``(P, C)`` block, ``mask`` the block's boolean mask.
    """

    def __init__(self, structure):
        self.structure = structure
        self._tensors = TensorCache()

    def index(self, level, device):
        mask = self.structure.masks[level]
        return self._tensors.get(("index", level), np.flatnonzero(mask.ravel()), device,
                                 torch.int64)

    def mask(self, level, device):
        return self._tensors.get(("mask", level), self.structure.masks[level], device,
                                 torch.bool)

    def unflatten(self, h, fill):
        """Flat latent (..., L) -> list of (..., P, C) blocks, ``fill`` on masked edges."""
        blocks, start = [], 0
        for level, mask in enumerate(self.structure.masks):
            index = self.index(level, h.device)
            n = index.shape[0]
            block = h.new_full(h.shape[:-1] + (mask.size,), fill)
            block[..., index] = h[..., start:start + n]
            blocks.append(block.reshape(h.shape[:-1] + mask.shape))
            start += n
        return blocks

    def flatten(self, blocks):
        parts = []
        for level, (mask, block) in enumerate(zip(self.structure.masks, blocks)):
            flat = block.reshape(block.shape[:-2] + (mask.size,))
            parts.append(flat.index_select(-1, self.index(level, block.device)))
        return torch.cat(parts, dim=-1)

    def node_softmax(self, blocks_h):
        """Per-node softmax of (…, P, C) logits over unmasked children (0 on masked)."""
        return [torch.softmax(block.masked_fill(~self.mask(level, block.device), float("-inf")),
                              dim=-1)
                for level, block in enumerate(blocks_h)]


def leaf_mixture(node_probs):
    """Distribution over leaf topics from the per-node distributions (batched products)."""
    reach = node_probs[0][..., 0, :]
    for probs in node_probs[1:]:
        reach = (reach.unsqueeze(-2) @ probs).squeeze(-2)
    return reach


@dataclass(frozen=True, eq=False)
class PAMLogisticNormalPrior:
    """Independent logistic-normal priors, one per internal node of a PAM DAG.

    Attributes
    ----------
    structure : PAMStructure
    means, variances : tuple of ndarray
        Per level, ``(parent_sizes[l], levels[l])``.
    approximates : tuple of ndarray or None
        The Dirichlet parameters they approximate (zeros on masked edges).
    """

    structure: PAMStructure
    means: tuple
    variances: tuple
    approximates: Optional[tuple] = None
    _tensors: TensorCache = field(default_factory=TensorCache, init=False, repr=False,
                                  compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_layout", EdgeLayout(self.structure))

    @property
    def latent_dim(self):
        return self.structure.n_edges

    n_topics = latent_dim  # the dimension of the flat latent, as for the other priors

    def _flat(self, name, dtype, device):
        arrays = getattr(self, name)
        masks = self.structure.masks
        flat = np.concatenate([a[m] for a, m in zip(arrays, masks)])  # row-major: edge order
        return self._tensors.get(name, flat, device, dtype)

    def gaussian(self, device, dtype):
        """``(mean, var)`` of the flat latent's Gaussian as tensors on ``device``."""
        return self._flat("means", dtype, device), self._flat("variances", dtype, device)

    def log_prob_h(self, h):
        return diagonal_gaussian_log_prob(h, *self.gaussian(h.device, h.dtype))

    def sample_h(self, n, generator=None, device="cpu", dtype=torch.float64):
        return diagonal_gaussian_sample(*self.gaussian(device, dtype), n, generator)

    def to_theta(self, h):
        """Flat latent -> flat per-node proportions (softmax within each node)."""
        return self._layout.flatten(self._layout.node_softmax(self._layout.unflatten(h, 0.0)))


@dataclass(frozen=True, eq=False)
class PAMMixtureLikelihood:
    """Words drawn through a path of the DAG, paths summed out.

    ``p(w | theta) = leaf(theta) @ topic_word`` where ``leaf`` multiplies the node
    distributions level by level.
    """

    topic_word: np.ndarray  # (n_leaf_topics, V), rows sum to 1
    structure: PAMStructure
    _tensors: TensorCache = field(default_factory=TensorCache, init=False, repr=False,
                                  compare=False)

    def __post_init__(self):
        object.__setattr__(self, "_layout", EdgeLayout(self.structure))

    def node_probs(self, theta):
        """Flat theta (..., L) -> list of per-level (..., P, C) node distributions."""
        return self._layout.unflatten(theta, 0.0)

    def leaf_proportions(self, theta):
        return leaf_mixture(self.node_probs(theta))

    def word_probabilities(self, theta):
        phi = self._tensors.get("topic_word", self.topic_word, theta.device, theta.dtype)
        return self.leaf_proportions(theta) @ phi

    def log_prob(self, x, theta, include_coefficient=False):
        """log p(x | theta) for counts ``x`` (..., V) and flat node proportions ``theta``."""
        log_p = torch.log(self.word_probabilities(theta).clamp_min(1e-300))
        return sequence_log_likelihood(x, log_p, include_coefficient)

    def log_prob_h(self, x, h, include_coefficient=False):
        layout = self._layout
        theta = layout.flatten(layout.node_softmax(layout.unflatten(h, 0.0)))
        return self.log_prob(x, theta, include_coefficient)


@dataclass(frozen=True, eq=False)
class PAMGenerativeView:
    """The generative view of a PAM-shaped model (see the module docstring)."""

    prior: PAMLogisticNormalPrior
    likelihood: PAMMixtureLikelihood
    n_features: int
    proposal: Optional[Callable] = field(default=None, compare=False)

    @property
    def structure(self):
        return self.likelihood.structure

    @property
    def n_topics(self):
        return self.prior.latent_dim

    def token_mixture(self, approximate=True):
        """``None``: a PAM token's topic is a path, see :meth:`path_mixture`."""
        return None

    def level_alphas(self):
        """Per-level Dirichlet parameters ``(parent_sizes[l], levels[l])`` (0 = no edge)."""
        return [np.array(a) for a in self.prior.approximates]

    def path_mixture(self, approximate=True):
        """:class:`~sktopics._generative.PathMixture` of a two-level DAG (4-PAM, MoLDA).

        The Dirichlets are those the nodes' logistic-normal priors approximate, so
        there is a path mixture only when ``approximate``. ``None`` for other depths
        (use :meth:`level_alphas`).
        """
        if (not approximate or len(self.structure.levels) != 2
                or self.prior.approximates is None):
            return None
        alpha_root, alpha_sub = self.level_alphas()
        return PathMixture(self.likelihood.topic_word.copy(), alpha_root[0], alpha_sub)
