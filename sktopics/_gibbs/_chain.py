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
from ._infer import CellCorpus, infer_doc_topic
from ._state import GibbsState, default_chunk
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
    word_topic : ndarray of int64, shape (n_features, n_components)
        Word-topic counts summed over every shard's latest state.

    Attributes
    ----------
    word_topic : ndarray of int64, shape (n_features, n_components)
    shards : dict
        A shard's :meth:`~._state.GibbsCorpus.fingerprint` to its tokens' topics
        (one byte a token up to 256 topics, two up to 65,536).
    """

    def __init__(self, word_topic):
        self.word_topic = np.asarray(word_topic, dtype=np.int64)
        self.shards = {}

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
        return cls(counts.T.astype(np.int64))

    def restore(self, corpus, n_components):
        """A corpus's saved topics (or ``None``) and the counts of every other shard.

        Returns
        -------
        z : int32 tensor of shape (n_tokens,) on the corpus's device, or None
        background : ndarray of int64, shape (n_features, n_components)
        """
        z = self.topics(corpus)
        if z is None:
            return None, self.word_topic
        own = GibbsState(corpus, n_components, z).n_wk.cpu().numpy()
        return z, self.word_topic - own

    def record(self, state):
        """Keep a state's topics and make its counts (with its background) the total."""
        z = state.z.cpu().numpy().astype(_compact_dtype(state.n_components))
        self.shards[state.corpus.fingerprint()] = z
        self.word_topic = state.n_wk.cpu().numpy().astype(np.int64)

    def topics(self, corpus):
        """A corpus's saved topics as an int32 tensor on its device, or ``None``."""
        saved = self.shards.get(corpus.fingerprint())
        return None if saved is None else torch.from_numpy(saved.astype(np.int32)).to(
            corpus.device)


def draw_given_topics(X, corpus, components, alpha, seed):
    """Topics of the tokens of a new corpus given fitted topics.

    Two iterations of blocked Gibbs on ``(theta, z)`` with the topics held fixed
    (:func:`~._infer.infer_doc_topic`) give each document's proportions; every token
    then draws its topic from ``theta_d * phi_w``.

    Parameters
    ----------
    X : sparse matrix of shape (n_docs, n_features)
        The counts behind ``corpus``.
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
    K = word_topic.shape[1]
    generator = torch.Generator(device=device)
    generator.manual_seed(int(seed))
    theta = infer_doc_topic(CellCorpus(X, device), word_topic,
                            torch.as_tensor(alpha, dtype=torch.float64), 2, 1, generator)
    theta = theta.to(torch.float32)
    z = torch.empty(corpus.n_tokens, dtype=torch.int32, device=device)
    step = default_chunk(K, device=device)
    key = stream_key(seed, STREAMS["given_topics"], 0)
    for start in range(0, corpus.n_tokens, step):
        stop = min(start + step, corpus.n_tokens)
        p = theta.index_select(0, corpus.doc[start:stop].to(torch.int64))
        p.mul_(word_topic.index_select(0, corpus.word[start:stop].to(torch.int64)))
        cum = torch.cumsum(p, 1, out=p)
        index = torch.arange(start, stop, device=device, dtype=torch.int64)
        target = (counter_uniform(key, index) * cum[:, -1])[:, None]
        k = torch.searchsorted(cum, target, right=True).squeeze_(1)
        z[start:stop] = k.clamp_max_(K - 1)
    return z
