"""Sampling kernels of collapsed-Gibbs LDA, in torch (maths only).

Three transition kernels act on a :class:`~sktopics._gibbs._state.GibbsState`:

``parallel_sweep``
    Every token is drawn from its exact collapsed full conditional
    ``p(z_i = k | z_-i) ∝ (n_dk¬ + alpha_k)(n_wk¬ + beta)/(n_k¬ + V beta)``,
    evaluated on the counts *frozen at the start of the sweep* with the token's
    own assignment excluded (``¬``). All tokens move at once; counts are rebuilt
    afterwards. This is AD-LDA (Newman et al. 2009) with one worker per token: it
    is not an exact Gibbs sampler (tokens of a document see each other's stale
    assignments), but each token's draw is exact given the frozen state.
``mh_sweep``
    The same frozen-count sweep, but each token's draw is replaced by a cycle of
    Metropolis-Hastings steps with a word proposal ``q_w(k) ∝ n_wk + beta`` and a
    doc proposal ``q_d(k) ∝ n_dk + alpha_k`` (both O(1): the topic of a random
    token of the same word / document, or a prior draw). Acceptance ratios use
    the counts with the token excluded for the target and the counts the
    proposal was really drawn from for ``q``, so every step leaves the token's
    frozen-count full conditional invariant (``gibbs.md`` section 6b).
``sequential_sweep``
    Exact collapsed Gibbs (Griffiths & Steyvers 2004), token by token, with the
    counts updated after every token. Its stationary distribution is the
    posterior ``p(z | w)``. A Python loop: slow, for correctness checks.

Every random number is a counter-based uniform of ``(seed, stream, sweep,
token)`` (:mod:`._random`), so results do not depend on the chunk size or on the
number of threads. Temporaries are at most ``(chunk, K)``.
"""

import math

import numpy as np
import torch

from ._random import counter_uniform, stream_key
from ._state import chunk_bounds

__all__ = [
    "STREAMS",
    "dense_chunk",
    "mh_chunk",
    "parallel_sweep",
    "mh_sweep",
    "sequential_sweep",
    "random_init",
    "log_joint",
]

#: Stream identifiers of the counter-based random numbers.
STREAMS = dict(init=0, dense=1, mh_word=2, mh_word_accept=3, mh_doc=4, mh_doc_accept=5,
               sequential=6, given_topics=9)


def _take(table, index):
    """1-D gather; ``index_select`` is several times faster than ``table[index]``."""
    return table.index_select(0, index)


def _float_tensor(value, device, dtype=torch.float32):
    return torch.as_tensor(value, dtype=dtype, device=device)


def random_init(corpus, n_components, seed):
    """Uniformly random initial topics, int32 (n_tokens,)."""
    index = torch.arange(corpus.n_tokens, device=corpus.device, dtype=torch.int64)
    u = counter_uniform(stream_key(seed, STREAMS["init"], 0), index)
    return (u * n_components).to(torch.int32).clamp_max_(n_components - 1)


# --------------------------------------------------------------------------- dense
def _flat_index(table, row, col):
    """``row * n_cols + col`` for a flat gather, in int32 when the table allows it."""
    if table.numel() < 2**31 and row.dtype == torch.int32:
        return torch.add(col.to(torch.int32), row, alpha=table.shape[1])
    return torch.add(col.to(torch.int64), row.to(torch.int64), alpha=table.shape[1])


def dense_chunk(doc, word, z, theta_tab, phi_tab, n_dk, n_wk, n_k, alpha, beta, u,
                buffers=None):
    """Draw new topics for a chunk of tokens from frozen counts.

    Parameters
    ----------
    doc, word, z : int tensors of shape (C,)
        Document, word and current topic of each token (int32 or int64).
    theta_tab : float32 tensor (D, K)
        ``n_dk + alpha`` at the start of the sweep.
    phi_tab : float32 tensor (V, K)
        ``(n_wk + beta) / (n_k + V beta)`` at the start of the sweep.
    n_dk, n_wk : int tensors (D, K), (V, K); n_k : int tensor (K,)
        The frozen counts (they include every token at its current topic).
    alpha : float32 tensor (K,); beta : float
    u : float32 tensor (C,)
        Uniforms in [0, 1).
    buffers : pair of float32 tensors of shape (>= C, K), optional
        Work space, reused across chunks (allocating large temporaries per
        chunk costs more than the arithmetic on CPU).

    Returns
    -------
    new_z : int32 tensor (C,)
    """
    K = theta_tab.shape[1]
    V = phi_tab.shape[0]
    C = doc.shape[0]
    if buffers is None:
        buffers = (torch.empty((C, K), dtype=torch.float32, device=doc.device),
                   torch.empty((C, K), dtype=torch.float32, device=doc.device))
    p, tmp = buffers[0][:C], buffers[1][:C]
    # index_select takes int32 indices directly (no int64 copies of the chunk).
    torch.index_select(theta_tab, 0, doc, out=p)
    torch.index_select(phi_tab, 0, word, out=tmp)
    p.mul_(tmp)
    # Self-exclusion: the token's own topic gets the counts without the token.
    z64 = z.to(torch.int64)
    own = _take(n_dk.view(-1), _flat_index(n_dk, doc, z)).to(torch.float32)
    own.add_(_take(alpha - 1.0, z64))
    own_w = _take(n_wk.view(-1), _flat_index(n_wk, word, z)).to(torch.float32)
    own.mul_(own_w.add_(beta - 1.0))
    own.div_(_take(n_k.to(torch.float32) + (V * beta - 1.0), z64))
    p.scatter_(1, z64[:, None], own[:, None])
    cum = torch.cumsum(p, 1, out=tmp)
    target = torch.mul(cum[:, -1], u)[:, None]
    new_z = torch.searchsorted(cum, target, right=True, out_int32=True).squeeze_(1)
    return new_z.clamp_max_(K - 1)


def _frozen_tables(state, alpha, beta):
    V = state.corpus.n_features
    theta_tab = state.n_dk.to(torch.float32).add_(alpha)
    phi_tab = state.n_wk.to(torch.float32).add_(beta)
    phi_tab.div_(state.n_k.to(torch.float32).add_(V * beta))
    return theta_tab, phi_tab


#: Tokens whose uniforms are generated by one call (the hash is a dozen
#: elementwise int64 ops, whose per-call overhead dominates on small chunks).
_RNG_BLOCK = 1 << 16


def _uniform_blocks(key, n_tokens, chunk, device):
    """Yield ``(start, stop, u)`` per chunk; uniforms computed in larger blocks."""
    block = max(chunk, (_RNG_BLOCK // chunk) * chunk)
    for b_start in range(0, n_tokens, block):
        b_stop = min(b_start + block, n_tokens)
        index = torch.arange(b_start, b_stop, device=device, dtype=torch.int64)
        u_block = counter_uniform(key, index)
        for start in range(b_start, b_stop, chunk):
            stop = min(start + chunk, b_stop)
            yield start, stop, u_block[start - b_start:stop - b_start]


def parallel_sweep(state, alpha, beta, seed, sweep, chunk):
    """One fully parallel (frozen-count) sweep; updates ``state`` in place."""
    corpus = state.corpus
    alpha = _float_tensor(alpha, corpus.device)
    theta_tab, phi_tab = _frozen_tables(state, alpha, beta)
    key = stream_key(seed, STREAMS["dense"], sweep)
    new_z = torch.empty_like(state.z)
    size = min(chunk, max(corpus.n_tokens, 1))
    K = state.n_components
    buffers = (torch.empty((size, K), dtype=torch.float32, device=corpus.device),
               torch.empty((size, K), dtype=torch.float32, device=corpus.device))
    for start, stop, u in _uniform_blocks(key, corpus.n_tokens, chunk, corpus.device):
        new_z[start:stop] = dense_chunk(
            corpus.doc[start:stop], corpus.word[start:stop], state.z[start:stop],
            theta_tab, phi_tab, state.n_dk, state.n_wk, state.n_k, alpha, beta, u, buffers,
        )
    state.z = new_z
    state.rebuild_counts()


# --------------------------------------------------------------------------- MH
def mh_chunk(doc, word, z_old, z_cur, frozen, tables, alpha, alpha_cum, beta, uniforms):
    """Metropolis-Hastings cycles (word proposal, then doc proposal) for tokens.

    Parameters
    ----------
    doc, word : int tensors (C,)
    z_old : int tensor (C,)
        Topic of each token in the frozen state (the counts include it there).
    z_cur : int tensor (C,)
        Current state of each token's chain (starts at ``z_old``).
    frozen : tuple
        ``(z_by_word, word_start, word_length, z_by_doc, doc_start, doc_length)``:
        the frozen topics in word-major and doc-major order with offsets.
    tables : tuple
        ``(n_dk, n_wk, n_k)`` frozen integer counts.
    alpha : float32 (K,); alpha_cum : float32 (K,) cumulative sums; beta : float
    uniforms : list of (u_word, u_word_accept, u_doc, u_doc_accept) float32 (C,)
        One tuple per MH cycle.

    Returns
    -------
    z : int64 tensor (C,)
    """
    z_by_word, word_start, word_length, z_by_doc, doc_start, doc_length = frozen
    n_dk, n_wk, n_k = tables
    K = n_dk.shape[1]
    V = n_wk.shape[0]
    n_tokens = z_by_word.shape[0]
    d64 = doc.to(torch.int64)
    w64 = word.to(torch.int64)
    zo = z_old.to(torch.int64)
    s = z_cur.to(torch.int64)
    dK = d64 * K
    wK = w64 * K
    flat_dk = n_dk.view(-1)
    flat_wk = n_wk.view(-1)
    vbeta = V * beta
    nw = _take(word_length, w64).to(torch.float32)
    nd = _take(doc_length, d64).to(torch.float32)
    alpha_sum = float(alpha_cum[-1])

    def terms(k):
        # Target (counts without the token) and the inclusive counts the
        # proposals were drawn from.
        cd = _take(flat_dk, dK + k).to(torch.float32)
        cw = _take(flat_wk, wK + k).to(torch.float32)
        ck = _take(n_k, k).to(torch.float32)
        own = (k == zo).to(torch.float32)
        target = (cd - own + _take(alpha, k)) * (cw - own + beta) / (ck - own + vbeta)
        return target, cd, cw

    # Terms of the current state are carried from step to step (after an accept
    # they are the proposal's), so each step gathers the proposal's terms only.
    pi_s, cd_s, cw_s = terms(s)
    for u_w, a_w, u_d, a_d in uniforms:
        # Word proposal: q(k) ∝ n_wk (inclusive) + beta.
        x = u_w * (nw + K * beta)
        from_token = x < nw
        pos = (_take(word_start, w64) + x.to(torch.int64)).clamp_(max=n_tokens - 1)
        t_token = _take(z_by_word, pos).to(torch.int64)
        t_prior = ((x - nw) / beta).to(torch.int64).clamp_(0, K - 1)
        t = torch.where(from_token, t_token, t_prior)
        pi_t, cd_t, cw_t = terms(t)
        ratio = pi_t * (cw_s + beta) / (pi_s * (cw_t + beta))
        accept = a_w < ratio
        s = torch.where(accept, t, s)
        pi_s = torch.where(accept, pi_t, pi_s)
        cd_s = torch.where(accept, cd_t, cd_s)
        cw_s = torch.where(accept, cw_t, cw_s)
        # Doc proposal: q(k) ∝ n_dk (inclusive) + alpha_k.
        x = u_d * (nd + alpha_sum)
        from_token = x < nd
        pos = (_take(doc_start, d64) + x.to(torch.int64)).clamp_(max=n_tokens - 1)
        t_token = _take(z_by_doc, pos).to(torch.int64)
        # Prior branch (rare for long documents): draw k ∝ alpha_k on that subset.
        t = t_token
        prior = (~from_token).nonzero().squeeze(1)
        if prior.numel():
            t_prior = torch.searchsorted(alpha_cum, _take(x - nd, prior), right=True)
            t = t.index_copy(0, prior, t_prior.clamp_(0, K - 1))
        pi_t, cd_t, cw_t = terms(t)
        ratio = pi_t * (cd_s + _take(alpha, s)) / (pi_s * (cd_t + _take(alpha, t)))
        accept = a_d < ratio
        s = torch.where(accept, t, s)
        pi_s = torch.where(accept, pi_t, pi_s)
        cd_s = torch.where(accept, cd_t, cd_s)
        cw_s = torch.where(accept, cw_t, cw_s)
    return s


def mh_sweep(state, alpha, beta, seed, sweep, chunk, n_cycles=1):
    """One frozen-count sweep with O(1) MH draws; updates ``state`` in place."""
    corpus = state.corpus
    device = corpus.device
    alpha = _float_tensor(alpha, device)
    alpha_cum = torch.cumsum(alpha, 0)
    z_by_doc = _take(state.z, corpus.doc_perm)
    frozen = (state.z, corpus.word_start, corpus.word_length, z_by_doc, corpus.doc_start,
              corpus.doc_length)
    tables = (state.n_dk, state.n_wk, state.n_k)
    keys = [
        [stream_key(seed, STREAMS[name], sweep * n_cycles + c)
         for name in ("mh_word", "mh_word_accept", "mh_doc", "mh_doc_accept")]
        for c in range(n_cycles)
    ]
    new_z = torch.empty_like(state.z)
    for start, stop in chunk_bounds(corpus.n_tokens, chunk):
        index = torch.arange(start, stop, device=device, dtype=torch.int64)
        uniforms = [[counter_uniform(k, index) for k in cycle] for cycle in keys]
        z = state.z[start:stop]
        new_z[start:stop] = mh_chunk(
            corpus.doc[start:stop], corpus.word[start:stop], z, z, frozen, tables,
            alpha, alpha_cum, beta, uniforms,
        )
    state.z = new_z
    state.rebuild_counts()


# --------------------------------------------------------------------------- sequential
def sequential_sweep(state, alpha, beta, seed, sweep):
    """One exact collapsed-Gibbs sweep, token by token (Python loop; slow)."""
    corpus = state.corpus
    K = state.n_components
    V = corpus.n_features
    vbeta = V * beta
    alpha = np.asarray(alpha, dtype=np.float64)
    doc = corpus.doc.cpu().numpy()
    word = corpus.word.cpu().numpy()
    z = state.z.cpu().numpy().astype(np.int64)
    n_dk = state.n_dk.cpu().numpy().astype(np.float64)
    n_wk = state.n_wk.cpu().numpy().astype(np.float64)
    n_k = state.n_k.cpu().numpy().astype(np.float64)
    index = torch.arange(corpus.n_tokens, dtype=torch.int64)
    u = counter_uniform(stream_key(seed, STREAMS["sequential"], sweep), index).numpy()
    u = u.astype(np.float64)
    for i in range(corpus.n_tokens):
        d, w, k = doc[i], word[i], z[i]
        n_dk[d, k] -= 1.0
        n_wk[w, k] -= 1.0
        n_k[k] -= 1.0
        cum = np.cumsum((n_dk[d] + alpha) * (n_wk[w] + beta) / (n_k + vbeta))
        k = min(int(np.searchsorted(cum, u[i] * cum[-1], side="right")), K - 1)
        z[i] = k
        n_dk[d, k] += 1.0
        n_wk[w, k] += 1.0
        n_k[k] += 1.0
    state.z = torch.from_numpy(z.astype(np.int32)).to(corpus.device)
    state.rebuild_counts()


# --------------------------------------------------------------------------- likelihood
def log_joint(state, alpha, beta, rows=1 << 16):
    """Joint log-likelihood ``log p(w, z | alpha, beta)`` of the state (float)."""
    device = state.n_dk.device
    alpha = _float_tensor(alpha, device, torch.float64)
    alpha_sum = alpha.sum()
    V = state.corpus.n_features
    total = torch.zeros((), dtype=torch.float64, device=device)
    lg_alpha = torch.lgamma(alpha)
    for start in range(0, state.n_dk.shape[0], rows):
        n = state.n_dk[start:start + rows].to(torch.float64)
        total += (torch.lgamma(n + alpha) - lg_alpha).sum()
        total -= (torch.lgamma(n.sum(1) + alpha_sum) - torch.lgamma(alpha_sum)).sum()
    lg_beta = math.lgamma(beta)
    for start in range(0, V, rows):
        n = state.n_wk[start:start + rows].to(torch.float64)
        total += (torch.lgamma(n + beta) - lg_beta).sum()
    n_k = state.n_k.to(torch.float64)
    total += (math.lgamma(V * beta) - torch.lgamma(n_k + V * beta)).sum()
    return float(total)
