"""Fused GPU kernel of the dense parallel sweep (Triton), maths only.

:func:`~sktopics._gibbs._sweeps.dense_chunk` forms a ``(tokens, K)`` table of
probabilities in memory and reads it back five times (product, self-exclusion,
scan, search). On a GPU that traffic is the whole cost: at K = 50 a sweep of 15 M
tokens moves about 20 GB. Here one program draws a block of tokens with the
K-vectors in registers: it reads the token's rows of the two frozen tables once and
writes one topic. The draw is the same function of the same uniforms (the scan
may add in another order, so a token whose uniform falls within rounding of a
boundary can land on the neighbouring topic).

Triton ships with CUDA builds of torch; without it (or on the CPU) the sweeps use
the eager kernels. With ``SKTOPICS_TRITON_INTERPRET=1`` and ``TRITON_INTERPRET=1``
(Triton's interpreter) the kernel runs on CPU tensors: that is how the CPU test suite
checks it where Triton is installed. (``TRITON_INTERPRET`` alone, set to debug
another kernel, does not route sktopics' sweeps through the slow interpreter.)
"""

import functools
import importlib.util
import os

import torch

from ..utils._warnings import warn

__all__ = ["MAX_FUSED_TOPICS", "FusedKernelError", "fused_dense_available",
           "fused_dense_chunk"]

#: Widest K of the fused kernel: a block's (tokens, K) tile stays in registers.
MAX_FUSED_TOPICS = 4096

#: Elements of a program's (tokens, K) tile.
_TILE = 4096


def _interpreting():
    return os.environ.get("SKTOPICS_TRITON_INTERPRET") == "1"


@functools.cache
def _have_triton():
    return importlib.util.find_spec("triton") is not None


#: (device type, BLOCK_K) configurations whose kernel failed to build or launch in
#: this process, with what made them fail: their sweeps use the eager kernels.
_failures = {}

#: (device, BLOCK_K) configurations whose first launch ran to completion.
_verified = set()


class FusedKernelError(RuntimeError):
    """The fused kernel failed to build or launch (a Triton too old, say)."""


def _block_k(n_components):
    """The kernel's topic lanes for ``n_components``: the next power of two."""
    return 1 << max(0, int(n_components) - 1).bit_length()


def fused_dense_available(device, n_components):
    """Whether :func:`fused_dense_chunk` can run for this device and K."""
    if (n_components > MAX_FUSED_TOPICS or not _have_triton()
            or (torch.device(device).type, _block_k(n_components)) in _failures):
        return False
    return torch.device(device).type == "cuda" or _interpreting()


@functools.cache
def _dense_kernel(interpreted):
    """The kernel, built on first use (importing Triton takes a while), once per mode:
    ``triton.jit`` decides at decoration whether to interpret."""
    import triton
    import triton.language as tl

    @triton.jit
    def kernel(doc_ptr, word_ptr, z_ptr, u_ptr, theta_ptr, phi_ptr, ndk_ptr, nwk_ptr, nk_ptr,
               alpha_ptr, out_ptr, n_tokens, K, beta_m1, vbeta_m1,
               BLOCK_T: tl.constexpr, BLOCK_K: tl.constexpr):
        t = tl.program_id(0).to(tl.int64) * BLOCK_T + tl.arange(0, BLOCK_T)
        live = t < n_tokens
        d = tl.load(doc_ptr + t, mask=live, other=0).to(tl.int64)
        w = tl.load(word_ptr + t, mask=live, other=0).to(tl.int64)
        z = tl.load(z_ptr + t, mask=live, other=0).to(tl.int64)
        u = tl.load(u_ptr + t, mask=live, other=0.0)
        k = tl.arange(0, BLOCK_K)
        topic = k < K
        both = live[:, None] & topic[None, :]
        p = tl.load(theta_ptr + d[:, None] * K + k[None, :], mask=both, other=0.0)
        p = p * tl.load(phi_ptr + w[:, None] * K + k[None, :], mask=both, other=0.0)
        # Self-exclusion, in the order of operations of the eager kernel.
        own = tl.load(ndk_ptr + d * K + z, mask=live, other=1).to(tl.float32)
        own = own + (tl.load(alpha_ptr + z, mask=live, other=1.0) - 1.0)
        own_w = tl.load(nwk_ptr + w * K + z, mask=live, other=1).to(tl.float32) + beta_m1
        own = tl.math.div_rn(own * own_w,
                             tl.load(nk_ptr + z, mask=live, other=1).to(tl.float32) + vbeta_m1)
        p = tl.where(k[None, :] == z[:, None], own[:, None], p)
        cum = tl.cumsum(p, axis=1)
        # p >= 0, so the scan's maximum is its last entry (padding adds zeros).
        target = tl.max(cum, axis=1) * u
        # searchsorted(right=True): the number of entries <= target.
        new = tl.sum(((cum <= target[:, None]) & topic[None, :]).to(tl.int32), axis=1)
        tl.store(out_ptr + t, tl.minimum(new, K - 1), mask=live)

    return kernel


def fused_dense_chunk(doc, word, z, theta_tab, phi_tab, n_dk, n_wk, n_k, alpha, beta, u,
                      out=None):
    """:func:`~sktopics._gibbs._sweeps.dense_chunk` in one kernel (same arguments).

    ``n_k`` must be int64 (as in :class:`~._state.GibbsState`), the tables
    contiguous. Returns int32 topics of shape ``(C,)`` (written to ``out`` if given).
    """
    C = doc.shape[0]
    K = theta_tab.shape[1]
    V = phi_tab.shape[0]
    if out is None:
        out = torch.empty(C, dtype=torch.int32, device=doc.device)
    if C == 0:
        return out
    block_k = _block_k(K)
    block_t = max(1, _TILE // block_k)
    grid = (-(-C // block_t),)
    try:
        kernel = _dense_kernel(_interpreting())
        kernel[grid](doc, word, z, u, theta_tab, phi_tab, n_dk, n_wk, n_k, alpha, out, C, K,
                     float(beta) - 1.0, float(V * beta) - 1.0, BLOCK_T=block_t,
                     BLOCK_K=block_k)
        configuration = (doc.device, block_k)
        if doc.device.type == "cuda" and configuration not in _verified:
            # A fault of a launch surfaces at the next synchronisation, outside this
            # try: the first launch of each configuration is waited for here.
            torch.cuda.synchronize(doc.device)
            _verified.add(configuration)
    except Exception as exc:  # noqa: BLE001 - whatever Triton raises, fall back once
        _failures[(doc.device.type, block_k)] = repr(exc)
        warn(f"sktopics: the fused Gibbs kernel failed at {block_k} topic lanes on "
             f"{doc.device.type} ({exc!r}); sweeps of {block_k // 2 + 1}-{block_k} topics "
             "there use torch operations from now on in this process (slower on a GPU).",
             RuntimeWarning)
        raise FusedKernelError(str(exc)) from exc
    return out
