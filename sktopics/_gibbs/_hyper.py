"""Dirichlet hyper-parameter optimisation from Gibbs counts (Minka's fixed point).

Given the document-topic counts ``n_dk`` of a Gibbs state, the Dirichlet-multinomial
evidence ``prod_d p(n_d | alpha)`` is maximised in ``alpha`` by Minka's (2000)
fixed-point iteration

    alpha_k <- alpha_k * sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
                       / sum_d [psi(n_d + alpha_0) - psi(alpha_0)],

which is what Mallet's ``--optimize-interval`` and tomotopy's ``optim_interval``
do (Wallach, Mimno & McCallum 2009, "Rethinking LDA: why priors matter"). Entries
with ``n_dk = 0`` contribute nothing to the numerator, so only the non-zero counts
are visited. The symmetric topic-word ``beta`` uses the same iteration with
``V beta`` in the denominator.

The per-topic sums of the numerator are order-independent on every device
(:func:`topic_sums`), so that a learned ``alpha`` is bit-identical for a seed on a
GPU too.

Maths only: imports numpy and torch, never scikit-learn.
"""

import numpy as np
import torch

__all__ = ["document_statistics", "optimize_alpha", "optimize_beta", "topic_sums"]

_MIN_CONCENTRATION = 1e-6


def _nonzero_values(counts):
    flat = counts.reshape(-1)
    nz = flat.nonzero().squeeze(1)
    return nz, flat[nz].to(torch.float64)


def topic_sums(topic, values, n_topics):
    """``sums[k] = values[topic == k].sum()`` in float64, whatever the order of the inputs.

    On the CPU, ``index_add_`` adds sequentially. On a GPU it would add with
    floating-point atomics, whose order, and so whose rounding, depends on thread
    timing; there the values are summed as fixed-point integers instead
    (:func:`fixed_point_topic_sums`), which integer atomics add exactly.
    """
    if values.device.type == "cpu":
        out = torch.zeros(n_topics, dtype=torch.float64, device=values.device)
        return out.index_add_(0, topic, values.to(torch.float64))
    return fixed_point_topic_sums(topic, values, n_topics)


def fixed_point_topic_sums(topic, values, n_topics):
    """Per-topic sums through fixed-point integers: exact given the rounding, order-free.

    Each topic gets its own scale ``2**e``, the largest that keeps
    ``(number of its values) x (its largest |value|)`` below ``2**62``; every value
    is rounded to an integer multiple of ``2**-e`` and the integers are summed
    exactly. The result is within ``n_k 2**-(e + 1)`` of the exact sum: a relative
    error below ``2**-62`` of that bound (about 1e-18 of it).
    """
    values = values.to(torch.float64)
    device = values.device
    count = torch.bincount(topic, minlength=n_topics).to(torch.float64)
    peak = torch.zeros(n_topics, dtype=torch.float64, device=device).scatter_reduce_(
        0, topic, values.abs(), "amax")
    _, exponent = torch.frexp(peak * count)  # bound < 2**exponent
    scale = torch.ldexp(torch.ones_like(peak), 62 - exponent)
    fixed = torch.round(values * scale.index_select(0, topic)).to(torch.int64)
    total = torch.zeros(n_topics, dtype=torch.int64, device=device).index_add_(0, topic, fixed)
    return total.to(torch.float64) / scale


def document_statistics(n_dk):
    """What :func:`optimize_alpha` needs of a corpus's documents, compactly.

    Minka's iteration reads the counts only through ``psi(n_dk + alpha_k)`` and
    ``psi(n_d + alpha_0)``, so equal counts can be weighted by how often they occur
    (the histogram form of Wallach's thesis and Mallet).

    Returns
    -------
    statistics : tuple of int64 arrays
        ``(topic, count, weight)`` of the non-zero ``n_dk`` values, and ``(length,
        weight)`` of the non-zero document lengths.
    """
    K = n_dk.shape[1]
    nz, values = _nonzero_values(n_dk)
    key = (values.to(torch.int64) * K + nz % K).cpu().numpy()
    cells, cell_weight = np.unique(key, return_counts=True)
    n_d = n_dk.sum(1, dtype=torch.int64).cpu().numpy()
    lengths, length_weight = np.unique(n_d[n_d > 0], return_counts=True)
    return cells % K, cells // K, cell_weight, lengths, length_weight


def optimize_alpha(n_dk, alpha, n_iter=50, tol=1e-6, collective=None, others=None):
    """Asymmetric ``alpha`` maximising the evidence of the counts ``n_dk``.

    Parameters
    ----------
    n_dk : int tensor (D, K)
    alpha : array-like (K,)
        Starting point.
    n_iter : int
    tol : float
        Stop when the largest relative change is below ``tol``.
    collective : Collective or None
        When ``n_dk`` holds one rank's documents of a data-parallel corpus: the sums
        over documents are summed over the ranks too, so every rank learns the
        whole corpus's ``alpha``.
    others : list of tuple or None
        :func:`document_statistics` of more documents (the other shards of an online
        fit), whose sums are added to those of ``n_dk``.

    Returns
    -------
    alpha : float64 tensor (K,) on the device of ``n_dk``
    """
    device = n_dk.device
    K = n_dk.shape[1]
    alpha = torch.as_tensor(alpha, dtype=torch.float64, device=device).clone()
    n_d = n_dk.sum(1, dtype=torch.int64)
    n_d = n_d[n_d > 0].to(torch.float64)
    nz, values = _nonzero_values(n_dk)
    topic = nz % K
    extra = _stacked(others, device)
    if collective is None and n_d.numel() == 0 and extra is None:
        return alpha
    for _ in range(n_iter):
        alpha_sum = alpha.sum()
        alpha_t = alpha[topic]
        numer = topic_sums(topic, torch.digamma(values + alpha_t) - torch.digamma(alpha_t), K)
        denom = (torch.digamma(n_d + alpha_sum) - torch.digamma(alpha_sum)).sum().view(1)
        if extra is not None:
            e_topic, e_count, e_weight, e_length, e_length_weight = extra
            e_alpha = alpha[e_topic]
            numer += topic_sums(e_topic, e_weight * (torch.digamma(e_count + e_alpha)
                                                     - torch.digamma(e_alpha)), K)
            denom += (e_length_weight * (torch.digamma(e_length + alpha_sum)
                                         - torch.digamma(alpha_sum))).sum()
        if collective is not None:
            collective.sum_(numer)
            collective.sum_(denom)
        if float(denom) == 0:  # no document with tokens (on any rank, in any shard)
            return alpha
        new = (alpha * numer / denom).clamp_min(_MIN_CONCENTRATION)
        change = float(((new - alpha).abs() / alpha).max())
        alpha = new
        if change < tol:
            break
    return alpha


def _stacked(statistics, device):
    """Several :func:`document_statistics` as one, on ``device`` (``None`` if none)."""
    if not statistics:
        return None
    parts = [np.concatenate([s[i] for s in statistics]) for i in range(5)]
    topic = torch.as_tensor(parts[0], dtype=torch.int64, device=device)
    return (topic, *(torch.as_tensor(p, dtype=torch.float64, device=device)
                     for p in parts[1:]))


def optimize_beta(n_wk, n_k, beta, n_iter=50, tol=1e-6):
    """Symmetric ``beta`` maximising the evidence of the topic-word counts.

    Parameters
    ----------
    n_wk : int tensor (V, K)
    n_k : int tensor (K,)
    beta : float
    n_iter : int
    tol : float

    Returns
    -------
    beta : float
    """
    V = n_wk.shape[0]
    _, values = _nonzero_values(n_wk)
    n_k = n_k[n_k > 0].to(torch.float64)
    if n_k.numel() == 0:
        return float(beta)
    beta = float(beta)
    for _ in range(n_iter):
        psi_beta = torch.digamma(torch.tensor(beta, dtype=torch.float64))
        numer = float((torch.digamma(values + beta) - psi_beta).sum())
        vb = torch.tensor(V * beta, dtype=torch.float64)
        denom = V * float((torch.digamma(n_k + vb) - torch.digamma(vb)).sum())
        new = max(beta * numer / denom, _MIN_CONCENTRATION)
        change = abs(new - beta) / beta
        beta = new
        if change < tol:
            break
    return beta
