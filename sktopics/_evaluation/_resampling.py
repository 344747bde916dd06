"""Systematic resampling of chains and particles (AIS with resampling, SMC filters)."""

import math

import torch

from .._random import uniform

__all__ = ["may_hold_any", "resample_chains", "systematic_ancestors"]


def systematic_ancestors(w, need, u0):
    """Row indices after systematic resampling of the groups flagged by ``need``.

    ``w`` (G, M) holds non-negative weights of M members per group, ``u0`` (G, 1) one
    uniform per group; rows are group-major, and unflagged groups keep their rows.
    """
    n_groups, m = w.shape
    cum = torch.cumsum(w / w.sum(1, keepdim=True), 1)
    cum[:, -1] = 1.0
    points = (u0 + torch.arange(m, device=w.device, dtype=torch.float64).view(1, -1)) / m
    anc = torch.searchsorted(cum, points.contiguous()).clamp_max(m - 1)
    ident = torch.arange(m, device=w.device).expand(n_groups, -1)
    anc = torch.where(need.unsqueeze(1), anc, ident)
    return (anc + torch.arange(n_groups, device=w.device).view(-1, 1) * m).view(-1)


def may_hold_any(flags):
    """Whether any flag may be set: exact on the CPU; always True on a GPU.

    Reading the answer from a GPU would synchronise with the host; there the
    flagged work runs unconditionally, which is a no-op for unflagged rows.
    """
    return flags.device.type != "cpu" or bool(flags.any())


def resample_chains(logw, z, c, batch, threshold, *counters):
    """Systematic resampling of each document's chains where ESS < threshold * M.

    Weights of resampled documents are all set to their log-mean weight, so the
    running estimate is unchanged and stays unbiased (an SMC sampler). The states
    ``z`` (per token, in the flat layout of ``batch``) and ``c`` (rows, K) are
    replaced in place by their ancestors'. Returns the weights and the number of
    documents resampled, as a tensor.
    """
    n_chains = batch.n_chains
    n_docs = logw.shape[0] // n_chains
    lw = logw.view(n_docs, n_chains)
    w = torch.exp(lw - lw.amax(1, keepdim=True))
    ess = w.sum(1) ** 2 / (w * w).sum(1)
    need = ess < threshold * n_chains
    if not may_hold_any(need):
        return logw, need.sum()
    u0 = uniform(batch.keys.view(n_docs, n_chains)[:, :1], 77, *counters)  # (D, 1)
    ancestor = systematic_ancestors(w, need, u0)
    # a row's ancestor is a chain of the same document: the same positions
    z.copy_(z[batch.start + ancestor[batch.row]])
    c.copy_(c[ancestor])
    mean_lw = torch.logsumexp(lw, 1, keepdim=True) - math.log(n_chains)
    lw = torch.where(need.unsqueeze(1), mean_lw.expand_as(lw), lw)
    return lw.reshape(-1), need.sum()
