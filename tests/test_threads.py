"""``n_jobs``: torch threads inside a call, the caller's setting restored."""

import threading

import numpy as np
import pytest
import torch

from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import ais_log_likelihood, left_to_right_log_likelihood
from sktopics.utils import _threads as threads_module
from sktopics.utils._threads import _available_cores, resolve_n_jobs, thread_scope

from ._instances import FAST_PARAMS

X, _, _ = make_lda_corpus(n_samples=30, n_features=20, n_components=3, random_state=0)


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


@pytest.mark.cpu  # threads are the CPU's
def test_evaluators_use_n_jobs_inside_and_restore(two_threads, monkeypatch):
    import sktopics._evaluation._zspace as zspace

    seen = []
    original = zspace.anneal

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(zspace, "anneal", spy)
    model = (np.random.default_rng(0).dirichlet(np.ones(20), 3), 0.5)
    ais_log_likelihood(model, X, n_temperatures=2, n_chains=1, random_state=0, n_jobs=1,
                       device="cpu")
    assert seen == [1] and torch.get_num_threads() == 2
    left_to_right_log_likelihood(model, X, n_particles=2, random_state=0, n_jobs=1,
                                 device="cpu")
    assert torch.get_num_threads() == 2


def _overlap(scope_a, scope_b, read):
    """Thread a opens scope_a, thread b opens scope_b, a closes, then b: what b read
    while its scope was the one still open."""
    opened_a, opened_b, closed_a = threading.Event(), threading.Event(), threading.Event()
    inside = {}

    def a():
        with thread_scope(scope_a):
            opened_a.set()
            opened_b.wait()
        closed_a.set()

    def b():
        opened_a.wait()
        with thread_scope(scope_b):
            opened_b.set()
            closed_a.wait()
            inside["b"] = read()

    workers = [threading.Thread(target=a), threading.Thread(target=b)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    return inside["b"]


def test_overlapping_scopes_restore_the_setting(two_threads):
    """With torch as it is built here: scopes that open and close in another order than
    a stack, in the main thread and a worker, leave the main thread's setting and the
    one new threads start with as they were."""
    opened, closed = threading.Event(), threading.Event()

    def worker():
        with thread_scope(1):
            opened.set()
            closed.wait()

    helper = threading.Thread(target=worker)
    with thread_scope(3):
        helper.start()
        opened.wait()
    closed.set()
    helper.join()
    assert torch.get_num_threads() == 2
    seen = []
    fresh = threading.Thread(target=lambda: seen.append(torch.get_num_threads()))
    fresh.start()
    fresh.join()
    assert seen == [2]
    assert _overlap(3, 1, torch.get_num_threads) == 1 and torch.get_num_threads() == 2


def test_overlapping_scopes_with_one_process_wide_setting(monkeypatch):
    """torch's native thread pool keeps one setting for the process: scopes that open
    and close in any order share it and leave it as it was."""
    setting = [2]
    monkeypatch.setattr(threads_module, "_per_thread_setting", lambda: False)
    monkeypatch.setattr(torch, "get_num_threads", lambda: setting[0])
    monkeypatch.setattr(torch, "set_num_threads", lambda n: setting.__setitem__(0, n))
    assert _overlap(3, 1, lambda: setting[0]) == 1  # b's scope is the one still open
    assert setting[0] == 2
    # Three scopes, two of them wanting the same count: closing the last opened leaves
    # the one opened before it in charge.
    with thread_scope(4):
        with thread_scope(2):
            with thread_scope(4):
                pass
            assert setting[0] == 2
    assert setting[0] == 2


def test_concurrent_transforms_with_different_n_jobs(two_threads):
    """Several threads calling transform at once, with different n_jobs: the same
    results as one at a time, and torch's setting as it was."""
    from sktopics import LDAGibbs

    model = LDAGibbs(3, max_iter=5, transform_max_iter=20, device="cpu", random_state=0).fit(X)
    expected = {n: model.set_params(n_jobs=n).transform(X) for n in (1, 2, 3)}
    results, errors = {}, []
    start = threading.Barrier(6)

    def call(index, n_jobs):
        try:
            start.wait()
            for _ in range(5):
                results[index, n_jobs] = model.set_params(n_jobs=n_jobs).transform(X)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    workers = [threading.Thread(target=call, args=(i, 1 + i % 3)) for i in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert not errors
    for (_, n_jobs), result in results.items():
        np.testing.assert_array_equal(result, expected[n_jobs])
    assert torch.get_num_threads() == 2
