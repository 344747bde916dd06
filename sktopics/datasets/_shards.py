"""A corpus on disk as CSR shards, read one shard at a time (bounded memory)."""

import glob
import os

import numpy as np
import scipy.sparse as sp

__all__ = ["ShardedCorpus"]


class ShardedCorpus:
    """A document-term count matrix stored as ``.npz`` CSR shards, one in memory at a time.

    Iterating yields the shards in order; :meth:`partial_fit`, :meth:`transform`
    and :meth:`score` stream them through an estimator, so that a corpus larger
    than memory is trained on and evaluated with one shard's worth of memory.

    Parameters
    ----------
    paths : str or sequence of str
        The shards (``scipy.sparse.save_npz`` files), or a glob pattern; read in
        sorted order.

    Attributes
    ----------
    paths : list of str
    n_features : int
        The vocabulary size (every shard has it).

    Examples
    --------
    >>> import tempfile
    >>> from sktopics.datasets import ShardedCorpus, make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_samples=40, n_features=20, n_components=3, random_state=0)
    >>> corpus = ShardedCorpus.write((X[i:i + 10] for i in range(0, 40, 10)), tempfile.mkdtemp())
    >>> len(corpus), corpus.n_features
    (4, 20)
    """

    def __init__(self, paths):
        if isinstance(paths, (str, os.PathLike)):
            paths = glob.glob(str(paths)) if any(c in str(paths) for c in "*?[") else [paths]
        self.paths = sorted(str(p) for p in paths)
        if not self.paths:
            raise ValueError("ShardedCorpus needs at least one shard.")
        missing = [p for p in self.paths if not os.path.isfile(p)]
        if missing:
            raise FileNotFoundError(f"shards not found: {missing[:3]}")
        with np.load(self.paths[0]) as first:  # the shape only, not the matrix
            self.n_features = int(first["shape"][1])

    @classmethod
    def write(cls, chunks, folder, *, prefix="shard"):
        """Save an iterable of count matrices as shards in ``folder``; the corpus of them.

        Parameters
        ----------
        chunks : iterable of {array-like, sparse matrix}
            Count matrices with the same number of columns, e.g. ``HashingVectorizer``
            outputs of successive batches of texts; consumed one at a time.
        folder : str
            Created if needed.
        prefix : str, default="shard"
            File names are ``<prefix>-00000.npz``, ``<prefix>-00001.npz``, ...

        Returns
        -------
        corpus : ShardedCorpus
        """
        os.makedirs(folder, exist_ok=True)
        paths = []
        for i, chunk in enumerate(chunks):
            path = os.path.join(folder, f"{prefix}-{i:05d}.npz")
            sp.save_npz(path, sp.csr_matrix(chunk))
            paths.append(path)
        return cls(paths)

    def _load(self, path):
        return sp.load_npz(path).tocsr()

    def __len__(self):
        return len(self.paths)

    def __iter__(self):
        for path in self.paths:
            chunk = self._load(path)
            if chunk.shape[1] != self.n_features:
                raise ValueError(f"{path} has {chunk.shape[1]} columns; the first shard has "
                                 f"{self.n_features}.")
            yield chunk

    def partial_fit(self, estimator, *, n_passes=1):
        """Train ``estimator`` with ``partial_fit`` on every shard, ``n_passes`` times.

        Neural models run one epoch over each shard per call. LDAGibbs runs one sweep
        over each shard given the word-topic counts of every other shard, so that the
        passes make one chain over the whole corpus: a shard seen again continues
        from its own topics, a new one starts from topics drawn given the fitted
        ones. The model keeps each shard's topics (one byte per token up to 256
        topics, two up to 65,536).

        Parameters
        ----------
        estimator : sktopics estimator
        n_passes : int, default=1

        Returns
        -------
        estimator : the trained estimator
        """
        for _ in range(int(n_passes)):
            for chunk in self:
                estimator.partial_fit(chunk)
        return estimator

    def transform(self, estimator):
        """The document-topic proportions, shard by shard.

        Parameters
        ----------
        estimator : fitted sktopics estimator

        Yields
        ------
        doc_topic : ndarray of shape (n_documents_in_shard, n_components)
        """
        for chunk in self:
            yield estimator.transform(chunk)

    def score(self, estimator):
        """The held-out score per token of the whole corpus, from its shards.

        The token-weighted mean of ``estimator.score`` over the shards: the score of
        the concatenated corpus, up to float rounding (a document's random numbers
        are keyed by its counts, not by its row).

        Parameters
        ----------
        estimator : fitted sktopics estimator

        Returns
        -------
        score : float
        """
        totals, tokens = [], []
        for chunk in self:
            n = float(chunk.sum())
            if n > 0:
                totals.append(estimator.score(chunk) * n)
                tokens.append(n)
        if not tokens:
            raise ValueError("score needs at least one token: every shard is empty.")
        return float(np.sum(totals) / np.sum(tokens))
