"""Counter-based uniform random numbers in pure torch.

Every random number of the Gibbs samplers is a pure function of
``(seed, stream, step, index)``: the SplitMix64 finaliser applied to a 64-bit
counter. The value a token receives therefore does not depend on the chunk size,
on the number of intra-op threads, or on the device (integer arithmetic wraps the
same way on CPU and CUDA). This is the "counter-based randomness" of
``gibbs.md`` section 6.

Maths only: imports torch, never scikit-learn.
"""

import torch

__all__ = ["counter_uniform", "stream_key"]

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB
_INV_2_24 = 1.0 / (1 << 24)


def _signed(value):
    """A Python int modulo 2**64, as the int64 with the same bit pattern."""
    value &= _MASK64
    return value - (1 << 64) if value >= (1 << 63) else value


def _mix_python(value):
    """SplitMix64 finaliser on a Python int (used to derive per-stream keys)."""
    value &= _MASK64
    value = ((value ^ (value >> 30)) * _MIX1) & _MASK64
    value = ((value ^ (value >> 27)) * _MIX2) & _MASK64
    return value ^ (value >> 31)


def stream_key(seed, stream, step):
    """The 64-bit key (as a signed int) of one random stream of one step."""
    key = _mix_python(int(seed) * _GOLDEN + 0x632BE59BD9B4E019)
    key = _mix_python(key ^ (int(stream) * 0xD1342543DE82EF95 + 1))
    key = _mix_python(key ^ (int(step) * _GOLDEN + 2))
    return _signed(key)


def counter_uniform(key, index):
    """Uniform float32 numbers in [0, 1) from a stream key and int64 counters.

    Parameters
    ----------
    key : int
        A key from :func:`stream_key`.
    index : torch.Tensor of int64
        Counters (typically global token indices); the output has its shape and
        device.

    Returns
    -------
    u : torch.Tensor of float32
        24-bit uniforms, ``u = m / 2**24`` with ``m`` in ``[0, 2**24)``.
    """
    # In place with one scratch tensor: two int64 temporaries instead of a dozen.
    x = index.mul(_signed(_GOLDEN)).add_(key)
    shifted = torch.empty_like(x)
    for shift, multiplier in ((30, _MIX1), (27, _MIX2), (31, None)):
        x.bitwise_xor_(_logical_shift_right(x, shift, out=shifted))
        if multiplier is not None:
            x.mul_(_signed(multiplier))
    return _logical_shift_right(x, 40, out=shifted).to(torch.float32).mul_(_INV_2_24)


def _logical_shift_right(x, shift, out):
    """Logical right shift of an int64 tensor (torch's ``>>`` is arithmetic)."""
    torch.bitwise_right_shift(x, shift, out=out)
    return out.bitwise_and_((1 << (64 - shift)) - 1)
