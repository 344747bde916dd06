"""MoLDA: a word-level mixture (admixture) of LDAs, trained like aviPAM."""

from numbers import Real

import numpy as np

from .._generative_pam import pam_level_alphas
from ..pam import PAMStructure
from ..utils._sklearn_compat import Interval, check_is_fitted
from ._pam_base import PAMTopicModel
from ._pam_docs import fill_pam_doc
from ._pam_modules import ConcatMixtureDecoder

__all__ = ["MoLDA"]


@fill_pam_doc
class MoLDA(PAMTopicModel):
    """Word-level mixture of LDA models with different numbers of topics (aviPAM).

    Per document, ``theta_r ~ Dir(alpha)`` over the ``M`` components and one
    ``theta_m ~ Dir(alpha_m)`` per component over its own ``K_m`` topics; per word,
    ``m ~ theta_r``, ``z ~ theta_m`` and ``w ~ phi_{m,z}``. It is the PAM whose
    root links to each component's LDA (a 4-PAM with a block-diagonal second
    level), trained by the same structured amortised inference as
    :class:`PAMVI`. Components with few topics tend to take the broad structure,
    freeing the others for finer topics (the paper's MoLDA(10:50)). Each
    component's topics are ``softmax(BN(beta_m))`` with its own batch norm across
    topics.

    Parameters
    ----------
    component_sizes : tuple of int, default=(10, 50)
        Topics per LDA component: ``(10, 50)`` is the paper's MoLDA(10:50).
    doc_topic_prior : float or array-like of shape (n_models,), default=1.0
        The Dirichlet over the components (the root).
    subtopic_prior : float or sequence, default=1.0
        Each component's Dirichlet over its topics: a float for all, or one entry
        per component (a float or an array of that component's length).
    logvar_norm : {"batchnorm", "l2", "none"}, default="batchnorm"
        Normalisation of the encoder heads, as in :class:`PAMVI`.
    {topic_word_prior}
    {word_gain}
    {shift_init}
    {shared_parameters}
    dropout : float, default=0.0
        Drop probability after each level MLP's last hidden layer and on the
        topic weights.

    Attributes
    ----------
    {fitted_attributes}
    components_per_model_ : list of ndarray
        ``components_`` split by component: ``(K_m, n_features)`` each.
    component_slices_ : list of slice
        Columns of :meth:`transform` (rows of ``components_``) of each component.

    See Also
    --------
    PAMVI : PAM on any layered DAG.
    AVITM : a single LDA trained by autoencoding inference.

    Notes
    -----
    {count_policy}

    :meth:`transform` returns the joint proportions over all the components'
    topics, ``theta_r[m] * theta_m[k]`` with the node distributions at their
    posterior means; :meth:`transform_components` the per-component ``theta_m``
    and :meth:`transform_root` the component weights ``theta_r``. There is no
    ``predict``: MoLDA is a transformer. ``score`` estimates the held-out log-likelihood per token
    (:func:`~sktopics.model_selection.default_score`).

    References
    ----------
    .. [1] A. Srivastava and C. Sutton, "Variational Inference in Pachinko
       Allocation Machines", arXiv:1804.07944, 2018.

    Examples
    --------
    >>> from sktopics import MoLDA
    >>> from sktopics.datasets import make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_samples=60, n_features=30, n_components=4,
    ...                           random_state=0)
    >>> model = MoLDA(component_sizes=(2, 4), max_iter=5, batch_size=20, device="cpu",
    ...               random_state=0).fit(X)
    >>> model.transform(X).shape
    (60, 6)
    >>> [theta.shape for theta in model.transform_components(X)]
    [(60, 2), (60, 4)]
    """

    _parameter_constraints = {
        **PAMTopicModel._parameter_constraints,
        "component_sizes": [tuple, list],
        "doc_topic_prior": [Interval(Real, 0, None, closed="neither"), "array-like"],
        "subtopic_prior": [Interval(Real, 0, None, closed="neither"), tuple, list],
    }

    def __init__(
        self,
        component_sizes=(10, 50),
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
        self.component_sizes = component_sizes
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

    # ------------------------------------------------------------ structure
    def _sizes(self):
        sizes = tuple(self.component_sizes)
        if not sizes or any(
            isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1 for k in sizes
        ):
            raise ValueError(
                "component_sizes must be a non-empty tuple of positive ints (topics per LDA "
                f"component), e.g. (10, 50); got {self.component_sizes!r}."
            )
        return tuple(int(k) for k in sizes)

    def _structure(self):
        return PAMStructure.mixture(self._sizes())

    def _level_alphas(self, structure):
        sizes = self._sizes()
        prior = self.subtopic_prior
        if not isinstance(prior, (tuple, list)):
            return pam_level_alphas(structure, self.doc_topic_prior, prior)
        if len(prior) != len(sizes):
            raise ValueError(
                f"subtopic_prior needs one entry per component ({len(sizes)}); got "
                f"{len(prior)}."
            )
        full = np.ones((len(sizes), sum(sizes)))
        start = 0
        for m, (size, value) in enumerate(zip(sizes, prior)):
            value = np.asarray(value, dtype=np.float64)
            if value.ndim > 1 or (value.ndim == 1 and value.shape[0] != size):
                raise ValueError(
                    f"subtopic_prior[{m}] must be a float or an array of {size} values; "
                    f"got shape {value.shape}."
                )
            full[m, start:start + size] = value
            start += size
        return pam_level_alphas(structure, self.doc_topic_prior, full)

    def _build_decoder(self, n_features):
        return ConcatMixtureDecoder(self._sizes(), n_features, self.bn_eps, self.word_gain,
                                    self._initial_shift)

    # ------------------------------------------------------------- read-outs
    @property
    def component_slices_(self):
        check_is_fitted(self, "components_")
        slices, start = [], 0
        for size in self.structure_.n_children(1):
            slices.append(slice(start, start + int(size)))
            start += int(size)
        return slices

    @property
    def components_per_model_(self):
        return [self.components_[s] for s in self.component_slices_]

    def transform_root(self, X):
        """Per-document weights of the components, ``theta_r``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.

        Returns
        -------
        weights : ndarray of shape (n_samples, n_models)
            Rows sum to 1.
        """
        return self.transform_levels(X)[0]

    def transform_components(self, X):
        """Each component's own topic proportions ``theta_m``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.

        Returns
        -------
        proportions : list of ndarray
            One ``(n_samples, K_m)`` array per component; rows sum to 1.
        """
        nodes = self.transform_nodes(X)[1]
        return [nodes[:, m, s] for m, s in enumerate(self.component_slices_)]
