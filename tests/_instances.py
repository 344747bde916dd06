"""Fast parameters for every estimator, and the checks expected to fail (with reasons).

Each estimator module adds one entry to ``FAST_PARAMS``; ``tests/test_common.py`` runs
scikit-learn's ``parametrize_with_checks`` on all of them.
"""

import os

from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA

#: The device the suite's estimators are fitted on: the CPU, unless
#: ``SKTOPICS_TEST_DEVICE`` says otherwise. The GPU kit (``benchmarks/gpu_check.py``)
#: runs the whole suite with ``SKTOPICS_TEST_DEVICE=auto``, i.e. on CUDA when present.
#: Tests that are about the CPU itself (exact values, CPU-only errors) say "cpu".
TEST_DEVICE = os.environ.get("SKTOPICS_TEST_DEVICE", "cpu")



def use_suite_device(setattr=setattr):
    """Make ``device="auto"`` run on :data:`TEST_DEVICE` in this process (nothing to do
    when it is ``"auto"``); ``setattr`` may be a monkeypatch's, to undo it after a test."""
    if TEST_DEVICE == "auto":
        return
    from sktopics.utils import _devices

    setattr(_devices, "_auto_device", lambda: _devices.resolve_device(TEST_DEVICE))


_NEURAL_FAST = dict(n_components=3, max_iter=2, batch_size=8, hidden_sizes=(8, 8),
                    device=TEST_DEVICE)

FAST_PARAMS = {
    AVITM: _NEURAL_FAST,
    ProdLDA: _NEURAL_FAST,
    LDAGibbs: dict(n_components=3, max_iter=5, transform_max_iter=10, device=TEST_DEVICE),
    PAMVI: dict(structure=(2, 3), max_iter=2, batch_size=8, hidden_sizes=(8, 8),
                device=TEST_DEVICE),
    MoLDA: dict(component_sizes=(2, 3), max_iter=2, batch_size=8, hidden_sizes=(8, 8),
                device=TEST_DEVICE),
}

#: The defaults users run, for scikit-learn's checks: only the epochs cut (the
#: neural models) and the smallest structures (PAMVI, MoLDA), so that the default
#: architecture and batch size are what the checks see.
DEFAULT_PARAMS = {
    AVITM: dict(max_iter=2, device=TEST_DEVICE),
    ProdLDA: dict(max_iter=2, device=TEST_DEVICE),
    LDAGibbs: dict(device=TEST_DEVICE),
    PAMVI: dict(structure=(2, 3), max_iter=2, device=TEST_DEVICE),
    MoLDA: dict(component_sizes=(2, 3), max_iter=2, device=TEST_DEVICE),
}

#: {estimator class: {check name: reason}}
EXPECTED_FAILED_CHECKS = {}


def fast_instances():
    return [cls(**params) for cls, params in FAST_PARAMS.items()]


def default_instances():
    return [cls(**params) for cls, params in DEFAULT_PARAMS.items()]


def expected_failed_checks(estimator):
    return EXPECTED_FAILED_CHECKS.get(type(estimator), {})
