"""Whether the compiled path runs, and how its kernels are compiled.

The kernels are compiled on their first call in a process (well under a second each)
and cached on disk beside the package, or in numba's user-wide cache folder where the
package's folder cannot be written (``NUMBA_CACHE_DIR`` chooses another); where no
cache can be written they are compiled in memory in every process. If numba is
missing the torch kernels run; a kernel that fails hands its call to its torch
counterpart with one warning (:func:`run_compiled`), and one that cannot run here at
all (it did not compile) is not tried again in the process, while the other kernels
go on; ``cpu_kernels="compiled"`` raises instead.
"""

import functools
import importlib.util
import threading

import torch

from .._config import _current, get_config
from ..utils._warnings import warn

__all__ = ["FAILED", "compiled_path", "jit", "kernel_failure", "run_compiled"]

#: Compiled kernels that cannot run in this process: name -> what made them fail.
_failures = {}
#: (kernel, cause) pairs of one-off failures already reported.
_said = set()
_lock = threading.Lock()

#: What :func:`run_compiled` returns where the kernel failed.
FAILED = object()


@functools.cache
def _have_numba():
    return importlib.util.find_spec("numba") is not None


def compiled_path(device, kernel=None):
    """Whether the per-token loops of a call on ``device`` run compiled; with
    ``kernel`` (a name of :func:`run_compiled`), whether that kernel does: it has not
    failed to compile or load in this process.

    Raises
    ------
    ImportError
        ``cpu_kernels="compiled"`` was set and numba cannot be imported.
    RuntimeError
        ``cpu_kernels="compiled"`` was set and ``kernel`` cannot run.
    """
    setting = _current()["cpu_kernels"]  # called at every sweep: no copy of the settings
    if setting == "torch" or torch.device(device).type != "cpu":
        return False
    if not _have_numba():
        if setting == "compiled":
            raise ImportError("cpu_kernels='compiled' needs numba: pip install numba")
        return False
    if kernel in _failures:
        if setting == "compiled":
            raise RuntimeError(f"the compiled CPU kernel of the {kernel} failed earlier: "
                               f"{_failures[kernel]}")
        return False
    return True


def _lasting(exc):
    """Whether ``exc`` means the kernel cannot run in this process at all (it did not
    compile, or its cache did not load), rather than that it failed on this call's
    input or for want of memory."""
    if isinstance(exc, (ImportError, OSError)):
        return True
    from numba.core.errors import NumbaError

    return isinstance(exc, NumbaError)


def kernel_failure(kernel, exc):
    """Record that the compiled kernel ``kernel`` raised ``exc``, and say what changes,
    once; with ``cpu_kernels="compiled"`` re-raise instead.

    A kernel that cannot run here (:func:`_lasting`) is remembered by its name alone:
    its torch counterpart runs from now on in this process, and other kernels are not
    affected. Any other failure changes this call only (its torch counterpart runs it),
    and is reported once per kernel and kind of exception.
    """
    if get_config()["cpu_kernels"] == "compiled":
        raise exc
    lasting = _lasting(exc)
    with _lock:
        if lasting:
            first = kernel not in _failures
            _failures.setdefault(kernel, repr(exc))
        else:
            first = (kernel, type(exc).__name__) not in _said
            _said.add((kernel, type(exc).__name__))
    if not first:
        return
    if lasting:
        warn(f"sktopics: the compiled CPU kernel of the {kernel} cannot run here ({exc!r}); "
             "its torch counterpart runs it from now on in this process (slower; the same "
             "law).", RuntimeWarning)
    else:
        warn(f"sktopics: the compiled CPU kernel of the {kernel} failed ({exc!r}); its torch "
             "counterpart ran this call instead (slower; the same law). Later calls try "
             "the compiled kernel again.", RuntimeWarning)


def run_compiled(kernel, fn, *, undo=None):
    """``fn()``, the call of the compiled kernel named ``kernel`` (the job it does, as
    the warnings name it: "parallel sweep", "transform", ...), or :data:`FAILED`
    where it raised: then ``undo()`` (if given) puts back what the kernel had begun to
    change, and :func:`kernel_failure` records and reports it. The caller runs the
    torch counterpart on :data:`FAILED`."""
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 - whatever numba raises, the torch path runs
        if undo is not None:
            undo()
        kernel_failure(kernel, exc)
        return FAILED


def jit(function=None, *, inline=False):
    """``function`` compiled by numba (``nogil``), cached on disk where possible.

    ``inline=True`` for the small helpers of the per-token loops: numba then compiles
    them into their callers, where they would otherwise be calls the compiler cannot
    optimise across.
    """
    if function is None:
        return lambda f: jit(f, inline=inline)
    import numba

    options = dict(nogil=True, inline="always" if inline else "never")
    try:
        return numba.njit(cache=True, **options)(function)
    except RuntimeError:  # no folder to cache in: compile in memory
        return numba.njit(**options)(function)
