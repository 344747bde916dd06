"""Seeds and generators: what a ``random_state`` gives, and torch's global generators
seeded or continued inside a block and restored after it."""

import contextlib

import numpy as np
import torch
from sklearn.utils import check_random_state

__all__ = ["draw_seed", "make_generator", "rng_scope", "seed_generators"]


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
