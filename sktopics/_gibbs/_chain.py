"""Where an LDAGibbs chain starts on a corpus, and what it keeps between calls.

An online fit (``partial_fit`` over shards) is one chain over every shard it has
seen: each shard keeps its tokens' topics, and a shard is swept given the
word-topic counts of all the others in their latest states (a *background*, see
:class:`~._state.GibbsState`). :class:`ChainMemory` holds those topics, compactly
on the host, and their total counts; a shard seen again continues from its own
topics, a new one starts from a draw given the fitted topics
(:func:`draw_given_topics`).

Maths only: imports numpy and torch, never scikit-learn.
"""

import numpy as np
import torch

from .._random import counter_uniform, stream_key
from ._hyper import document_statistics
from ._state import default_chunk
from ._sweeps import STREAMS

__all__ = ["ChainMemory", "draw_given_topics"]


def _compact_dtype(n_components):
    if n_components <= 1 << 8:
        return np.uint8
    if n_components <= 1 << 16:
        return np.uint16
    return np.int32


class ChainMemory:
    """The topics of every corpus a chain has swept, and their total counts.

    Parameters
    ----------
    word_topic : ndarray of int32, shape (n_features, n_components)
        Word-topic counts summed over every shard's latest state.

    Attributes
    ----------
    word_topic : ndarray of int32, shape (n_features, n_components)
    shards : dict
        A shard's :meth:`~._state.GibbsCorpus.fingerprint` to its tokens' topics
        (one byte a token up to 256 topics, two up to 65,536).
    documents : dict
        A shard's fingerprint to its documents' :func:`~._hyper.document_statistics`
        (what learning ``alpha`` from every shard needs).
    """

    def __init__(self, word_topic):
        self.word_topic = np.asarray(word_topic, dtype=np.int32)
        self.shards = {}
        self.documents = {}

    @classmethod
    def from_topics(cls, components, topic_tokens, beta):
        """Counts that give ``components`` back: fitted topics as the earlier data.

        ``topic_tokens`` are the tokens of each topic; the counts are
        ``components * (n_k + V beta) - beta``, rounded.
        """
        components = np.asarray(components, dtype=np.float64)
        V = components.shape[1]
        scale = np.asarray(topic_tokens, dtype=np.float64)[:, None] + V * beta
        counts = np.rint(components * scale - beta).clip(min=0)
        return cls(counts.T)

    def background(self, corpus, z, n_components, own=None):
        """The word-topic counts of every other shard: the total less those of
        ``corpus``'s topics ``z`` (``None``: a new corpus), as an int32 array.

        ``own``: the counts of ``z`` if already counted (:meth:`resume`), flat.
        Data-parallel, ``corpus`` is this rank's share and its counts are summed over
        the ranks.
        """
        if z is None:
            return self.word_topic
        if own is None:
            own = _word_topic_counts(corpus, z, n_components)
        if corpus.collective is not None:
            corpus.collective.sum_(own)
        own = own.view(corpus.n_features, n_components).cpu().numpy()
        return self.word_topic - own.astype(np.int32)

    def record(self, state):
        """Keep a state's topics and make its counts (with its background) the total."""
        z = state.z.cpu().numpy().astype(_compact_dtype(state.n_components))
        key = state.corpus.fingerprint()
        self.shards[key] = z
        self.documents[key] = document_statistics(state.n_dk)
        self.word_topic = state.n_wk.cpu().numpy().astype(np.int32)

    def other_documents(self, corpus):
        """The document statistics of every shard but ``corpus``."""
        key = corpus.fingerprint()
        return [stats for shard, stats in self.documents.items() if shard != key]

    def topics(self, corpus):
        """A corpus's saved topics as an int32 tensor on its device, or ``None``.

        ``None`` too for saved topics that cannot be this corpus's (another count of
        tokens, a topic outside ``0 .. K-1``, or more tokens of a word in a topic than
        ``word_topic`` counts): the compiled samplers index their tables with them, so
        a fingerprint that collides, or a memory edited in a file, starts the corpus
        afresh instead.
        """
        return self.resume(corpus)[0]

    def resume(self, corpus):
        """``(z, own)``: :meth:`topics`, and the flat word-topic counts of those topics
        in ``corpus`` that checking them counted (``None`` with ``z``), for
        :meth:`background` to reuse instead of counting them again."""
        saved = self.shards.get(corpus.fingerprint())
        if saved is None or saved.ndim != 1 or saved.shape[0] != corpus.n_tokens:
            return None, None
        K = self.word_topic.shape[1]
        z = torch.from_numpy(saved.astype(np.int32)).to(corpus.device)
        if z.numel() and (int(z.min()) < 0 or int(z.max()) >= K):
            return None, None
        own = _word_topic_counts(corpus, z, K)
        if own.numel() != self.word_topic.size:
            return None, None
        total = torch.from_numpy(self.word_topic.reshape(-1)).to(corpus.device)
        return (z, own) if bool((own <= total).all()) else (None, None)


def _word_topic_counts(corpus, z, n_components):
    """The flat ``(word, topic)`` counts of the topics ``z`` of ``corpus``'s tokens."""
    flat = corpus.word.to(torch.int64) * n_components + z.to(torch.int64)
    return torch.bincount(flat, minlength=corpus.n_features * n_components)


def draw_given_topics(corpus, components, alpha, seed):
    """Topics of the tokens of a new corpus given fitted topics.

    Two rounds with the topics held fixed: every token draws its topic from
    ``alpha_k phi_kw``, then again from ``(n_dk + alpha_k) phi_kw`` given the first
    round's topics of the other tokens of its document. Every draw is a
    counter-based uniform of the token's number in the whole corpus, so a
    data-parallel corpus starts where one process would.

    Parameters
    ----------
    corpus : GibbsCorpus
    components : ndarray of shape (n_components, n_features)
    alpha : array-like of shape (n_components,)
    seed : int

    Returns
    -------
    z : int32 tensor of shape (n_tokens,)
    """
    device = corpus.device
    word_topic = torch.as_tensor(np.asarray(components).T, dtype=torch.float32,
                                 device=device).contiguous()
    alpha = torch.as_tensor(np.asarray(alpha), dtype=torch.float32, device=device)
    K = word_topic.shape[1]
    z = torch.empty(corpus.n_tokens, dtype=torch.int32, device=device)
    n_dk = None
    chunk = default_chunk(K, device=device)
    for round_ in range(2):
        key = stream_key(seed, STREAMS["given_topics"], round_)
        new = torch.empty_like(z)
        for start in range(0, corpus.n_tokens, chunk):
            stop = min(start + chunk, corpus.n_tokens)
            word = corpus.word[start:stop].to(torch.int64)
            p = word_topic.index_select(0, word)
            if n_dk is None:
                p.mul_(alpha)
            else:
                doc = corpus.doc[start:stop].to(torch.int64)
                theta = n_dk.index_select(0, doc).to(torch.float32).add_(alpha)
                own = z[start:stop].to(torch.int64)[:, None]
                theta.scatter_add_(1, own, torch.full_like(own, -1, dtype=torch.float32))
                p.mul_(theta)
            cum = torch.cumsum(p, 1, out=p)
            target = counter_uniform(key, corpus.token_index(start, stop)) * cum[:, -1]
            new[start:stop] = (cum <= target[:, None]).sum(1).clamp_max_(K - 1)
        z = new
        n_dk = torch.zeros((corpus.n_docs, K), dtype=torch.int32, device=device)
        n_dk.view(-1).index_add_(0, corpus.doc.to(torch.int64) * K + z.to(torch.int64),
                                 torch.ones_like(z))
    return z
