"""Device resolution, seeding and CSR-to-tensor helpers.

This is the only device-aware module of sktopics: estimators and the evaluation code
ask it for a device, a generator or a dense batch, and never call ``.cuda()``
themselves. Nothing here changes global torch state.
"""

import contextlib

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.utils import check_random_state

__all__ = [
    "resolve_device",
    "draw_seed",
    "make_generator",
    "rng_scope",
    "csr_to_dense_tensor",
]


def resolve_device(device):
    """Turn the ``device`` parameter into a :class:`torch.device`.

    ``"auto"`` picks CUDA when it is available and the CPU otherwise. An explicit
    CUDA request on a machine without CUDA raises a ``ValueError`` instead of
    failing later inside torch.
    """
    if device is None or (isinstance(device, str) and device == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
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
        if resolved.index is not None and resolved.index >= torch.cuda.device_count():
            raise ValueError(
                f"device={device!r} was requested but only "
                f"{torch.cuda.device_count()} CUDA device(s) are visible."
            )
    elif resolved.type != "cpu":
        raise ValueError(
            f"device={device!r} is not supported; sktopics runs on 'cpu' and 'cuda'."
        )
    return resolved


def draw_seed(random_state):
    """Draw one 31-bit seed from a scikit-learn ``random_state``.

    An int gives the same seed every time; a ``RandomState`` instance advances, so
    successive fits differ (scikit-learn semantics); ``None`` draws from numpy's
    global generator without reseeding it.
    """
    return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def make_generator(seed, device="cpu"):
    """A :class:`torch.Generator` on ``device`` seeded with ``seed``."""
    generator = torch.Generator(device=torch.device(device))
    generator.manual_seed(int(seed))
    return generator


@contextlib.contextmanager
def rng_scope(seed, device="cpu"):
    """Seed torch's global generators inside the block and restore them after.

    Used around code that cannot take an explicit generator (module
    initialisation, ``nn.Dropout``): the caller's global RNG state is left exactly
    as it was.
    """
    device = torch.device(device)
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices, device_type="cuda"):
        torch.manual_seed(int(seed))
        yield


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
