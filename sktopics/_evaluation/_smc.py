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

from .._kernels import FAILED, compiled_path, run_compiled
from .._random import bits, chain_keys, counter_key, document_keys, uniform
from ..utils._devices import device_budget
from ._pam_paths import PAMPathPredictive, path_arrays
from ._resampling import may_hold_any, systematic_ancestors
from ._tokens import PerDocument, batches, expand_tokens, logmeanexp_stats
from ._zspace import scripted

__all__ = ["require_sequential_mixture", "sequential_mixture", "smc_log_likelihood"]

#: The low 64 bits of a Python int, for the kernels' unsigned keys.
_MASK = 0xFFFFFFFFFFFFFFFF

#: Elements (rows x topics) of a step's temporaries on the CPU: a wide step (many
#: documents x particles) is taken in pieces of about 2 MB (float64), 10 % faster
#: than in one piece on a 20NG fold of 600 documents, and far faster than in
#: pieces of one document (the per-operation cost).
_CACHE_ELEMENTS = 1 << 18

#: Elements of a batch's state (rows x topics, plus the padded token arrays) and of
#: a chunk of positions' uniforms (rows x positions), on the CPU (GPU:
#: ``device_budget``): about 8 MB and 2 MB of float64, so that scoring a large
#: corpus stays within a small multiple of its sparse matrix.
_STATE_ELEMENTS = 1 << 20
_CHUNK_ELEMENTS = 1 << 18

#: Elements per position of a document in a batch: its padded tokens, mask and
#: sort keys, and their temporaries while they are shuffled.
_TOKEN_ELEMENTS = 8


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


def _shuffle_tokens(tokens, mask, doc_keys, root):
    """Permute each document's tokens in a seeded order keyed by the document
    (its :func:`~sktopics._random.document_keys` ``doc_keys``)."""
    keys = chain_keys(root, doc_keys, 1, 7, tokens.device).view(-1, 1)
    pos = torch.arange(tokens.shape[1], device=tokens.device).view(1, -1)
    score = bits(keys, pos).to(torch.float64)
    score = torch.where(mask, score, torch.full_like(score, float("inf")))
    order = torch.argsort(score, dim=1, stable=True)
    return torch.gather(tokens, 1, order), torch.gather(mask, 1, order)


def _token_order(X, docs, doc_keys, root, device):
    """Each document's tokens (word ids) in its seeded random order (:func:`_shuffle_tokens`).

    Returns ``words`` (docs, N_max) int64, each row's tokens first, and the lengths.
    """
    tokens, mask, lengths = expand_tokens(X, docs)
    words, _ = _shuffle_tokens(torch.as_tensor(tokens, device=device),
                               torch.as_tensor(mask, device=device), doc_keys, root)
    return words, lengths


def _compiled_filter(words, lengths, keys, phi_t, alpha, n_filters, n_particles, threshold,
                     observed_fraction):
    """The LDA filter of a batch by the compiled kernel (:mod:`sktopics._kernels._smc`):
    ``(log_p (docs, filters), resampling events (docs,))``, or None where it does not
    run."""
    if not compiled_path(words.device, "left-to-right filter"):
        return None
    from .._kernels._pool import run_over
    from .._kernels._smc import smc_documents

    n_docs = len(lengths)
    lengths = np.asarray(lengths, dtype=np.int64)
    observed = (np.zeros(n_docs, dtype=np.int64) if observed_fraction is None
                else np.floor(observed_fraction * lengths).astype(np.int64))
    log_p = np.zeros((n_docs, n_filters))
    events = np.zeros(n_docs, dtype=np.int64)
    arrays = (words.numpy(), lengths, keys.view(n_docs, -1).numpy(),
              np.uint64(counter_key(0) & _MASK), np.uint64(counter_key(1) & _MASK),
              phi_t.numpy(), alpha.numpy(), n_filters, n_particles, float(threshold), observed,
              log_p, events)
    done = run_compiled("left-to-right filter", lambda: run_over(
        lambda start, stop: smc_documents(*arrays, start, stop),
        offsets=np.concatenate([[0], np.cumsum(lengths)])))
    return None if done is FAILED else (log_p, events)


def _urn(c, n_super, alpha, alpha_root, node_total, path_super, pam: bool):
    """Unnormalised predictive weights of the next token's topic (path), (rows, L).

    For LDA the particles' state is already ``counts + alpha``: the weights are the
    state itself.
    """
    if pam:
        factor = ((n_super + alpha_root) / (n_super + node_total)).index_select(1, path_super)
        return factor * (c + alpha)
    return c


def _smc_steps(c, n_super, w_all, log_p, words, u_draw, u_res, z, phi, alpha, alpha_root,
               node_total, path_super, observed, docs_active: list[int], word_at: list[int],
               draw_at: list[int], res_at: list[int], first: int, n_particles: int,
               n_groups: int, a_sum: float, threshold: float, pam: bool, completion: bool,
               keep_z: bool, chunk_docs: int, unconditional: bool) -> torch.Tensor:
    """The filter over positions ``first, first + 1, ...`` of a position-major batch.

    Rows are (document, filter, particle), document-major; at position n the first
    ``docs_active[n]`` documents still hold a token, so the live rows are a prefix.
    ``c`` (rows, L) holds the particles' counts of their prefix's topics plus
    alpha (LDA), or of their prefix's paths (PAM, with ``n_super`` (rows, S) the
    counts per super-topic). ``w_all`` (filters, R) are the particles' normalised
    weights, ``log_p`` (filters,) the estimates. Position ``first + i`` reads its words at
    ``words[word_at[i]:]`` (one per live document), its draw uniforms at
    ``u_draw[draw_at[i]:]`` (one per live row) and its resampling uniforms at
    ``u_res[res_at[i]:]`` (one per live filter). ``observed`` (filters,):
    positions before it are not scored (document completion). With ``keep_z`` the
    draws are kept in ``z`` (rows, N) (for rejuvenation). A position's documents
    are processed ``chunk_docs`` at a time, so that a step's temporaries stay in
    the cache. With ``unconditional`` (a GPU) the resampling step runs whether or
    not a filter needs it (a no-op for those that do not), so that the host never
    waits for the device to say. Returns the number of (filter, position) pairs
    resampled, a tensor.
    """
    n_latent = c.shape[1]
    rows_per_doc = n_groups * n_particles
    ones = torch.ones(c.shape[0], 1, dtype=c.dtype, device=c.device)
    n_resampled = torch.zeros((), dtype=torch.int64, device=c.device)
    for i in range(len(word_at)):
        n = first + i
        resample = threshold > 0.0 and n + 1 < len(docs_active)
        for d0 in range(0, docs_active[n], chunk_docs):
            nd = min(chunk_docs, docs_active[n] - d0)
            r0, nr = d0 * rows_per_doc, nd * rows_per_doc
            f0, nf = d0 * n_groups, nd * n_groups
            cn = c[r0 : r0 + nr]
            weights = _urn(cn, n_super[r0 : r0 + nr], alpha, alpha_root, node_total, path_super,
                           pam)
            phi_w = phi.index_select(0, words[word_at[i] + d0 : word_at[i] + d0 + nd])
            weights = (weights.view(nd, rows_per_doc, n_latent)
                       * phi_w.unsqueeze(1)).view(nr, n_latent)
            cum = torch.cumsum(weights, -1)
            total = cum[:, -1:]
            # the predictive probabilities are total / (n + A): weight, sum, normalise
            wa = w_all[f0 : f0 + nf] * total.view(nf, n_particles)
            z_sum = wa.sum(1)
            log_z = torch.log(z_sum) - math.log(n + a_sum)
            if completion:
                scored = observed[f0 : f0 + nf] <= n
                log_p[f0 : f0 + nf] += torch.where(scored, log_z, torch.zeros_like(log_z))
            else:
                log_p[f0 : f0 + nf] += log_z
            w = wa / z_sum.unsqueeze(1)
            u = u_draw[draw_at[i] + r0 : draw_at[i] + r0 + nr].view(-1, 1)
            k = torch.searchsorted(cum, u * total).clamp_(max=n_latent - 1)
            cn.scatter_add_(1, k, ones[:nr])
            if pam:
                n_super[r0 : r0 + nr].scatter_add_(
                    1, path_super.index_select(0, k.view(-1)).view(-1, 1), ones[:nr])
            if keep_z:
                z[r0 : r0 + nr, n : n + 1] = k
            if resample and docs_active[n + 1] > d0:
                need = w.sum(1) ** 2 / (w * w).sum(1) < threshold * n_particles
                # a document at its last token is not resampled (nothing follows)
                need = need & (torch.arange(nf, device=c.device)
                               < (docs_active[n + 1] - d0) * n_groups)
                if unconditional or bool(need.any()):
                    n_resampled += need.sum()
                    ancestors = systematic_ancestors(
                        w, need, u_res[res_at[i] + f0 : res_at[i] + f0 + nf].view(-1, 1))
                    if unconditional:  # every row from its ancestor (itself if not resampled)
                        moved = torch.arange(r0, r0 + nr, device=c.device)
                        source = ancestors + r0
                    else:  # only the resampled filters' rows change
                        moved = torch.nonzero(need.repeat_interleave(n_particles)).view(-1)
                        source = ancestors.index_select(0, moved) + r0
                        moved = moved + r0
                    c.index_copy_(0, moved, c.index_select(0, source))
                    if pam:
                        n_super.index_copy_(0, moved, n_super.index_select(0, source))
                    if keep_z:
                        z.index_copy_(0, moved, z.index_select(0, source))
                    w = torch.where(need.unsqueeze(1), torch.full_like(w, 1.0 / n_particles), w)
            w_all[f0 : f0 + nf] = w
    return n_resampled


def _rejuvenate(c, n_super, z, words, phi, urn_args, keys, n, n_rows, rows_per_doc):
    """A collapsed Gibbs sweep over positions < n of the live particles (pi_{n-1}-invariant).

    ``words`` (docs, N) are the documents' tokens in their (shuffled) order and ``z``
    (rows, N) the particles' topics (paths).
    """
    cn, zn = c[:n_rows], z[:n_rows]
    ns = n_super[:n_rows]
    alpha, alpha_root, node_total, path_super, pam = urn_args
    u = uniform(keys[:n_rows].view(-1, 1), 2, n, torch.arange(n, device=z.device).view(1, -1))
    ones = torch.ones(n_rows, 1, dtype=c.dtype, device=c.device)
    docs = torch.arange(n_rows, device=z.device) // rows_per_doc
    for j in range(n):
        zj = zn[:, j : j + 1]
        cn.scatter_add_(1, zj, -ones)
        if pam:
            ns.scatter_add_(1, path_super.index_select(0, zj.view(-1)).view(-1, 1), -ones)
        weights = _urn(cn, ns, alpha, alpha_root, node_total, path_super, pam)
        cum = torch.cumsum(weights * phi.index_select(0, words[docs, j]), -1)
        k = torch.searchsorted(cum, u[:, j : j + 1] * cum[:, -1:]).clamp_(max=cum.shape[1] - 1)
        zn[:, j : j + 1] = k
        cn.scatter_add_(1, k, ones)
        if pam:
            ns.scatter_add_(1, path_super.index_select(0, k.view(-1)).view(-1, 1), ones)


def _position_chunks(n_active, budget):
    """``(start, stop)`` position ranges with at most ``budget`` live rows in all."""
    out, start, total = [], 0, 0
    for j, n in enumerate(n_active):
        if j > start and total + n > budget:
            out.append((start, j))
            start, total = j, 0
        total += n
    if start < len(n_active):
        out.append((start, len(n_active)))
    return out


def _flat_at(n_active, start, stop):
    """Offsets of positions ``start:stop`` in a position-major array, and its index arrays.

    Returns ``(at, row, position)``: position ``j`` starts at ``at[j - start]`` and
    holds rows ``0 ... n_active[j] - 1``; ``row`` and ``position`` give each entry's.
    """
    counts = np.asarray(n_active[start:stop], dtype=np.int64)
    at = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    position = np.repeat(np.arange(start, stop, dtype=np.int64), counts)
    row = np.arange(int(counts.sum()), dtype=np.int64) - np.repeat(at, counts)
    return at.tolist(), row, position


def smc_log_likelihood(mixture, X, *, n_particles, n_filters, resample_threshold, rejuvenate,
                       device, root, observed_fraction=None, progress=None):
    """Per-document SMC estimates: a :class:`~._tokens.PerDocument` and the resampling events.

    ``mixture`` is :func:`sequential_mixture`'s triple. Documents are batched in
    decreasing length and laid out position-major, as in the z-space engines: the
    filters still running at position n are a prefix of the batch's rows, and the
    whole batch costs one step per position of its longest document.
    """
    phi, kind, params = mixture
    phi_t = torch.as_tensor(phi, dtype=torch.float64, device=device).T.contiguous()
    phi_t = phi_t.clamp_min(1e-300)
    predictive = _predictive(kind, params, device)
    pam = kind != "topics"
    n_latent = predictive.n_latent
    if pam:
        urn_args = (predictive.alpha_path, predictive.alpha_root, predictive.node_total,
                    predictive.path_super, True)
    else:
        empty = torch.zeros(1, dtype=torch.float64, device=device)
        urn_args = (predictive.alpha, empty, empty,
                    torch.zeros(1, dtype=torch.int64, device=device), False)
    lengths = np.asarray(X.sum(1)).ravel().astype(np.int64)
    doc_keys = document_keys(X)
    rows_per_doc = n_particles * n_filters
    out = PerDocument(X.shape[0], n_filters)
    n_res = torch.zeros((), dtype=torch.int64, device=device)
    steps = scripted(_smc_steps)
    budget = device_budget(device, _CHUNK_ELEMENTS)
    # the documents of a step processed at once: CPU temporaries in the cache; a
    # GPU takes a position's documents in one go
    chunk_docs = max(1, _CACHE_ELEMENTS // (rows_per_doc * n_latent))
    if torch.device(device).type != "cpu":
        chunk_docs = X.shape[0]
    # on a GPU the resampling runs unconditionally (no read-back of the flags)
    unconditional = may_hold_any(torch.zeros(1, dtype=torch.bool, device=device))
    # a batch holds rows x (latent counts + their draws when rejuvenating) and the
    # documents' padded tokens
    for docs in batches(lengths, rows_per_doc, int(rejuvenate), device, row_elements=n_latent,
                        doc_elements=_TOKEN_ELEMENTS, max_elements=_STATE_ELEMENTS):
        words, lens = _token_order(X, docs, doc_keys[docs], root, device)
        n_docs, n_max = len(docs), words.shape[1]
        if not (pam or rejuvenate):
            compiled = _compiled_filter(words, lens, chain_keys(root, doc_keys[docs],
                                                                rows_per_doc, 6, device),
                                        phi_t, predictive.alpha, n_filters, n_particles,
                                        resample_threshold, observed_fraction)
            if compiled is not None:
                log_p, events = compiled
                out.add(docs, logmeanexp_stats(torch.from_numpy(log_p)))
                n_res += int(events.sum())
                if progress is not None:
                    progress.advance(float(lens.sum() * rows_per_doc))
                    progress.finish_documents(n_docs)
                continue
        docs_active = np.searchsorted(-lens, -np.arange(n_max), side="left").tolist()
        rows_active = [d * rows_per_doc for d in docs_active]
        filters_active = [d * n_filters for d in docs_active]
        word_at, wrow, wpos = _flat_at(docs_active, 0, n_max)
        flat_words = words[torch.as_tensor(wrow, device=device), torch.as_tensor(wpos, device=device)]
        del wrow, wpos
        if not rejuvenate:  # only a rejuvenation sweep reads the padded layout
            del words
        keys = chain_keys(root, doc_keys[docs], rows_per_doc, 6, device)
        filter_keys = keys.view(n_docs * n_filters, n_particles)[:, 0]
        n_rows = n_docs * rows_per_doc
        c = torch.zeros(n_rows, n_latent, dtype=torch.float64, device=device)
        if not pam:  # the LDA state is counts + alpha
            c += predictive.alpha
        n_super = torch.zeros(n_rows, predictive.alpha_root.shape[0] if pam else 1,
                              dtype=torch.float64, device=device)
        weights = torch.full((n_docs * n_filters, n_particles), 1.0 / n_particles,
                             dtype=torch.float64, device=device)
        log_p = torch.zeros(n_docs * n_filters, dtype=torch.float64, device=device)
        z = torch.zeros(n_rows if rejuvenate else 1, n_max if rejuvenate else 1,
                        dtype=torch.int64, device=device)
        completion = observed_fraction is not None
        observed = torch.zeros(1, dtype=torch.int64, device=device)
        if completion:
            observed = torch.as_tensor(np.floor(observed_fraction * lens).astype(np.int64),
                                       device=device).repeat_interleave(n_filters)
        for start, stop in _position_chunks(rows_active, budget):
            draw_at, drow, dpos = _flat_at(rows_active, start, stop)
            res_at, frow, fpos = _flat_at(filters_active, start, stop)
            u_draw = uniform(keys[torch.as_tensor(drow, device=device)], 0,
                             torch.as_tensor(dpos, device=device))
            u_res = uniform(filter_keys[torch.as_tensor(frow, device=device)], 1,
                            torch.as_tensor(fpos, device=device))
            spans = [(start, stop)]
            if rejuvenate:
                spans = [(j, j + 1) for j in range(start, stop)]
            for a, b in spans:
                if rejuvenate and a > 1:
                    _rejuvenate(c, n_super, z, words, phi_t, (*urn_args,), keys, a, rows_active[a],
                                rows_per_doc)
                i0, i1 = a - start, b - start
                n_res += steps(c, n_super, weights, log_p, flat_words, u_draw, u_res, z, phi_t,
                               urn_args[0], urn_args[1], urn_args[2], urn_args[3], observed,
                               docs_active, [word_at[j] for j in range(a, b)],
                               draw_at[i0:i1], res_at[i0:i1], a, n_particles, n_filters,
                               predictive.total_prior, float(resample_threshold), pam, completion,
                               rejuvenate, chunk_docs, unconditional)
            if progress is not None:
                progress.advance(float(sum(rows_active[start:stop])))
        out.add(docs, logmeanexp_stats(log_p.view(n_docs, n_filters)))
        if progress is not None:
            progress.finish_documents(n_docs)
    return out, int(n_res)
