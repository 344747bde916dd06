"""Held-out likelihood estimation and model comparison for topic models.

Estimators of log p(w | model): :func:`ais_log_likelihood` (annealed importance
sampling), :func:`left_to_right_log_likelihood` (left-to-right in its unbiased,
sequential Monte Carlo form), :func:`importance_sampling_log_likelihood` (from a
neural model's encoder); comparators :func:`ratio_ais` and
:func:`iteration_ais` (Foulds & Smyth 2014); scikit-learn scorers. Results are
:class:`HeldOutLikelihood` and :class:`ModelComparison` objects. See the user guide,
"Evaluating topic models".
"""

from .._evaluation._views import generative_view
from .._generative import GenerativeModel, PathMixture, TokenMixture
from ._ais import ais_log_likelihood
from ._importance_sampling import importance_sampling_log_likelihood
from ._iteration_ais import iteration_ais
from ._left_to_right import (
    document_completion_log_likelihood,
    left_to_right_log_likelihood,
)
from ._ranking import RankingWarning, check_ranking, refit_best
from ._ratio_ais import align_topics, ratio_ais
from ._results import HeldOutLikelihood, ModelComparison, PerplexityBracket
from ._scorers import (
    make_ais_scorer,
    make_coherence_scorer,
    make_criteria_scorer,
    make_diversity_scorer,
    make_importance_sampling_scorer,
    make_left_to_right_scorer,
    make_ratio_ais_scorer,
)

__all__ = [
    "GenerativeModel",
    "HeldOutLikelihood",
    "ModelComparison",
    "PathMixture",
    "PerplexityBracket",
    "RankingWarning",
    "TokenMixture",
    "ais_log_likelihood",
    "align_topics",
    "check_ranking",
    "document_completion_log_likelihood",
    "generative_view",
    "importance_sampling_log_likelihood",
    "iteration_ais",
    "left_to_right_log_likelihood",
    "make_ais_scorer",
    "make_coherence_scorer",
    "make_criteria_scorer",
    "make_diversity_scorer",
    "make_importance_sampling_scorer",
    "make_left_to_right_scorer",
    "make_ratio_ais_scorer",
    "ratio_ais",
    "refit_best",
]
