"""Compiled CPU loops: the per-token samplers, token by token, in registers.

On a CPU the torch formulation of a per-token loop writes each token's K-vector to
memory and reads it back several times, with a dispatch per operation; the loops here
(compiled by numba, ``nogil``) do one pass per token. They compute the same
functions of the same counter-based uniforms as the torch kernels of
:mod:`sktopics._gibbs` and :mod:`sktopics._evaluation`, which stay the path on CUDA.

* :mod:`._jit`: whether the compiled path runs (numba importable and working, the
  user's setting), compilation with an on-disk cache where one can be written, and
  the one warning when it cannot run.
* :mod:`._pool`: the threads that run a kernel over parts of a corpus (``n_jobs``).
* :mod:`._gibbs`: the LDA Gibbs sweeps and count tables.
* :mod:`._infer`: ``transform``'s sampler with the topics held fixed.
* :mod:`._zspace`: the collapsed sweeps of AIS, ratio-AIS and iteration-AIS, and the
  left-to-right draw that starts ratio-AIS.
* :mod:`._smc`: the left-to-right filter of LDA-like models.

Maths and plumbing of the kernels only: imports numpy, numba and torch, and of
sktopics only :mod:`sktopics._config` and :mod:`sktopics.utils`; never scikit-learn.
"""

from ._jit import FAILED, compiled_path, run_compiled

__all__ = ["FAILED", "compiled_path", "run_compiled"]
