"""Devices: which one a model runs on, what fits there, dense batches sent there.

This is the only device-aware module of sktopics: estimators and the evaluation code
ask it for a device, a work-buffer budget or a dense batch, and never call
``.cuda()`` themselves. Two rules keep fitted models portable (see the user guide,
"GPUs"):

* a device *parameter* (``device="auto"``, ``"cuda:1"``) is resolved by
  :func:`resolve_device`, which refuses devices this machine does not have;
* a *recorded* device (a fitted model's ``device_``, for instance one unpickled on
  another machine) is mapped by :func:`available_device` to one this machine has,
  with a :class:`DeviceWarning` when it changes.
"""

import numpy as np
import scipy.sparse as sp
import torch

from ._warnings import warn

__all__ = [
    "DeviceWarning",
    "available_device",
    "check_deterministic_support",
    "csr_to_dense_tensor",
    "device_budget",
    "requests_cuda",
    "resolve_device",
]


class DeviceWarning(UserWarning):
    """A fitted model was moved to another device than the one it recorded."""


def _current_cuda():
    """The current CUDA device, with its index (``torch.device("cuda")`` has none)."""
    return torch.device("cuda", torch.cuda.current_device())


def _auto_device():
    """What ``device="auto"`` means on this machine: the current CUDA device, else the CPU."""
    return _current_cuda() if torch.cuda.is_available() else torch.device("cpu")


def requests_cuda(device):
    """Whether a ``device`` parameter means a GPU on this machine, without checking
    that it can run there (for an estimator's tags, read before any fit, by ``clone``
    too: so without initialising CUDA, which asking for the current device would)."""
    if isinstance(device, torch.device):
        return device.type == "cuda"
    if device is None or device == "auto":
        return torch.cuda.is_available()
    return isinstance(device, str) and device.startswith("cuda")


def resolve_device(device):
    """Turn a ``device`` parameter into a :class:`torch.device` with an index.

    ``"auto"`` (or ``None``) picks the current CUDA device when CUDA is available and
    the CPU otherwise; ``"cuda"`` is the current CUDA device, so that the result
    always names one GPU. A request this machine cannot serve (CUDA without CUDA,
    ``"cuda:N"`` beyond the visible devices, another device type) raises a
    ``ValueError`` instead of failing later inside torch.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        resolved = _auto_device()
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
