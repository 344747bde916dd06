"""The counter-based uniforms of :mod:`sktopics._random`, compiled: the same bits."""

import numpy as np

from ._jit import jit

__all__ = ["counter_uniform", "mix"]

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


@jit(inline=True)
def mix(x):
    """The SplitMix64 finaliser of a uint64."""
    x = (x ^ (x >> np.uint64(30))) * _MIX1
    x = (x ^ (x >> np.uint64(27))) * _MIX2
    return x ^ (x >> np.uint64(31))


@jit(inline=True)
def counter_uniform(key, index):
    """:func:`sktopics._random.counter_uniform` of one int counter (``key`` as uint64)."""
    x = mix(np.uint64(index) * _GOLDEN + key)
    return np.float32(x >> np.uint64(40)) * np.float32(1.0 / 16777216)
