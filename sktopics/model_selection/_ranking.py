"""Whether a search's ranking of its candidates stands, given their scores' errors:
:func:`check_ranking` and :func:`refit_best`, which read a fitted search's
``cv_results_`` (the metrics the scorers of :mod:`._scorers` made with
``return_stderr=True`` put there)."""

import numpy as np

from ..utils._cv_results import fold_scores, mean_scores
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
        converging more slowly than 1 / budget) and ``settled`` (bool).

    See Also
    --------
    refit_best : the same check as ``GridSearchCV``'s ``refit``.
    """
    means = np.asarray(cv_results[f"mean_test_{score}"], dtype=float)
    n = len(means)
    order = np.argsort(-means, kind="stable")
    params = cv_results["params"]
    biases = mean_scores(cv_results, bias, n) if bias is not None else np.full(n, np.nan)
    mc_folds = fold_scores(cv_results, stderr) if stderr is not None else None
    mc = (np.sqrt(np.nansum(mc_folds**2, axis=0)) / mc_folds.shape[0]
          if mc_folds is not None else np.full(n, np.nan))

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
                 f"bias_tolerance={bias_tolerance:g} nats per token (most: "
                 f"{biases[worst]:.4f}, {params[worst]}): their scores are biased low "
                 "by at least about as much, and by more for larger models. Raise the "
                 "scorer's budget (n_temperatures / n_particles / n_samples).",
                 RankingWarning)
        if unknown:
            warn(f"The budget of {len(unknown)} of {n} candidates could not be checked "
                 "(a budget of 1 has no half budget to compare with): their biases are "
                 "unknown.", RankingWarning)

    if n < 2:
        return {"best": int(order[0]), "runner_up": None, "lead": np.nan, "error": np.nan,
                "error_kind": None, "mc_error": np.nan, "cv_error": np.nan,
                "bias_gap": 0.0, "over_tolerance": over, "slow": [], "settled": True}
    best, runner_up = int(order[0]), int(order[1])
    lead = float(means[best] - means[runner_up])
    mc_error = float(np.hypot(mc[best], mc[runner_up]))
    per_fold = fold_scores(cv_results, score)
    if per_fold is None and mc_folds is None:
        raise KeyError(f"cv_results has neither 'split*_test_{stderr}' nor "
                       f"'split*_test_{score}': score with a scorer made with "
                       "return_stderr=True, or pass a fitted search's cv_results_.")
    cv_error = float("nan")
    if per_fold is not None and per_fold.shape[0] > 1:
        diff = per_fold[:, best] - per_fold[:, runner_up]
        cv_error = float(np.std(diff, ddof=1) / np.sqrt(len(diff)))
    if np.isnan(cv_error) or (not np.isnan(mc_error) and mc_error >= cv_error):
        combined, kind = mc_error, ("Monte Carlo" if not np.isnan(mc_error) else
                                    "cross-validation")
    else:
        combined, kind = cv_error, "cross-validation"

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
        budget = (" plus the difference of their estimated budget biases "
                  f"({bias_gap:.5f})" if bias_gap else "")
        if slow:
            detail = "; ".join(f"{params[i]}: {halves[i]:.4f} then {biases[i]:.4f}"
                               for i in slow)
            budget += (" (extrapolated: their scores converge more slowly than 1 / budget, "
                       "rises from a quarter to half and from half to the full budget, "
                       f"per token: {detail}; the bias left may be several times the "
                       "last rise)")
        if bias_gap >= n_sigma * np.nan_to_num(combined):
            remedy = ("their budget biases differ by more than the errors: raise "
                      "n_particles / n_temperatures / n_samples")
        elif kind == "Monte Carlo":
            remedy = ("raise n_particles / n_temperatures / n_samples, or treat them as "
                      "equally good")
        else:
            remedy = "the folds disagree: treat them as equally good, or use more folds"
        warn(
            f"The best candidate {params[best]} leads the next, "
            f"{params[runner_up]}, by {lead:.5f} per token: not more "
            f"than {n_sigma:g} {kind} standard errors ({combined:.5f}){budget}. This "
            f"search cannot rank them: {remedy}.",
            RankingWarning)
    return {"best": best, "runner_up": runner_up, "lead": lead, "error": combined,
            "error_kind": kind, "mc_error": mc_error, "cv_error": cv_error,
            "bias_gap": bias_gap, "over_tolerance": over, "slow": slow, "settled": settled}


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
