"""AVITM (NVLDA): LDA trained by autoencoding variational Bayes (Srivastava & Sutton 2017)."""

from .._generative import MixtureLikelihood
from ..utils._distributed import on_rank_zero
from ..utils._docstring import fill_doc
from ..utils._warnings import warn
from ._collapse import proportions_collapse
from ._docs import (
    COUNT_POLICY,
    ENCODER_AND_TRAINING,
    FITTED_ATTRIBUTES,
    FREE_BITS,
    INTERRUPTS,
    batch_parameters,
)
from ._estimator import NeuralTopicModel
from ._modules import MixtureDecoder

__all__ = ["AVITM"]


@fill_doc(shared_parameters=ENCODER_AND_TRAINING, fitted_attributes=FITTED_ATTRIBUTES,
          count_policy=COUNT_POLICY + INTERRUPTS,
          batch_parameters=batch_parameters(64, "shuffle"),
          free_bits=FREE_BITS)
class AVITM(NeuralTopicModel):
    """LDA trained by autoencoding variational inference (the paper's NVLDA).

    Words of a document are drawn from the mixture ``theta @ softmax(BN(beta))``,
    LDA with the topic assignments summed out. ``theta`` has the logistic-normal
    Laplace approximation of ``Dirichlet(alpha)`` as prior and an amortised
    logistic-normal posterior given by an inference network.

    The defaults were chosen by a protocol over five corpora and three seeds
    (held-out NPMI, topic diversity and held-out likelihood; see the user
    guide): lighter dropout, a smaller learning rate, smaller shuffled batches,
    one noise draw per document and 50 epochs (more on a small corpus, see
    ``max_iter``), plus free bits in the KL term
    (as ProdLDA). ``AVITM.from_preset("avitm")`` reproduces the original NVLDA
    code (dropout 0.25, learning rate 1e-2, batches of 200 drawn with
    replacement, one noise draw per batch, 300 epochs, no free bits). Either
    way inference uses batch-norm statistics measured over the training set at
    the end of fit.

    Presets (:meth:`from_preset`): ``"avitm"``, the paper's configuration.

    Parameters
    ----------
    n_components : int, default=10
        Number of topics.
    doc_topic_prior : float or array-like of shape (n_components,), default=1.0
        Dirichlet parameter ``alpha`` approximated by the logistic-normal prior.
    {shared_parameters}
    {batch_parameters}
    {free_bits}
    dropout : float, default=0.2
        Drop probability after the encoder's last hidden layer and on ``theta``
        (the original NVLDA code: 0.25, it keeps 75 %).
    shared_noise : bool, default=False
        Draw one reparameterisation noise vector per batch instead of one per
        document during training, as the original NVLDA code does.

    Attributes
    ----------
    {fitted_attributes}

    See Also
    --------
    ProdLDA : the product-of-experts variant, usually more coherent.
    LDAGibbs : collapsed-Gibbs LDA.

    Notes
    -----
    {count_policy}

    ``components_`` is ``softmax(BN(beta))``, the model's actual topic-word
    distributions (batch norm across topics for each word, using ``beta``'s own
    statistics). ``score`` estimates the held-out log-likelihood
    per token of the token sequence by importance sampling from an even mixture
    of the encoder's posterior and the prior (64 draws, fixed seed; see
    :func:`~sktopics.model_selection.default_score`).

    References
    ----------
    .. [1] A. Srivastava and C. Sutton, "Autoencoding Variational Inference for
       Topic Models", ICLR 2017.

    Examples
    --------
    >>> from sktopics import AVITM
    >>> from sktopics.datasets import make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_samples=60, n_features=30, n_components=3,
    ...                           random_state=0)
    >>> model = AVITM(n_components=3, max_iter=5, batch_size=20, device="cpu",
    ...               random_state=0).fit(X)
    >>> model.components_.sum(axis=1).round(6)
    array([1., 1., 1.])
    """

    _parameter_constraints = {**NeuralTopicModel._parameter_constraints}

    def __init__(
        self,
        n_components=10,
        *,
        doc_topic_prior=1.0,
        hidden_sizes=(100, 100),
        activation="softplus",
        dropout=0.2,
        learning_rate=2e-3,
        adam_betas=(0.99, 0.999),
        batch_size=64,
        max_iter="auto",
        batch_sampling="shuffle",
        bn_momentum=1e-3,
        bn_eps=1e-3,
        bn_statistics="recompute",
        free_bits=0.25,
        shared_noise=False,
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
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
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
        self.free_bits = free_bits
        self.shared_noise = shared_noise
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

    #: Named parameter sets of :meth:`from_preset`.
    PRESETS = {
        "avitm": {"dropout": 0.25, "learning_rate": 1e-2, "batch_size": 200,
                  "batch_sampling": "with_replacement", "shared_noise": True, "max_iter": 300,
                  "free_bits": 0.0},
    }

    def _build_decoder(self, n_features):
        return MixtureDecoder(self.n_components, n_features, self.bn_eps)

    def _configure_module(self, module, n_train_documents):
        module.free_bits = self.free_bits

    def _warn_if_collapsed(self, X=None):
        collapsed, _, message = (False, None, "") if X is None else proportions_collapse(self, X)
        if collapsed:
            if on_rank_zero():
                warn(message, UserWarning)
        else:
            super()._warn_if_collapsed(X)

    def _likelihood(self):
        return MixtureLikelihood(self.components_.copy())
