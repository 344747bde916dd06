"""Ratio-AIS (Foulds & Smyth 2014): anneal from one topic model to another.

The chains start at the posterior of model B, p(z | w, B), and anneal to
p(z | w, A); the mean importance weight estimates p(w | A) / p(w | B) directly, with
one z shared by both models and no second normaliser. Paths:

* ``"geometric"``: f_b = f_A^b f_B^(1 - b);
* ``"convex"``: f_b = p(w, z | b phi_A + (1 - b) phi_B, b alpha_A + (1 - b) alpha_B),
  sampled with alpha_b (drawing with B's alpha while weighting with alpha_b, as the
  reference Java code does, is an invalid kernel);
* ``"hybrid"``: geometric in phi, arithmetic in alpha (a single Polya term, so the
  blocked kernel applies even when the alphas differ).

Starts (how the chains reach p(z | w, B); the ratio chains are then weighted by the
start's importance weights, self-normalised over the chains, which is consistent):
``"sequential"`` (default) draws z token by token from B's left-to-right proposal, an
importance sampler whose weight is one left-to-right particle's, then runs
``n_burnin_sweeps`` Gibbs sweeps under B (they leave p(z | w, B) invariant, so the
weights stay valid); ``"ais"`` runs standard AIS prior -> B; ``"burnin"`` Gibbs-samples
B's posterior from a prior draw and ignores the start (biased, as in the reference
code); ``"exact"`` draws exact posterior samples by enumeration (tiny documents only;
tests).

With one chain the start's weight cancels and only how close the start is to
p(z | w, B) matters. At equal cost the sequential start plus a few sweeps is closer
than a short AIS run from the prior, so more of the budget goes to the path between
the models (``benchmarks/results/model_selection.md``).
"""

import itertools
import numbers
import warnings

import numpy as np
import torch
from scipy.optimize import linear_sum_assignment
from sklearn.exceptions import ConvergenceWarning

from ..utils._sklearn_compat import Interval, StrOptions, validate_params
from ..utils._torch import resolve_device
from ._ais import (
    _anneal,
    _batch_rows,
    _check_counts,
    _draw_prior,
    _draw_sequential,
    _kernel_batches,
    _kernel_fn,
    _log_phi_rows,
    _logmeanexp_stats,
    _resolve_kernel,
    _root_key,
    _row_keys,
    _schedule,
    _split_pipeline,
    _topic_word_tensor,
    _uniform,
    _ZPath,
    ais_log_likelihood,
    generative_view,
)
from ._results import ModelComparison

__all__ = ["align_topics", "embed_smaller_model", "ratio_ais"]


def align_topics(phi_a, phi_b):
    """Permutation of B's topics matching A's (Hungarian on the Hellinger distance).

    Returns ``perm`` such that ``phi_b[perm]`` is aligned with ``phi_a``.
    """
    sa, sb = np.sqrt(np.asarray(phi_a)), np.sqrt(np.asarray(phi_b))
    cost = np.sqrt(np.maximum(0.5 * ((sa[:, None, :] - sb[None, :, :]) ** 2).sum(-1), 0.0))
    rows, cols = linear_sum_assignment(cost)
    perm = np.empty(len(rows), dtype=np.int64)
    perm[rows] = cols
    return perm


def embed_smaller_model(phi_small, alpha_small, phi_large):
    """Embed a K_s-topic LDA exactly into K_l > K_s topics, aligned with ``phi_large``.

    Topics of the small model are matched to the large model's (Hungarian on the
    Hellinger distance); for each unmatched large topic, the small topic closest to
    it is duplicated and the Dirichlet mass of its copies is split in halves. By
    Dirichlet aggregation p(w | model) is unchanged (evaluation.md section 3.5).
    Returns ``(phi, alpha)`` with ``K_l`` rows, row k aligned with large topic k.
    """
    phi_small = np.asarray(phi_small, float)
    alpha_small = np.asarray(alpha_small, float)
    k_large = phi_large.shape[0]
    sl, ss = np.sqrt(phi_large), np.sqrt(phi_small)
    cost = np.sqrt(np.maximum(0.5 * ((sl[:, None, :] - ss[None, :, :]) ** 2).sum(-1), 0.0))
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


def _exact_posterior(phi, alpha, tokens, mask, n_chains, keys, max_states=200_000):
    """Exact draws of z ~ p(z | w) by enumeration (tiny documents; tests)."""
    from scipy.special import gammaln

    n_topics = phi.shape[0]
    n_docs, n_max = tokens.shape
    z_out = torch.zeros(n_docs * n_chains, n_max, dtype=torch.long)
    tokens_np, mask_np = tokens.cpu().numpy(), mask.cpu().numpy()
    u = _uniform(keys.cpu(), 11).numpy()
    a_sum = alpha.sum()
    cache = {}
    for d in range(n_docs):
        words = tokens_np[d][mask_np[d]]
        n = len(words)
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
        z_out[d * n_chains:(d + 1) * n_chains, :n] = torch.from_numpy(zs[idx])
    return z_out


def _start_state(kind, phi_s, alpha_s, L_s, tokens, mask_r, keys, n_chains, start,
                 start_betas, n_burnin, kernel, stage, device):
    """Chains at (approximately) p(z | w, source); returns z, c, log-weights or None."""
    n_topics = phi_s.shape[0]
    alpha_t = torch.as_tensor(alpha_s, dtype=torch.float64, device=device)
    z, c = _draw_prior(alpha_t, mask_r, keys, (stage, 0), n_topics)
    if start == "exact":
        z = _exact_posterior(phi_s, alpha_s, tokens, mask_r[::n_chains], n_chains, keys).to(device)
        c = torch.zeros_like(c)
        c.scatter_add_(1, z, mask_r.to(c.dtype))
        return z, c, None
    path = _ZPath("geometric", L_s, alpha_t)
    if start in ("burnin", "sequential"):
        u = None
        if start == "sequential":
            z, c, u = _draw_sequential(path, alpha_t, mask_r, keys, (stage, 2))
        sweep = _kernel_fn(kernel, path)
        for i in range(n_burnin):  # p(z | w, source)-invariant: the weights u stay valid
            sweep(path, 1.0, z, c, mask_r, keys, (stage, 1, i))
        return z, c, u
    u = _anneal(path, start_betas, z, c, mask_r, keys, kernel, stage=(stage + 1))
    return z, c, u


def _combine(u, v, n_docs, n_chains):
    v = v.view(n_docs, n_chains)
    if u is None:
        return _logmeanexp_stats(v)
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


def _run_direction(mix_src, mix_dst, X, batches_info, kind, betas, start, start_betas,
                   n_burnin, n_chains, kernel, root, stage, device):
    """log p(w | dst) - log p(w | src) per document, annealing src -> dst."""
    (phi_s, alpha_s), (phi_d, alpha_d) = mix_src, mix_dst
    n_docs = X.shape[0]
    est, se = np.zeros(n_docs), np.zeros(n_docs)
    ess_all = np.full(n_docs, float(n_chains))
    a_src = torch.as_tensor(alpha_s, dtype=torch.float64, device=device)
    a_dst = torch.as_tensor(alpha_d, dtype=torch.float64, device=device)
    phi_src, phi_dst = _topic_word_tensor(phi_s, device), _topic_word_tensor(phi_d, device)
    for batch in batches_info:
        tokens, mask_r, n_active = _batch_rows(X, batch, n_chains, device)
        keys = _row_keys(root, batch, n_chains, stage, device)
        L_s = _log_phi_rows(phi_src, tokens, n_chains, n_active)
        L_d = _log_phi_rows(phi_dst, tokens, n_chains, n_active)
        z, c, u = _start_state(kind, phi_s, alpha_s, L_s, tokens, mask_r, keys, n_chains, start,
                               start_betas, n_burnin, kernel, 20, device)
        path = _ZPath(kind, L_d, a_dst, L_s, a_src)
        v = _anneal(path, betas, z, c, mask_r, keys, kernel, stage=30, move_first=start == "ais")
        e, s, ess = _combine(u, v, len(batch), n_chains)
        est[batch], se[batch], ess_all[batch] = e.cpu().numpy(), s.cpu().numpy(), ess.cpu().numpy()
    return est, se, ess_all


@validate_params(
    {
        "estimator_a": "no_validation",
        "estimator_b": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "path": [StrOptions({"geometric", "convex", "hybrid"})],
        "direction": [StrOptions({"forward", "reverse", "both"})],
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "schedule": [StrOptions({"sigmoid", "linear", "geometric", "power"}), "array-like"],
        "start": [StrOptions({"ais", "sequential", "burnin", "exact"})],
        "n_start_temperatures": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "n_burnin_sweeps": [Interval(numbers.Integral, 0, None, closed="left")],
        "kernel": [StrOptions({"auto", "collapsed", "blocked"})],
        "align_topics": ["boolean"],
        "device": [None, str, torch.device],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def ratio_ais(
    estimator_a,
    estimator_b,
    X,
    *,
    path="geometric",
    direction="forward",
    n_temperatures=100,
    n_chains=10,
    schedule="linear",
    start="sequential",
    n_start_temperatures=None,
    n_burnin_sweeps=10,
    kernel="auto",
    align_topics=True,
    device=None,
    random_state=None,
):
    """log p(w | A) - log p(w | B) per document by annealing between the models.

    Parameters
    ----------
    estimator_a, estimator_b : estimators, Pipelines, GenerativeViews or (phi, alpha)
        The two fitted models (same vocabulary). Pipelines transform ``X`` with
        ``estimator_a``'s leading steps.
    X : {array-like, sparse matrix} of shape (n_documents, n_words)
        Held-out integer counts.
    path : {"geometric", "convex", "hybrid"}, default="geometric"
        The intermediate distributions (see the module docstring).
    direction : {"forward", "reverse", "both"}, default="forward"
        ``"forward"`` anneals B -> A, ``"reverse"`` A -> B (the reciprocal, a
        convergence check), ``"both"`` runs both and reports their mean, the
        per-document gap and the bracket. Short paths bias the forward estimate down
        and the reverse one up by similar amounts, so at equal cost the mean of a
        forward and a reverse run of half the temperatures is usually closer to the
        truth than either direction alone (with one chain it is Bennett's acceptance
        ratio estimate). With ``"both"``, a ``ConvergenceWarning`` says when the two
        totals have opposite signs, i.e. when the bracket leaves open which model
        is better.
    n_temperatures : int, default=100
        Temperatures of the ratio path.
    n_chains : int, default=10
        Chains per document.
    schedule : str or array, default="linear"
    start : {"sequential", "ais", "burnin", "exact"}, default="sequential"
        How chains reach the source posterior: a left-to-right draw followed by
        ``n_burnin_sweeps`` Gibbs sweeps, weighted (consistent); standard AIS prior ->
        source with ``n_start_temperatures`` temperatures (consistent);
        ``n_burnin_sweeps`` Gibbs sweeps from a prior draw, unweighted (biased); or
        exact enumeration (tiny documents only).
    n_start_temperatures : int or None
        Temperatures of ``start="ais"``; defaults to ``n_temperatures``.
    n_burnin_sweeps : int, default=10
        Gibbs sweeps under the source model after a ``"sequential"`` or
        ``"burnin"`` start.
    kernel : {"auto", "collapsed", "blocked"}, default="auto"
        As in :func:`ais_log_likelihood`; ``"auto"`` keeps the collapsed sweep
        wherever the blocked kernel is invalid (the geometric path between models
        with different alphas), also on CUDA.
    align_topics : bool, default=True
        Permute B's topics to match A's (Hungarian on Hellinger distances); any
        labelling is valid, but the variance depends on it.
    device, random_state :
        As in :func:`ais_log_likelihood`.

    Returns
    -------
    result : ModelComparison
        Models with different numbers of topics are compared exactly by embedding
        the smaller one (one of its topics duplicated, with its Dirichlet mass
        split). When the two models are not both per-token mixtures (e.g. LDA vs
        ProdLDA), the result of paired standard AIS with common random numbers
        (``method="paired-ais"``, with a note in ``settings``).
    """
    device = resolve_device(device)
    est_a, X = _split_pipeline(estimator_a, X)
    est_b = estimator_b[-1] if hasattr(estimator_b, "steps") else estimator_b
    view_a, view_b = generative_view(est_a), generative_view(est_b)
    if view_a.n_features != view_b.n_features:
        raise ValueError("The two models have different vocabularies.")
    mix_a, mix_b = view_a.token_mixture(), view_b.token_mixture()
    settings = dict(
        path=path, direction=direction, n_temperatures=n_temperatures, n_chains=n_chains,
        schedule=schedule if isinstance(schedule, str) else "array", start=start,
        random_state=random_state if isinstance(random_state, numbers.Integral) else None,
        device=str(device),
    )
    if mix_a is None or mix_b is None:
        return _paired(view_a, view_b, X, n_temperatures, n_chains, schedule, device,
                       random_state, settings, kernel)
    X = _check_counts(X, view_a.n_features, integer=True)
    phi_a, alpha_a = np.asarray(mix_a[0], float), np.asarray(mix_a[1], float)
    phi_b, alpha_b = np.asarray(mix_b[0], float), np.asarray(mix_b[1], float)
    if phi_a.shape[0] < phi_b.shape[0]:
        phi_a, alpha_a = embed_smaller_model(phi_a, alpha_a, phi_b)
        settings["embedded"] = "A split to B's number of topics (exact, Dirichlet aggregation)"
    elif phi_b.shape[0] < phi_a.shape[0]:
        phi_b, alpha_b = embed_smaller_model(phi_b, alpha_b, phi_a)
        settings["embedded"] = "B split to A's number of topics (exact, Dirichlet aggregation)"
        align_topics = False  # already aligned with A
    if "embedded" in settings and phi_a.shape[0] != phi_b.shape[0]:  # pragma: no cover
        raise AssertionError
    perm = align_topics_fn(phi_a, phi_b) if align_topics else np.arange(phi_b.shape[0])
    phi_b, alpha_b = phi_b[perm], alpha_b[perm]
    two_polya_terms = path == "geometric" and not np.array_equal(alpha_a, alpha_b)
    kernel = _resolve_kernel(kernel, device, blocked_valid=not two_polya_terms)
    if kernel == "blocked" and two_polya_terms:
        raise ValueError("kernel='blocked' is invalid on the geometric path with different "
                         "alphas; use path='hybrid' or kernel='collapsed'.")
    root = _root_key(random_state)
    betas = _schedule(schedule, n_temperatures)
    start_betas = _schedule(schedule, n_start_temperatures or n_temperatures)
    lengths = np.asarray(X.sum(1)).ravel()
    batches = _kernel_batches(lengths.astype(np.int64), n_chains, phi_a.shape[0], kernel, device)
    common = dict(X=X, batches_info=batches, kind=path, betas=betas, start=start,
                  start_betas=start_betas, n_burnin=n_burnin_sweeps, n_chains=n_chains,
                  kernel=kernel, root=root, device=device)
    fwd = rev = fwd_se = rev_se = None
    ess_min = np.inf
    if direction in ("forward", "both"):
        fwd, fwd_se, ess = _run_direction((phi_b, alpha_b), (phi_a, alpha_a), stage=40, **common)
        ess_min = min(ess_min, float(ess[lengths > 0].min(initial=np.inf)))
    if direction in ("reverse", "both"):
        r, rev_se, ess = _run_direction((phi_a, alpha_a), (phi_b, alpha_b), stage=50, **common)
        rev = -r
        ess_min = min(ess_min, float(ess[lengths > 0].min(initial=np.inf)))
    if direction == "forward":
        per_doc, se = fwd, fwd_se
    elif direction == "reverse":
        per_doc, se = rev, rev_se
    else:
        per_doc = 0.5 * (fwd + rev)
        se = 0.5 * np.sqrt(fwd_se**2 + rev_se**2)
        _warn_if_unsettled(fwd, rev)
    n_start = {"ais": start_betas.size - 1, "sequential": 1 + n_burnin_sweeps,
               "burnin": n_burnin_sweeps}.get(start, 0)
    n_runs = 2 if direction == "both" else 1
    settings.update(kernel=kernel, aligned=align_topics,
                    n_start_temperatures=n_start_temperatures or n_temperatures,
                    n_burnin_sweeps=n_burnin_sweeps)
    return ModelComparison(
        per_document=per_doc,
        per_document_stderr=np.where(lengths > 0, se, 0.0),
        n_tokens=lengths,
        method="ratio-ais",
        settings=settings,
        forward=fwd,
        reverse=rev,
        forward_stderr=fwd_se,
        reverse_stderr=rev_se,
        topic_permutation=perm,
        n_token_updates=int(lengths.sum() * n_chains * (n_temperatures + n_start) * n_runs),
        min_ess=ess_min,
    )


def _warn_if_unsettled(forward, reverse):
    """ConvergenceWarning when the two directions disagree on the sign of the total.

    With exact starts the forward total is a stochastic lower bound of the log-ratio
    and the reverse total an upper bound, so a bracket around zero leaves open which
    model is better.
    """
    low, high = sorted((float(np.sum(forward)), float(np.sum(reverse))))
    if low < 0.0 < high:
        warnings.warn(
            f"The forward and reverse runs disagree on which model is better (total "
            f"log-ratios {float(np.sum(forward)):.3f} and {float(np.sum(reverse)):.3f}): the "
            "comparison is not settled at this budget. The models may be about equally "
            "good, or the paths too short; increase n_temperatures to tell.",
            ConvergenceWarning,
            stacklevel=4,  # the caller of ratio_ais, past the validation wrapper
        )


align_topics_fn = align_topics


def _paired(view_a, view_b, X, n_temperatures, n_chains, schedule, device, random_state,
            settings, kernel):
    seed = random_state if random_state is not None else int(np.random.randint(2**31 - 1))
    kw = dict(n_temperatures=n_temperatures, n_chains=n_chains, schedule=schedule,
              device=device, random_state=seed)
    ra = ais_log_likelihood(view_a, X, **kw)
    rb = ais_log_likelihood(view_b, X, **kw)
    se = np.sqrt(np.nan_to_num(ra.per_document_stderr) ** 2
                 + np.nan_to_num(rb.per_document_stderr) ** 2)
    settings = dict(settings, note=(
        "latent spaces differ (not two per-token mixtures with the same number of "
        "topics): paired standard AIS with common random numbers, not ratio-AIS"),
        random_state=seed)
    return ModelComparison(
        per_document=ra.per_document - rb.per_document,
        per_document_stderr=se,
        n_tokens=ra.n_tokens,
        method="paired-ais",
        settings=settings,
        n_token_updates=ra.n_token_updates + rb.n_token_updates,
        min_ess=min(ra.min_ess, rb.min_ess),
    )
