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
  same cumulative row. Cells are split into sub-cells of a few widths and sorted
  by width, so the searches are one batched call per width.
* ``theta`` is drawn unnormalised (the sampler only needs it up to a factor per
  document), in float32 and in the log domain, and its Gamma draws come from
  tables shared by all documents of an iteration (:class:`SharedGammas`), which
  leaves a table lookup per (document, topic) instead of a Gamma draw.
* Plumbing: one vector of uniforms per iteration, work buffers and slices made
  once per call, and a floor on ``theta`` that keeps float32 out of its slow
  subnormal range (their effect is in ``docs/user_guide/gibbs.rst`` and
  ``benchmarks/results/gibbs_quality_inference.rst``).

The uniforms of the token draws come from ``generator``, one vector per
iteration indexed by the token's position in the width-sorted cell order, so the
result does not depend on the chunk size or the number of threads. (A vector of
``torch.rand`` costs about 3 ns per token on one CPU thread; the counter-based
hash of :mod:`._random`, which the training sweeps use to stay within a bounded
chunk, costs about 20 ns, which was a sixth of an inference iteration.)
"""

import numpy as np
import scipy.sparse as sp
import torch

from .._random import marsaglia_tsang

__all__ = ["CellCorpus", "log_gamma", "infer_doc_topic"]

#: Widths of the sub-cells a cell is split into (see :class:`CellCorpus`).
_WIDTHS = (1, 2, 3, 4, 8)
#: Elements of a (cells, K) float32 work buffer (2 MiB: stays in cache on CPU).
_CHUNK_ELEMENTS = 1 << 19
#: Counts below this read their Gamma draw from a table row (see SharedGammas).
_SHARED_COUNTS = 32
#: Iterations whose Gamma tables are drawn in one call (see SharedGammas).
_TABLE_ITERATIONS = 16


class CellCorpus:
    """Non-zero cells ``(doc, word, count)`` of a count matrix, split and sorted by width.

    A cell with ``count`` tokens is split into sub-cells whose widths are taken
    from :data:`_WIDTHS` (eights first, then the remainder: ``7 = 4 + 3``,
    ``21 = 8 + 8 + 4 + 1``), so every sub-cell is sampled by an exact block of
    equal width and no block needs padding. The price, repeating a cell's
    ``K``-wide work once per sub-cell, is small next to the fixed cost of a
    block on small corpora: BBC's test set had 10 blocks (widths 1-8, then
    padded powers of two), now 5.

    Attributes
    ----------
    doc, word : int32 tensors (n_cells,)
    blocks : list of (start, stop, width)
        Contiguous ranges of sub-cells with ``width`` tokens each; the tokens of
        a block are contiguous in the token order.
    doc_length : int64 tensor (n_docs,)
    """

    def __init__(self, X, device):
        X = sp.csr_matrix(X)
        X.sum_duplicates()
        n_docs, n_features = X.shape
        counts = np.rint(X.data).astype(np.int64)
        doc = np.repeat(np.arange(n_docs, dtype=np.int32), np.diff(X.indptr))
        word = X.indices.astype(np.int32)
        parts = _split_counts(counts)  # explicit zeros get no sub-cell
        blocks_doc, blocks_word, self.blocks = [], [], []
        start = 0
        for j, width in enumerate(_WIDTHS):
            n_sub = parts[:, j]
            d, w = np.repeat(doc, n_sub), np.repeat(word, n_sub)
            if d.size:
                order = np.lexsort((w, d))
                blocks_doc.append(d[order])
                blocks_word.append(w[order])
                self.blocks.append((start, start + d.size, int(width)))
                start += d.size

        self.device = torch.device(device)
        self.n_docs, self.n_features = int(n_docs), int(n_features)
        self.n_tokens = int(counts.sum())
        empty = [np.zeros(0, dtype=np.int32)]
        self.doc = torch.from_numpy(np.concatenate(blocks_doc or empty)).to(self.device)
        self.word = torch.from_numpy(np.concatenate(blocks_word or empty)).to(self.device)
        self.doc_length = torch.from_numpy(
            np.bincount(doc, weights=counts, minlength=n_docs).astype(np.int64)).to(self.device)


def _split_counts(counts):
    """Sub-cells of each width of :data:`_WIDTHS` per cell, shape ``(n_cells, 5)``.

    Eights first; a rest of 1-4 is one sub-cell, a rest of 5-7 a four and the
    remainder.
    """
    eights, rest = np.divmod(counts, 8)
    fours = rest > 4
    rest = rest - 4 * fours
    return np.stack([rest == 1, rest == 2, rest == 3, (rest == 4) + fours, eights], 1)


def log_gamma(shape, generator, n_retry=8):
    """Logarithms of independent ``Gamma(shape, 1)`` draws (float32).

    Marsaglia & Tsang (2000), vectorised: one proposal for every element, then
    ``n_retry`` proposals at once for each rejected one (a few per cent), keeping
    the first accepted, so that a call is almost always two rounds. Shapes below
    1 use ``Gamma(a) = Gamma(a + 1) * U**(1/a)``, added in the log domain so that
    tiny shapes do not underflow.

    Parameters
    ----------
    shape : float tensor, positive
    generator : torch.Generator
    n_retry : int
        Proposals per rejected element in every round after the first.

    Returns
    -------
    log_g : float32 tensor, same shape
    """
    dtype = torch.float32
    flat = shape.to(dtype).reshape(-1)
    small = flat < 1
    d = torch.add(flat, small).sub_(1.0 / 3.0)
    c = torch.mul(d, 9.0).rsqrt_()
    out, accept = _marsaglia_tsang(d, c, generator)
    pending = (~accept).nonzero().squeeze(1)
    while pending.numel():
        value, accept = _marsaglia_tsang(d[pending, None].expand(-1, n_retry),
                                         c[pending, None].expand(-1, n_retry), generator)
        done = accept.any(1)
        first = accept.to(torch.uint8).argmax(1)
        out[pending[done]] = value[done, first[done]]
        pending = pending[~done]
    u = torch.rand(flat.shape, generator=generator, dtype=dtype, device=flat.device)
    boost = torch.log(u.clamp_min_(torch.finfo(dtype).tiny)).div_(flat).mul_(small)
    return out.add_(boost).view_as(shape)


def _marsaglia_tsang(d, c, generator):
    """One Marsaglia-Tsang proposal per element: ``(log d v^3, accepted)``."""
    x = torch.randn(d.shape, generator=generator, dtype=d.dtype, device=d.device)
    u = torch.rand(d.shape, generator=generator, dtype=d.dtype, device=d.device)
    return marsaglia_tsang(d, c, x, u)


class SharedGammas:
    """The Gamma draws of ``theta | z``, shared by all documents of an iteration.

    ``theta_dk`` is ``G_dk / sum_k G_dk`` with independent ``G_dk ~ Gamma(alpha_k
    + n_dk)``. Instead of one draw per (document, topic), every iteration draws
    one table per topic: ``Gamma(alpha_k + r)`` for the counts ``r < n_small``,
    and ``Gamma(n_small * 2**b)`` for the bits ``b`` of larger counts. A count
    ``n = q * n_small + r`` reads ``Gamma(alpha_k + r)`` plus the
    ``Gamma(n_small * 2**b)`` of the bits of ``q``: a ``Gamma(alpha_k + n)`` draw,
    by additivity. Within a document every topic reads its own column, so each
    document's theta is an exact draw from its conditional and each document's
    chain is unchanged in law; only the Monte Carlo errors of different documents
    become correlated, which no per-document estimate sees.

    This replaces ``D * K`` Gamma draws per iteration by ``(n_small + n_bits) *
    K``, drawn for :data:`_TABLE_ITERATIONS` iterations in one call; what is left
    per (document, topic) is a table lookup.

    Parameters
    ----------
    alpha : float32 tensor (K,)
    max_count : int
        The largest count that will be looked up (the longest document).
    n_docs : int
        Caps the table: never more small-count rows than documents.
    generator : torch.Generator
    """

    def __init__(self, alpha, max_count, n_docs, generator):
        K, device = alpha.shape[0], alpha.device
        self.generator = generator
        self.n_small = max(1, min(_SHARED_COUNTS, n_docs, max_count + 1))
        n_bits = (max_count // self.n_small).bit_length()
        small = torch.arange(self.n_small, dtype=torch.float32, device=device)[:, None] + alpha
        large = self.n_small * 2.0 ** torch.arange(n_bits, dtype=torch.float32, device=device)
        self.shape = torch.cat([small, large[:, None].expand(-1, K)])
        self.bit = torch.arange(n_bits, dtype=torch.int32, device=device)
        self.topic = torch.arange(K, dtype=torch.int32, device=device)
        self.n_drawn = self.n_used = 0

    def _next_tables(self):
        """``(log Gamma(alpha + r) flat (n_small * K,), Gamma(n_small 2**b) (K, n_bits))``."""
        if self.n_used == self.n_drawn:
            log_g = log_gamma(self.shape.expand(_TABLE_ITERATIONS, -1, -1), self.generator)
            self.small = log_g[:, :self.n_small].reshape(_TABLE_ITERATIONS, -1)
            self.large = log_g[:, self.n_small:].exp().transpose(1, 2).contiguous()
            self.n_drawn, self.n_used = _TABLE_ITERATIONS, 0
        self.n_used += 1
        return self.small[self.n_used - 1], self.large[self.n_used - 1]

    def draw_theta(self, counts):
        """Unnormalised ``theta_d ~ Dirichlet(alpha + n_d)``, rows scaled to max 1.

        Entries below ``exp(-60)`` (1e-26) of the row's largest are raised to it:
        the 24-bit uniforms of the token draws cannot pick a topic whose share is
        below 2**-24 anyway, and it keeps ``theta * phi`` out of float32's
        subnormal range, where the multiplications and cumulative sums are
        several times slower (5 % of an iteration on 20 Newsgroups in an old/new
        A/B run on the 2-core CPU).

        Parameters
        ----------
        counts : int32 tensor (D, K)
        """
        small, large = self._next_tables()
        K = counts.shape[1]
        n_small = self.n_small
        flat = counts.view(-1)
        entry = torch.add(self.topic, torch.clamp_max(counts, n_small - 1), alpha=K)
        log_theta = small.index_select(0, entry.view(-1)).view_as(counts)
        own = (flat >= n_small).nonzero().squeeze(1)
        if own.numel():
            count = flat.index_select(0, own)
            topic = own.remainder(K)
            quotient = torch.div(count, n_small, rounding_mode="floor")
            bits = (quotient[:, None] >> self.bit).bitwise_and_(1).to(torch.float32)
            rest = small.index_select(0, torch.add(topic, count - quotient * n_small, alpha=K))
            g = (bits * large.index_select(0, topic)).sum(1).add_(rest.exp_())
            log_theta.view(-1).index_copy_(0, own, g.log_())
        return log_theta.sub_(log_theta.amax(1, keepdim=True)).clamp_min_(-60.0).exp_()


def _chunk_plan(cells, K, chunk):
    """Per chunk of cells: ``(doc, doc * K, word, first token, n cells, width)``.

    Sliced once per call rather than once per iteration: on small corpora the
    slicing was a visible part of an iteration.
    """
    plan, first_token = [], 0
    # Flat (doc, topic) indices in int32 where the count table allows it.
    index_dtype = torch.int32 if cells.n_docs * K < 2**31 else torch.int64
    for b_start, b_stop, width in cells.blocks:
        # Fewer cells per chunk for wide blocks: the (cells, width) draws stay bounded.
        step = max(1, min(chunk, chunk * K // width))
        for start in range(b_start, b_stop, step):
            stop = min(start + step, b_stop)
            doc = cells.doc[start:stop]
            plan.append((doc, doc.to(index_dtype)[:, None] * K, cells.word[start:stop],
                         first_token, stop - start, width))
            first_token += (stop - start) * width
    return plan


def _sample_cells(plan, theta, word_topic, uniform, n_dk, p_buf, cum_buf, ones):
    """Draw every token's topic given ``theta``; add the draws to ``n_dk``.

    ``uniform`` holds one number per token, in the order of the plan.
    ``p_buf`` and ``cum_buf`` are ``(chunk, K)`` float32 work buffers and ``ones``
    a ``chunk * K`` int32 vector of ones, all reused across iterations: allocated
    anew they would page-fault on every iteration, which cost about 40 % of BBC's
    time in an old/new A/B run on the 2-core CPU.
    """
    K = theta.shape[1]
    flat = n_dk.view(-1)
    for doc, doc_offset, word, first_token, n, width in plan:
        p, cum = p_buf[:n], cum_buf[:n]
        torch.index_select(theta, 0, doc, out=p)
        torch.index_select(word_topic, 0, word, out=cum)
        p.mul_(cum)
        torch.cumsum(p, 1, out=cum)
        target = uniform[first_token:first_token + n * width].view(n, width).mul_(cum[:, -1:])
        k = torch.searchsorted(cum, target, right=True,
                               out_int32=doc_offset.dtype == torch.int32).clamp_max_(K - 1)
        flat.index_add_(0, k.add_(doc_offset).view(-1), ones[:n * width])


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
        Size of the (cells, K) work buffers; does not change the result (cache-sized
        by default; a GPU wants more, see ``device_budget``).

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
    gammas = SharedGammas(alpha32, int(cells.doc_length.max()) if D else 0, D, generator)
    chunk = max(64, chunk_elements // K)
    p_buf = torch.empty((chunk, K), dtype=torch.float32, device=device)
    cum_buf = torch.empty((chunk, K), dtype=torch.float32, device=device)
    ones = torch.ones(chunk * K, dtype=torch.int32, device=device)
    plan = _chunk_plan(cells, K, chunk)
    for it in range(n_iter):
        n_dk.zero_()
        uniform = torch.rand(cells.n_tokens, generator=generator, device=device)
        _sample_cells(plan, theta, word_topic, uniform, n_dk, p_buf, cum_buf, ones)
        if it >= n_burn:
            acc += n_dk
            n_kept += 1
        if it + 1 < n_iter:
            theta = gammas.draw_theta(n_dk)
    if n_kept == 0:
        return (n_dk.to(torch.float64) + alpha) / denominator
    return (acc / n_kept + alpha) / denominator
