"""scikit-learn scorers: ``scorer(estimator, X, y=None) -> float``, greater is better.

Every scorer unwraps a :class:`~sklearn.pipeline.Pipeline`: ``X`` is transformed by
the leading steps (e.g. a ``CountVectorizer``) and the model is the last step. They
are plain picklable objects, so they work in ``GridSearchCV`` / ``cross_validate``
with ``n_jobs > 1`` and as entries of a multi-metric ``scoring`` dict.
"""

import numbers

from .._evaluation._views import split_pipeline
from ..utils._sklearn_compat import Interval, StrOptions, validate_params
from ._ais import ais_log_likelihood
from ._left_to_right import left_to_right_log_likelihood
from ._ratio_ais import ratio_ais

__all__ = [
    "make_ais_scorer",
    "make_coherence_scorer",
    "make_left_to_right_scorer",
    "make_ratio_ais_scorer",
]


class _HeldOutScorer:
    def __init__(self, function, kwargs, name):
        self.function = function
        self.kwargs = kwargs
        self.name = name

    def __call__(self, estimator, X, y=None):
        model, Xt = split_pipeline(estimator, X)
        return float(self.function(model, Xt, **self.kwargs).per_token)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{self.name}({args})"


class _RatioScorer:
    def __init__(self, reference, kwargs):
        self.reference = reference
        self.kwargs = kwargs

    def __call__(self, estimator, X, y=None):
        model, Xt = split_pipeline(estimator, X)
        reference = self.reference[-1] if hasattr(self.reference, "steps") else self.reference
        return float(ratio_ais(model, reference, Xt, **self.kwargs).per_token)

    def __repr__(self):
        return f"make_ratio_ais_scorer({type(self.reference).__name__}, {self.kwargs!r})"


class _CoherenceScorer:
    def __init__(self, top_n, zero_cooccurrence):
        self.top_n = top_n
        self.zero_cooccurrence = zero_cooccurrence

    def __call__(self, estimator, X, y=None):
        from ..metrics import npmi_coherence

        model, Xt = split_pipeline(estimator, X)
        result = npmi_coherence(model, Xt, top_n=self.top_n,
                                zero_cooccurrence=self.zero_cooccurrence)
        return float(result.mean)

    def __repr__(self):
        return f"make_coherence_scorer(top_n={self.top_n}, zero_cooccurrence={self.zero_cooccurrence!r})"


@validate_params(
    {
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def make_ais_scorer(*, n_temperatures=100, n_chains=4, random_state=0, **kwargs):
    """Scorer returning the AIS held-out per-token log-likelihood (greater is better).

    Keyword arguments are those of :func:`ais_log_likelihood`. The fixed default
    ``random_state=0`` makes the score deterministic and gives every grid candidate
    the same random numbers (a paired comparison).
    """
    kw = dict(n_temperatures=n_temperatures, n_chains=n_chains, random_state=random_state, **kwargs)
    return _HeldOutScorer(ais_log_likelihood, kw, "make_ais_scorer")


@validate_params(
    {
        "n_particles": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def make_left_to_right_scorer(*, n_particles=20, random_state=0, **kwargs):
    """Scorer returning the left-to-right (SMC) per-token log-likelihood."""
    kw = dict(n_particles=n_particles, random_state=random_state, **kwargs)
    return _HeldOutScorer(left_to_right_log_likelihood, kw, "make_left_to_right_scorer")


@validate_params(
    {
        "reference": "no_validation",
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def make_ratio_ais_scorer(reference, *, n_temperatures=50, n_chains=4, random_state=0, **kwargs):
    """Scorer: per-token log p(X | candidate) - log p(X | reference) by ratio-AIS.

    ``reference`` is a fixed fitted model (or Pipeline: its last step is used; the
    candidate's Pipeline transforms ``X``). Positive means the candidate is better;
    the ranking matches AIS with a lower variance. Other keywords are those of
    :func:`ratio_ais`.
    """
    kw = dict(n_temperatures=n_temperatures, n_chains=n_chains, random_state=random_state, **kwargs)
    return _RatioScorer(reference, kw)


@validate_params(
    {
        "top_n": [Interval(numbers.Integral, 2, None, closed="left")],
        "zero_cooccurrence": [StrOptions({"epsilon", "zero"})],
    },
    prefer_skip_nested_validation=True,
)
def make_coherence_scorer(*, top_n=10, zero_cooccurrence="epsilon"):
    """Scorer: mean NPMI of the topics' top words, with the held-out fold as reference."""
    return _CoherenceScorer(top_n, zero_cooccurrence)
