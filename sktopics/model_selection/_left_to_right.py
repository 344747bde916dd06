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
import numbers

import numpy as np
import torch

from ..utils._sklearn_compat import Interval, validate_params
from ..utils._torch import resolve_device
from ._ais import (
    _batches,
    _bits,
    _check_counts,
    _expand_tokens,
    _may_hold_any,
    _PAMPathPredictive,
    _root_key,
    _row_keys,
    _split_pipeline,
    _systematic_ancestors,
    _uniform,
    generative_view,
)
from ._results import HeldOutLikelihood

__all__ = ["document_completion_log_likelihood", "left_to_right_log_likelihood"]


def _shuffle_tokens(tokens, mask, doc_ids, root):
    """Permute each document's tokens in a seeded order keyed by the document."""
    keys = _row_keys(root, doc_ids, 1, 7, tokens.device).view(-1, 1)
    pos = torch.arange(tokens.shape[1], device=tokens.device).view(1, -1)
    score = _bits(keys, pos).to(torch.float64)
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


def sequential_mixture(view):
    """``(phi, kind, params)`` of a view whose tokens can be scored left to right.

    LDA-like views (``token_mixture()``) give their topics; two-level PAMs
    (``path_mixture()``) give one row of ``phi`` per path, the path's leaf topic.
    ``None`` for other views (ProdLDA, deeper DAGs).
    """
    mix = view.token_mixture()
    if mix is not None:
        phi, alpha = mix
        return np.asarray(phi, dtype=np.float64), "topics", (np.asarray(alpha, dtype=np.float64),)
    path_method = getattr(view, "path_mixture", None)
    paths = path_method() if path_method is not None else None
    if paths is None:
        return None
    phi, alpha_root, alpha_sub = (np.asarray(a, dtype=np.float64) for a in paths)
    supers, leaves = np.nonzero(alpha_sub > 0)
    return phi[leaves], "pam_paths", (alpha_root, alpha_sub[supers, leaves], supers)


def _predictive(kind, params, device):
    tensors = [torch.as_tensor(p, device=device) for p in params]
    if kind == "topics":
        return _TopicPredictive(*tensors)
    return _PAMPathPredictive(*tensors)


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
    u_draw = _uniform(keys.view(1, -1), 0, pos_all.view(-1, 1))  # (N, rows)
    u_res = _uniform(filter_keys.view(-1, 1), 1, pos_all)  # (filters, N)
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
        log_a = (torch.log(weights.sum(-1)) - math.log(n + a_sum)).view(nf, n_particles)
        norm_w = log_w[:nf] - torch.logsumexp(log_w[:nf], 1, keepdim=True)
        log_z = torch.logsumexp(norm_w + log_a, 1)
        if n_observed is None:
            log_p[:nf] += log_z
        else:
            log_p[:nf] += torch.where(observed_f[:nf] <= n, log_z, torch.zeros_like(log_z))
        log_w[:nf] = norm_w + log_a - log_z.unsqueeze(1)
        cum = torch.cumsum(weights, -1)
        k = torch.searchsorted(cum, u_draw[n, :nr].view(-1, 1) * cum[:, -1:]).clamp_(max=n_topics - 1)
        if rejuvenate:
            z[:nr, n : n + 1] = k
        cn.scatter_add_(1, k, ones[:nr])
        # systematic resampling where the effective sample size is low
        if resample_threshold > 0 and n < n_max - 1:
            w = torch.exp(log_w[:nf])
            ess = w.sum(1) ** 2 / (w * w).sum(1)
            need = ess < resample_threshold * n_particles
            if _may_hold_any(need):
                n_resamples = n_resamples + need.sum()
                flat = _systematic_ancestors(w, need, u_res[:nf, n : n + 1])
                c[:nr] = c[:nr].index_select(0, flat)
                if rejuvenate:  # the assignments are only needed to rejuvenate
                    z[:nr] = z[:nr].index_select(0, flat)
                log_w[:nf] = torch.where(need.unsqueeze(1), torch.zeros_like(w), log_w[:nf])
    return log_p, n_resamples


def _require_sequential_mixture(view, caller):
    mixture = sequential_mixture(view)
    if mixture is None:
        raise ValueError(
            f"{caller} needs a model whose tokens are a mixture with Dirichlet priors that "
            "can be collapsed: LDA-like models (LDAGibbs, AVITM) or two-level PAMs (4-PAM, "
            "MoLDA). ProdLDA's likelihood is not a mixture, and PAMs deeper than two levels "
            "are not supported; use ais_log_likelihood."
        )
    return mixture


def _rejuvenate(phi_t, predictive, tok, z, c, n, keys, step):
    """A collapsed Gibbs sweep over positions < n of every particle (pi_{n-1}-invariant)."""
    u = _uniform(keys.view(-1, 1), 2, step, torch.arange(n, device=z.device).view(1, -1))
    ones = torch.ones(z.shape[0], 1, dtype=c.dtype, device=c.device)
    for j in range(n):
        zj = z[:, j : j + 1]
        c.scatter_add_(1, zj, -ones)
        cum = torch.cumsum(predictive.weights(c) * phi_t[tok[:, j]], -1)
        k = torch.searchsorted(cum, u[:, j : j + 1] * cum[:, -1:]).clamp_(max=cum.shape[1] - 1)
        z[:, j : j + 1] = k
        c.scatter_add_(1, k, ones)


def _smc_log_likelihood(mixture, X, *, n_particles, n_filters, resample_threshold, rejuvenate,
                        device, root, observed_fraction=None):
    """Per-document SMC estimates; ``mixture`` is :func:`sequential_mixture`'s triple."""
    phi, kind, params = mixture
    phi_t = torch.as_tensor(phi, dtype=torch.float64, device=device).T.contiguous()
    phi_t = phi_t.clamp_min(1e-300)
    predictive = _predictive(kind, params, device)
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    n_docs = X.shape[0]
    est = np.zeros(n_docs)
    se = np.zeros(n_docs)
    n_res = 0
    for batch in _batches(lengths, n_particles * n_filters, 2, device,
                          row_elements=predictive.n_latent):
        tokens, mask, _ = _expand_tokens(X, batch)
        tokens = torch.as_tensor(tokens, device=device)
        mask = torch.as_tensor(mask, device=device)
        tokens, mask = _shuffle_tokens(tokens, mask, batch, root)
        keys = _row_keys(root, batch, n_filters * n_particles, 6, device)
        n_obs = None
        if observed_fraction is not None:
            n_obs = torch.as_tensor(np.floor(observed_fraction * lengths[batch]).astype(np.int64),
                                    device=device)
        log_p, r = _smc_batch(phi_t, predictive, tokens, mask, keys, n_particles, n_filters,
                              float(resample_threshold), rejuvenate, n_obs)
        n_res += int(r)
        log_p = log_p.view(len(batch), n_filters)
        e = torch.logsumexp(log_p, 1) - math.log(n_filters)
        if n_filters > 1:
            w = torch.exp(log_p - log_p.amax(1, keepdim=True))
            ess = w.sum(1) ** 2 / (w * w).sum(1)
            s = torch.sqrt((1.0 / ess - 1.0 / n_filters).clamp_min(0.0))
        else:
            s = torch.full_like(e, float("nan"))
        est[batch], se[batch] = e.cpu().numpy(), s.cpu().numpy()
    return est, se, n_res


@validate_params(
    {
        "estimator": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "n_particles": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_filters": [Interval(numbers.Integral, 1, None, closed="left")],
        "resample_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "rejuvenate": ["boolean"],
        "device": [None, str, torch.device],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def left_to_right_log_likelihood(
    estimator,
    X,
    *,
    n_particles=100,
    n_filters=2,
    resample_threshold=0.5,
    rejuvenate=False,
    device=None,
    random_state=None,
):
    """Held-out log p(w | model) by the left-to-right algorithm (SMC, unbiased form).

    Tokens of each document are taken in a seeded random order; ``n_particles``
    particles carry topic assignments of the prefix, weighted by their predictive
    probabilities and resampled (systematically) when the effective sample size
    falls below ``resample_threshold * n_particles``. ``n_filters`` independent
    filters give the standard error; the estimate averages them in probability.

    Parameters
    ----------
    estimator : estimator, Pipeline, GenerativeView or (topic_word, alpha)
        A model whose tokens are a mixture under collapsible Dirichlet priors: an
        LDA-like view (``token_mixture()``: LDAGibbs, AVITM) or a two-level PAM
        (``path_mixture()``: 4-PAM PAMVI, MoLDA), whose particles then carry each
        token's path ``(super-topic, sub-topic)`` with every node's distribution
        collapsed. For the neural models the Dirichlets are the ones their Laplace
        priors approximate, as in :func:`ais_log_likelihood`.
    X : {array-like, sparse matrix} of shape (n_documents, n_words)
        Held-out integer counts.
    n_particles : int, default=100
        Particles per filter.
    n_filters : int, default=2
        Independent filters per document (cost is ``n_particles * n_filters * N``).
    resample_threshold : float, default=0.5
        Resample when ESS < threshold * n_particles; 0 never resamples.
    rejuvenate : bool, default=False
        Re-sample the prefix's assignments by a collapsed Gibbs sweep before each
        token (cost O(N^2); Wallach et al.'s "resampling").
    device : str, torch.device or None
    random_state : int, RandomState or None

    Returns
    -------
    result : HeldOutLikelihood
    """
    device = resolve_device(device)
    estimator, X = _split_pipeline(estimator, X)
    view = generative_view(estimator)
    mix = _require_sequential_mixture(view, "left_to_right_log_likelihood")
    X = _check_counts(X, view.n_features, integer=True)
    est, se, n_res = _smc_log_likelihood(mix, X, n_particles=n_particles, n_filters=n_filters,
                                         resample_threshold=resample_threshold,
                                         rejuvenate=rejuvenate, device=device,
                                         root=_root_key(random_state))
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    per_doc_cost = lengths * n_particles * n_filters
    if rejuvenate:
        per_doc_cost = per_doc_cost + lengths * (lengths - 1) // 2 * n_particles * n_filters
    return HeldOutLikelihood(
        per_document=est,
        per_document_stderr=np.where(lengths > 0, se, 0.0),
        n_tokens=lengths.astype(np.float64),
        method="left-to-right-smc",
        settings=dict(
            n_particles=n_particles, n_filters=n_filters,
            resample_threshold=resample_threshold, rejuvenate=rejuvenate,
            random_state=random_state if isinstance(random_state, numbers.Integral) else None,
            device=str(device), n_resampling_events=n_res,
        ),
        n_token_updates=int(per_doc_cost.sum()),
    )


@validate_params(
    {
        "estimator": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "observed_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_particles": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_filters": [Interval(numbers.Integral, 1, None, closed="left")],
        "device": [None, str, torch.device],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def document_completion_log_likelihood(
    estimator,
    X,
    *,
    observed_fraction=0.5,
    n_particles=100,
    n_filters=2,
    device=None,
    random_state=None,
):
    """Document completion: log p(w_unseen | w_seen, model) per document.

    Each document's tokens are put in a seeded random order; the first
    ``floor(observed_fraction * N_d)`` are observed and the rest are scored, by the
    same sequential Monte Carlo filter as :func:`left_to_right_log_likelihood`
    (the predictive increments summed over the unseen part only). ``n_tokens`` of
    the result counts the scored tokens, so ``result.perplexity()`` is the
    document-completion perplexity.

    Returns
    -------
    result : HeldOutLikelihood
    """
    device = resolve_device(device)
    estimator, X = _split_pipeline(estimator, X)
    view = generative_view(estimator)
    mix = _require_sequential_mixture(view, "document_completion_log_likelihood")
    X = _check_counts(X, view.n_features, integer=True)
    est, se, _ = _smc_log_likelihood(mix, X, n_particles=n_particles, n_filters=n_filters,
                                     resample_threshold=0.5, rejuvenate=False, device=device,
                                     root=_root_key(random_state),
                                     observed_fraction=observed_fraction)
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    scored = lengths - np.floor(observed_fraction * lengths).astype(np.int64)
    return HeldOutLikelihood(
        per_document=est,
        per_document_stderr=np.where(lengths > 0, se, 0.0),
        n_tokens=scored.astype(np.float64),
        method="document-completion-smc",
        settings=dict(observed_fraction=observed_fraction, n_particles=n_particles,
                      n_filters=n_filters, device=str(device),
                      random_state=random_state if isinstance(random_state, numbers.Integral) else None),
        n_token_updates=int(lengths.sum() * n_particles * n_filters),
    )
