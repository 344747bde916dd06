"""``n_jobs``: torch threads inside a call, the caller's setting restored (issue #22)."""

import threading

import numpy as np
import pytest
import torch

from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import ais_log_likelihood, left_to_right_log_likelihood
from sktopics.utils._torch import _available_cores, resolve_n_jobs, thread_scope

from ._instances import FAST_PARAMS

X, _, _ = make_lda_corpus(n_samples=30, n_features=20, n_components=3, random_state=0)


@pytest.fixture
def two_threads():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def test_resolve_n_jobs():
    cores = _available_cores()
    assert resolve_n_jobs(3) == 3
    assert resolve_n_jobs(-1) == cores
    assert resolve_n_jobs(-2) == max(1, cores - 1)
    assert resolve_n_jobs(None) == max(1, min(torch.get_num_threads(), cores - 1))
    with pytest.raises(ValueError, match="n_jobs"):
        resolve_n_jobs(0)
    seen = []
    worker = threading.Thread(target=lambda: seen.append(resolve_n_jobs(None)))
    worker.start()
    worker.join()
    assert seen == [1]  # a worker thread (Dask, joblib threads) gets one thread


def test_thread_scope_restores_the_callers_setting(two_threads):
    with thread_scope(1) as n:
        assert n == 1 and torch.get_num_threads() == 1
    assert torch.get_num_threads() == 2
    with pytest.raises(RuntimeError), thread_scope(1):
        raise RuntimeError
    assert torch.get_num_threads() == 2


@pytest.mark.parametrize("cls", list(FAST_PARAMS), ids=lambda c: c.__name__)
def test_estimators_use_n_jobs_inside_and_restore(cls, two_threads, monkeypatch):
    seen = []
    original = cls._fit

    def spy(self, *args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(self, *args, **kwargs)

    monkeypatch.setattr(cls, "_fit", spy)
    model = cls(**{**FAST_PARAMS[cls], "n_jobs": 1}).fit(X)
    assert seen == [1] and torch.get_num_threads() == 2
    model.transform(X)
    model.score(X)
    assert torch.get_num_threads() == 2


def test_evaluators_use_n_jobs_inside_and_restore(two_threads, monkeypatch):
    import sktopics._evaluation._zspace as zspace

    seen = []
    original = zspace.anneal

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(zspace, "anneal", spy)
    model = (np.random.default_rng(0).dirichlet(np.ones(20), 3), 0.5)
    ais_log_likelihood(model, X, n_temperatures=2, n_chains=1, random_state=0, n_jobs=1)
    assert seen == [1] and torch.get_num_threads() == 2
    left_to_right_log_likelihood(model, X, n_particles=2, random_state=0, n_jobs=1)
    assert torch.get_num_threads() == 2
