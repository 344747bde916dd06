"""Documents as token rows: expansion, batching, schedules and per-document results.

The evaluators work on batches of documents, each repeated once per chain
(particle), with the tokens of a document laid out left to right and documents
sorted by decreasing length, so that the rows still holding a token at position
``j`` are a prefix of the batch. :func:`token_batches` is the one batch driver of
the z-space engines (a flat, unpadded layout, :class:`TokenBatch`);
:func:`batches` and :func:`expand_tokens` the documents of the left-to-right
filter, a batch at a time; :class:`PerDocument` collects what they estimate.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from .._random import bits, chain_keys, document_keys, stream_uniform
from ..utils._devices import device_budget
from ._tail import TailLayout, tail_start

__all__ = [
    "MAX_ELEMENTS",
    "PerDocument",
    "TokenBatch",
    "batches",
    "expand_tokens",
    "logmeanexp_stats",
    "make_token_batch",
    "temperature_schedule",
    "token_batches",
]

MAX_ELEMENTS = 1 << 22  # rows x positions x topics per batch on the CPU (GPU: device_budget)


def expand_tokens(X, rows):
    """Token lists (word ids in column order) of the given rows, padded."""
    lengths = np.asarray(X[rows].sum(1)).ravel().astype(np.int64)
    n_max = max(int(lengths.max(initial=0)), 1)
    tokens = np.zeros((len(rows), n_max), dtype=np.int64)
    for i, r in enumerate(rows):
        start, end = X.indptr[r], X.indptr[r + 1]
        words = np.repeat(X.indices[start:end], X.data[start:end].astype(np.int64))
        tokens[i, : len(words)] = words
    mask = np.arange(n_max)[None, :] < lengths[:, None]
    return tokens, mask, lengths


def batches(lengths, n_rows_per_doc, n_topics, device, row_elements=0, doc_elements=0,
            max_elements=MAX_ELEMENTS):
    """Document batches in decreasing length (the left-to-right filter's).

    A batch holds at most ``device_budget(device, max_elements)`` elements of
    rows x (positions of its longest document x ``n_topics`` + ``row_elements``)
    plus documents x positions x ``doc_elements``.
    """
    max_elements = device_budget(device, max_elements)
    order = np.argsort(-lengths, kind="stable")
    order = order[lengths[order] > 0]
    out, start = [], 0
    while start < len(order):
        n_max = max(int(lengths[order[start]]), 1)
        per_doc = n_rows_per_doc * (n_max * n_topics + row_elements) + n_max * doc_elements
        size = max(1, max_elements // max(per_doc, 1))
        out.append(order[start : start + size])
        start += size
    return out


def _flat_batches(lengths, n_chains, n_topics, device):
    """Documents (longest first) in batches of at most a budget of token rows.

    A batch holds at most ``device_budget(device, MAX_ELEMENTS)`` elements of
    (document, chain) rows x (tokens + topics): the flat layout has no padding, so
    the budget counts what is stored (about 50 bytes per token and chain on the
    CPU: 200 MB at most). The whole 20NG test set with one chain is one batch.
    """
    budget = device_budget(device, MAX_ELEMENTS)
    order = np.argsort(-lengths, kind="stable")
    order = order[lengths[order] > 0]
    cost = np.cumsum(n_chains * (lengths[order] + n_topics))
    out, start = [], 0
    while start < len(order):
        done = cost[start - 1] if start else 0
        stop = max(start + 1, int(np.searchsorted(cost, done + budget, side="right")))
        out.append(order[start:stop])
        start = stop
    return out


@dataclass
class TokenBatch:
    """A batch of documents as (document, chain) rows, tokens in a flat layout.

    Rows are document-major (row ``d * n_chains + m``), documents longest first.
    Tokens are stored position-major without padding: position ``j`` holds the
    first ``n_active[j]`` rows (a prefix, as documents are sorted), at
    ``offsets[j]:offsets[j] + n_active[j]`` of every per-token array. A
    lock-step sweep therefore reads one contiguous slice per position.

    Attributes
    ----------
    docs : ndarray
        The documents' indices in ``X``.
    n_chains : int
    keys : tensor (rows,)
        The rows' random keys (:func:`~sktopics._random.chain_keys`: from the
        documents' content, not their indices).
    n_active, offsets : list of int
        Rows holding a token at each position, and where the position starts.
    row, position, word : int64 tensors (tokens,)
        Each token's row, position in its document and vocabulary index.
    start : int64 tensor (tokens,)
        ``offsets[position]``: token ``(j, r)`` sits at ``start + r``.
    base : int64 tensor (tokens,)
        Each token's random state, :func:`~sktopics._random.bits` of its row's key
        and its position; uniforms of any stage and temperature are one step away.
    """

    docs: np.ndarray
    n_chains: int
    keys: torch.Tensor
    n_active: list
    offsets: list
    row: torch.Tensor
    position: torch.Tensor
    word: torch.Tensor
    start: torch.Tensor
    base: torch.Tensor
    _tails: dict = field(default_factory=dict, repr=False)  # layouts, made once

    @property
    def n_rows(self):
        return self.keys.shape[0]

    @property
    def n_tokens(self):
        return self.row.shape[0]

    def row_sum(self, values):
        """Per-row sums ``(rows,)`` of per-token ``values``."""
        out = torch.zeros(self.n_rows, dtype=values.dtype, device=values.device)
        return out.index_add_(0, self.row, values)

    def counts(self, z, n_topics, dtype=torch.float64):
        """Topic counts ``(rows, n_topics)`` of the per-token topics ``z``."""
        c = torch.zeros(self.n_rows * n_topics, dtype=dtype, device=z.device)
        c.index_add_(0, self.row * n_topics + z, torch.ones_like(z, dtype=dtype))
        return c.view(self.n_rows, n_topics)

    def uniforms(self, *counters, dtype=torch.float32):
        """One uniform per token, keyed by its row, its position and the counters."""
        return stream_uniform(self.base, *counters, dtype=dtype)

    def row_layout(self):
        """``(offsets, lengths)`` as int64 arrays: where each position starts, and each
        row's number of tokens (token ``(j, r)`` sits at ``offsets[j] + r`` for ``j <
        lengths[r]``), for the compiled kernels that sweep one row at a time."""
        if "rows" not in self._tails:
            n_active = np.asarray(self.n_active, dtype=np.int64)
            lengths = np.searchsorted(-n_active, -np.arange(self.n_rows), side="left")
            self._tails["rows"] = (np.asarray(self.offsets, dtype=np.int64),
                                   lengths.astype(np.int64))
        return self._tails["rows"]

    def tail(self, n_topics):
        """The :class:`~._tail.TailLayout` of the positions where few rows are left.

        A sweep runs the lock-step loop over ``offsets[:tail.start]`` and solves the
        rest by fixed-point iteration (:mod:`._tail`).
        """
        if n_topics not in self._tails:
            start = tail_start(self.n_active, n_topics, device=self.row.device)
            self._tails[n_topics] = TailLayout(self.offsets, self.n_active, start, n_topics,
                                               self.row.device)
        return self._tails[n_topics]

    def per_row(self, values):
        """``(rows, N)`` array of per-token values, 0 at padding (tests, tiny batches)."""
        n_max = len(self.n_active)
        out = values.new_zeros(self.n_rows, n_max)
        out[self.row, self.position] = values
        return out


def make_token_batch(X, docs, doc_keys, n_chains, device, root, stream):
    """The :class:`TokenBatch` of documents ``docs`` (sorted by decreasing length),
    whose :func:`~sktopics._random.document_keys` are ``doc_keys``."""
    counts = X[docs]
    lengths = np.asarray(counts.sum(1)).ravel().astype(np.int64)
    if np.any(lengths[1:] > lengths[:-1]):
        raise ValueError("documents must be sorted by decreasing length")
    doc_words = np.repeat(counts.indices, counts.data.astype(np.int64))  # doc-major
    doc_start = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    n_max = int(lengths.max(initial=0))
    # rows holding a token at position j: n_chains x documents longer than j
    n_docs_at = np.searchsorted(-lengths, -np.arange(n_max), side="left")
    n_active = n_docs_at * n_chains
    offsets = np.concatenate([[0], np.cumsum(n_active)[:-1]]).astype(np.int64)
    total = int(n_active.sum())
    position = np.repeat(np.arange(n_max, dtype=np.int64), n_active)
    start = np.repeat(offsets, n_active)
    row = np.arange(total, dtype=np.int64) - start
    word = doc_words[doc_start[row // n_chains] + position]
    t = {k: torch.as_tensor(v, device=device)
         for k, v in dict(row=row, position=position, start=start, word=word).items()}
    keys = chain_keys(root, doc_keys, n_chains, stream, device)
    return TokenBatch(docs=np.asarray(docs), n_chains=n_chains, keys=keys,
                      n_active=n_active.tolist(), offsets=offsets.tolist(),
                      base=bits(keys[t["row"]], t["position"]), **t)


def token_batches(X, *, n_chains, n_topics, device, root, stream):
    """The :class:`TokenBatch` es of ``X``, longest documents first (empty ones skipped)."""
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    doc_keys = document_keys(X)
    for docs in _flat_batches(lengths, n_chains, n_topics, device):
        yield make_token_batch(X, docs, doc_keys[docs], n_chains, device, root, stream)


def temperature_schedule(schedule, n_temperatures):
    """Inverse temperatures 0 = b_0 < ... < b_S = 1 as a float64 array (S + 1,)."""
    if isinstance(schedule, str):
        s = n_temperatures
        if schedule == "linear":
            betas = np.linspace(0.0, 1.0, s + 1)
        elif schedule == "sigmoid":
            x = np.linspace(-4.0, 4.0, s + 1)
            sig = 1.0 / (1.0 + np.exp(-x))
            betas = (sig - sig[0]) / (sig[-1] - sig[0])
        elif schedule == "geometric":
            betas = np.concatenate([[0.0], np.geomspace(1e-4, 1.0, s)])
        elif schedule == "power":
            betas = np.linspace(0.0, 1.0, s + 1) ** 4
        else:
            raise ValueError(f"Unknown schedule {schedule!r}.")
    else:
        betas = np.asarray(schedule, dtype=np.float64)
        if betas.ndim != 1 or betas.size < 2 or betas[0] != 0 or betas[-1] != 1:
            raise ValueError("A schedule array must start at 0 and end at 1.")
        if np.any(np.diff(betas) < 0):
            raise ValueError("A schedule array must be non-decreasing.")
    return betas.astype(np.float64)


def logmeanexp_stats(logw):
    """(estimate, stderr, ess) per row of logw (D, M)."""
    n = logw.shape[1]
    est = torch.logsumexp(logw, 1) - math.log(n)
    w = torch.exp(logw - logw.amax(1, keepdim=True))
    ess = w.sum(1) ** 2 / (w * w).sum(1)
    if n > 1:
        se = torch.sqrt((1.0 / ess - 1.0 / n).clamp_min(0.0))
    else:
        se = torch.full_like(est, float("nan"))
    return est, se, ess


class PerDocument:
    """Per-document estimates, standard errors and effective sample sizes.

    Filled batch by batch with :meth:`add`; documents never added (empty ones)
    keep estimate 0, standard error 0 and the full sample size.
    """

    def __init__(self, n_docs, n_chains):
        self.estimate = np.zeros(n_docs)
        self.stderr = np.zeros(n_docs)
        self.ess = np.full(n_docs, float(n_chains))

    def add(self, docs, stats):
        """Record ``(estimate, stderr, ess)`` tensors for the documents ``docs``."""
        est, se, ess = (s.cpu().numpy() for s in stats)
        self.estimate[docs], self.stderr[docs], self.ess[docs] = est, se, ess

    def add_weights(self, docs, logw, n_chains):
        """Record the log-mean-exp statistics of the chains' log-weights ``(rows,)``."""
        self.add(docs, logmeanexp_stats(logw.view(len(docs), n_chains)))

    def min_ess(self, nonempty):
        return float(self.ess[nonempty].min()) if nonempty.any() else float("nan")
