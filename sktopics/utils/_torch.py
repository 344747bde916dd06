"""Devices, seeding, device copies and CSR-to-tensor helpers.

This is the only device-aware module of sktopics: estimators and the evaluation code
ask it for a device, a generator, a device copy of a fitted array or module, or a
dense batch, and never call ``.cuda()`` themselves. Nothing here changes global
torch state, and nothing here moves an object the caller owns: device copies are
new objects.

Two rules keep fitted models portable (see the user guide, "GPUs"):

* a device *parameter* (``device="auto"``, ``"cuda:1"``) is resolved by
  :func:`resolve_device`, which refuses devices this machine does not have;
* a *recorded* device (a fitted model's ``device_``, for instance one unpickled on
  another machine) is mapped by :func:`available_device` to one this machine has,
  with a :class:`DeviceWarning` when it changes.
"""

import contextlib
import copy
import functools
import os
import threading

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils import check_random_state

from ._warnings import warn

__all__ = [
    "resolve_n_jobs",
    "thread_scope",
    "threads_from_n_jobs",
    "DeviceWarning",
    "available_device",
    "check_deterministic_support",
    "device_budget",
    "draw_seed",
    "evaluation_mode",
    "FrozenModule",
    "make_generator",
    "resolve_device",
    "rng_scope",
    "seed_generators",
    "TensorCache",
    "csr_to_dense_tensor",
]


class DeviceWarning(UserWarning):
    """A fitted model was moved to another device than the one it recorded."""


def _current_cuda():
    """The current CUDA device, with its index (``torch.device("cuda")`` has none)."""
    return torch.device("cuda", torch.cuda.current_device())


def resolve_device(device):
    """Turn a ``device`` parameter into a :class:`torch.device` with an index.

    ``"auto"`` (or ``None``) picks the current CUDA device when CUDA is available and
    the CPU otherwise; ``"cuda"`` is the current CUDA device, so that the result
    always names one GPU. A request this machine cannot serve (CUDA without CUDA,
    ``"cuda:N"`` beyond the visible devices, another device type) raises a
    ``ValueError`` instead of failing later inside torch.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        resolved = _current_cuda() if torch.cuda.is_available() else torch.device("cpu")
    else:
        try:
            resolved = torch.device(device)
        except (RuntimeError, TypeError) as exc:
            raise ValueError(
                f"device={device!r} is not a valid torch device; use 'auto', 'cpu', "
                "'cuda', 'cuda:N' or a torch.device."
            ) from exc
    if resolved.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"device={device!r} was requested but CUDA is not available on this "
                "machine; use device='cpu' or device='auto'."
            )
        if resolved.index is None:
            resolved = _current_cuda()
        elif resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} was requested but only "
                f"{torch.cuda.device_count()} CUDA device(s) are visible."
            )
        check_deterministic_support(resolved)
    elif resolved.type != "cpu":
        raise ValueError(
            f"device={device!r} is not supported; sktopics runs on 'cpu' and 'cuda'."
        )
    return resolved


def available_device(device, owner="The model"):
    """Map a recorded device to one this machine has.

    ``cuda:N`` stays when device ``N`` is visible; otherwise it becomes the current
    CUDA device, or the CPU without CUDA, with a :class:`DeviceWarning` naming both.

    Parameters
    ----------
    device : torch.device or str
        The device a fitted model recorded (its ``device_``).
    owner : str
        How the warning names the model.

    Returns
    -------
    device : torch.device
    """
    device = torch.device(device)
    if device.type != "cuda":
        return torch.device("cpu")
    if torch.cuda.is_available():
        if device.index is not None and device.index < torch.cuda.device_count():
            return device
        target = _current_cuda()
    else:
        target = torch.device("cpu")
    warn(
        f"{owner} was fitted on {device}, which this machine does not have; it now "
        f"runs on {target}. Set device= and refit, or call partial_fit, to train it "
        "further there.",
        DeviceWarning)
    return target


def check_deterministic_support(device):
    """Refuse CUDA under ``torch.use_deterministic_algorithms(True)`` with a clear error.

    The samplers draw categorical variables from cumulative sums, and torch has no
    deterministic ``cumsum`` for floating tensors on CUDA, so torch would raise from
    deep inside a sampler. sktopics' CUDA results are already reproducible for a
    seed without that mode (counter-based random numbers, integer count tables, no
    floating-point atomics in the samplers); ``warn_only=True`` lets torch warn
    instead.
    """
    device = torch.device(device)
    if (device.type == "cuda" and torch.are_deterministic_algorithms_enabled()
            and not torch.is_deterministic_algorithms_warn_only_enabled()):
        raise RuntimeError(
            "sktopics cannot run on CUDA under torch.use_deterministic_algorithms(True): "
            "its samplers need torch.cumsum on floating CUDA tensors, which has no "
            "deterministic implementation. Use torch.use_deterministic_algorithms(True, "
            "warn_only=True) or device='cpu'. sktopics' CUDA results are reproducible for "
            "a given random_state without that mode (see the user guide, 'GPUs')."
        )


def device_budget(device, cpu_elements):
    """Elements a work buffer may hold on ``device``.

    The CPU keeps buffers cache-sized (``cpu_elements``). A GPU wants far larger
    batches, to amortise kernel launches: 64 times the CPU budget, capped at a
    sixteenth of the free device memory in float32 elements.
    """
    device = torch.device(device)
    if device.type != "cuda":
        return int(cpu_elements)
    free, _ = torch.cuda.mem_get_info(device)
    return max(int(cpu_elements), min(64 * int(cpu_elements), free // (4 * 16)))


def draw_seed(random_state):
    """Draw one 31-bit seed from a scikit-learn ``random_state``.

    An int gives the same seed every time; a ``RandomState`` instance advances, so
    successive fits differ (scikit-learn semantics); ``None`` draws from numpy's
    global generator without reseeding it.
    """
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


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


def make_generator(seed, device="cpu"):
    """A :class:`torch.Generator` on ``device`` seeded with ``seed``."""
    generator = torch.Generator(device=torch.device(device))
    generator.manual_seed(int(seed))
    return generator


def seed_generators(seed, device="cpu"):
    """Seed torch's global generators of the CPU and of ``device`` (within a
    :func:`rng_scope`, which restores them afterwards)."""
    device = torch.device(device)
    torch.random.default_generator.manual_seed(int(seed))
    if device.type == "cuda":
        index = device.index if device.index is not None else torch.cuda.current_device()
        with torch.cuda.device(index):
            torch.cuda.manual_seed(int(seed))


@contextlib.contextmanager
def rng_scope(seed, device="cpu", state=None):
    """Seed the CPU generator and ``device``'s generator inside the block, restore both after.

    Used around code that cannot take an explicit generator (module
    initialisation, ``nn.Dropout``). Only the generators of the CPU and of
    ``device`` are seeded (``torch.manual_seed`` would seed every GPU and leave the
    others changed); both are restored on exit, so the caller's global RNG state
    is left exactly as it was.

    Parameters
    ----------
    seed : int
    device : torch.device or str
    state : tuple or None
        A state the block's yielded function returned earlier: the generators
        continue from it instead of being seeded (when it was taken on a device of
        the same type; otherwise they are seeded).

    Yields
    ------
    get_state : callable
        Returns the generators' current state, to continue from later.
    """
    device = torch.device(device)
    cuda = []
    if device.type == "cuda":
        cuda = [device.index if device.index is not None else torch.cuda.current_device()]
    with torch.random.fork_rng(devices=cuda, device_type="cuda"):
        if state is not None and (state[1] is not None) == bool(cuda):
            torch.random.default_generator.set_state(state[0])
            for index in cuda:
                torch.cuda.set_rng_state(state[1], index)
        else:
            seed_generators(seed, device)

        def get_state():
            return (torch.random.default_generator.get_state(),
                    torch.cuda.get_rng_state(cuda[0]) if cuda else None)

        yield get_state


@contextlib.contextmanager
def evaluation_mode(module):
    """``module.eval()`` inside the block; every submodule's mode is restored after."""
    modes = [(m, m.training) for m in module.modules()]
    module.eval()
    try:
        yield module
    finally:
        for m, training in modes:
            m.training = training


class FrozenModule:
    """A private, evaluation-mode copy of a fitted module, usable on any device.

    Evaluation code must never move or retrain a fitted estimator's module: this
    copies it once (parameters frozen, ``eval()`` mode) and keeps one further copy
    per device it is asked for. Memory: one copy of the module per device used.
    """

    def __init__(self, module):
        frozen = copy.deepcopy(module).eval().requires_grad_(False)
        self._copies = {_module_device(frozen): frozen}

    def on(self, device):
        """The copy on ``device`` (made on first use)."""
        device = torch.device(device)
        if device not in self._copies:
            source = next(iter(self._copies.values()))
            self._copies[device] = copy.deepcopy(source).to(device)
        return self._copies[device]


def _module_device(module):
    tensor = next(module.parameters(), None)
    if tensor is None:
        tensor = next(module.buffers(), None)
    return torch.device("cpu") if tensor is None else tensor.device


class TensorCache:
    """Device copies of fitted numpy arrays, made once per (name, device, dtype).

    The generative views hold CPU numpy arrays; their torch methods are called in
    hot loops on whatever device the evaluation runs, so each array is converted
    at most once per device and dtype. The cache is not pickled or deep-copied.
    """

    def __init__(self):
        self._store = {}

    def get(self, name, array, device, dtype):
        key = (name, torch.device(device), dtype)
        tensor = self._store.get(key)
        if tensor is None:
            array = np.asarray(array)
            if not array.flags.writeable:  # torch would share memory it may not write
                array = array.copy()
            tensor = torch.as_tensor(array, dtype=dtype, device=device)
            self._store[key] = tensor
        return tensor

    def __getstate__(self):
        return {"_store": {}}

    def __deepcopy__(self, memo):
        return TensorCache()


def csr_to_dense_tensor(X, rows=None, *, device="cpu", dtype=torch.float32):
    """Densify some rows of a CSR matrix into one tensor on ``device``.

    One fancy-index and one ``toarray`` per call: never row by row, and never the
    whole corpus unless ``rows`` covers it.
    """
    block = X if rows is None else X[rows]
    if sp.issparse(block):
        block = block.toarray()
    tensor = torch.from_numpy(np.ascontiguousarray(block, dtype=np.float32))
    return tensor.to(device=device, dtype=dtype, non_blocking=True)
