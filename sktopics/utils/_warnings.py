"""Warnings that point at the user's line, not at the library code that issued them.

A warning raised inside ``transform`` is reached through scikit-learn's wrappers
(``Pipeline.transform``, the ``set_output`` wrapper, ``_fit_context``), skorch, torch
or joblib, so no fixed ``stacklevel`` names the user's call: counted from sktopics it
lands in ``sklearn/utils/_set_output.py`` or ``sklearn/base.py``. :func:`warn` walks
the stack instead and attributes the warning to the first frame outside sktopics and
the libraries it calls, which is the line of the user's script, notebook cell or test
that called sktopics.
"""

import sys
import warnings

__all__ = ["LIBRARIES", "user_stacklevel", "warn"]

#: Top-level packages whose frames a warning skips: sktopics and the libraries through
#: which a user's call reaches it.
LIBRARIES = frozenset({"sktopics", "sklearn", "skorch", "torch", "joblib", "numpy", "scipy"})


def _in_library(frame):
    name = frame.f_globals.get("__name__") or ""
    return name.partition(".")[0] in LIBRARIES


def _import_machinery(frame):
    # The frames that ``warnings.warn`` itself leaves out when it counts ``stacklevel``.
    filename = frame.f_code.co_filename
    return "importlib" in filename and "_bootstrap" in filename


def user_stacklevel(depth=1):
    """The ``stacklevel`` that makes :func:`warnings.warn` name the user's frame.

    Parameters
    ----------
    depth : int, default=1
        How far the frame that will call :func:`warnings.warn` is from the caller of
        this function: 1 when that caller issues the warning itself.

    Returns
    -------
    stacklevel : int
        For :func:`warnings.warn` called from that frame: the level of the first
        frame, from that one outwards, whose module is not in :data:`LIBRARIES` (the
        user's code). When every frame is library code (a worker thread of joblib,
        say), 2: the caller of the code that warns.
    """
    frame = sys._getframe(depth)  # the frame that calls warnings.warn: level 1
    level = 1
    while frame is not None:
        if not _in_library(frame):
            return level
        frame = frame.f_back
        while frame is not None and _import_machinery(frame):
            frame = frame.f_back  # not counted by warnings.warn either
        level += 1
    return 2


def warn(message, category=UserWarning):
    """Issue a warning attributed to the user's code.

    Use it in place of :func:`warnings.warn` everywhere in sktopics: the warning's
    ``filename`` and ``lineno`` are those of the first frame outside sktopics,
    scikit-learn, skorch, torch, joblib, NumPy and SciPy (see
    :func:`user_stacklevel`), so that ``pipe.transform(X)`` in a script names that
    line, whatever wrappers lie between it and the code that warns.

    Parameters
    ----------
    message : str or Warning
        The message, or a Warning instance (then ``category`` is ignored, as in
        :func:`warnings.warn`).
    category : type of Warning, default=UserWarning
        The warning's class.

    Returns
    -------
    None
    """
    warnings.warn(message, category, stacklevel=user_stacklevel())
