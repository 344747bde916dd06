"""The checks that a model's values agree with each other, shared by saving and loading.

:class:`Inconsistent` is raised where fitted attributes, parameters or private state
contradict each other or have the wrong type. Loading lets it through as the
:class:`~._errors.ModelFileError` it is; saving turns it into a ``ValueError`` that
says how to fix the model (with the check's :attr:`~Inconsistent.hint`).
"""

from numbers import Integral, Real

import numpy as np
import torch

from ._errors import ModelFileError

__all__ = ["Inconsistent", "check_array", "check_int", "check_positive", "check_tensor", "fail"]

#: Why a model's values may disagree when it is saved (loading says "damaged or edited").
PARAMETER_HINT = ("its parameters no longer describe its fitted state (a parameter changed "
                  "with set_params after fit?): set it back, or refit, before saving")


class Inconsistent(ModelFileError):
    """Values of a model that contradict each other.

    Parameters
    ----------
    message : str
        What is wrong, and where.
    hint : str, default=PARAMETER_HINT
        What probably caused it in a model about to be saved.
    """

    def __init__(self, message, hint=PARAMETER_HINT):
        super().__init__(message)
        self.hint = hint


def fail(path, message, hint=PARAMETER_HINT):
    raise Inconsistent(f"{path}: {message}", hint)


def _describe(value):
    if isinstance(value, (np.ndarray, torch.Tensor)):
        return f"{type(value).__name__} of shape {tuple(value.shape)} and dtype {value.dtype}"
    return type(value).__name__


def _check_shape(value, path, shape, hint):
    if shape is not None and (value.ndim != len(shape) or any(
            want is not None and have != want for have, want in zip(value.shape, shape))):
        expected = tuple("*" if s is None else s for s in shape)
        fail(path, f"shape {tuple(value.shape)} where {expected} was expected", hint)


def check_array(value, path, shape=None, kinds="f", dtypes=None, hint=PARAMETER_HINT):
    """``value`` is a numpy array of one of the dtype ``kinds`` (or exactly one of
    ``dtypes``) and of ``shape`` (``None`` entries: any length); returns it.

    The one validator of arrays: of fitted attributes and of the fields of private
    state objects alike.
    """
    if type(value) is not np.ndarray or (
            value.dtype not in [np.dtype(d) for d in dtypes] if dtypes is not None
            else value.dtype.kind not in kinds):
        want = " or ".join(str(np.dtype(d)) for d in dtypes) if dtypes else f"kind {kinds!r}"
        fail(path, f"expected a numpy array of {want}, got {_describe(value)}", hint)
    _check_shape(value, path, shape, hint)
    return value


def check_tensor(value, path, shape=None, dtype=None, hint=PARAMETER_HINT):
    """``value`` is a torch tensor of ``dtype`` and ``shape``; returns it."""
    if not isinstance(value, torch.Tensor) or (dtype is not None and value.dtype != dtype):
        fail(path, f"expected a torch tensor{f' of {dtype}' if dtype else ''}, got "
             f"{_describe(value)}", hint)
    _check_shape(value, path, shape, hint)
    return value


def check_int(value, path, low=0, high=None, hint=PARAMETER_HINT):
    """``value`` is an int (a numpy integer too; not a bool) in ``[low, high)``."""
    if isinstance(value, bool) or not isinstance(value, (Integral, np.integer)) or \
            (low is not None and value < low) or (high is not None and value >= high):
        bounds = f"in [{low}, {high})" if high is not None else f">= {low}"
        fail(path, f"expected an int {bounds}, got {value!r}", hint)
    return int(value)


def check_positive(value, path, hint=PARAMETER_HINT):
    """Every entry of ``value`` (a number or an array) is finite and above zero."""
    values = np.asarray(value)
    if values.dtype.kind not in "iuf" or (values.size and not (
            np.isfinite(values).all() and (values > 0).all())):
        fail(path, "expected finite positive values", hint)
    if values.ndim == 0 and not isinstance(value, (Real, np.number)):
        fail(path, f"expected a number, got {type(value).__name__}", hint)
