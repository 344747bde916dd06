"""The threads that run a compiled kernel over parts of a corpus.

Kernels release the GIL, so plain threads run them in parallel; a thread that has
no work waits on a lock (it does not spin), and the threads are started once per
process and started again after a fork.
"""

import concurrent.futures
import os
import threading

import numpy as np
import torch

__all__ = ["n_threads", "run_parts", "split_by_weight", "split_evenly"]

_executor = None
_workers = 0
_lock = threading.Lock()


def _forget_executor():
    global _executor, _workers
    _executor, _workers = None, 0


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_executor)


def n_threads():
    """Threads a call uses: torch's intra-op setting, which ``n_jobs`` sets
    (:func:`~sktopics.utils._threads.thread_scope`)."""
    return max(1, torch.get_num_threads())


def split_evenly(n_items, n_parts):
    """``n_parts`` (at most ``n_items``) contiguous ``(start, stop)`` ranges."""
    n_parts = max(1, min(n_parts, n_items))
    bounds = np.linspace(0, n_items, n_parts + 1).round().astype(np.int64)
    return [(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])]


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


def run_parts(kernel, parts):
    """``kernel(start, stop)`` for every part, in parallel; returns their results in
    order (the first exception is raised once every part has finished)."""
    if len(parts) == 1:
        return [kernel(*parts[0])]
    global _executor, _workers
    with _lock:
        if _executor is None or _workers < len(parts) - 1:
            _workers = max(len(parts) - 1, (os.cpu_count() or 1) - 1)
            _executor = concurrent.futures.ThreadPoolExecutor(
                max_workers=_workers, thread_name_prefix="sktopics-kernel")
        executor = _executor
    futures = [executor.submit(kernel, *part) for part in parts[1:]]
    try:
        first = kernel(*parts[0])  # the calling thread takes a part too
    finally:
        concurrent.futures.wait(futures)
    return [first] + [f.result() for f in futures]
