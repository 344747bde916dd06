"""Topic proportions of new documents with the topics held fixed (maths only).

Blocked Gibbs on ``(theta, z)`` given ``phi``: ``z_i | theta ~ theta_d * phi_w``
for every token at once, then ``theta_d | z ~ Dirichlet(alpha + n_d)``. Given
``phi`` documents are independent and tokens are conditionally independent given
``theta``, so this fully parallel sampler is exact (its stationary distribution is
the posterior ``p(theta, z | w, phi, alpha)``; ``tests/test_gibbs_infer.py``
checks it against enumeration).

What makes it cheap:

* Tokens are handled as **(document, word) cells** of the count matrix: the
  ``K``-wide work (gather ``theta_d`` and ``phi_w``, multiply, cumulative sum) is
  done once per cell, and the cell's ``c`` tokens are then ``c`` searches in the
  same cumulative row. Cells are sorted by count, so cells of equal count form
  contiguous blocks and the searches are one batched call per block.
* ``theta`` is drawn unnormalised (the sampler only needs it up to a factor per
  document), from a vectorised Marsaglia-Tsang Gamma sampler in float32 and in the
  log domain, instead of ``torch._standard_gamma`` in float64.
* Plumbing: one vector of uniforms per iteration, work buffers reused across
  iterations, and a floor on ``theta`` that keeps float32 out of its slow
  subnormal range (their combined effect is in ``docs/user_guide/gibbs.rst`` and
  ``benchmarks/results/gibbs_infer.md``).

The uniforms of the token draws come from ``generator``, one vector per
iteration indexed by the token's position in the count-sorted cell order, so the
result does not depend on the chunk size or the number of threads. (A vector of
``torch.rand`` costs about 3 ns per token on one CPU thread; the counter-based
hash of :mod:`._random`, which the training sweeps use to stay within a bounded
chunk, costs about 20 ns, which was a sixth of an inference iteration.)
"""

import numpy as np
import scipy.sparse as sp
import torch

__all__ = ["CellCorpus", "log_gamma", "infer_doc_topic"]

#: Cells whose count is at most this are grouped by exact count; larger counts
#: are padded to the next power of two and the padding is masked out.
_EXACT_COUNT_MAX = 8
#: Elements of a (cells, K) float32 work buffer (2 MiB: stays in cache on CPU).
_CHUNK_ELEMENTS = 1 << 19
#: Rows of the Dirichlet draw per call: fixed, so that the random stream (and the
#: result) does not depend on the device's chunking.
_GAMMA_ELEMENTS = 1 << 20


class CellCorpus:
    """Non-zero cells ``(doc, word, count)`` of a count matrix, sorted by count.

    Attributes
    ----------
    doc, word : int32 tensors (n_cells,)
    count : int64 tensor (n_cells,)
    token_offset : int64 tensor (n_cells,)
        Index of each cell's first token in the count-sorted token order.
    blocks : list of (start, stop, width, exact)
        Contiguous cell ranges processed together: ``width`` draws per cell,
        all of them real when ``exact``, else the first ``count`` of them.
    max_width : int
        The widest block's width (0 without cells).
    doc_length : int64 tensor (n_docs,)
    """

    def __init__(self, X, device):
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        n_docs, n_features = X.shape
        counts = np.rint(X.data).astype(np.int64)
        doc = np.repeat(np.arange(n_docs, dtype=np.int32), np.diff(X.indptr))
        keep = counts > 0
        doc, word, counts = doc[keep], X.indices.astype(np.int32)[keep], counts[keep]
        # Padded width of every cell; sorting by it keeps equal widths contiguous.
        width = np.where(counts <= _EXACT_COUNT_MAX, counts,
                         1 << np.ceil(np.log2(np.maximum(counts, 1))).astype(np.int64))
        order = np.lexsort((word, doc, counts, width))
        doc, word, counts, width = doc[order], word[order], counts[order], width[order]

        self.device = torch.device(device)
        self.n_docs, self.n_features = int(n_docs), int(n_features)
        self.n_tokens = int(counts.sum())
        self.doc = torch.from_numpy(doc).to(self.device)
        self.word = torch.from_numpy(word).to(self.device)
        self.count = torch.from_numpy(counts).to(self.device)
        self.token_offset = torch.from_numpy(np.cumsum(counts) - counts).to(self.device)
        self.doc_length = torch.from_numpy(
            np.bincount(doc, weights=counts, minlength=n_docs).astype(np.int64)).to(self.device)
        self.blocks = []
        self.max_width = int(width.max()) if width.size else 0
        bounds = np.flatnonzero(np.diff(width)) + 1
        for start, stop in zip(np.r_[0, bounds], np.r_[bounds, width.size], strict=True):
            if stop > start:
                w = int(width[start])
                self.blocks.append((int(start), int(stop), w, w <= _EXACT_COUNT_MAX))


def log_gamma(shape, generator):
    """Logarithms of independent ``Gamma(shape, 1)`` draws (float32).

    Marsaglia & Tsang (2000), vectorised: one batch of proposals for every
    element, then new proposals for the rejected ones only (a few per cent).
    Shapes below 1 use ``Gamma(a) = Gamma(a + 1) * U**(1/a)``, added in the log
    domain so that tiny shapes do not underflow.

    Parameters
    ----------
    shape : float tensor, positive
    generator : torch.Generator

    Returns
    -------
    log_g : float32 tensor, same shape
    """
    dtype = torch.float32
    shape = shape.to(dtype).reshape(-1)
    small = shape < 1
    d = torch.add(shape, small).sub_(1.0 / 3.0)
    c = torch.mul(d, 9.0).rsqrt_()
    out = pending = None
    tiny = torch.finfo(dtype).tiny
    while True:
        d_p, c_p = (d, c) if pending is None else (d[pending], c[pending])
        x = torch.randn(d_p.shape, generator=generator, dtype=dtype, device=d.device)
        u = torch.rand(d_p.shape, generator=generator, dtype=dtype, device=d.device)
        v = torch.mul(c_p, x).add_(1.0)
        log_v = torch.log(v)  # NaN where v <= 0: rejected by the comparison below
        # Accept when log u < x^2 / 2 + d (1 - v^3 + log v^3); in-place to save passes.
        bound = torch.mul(v, v).mul_(v).neg_().add_(1.0).add_(log_v, alpha=3.0)
        bound.mul_(d_p).addcmul_(x, x, value=0.5)
        accept = torch.log(u.clamp_min_(tiny)) < bound
        value = torch.log(d_p).add_(log_v, alpha=3.0)
        if pending is None:
            out = value  # rejected entries are overwritten below
            pending = (~accept).nonzero().squeeze(1)
        else:
            out[pending[accept]] = value[accept]
            pending = pending[~accept]
        if pending.numel() == 0:
            break
    u = torch.rand(shape.shape, generator=generator, dtype=dtype, device=d.device)
    boost = torch.log(u.clamp_min_(tiny)).div_(shape).mul_(small)
    return out.add_(boost).view_as(shape)


def _draw_theta(counts, alpha, generator):
    """Unnormalised ``theta_d ~ Dirichlet(alpha + n_d)``, rows scaled to max 1.

    Entries below ``exp(-60)`` (1e-26) of the row's largest are raised to it: the
    24-bit uniforms of the token draws cannot pick a topic whose share is below
    2**-24 anyway, and it keeps ``theta * phi`` out of float32's subnormal range,
    where the multiplications and cumulative sums are several times slower (5 % of
    an iteration on 20 Newsgroups in an old/new A/B run on the 2-core CPU; the
    end-to-end figures are in ``benchmarks/results/gibbs_infer.md``).
    """
    D, K = counts.shape
    theta = torch.empty((D, K), dtype=torch.float32, device=counts.device)
    rows = max(1, _GAMMA_ELEMENTS // K)
    for start in range(0, D, rows):
        log_g = log_gamma(counts[start:start + rows] + alpha, generator).view(-1, K)
        theta[start:start + rows] = log_g.sub_(log_g.amax(1, keepdim=True)).clamp_min_(-60.0).exp_()
    return theta


def _sample_cells(cells, theta, word_topic, uniform, n_dk, p_buf, cum_buf, ones):
    """Draw every token's topic given ``theta``; add the draws to ``n_dk`` (flat).

    ``uniform`` holds one number per token (plus the widest block's padding),
    indexed like ``cells.token_offset``. ``p_buf`` and ``cum_buf`` are
    ``(chunk, K)`` float32 work buffers and ``ones`` a ``chunk * K`` int32 vector
    of ones, all reused across iterations: allocated anew they would page-fault on
    every iteration, which cost about 40 % of BBC's time in an old/new A/B run on
    the 2-core CPU.
    """
    K = theta.shape[1]
    device = theta.device
    chunk = p_buf.shape[0]
    chunk_elements = chunk * K
    flat = n_dk.view(-1)
    for b_start, b_stop, width, exact in cells.blocks:
        if exact:
            first_token = int(cells.token_offset[b_start])
        else:
            slot = torch.arange(width, device=device, dtype=torch.int64)
        # Fewer cells per chunk for wide blocks: the (cells, width) draws stay bounded.
        step = max(1, min(chunk, chunk_elements // max(width, 1)))
        for start in range(b_start, b_stop, step):
            stop = min(start + step, b_stop)
            n = stop - start
            doc = cells.doc[start:stop]
            p, cum = p_buf[:n], cum_buf[:n]
            torch.index_select(theta, 0, doc, out=p)
            torch.index_select(word_topic, 0, cells.word[start:stop], out=cum)
            p.mul_(cum)
            torch.cumsum(p, 1, out=cum)
            if exact:  # the block's tokens are contiguous
                first = first_token + (start - b_start) * width
                u = uniform[first:first + n * width].view(n, width)
            else:
                token = cells.token_offset[start:stop, None] + slot
                u = uniform.index_select(0, token.view(-1)).view(n, width)
            target = u * cum[:, -1:]
            k = torch.searchsorted(cum, target, right=True, out_int32=True).clamp_max_(K - 1)
            index = torch.add(k, doc[:, None], alpha=K).view(-1)
            if exact:  # n * width <= chunk_elements
                weight = ones[:index.numel()]
            else:
                weight = (slot < cells.count[start:stop, None]).to(torch.int32).view(-1)
            flat.index_add_(0, index, weight)


def infer_doc_topic(cells, word_topic, alpha, n_iter, n_burn, generator,
                    chunk_elements=_CHUNK_ELEMENTS):
    """Posterior mean of theta for new documents with the topics held fixed.

    The estimate is the Rao-Blackwellised average of
    ``(n_dk + alpha) / (n_d + sum(alpha))`` over the iterations after
    ``n_burn``. Documents without tokens get the prior mean.

    Parameters
    ----------
    cells : CellCorpus
    word_topic : float32 tensor (V, K)
        ``phi`` transposed.
    alpha : float64 tensor (K,)
    n_iter, n_burn : int
    generator : torch.Generator
        Drives all the draws.
    chunk_elements : int
        Size of the (cells, K) work buffers; does not change the result.

    Returns
    -------
    doc_topic : float64 tensor (D, K)
    """
    device = cells.device
    D, K = cells.n_docs, word_topic.shape[1]
    alpha = alpha.to(device=device, dtype=torch.float64)
    alpha32 = alpha.to(torch.float32)
    theta = (alpha / alpha.max()).to(torch.float32).expand(D, K).contiguous()
    denominator = cells.doc_length.to(torch.float64)[:, None] + alpha.sum()
    acc = torch.zeros((D, K), dtype=torch.float64, device=device)
    n_dk = torch.zeros((D, K), dtype=torch.int32, device=device)
    n_kept = 0
    n_uniform = cells.n_tokens + cells.max_width
    chunk = max(64, chunk_elements // K)
    p_buf = torch.empty((chunk, K), dtype=torch.float32, device=device)
    cum_buf = torch.empty((chunk, K), dtype=torch.float32, device=device)
    ones = torch.ones(chunk * K, dtype=torch.int32, device=device)
    for it in range(n_iter):
        n_dk.zero_()
        uniform = torch.rand(n_uniform, generator=generator, device=device)
        _sample_cells(cells, theta, word_topic, uniform, n_dk, p_buf, cum_buf, ones)
        if it >= n_burn:
            acc += n_dk
            n_kept += 1
        if it + 1 < n_iter:
            theta = _draw_theta(n_dk.to(torch.float32), alpha32, generator)
    if n_kept == 0:
        return (n_dk.to(torch.float64) + alpha) / denominator
    return (acc / n_kept + alpha) / denominator
