"""Counter-based random numbers and the samplers built on them, in pure torch.

Every random number of sktopics' samplers and evaluators is a pure function of a
key and integer counters, so the value an element receives does not depend on the
chunk or batch size, on the number of intra-op threads, or on the device (integer
arithmetic wraps the same way on CPU and CUDA).

* :func:`stream_key` / :func:`counter_uniform`: the SplitMix64 finaliser applied to
  a 64-bit counter (the Gibbs sweeps: 24-bit float32 uniforms).
* Keyed streams for evaluation, on the same finaliser: :func:`root_key`,
  :func:`document_keys`, :func:`chain_keys`, :func:`bits`, :func:`uniform`,
  :func:`stream_uniform`,
  :func:`normal`, and the samplers :func:`counter_log_gamma`,
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
    "chain_keys",
    "counter_log_dirichlet",
    "counter_log_gamma",
    "counter_key",
    "counter_uniform",
    "document_keys",
    "marsaglia_tsang",
    "normal",
    "root_key",
    "stream_key",
    "stream_uniform",
    "uniform",
]

_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15
_MIX1 = 0xBF58476D1CE4E5B9
_MIX2 = 0x94D049BB133111EB


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
    x = _finalise(index.mul(_signed(_GOLDEN)).add_(key))
    return _top_bits(x, 24, torch.float32)


def _finalise(x):
    """The SplitMix64 finaliser of an int64 tensor, in place (returns ``x``).

    In place with one scratch tensor: two int64 temporaries instead of a dozen.
    """
    shifted = torch.empty_like(x)
    for shift, multiplier in ((30, _MIX1), (27, _MIX2), (31, None)):
        x.bitwise_xor_(_logical_shift_right(x, shift, out=shifted))
        if multiplier is not None:
            x.mul_(_signed(multiplier))
    return x


def _top_bits(x, n_bits, dtype):
    """``m / 2**n_bits`` from the top ``n_bits`` bits ``m`` of ``x`` (consumes ``x``)."""
    return _logical_shift_right(x, 64 - n_bits, out=x).to(dtype).mul_(1.0 / (1 << n_bits))


def _logical_shift_right(x, shift, out):
    """Logical right shift of an int64 tensor (torch's ``>>`` is arithmetic)."""
    torch.bitwise_right_shift(x, shift, out=out)
    return out.bitwise_and_((1 << (64 - shift)) - 1)




# ------------------------------------------------------------- keyed evaluation streams
#
# The evaluators key every random number by (seed, document, chain, stage,
# temperature, position): a (document, chain) row's key (:func:`chain_keys`, from
# the document's content key :func:`document_keys`) mixed with counters. A
# counter mixes into a 64-bit state ``h`` as one SplitMix64 step, ``finalise(h +
# counter * golden)`` (Python-int counters are folded into one constant first), so
# equal keys and counters give equal bits on every device and for every batching.

#: Marsaglia-Tsang attempts drawn at once per Gamma variate. Each is accepted with
#: probability above 0.95, so on a GPU 16 attempts leave nothing for the loop that
#: would need a host synchronisation to see that nothing is left (CPU: cheaper).
_GAMMA_TRIES = {"cpu": 3, "cuda": 16}


def counter_key(*counters):
    """One signed 64-bit constant from Python-int counters (a stage, a temperature...)."""
    key = 0x243F6A8885A308D3
    for counter in counters:
        key = _mix_python(key ^ (int(counter) * _GOLDEN + 0x13198A2E03707344))
    return _signed(key)


def _mix(h, counter):
    """One tensor counter into the int64 states ``h`` (a new tensor)."""
    return _finalise(h + counter * _signed(_GOLDEN))


def bits(keys, *counters):
    """64 random bits (int64) keyed by ``keys`` and the counters (broadcast together)."""
    python = [c for c in counters if not torch.is_tensor(c)]
    tensors = [c for c in counters if torch.is_tensor(c)]
    # the scalar counters (none included) fold into one constant: one pass over the tensor
    h = keys if tensors and not python else _finalise(keys.add(counter_key(*python)))
    for counter in tensors:
        h = _mix(h, counter)
    return h


def uniform(keys, *counters, dtype=torch.float64):
    """Uniform(0, 1) variates (open interval), a pure function of keys and counters.

    52 random bits for float64, 23 for float32, as ``(2m + 1) / 2^(bits + 1)``:
    never 0 nor 1, so that an inverse-CDF draw never lands on a zero-probability
    category nor past the last one.
    """
    return stream_uniform(keys, *counters, dtype=dtype)


def stream_uniform(base, *counters, dtype=torch.float32):
    """Uniforms of per-element states ``base`` (from :func:`bits`) and counters.

    One SplitMix64 step per element whatever the counters: the cheap way to draw a
    fresh uniform per token at every temperature from a per-token ``base`` made once.
    """
    x = bits(base, *counters)
    # (2m + 1) / 2^(n + 1) for the top n bits m: exact in the dtype, in (0, 1)
    n_bits = 52 if dtype == torch.float64 else 23
    x = _logical_shift_right(x, 64 - n_bits, out=x).mul_(2).add_(1)
    return x.to(dtype).mul_(1.0 / (1 << (n_bits + 1)))


def normal(keys, *counters, dtype=torch.float64):
    """Standard normal variates (Box-Muller), a pure function of the keys and counters."""
    h = bits(keys, *counters)
    u1 = stream_uniform(h, 0, dtype=dtype)
    u2 = stream_uniform(h, 1, dtype=dtype)
    return torch.sqrt(-2.0 * torch.log(u1)) * torch.cos(2.0 * math.pi * u2)


def marsaglia_tsang(d, c, x, u):
    """Marsaglia & Tsang's (2000) acceptance step for Gamma(d + 1/3) variates.

    ``d = a - 1/3`` and ``c = 1 / sqrt(9 d)``, ``x`` standard normal and ``u``
    uniform proposals (broadcast with ``d``). Returns ``(log(d v^3), accepted)``;
    the log is NaN where ``v <= 0``, which is never accepted.
    """
    v = torch.mul(c, x).add_(1.0)
    log_v = torch.log(v)  # NaN where v <= 0: rejected by the comparison below
    # Accept when log u < x^2 / 2 + d (1 - v^3 + log v^3); in-place to save passes.
    bound = torch.mul(v, v).mul_(v).neg_().add_(1.0).add_(log_v, alpha=3.0)
    bound.mul_(d).addcmul_(x, x, value=0.5)
    accept = torch.log(u.clamp_min(torch.finfo(u.dtype).tiny)) < bound
    return torch.add(torch.log(d), log_v, alpha=3.0), accept


def counter_log_gamma(shape, keys, *counters, n_tries=None):
    """log of Gamma(shape, 1) variates, shape (B, K), keys (B, 1): counter-based.

    Exact: attempts continue (for the few rejected elements only) until accepted.
    Attempt ``t`` of an element is a function of its key and ``t``, so the result
    does not depend on ``n_tries``, the attempts made in the first round. Shapes
    below 1 use ``Gamma(a) = Gamma(a + 1) U^(1/a)``, in the log domain.
    """
    device = shape.device
    if n_tries is None:
        n_tries = _GAMMA_TRIES.get(device.type, _GAMMA_TRIES["cuda"])
    boost = shape < 1
    d = torch.where(boost, shape + 1.0, shape) - 1.0 / 3.0
    c = torch.rsqrt(9.0 * d)
    topic = torch.arange(shape.shape[-1], device=device).view(1, -1)
    elem = bits(keys, *counters, topic)  # (B, K)

    def attempts(d, c, elem, tries):
        return marsaglia_tsang(d, c, normal(elem, tries, dtype=d.dtype),
                               stream_uniform(elem, tries, 2, dtype=d.dtype))

    tries = torch.arange(n_tries, device=device).view(-1, 1, 1)
    log_g_all, ok = attempts(d, c, elem, tries)
    first = torch.argmax(ok.to(torch.int8), dim=0, keepdim=True)
    log_g = torch.gather(log_g_all, 0, first).squeeze(0)
    accepted = ok.any(0)
    offset = n_tries
    while not bool(accepted.all()):
        idx = torch.nonzero(~accepted, as_tuple=True)
        t = torch.arange(offset, offset + n_tries, device=device).view(-1, 1)
        lg_s, ok_s = attempts(d[idx], c[idx], elem[idx], t)
        first_s = torch.argmax(ok_s.to(torch.int8), dim=0, keepdim=True)
        got = ok_s.any(0)
        log_g[idx] = torch.where(got, torch.gather(lg_s, 0, first_s).squeeze(0), log_g[idx])
        accepted[idx] = got
        offset += n_tries
    u_boost = stream_uniform(elem, 3, dtype=shape.dtype)
    return torch.where(boost, log_g + torch.log(u_boost) / shape, log_g)


def counter_log_dirichlet(concentration, keys, *counters):
    """log of Dirichlet(concentration) variates, one per row of ``concentration``."""
    log_g = counter_log_gamma(concentration, keys, *counters)
    return log_g - torch.logsumexp(log_g, dim=-1, keepdim=True)


def root_key(random_state):
    """A 64-bit root key (signed int) from ``random_state`` (int, None or RandomState)."""
    if random_state is None:
        seed = int(np.random.randint(np.iinfo(np.int32).max))
    elif isinstance(random_state, numbers.Integral):
        seed = int(random_state)
    elif isinstance(random_state, np.random.RandomState):
        seed = int(random_state.randint(np.iinfo(np.int32).max))
    else:
        raise ValueError(f"random_state must be an int, None or a RandomState; got {random_state!r}")
    state = np.random.SeedSequence(seed).generate_state(2, dtype=np.uint64)
    return _signed(int(state[0]))


#: Counters of the document keys: one for a non-zero cell, one for the finished key.
_CELL, _DOCUMENT = 0x5A17, 0xD0C5


def document_keys(X):
    """One 64-bit key per document (row) of a CSR matrix, from its content alone.

    Each non-zero cell gives a hash of its column and of the exact bit pattern of
    its float64 count (fractional counts included); a document's key is the
    finalised sum (modulo 2**64) of its cells' hashes. So the key does not depend on
    the document's row, on the other documents or on the order of its cells, and
    documents differing in one column or one count get different keys (up to
    64-bit collisions). An empty document gets one fixed key. Identical documents
    get identical keys, and so identical estimates: each estimate is still unbiased,
    identical documents just share their Monte Carlo error.

    Parameters
    ----------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_words)
        Counts; duplicate entries are summed and explicit zeros ignored.

    Returns
    -------
    keys : ndarray of int64, shape (n_documents,)
    """
    if not X.has_canonical_format:  # duplicates summed, so that equal rows hash equally
        X = X.copy()
        X.sum_duplicates()
    data = np.array(X.data, dtype=np.float64)
    column = torch.from_numpy(np.array(X.indices, dtype=np.int64))
    count = torch.from_numpy(data.view(np.int64))
    cell = bits(torch.zeros_like(column), _CELL, column, count)
    cell = torch.where(torch.from_numpy(data != 0), cell, 0)
    # per-row sums modulo 2**64 (unsigned: numpy wraps) as differences of a cumsum
    cum = np.zeros(len(data) + 1, dtype=np.uint64)
    np.cumsum(cell.numpy().view(np.uint64), out=cum[1:])
    indptr = np.asarray(X.indptr, dtype=np.int64)
    total = (cum[indptr[1:]] - cum[indptr[:-1]]).view(np.int64)
    return bits(torch.from_numpy(total), _DOCUMENT).numpy()


def chain_keys(root, doc_keys, n_chains, stream, device):
    """Keys of the (document, chain) rows of a batch: document-major, chain-minor.

    Parameters
    ----------
    root : int
        The run's :func:`root_key`.
    doc_keys : array-like of int64
        The batch's documents' :func:`document_keys`.
    n_chains : int
        Rows per document.
    stream : int
        The engine's stream (different engines draw different numbers).
    device : torch.device
    """
    docs = bits(torch.as_tensor(np.asarray(doc_keys, dtype=np.int64), device=device), root, stream)
    chains = torch.arange(n_chains, device=device).repeat(docs.shape[0])
    return bits(docs.repeat_interleave(n_chains), chains)
