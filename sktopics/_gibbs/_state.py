"""Token arrays and count tables of a collapsed-Gibbs LDA chain.

Tokens are expanded from the CSR counts into compact int32 arrays sorted by
word (then by document), so that reads of the word-topic table are
cache-friendly and the tokens of one word are contiguous (the MH word proposal
picks a random token of the same word by offset). A doc-major permutation gives
the same access for documents.

Count tables are integers: ``n_dk`` (D, K) and ``n_wk`` (V, K) in int32 (word-major,
so that one word's row is contiguous) and ``n_k`` (K,) in int64. Integer counts
are exact, so rebuilding them is bit-reproducible on every device.

Maths only: numpy, scipy and torch (and the count fingerprint), never scikit-learn.
"""

import functools

import numpy as np
import scipy.sparse as sp
import torch

from .._kernels import FAILED, compiled_path, run_compiled
from ..utils._fingerprint import count_fingerprint
from ._hyper import count_histogram, length_histogram

__all__ = ["GibbsCorpus", "GibbsState", "chunk_bounds", "default_chunk"]

#: Elements of a (chunk, K) float32 work buffer per CPU thread: 2**19 floats = 2 MiB,
#: which stays in a core's cache. (On GPU larger chunks amortise kernel launches.)
_CHUNK_ELEMENTS = 1 << 19


def default_chunk(n_components, chunk_elements=None, device="cpu"):
    """Tokens per chunk so that a (chunk, K) float32 buffer stays bounded.

    On the CPU the buffer grows with torch's intra-op threads, which split each
    operation, and doubles once there are several: a parallel region costs more to
    start than a share that spills from a core's cache (2 threads, K = 50, 20
    Newsgroups on a 2-core VM: 19-21 M tokens/s at 2**21 elements, 16-17 M at 2**20,
    15 M at 2**19; one thread is best at 2**19-2**20).
    """
    if chunk_elements is None:
        threads = torch.get_num_threads()
        if torch.device(device).type == "cuda":
            chunk_elements = _CHUNK_ELEMENTS * 64
        else:
            chunk_elements = _CHUNK_ELEMENTS * threads * (2 if threads > 1 else 1)
    budget = int(chunk_elements)
    return max(256, budget // max(1, int(n_components)))


def chunk_bounds(n, chunk):
    """``(start, stop)`` pairs covering ``range(n)`` in steps of ``chunk``."""
    return [(start, min(start + chunk, n)) for start in range(0, n, chunk)]


class GibbsCorpus:
    """Tokens of a count matrix as word-sorted int32 arrays on a device.

    Attributes
    ----------
    doc, word : torch.Tensor of int32, shape (n_tokens,)
        Document and word of every token, sorted by word then document.
    word_start : torch.Tensor of int64, shape (n_features + 1,)
        Tokens of word ``v`` are ``word_start[v]:word_start[v + 1]``.
    doc_perm : torch.Tensor of int64, shape (n_tokens,)
        Token indices in document-major order (stable), computed on first use.
    doc_start : torch.Tensor of int64, shape (n_docs + 1,)
        Offsets of each document's tokens in ``doc_perm``.
    doc_length : torch.Tensor of int64, shape (n_docs,)
    collective : Collective or None
        The process group when the corpus is this rank's share of a data-parallel
        one: tokens are then numbered as in the whole corpus (rank after rank, in
        word-major order), so that their random numbers are the whole corpus's.
    """

    def __init__(self, X, device, collective=None):
        source = X
        X = sp.csc_matrix(X)
        X.sum_duplicates()
        n_docs, n_features = X.shape
        counts = np.rint(X.data).astype(np.int64)
        # CSC order: word-major, then document (explicit zeros repeat nothing). No
        # per-cell temporaries beyond the counts and their running sum.
        doc = np.repeat(X.indices.astype(np.int32, copy=False), counts)
        running = np.concatenate([[0], np.cumsum(counts)])
        word_length = running[X.indptr[1:]] - running[X.indptr[:-1]]
        del running
        word = np.repeat(np.arange(n_features, dtype=np.int32), word_length)
        doc_length = np.bincount(doc, minlength=n_docs).astype(np.int64)
        self._fingerprint = count_fingerprint(source)

        self.device = torch.device(device)
        self.n_docs = int(n_docs)
        self.n_features = int(n_features)
        self.n_tokens = int(doc.shape[0])
        self.doc = torch.from_numpy(doc).to(self.device)
        self.word = torch.from_numpy(word).to(self.device)
        self.word_length = torch.from_numpy(word_length).to(self.device)
        self.word_start = torch.from_numpy(np.concatenate([[0], np.cumsum(word_length)])).to(
            self.device
        )
        self.doc_length = torch.from_numpy(doc_length).to(self.device)
        self.doc_start = torch.from_numpy(np.concatenate([[0], np.cumsum(doc_length)])).to(
            self.device
        )
        self.collective = collective
        self._index_shift = None
        if collective is not None and collective.world_size > 1:
            # In the whole corpus word v's tokens start at the sum of every rank's tokens
            # of the words before v, then those of v on the ranks before this one.
            lengths = np.stack(collective.gather(word_length))
            start = np.concatenate([[0], np.cumsum(lengths.sum(0))[:-1]])
            start += lengths[:collective.rank].sum(0)
            shift = start - np.concatenate([[0], np.cumsum(word_length)[:-1]])
            self._index_shift = torch.from_numpy(shift).to(self.device)

    def token_index(self, start, stop):
        """The numbers of tokens ``start:stop`` in the whole corpus (int64), which key
        their random numbers."""
        index = torch.arange(start, stop, device=self.device, dtype=torch.int64)
        if self._index_shift is not None:
            index += self._index_shift.index_select(0, self.word[start:stop].to(torch.int64))
        return index

    @functools.cached_property
    def doc_perm(self):
        """Token indices in document-major order (stable), computed on first use.

        Only the MH sampler needs it; sorting 100 M tokens takes seconds and 0.8 GB.
        """
        return torch.argsort(self.doc, stable=True)

    @functools.cached_property
    def length_counts(self):
        """``(length, weight)``: the distinct non-zero document lengths and how many
        documents have each (:func:`~._hyper.length_histogram`), counted once."""
        return length_histogram(self.doc_length)

    @functools.cached_property
    def doc_word(self):
        """The tokens' words in document-major order (:attr:`doc_perm`), computed on
        first use (the sparse sweep reads them a document at a time)."""
        return self.word.index_select(0, self.doc_perm)

    def fingerprint(self):
        """The identity of the counts, to recognise the same corpus again
        (:func:`~sktopics.utils._fingerprint.count_fingerprint`)."""
        return self._fingerprint



class GibbsState:
    """Topic assignments of a :class:`GibbsCorpus` plus the integer count tables.

    ``background`` holds word-topic counts of tokens outside this corpus (the other
    shards of an online fit): ``n_wk`` and ``n_k`` include them, so every sampler
    draws this corpus's tokens given the whole collection, while ``n_dk`` and ``z``
    are this corpus's own. When the corpus is one rank's share of a data-parallel
    corpus, ``n_wk`` and ``n_k`` are summed over the ranks after every recount.
    """

    def __init__(self, corpus, n_components, z, background=None):
        self.corpus = corpus
        self.n_components = int(n_components)
        self.z = z.to(device=corpus.device, dtype=torch.int32)
        K = self.n_components
        self.background = None
        if background is not None:
            self.background = torch.as_tensor(background).to(device=corpus.device,
                                                              dtype=torch.int32)
            if self.background.shape != (corpus.n_features, K):
                raise ValueError(f"background counts of shape {tuple(self.background.shape)}"
                                 f" for {corpus.n_features} words and {K} topics")
        self.n_dk = torch.zeros((corpus.n_docs, K), dtype=torch.int32, device=corpus.device)
        self.n_wk = torch.zeros((corpus.n_features, K), dtype=torch.int32, device=corpus.device)
        self.n_k = torch.zeros(K, dtype=torch.int64, device=corpus.device)
        # This corpus's own word-topic counts, kept apart when n_wk holds more.
        self._own_wk = self.n_wk
        if self.background is not None or corpus.collective is not None:
            self._own_wk = torch.zeros_like(self.n_wk)
        self.rebuild_counts()

    @functools.cached_property
    def background_words(self):
        """``((count, weight), n_k)``: the background's non-zero counts (as
        :attr:`~._hyper.StateHistograms.words`) and its topic totals, fixed for the
        state's life, so counted once for every log-joint evaluation."""
        return (count_histogram(self.background, pooled=True)[1:],
                self.background.sum(0, dtype=torch.int64))

    def rebuild_counts(self, chunk=1 << 20):
        """Recount ``n_dk``, ``n_wk`` and ``n_k`` from the assignments ``z`` (and the
        background)."""
        merged = self._own_wk is not self.n_wk
        if self._count_compiled(with_totals=not merged):
            if not merged:
                return
        else:
            self._count_torch(chunk)
        if merged:
            self.n_wk.copy_(self._own_wk)
            if self.corpus.collective is not None:
                self.corpus.collective.sum_(self.n_wk)
            if self.background is not None:
                self.n_wk += self.background
        self.n_k = self.n_wk.sum(0, dtype=torch.int64)

    def _count_compiled(self, with_totals):
        """Count ``n_dk``, this corpus's word-topic counts and, ``with_totals``, ``n_k``
        by the compiled CPU kernel on ``n_jobs`` threads (no torch operation: on the CPU
        those would leave torch's threads spinning beside the kernels'); False where it
        does not run."""
        if not compiled_path(self.corpus.device, "topic counts"):
            return False
        from .._kernels._gibbs import count_topics
        from .._kernels._pool import n_threads

        corpus = self.corpus
        n_k = run_compiled("topic counts", lambda: count_topics(
            corpus.doc.numpy(), corpus.word.numpy(), self.z.numpy(), corpus.word_start.numpy(),
            self.n_dk.numpy(), self._own_wk.numpy(), n_threads()))
        if n_k is FAILED:
            return False
        if with_totals:
            self.n_k = torch.from_numpy(n_k)
        return True

    def _count_torch(self, chunk):
        corpus, K = self.corpus, self.n_components
        self.n_dk.zero_()
        self._own_wk.zero_()
        flat_dk = self.n_dk.view(-1)
        flat_wk = self._own_wk.view(-1)
        # int32 flat indices where the tables allow it (half the index traffic).
        small = max(flat_dk.numel(), flat_wk.numel()) < 2**31
        itype = torch.int32 if small else torch.int64
        for start, stop in chunk_bounds(corpus.n_tokens, chunk):
            z = self.z[start:stop].to(itype)
            ones = torch.ones(stop - start, dtype=torch.int32, device=z.device)
            flat_dk.index_add_(0, torch.add(z, corpus.doc[start:stop].to(itype), alpha=K), ones)
            flat_wk.index_add_(0, torch.add(z, corpus.word[start:stop].to(itype), alpha=K), ones)

    @functools.cached_property
    def word_totals(self):
        """Tokens of each word in ``n_wk`` (int64 numpy array, fixed for a chain): the
        corpus's own, plus those of the background."""
        totals = self.corpus.word_length.cpu().numpy()
        if self._own_wk is not self.n_wk:
            totals = self.n_wk.sum(1, dtype=torch.int64).cpu().numpy()
        return totals

    def own_word_topic(self):
        """The word-topic counts of this corpus's own tokens (on this rank)."""
        return self._own_wk

    def topic_word(self, beta):
        """Smoothed ``phi = (n_kw + beta) / (n_k + V beta)`` as float64 (K, V)."""
        V = self.corpus.n_features
        n_kw = self.n_wk.to(torch.float64).T
        return (n_kw + beta) / (self.n_k.to(torch.float64)[:, None] + V * beta)

    def add_doc_topic(self, alpha, out, chunk=1 << 20):
        """Add the smoothed ``theta = (n_dk + alpha) / (n_d + sum(alpha))`` to ``out``.

        ``out`` is a host float64 ``(D, K)`` array (the estimator's ``doc_topic_``
        in the making). Rows are converted a block of about ``chunk`` entries at a
        time, so no ``(D, K)`` float64 temporary exists on the device.
        """
        alpha = torch.as_tensor(alpha, dtype=torch.float64, device=self.n_dk.device)
        rows = max(1, chunk // self.n_components)
        for start, stop in chunk_bounds(self.corpus.n_docs, rows):
            theta = self.n_dk[start:stop].to(torch.float64).add_(alpha)
            theta /= theta.sum(1, keepdim=True)
            out[start:stop] += theta.cpu().numpy()
