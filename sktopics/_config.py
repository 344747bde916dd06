"""Global configuration: :func:`set_config`, :func:`get_config`, :func:`config_context`.

As in scikit-learn, the settings are per thread of execution (a context variable), so
a ``config_context`` block in one thread does not change another thread's calls.
"""

import contextlib
import contextvars

__all__ = ["config_context", "get_config", "set_config"]

_CPU_KERNELS = ("auto", "compiled", "torch")

_DEFAULTS = {"cpu_kernels": "auto"}

_config = contextvars.ContextVar("sktopics_config", default=None)


def _current():
    return _config.get() or _DEFAULTS


def get_config():
    """The current values of sktopics' global settings.

    Returns
    -------
    config : dict
        Keys are the parameter names of :func:`set_config`.

    See Also
    --------
    set_config : Set the settings.
    config_context : Settings for a block of code.
    """
    return dict(_current())


def set_config(cpu_kernels=None):
    """Set sktopics' global settings.

    Parameters
    ----------
    cpu_kernels : {"auto", "compiled", "torch"}, default=None
        How LDAGibbs's per-token loops (its sweeps, its count tables and
        ``transform``'s sampler) run on the CPU. ``"compiled"``: loops compiled with numba, one
        pass per token; ``"torch"``: torch operations over chunks of tokens (the code
        that runs on a GPU); ``"auto"`` (the initial value): compiled where numba can
        be imported, else torch. Both compute the same model; a fit's random path
        differs between them. ``None`` leaves the setting unchanged.

    Returns
    -------
    None

    See Also
    --------
    get_config : The current settings.
    config_context : Settings for a block of code.

    Examples
    --------
    >>> import sktopics
    >>> sktopics.set_config(cpu_kernels="torch")
    >>> sktopics.get_config()["cpu_kernels"]
    'torch'
    >>> sktopics.set_config(cpu_kernels="auto")
    """
    config = dict(_current())
    if cpu_kernels is not None:
        if cpu_kernels not in _CPU_KERNELS:
            raise ValueError(f"cpu_kernels must be one of {_CPU_KERNELS}; got {cpu_kernels!r}.")
        config["cpu_kernels"] = cpu_kernels
    _config.set(config)


@contextlib.contextmanager
def config_context(*, cpu_kernels=None):
    """Settings of :func:`set_config` for the block of a ``with`` statement.

    Parameters
    ----------
    cpu_kernels : {"auto", "compiled", "torch"}, default=None
        See :func:`set_config`.

    Returns
    -------
    context : contextlib.AbstractContextManager
        On exit the settings before the block are back, also when it raises.

    Examples
    --------
    >>> import sktopics
    >>> with sktopics.config_context(cpu_kernels="torch"):
    ...     sktopics.get_config()["cpu_kernels"]
    'torch'
    """
    token = _config.set(dict(_current()))
    try:
        set_config(cpu_kernels=cpu_kernels)
        yield
    finally:
        _config.reset(token)
