"""scikit-learn scorers: ``scorer(estimator, X, y=None)``, greater is better.

Every scorer unwraps a :class:`~sklearn.pipeline.Pipeline`: ``X`` is transformed by
the leading steps (e.g. a ``CountVectorizer``) and the model is the last step. They
are plain picklable objects, so they work in ``GridSearchCV`` / ``cross_validate``
with ``n_jobs > 1`` and as entries of a multi-metric ``scoring`` dict. Keyword
arguments are checked when the scorer is made, so a typo fails at once rather than
as NaN scores inside a grid search.

With ``return_stderr=True`` a scorer returns ``{"score": ..., "stderr": ...,
"bias": ...}``, a multi-metric score that puts the Monte Carlo standard error and a
budget check of every fold's score in ``cv_results_`` (refit on ``"score"``);
:func:`check_ranking` reads them back. The budget check scores the fold a second
time with half the budget (temperatures or particles): these estimators rise
towards the truth with their budget, roughly as 1 / budget, so the rise from half
to the full budget estimates the bias left at the full one.
"""

import inspect
import numbers
import warnings

import numpy as np

from ..utils._pipeline import final_estimator, split_pipeline
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from ..utils._warnings import warn
from ._ais import ais_log_likelihood
from ._left_to_right import left_to_right_log_likelihood
from ._ratio_ais import ratio_ais

__all__ = [
    "RankingWarning",
    "check_ranking",
    "make_ais_scorer",
    "make_coherence_scorer",
    "make_left_to_right_scorer",
    "make_ratio_ais_scorer",
]


class RankingWarning(UserWarning):
    """The best candidate of a search is not ahead of the next by more than its errors."""


def _check_keywords(function, kwargs, caller):
    """Fail now, not inside a grid search, on keywords ``function`` would reject."""
    signature = inspect.signature(function)
    accepted = [n for n, p in signature.parameters.items() if p.kind is p.KEYWORD_ONLY]
    unknown = sorted(set(kwargs) - set(accepted))
    if unknown:
        raise TypeError(f"{caller} got unexpected keyword argument(s) {unknown}: "
                        f"{function.__name__} accepts {accepted}.")
    constraints = getattr(function, "_skl_parameter_constraints", {})
    validate_parameter_constraints({k: constraints[k] for k in kwargs if k in constraints},
                                   kwargs, caller_name=caller)


def _halved(kwargs, budget):
    """The keyword arguments with half the budget ``budget`` (at least 1), or None."""
    half = kwargs[budget] // 2
    return None if half < 1 else {**kwargs, budget: half}


def _score(run, kwargs, budget, return_stderr):
    """A run's per-token score, or the score with its Monte Carlo and budget errors."""
    result = run(**kwargs)
    if not return_stderr:
        return float(result.per_token)
    half = _halved(kwargs, budget)
    bias = float("nan") if half is None else max(result.per_token - run(**half).per_token, 0.0)
    return {"score": float(result.per_token), "stderr": result.per_token_stderr, "bias": bias}


class _HeldOutScorer:
    def __init__(self, function, kwargs, name, budget, return_stderr=False):
        self.function = function
        self.kwargs = kwargs
        self.name = name
        self.budget = budget
        self.return_stderr = return_stderr

    def __call__(self, estimator, X, y=None):
        model, Xt = split_pipeline(estimator, X)
        return _score(lambda **kw: self.function(model, Xt, **kw), self.kwargs, self.budget,
                      self.return_stderr)

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        extra = ", return_stderr=True" if self.return_stderr else ""
        return f"{self.name}({args}{extra})"


class _RatioScorer(_HeldOutScorer):
    def __init__(self, reference, kwargs, return_stderr=False):
        super().__init__(ratio_ais, kwargs, "make_ratio_ais_scorer", "n_temperatures",
                         return_stderr)
        self.reference = reference

    def __call__(self, estimator, X, y=None):
        reference = final_estimator(self.reference)
        model, Xt = split_pipeline(estimator, X)

        def run(**kwargs):
            with warnings.catch_warnings():  # a candidate may be the reference itself
                warnings.filterwarnings("ignore", message="The forward and reverse runs disagree")
                return ratio_ais(model, reference, Xt, **kwargs)

        return _score(run, self.kwargs, self.budget, self.return_stderr)

    def __repr__(self):
        return f"make_ratio_ais_scorer({type(self.reference).__name__}, {self.kwargs!r})"


class _CoherenceScorer:
    """NPMI scorer; its "never occur in X_ref" warning is given once, not once per fold."""

    def __init__(self, top_n, zero_cooccurrence):
        self.top_n = top_n
        self.zero_cooccurrence = zero_cooccurrence
        self._warned = False

    def __call__(self, estimator, X, y=None):
        from ..metrics import npmi_coherence

        model, Xt = split_pipeline(estimator, X)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = npmi_coherence(model, Xt, top_n=self.top_n,
                                    zero_cooccurrence=self.zero_cooccurrence)
        for w in caught:
            unseen = "never occur in X_ref" in str(w.message)
            if unseen and self._warned:
                continue
            self._warned = self._warned or unseen
            suffix = " (said once per scorer, not for every fold)" if unseen else ""
            warn(f"{w.message}{suffix}", w.category)
        return float(result.mean)

    def __repr__(self):
        return f"make_coherence_scorer(top_n={self.top_n}, zero_cooccurrence={self.zero_cooccurrence!r})"


@validate_params(
    {
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "return_stderr": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_ais_scorer(*, n_temperatures=100, n_chains=4, random_state=0, return_stderr=False,
                    **kwargs):
    """Scorer returning the AIS held-out per-token log-likelihood (greater is better).

    AIS is biased low by an amount that shrinks with ``n_temperatures`` and grows
    with the number of topics, so a small budget favours small models. On the grid
    search of ``research/results/scorer_defaults.md`` (1,500 20 Newsgroups posts,
    K in {5, 10, 20, 40}), 30 temperatures picked K = 10 where a 1,000-particle
    left-to-right run picked K = 40; the default, 100 temperatures x 4 chains,
    picked 40 but closed 60 % of the gap between K = 20 and K = 40 with its bias,
    at 4x the cost of fitting. Prefer :func:`make_left_to_right_scorer` for mixture
    models (it picked 40 at half the cost of fitting); this scorer is the one for
    ProdLDA. With ``return_stderr=True`` it also reports how much its score rises
    from half the temperatures, and :func:`check_ranking` warns when that could
    reverse the ranking.

    Parameters
    ----------
    n_temperatures : int, default=100
        Annealing steps.
    n_chains : int, default=4
        Chains per document.
    random_state : int or None, default=0
        Seed. A fixed seed makes the score deterministic and gives every grid
        candidate the same random numbers (a paired comparison).
    return_stderr : bool, default=False
        Return ``{"score": per-token log-likelihood, "stderr": its Monte Carlo
        standard error, "bias": the score's rise from half the temperatures}`` (per
        token) instead of the score alone, at 1.5 times the cost (see
        :func:`check_ranking`).
    **kwargs : dict
        Other keyword arguments of :func:`ais_log_likelihood` (``schedule``,
        ``kernel``, ``device``, ...), checked now.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``, for ``scoring=`` of scikit-learn's model
        selection tools.
    """
    kw = dict(n_temperatures=n_temperatures, n_chains=n_chains, random_state=random_state, **kwargs)
    _check_keywords(ais_log_likelihood, kw, "make_ais_scorer")
    return _HeldOutScorer(ais_log_likelihood, kw, "make_ais_scorer", "n_temperatures",
                          return_stderr)


@validate_params(
    {
        "n_particles": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_filters": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "return_stderr": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_left_to_right_scorer(*, n_particles=20, n_filters=2, random_state=0,
                              return_stderr=False, **kwargs):
    """Scorer returning the left-to-right (SMC) held-out per-token log-likelihood.

    The recommended scorer for choosing among mixture models (LDAGibbs, AVITM,
    PAMVI, MoLDA): consistent, nearly unbiased already at a few particles, and
    cheaper than fitting. On the grid search of
    ``research/results/scorer_defaults.md`` (1,500 20 Newsgroups posts, K in {5,
    10, 20, 40}) the default picked K = 40 like a 1,000-particle run, within 0.03
    nats per token of it, in 0.45 s per fold against 0.79 s of fitting. ProdLDA
    needs :func:`make_ais_scorer`.

    Parameters
    ----------
    n_particles : int, default=20
        Particles per filter.
    n_filters : int, default=2
        Independent filters per document: two give a standard error.
    random_state : int or None, default=0
        Seed; fixed, so every candidate gets the same random numbers.
    return_stderr : bool, default=False
        Return ``{"score": ..., "stderr": ..., "bias": ...}``, at 1.5 times the cost
        (see :func:`check_ranking` and this module's docstring).
    **kwargs : dict
        Other keyword arguments of :func:`left_to_right_log_likelihood`, checked now.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``.
    """
    kw = dict(n_particles=n_particles, n_filters=n_filters, random_state=random_state, **kwargs)
    _check_keywords(left_to_right_log_likelihood, kw, "make_left_to_right_scorer")
    return _HeldOutScorer(left_to_right_log_likelihood, kw, "make_left_to_right_scorer",
                          "n_particles", return_stderr)


@validate_params(
    {
        "reference": "no_validation",
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "return_stderr": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_ratio_ais_scorer(reference, *, n_temperatures=50, n_chains=4, random_state=0,
                          return_stderr=False, **kwargs):
    """Scorer: per-token log p(X | candidate) - log p(X | reference) by ratio-AIS.

    Positive means the candidate is better than the fixed ``reference``; the ranking
    matches AIS with a far lower variance.

    Parameters
    ----------
    reference : estimator or Pipeline
        A fixed fitted model (a Pipeline's last step is used; the candidate's
        Pipeline transforms ``X``).
    n_temperatures : int, default=50
        Temperatures of the path between the models.
    n_chains : int, default=4
        Chains per document.
    random_state : int or None, default=0
        Seed; fixed, so every candidate gets the same random numbers.
    return_stderr : bool, default=False
        Return ``{"score": ..., "stderr": ..., "bias": ...}``, at 1.5 times the cost
        (see :func:`check_ranking` and this module's docstring).
    **kwargs : dict
        Other keyword arguments of :func:`ratio_ais`, checked now.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``.
    """
    kw = dict(n_temperatures=n_temperatures, n_chains=n_chains, random_state=random_state, **kwargs)
    _check_keywords(ratio_ais, kw, "make_ratio_ais_scorer")
    return _RatioScorer(reference, kw, return_stderr)


@validate_params(
    {
        "top_n": [Interval(numbers.Integral, 2, None, closed="left")],
        "zero_cooccurrence": [StrOptions({"epsilon", "zero"})],
    },
    prefer_skip_nested_validation=True,
)
def make_coherence_scorer(*, top_n=10, zero_cooccurrence="epsilon"):
    """Scorer: mean NPMI of the topics' top words, with the held-out fold as reference.

    Parameters
    ----------
    top_n : int, default=10
        Top words per topic.
    zero_cooccurrence : {"epsilon", "zero"}, default="epsilon"
        As in :func:`sktopics.metrics.npmi_coherence`.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``.
    """
    return _CoherenceScorer(top_n, zero_cooccurrence)


def check_ranking(cv_results, *, score="score", stderr="stderr", bias="bias", n_sigma=2.0):
    """Whether a search's best candidate is ahead of the next by more than the errors.

    Reads ``mean_test_<score>``, the folds' ``split*_test_<stderr>`` and, when
    present, ``mean_test_<bias>`` of a fitted search's ``cv_results_`` (a scorer made
    with ``return_stderr=True``). The Monte Carlo error of a candidate's mean over
    ``k`` folds is ``sqrt(sum of the folds' stderr^2) / k``; its budget bias is
    estimated by the rise of its score from half the budget. The best candidate is
    *settled* when its lead over the next exceeds ``n_sigma`` combined Monte Carlo
    errors plus the difference of their budget biases (an estimator that is biased
    low by more for one candidate can reverse a ranking: AIS with few temperatures
    favours small models). Otherwise a :class:`RankingWarning` says that this
    budget cannot rank them.

    Parameters
    ----------
    cv_results : dict
        ``search.cv_results_``.
    score, stderr, bias : str, default="score", "stderr", "bias"
        The names of the metrics in ``cv_results``; ``bias`` is optional.
    n_sigma : float, default=2.0
        How many combined standard errors a lead must exceed.

    Returns
    -------
    report : dict
        ``best`` and ``runner_up`` (indices into ``cv_results["params"]``),
        ``lead`` (difference of their mean scores), ``error`` (their combined
        standard error), ``bias_gap`` (difference of their budget biases, 0 when
        unknown) and ``settled`` (bool).
    """
    means = np.asarray(cv_results[f"mean_test_{score}"], dtype=float)
    splits = [k for k in cv_results if k.startswith("split") and k.endswith(f"_test_{stderr}")]
    if not splits:
        raise KeyError(f"cv_results has no 'split*_test_{stderr}': score with a scorer made "
                       "with return_stderr=True and refit='score'.")
    per_fold = np.stack([np.asarray(cv_results[k], dtype=float) for k in splits])
    error = np.sqrt(np.nansum(per_fold**2, axis=0)) / per_fold.shape[0]
    biases = np.asarray(cv_results.get(f"mean_test_{bias}", np.zeros_like(means)), dtype=float)
    order = np.argsort(-means)
    if len(order) < 2:
        return {"best": int(order[0]), "runner_up": None, "lead": np.nan, "error": np.nan,
                "bias_gap": 0.0, "settled": True}
    best, runner_up = int(order[0]), int(order[1])
    lead = float(means[best] - means[runner_up])
    combined = float(np.hypot(error[best], error[runner_up]))
    bias_gap = float(np.nan_to_num(abs(biases[best] - biases[runner_up])))
    settled = bool(lead > n_sigma * combined + bias_gap)
    if not settled:
        warn(
            f"The best candidate {cv_results['params'][best]} leads the next, "
            f"{cv_results['params'][runner_up]}, by {lead:.5f} nats per token: not more "
            f"than {n_sigma:g} Monte Carlo standard errors ({combined:.5f}) plus the "
            f"difference of their estimated budget biases ({bias_gap:.5f}). This budget "
            "cannot rank them: raise n_particles / n_temperatures, or treat them as equally "
            "good.",
            RankingWarning)
    return {"best": best, "runner_up": runner_up, "lead": lead, "error": combined,
            "bias_gap": bias_gap, "settled": settled}
