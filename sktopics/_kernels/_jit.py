"""Whether the compiled path runs, and how its kernels are compiled.

The kernels are compiled on their first call in a process (well under a second each)
and cached on disk beside the package, or in numba's user-wide cache folder where the
package's folder cannot be written (``NUMBA_CACHE_DIR`` chooses another); where no
cache can be written they are compiled in memory in every process. If numba is
missing, or a kernel fails to compile or run, the torch kernels take over with one
warning (unless ``cpu_kernels="compiled"`` was asked for, which then raises).
"""

import functools
import importlib.util
import threading

import torch

from .._config import get_config
from ..utils._warnings import warn

__all__ = ["compiled_path", "jit", "kernel_failure"]

#: What made the compiled path fail in this process (it is then not tried again).
_failure = []
_lock = threading.Lock()


@functools.cache
def _have_numba():
    return importlib.util.find_spec("numba") is not None


def compiled_path(device):
    """Whether the per-token loops of a call on ``device`` run compiled.

    Raises
    ------
    ImportError
        ``cpu_kernels="compiled"`` was set and numba cannot be imported.
    RuntimeError
        ``cpu_kernels="compiled"`` was set and a compiled kernel has failed.
    """
    setting = get_config()["cpu_kernels"]
    if setting == "torch" or torch.device(device).type != "cpu":
        return False
    if not _have_numba():
        if setting == "compiled":
            raise ImportError("cpu_kernels='compiled' needs numba: pip install numba")
        return False
    if _failure:
        if setting == "compiled":
            raise RuntimeError(f"the compiled CPU kernels failed earlier: {_failure[0]}")
        return False
    return True


def kernel_failure(exc):
    """Record that a compiled kernel failed (``exc``) and warn once; with
    ``cpu_kernels="compiled"`` re-raise instead."""
    if get_config()["cpu_kernels"] == "compiled":
        raise exc
    with _lock:
        first = not _failure
        _failure.append(repr(exc))
    if first:
        warn(f"sktopics: the compiled CPU kernels failed ({exc!r}); the torch kernels are "
             "used from now on (slower).", RuntimeWarning)


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
