"""What the evaluators are given: a model's generative view and the counts to score."""

import numpy as np
import scipy.sparse as sp

from .._generative import DirichletPrior, GenerativeView, MixtureLikelihood
from ..utils._pipeline import final_estimator
from ..utils._validation import check_counts, check_doc_topic_prior, check_topic_word

__all__ = ["check_eval_counts", "generative_view", "latent_of", "topic_distributions"]


def generative_view(estimator):
    """The generative view of a fitted model: what the evaluators see of it.

    Parameters
    ----------
    estimator : estimator, Pipeline, view or (topic_word, alpha) tuple
        A fitted sktopics estimator (anything with ``_generative_view()``), a
        :class:`~sklearn.pipeline.Pipeline` ending in one, a view (returned as
        is), or a pair ``(topic_word, alpha)`` describing LDA with a Dirichlet prior.

    Returns
    -------
    view : GenerativeView or PAMGenerativeView
        An object following the protocol of :mod:`sktopics._generative`
        (``token_mixture()``, ``path_mixture()``, ``prior``, ``likelihood``,
        ``n_features``, ``proposal``).
    """
    if isinstance(estimator, GenerativeView) or all(
        hasattr(estimator, a) for a in ("prior", "likelihood", "n_features", "token_mixture")
    ):
        return estimator
    if isinstance(estimator, tuple) and len(estimator) == 2:
        phi = topic_distributions(estimator[0])
        alpha = check_doc_topic_prior(estimator[1], phi.shape[0], name="alpha")
        return GenerativeView(
            prior=DirichletPrior(np.array(alpha)),
            likelihood=MixtureLikelihood(phi),
            n_features=phi.shape[1],
        )
    estimator = final_estimator(estimator)
    if hasattr(estimator, "_generative_view"):
        return estimator._generative_view()
    raise TypeError(
        f"{type(estimator).__name__} exposes no generative view: pass a fitted sktopics "
        "estimator, a Pipeline ending in one, a GenerativeView or (topic_word, alpha)."
    )


def topic_distributions(topic_word, name="topic_word"):
    """The rows of a topic-word matrix (or a model's, or a Pipeline's) as distributions.

    Parameters
    ----------
    topic_word : estimator, Pipeline or array-like of shape (n_topics, n_words)
        Non-negative, with no all-zero row.
    name : str, default="topic_word"
        The argument's name, for messages.

    Returns
    -------
    topic_word : ndarray of shape (n_topics, n_words)
        Float64, rows summing to 1.
    """
    phi = check_topic_word(topic_word, name=name)
    if np.any(phi < 0) or np.any(phi.sum(1) <= 0):
        raise ValueError(f"{name} must be non-negative with no all-zero row.")
    return phi / phi.sum(1, keepdims=True)


def check_eval_counts(X, n_features, integer=True, owner="this estimator"):
    """Held-out counts as float64 CSR over the model's vocabulary (the shared policy)."""
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
    else:
        X = np.asarray(X, dtype=np.float64)
    return check_counts(X, owner=owner, n_features=n_features, integer_counts=integer)


def latent_of(view, dirichlet_approximation=True):
    """What the evaluators anneal for ``view``: ``(kind, mixture, prior)``.

    ``kind`` is ``"topics"`` (a :class:`~sktopics._generative.TokenMixture`),
    ``"paths"`` (a :class:`~sktopics._generative.PathMixture`) or ``"continuous"``
    (``mixture`` None); ``prior`` says which prior is evaluated, for the results'
    ``settings``: ``"dirichlet"``, ``"dirichlet (approximated by the model's
    logistic-normal prior)"`` or ``"as trained"``.
    """
    approximate = bool(dirichlet_approximation)
    mixture = view.token_mixture(approximate=approximate)
    kind = "topics"
    if mixture is None:
        mixture, kind = view.path_mixture(approximate=approximate), "paths"
    if mixture is None:
        return "continuous", None, "as trained"
    exact = (view.token_mixture(approximate=False) if kind == "topics"
             else view.path_mixture(approximate=False))
    prior = "dirichlet" if exact is not None else (
        "dirichlet (approximated by the model's logistic-normal prior)")
    return kind, mixture, prior
