"""Reading a fitted search's ``cv_results_``: the per-fold and mean scores of a metric,
and the names of the metrics a likelihood scorer adds beside its score.

Shared by :mod:`sktopics.model_selection` (which ranks the candidates) and
:mod:`sktopics.inspection` (which draws them).
"""

import re

import numpy as np

__all__ = ["BUDGET_PARAMETERS", "LIKELIHOOD_METRICS", "budget_parameter", "fold_scores",
           "mean_scores", "rank_order"]

#: The budget parameters of the likelihood scorers. A scorer made with
#: ``return_stderr=True`` records its budget twice: as ``"budget"`` and under a name
#: that says which parameter it is, ``"budget_<parameter>"`` (a search's score dict
#: holds numbers only, so the parameter travels in the metric's name).
BUDGET_PARAMETERS = ("n_particles", "n_samples", "n_temperatures")

#: The metrics a likelihood scorer made with ``return_stderr=True`` returns with
#: its score (:func:`check_ranking` reads them; other criteria may not use the names).
LIKELIHOOD_METRICS = ("score", "stderr", "bias", "bias_half", "budget", "bias_tolerance",
                      *(f"budget_{p}" for p in BUDGET_PARAMETERS))


def budget_parameter(cv_results):
    """The budget parameter of the scorer that made ``cv_results`` (``"n_particles"``...),
    from its ``mean_test_budget_<parameter>`` column; None when it has none or several."""
    found = [p for p in BUDGET_PARAMETERS if f"mean_test_budget_{p}" in cv_results]
    return found[0] if len(found) == 1 else None


def rank_order(means):
    """The candidates from the highest mean down; ties in the search's order, NaN last.

    The one rule of which candidate is best (``rank_order(means)[0]``), shared by
    :func:`check_ranking` and the displays that mark it.
    """
    return np.argsort(-np.asarray(means, dtype=float), kind="stable")


def fold_scores(cv_results, metric):
    """``(folds, candidates)`` array of the ``split<i>_test_<metric>`` columns, or None."""
    pattern = re.compile(rf"split(\d+)_test_{re.escape(metric)}")
    found = sorted((int(m.group(1)), k) for k in cv_results for m in [pattern.fullmatch(k)] if m)
    if not found:
        return None
    return np.stack([np.asarray(cv_results[k], dtype=float) for _, k in found])


def mean_scores(cv_results, metric, n):
    """``mean_test_<metric>`` as floats, or NaNs when the search has no such metric."""
    got = cv_results.get(f"mean_test_{metric}")
    return np.full(n, np.nan) if got is None else np.asarray(got, dtype=float)
