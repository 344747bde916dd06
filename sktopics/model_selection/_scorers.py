"""scikit-learn scorers: ``scorer(estimator, X, y=None)``, greater is better.

Every scorer unwraps a :class:`~sklearn.pipeline.Pipeline`: ``X`` is transformed by
the leading steps (e.g. a ``CountVectorizer``) and the model is the last step. They
are plain picklable objects, so they work in ``GridSearchCV`` / ``cross_validate``
with ``n_jobs > 1`` and as entries of a multi-metric ``scoring`` dict. Keyword
arguments are checked when the scorer is made, so a typo fails at once rather than
as NaN scores inside a grid search.

With ``return_stderr=True`` a scorer returns a dict, a multi-metric score that puts
the Monte Carlo standard error and a budget check of every fold's score in
``cv_results_``: ``"score"``, ``"stderr"``, ``"bias"`` (the score's rise from half the
budget: temperatures, particles or samples), ``"bias_half"`` (the rise from a quarter
to half the budget, the same check one halving earlier; left out below a budget of
4), ``"budget"`` (the budget used), the same under a name that says which parameter it
is (``"budget_n_particles"``, ``"budget_n_samples"`` or ``"budget_n_temperatures"``: a
search's score dict holds numbers only) and, when the scorer has one, its
``"bias_tolerance"``. :func:`refit_best` (as ``refit=``) and :func:`check_ranking` read
them back in the calling process.

These estimators rise towards the truth with their budget. If they converge like
1 / budget, the rise from half to the full budget estimates the bias left at the full
one, and each rise is half the one before. When the rises shrink more slowly (by a
factor r per doubling), the bias left is the last rise times r / (1 - r), several
times the last rise for r near 1 (importance sampling of a large ProdLDA does this):
:func:`check_ranking` estimates it so from the two rises.

The AIS and importance-sampling scorers check their budget at every call and warn
when the rise exceeds their ``bias_tolerance``; with ``n_temperatures="auto"`` the
AIS scorer doubles the temperatures until the rise is below the tolerance, up to
``max_temperatures``. A warning issued while scoring inside ``GridSearchCV(n_jobs >
1)`` is issued in a worker process (printed on its standard error, not seen by the
caller's warning filters): score with ``return_stderr=True`` and refit with
:func:`refit_best`, which repeats the check in the calling process.
"""

import inspect
import numbers
import warnings

import numpy as np

from ..utils._cv_results import LIKELIHOOD_METRICS
from ..utils._distributed import current_collective, on_rank_zero
from ..utils._pipeline import final_estimator, split_pipeline
from ..utils._sklearn_compat import (
    Interval,
    StrOptions,
    validate_parameter_constraints,
    validate_params,
)
from ..utils._warnings import warn
from ._ais import ais_log_likelihood
from ._importance_sampling import importance_sampling_log_likelihood
from ._left_to_right import left_to_right_log_likelihood
from ._ranking import RankingWarning, _num
from ._ratio_ais import ratio_ais

__all__ = [
    "make_ais_scorer",
    "make_coherence_scorer",
    "make_criteria_scorer",
    "make_diversity_scorer",
    "make_importance_sampling_scorer",
    "make_left_to_right_scorer",
    "make_ratio_ais_scorer",
]


#: The budget an "auto" AIS scorer starts from (with a check at half of it).
AUTO_START = 50

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


def _agreed_split(estimator, X):
    """:func:`split_pipeline`; inside ``data_parallel`` a rank whose leading steps fail
    has every rank raise the same ``ValueError`` instead of leaving the others waiting
    in the evaluation's first exchange."""
    collective = current_collective()
    if collective is None:
        return split_pipeline(estimator, X)
    split, problem = None, None
    try:
        split = split_pipeline(estimator, X)
    except Exception as exc:  # noqa: BLE001 - agreed on, then raised on every rank
        problem = f"the pipeline's leading steps failed: {type(exc).__name__}: {exc}"
    collective.agree(problem)
    return split


class _HeldOutScorer:
    """A held-out likelihood scorer over one budget keyword (``budget``).

    ``bias_tolerance``: when set, every call also scores at half the budget and
    warns if the score rose by more (at every such call, like scikit-learn's
    per-fit warnings; a budget of 1 cannot be checked, which is said too); a budget
    of ``"auto"`` doubles from :data:`AUTO_START` while it does, up to
    ``max_budget``. ``return_stderr``: every call also scores at half and at a
    quarter of the budget (see the module docstring).
    """

    def __init__(self, function, kwargs, name, budget, return_stderr=False,
                 bias_tolerance=None, max_budget=None, remedy="", max_name="max_budget"):
        self.function = function
        self.kwargs = kwargs
        self.name = name
        self.budget = budget
        self.return_stderr = return_stderr
        self.bias_tolerance = bias_tolerance
        self.max_budget = max_budget
        self.remedy = remedy
        self.max_name = max_name

    def __call__(self, estimator, X, y=None):
        model, Xt = _agreed_split(estimator, X)
        return self._score(lambda **kw: self.function(model, Xt, **kw))

    def _run_with_check(self, run):
        """``(result, bias, bias one halving earlier, budget used, capped)``."""
        kwargs = dict(self.kwargs)
        size = kwargs[self.budget]
        nan = float("nan")
        if size == "auto":
            size = min(AUTO_START, self.max_budget)
            lower = run(**{**kwargs, self.budget: max(size // 2, 1)})
            earlier = nan
            if self.return_stderr and size // 4 >= 1:
                quarter = run(**{**kwargs, self.budget: size // 4})
                earlier = max(lower.per_token - quarter.per_token, 0.0)
            while True:
                result = run(**{**kwargs, self.budget: size})
                bias = max(result.per_token - lower.per_token, 0.0)
                if bias <= self.bias_tolerance or 2 * size > self.max_budget:
                    return result, bias, earlier, size, bias > self.bias_tolerance
                lower, size, earlier = result, 2 * size, bias
        result = run(**kwargs)
        bias = earlier = nan
        if (self.return_stderr or self.bias_tolerance is not None) and size // 2 >= 1:
            half = run(**{**kwargs, self.budget: size // 2})
            bias = max(result.per_token - half.per_token, 0.0)
            if self.return_stderr and size // 4 >= 1:
                quarter = run(**{**kwargs, self.budget: size // 4})
                earlier = max(half.per_token - quarter.per_token, 0.0)
        return result, bias, earlier, size, False

    def _score(self, run):
        result, bias, earlier, size, capped = self._run_with_check(run)
        # inside data_parallel the result is every rank's, the same everywhere: say it once
        tell = warn if on_rank_zero() else (lambda message, category: None)
        n_tokens = getattr(result, "n_tokens", None)
        if n_tokens is not None and not np.sum(n_tokens) > 0:
            tell(f"{self.name}: the held-out fold has no tokens, so it has no per-token "
                 "log-likelihood; its score is NaN (use folds with words in them).",
                 UserWarning)
            nan = float("nan")
            return self._output(nan, nan, nan, nan, size)
        if self.bias_tolerance is not None and np.isnan(bias):
            tell(f"{self.name}: with {self.budget}={size} the budget cannot be checked "
                 "(there is no half budget to compare with), so the estimate's bias is "
                 f"unknown. Use {self.budget} >= 2.", RankingWarning)
        elif self.bias_tolerance is not None and bias > self.bias_tolerance:
            cap = (f" (doubled up to its cap, {self.max_name}={self.max_budget})"
                   if capped else "")
            tell(f"{self.name}: the held-out log-likelihood rose by {_num(bias)} nats per "
                 f"token from {self.budget}={max(size // 2, 1)} to {size}{cap}, more than "
                 f"bias_tolerance={self.bias_tolerance:g}. "
                 "The estimate is biased low by at least about as much, and by more for "
                 "larger models, so candidates closer than that may be ranked the wrong "
                 f"way round. {self.remedy}", RankingWarning)
        return self._output(float(result.per_token), result.per_token_stderr, bias, earlier,
                            size)

    def _output(self, score, stderr, bias, earlier, size):
        """The score, or with ``return_stderr`` the dict of every entry."""
        if not self.return_stderr:
            return score
        out = {"score": score, "stderr": stderr, "bias": bias, "bias_half": earlier,
               "budget": float(size), f"budget_{self.budget}": float(size)}
        if size < 4:  # no quarter budget: left out rather than NaN in every fold
            del out["bias_half"]
        if self.bias_tolerance is not None:
            out["bias_tolerance"] = float(self.bias_tolerance)
        return out

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        extra = ", return_stderr=True" if self.return_stderr else ""
        if self.bias_tolerance is not None:
            extra += f", bias_tolerance={self.bias_tolerance!r}"
        if self.kwargs.get(self.budget) == "auto":
            extra += f", {self.max_name}={self.max_budget!r}"
        return f"{self.name}({args}{extra})"


class _RatioScorer(_HeldOutScorer):
    def __init__(self, reference, kwargs, return_stderr=False):
        super().__init__(ratio_ais, kwargs, "make_ratio_ais_scorer", "n_temperatures",
                         return_stderr)
        self.reference = reference

    def __call__(self, estimator, X, y=None):
        reference = final_estimator(self.reference)
        model, Xt = _agreed_split(estimator, X)

        def run(**kwargs):
            with warnings.catch_warnings():  # a candidate may be the reference itself
                warnings.filterwarnings("ignore", message="The forward and reverse runs disagree")
                return ratio_ais(model, reference, Xt, **kwargs)

        return self._score(run)

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

        model, Xt = _agreed_split(estimator, X)
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
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left"),
                           StrOptions({"auto"})],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "bias_tolerance": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "max_temperatures": [Interval(numbers.Integral, 2, None, closed="left")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "return_stderr": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_ais_scorer(*, n_temperatures=100, n_chains=4, bias_tolerance=0.01,
                    max_temperatures=1600, random_state=0, return_stderr=False, **kwargs):
    """Scorer returning the AIS held-out per-token log-likelihood (greater is better).

    AIS from the prior is biased low by an amount that shrinks slowly with
    ``n_temperatures`` (roughly as one over it) and grows with the number of
    topics, so a small budget favours small models. The scorer therefore checks
    its own budget at every call: it also scores at half the temperatures, and
    when the score rose by more than ``bias_tolerance`` nats per token it issues a
    :class:`RankingWarning` naming the remedies (at every such call; inside
    ``GridSearchCV(n_jobs > 1)`` in the worker processes, so score with
    ``return_stderr=True`` and refit with :func:`refit_best` to be told in the
    calling process). With ``n_temperatures="auto"`` candidates may be scored at
    different budgets (a large model needs more temperatures), so their scores are
    no longer a paired comparison with the same random numbers; ``return_stderr=True``
    records each fold's budget (``"budget"``). With
    ``n_temperatures="auto"`` it doubles the temperatures, from 50, until the rise
    is below the tolerance or the next budget would pass ``max_temperatures``.

    For mixture models (LDAGibbs, AVITM, PAMVI, MoLDA) prefer
    :func:`make_left_to_right_scorer`, and for ProdLDA
    :func:`make_importance_sampling_scorer`: the user guide's "Choosing the number
    of topics" measures what each costs and picks.

    Parameters
    ----------
    n_temperatures : int or "auto", default=100
        Annealing steps, or ``"auto"``: doubled from 50 until the budget check
        passes, up to ``max_temperatures``.
    n_chains : int, default=4
        Chains per document.
    bias_tolerance : float or None, default=0.01
        Nats per token. The score's rise from half the temperatures estimates the
        bias left at the full budget; above this the scorer warns (and ``"auto"``
        doubles). Candidates whose scores differ by less than the bias may be
        ranked the wrong way round. ``None`` skips the check and its cost (half a
        score more).
    max_temperatures : int, default=1600
        The cap of ``n_temperatures="auto"``.
    random_state : int or None, default=0
        Seed. A fixed seed makes the score deterministic and gives every grid
        candidate the same random numbers (a paired comparison).
    return_stderr : bool, default=False
        Return ``{"score": per-token log-likelihood, "stderr": its Monte Carlo
        standard error, "bias": the score's rise from half the temperatures,
        "bias_half": the rise from a quarter to half, "budget": the temperatures
        used, "bias_tolerance": ...}`` (per token) instead of the score alone, at
        1.75 times the cost (see :func:`refit_best` and :func:`check_ranking`).
    **kwargs : dict
        Other keyword arguments of :func:`ais_log_likelihood` (``schedule``,
        ``kernel``, ``device``, ...), checked now.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``, for ``scoring=`` of scikit-learn's model
        selection tools.
    """
    if n_temperatures == "auto" and bias_tolerance is None:
        raise ValueError("n_temperatures='auto' needs a bias_tolerance to stop at.")
    kw = dict(n_temperatures=n_temperatures, n_chains=n_chains, random_state=random_state, **kwargs)
    _check_keywords(ais_log_likelihood, {**kw, "n_temperatures": 2}, "make_ais_scorer")
    return _HeldOutScorer(
        ais_log_likelihood, kw, "make_ais_scorer", "n_temperatures", return_stderr,
        bias_tolerance=bias_tolerance, max_budget=max_temperatures, max_name="max_temperatures",
        remedy=("Raise n_temperatures (n_temperatures='auto' doubles it until the rise is "
                "below the tolerance), or score mixture models with "
                "make_left_to_right_scorer() and ProdLDA with "
                "make_importance_sampling_scorer()."))


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
    PAMVI, MoLDA): consistent, with a small bias already at a few particles, and
    cheaper than fitting. In a grid search over K on raw 20 Newsgroups posts the
    default picked the K that a run with far more particles picked, where AIS at a
    few dozen temperatures picked a smaller one; in the choosing-K benchmark
    (:ref:`bench-scorers`) it ranks the candidates like a reference run of two filters
    of 400 particles, for less CPU time than fitting takes. ProdLDA, which has no
    per-token topics, needs :func:`make_importance_sampling_scorer`.

    Parameters
    ----------
    n_particles : int, default=20
        Particles per filter.
    n_filters : int, default=2
        Independent filters per document: two give a standard error.
    random_state : int or None, default=0
        Seed; fixed, so every candidate gets the same random numbers.
    return_stderr : bool, default=False
        Return ``{"score": ..., "stderr": ..., "bias": ..., ...}``, at 1.75 times
        the cost (see :func:`check_ranking` and this module's docstring).
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
        "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        "bias_tolerance": [None, Interval(numbers.Real, 0, None, closed="neither")],
        "random_state": [None, Interval(numbers.Integral, 0, None, closed="left")],
        "return_stderr": ["boolean"],
    },
    prefer_skip_nested_validation=True,
)
def make_importance_sampling_scorer(*, n_samples=64, bias_tolerance=0.01, random_state=0,
                                    return_stderr=False, **kwargs):
    """Scorer: held-out per-token log-likelihood by importance sampling from the encoder.

    The recommended scorer for ProdLDA (and the neural models evaluated as
    trained): each document's latent is sampled from the defensive mixture of the
    encoder's proposal and the prior (:func:`importance_sampling_log_likelihood`).
    On 5,000 short posts (K in {5, 10, 20, 40}, one fold) 16 to 1,024 samples all
    gave the same order, the default 64 at 0.4-0.5 times the CPU time of fitting,
    where the AIS scorer took 32 times (K = 5; the user guide, "Choosing the number
    of topics"). That order is not established as the true one: there is no
    independent reference, and the K = 40 estimate was still rising at 1,024
    samples (by 0.04 nats per token per fourfold budget, far slower than
    1 / budget), so its gap to K = 20 halved between 64 and 1,024 samples. The
    log is biased low, by more for larger models: like the AIS scorer this one
    checks its budget at every call (``bias_tolerance``), and with
    ``return_stderr=True`` :func:`refit_best` also reports estimates that converge
    more slowly than 1 / budget.

    Parameters
    ----------
    n_samples : int, default=64
        Importance samples per document.
    bias_tolerance : float or None, default=0.01
        Nats per token. Every call also scores at half the samples; when the score
        rose by more, the scorer issues a :class:`RankingWarning`. ``None`` skips
        the check and its cost (half a score more).
    random_state : int or None, default=0
        Seed; fixed, so every candidate gets the same random numbers.
    return_stderr : bool, default=False
        Return ``{"score": ..., "stderr": ..., "bias": ..., ...}``, the bias being
        the score's rise from half the samples, at 1.75 times the cost (see
        :func:`refit_best` and this module's docstring).
    **kwargs : dict
        Other keyword arguments of :func:`importance_sampling_log_likelihood`,
        checked now.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``.
    """
    kw = dict(n_samples=n_samples, random_state=random_state, **kwargs)
    _check_keywords(importance_sampling_log_likelihood, kw, "make_importance_sampling_scorer")
    return _HeldOutScorer(importance_sampling_log_likelihood, kw,
                          "make_importance_sampling_scorer", "n_samples", return_stderr,
                          bias_tolerance=bias_tolerance,
                          remedy="Raise n_samples, or compare the candidates as equally good.")


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
        Return ``{"score": ..., "stderr": ..., "bias": ..., ...}``, at 1.75 times
        the cost (see :func:`check_ranking` and this module's docstring).
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


class _DiversityScorer:
    def __init__(self, top_n):
        self.top_n = top_n

    def __call__(self, estimator, X=None, y=None):
        from ..metrics import topic_diversity

        return float(topic_diversity(final_estimator(estimator), top_n=self.top_n))

    def __repr__(self):
        return f"make_diversity_scorer(top_n={self.top_n})"


@validate_params(
    {"top_n": [Interval(numbers.Integral, 1, None, closed="left")]},
    prefer_skip_nested_validation=True,
)
def make_diversity_scorer(*, top_n=25):
    """Scorer: the share of distinct words among the topics' top words (greater is better).

    :func:`sktopics.metrics.topic_diversity` of the fitted model (a Pipeline's last
    step); the held-out fold is not used. With the likelihood and coherence
    scorers in one ``scoring`` dict it shows the third side of a choice of K:
    large models fit held-out text better but repeat their words across topics.

    Parameters
    ----------
    top_n : int, default=25
        Top words per topic.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)``.
    """
    return _DiversityScorer(top_n)


class _CriteriaScorer:
    def __init__(self, likelihood, others):
        self.likelihood = likelihood
        self.others = others

    def __call__(self, estimator, X, y=None):
        out = {}
        if self.likelihood is not None:
            got = self.likelihood(estimator, X, y)
            out.update(got if isinstance(got, dict) else {"score": got})
        for name, scorer in self.others.items():
            out[name] = float(scorer(estimator, X, y))
        return out

    def __repr__(self):
        others = "".join(f", {n}={s!r}" for n, s in self.others.items())
        return f"make_criteria_scorer({self.likelihood!r}{others})"


@validate_params(
    {"likelihood": [None, callable]},
    prefer_skip_nested_validation=True,
)
def make_criteria_scorer(likelihood=None, **others):
    """One ``scoring`` callable for a search: a likelihood with its errors, and other criteria.

    scikit-learn's multi-metric ``scoring`` dict takes scorers that return one
    number; a likelihood scorer made with ``return_stderr=True`` returns three. This
    scorer returns them all in one dict: ``"score"``, ``"stderr"`` and ``"bias"``
    from ``likelihood`` (``"score"`` alone if it returns a number), and one entry
    per keyword of ``others`` (e.g. coherence and diversity). Refit with
    :func:`refit_best` (it ranks by ``"score"``) and draw the criteria against the
    searched parameter with :class:`~sktopics.inspection.CriteriaDisplay`.

    Parameters
    ----------
    likelihood : scorer or None, default=None
        E.g. ``make_left_to_right_scorer(return_stderr=True)``.
    **others : scorers
        Each returns a number, e.g. ``coherence=make_coherence_scorer()``,
        ``diversity=make_diversity_scorer()``; the keyword names the metric. The
        names ``"score"``, ``"stderr"``, ``"bias"``, ``"bias_half"``, ``"budget"``,
        ``"budget_<parameter>"`` and ``"bias_tolerance"`` are the likelihood's.

    Returns
    -------
    scorer : callable
        ``scorer(estimator, X, y=None)`` returning a dict.

    Examples
    --------
    >>> from sktopics.model_selection import (make_coherence_scorer, make_criteria_scorer,
    ...                                       make_diversity_scorer, make_left_to_right_scorer)
    >>> scoring = make_criteria_scorer(make_left_to_right_scorer(return_stderr=True),
    ...                                coherence=make_coherence_scorer(),
    ...                                diversity=make_diversity_scorer())
    """
    clash = sorted(set(others) & set(LIKELIHOOD_METRICS))
    if clash:
        raise ValueError(f"{clash} name the likelihood's metrics; give the other criteria "
                         "other names.")
    for name, scorer in others.items():
        if not callable(scorer):
            raise TypeError(f"{name}={scorer!r} is not a scorer (a callable).")
    if likelihood is None and not others:
        raise ValueError("make_criteria_scorer needs at least one scorer.")
    return _CriteriaScorer(likelihood, dict(others))
