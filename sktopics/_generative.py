"""The uniform generative view: what evaluation code sees of a fitted model.

Every estimator's ``_generative_view()`` returns a :class:`GenerativeView` made of a
prior over per-document topic proportions and a likelihood of the words given those
proportions. The evaluation code (:mod:`sktopics.model_selection`) consumes only this
object, so it needs no per-estimator code. All arrays are CPU numpy; the ``torch``
methods take tensors on whatever device the caller works on, and convert each array
once per device and dtype (a :class:`~sktopics.utils._torch.TensorCache`), not once
per call: the evaluation engines call them in hot loops.

This module is maths only: it imports numpy and torch, never scikit-learn or skorch.

Capability protocol (what :mod:`sktopics.model_selection` looks for)
---------------------------------------------------------------------
Evaluation never type-checks priors or likelihoods; it asks a view for capabilities,
in this order, and uses the first one present:

1. ``view.path_mixture() -> (phi, alpha_root, alpha_sub) or None`` (PAM, 4-level):
   ``phi`` (T, V) sub-topic/word, ``alpha_root`` (S,), ``alpha_sub`` (S, T). The per-token
   latent is a path (s, t); z-space AIS uses the collapsed conditional
   ``(n_s + alpha_root_s) (n_st + alpha_st) / (n_s + A_s) * phi[t, w]**b``
   (``evaluation.md`` section 5; keep the s-dependent denominator). Views without it
   may omit the method.
2. ``view.token_mixture() -> (phi, alpha) or None``: words are a per-token mixture
   ``theta @ phi`` with ``theta ~ Dirichlet(alpha)``: z-space AIS (theta collapsed),
   left-to-right, ratio-AIS on the geometric and convex paths, iteration-AIS.
3. Otherwise the continuous engine, which needs:
   ``prior.log_prob_h(h)``, ``prior.sample_h(n, generator, device, dtype)`` and
   ``prior.gaussian(device, dtype) -> (mean, var)`` for a diagonal logistic-normal
   prior on ``h`` (``theta = softmax(h)``), or ``prior.alpha``
   (Dirichlet; then the engine works on ``h`` with the log-Jacobian added);
   ``likelihood.log_prob(x, theta)`` differentiable in ``theta`` (torch autograd),
   returning ``(...,)`` for counts ``x`` ``(..., V)`` and ``theta`` ``(..., K)``,
   without the multinomial coefficient by default; optionally
   ``view.proposal(x) -> (loc, scale)`` (an amortised Gaussian q(h | x)) where AIS /
   importance sampling starts.

A new model family (e.g. ``sktopics/_generative_pam.py``) adds prior/likelihood
classes implementing these methods and, for z-space evaluation, a view subclass (or a
``GenerativeView`` whose likelihood carries the method) exposing ``token_mixture`` or
``path_mixture``. Arrays are CPU numpy float64; methods taking tensors must work on
any device and dtype.
"""

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np
import torch

from .utils._torch import TensorCache

__all__ = [
    "DirichletPrior",
    "LogisticNormalPrior",
    "MixtureLikelihood",
    "ProductOfExpertsLikelihood",
    "GenerativeView",
    "laplace_logistic_normal",
    "multinomial_log_coefficient",
]


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

    def sample_theta(self, n, generator=None, device="cpu"):
        alpha = self._tensors.get("alpha", self.alpha, device, torch.float64)
        gamma = torch._standard_gamma(alpha.expand(n, -1).contiguous(), generator=generator)
        return gamma / gamma.sum(-1, keepdim=True)


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
        ``p(words | theta)``.
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

    def path_mixture(self):
        """``(phi, alpha_root, alpha_sub)`` for a PAM view, ``None`` otherwise.

        Delegates to ``likelihood.path_mixture(prior)`` when the likelihood defines
        it (see the capability protocol in the module docstring).
        """
        method = getattr(self.likelihood, "path_mixture", None)
        return None if method is None else method(self.prior)

    def token_mixture(self):
        """``(topic_word, alpha)`` when words are a per-token mixture over topics.

        Enables AIS over topic assignments with theta collapsed (Wallach et al.
        2009). ``None`` for ProdLDA, whose likelihood is not a mixture. For a
        logistic-normal prior, ``alpha`` is the Dirichlet it approximates.
        """
        if not isinstance(self.likelihood, MixtureLikelihood):
            return None
        if isinstance(self.prior, DirichletPrior):
            return self.likelihood.topic_word, self.prior.alpha
        if getattr(self.prior, "approximates", None) is not None:
            return self.likelihood.topic_word, self.prior.approximates
        return None
