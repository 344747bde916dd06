"""Dirichlet hyper-parameter optimisation from Gibbs counts.

Given the document-topic counts ``n_dk`` of a Gibbs state, the Dirichlet-multinomial
evidence ``prod_d p(n_d | alpha)`` is maximised in ``alpha``, as Mallet's
``--optimize-interval`` and tomotopy's ``optim_interval`` do (Wallach, Mimno &
McCallum 2009, "Rethinking LDA: why priors matter") with Minka's (2000) fixed-point
iteration

    alpha_k <- alpha_k * sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
                       / sum_d [psi(n_d + alpha_0) - psi(alpha_0)].

Here Newton's method reaches the same maximum in a few steps (the evidence's Hessian
is diagonal plus a constant, so a step costs O(K)), and the fixed point takes any
step Newton's would not take safely. Entries with ``n_dk = 0`` contribute nothing.
The symmetric topic-word ``beta`` is learned the same way, with ``V beta`` in the
denominator.

The counts enter only through how often each value occurs, so the iteration runs on
histograms (Wallach's thesis; Mallet): how many documents hold ``c`` tokens of topic
``k`` (:func:`count_histogram`), how many documents have ``n`` tokens
(:func:`length_histogram`). A histogram is counted once per update on the counts'
device, in integers (exact, in any order, on a GPU too), and copied to the host once;
the iterations then run on the host in float64 (numpy and scipy), without touching
the device: their work grows with the distinct counts of each topic, not with the
documents.

Maths only: imports numpy, scipy and torch, never scikit-learn.
"""

import functools

import numpy as np
import torch
from scipy.special import digamma, polygamma

__all__ = ["StateHistograms", "count_histogram", "document_statistics", "length_histogram",
           "optimize_alpha", "optimize_beta"]

_MIN_CONCENTRATION = 1e-6
#: Where the evidence grows without bound (every document's or topic's counts more
#: even than a multinomial's, as in a tiny corpus), its maximiser is infinite and
#: Newton's steps double a value each iteration until it overflows; a Dirichlet this
#: concentrated is its mean for any count a corpus holds, so values stop here.
_MAX_CONCENTRATION = 1e6

#: Cells of a count table read at once when a histogram is counted (bounded memory).
_CHUNK_CELLS = 1 << 22

#: Values counted in a dense (value, column) table; larger ones (long documents,
#: frequent words) are gathered one by one, so the table stays small at any K.
_DENSE_VALUES = 1 << 10


def count_histogram(counts, pooled=False):
    """How many rows of ``counts`` hold each non-zero value in each column.

    Parameters
    ----------
    counts : int tensor (n_rows, K)
        ``n_dk`` (rows: documents) or ``n_wk`` (rows: words), on any device.
    pooled : bool, default=False
        Count the values over every column together (``column`` is then all 0).

    Returns
    -------
    column, value, weight : int64 ndarrays
        The distinct non-zero ``(column, value)`` pairs, in the order of their
        value, then column, and how many rows hold each. Integers counted exactly,
        so the same on every device.
    """
    n_rows, K = counts.shape
    width = 1 if pooled else K
    device = counts.device
    # Values 1..top in their own bins, larger ones in one overflow bin: a dense table
    # no larger than the counts (a few long documents hold large values in few cells).
    top = min(int(counts.max()) if counts.numel() else 0, _DENSE_VALUES,
              max(1, counts.numel() // width))
    bins = (top + 2) * width
    dense = torch.zeros(bins, dtype=torch.int64, device=device)
    columns = (torch.zeros(1, dtype=torch.int64, device=device) if pooled
               else torch.arange(K, device=device))
    step = max(1, _CHUNK_CELLS // K)
    for start in range(0, n_rows, step):
        chunk = counts[start:start + step].clamp(max=top + 1)
        keys = chunk.reshape(-1) if pooled else (chunk.to(torch.int64) * width
                                                  + columns).reshape(-1)
        dense += torch.bincount(keys, minlength=bins)
    dense = dense.view(top + 2, width).cpu().numpy()
    value, column = np.nonzero(dense[1:-1])  # 0 adds nothing
    weight, value = dense[1:-1][value, column], value + 1
    if dense[-1].any():  # values beyond the dense table: gathered one by one
        large = [_large_keys(counts[start:start + step], width, columns, top)
                 for start in range(0, n_rows, step)]
        keys, extra = np.unique(np.concatenate(large), return_counts=True)
        column = np.concatenate([column, keys % width])
        value = np.concatenate([value, keys // width])
        weight = np.concatenate([weight, extra])
    return column.astype(np.int64), value.astype(np.int64), weight.astype(np.int64)


def _large_keys(chunk, width, columns, top):
    """``value * width + column`` of the entries of ``chunk`` above ``top``."""
    chunk = chunk.to(torch.int64)
    key = chunk * width + columns
    return key[chunk > top].cpu().numpy()


class StateHistograms:
    """The count histograms of a Gibbs state, each counted when first asked for, so
    that a prior update and a log-joint evaluation at one sweep share them."""

    def __init__(self, state):
        self.state = state

    @functools.cached_property
    def documents(self):
        """:func:`count_histogram` of ``n_dk``: ``(topic, count, weight)``."""
        return count_histogram(self.state.n_dk)

    @functools.cached_property
    def words(self):
        """``(count, weight)`` of the non-zero ``n_wk`` (every topic together)."""
        return count_histogram(self.state.n_wk, pooled=True)[1:]


def length_histogram(lengths):
    """``(length, weight)`` int64 arrays: the distinct non-zero lengths and how many
    documents have each."""
    lengths = np.asarray(lengths.cpu() if torch.is_tensor(lengths) else lengths,
                         dtype=np.int64)
    length, weight = np.unique(lengths[lengths > 0], return_counts=True)
    return length, weight.astype(np.int64)


def document_statistics(n_dk):
    """What :func:`optimize_alpha` needs of a corpus's documents, compactly:
    ``(topic, count, weight, length, length_weight)``, the
    :func:`count_histogram` of ``n_dk`` and the :func:`length_histogram` of its rows'
    totals (kept for the other shards of an online fit)."""
    return (*count_histogram(n_dk), *length_histogram(n_dk.sum(1, dtype=torch.int64)))


class _PsiSums:
    """``f(a)[c] = sum_j w_j [psi(v_j + a_c) - psi(a_c)]`` over the entries ``j`` of
    column ``c``, for any ``a``, and its derivative (the same with ``psi'``): the sums
    of the evidence's gradient and curvature.

    ``psi(v + a) - psi(a) = sum_{i < v} 1 / (a + i)`` and ``psi'(v + a) - psi'(a) =
    -sum_{i < v} 1 / (a + i)**2``, so for the values up to a dense table's size the
    sums run over reciprocals weighted by how many entries exceed ``i`` (their
    survival counts, tabulated once); larger values (a long document, a frequent
    word) take polygammas each.
    """

    def __init__(self, column, value, weight, width):
        column, value = np.asarray(column, np.int64), np.asarray(value, np.int64)
        weight = np.asarray(weight, np.float64)
        # A survival table costs its cells an iteration, a polygamma about twenty of
        # them: tabulate only values whose table is no larger than 16 per entry.
        cap = min(_DENSE_TABLE // width, 16 * value.size // width)
        small = value <= max(1, cap)
        top = int(value[small].max()) if small.any() else 0
        table = np.bincount(value[small] * width + column[small], weights=weight[small],
                            minlength=(top + 1) * width).reshape(top + 1, width)
        self.survival = np.cumsum(table[::-1], axis=0)[::-1][1:]  # entries with value > i
        self.offsets = np.arange(top, dtype=np.float64)[:, None]
        self.large = column[~small], value[~small], weight[~small]
        self.width = width

    def __call__(self, a):
        """``(f(a), f'(a))``."""
        reciprocal = 1.0 / (a + self.offsets)
        weighted = self.survival * reciprocal
        value, slope = weighted.sum(axis=0), -(weighted * reciprocal).sum(axis=0)
        column, count, weight = self.large
        if column.size:
            at = a[column]
            value += np.bincount(column, weights=weight * (digamma(count + at) - digamma(at)),
                                 minlength=self.width)
            slope += np.bincount(column, weights=weight * (polygamma(1, count + at)
                                                           - polygamma(1, at)),
                                 minlength=self.width)
        return value, slope


#: Cells of a :class:`_PsiSums` survival table (its values up to this over its width).
_DENSE_TABLE = 1 << 16


def optimize_alpha(statistics, alpha, n_iter=50, tol=1e-6, collective=None):
    """Asymmetric ``alpha`` maximising the evidence of the documents' counts.

    Newton's method on the evidence (its Hessian is diagonal plus a constant, so a
    step costs O(K); Minka 2000, section 3), from ``alpha``; where Newton's step is
    not safe (the Hessian is not negative definite, far from the maximum, or the step
    would move a value by more than a factor of :data:`_NEWTON_RANGE`), Minka's fixed
    point takes that step instead. Both converge to the same maximum; Newton in a few
    iterations from the previous update's values. A topic no document uses has no
    maximum: its value goes to the floor, as the fixed point sends it; one whose
    evidence grows without bound stops at :data:`_MAX_CONCENTRATION`.

    Parameters
    ----------
    statistics : list of tuple
        :func:`document_statistics`-like tuples ``(topic, count, weight, length,
        length_weight)`` of every set of documents to learn from (this call's
        documents, the other shards of an online fit).
    alpha : array-like (K,)
        Starting point.
    n_iter : int
    tol : float
        Stop when the largest relative change is below ``tol``.
    collective : Collective or None
        When the statistics are one rank's documents of a data-parallel corpus: the
        sums over documents are summed over the ranks too (one small exchange per
        iteration), so every rank learns the whole corpus's ``alpha``.

    Returns
    -------
    alpha : float64 ndarray (K,)
    """
    alpha = np.array(alpha, dtype=np.float64)
    K = alpha.shape[0]
    topic, count, weight, length, length_weight = (
        np.concatenate([s[i] for s in statistics]) for i in range(5))
    if collective is None and length.size == 0:
        return alpha
    numerators = _PsiSums(topic, count, weight, K)
    denominator = _PsiSums(np.zeros_like(length), length, length_weight, 1)
    for _ in range(n_iter):
        numer, curvature = numerators(alpha)
        denom, denom_slope = denominator(alpha.sum(keepdims=True))
        if collective is not None:
            sums = collective.sum_(torch.from_numpy(
                np.concatenate([numer, curvature, denom, denom_slope]))).numpy()
            numer, curvature, denom, denom_slope = np.split(sums, [K, 2 * K, 2 * K + 1])
        if denom[0] == 0:  # no document with tokens (on any rank, in any shard)
            return alpha
        new = _newton_alpha(alpha, numer - denom[0], curvature, -denom_slope[0])
        if new is None:
            new = alpha * numer / denom[0]  # unused topics: 0, the floor below
        new = np.clip(new, _MIN_CONCENTRATION, _MAX_CONCENTRATION)
        change = np.max(np.abs(new - alpha) / alpha)
        alpha = new
        if change < tol:
            break
    return alpha


def _newton_alpha(alpha, gradient, curvature, shared):
    """A Newton step on the evidence whose Hessian is ``diag(curvature) + shared``
    (every entry), by Sherman-Morrison, over the topics some document uses (the
    others, whose curvature is 0, go to the floor) and that are not held at the
    ceiling (a value there whose gradient still rises stays; the Hessian restricted to
    the rest keeps its form); ``None`` where the Hessian is not negative definite (far
    from the maximum) or the step would move a value by more than a factor of
    :data:`_NEWTON_RANGE` (then the fixed point's step is taken)."""
    held = (alpha >= _MAX_CONCENTRATION) & (gradient > 0)
    used = (curvature != 0) & ~held
    if shared <= 0 or not used.any() or np.any(curvature[used] > 0):
        return None
    a, g, q = alpha[used], gradient[used], curvature[used]
    inverse = np.sum(1.0 / q)
    if 1.0 + shared * inverse <= 0:
        return None
    b = np.sum(g / q) / (1.0 / shared + inverse)
    ratio = 1.0 - (g - b) / (q * a)
    if not np.all((ratio > 1 / _NEWTON_RANGE) & (ratio < _NEWTON_RANGE)):  # NaN: outside
        return None
    new = np.full_like(alpha, _MIN_CONCENTRATION)
    new[used] = a * ratio
    new[held] = alpha[held]
    return new


#: The largest factor by which a Newton step may move a prior's value.
_NEWTON_RANGE = 2.0


def optimize_beta(word_counts, n_k, n_features, beta, n_iter=50, tol=1e-6):
    """Symmetric ``beta`` maximising the evidence of the topic-word counts.

    Newton's method, with Minka's fixed point taking any step Newton's would not take
    safely (the curvature not negative, or a move by more than a factor of
    :data:`_NEWTON_RANGE`), and within the same floor and ceiling, as
    :func:`optimize_alpha`.

    Parameters
    ----------
    word_counts : tuple of int64 ndarrays
        ``(count, weight)``: the non-zero word-topic counts and how many cells hold
        each (:attr:`StateHistograms.words`).
    n_k : int tensor (K,)
    n_features : int
        The vocabulary's size ``V``.
    beta : float
    n_iter : int
    tol : float

    Returns
    -------
    beta : float
    """
    V = n_features
    count, weight = word_counts
    n_k = n_k.cpu().numpy().astype(np.int64)
    n_k = n_k[n_k > 0]
    if n_k.size == 0:
        return float(beta)
    numerator = _PsiSums(np.zeros_like(count), count, weight, 1)
    denominator = _PsiSums(np.zeros_like(n_k), n_k, np.ones(n_k.size), 1)
    beta = np.array([float(beta)])
    for _ in range(n_iter):
        numer, numer_slope = numerator(beta)
        denom, denom_slope = denominator(V * beta)
        slope = numer_slope - V * V * denom_slope
        ratio = 1.0 - (numer[0] - V * denom[0]) / (slope[0] * beta[0]) if slope[0] < 0 else np.nan
        if 1 / _NEWTON_RANGE < ratio < _NEWTON_RANGE:
            new = beta * ratio
        else:  # far from the maximum: Minka's fixed point
            new = beta * numer / (V * denom)
        new = np.clip(new, _MIN_CONCENTRATION, _MAX_CONCENTRATION)
        change = abs(new[0] - beta[0]) / beta[0]
        beta = new
        if change < tol:
            break
    return float(beta[0])
