"""The generative view: what evaluation code sees of a fitted model.

Every estimator's ``_generative_view()`` returns an object following the
:class:`GenerativeModel` protocol: a prior over per-document topic proportions, a
likelihood of the words given them, the vocabulary size, and the capabilities the
evaluators of :mod:`sktopics.model_selection` dispatch on. The evaluators consume
only this object, never an estimator's class. All arrays are CPU numpy; the
``torch`` methods take tensors on whatever device the caller works on, and convert
each array once per device and dtype (a :class:`~sktopics.utils._modules.TensorCache`),
not once per call: the evaluation engines call them in hot loops.

This module is maths only: it imports numpy and torch, never scikit-learn or skorch.

The protocol (public as ``sktopics.model_selection.GenerativeModel``)
----------------------------------------------------------------------
The evaluators ask a view, in this order, and use the first capability present:

1. ``view.token_mixture(approximate=...) -> TokenMixture or None``: words are a
   per-token mixture ``theta @ topic_word`` with ``theta ~ Dirichlet(alpha)``:
   z-space AIS (theta collapsed), left-to-right, ratio-AIS, iteration-AIS.
2. ``view.path_mixture(approximate=...) -> PathMixture or None`` (two-level PAM):
   ``topic_word`` (T, V), ``root_prior`` (S,), ``subtopic_prior`` (S, T) with zeros
   on absent edges; the per-token latent is a path (s, t), the collapsed conditional
   ``(n_s + alpha_root_s) (n_st + alpha_st) / (n_s + A_s) * phi[t, w]**b``, with
   ``A_s`` the sum of super-topic s's Dirichlet (keep that s-dependent denominator).
3. Otherwise the continuous engine (HMC over ``h``, ``theta = prior.to_theta(h)``,
   softmax by default), which needs ``prior.gaussian(device, dtype) -> (mean, var)``
   and ``prior.log_prob_h(h)`` for a diagonal logistic-normal prior,
   ``likelihood.log_prob(x, theta)`` differentiable in ``theta`` (no multinomial
   coefficient by default), and optionally ``view.proposal(x) -> (loc, scale)`` (an
   amortised Gaussian q(h | x), where AIS and importance sampling start).

``approximate`` is the one modelling choice the evaluators make: the neural models
(AVITM, PAMVI, MoLDA) train with logistic-normal priors that stand for Dirichlets
(their Laplace approximations). ``approximate=True`` (the evaluators' default,
``dirichlet_approximation=True``) evaluates the model with those Dirichlets, whose
assignments can be collapsed; ``approximate=False`` returns a mixture only when the
prior *is* a Dirichlet, so the evaluators fall through to the continuous engine and
evaluate the model as trained.

The capabilities are duck-typed, one method per part: a prior says which Dirichlet
it is or stands for (``prior.dirichlet(approximate)``), a likelihood whether its
words are a mixture over topics (``likelihood.mixture_topics()``). A new model
family adds prior/likelihood classes implementing these methods; nothing in the
evaluators changes. ``tests/test_generative_protocol.py`` checks every estimator's
view against the protocol.
"""

from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional, Protocol, runtime_checkable

import numpy as np
import torch

from .utils._modules import TensorCache

__all__ = [
    "GenerativeModel",
    "PathMixture",
    "TokenMixture",
    "DirichletPrior",
    "LogisticNormalPrior",
    "MixtureLikelihood",
    "ProductOfExpertsLikelihood",
    "GenerativeView",
    "laplace_logistic_normal",
    "multinomial_log_coefficient",
]


class TokenMixture(NamedTuple):
    """Words as a per-token mixture over topics under a Dirichlet prior.

    Attributes
    ----------
    topic_word : ndarray of shape (n_topics, n_features)
        Rows sum to 1.
    doc_topic_prior : ndarray of shape (n_topics,)
        The Dirichlet's parameters (positive).
    """

    topic_word: np.ndarray
    doc_topic_prior: np.ndarray


class PathMixture(NamedTuple):
    """A two-level PAM: each token's latent is a path (super-topic s, sub-topic t).

    Attributes
    ----------
    topic_word : ndarray of shape (n_subtopics, n_features)
        The sub-topics' word distributions (rows sum to 1).
    root_prior : ndarray of shape (n_supertopics,)
        The root's Dirichlet over the super-topics.
    subtopic_prior : ndarray of shape (n_supertopics, n_subtopics)
        Each super-topic's Dirichlet over its sub-topics; 0 on absent edges.
    """

    topic_word: np.ndarray
    root_prior: np.ndarray
    subtopic_prior: np.ndarray


@runtime_checkable
class GenerativeModel(Protocol):
    """What the evaluators of :mod:`sktopics.model_selection` need of a fitted model.

    :func:`sktopics.model_selection.generative_view` returns one for every sktopics
    estimator; a user's own model can implement it to be evaluated by the same code.
    See the module docstring of ``sktopics._generative`` (and the user guide,
    "Evaluating topic models") for what each part must do.

    Attributes
    ----------
    n_features : int
        Vocabulary size.
    prior : object
        Prior over a document's topic proportions (``dirichlet(approximate)``; for
        the continuous engine ``gaussian(device, dtype)`` and ``log_prob_h(h)``).
    likelihood : object
        ``log_prob(x, theta)``; ``mixture_topics()`` for mixtures.
    proposal : callable or None
        Amortised posterior ``x -> (loc, scale)`` of the latent, or None.
    """

    n_features: int
    prior: object
    likelihood: object
    proposal: Optional[Callable]

    def token_mixture(self, approximate=True) -> Optional[TokenMixture]:
        """The per-token mixture, or None."""

    def path_mixture(self, approximate=True) -> Optional[PathMixture]:
        """The two-level PAM's paths, or None."""


def laplace_logistic_normal(alpha):
    """Laplace approximation of Dirichlet(alpha) in the softmax basis (MacKay 1998).

    Returns the mean and the diagonal variance of ``h`` such that
    ``softmax(h)`` approximately follows ``Dirichlet(alpha)``:
    ``mu_k = log alpha_k - mean(log alpha)`` and
    ``var_k = (1 / alpha_k) (1 - 2 / K) + (1 / K^2) sum_i 1 / alpha_i``.
    With a single topic ``theta = 1`` whatever ``h`` is, and the formula's zero
    variance is replaced by 1 so that the (constant) KL term stays finite.
    """
    alpha = np.asarray(alpha, dtype=np.float64)
    n_topics = alpha.shape[0]
    log_alpha = np.log(alpha)
    mean = log_alpha - log_alpha.mean()
    var = (1.0 / alpha) * (1.0 - 2.0 / n_topics) + (1.0 / alpha).sum() / n_topics**2
    if n_topics == 1:
        var = np.ones(1)
    return mean, var


def multinomial_log_coefficient(x):
    """``log(N! / prod_w x_w!)`` per document, for (fractional) counts ``x``."""
    n_tokens = x.sum(-1)
    return torch.lgamma(n_tokens + 1) - torch.lgamma(x + 1).sum(-1)


def sequence_log_likelihood(x, log_p, include_coefficient=False):
    """``sum_w x_w log p_w`` per document, optionally with the multinomial coefficient."""
    value = (x * log_p).sum(-1)
    return value + multinomial_log_coefficient(x) if include_coefficient else value


def diagonal_gaussian_log_prob(h, mean, var):
    """log N(h; mean, diag(var)) summed over the last axis."""
    return -0.5 * (((h - mean) ** 2) / var + torch.log(2 * torch.pi * var)).sum(-1)


def diagonal_gaussian_sample(mean, var, n, generator=None):
    """``n`` draws of N(mean, diag(var)) with an explicit generator."""
    noise = torch.randn((n, mean.shape[0]), generator=generator, device=mean.device,
                        dtype=mean.dtype)
    return mean + torch.sqrt(var) * noise


@dataclass(frozen=True)
class DirichletPrior:
    """theta ~ Dirichlet(alpha) over ``K`` topics."""

    alpha: np.ndarray
    _tensors: TensorCache = field(default_factory=TensorCache, init=False, repr=False,
                                  compare=False)

    @property
    def n_topics(self):
        return self.alpha.shape[0]

    def dirichlet(self, approximate=True):
        """The Dirichlet's parameters (this prior is one)."""
        return self.alpha


@dataclass(frozen=True)
class LogisticNormalPrior:
    """theta = softmax(h), h ~ N(mean, diag(var)): the prior AVITM/ProdLDA train with."""

    mean: np.ndarray
    var: np.ndarray
    approximates: Optional[np.ndarray] = None  # the Dirichlet alpha it stands for
    _tensors: TensorCache = field(default_factory=TensorCache, init=False, repr=False,
                                  compare=False)

    @property
    def n_topics(self):
        return self.mean.shape[0]

    def dirichlet(self, approximate=True):
        """The Dirichlet this prior approximates, when ``approximate``; else None."""
        return self.approximates if approximate else None

    def gaussian(self, device, dtype):
        """``(mean, var)`` of the Gaussian on ``h`` as tensors on ``device``."""
        return (self._tensors.get("mean", self.mean, device, dtype),
                self._tensors.get("var", self.var, device, dtype))

    def log_prob_h(self, h):
        return diagonal_gaussian_log_prob(h, *self.gaussian(h.device, h.dtype))

    def sample_h(self, n, generator=None, device="cpu", dtype=torch.float64):
        return diagonal_gaussian_sample(*self.gaussian(device, dtype), n, generator)


@dataclass(frozen=True)
class MixtureLikelihood:
    """Words are drawn from the mixture ``theta @ topic_word`` (LDA, AVITM)."""

    topic_word: np.ndarray  # (K, V), rows sum to 1
    _tensors: TensorCache = field(default_factory=TensorCache, init=False, repr=False,
                                  compare=False)

    def mixture_topics(self):
        """The mixture's topics (K, V): this likelihood is a per-token mixture."""
        return self.topic_word

    def word_probabilities(self, theta):
        return theta @ self._tensors.get("topic_word", self.topic_word, theta.device, theta.dtype)

    def log_prob(self, x, theta, include_coefficient=False):
        """log p(x | theta) for counts ``x`` (..., V) and proportions ``theta`` (..., K)."""
        log_p = torch.log(self.word_probabilities(theta).clamp_min(1e-300))
        return sequence_log_likelihood(x, log_p, include_coefficient)


@dataclass(frozen=True)
class ProductOfExpertsLikelihood:
    """ProdLDA: words from ``softmax(BN_eval(theta @ beta))``.

    ``BN_eval(a) = (a - bn_mean) / sqrt(bn_var + bn_eps) + bn_bias`` per word, with
    the batch-norm statistics frozen at the end of fit.
    """

    beta: np.ndarray  # (K, V) unnormalised
    bn_mean: np.ndarray  # (V,)
    bn_var: np.ndarray  # (V,)
    bn_bias: np.ndarray  # (V,)
    bn_eps: float
    _tensors: TensorCache = field(default_factory=TensorCache, init=False, repr=False,
                                  compare=False)

    def logits(self, theta):
        def t(name):
            return self._tensors.get(name, getattr(self, name), theta.device, theta.dtype)

        scale = torch.rsqrt(t("bn_var") + self.bn_eps)
        return (theta @ t("beta") - t("bn_mean")) * scale + t("bn_bias")

    def word_probabilities(self, theta):
        return torch.softmax(self.logits(theta), dim=-1)

    def log_prob(self, x, theta, include_coefficient=False):
        log_p = torch.log_softmax(self.logits(theta), dim=-1)
        return sequence_log_likelihood(x, log_p, include_coefficient)


@dataclass(frozen=True)
class GenerativeView:
    """A fitted topic model as a prior over theta and a likelihood of words.

    Attributes
    ----------
    prior : DirichletPrior or LogisticNormalPrior
        Prior over a document's topic proportions.
    likelihood : MixtureLikelihood or ProductOfExpertsLikelihood
        ``p(words | theta)``. Implements :class:`GenerativeModel`.
    n_features : int
        Vocabulary size.
    proposal : callable or None
        Amortised posterior ``q(h | x)``: maps a dense count tensor ``(n, V)`` to the
        ``(loc, scale)`` of a diagonal Gaussian over ``h`` (``theta = softmax(h)``).
        Present for the neural models; evaluation may start from it.
    """

    prior: object
    likelihood: object
    n_features: int
    proposal: Optional[Callable] = field(default=None, compare=False)

    @property
    def n_topics(self):
        return self.prior.n_topics

    def path_mixture(self, approximate=True):
        """``None``: a flat model's tokens carry a topic, not a path."""
        return None

    def token_mixture(self, approximate=True):
        """:class:`TokenMixture` when words are a per-token mixture under a Dirichlet.

        Enables AIS over topic assignments with theta collapsed (Wallach et al.
        2009). ``None`` for ProdLDA, whose likelihood is not a mixture. A
        logistic-normal prior (AVITM) gives the Dirichlet it approximates when
        ``approximate``, and ``None`` otherwise.
        """
        topics = getattr(self.likelihood, "mixture_topics", None)
        alpha = self.prior.dirichlet(approximate)
        if topics is None or alpha is None:
            return None
        return TokenMixture(topics(), np.asarray(alpha))
