"""AIS over topic assignments z with theta collapsed (Wallach et al. 2009).

The intermediate distributions f_b(z), 0 <= b <= 1, are paths between two mixture
models, or from the Polya prior to a model (:class:`ZPath`). Transitions, each
leaving its intermediate distribution exactly invariant:

- ``"collapsed"``: a sequential collapsed Gibbs sweep over a document's tokens, run
  in lock-step across (document, chain) rows -- position j of every row is
  updated at once, which is still a sequential sweep for each row;
- ``"blocked"``: two-block Gibbs on (theta, z): theta ~ Dir(alpha_b + c), then all
  tokens at once from theta_k exp(g_b[n, k]). Valid whenever the intermediate
  distribution has a single Polya term (standard AIS, convex and hybrid paths,
  geometric path with equal alphas).

A fully parallel update of all tokens from stale counts is *not* a valid kernel
and is not offered. A path object owns its conditional: ``lock_step`` runs the
collapsed sweep's loop, ``increment`` the weight update, ``blocked`` says whether
the blocked kernel applies; PAM paths (:mod:`._pam_paths`) implement the same.

State: ``z`` holds one topic per token in the flat layout of
:class:`~._tokens.TokenBatch`, ``c`` the (rows, K) float64 topic counts. The
weights are computed in float64 from exact counts; the kernels *sample* in
float32 (word factors scaled to a maximum of 1 per word, counts plus alpha,
24-bit uniforms). Rounding makes a kernel leave invariant a distribution within
about 1e-7 (relative) of the intended one, far below any Monte Carlo error,
and halves the memory traffic of the lock-step loops.
"""

import math
import warnings

import numpy as np
import torch

from .._kernels import FAILED, compiled_path, run_compiled
from .._random import counter_key, counter_log_dirichlet
from ..utils._devices import device_budget
from ._resampling import resample_chains
from ._tail import fixed_point_sweep
from ._tokens import MAX_ELEMENTS, PerDocument, temperature_schedule, token_batches

__all__ = [
    "TokenLogPhi",
    "ZPath",
    "anneal",
    "draw_prior",
    "draw_sequential",
    "kernel_fn",
    "log_phi_rows",
    "resolve_kernel",
    "scripted",
    "topic_word_tensor",
    "z_ais",
]


def log_polya(c, alpha):
    """log p(z | alpha) with theta collapsed, from counts c (B, K); alpha (K,) or (B, K)."""
    a_sum = alpha.sum(-1)
    n = c.sum(-1)
    return (
        torch.lgamma(c + alpha).sum(-1)
        - torch.lgamma(alpha).sum(-1)
        + torch.lgamma(a_sum)
        - torch.lgamma(n + a_sum)
    )


class TokenLogPhi:
    """log phi at the tokens of a batch, for every topic: a (V', K) table over the
    batch's distinct words and each token's index ``tok`` into it.

    A tempered word factor then costs V' x K transcendentals per temperature, not
    one per token and topic.
    """

    def __init__(self, table, tok):
        self.table = table.contiguous()  # (V', K) float64
        self.tok = tok  # (tokens,) int64

    @property
    def n_topics(self):
        return self.table.shape[1]

    def gather(self, z):
        """log phi[z_n, w_n] per token (tokens,)."""
        return self.table.view(-1)[self.tok * self.n_topics + z]


def topic_word_tensor(phi, device):
    """A (K, V) float64 topic-word table on ``device``, made once per evaluation call."""
    return torch.as_tensor(np.asarray(phi, dtype=np.float64), device=device)


def log_phi_rows(phi, batch):
    """:class:`TokenLogPhi` of a :class:`~._tokens.TokenBatch` under topics ``phi`` (K, V)."""
    uniq, tok = torch.unique(batch.word, return_inverse=True)
    return TokenLogPhi(torch.log(phi[:, uniq].clamp_min(1e-300)).T, tok)


_SCRIPTED = {}


def scripted(fn):
    """``fn`` compiled with TorchScript (once, on first use).

    The lock-step loops are latency-bound (one small step per position);
    TorchScript removes the interpreter overhead, 1.6-2.9x faster on CPU
    (measured with 150 and 4 rows). Random numbers and results are unchanged.
    """
    if fn.__name__ not in _SCRIPTED:
        try:
            with warnings.catch_warnings():
                # deprecated in favour of torch.compile, which needs a C++ compiler
                warnings.simplefilter("ignore", DeprecationWarning)
                _SCRIPTED[fn.__name__] = torch.jit.script(fn)
        except (AttributeError, RuntimeError):  # pragma: no cover - no TorchScript here
            _SCRIPTED[fn.__name__] = fn
    return _SCRIPTED[fn.__name__]


def _shifted_steps(state, z, u, tok, table, offsets: list[int], n_active: list[int]):
    """The lock-step loop of the collapsed sweep for (c + alpha_b) x table[w].

    ``state`` (rows, K) holds c + alpha_b; ``z``, ``u`` (tokens, 1) and ``tok``
    (tokens,) are per token in the flat layout (position j at ``offsets[j]``, its
    ``n_active[j]`` rows a prefix); ``table`` (V', K) is the word factor. In place.
    The uniforms are in (0, 1), so the search never passes the last topic and never
    lands on a zero-probability one. Every operation counts: at a few rows per
    position the loop's cost is its number of operations.
    """
    ones = torch.ones(state.shape[0], 1, dtype=state.dtype, device=state.device)
    minus_ones = -ones
    for j in range(len(n_active)):
        n = n_active[j]
        o = offsets[j]
        sj = state[:n]
        zj = z[o : o + n]
        sj.scatter_add_(1, zj, minus_ones[:n])
        cum = torch.cumsum(sj * table.index_select(0, tok[o : o + n]), -1)
        torch.searchsorted(cum, u[o : o + n] * cum[:, -1:], out=zj)
        sj.scatter_add_(1, zj, ones[:n])


def _geometric_steps(index, factor, z, u, tok, table, prior, n_topics: int, offsets: list[int],
                     n_active: list[int]):
    """The lock-step loop for the geometric path between different alphas.

    The conditional is (c + alpha_A)^b (c + alpha_B)^(1 - b) x table[w]. Its count
    factor is tabulated per temperature in ``prior`` (M + 1, K) for every count
    ``m <= M``; ``index`` (rows, K) holds c * K + k and ``factor`` (rows, K) the
    looked-up factors, both updated in place at the two topics a step changes: two
    lookups per row and step instead of two logarithms and an exponential per
    topic. Other arguments as in :func:`_shifted_steps`.
    """
    step = torch.full((index.shape[0], 1), n_topics, dtype=index.dtype, device=index.device)
    minus_step = -step
    for j in range(len(n_active)):
        n = n_active[j]
        o = offsets[j]
        cj = index[:n]
        fj = factor[:n]
        zj = z[o : o + n]
        cj.scatter_add_(1, zj, minus_step[:n])
        fj.scatter_(1, zj, torch.take(prior, cj.gather(1, zj)))
        cum = torch.cumsum(fj * table.index_select(0, tok[o : o + n]), -1)
        torch.searchsorted(cum, u[o : o + n] * cum[:, -1:], out=zj)
        cj.scatter_add_(1, zj, step[:n])
        fj.scatter_(1, zj, torch.take(prior, cj.gather(1, zj)))


def _sequential_steps(state, z, u, tok, table, a_sum: float, offsets: list[int],
                      n_active: list[int]):
    """Left-to-right draw z_j ~ (c_<j + alpha) x table[w_j]; returns log prod_j a_j.

    ``state`` (rows, K) starts at alpha and ends at c + alpha; a_j =
    sum_k (c_<j,k + alpha_k) table[w_j, k] / (j + A) is the predictive probability of
    token j, so the returned log-weight (rows,) is that of one left-to-right particle
    without resampling: exp of it is unbiased for p(w). In float64 (the weights are
    the estimate's); other arguments as in :func:`_shifted_steps`.
    """
    ones = torch.ones(state.shape[0], 1, dtype=state.dtype, device=state.device)
    logw = torch.zeros(state.shape[0], dtype=state.dtype, device=state.device)
    for j in range(len(n_active)):
        n = n_active[j]
        o = offsets[j]
        sj = state[:n]
        cum = torch.cumsum(sj * table.index_select(0, tok[o : o + n]), -1)
        total = cum[:, -1:]
        logw[:n] += torch.log(total.view(-1)) - math.log(j + a_sum)
        zj = z[o : o + n].view(-1, 1)
        torch.searchsorted(cum, u[o : o + n].view(-1, 1) * total, out=zj)
        sj.scatter_add_(1, zj, ones[:n])
    return logw


def sampling_table(log_table):
    """A float32 sampling table from a float64 log word factor (V', K), scaled per word.

    Each word's row is divided by its maximum (the conditional of a token does not
    change when its word factor is scaled), so float32 neither overflows nor
    underflows where it matters.
    """
    return torch.exp(log_table - log_table.amax(-1, keepdim=True)).float()


class ZPath:
    """Intermediate distributions f_b(z), 0 <= b <= 1, between two mixture models.

    ``f_0`` is model B, ``f_1`` model A. ``LA``/``LB`` are :class:`TokenLogPhi`
    of the same batch (``LB=None``: a flat word factor, i.e. standard AIS from the
    prior).

    kind: ``"geometric"`` f_b = f_A^b f_B^(1-b); ``"convex"`` phi_b, alpha_b
    interpolated; ``"hybrid"`` geometric in phi, arithmetic in alpha.
    """

    def __init__(self, kind, batch, LA, alphaA, LB=None, alphaB=None):
        self.kind = kind
        self.batch = batch
        self.LA, self.LB = LA, LB
        self.alphaA = alphaA
        self.alphaB = alphaA if alphaB is None else alphaB
        self.same_alpha = bool(torch.equal(self.alphaA, self.alphaB))
        self._table_b, self._table = None, None
        self._gap = None

    @property
    def two_polya_terms(self):
        """Whether f_b has two Polya terms (the geometric path between different alphas)."""
        return self.kind == "geometric" and not self.same_alpha

    def alpha(self, b):
        if self.same_alpha:
            return self.alphaA
        return b * self.alphaA + (1.0 - b) * self.alphaB

    def log_word_table(self, b):
        """log of the word factor exp(g_b) per distinct word, (V', K) float64."""
        TA = self.LA.table
        TB = None if self.LB is None else self.LB.table
        if self.kind == "convex":
            if TB is None:
                return torch.log(b * torch.exp(TA) + (1.0 - b))
            return torch.logaddexp(TA + math.log(b) if b > 0 else torch.full_like(TA, -math.inf),
                                   TB + math.log(1.0 - b) if b < 1 else torch.full_like(TB, -math.inf))
        return b * TA if TB is None else b * TA + (1.0 - b) * TB

    def word_table(self, b):
        """The float32 sampling table at ``b`` (:func:`sampling_table`), cached for the last b."""
        if self._table_b != b:
            self._table = sampling_table(self.log_word_table(b))
            self._table_b = b
        return self._table

    def cond_logits(self, b, c, tok):
        """Log of the conditional of tokens with table indices ``tok`` given the other
        tokens' counts ``c`` (rows, K), in float64 (the reference the loops implement)."""
        g = self.log_word_table(b).index_select(0, tok)
        if self.two_polya_terms:
            return b * torch.log(c + self.alphaA) + (1.0 - b) * torch.log(c + self.alphaB) + g
        return torch.log(c + self.alpha(b)) + g

    def lock_step(self, b, c, z, counters):
        """The collapsed sweep over the batch's positions (in place), with the uniforms
        of ``counters``.

        On a CPU with the compiled kernels each row's positions are swept in turn
        (:mod:`sktopics._kernels._zspace`, the same draws). Otherwise the lock-step
        loop runs while enough rows hold a token, and the few long rows' remaining
        positions are solved by fixed-point iteration (:mod:`._tail`), with the same
        result as the loop. When the conditional is (c_k + alpha_k) x word factor the
        loops work on the shifted counts c + alpha, which saves an addition per step.
        """
        batch, n_topics = self.batch, c.shape[1]
        table = self.word_table(b)
        if self.two_polya_terms:
            counts = torch.arange(len(batch.n_active) + 1, dtype=c.dtype, device=c.device)
            counts = counts.view(-1, 1)
            prior = torch.exp(b * torch.log(counts + self.alphaA)
                              + (1.0 - b) * torch.log(counts + self.alphaB)).float()
            topics = torch.arange(n_topics, device=c.device)
            if self._compiled_geometric(c, z, counters, table, prior, topics):
                return
            tail = batch.tail(n_topics)
            head = tail.start
            u = batch.uniforms(*counters)
            index = c.long() * n_topics + topics
            scripted(_geometric_steps)(index, torch.take(prior, index), z.view(-1, 1),
                                       u.view(-1, 1), self.LA.tok, table, prior, n_topics,
                                       batch.offsets[:head], batch.n_active[:head])
            c.copy_(torch.div(index - topics, n_topics, rounding_mode="floor"))
            if tail.blocks:
                counts32 = c.float()
                fixed_point_sweep(tail, counts32, z, u, self.LA.tok, table,
                                  lambda C: torch.take(prior, C.long() * n_topics + topics))
                c.copy_(counts32)
            return
        shift = self.alpha(b)
        compiled = self._compiled_shifted((c + shift).float(), z, counters, table)
        if compiled is not None:
            c.copy_(torch.round(compiled.double() - shift))
            return
        state = (c + shift).float()
        tail = batch.tail(n_topics)
        head = tail.start
        u = batch.uniforms(*counters)
        scripted(_shifted_steps)(state, z.view(-1, 1), u.view(-1, 1), self.LA.tok, table,
                                 batch.offsets[:head], batch.n_active[:head])
        c.copy_(torch.round(state.double() - shift))
        if tail.blocks:
            counts32 = c.float()
            fixed_point_sweep(tail, counts32, z, u, self.LA.tok, table, shift.float())
            c.copy_(counts32)

    def _compiled_shifted(self, state, z, counters, table):
        """The sweep for (c + alpha_b) x table by the compiled kernel from ``state``
        (c + alpha_b, float32, a fresh tensor it updates); the final state, or None
        where the kernel does not run (then ``z`` has not changed)."""
        from .._kernels._zspace import shifted_sweep

        if not compiled_path(z.device, _ZSPACE_SWEEP):
            return None
        z_new = z.numpy().copy()  # the chain's state stays as it was if the kernel fails
        if not _run_rows(self.batch, _ZSPACE_SWEEP, shifted_sweep, state.numpy(), z_new,
                         self.batch.base.numpy(), _stage(counters), self.LA.tok.numpy(),
                         table.numpy(), *self.batch.row_layout()):
            return None
        z.copy_(torch.from_numpy(z_new))
        return state

    def _compiled_geometric(self, c, z, counters, table, prior, topics):
        """The sweep for the geometric path between different alphas by the compiled
        kernel; False where it does not run (then nothing has changed)."""
        from .._kernels._zspace import geometric_sweep

        if not compiled_path(z.device, _GEOMETRIC_SWEEP):
            return False
        counts = c.long().numpy()  # fresh arrays: c changes only on success
        factor = torch.take(prior, c.long() * c.shape[1] + topics).numpy()
        z_new = z.numpy().copy()
        if not _run_rows(self.batch, _GEOMETRIC_SWEEP, geometric_sweep, counts, factor, z_new,
                         self.batch.base.numpy(), _stage(counters), self.LA.tok.numpy(),
                         table.numpy(), prior.numpy(), *self.batch.row_layout()):
            return False
        z.copy_(torch.from_numpy(z_new))
        c.copy_(torch.from_numpy(counts))
        return True

    def _token_terms(self, z):
        la = self.LA.gather(z)
        return la, (None if self.LB is None else self.LB.gather(z))

    def log_f(self, b, z, c):
        """log f_b(z) per row, from per-token terms and the counts."""
        la, lb = self._token_terms(z)
        row_sum = self.batch.row_sum
        if self.kind == "geometric":
            pa = 0.0 if self.same_alpha else log_polya(c, self.alphaA)
            pb = 0.0 if self.same_alpha else log_polya(c, self.alphaB)
            base = log_polya(c, self.alphaA) if self.same_alpha else 0.0
            sb = 0.0 if lb is None else row_sum(lb)
            return base + b * (pa + row_sum(la)) + (1.0 - b) * (pb + sb)
        if self.kind == "convex":
            pb = torch.ones_like(la) if lb is None else torch.exp(lb)
            return log_polya(c, self.alpha(b)) + row_sum(torch.log(b * torch.exp(la) + (1.0 - b) * pb))
        mixed = b * la if lb is None else b * la + (1.0 - b) * lb
        return log_polya(c, self.alpha(b)) + row_sum(mixed)

    def increment(self, b0, b1, z, c):
        """log f_{b1}(z) - log f_{b0}(z) per row."""
        if b1 == b0:
            return torch.zeros(c.shape[0], dtype=torch.float64, device=c.device)
        if self.kind == "geometric":
            la, lb = self._token_terms(z)
            diff = self.batch.row_sum(la if lb is None else la - lb)
            if not self.same_alpha:
                diff = diff + self._polya_gap(c)
            return (b1 - b0) * diff
        return self.log_f(b1, z, c) - self.log_f(b0, z, c)

    def _polya_gap(self, c):
        """log p(z | alpha_A) - log p(z | alpha_B) per row, from the counts ``c``.

        The lgamma terms are tabulated once per batch for every count a row can
        hold, so a temperature costs a lookup per row and topic.
        """
        if self._gap is None:
            n_topics = c.shape[1]
            m = torch.arange(len(self.batch.n_active) + 1, dtype=c.dtype, device=c.device)
            m = m.view(-1, 1)
            table = (torch.lgamma(m + self.alphaA) - torch.lgamma(self.alphaA)
                     - torch.lgamma(m + self.alphaB) + torch.lgamma(self.alphaB))
            n = c.sum(-1)  # the rows' lengths: fixed along the path
            a_sum, b_sum = self.alphaA.sum(), self.alphaB.sum()
            const = (torch.lgamma(a_sum) - torch.lgamma(n + a_sum)
                     - torch.lgamma(b_sum) + torch.lgamma(n + b_sum))
            topics = torch.arange(n_topics, device=c.device)
            self._gap = (table.reshape(-1), const, topics)
        table, const, topics = self._gap
        return torch.take(table, c.long() * c.shape[1] + topics).sum(-1) + const

    def blocked(self, b):
        """alpha_b when f_b has a single Polya term (the blocked kernel applies), else None."""
        return None if self.two_polya_terms else self.alpha(b)


def _stage(counters):
    """The folded constant of a uniform's Python counters, as the kernels take it."""
    return np.uint64(counter_key(*counters) & 0xFFFFFFFFFFFFFFFF)


#: The compiled kernels' names, as their warnings say them.
_ZSPACE_SWEEP, _GEOMETRIC_SWEEP, _SEQUENTIAL_DRAW = (
    "z-space AIS sweep", "geometric ratio-AIS sweep", "left-to-right start of ratio-AIS")


def _run_rows(batch, name, kernel, *arrays):
    """``kernel(*arrays, start, stop)`` over the batch's rows on ``n_jobs`` threads;
    False where the compiled kernel ``name`` failed (:func:`run_compiled`)."""
    from .._kernels._pool import run_over

    return run_compiled(name, lambda: run_over(lambda start, stop: kernel(*arrays, start, stop),
                                               batch.n_rows)) is not FAILED


def sweep_collapsed(path, b, z, c, counters):
    """One sequential collapsed Gibbs sweep (in place).

    Rows are sorted by decreasing length, so the rows holding a token at position
    j are a prefix, ``n_active[j]`` of them: no masking is needed.
    """
    path.lock_step(b, c, z, counters)


def inverse_cdf(weights_of, row, u, n_categories, device):
    """Per-token categorical draws, in chunks: ``weights_of(rows_of_chunk, chunk)``
    returns the chunk's unnormalised weights (tokens, K); ``u`` (tokens,) uniforms."""
    out = torch.empty_like(row)
    size = max(1, device_budget(device, MAX_ELEMENTS) // max(n_categories, 1))
    for s in range(0, row.shape[0], size):
        cum = torch.cumsum(weights_of(row[s : s + size], slice(s, s + size)), -1)
        v = u[s : s + size].to(cum.dtype).view(-1, 1) * cum[:, -1:]
        out[s : s + size] = torch.searchsorted(cum, v).view(-1).clamp_(max=n_categories - 1)
    return out


def sweep_blocked(path, b, z, c, counters):
    """Two-block Gibbs on (theta, z) (in place)."""
    batch = path.batch
    log_theta = counter_log_dirichlet(c + path.blocked(b), batch.keys.view(-1, 1), *counters, 0)
    theta = torch.exp(log_theta - log_theta.amax(-1, keepdim=True)).float()
    table, tok = path.word_table(b), path.LA.tok
    z.copy_(inverse_cdf(lambda rows, sl: theta.index_select(0, rows) * table.index_select(0, tok[sl]),
                        batch.row, batch.uniforms(*counters, 1), c.shape[1], z.device))
    c.copy_(batch.counts(z, c.shape[1]))


def draw_prior(alpha, batch, counters, n_topics):
    """Exact draw of z from the Polya prior p(z | alpha): theta ~ Dir, z ~ Cat(theta)."""
    conc = alpha.expand(batch.n_rows, n_topics).contiguous()
    log_theta = counter_log_dirichlet(conc, batch.keys.view(-1, 1), *counters, 0)
    theta = torch.exp(log_theta - log_theta.amax(-1, keepdim=True))
    z = inverse_cdf(lambda rows, sl: theta.index_select(0, rows), batch.row,
                    batch.uniforms(*counters, 1, dtype=torch.float64), n_topics, alpha.device)
    return z, batch.counts(z, n_topics)


def draw_sequential(path, alpha, counters):
    """z drawn token by token from the left-to-right proposal of model ``path`` at b = 1.

    An importance sampler for p(z | w): returns z, counts and log-weights
    log p(w, z) - log q(z) (one left-to-right particle; no resampling).
    """
    from .._kernels._zspace import sequential_draw

    batch = path.batch
    z = torch.zeros_like(batch.row)
    state = alpha.expand(batch.n_rows, -1).clone()
    u = batch.uniforms(*counters, dtype=torch.float64)
    table = torch.exp(path.log_word_table(1.0))
    logw = torch.zeros(batch.n_rows, dtype=torch.float64, device=z.device)
    if not (compiled_path(z.device, _SEQUENTIAL_DRAW)
            and _run_rows(batch, _SEQUENTIAL_DRAW, sequential_draw, state.numpy(), z.numpy(), u.numpy(),
                          path.LA.tok.numpy(), table.numpy(), float(alpha.sum()),
                          *batch.row_layout(), logw.numpy())):
        state = alpha.expand(batch.n_rows, -1).clone()  # a failed kernel may have begun
        logw = scripted(_sequential_steps)(state, z, u, path.LA.tok, table,
                                           float(alpha.sum()), batch.offsets, batch.n_active)
    return z, batch.counts(z, alpha.shape[0]), logw


def kernel_fn(kernel, path):
    """The sweep function of ``kernel`` on ``path``; an error where it is invalid."""
    if kernel == "blocked":
        if path.blocked(0.5) is None:
            raise ValueError(
                "The blocked kernel needs a single Polya term: not available on the "
                "geometric path between models with different alphas; use "
                "kernel='collapsed' or path='hybrid'."
            )
        return sweep_blocked
    return sweep_collapsed


def anneal(path, betas, z, c, kernel, stage, move_first=False, resample=None, progress=None):
    """AIS along ``path`` over ``betas`` from state (z, c); returns log-weights (rows,).

    ``resample``: None, or a dict with ``threshold``; a document's chains are then
    resampled after a weight update when their effective sample size falls below
    ``threshold * n_chains`` (the dict's ``events`` counts them, as a tensor until
    the caller reads it). ``progress``: a :class:`~._progress.Progress` or None.
    """
    sweep = kernel_fn(kernel, path)
    work = path.batch.n_tokens
    logw = torch.zeros(c.shape[0], dtype=torch.float64, device=c.device)
    if move_first:
        sweep(path, float(betas[0]), z, c, (stage, 0))
    n_steps = len(betas) - 1
    for s in range(1, n_steps + 1):
        logw += path.increment(float(betas[s - 1]), float(betas[s]), z, c)
        if s < n_steps:
            if resample is not None:
                logw, n_res = resample_chains(logw, z, c, path.batch, resample["threshold"],
                                              stage, s)
                resample["events"] = resample.get("events", 0) + n_res
            sweep(path, float(betas[s]), z, c, (stage, s))
        if progress is not None:
            progress.advance(work)
    return logw


#: ``kernel="auto"`` per device type: the blocked kernel's all-tokens-at-once draws
#: suit a GPU, the lock-step collapsed sweep the CPU.
AUTO_KERNEL = {"cuda": "blocked"}


def resolve_kernel(kernel, device, blocked_valid=True):
    """The z-space kernel to run; ``"auto"`` never picks one that is invalid here.

    ``blocked_valid`` is False when some annealing path has two Polya terms (the
    geometric path between different alphas), where only the collapsed sweep
    leaves the intermediate distributions invariant.
    """
    if kernel != "auto":
        return kernel
    choice = AUTO_KERNEL.get(torch.device(device).type, "collapsed")
    return choice if blocked_valid else "collapsed"


def z_ais(mixture, X, *, n_temperatures, n_chains, schedule_name, kernel, device, root,
          resample=None, progress=None):
    """Standard AIS prior -> model over z; returns a :class:`~._tokens.PerDocument`."""
    phi, alpha = mixture
    n_topics = phi.shape[0]
    betas = temperature_schedule(schedule_name, n_temperatures)
    out = PerDocument(X.shape[0], n_chains)
    alpha_t = torch.as_tensor(np.asarray(alpha, dtype=np.float64), device=device)
    phi_t = topic_word_tensor(phi, device)
    for batch in token_batches(X, n_chains=n_chains, n_topics=n_topics, device=device,
                               root=root, stream=1):
        path = ZPath("geometric", batch, log_phi_rows(phi_t, batch), alpha_t)
        z, c = draw_prior(alpha_t, batch, (0,), n_topics)
        logw = anneal(path, betas, z, c, kernel, stage=1, resample=resample, progress=progress)
        out.add_weights(batch.docs, logw, n_chains)
        if progress is not None:
            progress.finish_documents(len(batch.docs))
    return out
