"""Fast parameters for every estimator, and the checks expected to fail (with reasons).

Each estimator module adds one entry to ``FAST_PARAMS``; ``tests/test_common.py`` runs
scikit-learn's ``parametrize_with_checks`` on all of them.
"""

from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA

_NEURAL_FAST = dict(n_components=3, max_iter=2, batch_size=8, hidden_sizes=(8, 8), device="cpu")

FAST_PARAMS = {
    AVITM: _NEURAL_FAST,
    ProdLDA: _NEURAL_FAST,
    LDAGibbs: dict(n_components=3, max_iter=5, transform_max_iter=10, device="cpu"),
    PAMVI: dict(structure=(2, 3), max_iter=2, batch_size=8, hidden_sizes=(8, 8), device="cpu"),
    MoLDA: dict(components=(2, 3), max_iter=2, batch_size=8, hidden_sizes=(8, 8), device="cpu"),
}

#: {estimator class: {check name: reason}}
EXPECTED_FAILED_CHECKS = {}


def fast_instances():
    return [cls(**params) for cls, params in FAST_PARAMS.items()]


def expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator), {})
