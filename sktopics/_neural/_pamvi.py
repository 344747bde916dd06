"""PAMVI: amortised variational inference for Pachinko Allocation Machines (aviPAM).

Srivastava & Sutton, "Variational Inference in Pachinko Allocation Machines"
(arXiv:1804.07944). The shared machinery of PAM-shaped models (:class:`PAMVI`,
:class:`~sktopics.MoLDA`) lives in :class:`PAMTopicModel`; both sit on the neural
plumbing of :class:`~._estimator.NeuralTopicModel` (skorch net, validation split,
batch-norm freezing, warm start).
"""

from numbers import Integral, Real

import numpy as np
import torch

from .._generative_pam import (
    EdgeLayout,
    PAMGenerativeView,
    PAMLogisticNormalPrior,
    PAMMixtureLikelihood,
    pam_laplace_prior,
    pam_level_alphas,
)
from ..pam import PAMStructure
from ..utils._docstring import fill_doc
from ..utils._sklearn_compat import Interval, StrOptions, check_is_fitted
from ..utils._torch import evaluation_mode
from ._docs import COUNT_POLICY, ENCODER_AND_TRAINING, batch_parameters
from ._estimator import EncoderProposal, NeuralTopicModel
from ._pam_modules import LOGVAR_NORMS, PAMVAE, GainMixtureDecoder, StructuredEncoder

__all__ = ["PAMVI", "PAMTopicModel"]


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
            for batch in self._batches(X.astype(np.float32)):
                probs = module.mean_node_probs(batch)
                probs = [p.double() for p in probs]
                marginals = module.reach(probs)
                yield [p.cpu().numpy() for p in probs], [m.cpu().numpy() for m in marginals]

    def _levels(self, X):
        node_parts, marginal_parts = [], []
        for node_probs, marginals in self._iter_levels(X):
            node_parts.append(node_probs)
            marginal_parts.append(marginals)
        n_levels = len(self.structure_.levels)
        if not node_parts:
            return ([np.empty((0,) + m.shape) for m in self.structure_.masks],
                    [np.empty((0, k)) for k in self.structure_.levels])
        nodes = [np.concatenate([p[i] for p in node_parts]) for i in range(n_levels)]
        marginals = [np.concatenate([p[i] for p in marginal_parts]) for i in range(n_levels)]
        # Documents without tokens: the prior means of every node.
        empty = np.asarray(X.sum(axis=1)).ravel() <= 0
        if empty.any():
            prior_nodes = [a / a.sum(axis=1, keepdims=True) for a in self.level_priors_]
            prior_marginals = self.structure_.leaf_marginals(prior_nodes)
            for level in range(n_levels):
                nodes[level][empty] = prior_nodes[level]
                marginals[level][empty] = prior_marginals[level]
        marginals = [m / m.sum(axis=1, keepdims=True) for m in marginals]
        return nodes, marginals

    def _transform(self, X):
        return self._levels(X)[1][-1]

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
        return [m.astype(X.dtype, copy=False) for m in self._levels(X)[1]]

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
        return [p.astype(X.dtype, copy=False) for p in self._levels(X)[0]]

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
    counts = np.asarray(X.sum(axis=0), dtype=np.float64).ravel() + 1.0
    shift = np.log(counts / counts.sum())
    return shift - shift.mean()


class PAMEncoderProposal(EncoderProposal):
    """The amortised posterior over the flat PAM latent, as ``x -> (loc, scale)``."""

    def __init__(self, encoder, structure):
        super().__init__(encoder)
        self.layout = EdgeLayout(structure)

    def _flat(self, mus, logvars):
        loc, scale = [], []
        for level, (mu, logvar) in enumerate(zip(mus, logvars)):
            edges = self.layout.index(level, mu.device)
            loc.append(mu.flatten(1).index_select(1, edges))
            scale.append(torch.exp(0.5 * logvar).flatten(1).index_select(1, edges))
        return torch.cat(loc, 1), torch.cat(scale, 1)


_PAM_FITTED_ATTRIBUTES = """
components_ : ndarray of shape (`n_components_`, n_features)
    Leaf (sub-)topic word distributions, rows sum to 1.
n_components_ : int
    Number of leaf topics (``levels[-1]``), the width of :meth:`transform`.
structure_ : PAMStructure
    The validated DAG.
level_priors_ : list of ndarray
    Dirichlet parameters of every internal node, ``level_priors_[l]`` of shape
    ``(n_parents, n_children)`` (zeros on masked edges); ``level_priors_[0][0]``
    is the root's ``doc_topic_prior_``.
doc_topic_prior_ : ndarray of shape (levels[0],)
    The root's Dirichlet parameter.
level_weights_ : list of ndarray
    Corpus-level node -> child weights, same shapes as ``level_priors_``: the
    expected fraction of the training tokens passing through a node that go on
    to each child (see Notes).
topic_word_prior_ : float or None
    ``topic_word_prior`` as used: the sub-topics are MAP point estimates under
    it, or maximum-likelihood ones for ``None`` (variational EM).
n_iter_ : int
    Epochs run, cumulated under ``warm_start`` / ``partial_fit``.
net_ : skorch.NeuralNet
    The private skorch net owning the torch module and optimiser.
history_ : skorch.history.History
    Per-epoch ``train_loss`` (negative ELBO per document), ``valid_loss`` and
    ``dur`` (seconds).
device_ : torch.device
    The device the model was trained on.
n_features_in_ : int
    Number of words seen during fit.
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Names of the words seen during fit, when ``X`` had string column names.
"""

PAM_TRAINING = ENCODER_AND_TRAINING.replace(
    "Widths of the inference network's hidden layers (AVITM: 100-100).",
    "Widths of the hidden layers of each level's MLP (one MLP per internal level).",
).replace(
    """bn_eps : float, default=1e-3
    Batch-norm epsilon (TF default).""",
    """bn_eps : float, default=1e-6
    Batch-norm epsilon. AVITM's TF default 1e-3 leaves the KL a way out of
    the batch norm on the mean heads: it shrinks a level's pre-norm spread
    below ``sqrt(bn_eps)``, and the level collapses onto its prior. With
    50 super- / 100 sub-topics on 20 Newsgroups (batch 64) the sub level did
    (NPMI 0.14, TD 0.07); with 1e-6 it stayed active through 60 epochs (NPMI
    0.19, TD 0.44, held-out likelihood slightly higher). Neutral on the
    smaller settings tried (user guide).""",
) + batch_parameters(64, "shuffle").lstrip("\n")


SHIFT_INIT = """
shift_init : {"log_frequency", "zeros"}, default="log_frequency"
    Initial value of the decoder's learnable per-word shift ``b``: the centred
    log word frequencies of the training counts, or AVITM's zeros. With zeros,
    every topic starts with random high weight on rare words, and on a corpus
    with a large vocabulary (NIPS) the topics no document takes early keep
    them: 30 of 50 sub-topics stayed rarely used and test NPMI stalled near
    0.05; with log frequencies 2 of 50 did and NPMI reached 0.095 (user guide).
"""

TOPIC_WORD_PRIOR = """
topic_word_prior : float or None, default=None
    Symmetric Dirichlet prior ``eta`` of the sub-topics (tomotopy's ``eta``).
    The sub-topics are point estimates; with ``eta`` they are MAP estimates in
    the softmax basis, where the Dirichlet's density is ``prod_w phi_w ** eta``,
    so ``eta`` acts as pseudo-counts, ``phi_k = (n_k + eta) / (n_k. + V eta)``
    for expected counts ``n``, as in collapsed Gibbs. The log prior is spread
    over the training documents of each ``fit`` (with ``partial_fit``, over
    the documents of each call). ``None``: maximum likelihood, the paper's
    variational EM.
"""

WORD_GAIN = """
word_gain : bool, default=True
    Learn a per-word gain on the batch-normed topic logits,
    ``phi = softmax(g * BN(beta) + b)``. AVITM's decoder (``False``) gives every
    word unit spread across topics, which forces generic words into low-use
    "junk" topics; the gain lets them spread evenly. It raised test NPMI on BBC
    News and 20 Newsgroups and was neutral on NIPS (user guide).
"""


@fill_doc(shared_parameters=PAM_TRAINING, fitted_attributes=_PAM_FITTED_ATTRIBUTES,
          count_policy=COUNT_POLICY, word_gain=WORD_GAIN, shift_init=SHIFT_INIT,
          topic_word_prior=TOPIC_WORD_PRIOR)
class PAMVI(PAMTopicModel):
    """Pachinko Allocation Machine trained by amortised variational inference (aviPAM).

    A PAM is a DAG of topics: each word of a document follows a path from the root
    through super-topics to a sub-topic, which emits the word. Every internal node
    has a per-document distribution over its children with a Dirichlet prior.
    4-PAM (``structure=(k1, k2)``): ``theta_r ~ Dir(alpha)`` over ``k1``
    super-topics, ``theta_s ~ Dir(subalpha)`` over ``k2`` sub-topics for each
    super-topic ``s``, and per word ``z1 ~ theta_r``, ``z2 ~ theta_z1``,
    ``w ~ phi_z2``. Summing the paths out, ``p(w) = sum_s theta_r[s] sum_k
    theta_s[k] phi_k[w]``.

    Each node's Dirichlet is replaced by its Laplace approximation in the softmax
    basis; the posterior is a product of logistic normals given by a structured
    inference network with one MLP per level; mixing weights are passed down the
    DAG by batched products. The sub-topics ``phi = softmax(BN(beta))`` are point
    estimates (variational EM), with batch norm across topics as in AVITM.

    Parameters
    ----------
    structure : tuple of int, list of masks, dict or PAMStructure, default=(2, 10)
        The DAG below the root: ``(k1, k2)`` is 4-PAM with ``k1`` super-topics
        and ``k2`` sub-topics (tomotopy's ``PAModel(k1, k2)``); ``(k1, k2, k3)`` is
        5-PAM; a list of boolean adjacency matrices (one per level, ``(n_parents,
        n_children)``, the root's may be a vector) or ``{"levels": ..., "masks":
        ...}`` gives a sparse DAG. See :class:`~sktopics.pam.PAMStructure`.
    doc_topic_prior : float or array-like of shape (k1,), default=1.0
        The root's Dirichlet over the first level (tomotopy's ``alpha``).
    subtopic_prior : float or array-like, default=1.0
        The Dirichlet of every other internal node over its children (tomotopy's
        ``subalpha``): a float, an array of shape ``(k2,)`` or ``(k1, k2)``, or
        for deeper DAGs a list with one such entry per non-root level.
    logvar_norm : {"batchnorm", "l2", "none"}, default="batchnorm"
        Normalisation of the encoder heads against slow learning and component
        collapse: TF-style batch norm on the mean and log sigma^2 heads, the
        paper's batch-free l2 variant on log sigma^2, or nothing. Only
        ``"batchnorm"`` avoided collapse on 20 Newsgroups: with ``"l2"`` (2/50,
        15 epochs) the super-topic KL fell from 48 to 3 nats, 39 of 100 latent
        dimensions went inactive and test NPMI dropped from 0.19 to 0.15.
    {topic_word_prior}
    {word_gain}
    {shift_init}
    {shared_parameters}
    dropout : float, default=0.0
        Drop probability after each level MLP's last hidden layer and on the
        leaf-topic weights (AVITM's NVLDA uses 0.25; without it PAMVI reached a
        higher test NPMI in 15 epochs on 20 Newsgroups).

    Attributes
    ----------
    {fitted_attributes}
    sub_topic_weights_ : ndarray of shape (n_parents, n_leaf_topics)
        ``level_weights_[-1]``: the weights of the leaves' parents (the
        super-topics of 4-PAM) over the sub-topics, as read by
        :meth:`get_sub_topics`.

    See Also
    --------
    MoLDA : a word-level mixture of LDAs, a PAM with a block-diagonal DAG.
    AVITM : LDA (3-PAM) trained by the same autoencoding inference.
    sktopics.pam.PAMStructure : the DAG description.

    Notes
    -----
    {count_policy}

    Defaults: ``learning_rate=5e-3``, ``batch_size=64`` and ``dropout=0`` gave the
    best test NPMI per epoch and per second among the settings tried on 20
    Newsgroups (the paper used 1e-3 and batches of 200, trained for 11-26 GPU
    minutes).

    ``transform`` returns the leaf-topic proportions ``sum over paths`` of the
    node distributions taken at their posterior means (``softmax(mu)`` per node);
    :meth:`transform_levels` gives every level, :meth:`transform_nodes` every
    node's own distribution.

    The node distributions of PAM are per document, so the corpus-level
    super -> sub weights need a definition: ``level_weights_[l][s, c]`` is
    ``sum_d N_d r_d[s] theta_ds[c] / sum_d N_d r_d[s]`` over the training
    documents, with ``N_d`` the document length and ``r_d[s]`` the probability
    that a token of ``d`` passes through ``s``. It is the expected share of the
    tokens routed through ``s`` that continue to ``c``, the variational analogue
    of tomotopy's count-based ``get_sub_topic_dist``.

    ``score`` estimates the held-out log-likelihood per token by importance
    sampling from the encoder and the prior
    (:func:`~sktopics.model_selection.default_score`). The generative view exposes the
    paths-summed-out likelihood and ``path_mixture()`` for :mod:`sktopics.model_selection`.

    References
    ----------
    .. [1] A. Srivastava and C. Sutton, "Variational Inference in Pachinko
       Allocation Machines", arXiv:1804.07944, 2018.
    .. [2] W. Li and A. McCallum, "Pachinko Allocation: DAG-Structured Mixture
       Models of Topic Correlations", ICML 2006.

    Examples
    --------
    >>> from sktopics import PAMVI
    >>> from sktopics.datasets import make_pam_corpus
    >>> X, _, _ = make_pam_corpus(n_samples=60, n_features=30, structure=(2, 4),
    ...                           random_state=0)
    >>> model = PAMVI(structure=(2, 4), max_iter=5, batch_size=20, device="cpu",
    ...               random_state=0).fit(X)
    >>> model.transform(X).shape
    (60, 4)
    >>> [level.shape for level in model.transform_levels(X)]
    [(60, 2), (60, 4)]
    >>> model.sub_topic_weights_.shape
    (2, 4)
    """

    _parameter_constraints = {
        **PAMTopicModel._parameter_constraints,
        "structure": [tuple, list, dict, PAMStructure, Interval(Integral, 1, None, closed="left")],
        "doc_topic_prior": [Interval(Real, 0, None, closed="neither"), "array-like"],
        "subtopic_prior": [Interval(Real, 0, None, closed="neither"), "array-like"],
    }

    def __init__(
        self,
        structure=(2, 10),
        *,
        doc_topic_prior=1.0,
        subtopic_prior=1.0,
        topic_word_prior=None,
        logvar_norm="batchnorm",
        word_gain=True,
        shift_init="log_frequency",
        hidden_sizes=(100, 100),
        activation="softplus",
        dropout=0.0,
        learning_rate=5e-3,
        adam_betas=(0.99, 0.999),
        batch_size=64,
        max_iter=100,
        batch_sampling="shuffle",
        bn_momentum=1e-3,
        bn_eps=1e-6,
        bn_statistics="recompute",
        clip_grad_norm=None,
        validation_fraction=None,
        n_iter_no_change=10,
        tol=1e-4,
        warm_start=False,
        callbacks=None,
        device="auto",
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.structure = structure
        self.doc_topic_prior = doc_topic_prior
        self.subtopic_prior = subtopic_prior
        self.topic_word_prior = topic_word_prior
        self.logvar_norm = logvar_norm
        self.word_gain = word_gain
        self.shift_init = shift_init
        self.hidden_sizes = hidden_sizes
        self.activation = activation
        self.dropout = dropout
        self.learning_rate = learning_rate
        self.adam_betas = adam_betas
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.batch_sampling = batch_sampling
        self.bn_momentum = bn_momentum
        self.bn_eps = bn_eps
        self.bn_statistics = bn_statistics
        self.clip_grad_norm = clip_grad_norm
        self.validation_fraction = validation_fraction
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.warm_start = warm_start
        self.callbacks = callbacks
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    def _structure(self):
        structure = PAMStructure.from_spec(self.structure)
        if len(structure.levels) < 2:
            raise ValueError(
                f"PAMVI needs at least two levels of topics below the root, e.g. "
                f"structure=(5, 20); got structure={self.structure!r}. One level is LDA with "
                "a logistic-normal prior: use AVITM."
            )
        return structure

    def _level_alphas(self, structure):
        return pam_level_alphas(structure, self.doc_topic_prior, self.subtopic_prior)

    def _build_decoder(self, n_features):
        return GainMixtureDecoder(self.structure_.n_leaf_topics, n_features, self.bn_eps,
                                  self.word_gain, self._initial_shift)
