"""The counter-based uniforms of :mod:`sktopics._random`, compiled: the same bits."""

import numpy as np

from ._jit import jit

__all__ = ["counter_uniform", "counter_uniform64", "keyed_uniform32", "keyed_uniform64", "mix"]

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


@jit(inline=True)
def counter_uniform64(key, index):
    """A float64 uniform in [0, 1) with 53 random bits, for draws against float64 masses:
    the top 53 bits of the hash whose top 24 :func:`counter_uniform` takes (so it is
    that number, refined)."""
    x = mix(np.uint64(index) * _GOLDEN + key)
    return np.float64(x >> np.uint64(11)) * (1.0 / 9007199254740992.0)


@jit(inline=True)
def keyed_uniform64(base, counter):
    """:func:`sktopics._random.uniform` (float64) of a state ``base`` (a key already mixed
    with its folded Python counters, uint64) and one integer counter: ``(2m + 1) / 2**53``
    for the top 52 bits ``m``."""
    x = mix(base + np.uint64(counter) * _GOLDEN)
    m = (x >> np.uint64(12)) * np.uint64(2) + np.uint64(1)
    return np.float64(m) * (1.0 / 9007199254740992.0)


@jit(inline=True)
def keyed_uniform32(base, stage):
    """:func:`sktopics._random.stream_uniform` (float32) of a token's state ``base`` and
    the folded constant ``stage`` of its Python counters: ``(2m + 1) / 2**24`` for the top
    23 bits ``m``."""
    x = mix(base + stage)
    m = (x >> np.uint64(41)) * np.uint64(2) + np.uint64(1)
    return np.float32(m) * np.float32(1.0 / 16777216.0)
