"""Drawing a topic from unnormalised weights by inversion, in a vectorisable order.

The weights ``p[0:K]`` are visited in sixteen lanes, topic ``k`` in lane ``k mod 16``:
the lane totals are sums the compiler turns into SIMD additions without reordering any
addition, and the inversion finds the lane first, then the topic within it. Any fixed
order of the topics draws from the same distribution; this one costs about K / 16
vector additions and at most 16 + K / 16 comparisons a draw. Where rounding leaves the
target at the total, the draw is the last topic, as the torch kernels' clamp does.

The loop is written out in each kernel that draws this way (:mod:`._gibbs`,
:mod:`._infer`): as a function, even one numba inlines, it took a fifth of the time of
a K = 50 sweep more (its array arguments keep the lane totals out of registers).
"""

import numpy as np

from ._jit import jit

__all__ = ["LANES", "inversion_buffers"]

#: Lanes of the inversion (a multiple of every SIMD width in float32 up to 512 bits).
LANES = 16


@jit
def inversion_buffers(K):
    """The weights buffer (zero-padded to a multiple of the lanes) and the lane totals."""
    return np.zeros(-(-K // LANES) * LANES, np.float32), np.empty(LANES, np.float32)
