"""Torch's intra-op threads inside a call: ``n_jobs`` resolved, the caller's setting
restored, overlapping calls from several threads included."""

import contextlib
import functools
import os
import threading

import torch

__all__ = ["resolve_n_jobs", "thread_scope", "threads_from_n_jobs"]


def _available_cores():
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def resolve_n_jobs(n_jobs):
    """The number of torch intra-op threads a call with ``n_jobs`` uses.

    ``None``: the caller's torch setting (which joblib's workers lower to their share
    of the cores), but at most the available cores minus one, so that a call leaves a
    core to the rest of the machine, and 1 in a thread other than the main one (Dask,
    joblib's threading backend), where concurrent calls would share the process-wide
    setting. ``-1``: every available core; ``-k``: all but ``k - 1``; ``k > 0``: ``k``.
    """
    cores = _available_cores()
    if n_jobs is None:
        if threading.current_thread() is not threading.main_thread():
            return 1
        return max(1, min(torch.get_num_threads(), cores - 1))
    if n_jobs == 0:
        raise ValueError("n_jobs == 0 has no meaning; use None, a positive int or -1.")
    return int(n_jobs) if n_jobs > 0 else max(1, cores + 1 + int(n_jobs))


@functools.cache
def _per_thread_setting():
    """Whether torch keeps its thread count per thread: with OpenMP (the usual build on
    Linux) each thread has its own, and a thread starts with the value last set in any
    thread; torch's native pool has one setting for the process."""
    return "parallel backend: OpenMP" in torch.__config__.parallel_info()


def _in_new_thread(function):
    """``function()`` called in a thread of its own (it sees the setting a new thread
    starts with)."""
    result = []
    worker = threading.Thread(target=lambda: result.append(function()))
    worker.start()
    worker.join()
    return result[0]


class _Scope:
    """An open scope (compared by identity) and the thread count it wants."""

    def __init__(self, wanted):
        self.wanted = wanted


_scopes_lock = threading.Lock()
_open_scopes = []  # the open scopes, in the order they opened
_before_scopes = []  # the setting before the first of them opened (see thread_scope)


@contextlib.contextmanager
def thread_scope(n_jobs):
    """Run the block with :func:`resolve_n_jobs` torch threads, then restore the caller's.

    Calls that overlap (nested, or from several threads: joblib's threading backend,
    Dask) are safe. With OpenMP each thread has its own setting: a block sets and
    restores its own thread's, and since every change also sets the value new threads
    start with, that value is put back when the last open block of the process
    closes. With one process-wide setting (torch's native pool) the blocks share it:
    while several are open torch uses the thread count of the one opened last that is
    still open, and when the last one closes the setting is what it was before the
    first one opened. A block's results do not depend on its thread count.
    """
    wanted = resolve_n_jobs(n_jobs)
    within = _own_thread_scope if _per_thread_setting() else _process_scope
    with within(wanted):
        yield wanted


@contextlib.contextmanager
def _own_thread_scope(wanted):
    scope = _Scope(wanted)
    with _scopes_lock:
        if not _open_scopes:
            _before_scopes[:] = [_in_new_thread(torch.get_num_threads)]
        _open_scopes.append(scope)
    before = torch.get_num_threads()
    if before != wanted:
        torch.set_num_threads(wanted)
    try:
        yield
    finally:
        if torch.get_num_threads() != before:
            torch.set_num_threads(before)
        with _scopes_lock:
            _open_scopes.remove(scope)
            default = _before_scopes[0]
            if not _open_scopes and _in_new_thread(torch.get_num_threads) != default:
                _in_new_thread(lambda: torch.set_num_threads(default))


@contextlib.contextmanager
def _process_scope(wanted):
    scope = _Scope(wanted)
    with _scopes_lock:
        if not _open_scopes:
            _before_scopes[:] = [torch.get_num_threads()]
        _open_scopes.append(scope)
        if torch.get_num_threads() != wanted:
            torch.set_num_threads(wanted)
    try:
        yield
    finally:
        with _scopes_lock:
            _open_scopes.remove(scope)
            restore = _open_scopes[-1].wanted if _open_scopes else _before_scopes[0]
            if torch.get_num_threads() != restore:
                torch.set_num_threads(restore)


def threads_from_n_jobs(function):
    """Decorator: run ``function`` inside ``thread_scope(n_jobs)`` of its keyword ``n_jobs``."""

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        with thread_scope(kwargs.get("n_jobs")):
            return function(*args, **kwargs)

    return wrapper
