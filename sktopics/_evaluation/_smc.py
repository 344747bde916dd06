"""Left-to-right estimation of log p(w | model), in its unbiased (SMC) form.

Wallach et al. (2009) estimate p(w) = prod_n p(w_n | w_<n) with particles over the
topic assignments of the prefix. Their (and Mallet's) estimator takes the product
of per-position particle means without reweighting the particles by their past
predictive probabilities, which is biased *upwards*. Here the particles are weighted
and resampled (a sequential Monte Carlo filter, Del Moral, Doucet & Jasra 2006), so
``exp`` of the estimate is unbiased for p(w); its log is biased low.

The particles of a two-level PAM (4-PAM, MoLDA) carry each token's path
``(super-topic, sub-topic)``; the root's and every node's distributions are
collapsed, so a path's predictive probability is a product of two Polya urns.
"""

import math

import numpy as np
import torch

from .._random import bits, row_keys, uniform
from ._pam_paths import PAMPathPredictive, path_arrays
from ._resampling import may_hold_any, systematic_ancestors
from ._tokens import PerDocument, batches, expand_tokens, logmeanexp_stats

__all__ = ["require_sequential_mixture", "sequential_mixture", "smc_log_likelihood"]


def _shuffle_tokens(tokens, mask, doc_ids, root):
    """Permute each document's tokens in a seeded order keyed by the document."""
    keys = row_keys(root, doc_ids, 1, 7, tokens.device).view(-1, 1)
    pos = torch.arange(tokens.shape[1], device=tokens.device).view(1, -1)
    score = bits(keys, pos).to(torch.float64)
    score = torch.where(mask, score, torch.full_like(score, float("inf")))
    order = torch.argsort(score, dim=1, stable=True)
    return torch.gather(tokens, 1, order), torch.gather(mask, 1, order)


class _TopicPredictive:
    """LDA's Polya urn: a token's topic given the prefix's, theta collapsed.

    ``weights(c)`` are the unnormalised predictive probabilities ``c_k + alpha_k``
    of each topic given the prefix's counts ``c`` (rows, K); they sum to ``n +
    total_prior`` for a prefix of ``n`` tokens.
    """

    def __init__(self, alpha):
        self.alpha = alpha
        self.n_latent = alpha.shape[0]
        self.total_prior = float(alpha.sum())

    def weights(self, c):
        return c + self.alpha


def sequential_mixture(view, dirichlet_approximation=True):
    """``(phi, kind, params)`` of a view whose tokens can be scored left to right.

    LDA-like views (``token_mixture()``) give their topics; two-level PAMs
    (``path_mixture()``) give one row of ``phi`` per path, the path's leaf topic.
    ``None`` for other views (ProdLDA, deeper DAGs, and logistic-normal priors
    without ``dirichlet_approximation``).
    """
    mix = view.token_mixture(approximate=dirichlet_approximation)
    if mix is not None:
        phi, alpha = mix
        return np.asarray(phi, dtype=np.float64), "topics", (np.asarray(alpha, dtype=np.float64),)
    paths = view.path_mixture(approximate=dirichlet_approximation)
    if paths is None:
        return None
    phi, alpha_root, alpha_path, supers, leaves = path_arrays(paths)
    return phi[leaves], "pam_paths", (alpha_root, alpha_path, supers)


def require_sequential_mixture(view, caller, dirichlet_approximation=True):
    """:func:`sequential_mixture` of ``view``, or an error naming what is needed."""
    mixture = sequential_mixture(view, dirichlet_approximation)
    if mixture is None:
        raise ValueError(
            f"{caller} needs a model whose tokens are a mixture with Dirichlet priors that "
            "can be collapsed: LDA-like models (LDAGibbs, AVITM) or two-level PAMs (4-PAM, "
            "MoLDA; the neural models with dirichlet_approximation=True). ProdLDA's "
            "likelihood is not a mixture, and PAMs deeper than two levels are not "
            "supported; use ais_log_likelihood."
        )
    return mixture


def _predictive(kind, params, device):
    tensors = [torch.as_tensor(p, device=device) for p in params]
    if kind == "topics":
        return _TopicPredictive(*tensors)
    return PAMPathPredictive(*tensors)


def _smc_batch(phi_t, predictive, tokens, mask, keys, n_particles, n_groups,
               resample_threshold, rejuvenate, n_observed=None):
    """One SMC filter per (document, group); returns log p-hat (n_docs * n_groups,).

    Documents are sorted by decreasing length with their tokens first, so the
    filters still running at position n are a prefix of the rows: no masking.
    """
    device = tokens.device
    n_topics = predictive.n_latent
    a_sum = predictive.total_prior
    rows_per_doc = n_groups * n_particles
    n_rows = tokens.shape[0] * rows_per_doc
    n_filters = tokens.shape[0] * n_groups
    tok = tokens.repeat_interleave(rows_per_doc, 0) if rejuvenate else None
    tokens_t = tokens.T.contiguous()  # position-major: contiguous slices per step
    n_max = tokens.shape[1]
    lengths = mask.sum(1)
    if bool((lengths[1:] > lengths[:-1]).any()):
        raise ValueError("documents must be sorted by decreasing length")
    docs_active = (lengths.view(1, -1) > torch.arange(n_max, device=device).view(-1, 1)).sum(1).tolist()
    c = torch.zeros(n_rows, n_topics, dtype=torch.float64, device=device)
    # the assignments are only needed to rejuvenate
    z = torch.zeros(n_rows, n_max if rejuvenate else 1, dtype=torch.long, device=device)
    log_w = torch.zeros(n_filters, n_particles, dtype=torch.float64, device=device)
    log_p = torch.zeros(n_filters, dtype=torch.float64, device=device)
    filter_keys = keys.view(n_filters, n_particles)[:, 0]
    pos_all = torch.arange(n_max, device=device).view(1, -1)
    u_draw = uniform(keys.view(1, -1), 0, pos_all.view(-1, 1))  # (N, rows)
    u_res = uniform(filter_keys.view(-1, 1), 1, pos_all)  # (filters, N)
    ones = torch.ones(n_rows, 1, dtype=c.dtype, device=device)
    if n_observed is not None:  # document completion: score positions >= n_observed only
        observed_f = n_observed.repeat_interleave(n_groups)
    n_resamples = 0
    for n in range(n_max):
        nf = docs_active[n] * n_groups
        if nf == 0:
            break
        nr = nf * n_particles
        if rejuvenate and n > 1:
            _rejuvenate(phi_t, predictive, tok[:nr], z[:nr], c[:nr], n, keys[:nr], n)
        nd = docs_active[n]
        phi_w = phi_t.index_select(0, tokens_t[n, :nd]).unsqueeze(1)  # (docs, 1, K)
        cn = c[:nr]
        weights = (predictive.weights(cn).view(nd, rows_per_doc, n_topics) * phi_w).view(nr, n_topics)
        cum = torch.cumsum(weights, -1)
        log_a = (torch.log(cum[:, -1]) - math.log(n + a_sum)).view(nf, n_particles)
        norm_w = log_w[:nf] - torch.logsumexp(log_w[:nf], 1, keepdim=True)
        log_z = torch.logsumexp(norm_w + log_a, 1)
        if n_observed is None:
            log_p[:nf] += log_z
        else:
            log_p[:nf] += torch.where(observed_f[:nf] <= n, log_z, torch.zeros_like(log_z))
        log_w[:nf] = norm_w + log_a - log_z.unsqueeze(1)
        k = torch.searchsorted(cum, u_draw[n, :nr].view(-1, 1) * cum[:, -1:]).clamp_(max=n_topics - 1)
        if rejuvenate:
            z[:nr, n : n + 1] = k
        cn.scatter_add_(1, k, ones[:nr])
        # systematic resampling where the effective sample size is low
        if resample_threshold > 0 and n < n_max - 1:
            w = torch.exp(log_w[:nf])
            ess = w.sum(1) ** 2 / (w * w).sum(1)
            need = ess < resample_threshold * n_particles
            if may_hold_any(need):
                n_resamples = n_resamples + need.sum()
                flat = systematic_ancestors(w, need, u_res[:nf, n : n + 1])
                c[:nr] = c[:nr].index_select(0, flat)
                if rejuvenate:  # the assignments are only needed to rejuvenate
                    z[:nr] = z[:nr].index_select(0, flat)
                log_w[:nf] = torch.where(need.unsqueeze(1), torch.zeros_like(w), log_w[:nf])
    return log_p, n_resamples


def _rejuvenate(phi_t, predictive, tok, z, c, n, keys, step):
    """A collapsed Gibbs sweep over positions < n of every particle (pi_{n-1}-invariant)."""
    u = uniform(keys.view(-1, 1), 2, step, torch.arange(n, device=z.device).view(1, -1))
    ones = torch.ones(z.shape[0], 1, dtype=c.dtype, device=c.device)
    for j in range(n):
        zj = z[:, j : j + 1]
        c.scatter_add_(1, zj, -ones)
        cum = torch.cumsum(predictive.weights(c) * phi_t[tok[:, j]], -1)
        k = torch.searchsorted(cum, u[:, j : j + 1] * cum[:, -1:]).clamp_(max=cum.shape[1] - 1)
        z[:, j : j + 1] = k
        c.scatter_add_(1, k, ones)


def smc_log_likelihood(mixture, X, *, n_particles, n_filters, resample_threshold, rejuvenate,
                       device, root, observed_fraction=None, progress=None):
    """Per-document SMC estimates: a :class:`~._tokens.PerDocument` and the resampling events.

    ``mixture`` is :func:`sequential_mixture`'s triple.
    """
    phi, kind, params = mixture
    phi_t = torch.as_tensor(phi, dtype=torch.float64, device=device).T.contiguous()
    phi_t = phi_t.clamp_min(1e-300)
    predictive = _predictive(kind, params, device)
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    out = PerDocument(X.shape[0], n_filters)
    n_res = 0
    for batch in batches(lengths, n_particles * n_filters, 2, device,
                         row_elements=predictive.n_latent):
        tokens, mask, _ = expand_tokens(X, batch)
        tokens = torch.as_tensor(tokens, device=device)
        mask = torch.as_tensor(mask, device=device)
        tokens, mask = _shuffle_tokens(tokens, mask, batch, root)
        keys = row_keys(root, batch, n_filters * n_particles, 6, device)
        n_obs = None
        if observed_fraction is not None:
            n_obs = torch.as_tensor(np.floor(observed_fraction * lengths[batch]).astype(np.int64),
                                    device=device)
        log_p, r = _smc_batch(phi_t, predictive, tokens, mask, keys, n_particles, n_filters,
                              float(resample_threshold), rejuvenate, n_obs)
        n_res += int(r)
        out.add(batch, logmeanexp_stats(log_p.view(len(batch), n_filters)))
        if progress is not None:
            progress.advance(float(lengths[batch].sum()) * n_particles * n_filters)
            progress.finish_documents(len(batch))
    return out, n_res
