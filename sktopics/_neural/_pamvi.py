"""PAMVI: amortised variational inference for Pachinko Allocation Machines (aviPAM).

Srivastava & Sutton, "Variational Inference in Pachinko Allocation Machines"
(arXiv:1804.07944). The machinery it shares with :class:`~sktopics.MoLDA` is
:class:`~._pam_base.PAMTopicModel`; this module says which DAG, which priors and
which decoder.
"""

from numbers import Integral, Real

from .._generative_pam import pam_level_alphas
from ..pam import PAMStructure
from ..utils._sklearn_compat import Interval
from ._pam_base import PAMTopicModel
from ._pam_docs import fill_pam_doc
from ._pam_modules import GainMixtureDecoder

__all__ = ["PAMVI"]


@fill_pam_doc
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

    Which PAM trainer to use depends on the DAG's size. A collapsed-Gibbs PAM's
    sweep weighs every path of every token, so its cost per token grows with the
    number of paths (the product of the level sizes); PAMVI pays for the DAG once
    per document, in its encoder's dense products, which threads and GPUs run well.
    In one benchmark run (one seed, held-out NPMI in gensim's convention) with few
    super-topics (2 over 50) a Gibbs PAM such as tomotopy's ``PAModel`` gave more
    coherent and more diverse topics at equal CPU time on 20 Newsgroups and NIPS;
    at the paper's 50 super- over 100 sub-topics a PAMVI fit at its defaults with
    ``n_jobs=-1`` (minutes on two CPU cores) had the higher NPMI at equal time on
    both corpora, with lower topic diversity than tomotopy's on 20 Newsgroups. See
    the user guide, "Which to use, by scale".

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
        max_iter="auto",
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
