"""Whether a search's ranking of its candidates stands, given their scores' errors:
:func:`check_ranking` and :func:`refit_best`, which read a fitted search's
``cv_results_`` (the metrics the scorers of :mod:`._scorers` made with
``return_stderr=True`` put there)."""

import numpy as np

from ..utils._cv_results import budget_parameter, fold_scores, mean_scores, rank_order
from ..utils._warnings import warn

__all__ = ["RankingWarning", "check_ranking", "refit_best"]


class RankingWarning(UserWarning):
    """A score's errors may be large enough to change the ranking of a search's candidates.

    Issued by :func:`check_ranking` and :func:`refit_best` when the best candidate is
    not ahead of the next by more than the errors, and by the AIS scorer when its
    budget's bias exceeds its ``bias_tolerance``.
    """


#: :func:`check_ranking` reports a candidate's estimate as converging slowly (``slow``)
#: when its rise from half the budget is more than this share of its rise one halving
#: earlier. Convergence like 1 / budget gives 0.5 (1 / sqrt(budget) gives 0.71).
SLOW_CONVERGENCE = 0.75


def check_ranking(cv_results, *, score="score", stderr="stderr", bias="bias",
                  n_sigma=2.0, bias_tolerance=None):
    """Whether a search's best candidate is ahead of the next by more than the errors.

    Reads a fitted search's ``cv_results_`` and issues a :class:`RankingWarning`
    for each problem it finds (in the calling process, also when the search
    scored with ``n_jobs > 1``):

    * **Errors.** The lead of the best candidate over the next must exceed
      ``n_sigma`` standard errors plus the difference of their budget biases (an
      estimator biased low by more for one candidate can reverse a ranking: AIS
      with few temperatures favours small models). A candidate's budget bias is
      the rise of its score from half the budget, ``mean_test_<bias>``, which is
      the bias left if the estimates converge like 1 / budget (each rise half the
      one before). With ``mean_test_<bias>_half`` (the rise one halving earlier)
      and both rises above ``n_sigma`` Monte Carlo errors, the ratio ``r`` of the
      two rises is used instead, the bias left being the last rise times
      ``r / (1 - r)`` (infinite for ``r >= 1``): estimates converging more slowly
      than 1 / budget (``r`` above 0.75 marks them ``slow`` in the report) leave
      several times their last rise, and the warning says so. The standard error is the
      larger of two: the cross-validation error, the standard deviation of the
      per-fold differences of the two candidates over ``sqrt(k)`` (which holds the
      folds' spread and, as each fold's score is an estimate, its Monte Carlo
      noise too), and, with a scorer made with ``return_stderr=True``, the Monte
      Carlo error alone, ``sqrt(sum of the folds' stderr^2) / k`` per candidate,
      combined in quadrature (the one to trust with two or three folds, whose
      spread says little).
    * **Budget.** A candidate's budget bias (``mean_test_<bias>``, the rise of its
      score from half the budget) above ``bias_tolerance``, or unknown (NaN: a
      budget of 1).

    The warning gives the two candidates, their scores and lead, the standard error
    that decided and which kind it is, and the remedy for that cause: more folds or
    documents when the folds disagree; the scorer's budget when its Monte Carlo
    noise or its budget bias decides. A scorer made with ``return_stderr=True``
    records which parameter its budget is (``mean_test_budget_n_particles``,
    ``..._n_samples`` or ``..._n_temperatures``), and the warning names that one;
    without it, it names the budget parameter of each scorer.

    Parameters
    ----------
    cv_results : dict
        ``search.cv_results_``.
    score, stderr, bias : str, default="score", "stderr", "bias"
        The names of the metrics in ``cv_results``; ``stderr`` and ``bias`` are
        optional (``None``: not used). ``mean_test_<bias>_half`` is read when
        present.
    n_sigma : float, default=2.0
        How many combined standard errors a lead must exceed.
    bias_tolerance : float or None, default=None
        The largest acceptable budget bias, in nats per token; ``None``: the
        scorer's own, recorded as ``mean_test_bias_tolerance`` by a scorer made
        with ``return_stderr=True`` and a ``bias_tolerance``, else no check.

    Returns
    -------
    report : dict
        ``best`` and ``runner_up`` (indices into ``cv_results["params"]``),
        ``lead`` (difference of their mean scores), ``error`` (its standard
        error), ``error_kind`` (``"Monte Carlo"`` or ``"cross-validation"``, the
        larger), ``mc_error`` and ``cv_error`` (NaN when unknown), ``bias_gap``
        (difference of their estimated budget biases, 0 when unknown),
        ``over_tolerance`` (indices of the candidates whose bias exceeds the
        tolerance), ``slow`` (those of the best candidate and the runner-up
        converging more slowly than 1 / budget) and ``settled`` (bool). For every
        candidate, the standard error of its difference from the best candidate's
        mean, by the same rule as ``error``: ``gap_errors`` (the larger of the two),
        ``gap_error_kinds`` (which one that is), ``gap_cv_errors`` and
        ``gap_mc_errors`` (arrays indexed like ``params``; 0 for the best candidate,
        whose difference from itself is 0; the runner-up's entries are ``error``,
        ``error_kind``, ``cv_error`` and ``mc_error``).
        :class:`~sktopics.inspection.CriteriaDisplay` draws ``n_sigma`` times
        ``gap_errors`` as its error bars.

    See Also
    --------
    refit_best : the same check as ``GridSearchCV``'s ``refit``.
    """
    means = np.asarray(cv_results[f"mean_test_{score}"], dtype=float)
    n = len(means)
    order = rank_order(means)
    params = cv_results["params"]
    biases = mean_scores(cv_results, bias, n) if bias is not None else np.full(n, np.nan)
    mc_folds = fold_scores(cv_results, stderr) if stderr is not None else None
    mc = (np.sqrt(np.nansum(mc_folds**2, axis=0)) / mc_folds.shape[0]
          if mc_folds is not None else np.full(n, np.nan))
    raise_budget = _raise_budget(cv_results, n)

    if bias_tolerance is None:
        recorded = mean_scores(cv_results, "bias_tolerance", n)
        bias_tolerance = float(np.nanmax(recorded)) if np.isfinite(recorded).any() else None
    over = []
    if bias_tolerance is not None and bias is not None and f"mean_test_{bias}" in cv_results:
        over = [int(i) for i in np.flatnonzero(biases > bias_tolerance)]
        unknown = [params[i] for i in np.flatnonzero(np.isnan(biases))]
        if over:
            worst = int(np.nanargmax(biases))
            warn(f"The budget checks of {len(over)} of {n} candidates rose by more than "
                 f"bias_tolerance={bias_tolerance:g} nats per token, at most "
                 f"{_num(biases[worst])}, for {params[worst]}: their scores are biased low "
                 "by at least that much, by more for larger models. Raise "
                 f"{raise_budget}.", RankingWarning)
        if unknown:
            warn(f"The budget of {len(unknown)} of {n} candidates could not be checked "
                 "(a budget of 1 has no half budget to compare with): their biases are "
                 "unknown.", RankingWarning)

    per_fold = fold_scores(cv_results, score)
    if n < 2:
        zeros = np.zeros(n)
        return {"best": int(order[0]), "runner_up": None, "lead": np.nan, "error": np.nan,
                "error_kind": None, "mc_error": np.nan, "cv_error": np.nan,
                "bias_gap": 0.0, "over_tolerance": over, "slow": [], "settled": True,
                "gap_errors": zeros, "gap_error_kinds": [None] * n, "gap_cv_errors": zeros,
                "gap_mc_errors": zeros}
    best, runner_up = int(order[0]), int(order[1])
    lead = float(means[best] - means[runner_up])
    if per_fold is None and mc_folds is None:
        raise KeyError(f"cv_results has neither 'split*_test_{stderr}' nor "
                       f"'split*_test_{score}': score with a scorer made with "
                       "return_stderr=True, or pass a fitted search's cv_results_.")
    cv_errors, mc_errors, errors, kinds = _gap_errors(per_fold, mc, best)
    cv_error, mc_error = float(cv_errors[runner_up]), float(mc_errors[runner_up])
    combined, kind = float(errors[runner_up]), kinds[runner_up]

    # the bias left at the full budget: if each doubling shrinks the rise by a factor
    # r, what is left is the last rise times r / (1 - r) (1/budget: r = 1/2, the last
    # rise itself); r is read from the two rises when both stand out of the noise
    halves = mean_scores(cv_results, f"{bias}_half", n) if bias is not None else np.full(n, np.nan)
    slow, left = [], {}
    for i in (best, runner_up):
        noise = n_sigma * np.nan_to_num(mc[i])  # rises within the noise say nothing
        ratio = 0.5
        if biases[i] > noise and halves[i] > noise:
            ratio = max(biases[i] / halves[i], 0.5)
        if ratio > SLOW_CONVERGENCE:
            slow.append(i)
        left[i] = (np.nan_to_num(biases[i]) * ratio / (1.0 - ratio) if ratio < 1.0
                   else np.inf)
    bias_gap = float(abs(left[best] - left[runner_up])) if np.isfinite(
        left[best] + left[runner_up]) else np.inf

    settled = bool(lead > n_sigma * np.nan_to_num(combined, nan=np.inf) + bias_gap)
    if not settled:
        n_folds = 0 if per_fold is None else per_fold.shape[0]
        places = _decimals(lead if lead else combined)  # enough to show the lead
        sentences = [
            f"The search cannot rank its two best candidates: {params[best]} scores "
            f"{means[best]:.{places}f} and {params[runner_up]} {means[runner_up]:.{places}f} "
            f"nats per token, a lead of {_num(lead)}.",
            _rule(n_sigma, combined, bias_gap),
            _decisive(kind, combined, cv_error, mc_error, n_folds),
        ]
        if slow:
            detail = "; ".join(f"{params[i]}: {_num(halves[i])} then {_num(biases[i])}"
                               for i in slow)
            sentences.append(
                f"Scores converging more slowly than 1 / budget ({detail}: the rises per "
                "token from a quarter to half and from half to the full budget) may leave "
                "several times the last rise as bias.")
        if bias_gap >= n_sigma * np.nan_to_num(combined):
            sentences.append("Their budget biases differ by more than the errors: raise "
                             f"{raise_budget}.")
        elif kind == "Monte Carlo":
            sentences.append(f"To tell them apart, raise {raise_budget}, or treat them as "
                             "equally good.")
        else:
            sentences.append("The folds disagree: use more folds (cv=) or more documents, or "
                             "treat them as equally good.")
        warn(" ".join(filter(None, sentences)), RankingWarning)
    return {"best": best, "runner_up": runner_up, "lead": lead, "error": combined,
            "error_kind": kind, "mc_error": mc_error, "cv_error": cv_error,
            "bias_gap": bias_gap, "over_tolerance": over, "slow": slow, "settled": settled,
            "gap_errors": errors, "gap_error_kinds": kinds, "gap_cv_errors": cv_errors,
            "gap_mc_errors": mc_errors}


def _gap_errors(per_fold, mc, reference):
    """The standard errors of every candidate's lead over ``reference`` (or deficit).

    ``per_fold``: ``(folds, candidates)`` scores or None; ``mc``: each candidate's
    Monte Carlo error of its mean over the folds (NaN: unknown). Returns the
    cross-validation errors (the standard deviation of the per-fold differences over
    ``sqrt(k)``; NaN below two folds), the Monte Carlo errors (the two candidates'
    combined in quadrature), the larger of the two (the one :func:`check_ranking`
    compares) and its kind (``"cross-validation"`` or ``"Monte Carlo"``). The
    reference's own entries are 0: its gap to itself is exactly 0.
    """
    mc = np.asarray(mc, dtype=float)
    n = len(mc)
    cv = np.full(n, np.nan)
    if per_fold is not None and per_fold.shape[0] > 1:
        diff = per_fold - per_fold[:, [reference]]
        cv = np.std(diff, axis=0, ddof=1) / np.sqrt(diff.shape[0])
    mc_gap = np.hypot(mc, mc[reference])
    cv[reference] = mc_gap[reference] = 0.0
    errors, kinds = np.empty(n), []
    for i in range(n):
        if np.isnan(cv[i]) or (not np.isnan(mc_gap[i]) and mc_gap[i] >= cv[i]):
            errors[i] = mc_gap[i]
            kinds.append("Monte Carlo" if not np.isnan(mc_gap[i]) else "cross-validation")
        else:
            errors[i] = cv[i]
            kinds.append("cross-validation")
    return cv, mc_gap, errors, kinds


#: The budget parameter of each likelihood scorer, for the warnings' remedies when
#: ``cv_results`` does not say which scorer made it.
_BUDGETS = ("n_particles (left-to-right), n_samples (importance sampling) or "
            "n_temperatures (AIS, ratio AIS)")

#: Numbers in the warnings keep this many significant digits.
_DIGITS = 3


def _raise_budget(cv_results, n):
    """What to raise: ``n_particles (it used 20)``, the scorer's own parameter and
    recorded budget, or every scorer's parameter when the scorer did not say."""
    parameter = budget_parameter(cv_results)
    budgets = mean_scores(cv_results, "budget" if parameter is None else
                          f"budget_{parameter}", n)
    used = np.unique(budgets[np.isfinite(budgets)])
    used = ("" if not len(used) else " (it used " + (
        f"{used[0]:g}" if len(used) == 1 else f"{used.min():g} to {used.max():g}") + ")")
    if parameter is not None:
        return f"{parameter}{used}"
    return f"the scorer's budget{used}: {_BUDGETS}"


def _decimals(x):
    """Decimal places that show ``x`` to :data:`_DIGITS` significant digits (4 for 0)."""
    x = abs(float(x))
    if not np.isfinite(x) or x == 0:
        return 4
    return max(0, _DIGITS - 1 - int(np.floor(np.log10(x))))


def _num(x):
    """``x`` to :data:`_DIGITS` significant digits, in plain notation down to 1e-7
    (``0.0000612``, ``0.0400``, ``12.3``, ``1234``); ``inf`` and ``nan`` as such."""
    if not np.isfinite(x):
        return f"{x:g}"
    places = _decimals(x)
    return f"{x:.{places}f}" if places <= 9 else f"{x:.{_DIGITS}g}"


def _rule(n_sigma, error, bias_gap):
    """The sentence of the rule a lead failed, with its numbers."""
    if np.isnan(error):
        return "The standard error of the lead is unknown, so no lead is enough."
    rule = f"A lead must exceed {n_sigma:g} standard errors"
    if not bias_gap:
        return f"{rule}: {n_sigma:g} x {_num(error)} = {_num(n_sigma * error)}."
    if not np.isfinite(bias_gap):
        return (f"{rule} plus the difference of their budget biases, which has no bound: "
                "a score's rise did not shrink when its budget was doubled.")
    return (f"{rule} plus the difference of their estimated budget biases: {n_sigma:g} x "
            f"{_num(error)} + {_num(bias_gap)} = {_num(n_sigma * error + bias_gap)}.")


def _decisive(kind, error, cv_error, mc_error, n_folds):
    """The sentence that says which standard error decided, and the other one."""
    if np.isnan(error):
        return ""
    if kind == "cross-validation":
        other = f" (Monte Carlo: {_num(mc_error)})" if not np.isnan(mc_error) else ""
        return ("The standard error is the cross-validation one, the spread of their score "
                f"differences across the {n_folds} folds{other}.")
    other = f" (across the {n_folds} folds: {_num(cv_error)})" if not np.isnan(cv_error) else ""
    return f"The standard error is the scorer's Monte Carlo noise{other}."


def refit_best(cv_results, *, score="score", stderr="stderr", bias="bias", n_sigma=2.0,
               bias_tolerance=None):
    """The best candidate of a search, for ``GridSearchCV(refit=refit_best)``, checked.

    Returns the index of the highest ``mean_test_<score>`` and runs
    :func:`check_ranking`, which issues a :class:`RankingWarning` when the lead
    over the runner-up is within the errors (the larger of the folds' spread and
    the Monte Carlo errors of a scorer made with ``return_stderr=True``, plus the
    difference of the budget biases, extrapolated from the last two rises when the
    scores converge more slowly than 1 / budget), and when a candidate's budget bias
    exceeds the scorer's ``bias_tolerance``. ``GridSearchCV(...).fit`` then says so itself, in the calling
    process whatever its ``n_jobs``, and refits the best candidate.

    Parameters
    ----------
    cv_results : dict
        The search's ``cv_results_`` (GridSearchCV passes it).
    score, stderr, bias : str, default="score", "stderr", "bias"
        The metrics' names, for a ``scoring`` dict that names them otherwise: e.g.
        ``refit=functools.partial(refit_best, score="ll", stderr=None)``.
    n_sigma : float, default=2.0
        How many combined standard errors a lead must exceed.
    bias_tolerance : float or None, default=None
        As in :func:`check_ranking` (``None``: the scorer's own).

    Returns
    -------
    best_index : int
        The candidate to refit (``search.best_index_``).

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.model_selection import refit_best
    >>> cv_results = {"params": [{"k": 5}, {"k": 10}],
    ...               "mean_test_score": np.array([-7.10, -7.00]),
    ...               "split0_test_stderr": np.array([0.001, 0.001]),
    ...               "split1_test_stderr": np.array([0.001, 0.001])}
    >>> refit_best(cv_results)
    1
    """
    return check_ranking(cv_results, score=score, stderr=stderr, bias=bias,
                         n_sigma=n_sigma, bias_tolerance=bias_tolerance)["best"]
