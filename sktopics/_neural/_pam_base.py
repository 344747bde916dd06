"""The base class of the PAM-shaped neural topic models (PAMVI, MoLDA).

Fitting, inference over every level of the DAG, the corpus-level node weights and
the generative view; the subclasses say which DAG and which decoder. Both sit on
the neural plumbing of :class:`~._estimator.NeuralTopicModel` (skorch net,
validation split, batch-norm freezing, warm start).
"""

from numbers import Real

import numpy as np
import torch

from .._generative_pam import (
    PAMGenerativeView,
    PAMLogisticNormalPrior,
    PAMMixtureLikelihood,
    pam_laplace_prior,
)
from ..utils._distributed import current_collective
from ..utils._modules import evaluation_mode
from ..utils._sklearn_compat import Interval, StrOptions, check_is_fitted
from ._data import corpus_word_counts
from ._estimator import NeuralTopicModel
from ._modules import float64_state
from ._pam_modules import LOGVAR_NORMS, PAMVAE, StructuredEncoder
from ._pam_proposal import PAMEncoderProposal

__all__ = ["PAMTopicModel", "initial_word_shift"]


class PAMTopicModel(NeuralTopicModel):
    """Base class of the PAM-shaped neural topic models (PAMVI, MoLDA).

    Subclasses define ``_structure()`` (a :class:`~sktopics.pam.PAMStructure`),
    ``_level_alphas(structure)`` and ``_build_decoder(n_features)``.
    """

    _parameter_constraints = {
        key: value
        for key, value in NeuralTopicModel._parameter_constraints.items()
        if key not in ("n_components", "shared_noise")
    }
    _parameter_constraints.update({
        "logvar_norm": [StrOptions(set(LOGVAR_NORMS))],
        "word_gain": ["boolean"],
        "shift_init": [StrOptions({"log_frequency", "zeros"})],
        "topic_word_prior": [None, Interval(Real, 0, None, closed="neither")],
    })

    _auto_epochs = 100

    # ----------------------------------------------------------------- fitting
    def _resolve_doc_topic_prior(self):
        structure = self._structure()
        self.structure_ = structure
        self.level_priors_ = self._level_alphas(structure)
        return self.level_priors_[0][0].copy()

    def _fit(self, X, seed, *, warm, **options):
        if warm and hasattr(self, "net_") and self._structure() != self.structure_:
            raise ValueError(
                f"warm_start / partial_fit cannot change the structure of a fitted "
                f"{type(self).__name__} ({self.structure_!r} -> {self._structure()!r}); "
                "refit with warm_start=False."
            )
        if not (warm and hasattr(self, "net_")):
            self._initial_shift = initial_word_shift(X, self.shift_init)
        super()._fit(X, seed, warm=warm, **options)
        self.topic_word_prior_ = self.topic_word_prior
        self.n_components_ = self.structure_.n_leaf_topics
        self._set_usage_weights(X)
        return self

    def _configure_module(self, module, n_train_documents):
        eta = self.topic_word_prior
        module.topic_word_prior_per_document = 0.0 if eta is None else eta / n_train_documents

    def _build_module(self, n_features):
        structure = self.structure_
        means, variances = pam_laplace_prior(structure, self.level_priors_)
        encoder = StructuredEncoder(
            n_features, structure.masks, tuple(self.hidden_sizes), self.activation,
            self.dropout, self.logvar_norm, self.bn_eps, self.bn_momentum,
        )
        return PAMVAE(
            encoder, self._build_decoder(n_features), structure.masks, means, variances,
            theta_dropout=self.dropout,
        )

    def _set_usage_weights(self, X):
        """Token-weighted mean node distributions over the training documents.

        ``level_weights_[l][s, c] = sum_d N_d r_d[s] theta_ds[c] / sum_d N_d r_d[s]``
        with ``r_d[s]`` the probability that a token of document ``d`` passes through
        node ``s`` and ``theta_ds = softmax(mu)`` the node's inferred distribution:
        the expected fraction of the training tokens routed through ``s`` that go
        on to child ``c`` (tomotopy's ``get_sub_topic_dist`` is the same ratio of
        Gibbs counts).
        """
        structure = self.structure_
        lengths = np.asarray(X.sum(axis=1), dtype=np.float64).ravel()
        numer = [np.zeros(mask.shape) for mask in structure.masks]
        denom = [np.zeros(mask.shape[0]) for mask in structure.masks]
        start = 0
        for node_probs, marginals in self._iter_levels(X):
            n = node_probs[0].shape[0]
            weight = lengths[start:start + n]
            start += n
            reach = np.ones((n, 1))
            for level, probs in enumerate(node_probs):
                numer[level] += np.einsum("d,ds,dsc->sc", weight, reach, probs)
                denom[level] += weight @ reach
                reach = marginals[level]
        collective = current_collective()
        if collective is not None:  # over every rank's training documents
            numer = [collective.sum_(torch.from_numpy(a)).numpy() for a in numer]
            denom = [collective.sum_(torch.from_numpy(a)).numpy() for a in denom]
        weights = []
        for level, mask in enumerate(structure.masks):
            with np.errstate(invalid="ignore", divide="ignore"):
                w = numer[level] / denom[level][:, None]
            # A node no training token reaches: fall back to its prior mean.
            unused = ~(denom[level] > 0)
            prior = self.level_priors_[level]
            w[unused] = prior[unused] / prior[unused].sum(axis=1, keepdims=True)
            weights.append(np.where(mask, w, 0.0))
        self.level_weights_ = weights

    @property
    def sub_topic_weights_(self):
        check_is_fitted(self, "level_weights_")
        return self.level_weights_[-1]

    def get_sub_topics(self, super_id, top_n=10, *, level=-1):
        """The sub-topics a super-topic leads to most, like tomotopy's ``get_sub_topics``.

        Parameters
        ----------
        super_id : int
            Index of the parent node within its level.
        top_n : int, default=10
            Number of children to return.
        level : int, default=-1
            Internal level of the parent (``-1``: the leaves' parents, the
            super-topics of 4-PAM; ``0``: the root, with ``super_id=0``).

        Returns
        -------
        sub_topics : list of (int, float)
            ``(child_id, weight)`` pairs from ``level_weights_``, by decreasing
            weight; children not connected to the parent are left out.
        """
        check_is_fitted(self, "level_weights_")
        weights = self.level_weights_[level]
        if not 0 <= int(super_id) < weights.shape[0]:
            raise ValueError(
                f"super_id must be in [0, {weights.shape[0]}); got {super_id!r}."
            )
        row = weights[int(super_id)]
        mask = self.structure_.masks[level][int(super_id)]
        order = [c for c in np.argsort(-row, kind="stable") if mask[c]]
        return [(int(c), float(row[c])) for c in order[: int(top_n)]]

    def _collapse_advice(self):
        n_node_coordinates = sum(int(mask.sum()) for mask in self.structure_.masks[1:])
        if n_node_coordinates <= 1000:
            return super()._collapse_advice()
        return (f"With {n_node_coordinates} per-document node coordinates below the root, "
                "the ELBO favours collapsing those nodes onto their prior, and the batch "
                "norm holds them apart only while their pre-norm spread exceeds "
                f"sqrt(bn_eps): lower bn_eps (now {self.bn_eps:g}) or use batch_size=200 "
                "(20 Newsgroups, 50 super / 100 sub-topics, batch 64: TD 0.07 with "
                "bn_eps=1e-3, 0.44 with 1e-6; see the PAM user guide).")

    # --------------------------------------------------------------- inference
    def _iter_levels(self, X):
        """Yield, per batch, the node distributions and level marginals (numpy)."""
        with torch.no_grad(), evaluation_mode(self.net_.module_) as module:
            state = float64_state(module.encoder)  # once for every batch
            for batch in self._batches(X):
                probs = module.mean_node_probs(batch, state)
                probs = [p.double() for p in probs]
                marginals = module.reach(probs)
                yield [p.cpu().numpy() for p in probs], [m.cpu().numpy() for m in marginals]

    def _levels(self, X, which):
        """Every document's ``which``: ``"nodes"`` (each level's node distributions),
        ``"marginals"`` (each level's marginal) or ``"leaves"`` (the last level's
        marginal alone), as a list of arrays filled batch by batch (memory: the
        output and one batch)."""
        structure = self.structure_
        n_levels = len(structure.levels)
        levels = [n_levels - 1] if which == "leaves" else range(n_levels)
        shapes = ([mask.shape for mask in structure.masks] if which == "nodes"
                  else [(k,) for k in structure.levels])
        out = [np.empty((X.shape[0],) + shapes[level]) for level in levels]
        start = 0
        for node_probs, marginals in self._iter_levels(X):
            parts = node_probs if which == "nodes" else marginals
            stop = start + parts[0].shape[0]
            for array, level in zip(out, levels):
                array[start:stop] = parts[level]
            start = stop
        # Documents without tokens: the prior means of every node.
        empty = np.asarray(X.sum(axis=1)).ravel() <= 0
        if empty.any():
            prior = [a / a.sum(axis=1, keepdims=True) for a in self.level_priors_]
            if which != "nodes":
                prior = structure.leaf_marginals(prior)
            for array, level in zip(out, levels):
                array[empty] = prior[level]
        if which != "nodes":
            for array in out:
                array /= array.sum(axis=1, keepdims=True)
        return out

    def _transform(self, X):
        return self._levels(X, "leaves")[0]

    def transform_levels(self, X):
        """Proportions of every level of the DAG, from the first level to the leaves.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.

        Returns
        -------
        proportions : list of ndarray
            ``proportions[l]`` of shape ``(n_samples, levels[l])``: the probability
            that a token of the document passes through each node of level ``l``
            (node distributions at their posterior means, ``softmax(mu)``). Rows sum
            to 1; the last entry equals :meth:`transform`.
        """
        X = self._check_X(X)
        return [m.astype(X.dtype, copy=False) for m in self._levels(X, "marginals")]

    def transform_nodes(self, X):
        """Each internal node's own distribution over its children, per document.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.

        Returns
        -------
        node_proportions : list of ndarray
            ``node_proportions[l]`` of shape ``(n_samples, n_parents, n_children)``;
            level 0 is the root (one parent). Zero on masked edges, rows sum to 1.
        """
        X = self._check_X(X)
        return [p.astype(X.dtype, copy=False) for p in self._levels(X, "nodes")]

    def _generative_view(self):
        check_is_fitted(self, "components_")
        structure = self.structure_
        means, variances = pam_laplace_prior(structure, self.level_priors_)
        return PAMGenerativeView(
            prior=PAMLogisticNormalPrior(
                structure, tuple(means), tuple(variances),
                approximates=tuple(a.copy() for a in self.level_priors_),
            ),
            likelihood=PAMMixtureLikelihood(self.components_.copy(), structure),
            n_features=self.n_features_in_,
            proposal=PAMEncoderProposal(self.net_.module_.encoder, structure),
        )


def initial_word_shift(X, shift_init):
    """Initial per-word shift of the decoder: centred log frequencies, or ``None`` (zeros).

    ``log((n_w + 1) / sum_v (n_v + 1))`` over the training counts, centred (the
    softmax ignores a constant).
    """
    if shift_init == "zeros":
        return None
    counts = corpus_word_counts(X) + 1.0
    shift = np.log(counts / counts.sum())
    return shift - shift.mean()
