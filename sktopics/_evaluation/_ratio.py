"""Annealing from one topic model to another: ratio-AIS and iteration-AIS engines.

Ratio-AIS (Foulds & Smyth 2014): chains start at the posterior of model B,
p(z | w, B), and anneal to p(z | w, A) along a :class:`~._zspace.ZPath`; the mean
importance weight estimates p(w | A) / p(w | B) directly. Iteration-AIS continues
the same chains from one training snapshot to the next.
"""

import itertools

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment

from .._random import uniform
from ._resampling import resample_chains
from ._tokens import PerDocument, logmeanexp_stats, token_batches
from ._zspace import (
    ZPath,
    anneal,
    draw_prior,
    draw_sequential,
    kernel_fn,
    log_phi_rows,
    topic_word_tensor,
)

__all__ = ["embed_smaller_model", "iteration_segments", "matching_permutation", "ratio_direction"]


def _hellinger(phi_a, phi_b):
    """Hellinger distances between the rows of two topic-word matrices, (K_a, K_b)."""
    sa, sb = np.sqrt(np.asarray(phi_a, float)), np.sqrt(np.asarray(phi_b, float))
    return np.sqrt(np.maximum(0.5 * ((sa[:, None, :] - sb[None, :, :]) ** 2).sum(-1), 0.0))


def matching_permutation(phi_a, phi_b):
    """Permutation of B's topics matching A's (Hungarian on the Hellinger distance).

    Parameters
    ----------
    phi_a, phi_b : array-like of shape (n_topics, n_words)
        Two topic-word matrices with the same number of topics.

    Returns
    -------
    perm : ndarray of shape (n_topics,)
        ``phi_b[perm]`` is aligned with ``phi_a``.
    """
    rows, cols = linear_sum_assignment(_hellinger(phi_a, phi_b))
    perm = np.empty(len(rows), dtype=np.int64)
    perm[rows] = cols
    return perm


def embed_smaller_model(phi_small, alpha_small, phi_large):
    """Embed a K_s-topic LDA exactly into K_l > K_s topics, aligned with ``phi_large``.

    Topics of the small model are matched to the large model's (Hungarian on the
    Hellinger distance); for each unmatched large topic, the small topic closest to
    it is duplicated and the Dirichlet mass of its copies is split in halves. By
    Dirichlet aggregation (the copies' proportions sum to a Dirichlet with the
    summed mass) p(w | model) is unchanged.
    Returns ``(phi, alpha)`` with ``K_l`` rows, row k aligned with large topic k.
    """
    phi_small = np.asarray(phi_small, float)
    alpha_small = np.asarray(alpha_small, float)
    k_large = phi_large.shape[0]
    cost = _hellinger(phi_large, phi_small)
    rows, cols = linear_sum_assignment(cost)  # rows: large topics, cols: small topics
    source = np.full(k_large, -1)
    source[rows] = cols
    copies = {k: [int(r)] for r, k in zip(rows, cols)}
    alpha = np.zeros(k_large)
    alpha[rows] = alpha_small[cols]
    for u in np.flatnonzero(source < 0):
        k = int(np.argmin(cost[u]))
        donor = max(copies[k], key=lambda r: alpha[r])
        alpha[donor] /= 2.0
        alpha[u] = alpha[donor]
        source[u] = k
        copies[k].append(int(u))
    return phi_small[source].copy(), alpha


def _exact_posterior(phi, alpha, batch, max_states=200_000):
    """Exact draws of z ~ p(z | w) by enumeration, per token (tiny documents; tests)."""
    from scipy.special import gammaln

    n_topics, n_chains = phi.shape[0], batch.n_chains
    words_all = batch.per_row(batch.word).cpu().numpy()[::n_chains]
    lengths = np.bincount(batch.row.cpu().numpy(), minlength=batch.n_rows)[::n_chains]
    z_rows = np.zeros((batch.n_rows, max(len(batch.n_active), 1)), dtype=np.int64)
    u = uniform(batch.keys.cpu(), 11).numpy()
    a_sum = alpha.sum()
    cache = {}
    for d, (words, n) in enumerate(zip(words_all, lengths)):
        words = words[:n]
        if n_topics**n > max_states:
            raise ValueError("start='exact' enumerates K^N assignments: documents too long.")
        key = tuple(words)
        if key not in cache:
            zs = np.array(list(itertools.product(range(n_topics), repeat=n)), dtype=np.int64).reshape(-1, n)
            counts = np.stack([(zs == k).sum(1) for k in range(n_topics)], 1)
            lp = (gammaln(a_sum) - gammaln(n + a_sum)
                  + (gammaln(counts + alpha) - gammaln(alpha)).sum(1)
                  + np.log(np.maximum(phi[zs, words], 1e-300)).sum(1))
            p = np.exp(lp - lp.max())
            cache[key] = (zs, np.cumsum(p) / p.sum())
        zs, cum = cache[key]
        idx = np.minimum(np.searchsorted(cum, u[d * n_chains:(d + 1) * n_chains]), len(cum) - 1)
        z_rows[d * n_chains:(d + 1) * n_chains, :n] = zs[idx]
    z = torch.as_tensor(z_rows, device=batch.row.device)
    return z[batch.row, batch.position]


def start_state(phi_s, alpha_s, L_s, batch, start, start_betas, n_burnin, kernel, stage):
    """Chains at (approximately) p(z | w, source); returns z, c, log-weights or None."""
    n_topics = phi_s.shape[0]
    alpha_t = torch.as_tensor(alpha_s, dtype=torch.float64, device=batch.row.device)
    if start == "exact":
        z = _exact_posterior(phi_s, alpha_s, batch)
        return z, batch.counts(z, n_topics), None
    path = ZPath("geometric", batch, L_s, alpha_t)
    if start in ("burnin", "sequential"):
        u = None
        if start == "sequential":
            z, c, u = draw_sequential(path, alpha_t, (stage, 2))
        else:
            z, c = draw_prior(alpha_t, batch, (stage, 0), n_topics)
        sweep = kernel_fn(kernel, path)
        for i in range(n_burnin):  # p(z | w, source)-invariant: the weights u stay valid
            sweep(path, 1.0, z, c, (stage, 1, i))
        return z, c, u
    z, c = draw_prior(alpha_t, batch, (stage, 0), n_topics)
    u = anneal(path, start_betas, z, c, kernel, stage=(stage + 1))
    return z, c, u


def _combine(u, v, n_docs, n_chains):
    """(estimate, stderr, ess) of the ratio weights ``v`` given the start's weights ``u``."""
    v = v.view(n_docs, n_chains)
    if u is None:
        return logmeanexp_stats(v)
    u = u.view(n_docs, n_chains)
    est = torch.logsumexp(u + v, 1) - torch.logsumexp(u, 1)
    pi = torch.softmax(u, 1)
    y = torch.exp(v - est.unsqueeze(1))
    if n_chains > 1:
        se = torch.sqrt((pi * pi * (y - 1.0) ** 2).sum(1))
    else:
        se = torch.full_like(est, float("nan"))
    w = pi * y
    ess = w.sum(1) ** 2 / (w * w).sum(1)
    return est, se, ess


def ratio_direction(mix_src, mix_dst, X, *, path, betas, start, start_betas, n_burnin,
                    n_chains, kernel, root, stage, device, progress=None):
    """log p(w | dst) - log p(w | src) per document, annealing src -> dst (PerDocument)."""
    (phi_s, alpha_s), (phi_d, alpha_d) = mix_src, mix_dst
    out = PerDocument(X.shape[0], n_chains)
    a_src = torch.as_tensor(alpha_s, dtype=torch.float64, device=device)
    a_dst = torch.as_tensor(alpha_d, dtype=torch.float64, device=device)
    phi_src, phi_dst = topic_word_tensor(phi_s, device), topic_word_tensor(phi_d, device)
    for batch in token_batches(X, n_chains=n_chains, n_topics=phi_s.shape[0], device=device,
                               root=root, stream=stage):
        L_s, L_d = log_phi_rows(phi_src, batch), log_phi_rows(phi_dst, batch)
        z, c, u = start_state(phi_s, alpha_s, L_s, batch, start, start_betas, n_burnin, kernel,
                              20)
        ratio_path = ZPath(path, batch, L_d, a_dst, L_s, a_src)
        if progress is not None:  # the start's work
            progress.advance(batch.n_tokens * (n_burnin + 1 if start != "ais" else len(start_betas)))
        v = anneal(ratio_path, betas, z, c, kernel, stage=30, move_first=start == "ais",
                   progress=progress)
        out.add(batch.docs, _combine(u, v, len(batch.docs), n_chains))
        if progress is not None:
            progress.finish_documents(len(batch.docs))
    return out


def iteration_segments(mixes, X, *, path, start_betas, segment_betas, n_chains, kernel,
                       resample_threshold, root, device, progress=None):
    """Iteration-AIS: one PerDocument per snapshot, and the resampling events."""
    n_topics = mixes[0][0].shape[0]
    outs = [PerDocument(X.shape[0], n_chains) for _ in mixes]
    alphas = [torch.as_tensor(m[1], dtype=torch.float64, device=device) for m in mixes]
    phis = [topic_word_tensor(m[0], device) for m in mixes]
    n_resampled = 0
    for batch in token_batches(X, n_chains=n_chains, n_topics=n_topics, device=device,
                               root=root, stream=60):
        L_prev = log_phi_rows(phis[0], batch)
        z, c = draw_prior(alphas[0], batch, (0,), n_topics)
        logw = anneal(ZPath("geometric", batch, L_prev, alphas[0]), start_betas, z, c, kernel,
                      stage=1, progress=progress)
        for t in range(len(mixes)):
            if t > 0 and resample_threshold > 0 and n_chains > 1:
                logw, n_res = resample_chains(logw, z, c, batch, resample_threshold, t)
                n_resampled += n_res
            if t > 0:
                L_t = log_phi_rows(phis[t], batch)
                seg = ZPath(path, batch, L_t, alphas[t], L_prev, alphas[t - 1])
                logw = logw + anneal(seg, segment_betas, z, c, kernel, stage=(100 + t),
                                     move_first=True, progress=progress)
                L_prev = L_t
            outs[t].add_weights(batch.docs, logw, n_chains)
        if progress is not None:
            progress.finish_documents(len(batch.docs))
    return outs, int(n_resampled)
