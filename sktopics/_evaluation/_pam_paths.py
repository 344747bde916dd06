"""Two-level PAM (4-PAM, MoLDA) in z-space: each token's latent is a path (s, t).

The root's and every super-topic's distributions are collapsed, so a path's
conditional given the other tokens is a product of two Polya urns
(:class:`PAMPathPredictive`; the model-selection guide, "Left-to-right"). Path AIS
(:class:`PAMZPath`) anneals the word factor from the prior; the left-to-right
filter (:mod:`._smc`) uses the same urn.
"""

import numpy as np
import torch

from .._random import counter_log_dirichlet, counter_log_gamma
from ._tail import fixed_point_sweep
from ._tokens import PerDocument, temperature_schedule, token_batches
from ._zspace import (
    anneal,
    inverse_cdf,
    log_phi_rows,
    sampling_table,
    scripted,
    topic_word_tensor,
)

__all__ = ["PAMPathPredictive", "PAMZPath", "pam_ais", "path_arrays"]


def path_arrays(path_mixture):
    """``(phi, alpha_root, alpha_path, path_super, path_leaf)`` of a two-level PAM.

    Paths are the edges ``(s, t)`` with ``alpha_sub[s, t] > 0``, row-major.
    """
    phi, alpha_root, alpha_sub = (np.asarray(a, dtype=np.float64) for a in path_mixture)
    supers, leaves = np.nonzero(alpha_sub > 0)
    return phi, alpha_root, alpha_sub[supers, leaves], supers, leaves


class PAMPathPredictive:
    """The Polya urn of the paths ``(s, t)`` of a two-level PAM, every node collapsed.

    Shared by path AIS (:class:`PAMZPath`) and the left-to-right estimator.

    A path's weight is ``(n_s + alpha_root_s) (c_st + alpha_st) / (n_s + A_s)``
    with ``n_s`` the prefix's tokens through super-topic ``s`` and ``A_s`` the sum
    of ``s``'s Dirichlet; summed over the paths it is ``n + sum(alpha_root)``.
    """

    def __init__(self, alpha_root, alpha_path, path_super):
        self.alpha_root = alpha_root
        self.alpha_path = alpha_path
        self.path_super = path_super
        n_supers = alpha_root.shape[0]
        self.onehot = torch.nn.functional.one_hot(path_super, n_supers).to(alpha_path.dtype)
        self.node_total = self.onehot.T @ alpha_path  # (S,)
        self.n_latent = alpha_path.shape[0]
        self.total_prior = float(alpha_root.sum())
        # Every super-topic linked to every sub-topic: paths are row-major (S, T) blocks.
        self.dense = self.n_latent % n_supers == 0 and bool(torch.equal(
            path_super, torch.arange(n_supers, device=path_super.device).repeat_interleave(
                self.n_latent // n_supers)))

    def super_counts(self, c):
        """Tokens per super-topic (rows, S) from the path counts ``c`` (rows, P)."""
        if self.dense:  # O(P) rather than the O(P x S) product
            return c.view(c.shape[0], self.alpha_root.shape[0], -1).sum(-1)
        return c @ self.onehot

    def weights(self, c):
        n_super = self.super_counts(c)
        factor = (n_super + self.alpha_root) / (n_super + self.node_total)
        return factor[:, self.path_super] * (c + self.alpha_path)


def _pam_steps(c, n_super, z, u, tok, table, alpha_path, alpha_root, node_total, path_super,
               offsets: list[int], n_active: list[int]):
    """The lock-step loop of the collapsed sweep for PAM paths (:class:`PAMZPath`).

    The conditional of a path (s, t) is (n_s + alpha_root_s) / (n_s + A_s) x (c_st +
    alpha_st) x table[w]; ``c`` (rows, P) holds the path counts and ``n_super``
    (rows, S) the counts per super-topic, both updated in place, so that
    ``n_super`` is not recomputed from ``c`` (an O(P x S) product) at every step.
    Other arguments as in :func:`._zspace._shifted_steps`.
    """
    ones = torch.ones(c.shape[0], 1, dtype=c.dtype, device=c.device)
    for j in range(len(n_active)):
        n = n_active[j]
        o = offsets[j]
        cj, nsj = c[:n], n_super[:n]
        zj = z[o : o + n].view(-1, 1)
        cj.scatter_add_(1, zj, -ones[:n])
        nsj.scatter_add_(1, path_super.index_select(0, zj.view(-1)).view(-1, 1), -ones[:n])
        factor = ((nsj + alpha_root) / (nsj + node_total)).index_select(1, path_super)
        cum = torch.cumsum(factor * (cj + alpha_path) * table.index_select(0, tok[o : o + n]), -1)
        torch.searchsorted(cum, u[o : o + n].view(-1, 1) * cum[:, -1:], out=zj)
        cj.scatter_add_(1, zj, ones[:n])
        nsj.scatter_add_(1, path_super.index_select(0, zj.view(-1)).view(-1, 1), ones[:n])


class PAMZPath:
    """Standard AIS over per-token PAM paths (s, t), node distributions collapsed.

    ``L`` (:class:`~._zspace.TokenLogPhi`) is log phi of the leaves at the tokens and
    ``path_leaf`` the leaf of each path. Conditional of a token given the others:
    (n_s + alpha_root_s) (n_st + alpha_st) / (n_s + A_s) phi[t, w]^b; ``urn``
    (:class:`PAMPathPredictive`) gives all but the word factor. The loop samples in
    float32, as the z-space kernels do (:mod:`._zspace`).
    """

    kind = "pam"

    def __init__(self, batch, L, alpha_root, alpha_path, path_super, path_leaf):
        self.batch = batch
        self.LA = L
        self._table_b, self._table = None, None
        self.urn = PAMPathPredictive(alpha_root, alpha_path, path_super)
        self._urn32 = PAMPathPredictive(alpha_root.float(), alpha_path.float(), path_super)
        self.path_leaf = path_leaf

    def word_table(self, b):
        """``phi[t, w]^b`` per path (V', P) for sampling, cached for the current temperature.

        The powers are taken on the leaves (V', T) and spread over the paths: with
        every super-topic over every leaf there are n_super times fewer ``exp``.
        """
        if self._table_b != b:
            leaf_table = sampling_table(b * self.LA.table)
            self._table, self._table_b = leaf_table.index_select(1, self.path_leaf), b
        return self._table

    def lock_step(self, b, c, z, counters):
        """The collapsed sweep (in place) with the uniforms of ``counters``: the
        lock-step loop, then the long rows' remaining positions by fixed-point
        iteration (:mod:`._tail`)."""
        urn, batch = self._urn32, self.batch
        u = batch.uniforms(*counters)
        n_paths = c.shape[1]
        tail = batch.tail(n_paths)
        table = self.word_table(b)
        c32 = c.float()
        scripted(_pam_steps)(c32, urn.super_counts(c32), z, u, self.LA.tok, table,
                             urn.alpha_path, urn.alpha_root, urn.node_total, urn.path_super,
                             batch.offsets[:tail.start], batch.n_active[:tail.start])
        if tail.blocks:
            fixed_point_sweep(tail, c32, z.view(-1), u.view(-1), self.LA.tok, table,
                              lambda C: urn.weights(C.reshape(-1, n_paths)).view(C.shape))
        c.copy_(c32)

    def increment(self, b0, b1, z, c):
        return (b1 - b0) * self.batch.row_sum(self.LA.gather(self.path_leaf.index_select(0, z)))

    def blocked(self, b):
        return None


def draw_pam_prior(alpha_root, alpha_path, path_super, batch, counters):
    """Exact draw of the paths from the PAM prior: theta_root, theta_s, then paths."""
    rows, n_super = batch.n_rows, alpha_root.shape[0]
    keys = batch.keys.view(-1, 1)
    log_root = counter_log_dirichlet(alpha_root.expand(rows, -1).contiguous(), keys, *counters, 0)
    lg = counter_log_gamma(alpha_path.expand(rows, -1).contiguous(), keys, *counters, 1)
    log_path = torch.empty_like(lg)
    for s in range(n_super):
        sel = path_super == s
        log_path[:, sel] = (lg[:, sel] - torch.logsumexp(lg[:, sel], -1, keepdim=True)
                            + log_root[:, s : s + 1])
    path = torch.exp(log_path - log_path.amax(-1, keepdim=True))
    z = inverse_cdf(lambda r, sl: path.index_select(0, r), batch.row,
                    batch.uniforms(*counters, 2, dtype=torch.float64), path.shape[1], path.device)
    return z, batch.counts(z, path.shape[1])


def pam_ais(path_mixture, X, *, n_temperatures, n_chains, schedule_name, device, root,
            resample=None, progress=None):
    """Standard AIS prior -> model over the paths; a :class:`~._tokens.PerDocument`."""
    phi, alpha_root, alpha_path, supers, leaves = path_arrays(path_mixture)
    betas = temperature_schedule(schedule_name, n_temperatures)
    out = PerDocument(X.shape[0], n_chains)
    a_root = torch.as_tensor(alpha_root, device=device)
    a_path = torch.as_tensor(alpha_path, device=device)
    p_super = torch.as_tensor(supers, device=device)
    p_leaf = torch.as_tensor(leaves, device=device)
    phi_t = topic_word_tensor(phi, device)
    for batch in token_batches(X, n_chains=n_chains, n_topics=len(supers), device=device,
                               root=root, stream=1):
        path = PAMZPath(batch, log_phi_rows(phi_t, batch), a_root, a_path, p_super, p_leaf)
        z, c = draw_pam_prior(a_root, a_path, p_super, batch, (0,))
        logw = anneal(path, betas, z, c, "collapsed", stage=1, resample=resample,
                      progress=progress)
        out.add_weights(batch.docs, logw, n_chains)
        if progress is not None:
            progress.finish_documents(len(batch.docs))
    return out
