"""Fitted modules and arrays seen by evaluation code: evaluation mode for a block,
private frozen copies per device, device copies of numpy arrays made once."""

import contextlib
import copy

import numpy as np
import torch

__all__ = ["FrozenModule", "TensorCache", "evaluation_mode"]


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
        self._copies = {(_module_device(frozen), None): frozen}

    def on(self, device, dtype=None):
        """The copy on ``device`` (made on first use), its floating-point parameters and
        buffers in ``dtype`` if given."""
        key = (torch.device(device), dtype)
        if key not in self._copies:
            source = next(iter(self._copies.values()))
            self._copies[key] = copy.deepcopy(source).to(device=key[0], dtype=dtype)
        return self._copies[key]


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
