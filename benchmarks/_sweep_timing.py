"""How long one Gibbs sweep takes, measured so that the figure can be trusted.

Used by the GPU kit (``gpu_check.py``) and ``research/gibbs_gpu_sweep_split.py``.
A sweep is timed on the sampler's own state, built as ``LDAGibbs.fit`` builds it,
after a burn-in (the first sweeps of a random start differ from the steady state),
over a block of sweeps bracketed by CUDA events (the device's own clock: no host
synchronisation inside the block), and the block is repeated: the result is the
median and the range over the repeats. Three checks come with it:

* the same sweeps inside fits: a fit of ``burn_in`` sweeps and one of
  ``burn_in + timed``, each timed whole, repeated; their difference per sweep, with
  both fits' times, is what the kit once reported alone (one difference of two
  fits of seconds each is mostly the noise of their set-up);
* the profiler's device time per sweep, by kernel;
* the memory-traffic floor: the bytes a sweep must move (:func:`traffic_floor_bytes`)
  over the device's measured copy bandwidth. A sweep timed below its floor is not a
  measurement.

On a CPU the same functions run with ``time.perf_counter`` (the kit's ``--smoke``).
"""

import itertools
import statistics
import time

import numpy as np
import torch

from sktopics._gibbs._lda_gibbs import _mh_chunk
from sktopics._gibbs._state import GibbsCorpus, GibbsState, default_chunk
from sktopics._gibbs._sweeps import mh_sweep, parallel_sweep, random_init

__all__ = ["copy_bandwidth", "fit_pairs", "profile_sweeps", "sweeper", "time_calls",
           "time_sweeps", "traffic_floor_bytes"]


def _summary(values, unit):
    return {f"median_{unit}": statistics.median(values), f"min_{unit}": min(values),
            f"max_{unit}": max(values), f"all_{unit}": list(values)}


def _block_ms(fn, n, device):
    """Milliseconds per call of ``n`` calls of ``fn`` in a row."""
    if device.type == "cuda":
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize(device)
        start.record()
        for _ in range(n):
            fn()
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / n
    tic = time.perf_counter()
    for _ in range(n):
        fn()
    return 1e3 * (time.perf_counter() - tic) / n


def sweeper(X, n_components, algorithm, device, *, seed=0, mh_steps=2):
    """``(state, sweep)``: the sampler's state of ``X`` from a random start, and a
    function that runs its next sweep (``"parallel"`` or ``"mh"``), as ``fit`` runs
    them with the default priors."""
    device = torch.device(device)
    corpus = GibbsCorpus(X, device)
    state = GibbsState(corpus, n_components, random_init(corpus, n_components, seed))
    alpha = torch.full((n_components,), 5.0 / n_components, device=device)
    beta = 0.01
    counter = itertools.count(1)
    if algorithm == "parallel":
        chunk = default_chunk(n_components, device=device)

        def sweep():
            parallel_sweep(state, alpha, beta, seed, next(counter), chunk)
    elif algorithm == "mh":
        chunk = _mh_chunk(device)

        def sweep():
            mh_sweep(state, alpha, beta, seed, next(counter), chunk, mh_steps)
    else:
        raise ValueError(f"algorithm must be 'parallel' or 'mh', got {algorithm!r}")
    return state, sweep


def time_calls(fn, device, *, warm_up=1, per_block=1, repeats=5):
    """Milliseconds per call of ``fn`` after ``warm_up`` calls: ``repeats`` blocks of
    ``per_block`` calls, each bracketed by CUDA events on a GPU; median, range and
    every block."""
    device = torch.device(device)
    for _ in range(warm_up):
        fn()
    blocks = [_block_ms(fn, per_block, device) for _ in range(repeats)]
    return {"warm_up": warm_up, "per_block": per_block, "repeats": repeats,
            **_summary(blocks, "ms")}


def time_sweeps(sweep, device, *, burn_in=50, timed=50, repeats=5):
    """Milliseconds per sweep after ``burn_in`` sweeps: ``repeats`` blocks of ``timed``
    sweeps (:func:`time_calls`)."""
    times = time_calls(sweep, device, warm_up=burn_in, per_block=timed, repeats=repeats)
    return {"burn_in": burn_in, "sweeps_timed": timed,
            **{k: v for k, v in times.items() if k not in ("warm_up", "per_block")}}


def fit_pairs(fit, device, *, burn_in=50, timed=50, repeats=5):
    """Seconds of ``fit(burn_in)`` and ``fit(burn_in + timed)``, ``repeats`` times in
    turn, and their difference per sweep in milliseconds (median and range)."""
    device = torch.device(device)

    def seconds(n):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        tic = time.perf_counter()
        fit(n)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        return time.perf_counter() - tic

    fit(2)  # warm-up: the kernels' first launches and compilation
    short, long = [], []
    for _ in range(repeats):
        short.append(seconds(burn_in))
        long.append(seconds(burn_in + timed))
    per_sweep = [1e3 * (b - a) / timed for a, b in zip(short, long)]
    return {"burn_in": burn_in, "sweeps_timed": timed, "repeats": repeats,
            "short_fit_s": short, "long_fit_s": long, **_summary(per_sweep, "ms")}


def profile_sweeps(sweep, n_sweeps=5, top=8):
    """The profiler's device time per sweep: the total, and the ``top`` kernels."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    if torch.cuda.is_available():
        activities.append(torch.profiler.ProfilerActivity.CUDA)
    with torch.profiler.profile(activities=activities) as prof:
        for _ in range(n_sweeps):
            sweep()
        if torch.cuda.is_available():
            torch.cuda.synchronize()
    rows = []
    for event in prof.key_averages():
        # The device's own rows only: an operator's CPU row also carries the time of the
        # kernels it launched, which would count them twice.
        if event.device_type != torch.autograd.DeviceType.CUDA:
            continue
        device_us = getattr(event, "self_device_time_total", 0) or 0
        if device_us > 0:
            rows.append((event.key, device_us / 1e3 / n_sweeps))
    rows.sort(key=lambda row: -row[1])
    # Only kernels count towards the total: memcpy rows and the like are listed apart.
    kernels = [ms for name, ms in rows if not name.lower().startswith(("memcpy", "memset"))]
    return {"n_sweeps": n_sweeps, "device_ms_per_sweep": sum(ms for _, ms in rows),
            "kernel_ms_per_sweep": sum(kernels),
            "top": [{"name": name[:80], "ms_per_sweep": ms} for name, ms in rows[:top]]}


def copy_bandwidth(device, n_bytes=1 << 30, repeats=5):
    """Bytes per second the device moves in a copy of ``n_bytes`` (each byte read
    once and written once, so twice ``n_bytes`` of traffic), median of ``repeats``."""
    device = torch.device(device)
    source = torch.empty(n_bytes // 4, dtype=torch.float32, device=device)
    target = torch.empty_like(source)
    target.copy_(source)  # warm-up
    times = [_block_ms(lambda: target.copy_(source), 1, device) / 1e3 for _ in range(repeats)]
    return 2 * source.numel() * 4 / statistics.median(times)


def traffic_floor_bytes(X, n_components):
    """The bytes a dense parallel sweep of ``X`` moves from device memory, in the token
    order of :class:`GibbsCorpus` (word-major), when no document row stays in cache
    from one of its cells to the next; and the size of the document-topic table.

    Each (document, word) cell reads its document's row of the frozen document-topic
    table (``K`` float32; the cell's tokens follow one another, so the row is read
    once per cell, not per token); each word reads its row of the word-topic table
    once; each token reads its document, word, topic and uniform and writes its new
    topic (4 bytes each). The recount and the tables' construction are left out. It
    is a floor only where the document-topic table is much larger than the cache
    (say four times the L2): a smaller table is served from cache, below it.

    Returns
    -------
    floor_bytes, document_table_bytes : int
    """
    n_docs, n_words = X.shape
    n_tokens = int(np.rint(X.sum()))
    floor = 4 * (X.nnz * n_components + n_words * n_components + 5 * n_tokens)
    return floor, 4 * n_docs * n_components
