"""Reading a fitted search's ``cv_results_``: the per-fold and mean scores of a metric,
and the names of the metrics a likelihood scorer adds beside its score.

Shared by :mod:`sktopics.model_selection` (which ranks the candidates) and
:mod:`sktopics.inspection` (which draws them).
"""

import re

import numpy as np

__all__ = ["LIKELIHOOD_METRICS", "fold_scores", "mean_scores"]

#: The metrics a likelihood scorer made with ``return_stderr=True`` returns with
#: its score (:func:`check_ranking` reads them; other criteria may not use the names).
LIKELIHOOD_METRICS = ("score", "stderr", "bias", "bias_half", "budget", "bias_tolerance")


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
