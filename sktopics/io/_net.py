"""The skorch net of a neural topic model as data, and the net rebuilt from it.

A fitted neural model's ``net_`` is saved as what training leaves in it: the torch
module's state dict and the plain attributes of its submodules (training mode, frozen
batch norms, the loss settings of the last fit), the optimiser's state dict, the
training history and the few callback attributes that a continued fit reads. Loading
never unpickles a net: the estimator builds a new one with its own ``_build_net`` (the
code that built the original, from the same parameters and fitted attributes), and
the saved states are loaded into it after checking that every name, shape and dtype
matches (of the module's state and of the optimiser's).

The network is first built on torch's ``meta`` device (:func:`meta_module`: shapes
without memory) and compared with the saved tensors; only a network whose every tensor
the file holds is then built for real, so that a small file cannot make loading (or
saving) allocate a large network.
"""

import contextlib
import math

import numpy as np
import torch
from skorch.callbacks import EpochTimer, GradientNormClipping, PassthroughScoring, PrintLog
from skorch.history import History
from torch.overrides import TorchFunctionMode

from .._neural._net import EpochMonitor, TopicNet
from ..utils._generators import rng_scope
from ._checks import fail
from ._encoder import mapping_node, type_name
from ._errors import ModelFileError

__all__ = ["check_module_state", "decode_net", "encode_net", "meta_module"]

#: Per callback class, the attributes a continued fit reads (the others are reset when
#: a fit starts, or hold the user's settings, which come from the parameters).
CALLBACK_STATE = {
    EpochMonitor: ("best_loss_", "epochs_without_improvement_"),
    PassthroughScoring: ("best_score_",),
    EpochTimer: (),
    PrintLog: (),
    GradientNormClipping: (),
}
_CALLBACKS = {cls.__name__: cls for cls in CALLBACK_STATE}

#: Plain net attributes the estimator sets before each fit (kept for fidelity).
NET_ATTRIBUTES = ("max_epochs", "batch_size", "iterator_train__sampling", "iterator_train__seed",
                  "iterator_train__first_epoch", "iterator_train__n_batches")

#: Submodule attributes that are never state (the process group of a data-parallel fit).
_TRANSIENT = frozenset({"collective"})

_PLAIN = (bool, int, float, str, type(None))


#: torch functions that make a tensor from a shape (not from data): on ``meta`` in
#: :func:`meta_module`.
_SHAPE_FACTORIES = frozenset({torch.empty, torch.zeros, torch.ones, torch.full, torch.rand,
                              torch.randn, torch.randint, torch.empty_strided, torch.normal})


class _ShapesOnMeta(TorchFunctionMode):
    """Tensors made from a shape alone go to the ``meta`` device (no memory); those
    made from data (masks, priors: the file's arrays) stay on the CPU, so that a
    module's constructor may still compute with them."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _SHAPE_FACTORIES and kwargs.get("device") is None:
            kwargs = {**kwargs, "device": "meta"}
        return func(*args, **kwargs)


def meta_module(estimator, n_features):
    """``estimator``'s module as ``_build_module`` builds it, its parameters and
    buffers on the ``meta`` device: their names, shapes and dtypes without their memory.
    The global random generators are left as they were."""
    with rng_scope(0, "cpu"), _ShapesOnMeta():
        return estimator._build_module(int(n_features))


def check_module_state(module, state, path, where="the saved state"):
    """Every tensor of ``module``'s state dict has the name, shape and dtype of the one
    in ``state`` (a dict of tensors or of anything with ``shape`` and ``dtype``), and
    the module's other buffers hold no more than ``state``: raises
    :class:`~._checks.Inconsistent` where not."""
    expected = module.state_dict()
    missing, unexpected = sorted(set(expected) - set(state)), sorted(set(state) - set(expected))
    if missing or unexpected:
        fail(path, f"{where} does not fit the network rebuilt from the parameters (missing: "
             f"{missing or 'none'}; not in the network: {unexpected or 'none'})")
    for key, tensor in state.items():
        target = expected[key]
        if not isinstance(tensor, torch.Tensor) or tensor.shape != target.shape \
                or tensor.dtype != target.dtype:
            fail(f"{path}.{key}",
                 f"{where} has shape {tuple(getattr(tensor, 'shape', ()))} and dtype "
                 f"{getattr(tensor, 'dtype', type(tensor).__name__)}; the network rebuilt "
                 f"from the parameters has {tuple(target.shape)} and {target.dtype}")
    saved = sum(t.numel() for t in state.values())
    others = sum(b.numel() for name, b in module.named_buffers() if name not in expected)
    if others > saved + 1:
        fail(path, f"the network rebuilt from the parameters has {others:,} values in buffers "
             f"that are not saved, more than the {saved:,} saved")


def _module_attributes(module):
    """The plain attributes of every submodule, by submodule name."""
    out = {}
    for name, sub in module.named_modules():
        attributes = {key: value for key, value in vars(sub).items()
                      if not key.startswith("_") and key not in _TRANSIENT
                      and type(value) in _PLAIN}
        if attributes:
            out[name] = attributes
    return out


def encode_net(net, path, encoder):
    """The node of a fitted estimator's ``net_``."""
    if type(net) is not TopicNet:
        raise TypeError(f"{path}: expected the estimator's own TopicNet, got {type_name(net)}.")
    callbacks = {}
    for name, callback in net.callbacks_:
        names = CALLBACK_STATE.get(type(callback))
        if names is None:
            raise TypeError(
                f"{path}.callbacks_[{name!r}]: a callback of type {type_name(callback)} "
                "cannot be saved (callbacks are code). Set callbacks=None on the estimator "
                "before saving."
            )
        callbacks[name] = {"class": type(callback).__name__,
                           "state": mapping_node({attr: encoder.encode(
                               getattr(callback, attr), f"{path}.callbacks_[{name!r}].{attr}")
                               for attr in names if hasattr(callback, attr)})}
    optimizer = getattr(net, "optimizer_", None)
    return {
        "module_state": mapping_node({key: encoder.encode(value, f"{path}.module_.{key}")
                                  for key, value in net.module_.state_dict().items()}),
        "module_attributes": encoder.encode(_module_attributes(net.module_),
                                            f"{path}.module_.attributes"),
        "optimizer_state": (None if optimizer is None else
                            encoder.encode(optimizer.state_dict(), f"{path}.optimizer_")),
        "history": encoder.encode([dict(row) for row in net.history], f"{path}.history"),
        "callbacks": callbacks,
        "attributes": mapping_node({name: encoder.encode(getattr(net, name), f"{path}.{name}")
                                for name in NET_ATTRIBUTES if hasattr(net, name)}),
    }


def decode_net(node, estimator, path, decoder):
    """A new net built by ``estimator._build_net``, holding the saved states.

    The estimator's fitted attributes (``n_features_in_``, ``device_`` and what its
    module reads) must be set and checked already. The module is built on ``meta``
    first and compared with the saved state: the real one is built only when every
    tensor it allocates is one the file holds.
    """
    state = decoder.field(node, "module_state", path)
    if type(state) is not dict or not all(isinstance(t, torch.Tensor) for t in state.values()):
        raise ModelFileError(f"{path}.module_: expected the module's state dict (tensors).")
    n_features = int(estimator.n_features_in_)
    for name in ("hidden_sizes", "component_sizes"):
        # A module per entry, each with a tensor of its own: no more than the file holds.
        sizes = getattr(estimator, name, None)
        if sizes is not None and len(sizes) > len(state):
            fail(f"{path}.{name}", f"{len(sizes)} entries for a network of {len(state)} tensors")
    with _rebuilding(path):
        module = meta_module(estimator, n_features)
    check_module_state(module, state, f"{path}.module_")
    with _rebuilding(path), rng_scope(0, estimator.device_):  # initial weights, overwritten below
        net = estimator._build_net(n_features)
        net.initialize()
    _load_module(net.module_, state, f"{path}.module_")
    _set_module_attributes(net.module_, decoder.field(node, "module_attributes", path),
                           f"{path}.module_.attributes")
    optimizer_state = decoder.field(node, "optimizer_state", path)
    if optimizer_state is not None:
        _load_optimizer(net.optimizer_, optimizer_state, f"{path}.optimizer_")
    history = decoder.field(node, "history", path)
    if type(history) is not list or not all(type(row) is dict for row in history):
        raise ModelFileError(f"{path}.history: expected a list of dicts (one per epoch).")
    net.history_ = History(history)
    _set_callbacks(net, node.get("callbacks"), path, decoder)
    attributes = decoder.field(node, "attributes", path)
    for name, value in (attributes.items() if type(attributes) is dict else ()):
        if name not in NET_ATTRIBUTES or type(value) not in _PLAIN:
            raise ModelFileError(f"{path}.{name}: not a net attribute sktopics saves.")
        setattr(net, name, value)
    return net


@contextlib.contextmanager
def _rebuilding(path):
    """Errors of the estimator's own code while rebuilding its network from the
    file's parameters, as a :class:`ModelFileError` (their cause chained)."""
    try:
        yield
    except ModelFileError:
        raise
    except Exception as exc:
        raise ModelFileError(f"{path}: the network cannot be rebuilt from the saved "
                             f"parameters and fitted attributes ({type(exc).__name__}: "
                             f"{exc}).") from exc


def _load_module(module, state, path):
    check_module_state(module, state, path)
    with torch.no_grad():
        module.load_state_dict(state, strict=True)


def _set_module_attributes(module, attributes, path):
    if type(attributes) is not dict:
        raise ModelFileError(f"{path}: expected a dict of submodule attributes.")
    submodules = dict(module.named_modules())
    for name, values in attributes.items():
        sub = submodules.get(name)
        if sub is None or type(values) is not dict:
            raise ModelFileError(f"{path}: the rebuilt network has no submodule {name!r}.")
        for key, value in values.items():
            # Set only what the rebuilt module has as plain data (on the instance, or a
            # class default such as ``free_bits``), with a value of the same kind.
            current = getattr(sub, key, _MISSING)
            if (key.startswith("_") or key in _TRANSIENT or type(current) not in _PLAIN
                    or type(value) not in _PLAIN or not _same_kind(current, value)):
                raise ModelFileError(f"{path}[{name!r}].{key}: not an attribute of the rebuilt "
                                     "network that a file may set.")
            setattr(sub, key, value)


_MISSING = object()


def _same_kind(current, value):
    if current is None or value is None:
        return True
    if type(current) is bool or type(value) is bool:
        return type(current) is type(value)
    numbers = (int, float)
    return type(current) is type(value) or (type(current) in numbers and type(value) in numbers)


#: Adam's per-parameter state: buffers of the parameter's shape and dtype, and its step.
_OPTIMIZER_BUFFERS = frozenset({"exp_avg", "exp_avg_sq", "max_exp_avg_sq"})

#: Optimiser settings that choose code paths, which must be those of the rebuilt one.
_OPTIMIZER_FLAGS = ("amsgrad", "maximize", "foreach", "capturable", "differentiable", "fused",
                    "decoupled_weight_decay")


def _load_optimizer(optimizer, state, path):
    """Load an optimiser state dict after checking every name, shape and dtype: the
    param groups' settings against the rebuilt optimiser's (the numbers may differ, the
    code-path flags not), each parameter's buffers against the parameter."""
    if type(state) is not dict or set(state) != {"state", "param_groups"} \
            or type(state["param_groups"]) is not list or type(state["state"]) is not dict:
        raise ModelFileError(f"{path}: expected an optimiser state dict.")
    groups = optimizer.param_groups
    if len(state["param_groups"]) != len(groups):
        raise ModelFileError(f"{path}: {len(state['param_groups'])} parameter groups where the "
                             f"rebuilt optimiser has {len(groups)}.")
    saved = []
    for i, (group, live) in enumerate(zip(state["param_groups"], groups)):
        where = f"{path}.param_groups[{i}]"
        if type(group) is not dict or set(group) != set(live):
            raise ModelFileError(f"{where}: expected the settings {sorted(live)}.")
        for key, value in group.items():
            if key == "params":
                if type(value) is not list or len(value) != len(live["params"]) \
                        or not all(type(p) is int for p in value):
                    raise ModelFileError(f"{where}.params: expected {len(live['params'])} "
                                         "parameter numbers.")
                saved += value
            elif key in _OPTIMIZER_FLAGS:
                if value != live[key] or type(value) is not type(live[key]):
                    raise ModelFileError(f"{where}.{key}: {value!r} where the rebuilt optimiser "
                                         f"has {live[key]!r}.")
            elif not _same_number_kind(live[key], value):
                raise ModelFileError(f"{where}.{key}: {value!r} is not a setting of the kind "
                                     f"{live[key]!r}.")
    params = [p for group in groups for p in group["params"]]
    if len(set(saved)) != len(saved):
        raise ModelFileError(f"{path}: a parameter number repeats.")
    index = dict(zip(saved, params))
    for key, values in state["state"].items():
        param = index.get(key)
        where = f"{path}.state[{key!r}]"
        if param is None or type(values) is not dict:
            raise ModelFileError(f"{where}: no such parameter.")
        for name, value in values.items():
            if name == "step":
                if not isinstance(value, torch.Tensor) or value.numel() != 1 or value.ndim > 1 \
                        or value.dtype not in (torch.float32, torch.float64):
                    raise ModelFileError(f"{where}['step']: expected a float tensor of one "
                                         "value (the step count).")
            elif name not in _OPTIMIZER_BUFFERS or not isinstance(value, torch.Tensor) \
                    or value.shape != param.shape or value.dtype != param.dtype:
                raise ModelFileError(
                    f"{where}[{name!r}]: {type_name(value)} of shape "
                    f"{tuple(getattr(value, 'shape', ()))} and dtype "
                    f"{getattr(value, 'dtype', None)}, but the parameter has shape "
                    f"{tuple(param.shape)} and dtype {param.dtype} (and Adam's state holds "
                    f"{', '.join(sorted(_OPTIMIZER_BUFFERS))} and step).")
    try:
        optimizer.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise ModelFileError(f"{path}: the optimiser state does not load "
                             f"({type(exc).__name__}: {exc}).") from exc


def _same_number_kind(current, value):
    """A saved optimiser setting (a learning rate, Adam's betas) of the rebuilt one's
    kind: finite numbers, or tuples of as many."""
    if type(current) is tuple:
        return type(value) is tuple and len(value) == len(current) and all(
            _same_number_kind(c, v) for c, v in zip(current, value))
    if current is None or type(current) in (bool, str):
        return value == current and type(value) is type(current)
    return type(value) in (int, float) and math.isfinite(value) and _same_kind(current, value)


def _set_callbacks(net, callbacks, path, decoder):
    if type(callbacks) is not dict:
        raise ModelFileError(f"{path}.callbacks: expected a dict.")
    built = dict(net.callbacks_)
    for name, entry in callbacks.items():
        where = f"{path}.callbacks_[{name!r}]"
        callback = built.get(name)
        cls = _CALLBACKS.get(entry.get("class")) if type(entry) is dict else None
        if callback is None or cls is None or type(callback) is not cls:
            raise ModelFileError(f"{where}: the rebuilt network has no such callback.")
        state = decoder.field(entry, "state", where)
        for attr, value in (state.items() if type(state) is dict else ()):
            if attr not in CALLBACK_STATE[cls] or not (
                    type(value) in _PLAIN or (isinstance(value, np.generic) and value.dtype.kind in "biuf")):
                raise ModelFileError(f"{where}.{attr}: not a callback attribute sktopics saves.")
            setattr(callback, attr, value)
