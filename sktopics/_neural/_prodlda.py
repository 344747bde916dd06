"""ProdLDA: a product-of-experts topic model trained by AEVB (Srivastava & Sutton 2017)."""

import numpy as np
import torch

from .._generative import ProductOfExpertsLikelihood
from ..utils._docstring import fill_doc, replace_entries
from ._data import corpus_word_counts
from ._docs import (
    COUNT_POLICY,
    ENCODER_AND_TRAINING,
    FITTED_ATTRIBUTES,
    FREE_BITS,
    INTERRUPTS,
    batch_parameters,
)
from ._estimator import NeuralTopicModel
from ._modules import ProductOfExpertsDecoder

__all__ = ["ProdLDA"]


#: ``components_`` of a product of experts ranks words; it is no word distribution.
_FITTED_ATTRIBUTES = replace_entries(FITTED_ATTRIBUTES, components_="""
components_ : ndarray of shape (n_components, n_features)
    ``softmax(beta_)``, rows sum to 1: they rank each topic's words, but they
    are not word distributions of the model (see Notes).""")


@fill_doc(shared_parameters=ENCODER_AND_TRAINING, fitted_attributes=_FITTED_ATTRIBUTES,
          count_policy=COUNT_POLICY + INTERRUPTS,
          batch_parameters=batch_parameters(64, "shuffle"),
          free_bits=FREE_BITS)
class ProdLDA(NeuralTopicModel):
    """ProdLDA topic model trained by autoencoding variational Bayes.

    Words of a document are drawn from ``softmax(BN(theta @ beta))``: topics mix
    in natural-parameter space (a weighted product of experts) instead of as a
    mixture (the paper found its topics more coherent than LDA's). ``theta`` has a
    logistic-normal prior, the Laplace approximation of ``Dirichlet(alpha)`` in the
    softmax basis, and its posterior is amortised by an inference network.

    The defaults were chosen by a protocol over six corpora and three seeds
    (K = 50, and 20 and 100 for the finalists; held-out NPMI, topic diversity
    and held-out likelihood; see the user guide): lighter dropout, smaller
    shuffled batches and 50 epochs (more on a small corpus, see ``max_iter``),
    plus free bits in the KL term, which keep short documents from collapsing
    to the prior. ``ProdLDA.from_preset("avitm")`` reproduces the original AVITM
    code knob by knob (dropout 0.6, batches of 200 drawn with replacement, 100
    epochs, the ELBO without free bits). Either way inference uses batch-norm
    statistics measured over the whole training set at the end of fit
    (``bn_statistics``).

    Presets (:meth:`from_preset`): ``"avitm"``, the paper's configuration.

    Parameters
    ----------
    n_components : int, default=10
        Number of topics (the AVITM experiments use 50 and 200).
    doc_topic_prior : float or array-like of shape (n_components,), default=1.0
        Dirichlet parameter ``alpha`` approximated by the logistic-normal prior
        (AVITM: 1.0, fixed, not learned).
    {shared_parameters}
    dropout : float, default=0.2
        Drop probability after the encoder's last hidden layer and on ``theta``
        (the original code: 0.6, ``keep_prob=0.4``). Heavy dropout on ``theta``
        forces every topic to explain a document on its own, which makes topics
        near-duplicates.
    {batch_parameters}
    {free_bits}
    word_background : bool, default=False
        Add the log training-set word frequencies as a fixed bias to the decoder
        logits (as Scholar does). Frequent words are then explained by the
        background rather than by every topic, which raises topic diversity.
        Not in the original model.

    Attributes
    ----------
    {fitted_attributes}
    beta_ : ndarray of shape (n_components, n_features)
        Raw (unnormalised) topic-word logits of the decoder;
        ``components_ = softmax(beta_)`` (see Notes).

    See Also
    --------
    AVITM : LDA trained by the same autoencoding variational inference.
    LDAGibbs : collapsed-Gibbs LDA.

    Notes
    -----
    {count_policy}

    **What** ``components_`` **means.** A product of experts has no topic-word
    distributions: each topic adds its row of logits ``beta_`` to a document's
    word logits, weighted by the document's proportion of it, and the batch norm
    of the decoder rescales the sum word by word. ``components_ = softmax(beta_)``
    ranks each topic's words as the original code did (the ranking that
    ``top_words``, NPMI and topic diversity read), but its values are close to
    uniform (the batch norm makes the scale of ``beta_`` irrelevant) and are not
    probabilities the model generates. The words the model gives a document made
    of topic ``k`` alone are ``softmax((beta_[k] - m) / s + b)``, with the
    decoder's batch-norm statistics ``m``, ``s`` (measured at the end of fit) and
    shift ``b``: :func:`~sktopics.inspection.to_pyldavis` exports those, and
    :class:`~sktopics.inspection.TopicWordsDisplay` draws ``beta_`` over each
    topic's mean logit.

    ``transform`` returns ``softmax(mu(x))``, the softmax of the posterior mean of
    the logistic-normal latent. ``score`` estimates the held-out log-likelihood
    per token of the token sequence by importance sampling with 64 draws from
    an even mixture of the encoder's posterior and the prior (fixed seed, so
    repeated calls agree; see :func:`~sktopics.model_selection.default_score`);
    :func:`~sktopics.model_selection.ais_log_likelihood` gives tighter estimates.

    References
    ----------
    .. [1] A. Srivastava and C. Sutton, "Autoencoding Variational Inference for
       Topic Models", ICLR 2017.

    Examples
    --------
    >>> from sktopics import ProdLDA
    >>> from sktopics.datasets import make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_samples=60, n_features=30, n_components=3,
    ...                           random_state=0)
    >>> model = ProdLDA(n_components=3, max_iter=5, batch_size=20, device="cpu",
    ...                 random_state=0).fit(X)
    >>> model.transform(X[:2]).shape
    (2, 3)
    """

    _parameter_constraints = {
        **NeuralTopicModel._parameter_constraints,
        "word_background": ["boolean"],
    }

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
        word_background=False,
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
        self.word_background = word_background
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

    shared_noise = False  # ProdLDA draws one noise vector per document

    #: Named parameter sets of :meth:`from_preset`.
    PRESETS = {
        "avitm": {"dropout": 0.6, "batch_size": 200, "batch_sampling": "with_replacement",
                  "max_iter": 100, "free_bits": 0.0},
    }

    _steps_by_length = True

    def _fit(self, X, seed, *, warm, **options):
        if self.word_background and not (warm and hasattr(self, "net_")):
            frequencies = corpus_word_counts(X) + 1.0
            self._background = np.log(frequencies / frequencies.sum())
        return super()._fit(X, seed, warm=warm, **options)

    def _configure_module(self, module, n_train_documents):
        module.free_bits = self.free_bits

    def _build_decoder(self, n_features):
        background = getattr(self, "_background", None) if self.word_background else None
        return ProductOfExpertsDecoder(
            self.n_components, n_features, self.bn_eps, self.bn_momentum, background
        )

    def _topic_word(self):
        beta = self.net_.module_.decoder.beta.detach().double().cpu()
        self.beta_ = beta.numpy().copy()
        return torch.softmax(beta, dim=-1).numpy()

    def _topic_word_scores(self):
        """What ranks each topic's words, for displays: ``beta_`` less each topic's
        mean logit, and the axis label that says so."""
        return (self.beta_ - self.beta_.mean(axis=1, keepdims=True),
                "logit beta_ over the topic's mean")

    def _topic_term_distributions(self):
        """The word distribution of a document made of topic ``k`` alone, per topic.

        ``softmax((beta_k - m) / sqrt(v + eps) + b)``: the fitted decoder at
        ``theta = e_k``, with the batch-norm statistics ``m``, ``v`` frozen at the
        end of fit and the shift ``b`` (plus the word background). Sharp, unlike
        ``components_``, and what the pyLDAvis export shows.
        """
        likelihood = self._likelihood()
        with torch.no_grad():
            return likelihood.word_probabilities(
                torch.eye(self.n_components, dtype=torch.float64)).numpy()

    def _likelihood(self):
        decoder = self.net_.module_.decoder
        return ProductOfExpertsLikelihood(
            beta=self.beta_.copy(),
            bn_mean=decoder.bn.running_mean.double().cpu().numpy(),
            bn_var=decoder.bn.running_var.double().cpu().numpy(),
            bn_bias=(decoder.bn.bias + decoder.background).detach().double().cpu().numpy(),
            bn_eps=float(decoder.bn.eps),
        )
