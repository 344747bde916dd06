"""The threads that run a compiled kernel over parts of a corpus.

Kernels release the GIL, so plain threads run them in parallel; a thread that has
no work waits on a lock (it does not spin), and the threads are started once per
process and started again after a fork. Work is cut into more parts than threads,
which take them in turn: on a machine where another process keeps a core busy, the
thread that shares that core takes fewer parts.
"""

import concurrent.futures
import contextlib
import contextvars
import functools
import itertools
import os
import threading

import numpy as np
import torch

from ..utils._threads import thread_scope

__all__ = ["PARTS_PER_THREAD", "n_threads", "run_over", "run_parts", "split_by_weight",
           "split_evenly", "torch_on_one_thread"]

#: Parts of a kernel's work per thread (see :func:`run_parts`).
PARTS_PER_THREAD = 8

_executor = None
_workers = 0
_lock = threading.Lock()


def _forget_executor():
    global _executor, _workers
    _executor, _workers = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_executor)


#: The kernels' thread count while torch runs on fewer (see :func:`torch_on_one_thread`).
_kernel_threads = contextvars.ContextVar("sktopics_kernel_threads", default=None)


def n_threads():
    """Threads a call uses: torch's intra-op setting, which ``n_jobs`` sets
    (:func:`~sktopics.utils._threads.thread_scope`), unless
    :func:`torch_on_one_thread` holds it."""
    return _kernel_threads.get() or max(1, torch.get_num_threads())


@contextlib.contextmanager
def torch_on_one_thread():
    """Run torch on one thread in the block while the kernels keep the call's threads.

    After a parallel operation torch's OpenMP threads spin, waiting for the next one;
    beside the kernels' threads (and on a core another process keeps busy) they take
    the time the kernels need. Where the kernels do the work, the torch operations
    left are small, and one thread runs them without that cost.
    """
    token = _kernel_threads.set(n_threads())
    try:
        with thread_scope(1):
            yield
    finally:
        _kernel_threads.reset(token)


@functools.lru_cache(maxsize=64)  # a fit asks for the same split at every sweep
def split_evenly(n_items, n_parts):
    """``n_parts`` (at most ``n_items``) contiguous ``(start, stop)`` ranges."""
    n_parts = max(1, min(n_parts, n_items))
    bounds = np.linspace(0, n_items, n_parts + 1).round().astype(np.int64)
    return tuple((int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:]))


def split_by_weight(offsets, n_parts):
    """Contiguous ranges of items with about equal weight each; ``offsets`` are the
    items' cumulative weights from 0 (a CSR matrix's ``indptr`` for documents weighed
    by their cells, say)."""
    offsets = np.asarray(offsets, dtype=np.float64)
    n_items = len(offsets) - 1
    n_parts = max(1, min(n_parts, n_items))
    cuts = np.searchsorted(offsets, np.linspace(0, offsets[-1], n_parts + 1)[1:-1])
    bounds = np.unique(np.concatenate([[0], cuts.clip(0, n_items), [n_items]]))
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])] or [(0, 0)]


def run_parts(kernel, parts, n_workers=None):
    """``kernel(start, stop)`` for every part on ``n_workers`` threads (default: one per
    part), the calling thread one of them; returns the results in the parts' order.

    Each thread takes the next part not yet taken, so a thread that a busy core slows
    down takes fewer parts instead of holding up the others (give more parts than
    threads for that). The first exception is raised once every thread has stopped.
    """
    n_workers = max(1, min(len(parts), n_workers or len(parts)))
    if n_workers == 1:
        return [kernel(*part) for part in parts]
    results = [None] * len(parts)
    taken = itertools.count()  # next() on a count is atomic

    def work():
        for i in iter(lambda: next(taken), None):
            if i >= len(parts):
                return
            results[i] = kernel(*parts[i])

    global _executor, _workers
    with _lock:  # submitted under the lock: no call submits to an executor shut down
        if _executor is None or _workers < n_workers - 1:
            if _executor is not None:
                # A call in another thread may still be running on the old one: its
                # threads finish their work, then exit.
                _executor.shutdown(wait=False)
            _workers = max(n_workers - 1, (os.cpu_count() or 1) - 1)
            _executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=_workers, thread_name_prefix="sktopics-kernel")
        futures = [_executor.submit(work) for _ in range(n_workers - 1)]
    try:
        work()
    finally:
        concurrent.futures.wait(futures)
    for future in futures:
        future.result()
    return results


def run_over(kernel, n_items=None, offsets=None):
    """``kernel(start, stop)`` over ``n_items`` items (or items weighed by the
    cumulative ``offsets``, see :func:`split_by_weight`) on :func:`n_threads` threads,
    in :data:`PARTS_PER_THREAD` parts per thread; the results in order."""
    threads = n_threads()
    n_parts = 1 if threads == 1 else PARTS_PER_THREAD * threads
    parts = (split_evenly(n_items, n_parts) if offsets is None
             else split_by_weight(offsets, n_parts))
    return run_parts(kernel, parts, threads)
