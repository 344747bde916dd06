"""Counter-based random numbers and the samplers built on them, in pure torch.

Every random number of sktopics' samplers and evaluators is a pure function of a
key and integer counters, so the value an element receives does not depend on the
chunk or batch size, on the number of intra-op threads, or on the device (integer
arithmetic wraps the same way on CPU and CUDA). This is the "counter-based
randomness" of ``gibbs.md`` section 6 and ``evaluation.md``.

* :func:`stream_key` / :func:`counter_uniform`: the SplitMix64 finaliser applied to
  a 64-bit counter (the Gibbs sweeps: 24-bit float32 uniforms).
* Keyed streams for evaluation: :func:`root_key`, :func:`row_keys`, :func:`bits`,
  :func:`uniform`, :func:`normal`, and the samplers :func:`counter_log_gamma`,
  :func:`counter_log_dirichlet`.
* :func:`marsaglia_tsang`: the Gamma acceptance step shared by every Gamma sampler
  (counter-based here, generator-based in :mod:`sktopics._gibbs._infer`).

Maths only: imports numpy and torch, never scikit-learn.
"""

import math
import numbers

import numpy as np
import torch

__all__ = [
    "bits",
    "categorical",
    "counter_log_dirichlet",
    "counter_log_gamma",
    "counter_uniform",
    "normal",
    "root_key",
    "row_keys",
    "stream_key",
    "uniform",
]

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


# ------------------------------------------------------------- keyed evaluation streams

_M32 = 0xFFFFFFFF
_TWO32 = float(2**32)
#: Marsaglia-Tsang attempts drawn at once per Gamma variate. Each is accepted with
#: probability above 0.95, so on a GPU 16 attempts leave nothing for the loop that
#: would need a host synchronisation to see that nothing is left (CPU: cheaper).
_GAMMA_TRIES = {"cpu": 3, "cuda": 16}


def _mul32(x, c):
    """(x * c) mod 2^32 for 0 <= x < 2^32 without int64 overflow."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & _M32


def _hash32(x):
    """lowbias32 integer hash (C. Wellons) on int64 tensors holding 32-bit values."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    x = x ^ (x >> 16)
    return x


def _hash32_int(x):
    x &= _M32
    x ^= x >> 16
    x = (x * 0x7FEB352D) & _M32
    x ^= x >> 15
    x = (x * 0x846CA68B) & _M32
    x ^= x >> 16
    return x


def _mix(h, counter):
    if not torch.is_tensor(counter):
        return _hash32(h ^ _hash32_int(int(counter) + 0x9E3779B9))
    return _hash32(h ^ _hash32((counter + 0x9E3779B9) & _M32))


def bits(keys, *counters):
    """Random bits keyed by ``keys`` and the counters (broadcast together)."""
    h = keys
    for counter in counters:
        h = _mix(h, counter)
    return h


def uniform(keys, *counters, dtype=torch.float64):
    """Uniform(0, 1) variates, a pure function of the keys and counters."""
    return (bits(keys, *counters).to(dtype) + 0.5) / _TWO32


def normal(keys, *counters, dtype=torch.float64):
    """Standard normal variates (Box-Muller), a pure function of the keys and counters."""
    u1 = uniform(keys, *counters, 0, dtype=dtype)
    u2 = uniform(keys, *counters, 1, dtype=dtype)
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)


def _marsaglia_tsang(d, cc, elem_keys, tries):
    """Attempts ``tries`` (T, 1...) for elements keyed by ``elem_keys``: (accepted, log g)."""
    x = normal(elem_keys, tries)
    u = uniform(elem_keys, tries, 2)
    v = (1.0 + cc * x) ** 3
    v_pos = v.clamp_min(1e-300)
    ok = (v > 0) & (torch.log(u) < 0.5 * x * x + d - d * v + d * torch.log(v_pos))
    return ok, torch.log(d) + torch.log(v_pos)


def counter_log_gamma(shape, keys, *counters, n_tries=None):
    """log of Gamma(shape, 1) variates (Marsaglia & Tsang), shape (B, K), keys (B, 1).

    Exact: attempts continue (for the few rejected elements only) until accepted.
    Attempt ``t`` of an element is a function of its key and ``t``, so the result
    does not depend on ``n_tries``, the attempts made in the first round.
    """
    device = shape.device
    if n_tries is None:
        n_tries = _GAMMA_TRIES.get(device.type, _GAMMA_TRIES["cuda"])
    n_topics = shape.shape[-1]
    boost = shape < 1
    a = torch.where(boost, shape + 1.0, shape)
    d = a - 1.0 / 3.0
    cc = 1.0 / torch.sqrt(9.0 * d)
    topic = torch.arange(n_topics, device=device).view(1, -1)
    elem = bits(keys, *counters, topic)  # (B, K)
    tries = torch.arange(n_tries, device=device).view(-1, 1, 1)
    ok, log_g_all = _marsaglia_tsang(d, cc, elem, tries)
    first = torch.argmax(ok.to(torch.int8), dim=0, keepdim=True)
    log_g = torch.gather(log_g_all, 0, first).squeeze(0)
    accepted = ok.any(0)
    offset = n_tries
    while not bool(accepted.all()):
        idx = torch.nonzero(~accepted, as_tuple=True)
        t = torch.arange(offset, offset + n_tries, device=device).view(-1, 1)
        ok_s, lg_s = _marsaglia_tsang(d[idx], cc[idx], elem[idx], t)
        first_s = torch.argmax(ok_s.to(torch.int8), dim=0, keepdim=True)
        new_lg = torch.gather(lg_s, 0, first_s).squeeze(0)
        got = ok_s.any(0)
        log_g[idx] = torch.where(got, new_lg, log_g[idx])
        accepted[idx] = got
        offset += n_tries
    u_boost = uniform(elem, 3)
    return torch.where(boost, log_g + torch.log(u_boost) / shape, log_g)


def counter_log_dirichlet(concentration, keys, *counters):
    """log of Dirichlet(concentration) variates, one per row of ``concentration``."""
    log_g = counter_log_gamma(concentration, keys, *counters)
    return log_g - torch.logsumexp(log_g, dim=-1, keepdim=True)


def categorical(logits, u):
    """Inverse-CDF draw from unnormalised ``logits`` (..., K) with uniforms (...)."""
    p = torch.exp(logits - logits.amax(-1, keepdim=True))
    cum = torch.cumsum(p, -1)
    k = (cum < u.unsqueeze(-1) * cum[..., -1:]).sum(-1)
    return k.clamp_max(logits.shape[-1] - 1)


def root_key(random_state):
    """A 32-bit root key from ``random_state`` (int, None or RandomState)."""
    if random_state is None:
        seed = int(np.random.randint(np.iinfo(np.int32).max))
    elif isinstance(random_state, numbers.Integral):
        seed = int(random_state)
    elif isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(np.iinfo(np.int32).max))
    else:
        raise ValueError(f"random_state must be an int, None or a RandomState; got {random_state!r}")
    return int(np.random.SeedSequence(seed).generate_state(1)[0])


def row_keys(root, doc_ids, n_chains, stream, device):
    """Keys of the (document, chain) rows: document-major, chain-minor."""
    docs = torch.as_tensor(np.asarray(doc_ids, dtype=np.int64), device=device)
    docs = docs.repeat_interleave(n_chains)
    chains = torch.arange(n_chains, device=device).repeat(len(doc_ids))
    base = torch.full_like(docs, root)
    return bits(base, stream, docs, chains)
