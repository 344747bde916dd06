"""Documents as token rows: expansion, batching, schedules and per-document results.

The evaluators work on batches of documents, each repeated once per chain
(particle), with the tokens of a document laid out left to right and documents
sorted by decreasing length, so that the rows still holding a token at position
``j`` are a prefix of the batch. :func:`token_batches` is the one batch driver of
the z-space engines; :class:`PerDocument` collects what they estimate.
"""

import math
from dataclasses import dataclass

import numpy as np
import torch

from .._random import row_keys
from ..utils._torch import device_budget

__all__ = [
    "MAX_ELEMENTS",
    "PerDocument",
    "TokenBatch",
    "batches",
    "expand_tokens",
    "logmeanexp_stats",
    "schedule",
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


def batches(lengths, n_rows_per_doc, n_topics, device, min_fill=0.0, row_elements=0):
    """Document batches in decreasing length (rows of a batch are length-sorted).

    A batch holds at most ``device_budget(device, MAX_ELEMENTS)`` rows x
    (positions x topics + ``row_elements``); with
    ``min_fill > 0`` a new batch also starts when a document is shorter than
    ``min_fill`` times the batch's longest one (bounds the padding of kernels that
    work on all positions at once).
    """
    max_elements = device_budget(device, MAX_ELEMENTS)
    order = np.argsort(-lengths, kind="stable")
    order = order[lengths[order] > 0]
    out, start = [], 0
    while start < len(order):
        n_max = max(int(lengths[order[start]]), 1)
        per_doc = n_rows_per_doc * (n_max * n_topics + row_elements)
        size = max(1, max_elements // max(per_doc, 1))
        if min_fill > 0:
            short = np.flatnonzero(lengths[order[start : start + size]] < min_fill * n_max)
            if short.size:
                size = max(1, int(short[0]))
        out.append(order[start : start + size])
        start += size
    return out


def _kernel_batches(lengths, n_chains, n_topics, kernel, device):
    """Document batches for a z-space kernel.

    The collapsed sweep holds O(rows x (N + K)) state (word factors are looked up
    per position in a per-temperature table), so its batches are large: the
    lock-step loop then runs once over the longest document for many rows at a
    time. The blocked kernel materialises (rows, N, K) word factors and bounds
    padding.
    """
    if kernel == "blocked":
        return batches(lengths, n_chains, n_topics, device, min_fill=0.5)
    return batches(lengths, n_chains, 2, device, row_elements=n_topics)


def _batch_rows(X, batch, n_chains, device):
    """The token rows of a batch of documents.

    Returns the tokens ``(docs, N)``, the mask of the (document, chain) rows
    ``(docs * chains, N)``, document-major, and the number of rows holding a
    token at each position (a host list, so that the lock-step loops need no
    host-device synchronisation to know it).
    """
    tokens, mask, lengths = expand_tokens(X, batch)
    if np.any(lengths[1:] > lengths[:-1]):
        raise ValueError("rows must be sorted by decreasing length")
    n_active = (mask.sum(0) * n_chains).tolist()
    mask_r = torch.as_tensor(mask, device=device).repeat_interleave(n_chains, 0)
    return torch.as_tensor(tokens, device=device), mask_r, n_active


@dataclass
class TokenBatch:
    """A batch of documents as (document, chain) rows, document-major.

    ``docs``: the documents' indices in ``X``; ``tokens`` ``(docs, N)``; ``mask``
    ``(rows, N)``; ``n_active``: rows holding a token at each position (host
    list); ``keys`` ``(rows,)``: the rows' random keys.
    """

    docs: np.ndarray
    tokens: torch.Tensor
    mask: torch.Tensor
    n_active: list
    keys: torch.Tensor


def token_batches(X, *, n_chains, n_topics, kernel, device, root, stream):
    """The :class:`TokenBatch` es of ``X`` for a z-space kernel, longest documents first."""
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    for docs in _kernel_batches(lengths, n_chains, n_topics, kernel, device):
        tokens, mask, n_active = _batch_rows(X, docs, n_chains, device)
        keys = row_keys(root, docs, n_chains, stream, device)
        yield TokenBatch(docs, tokens, mask, n_active, keys)


def schedule(schedule, n_temperatures):
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
