"""Mini-batches of a CSR corpus, densified one batch at a time."""

import numpy as np
import torch

from ..utils._torch import csr_to_dense_tensor

__all__ = ["CSRDataset", "CSRBatchIterator"]


class CSRDataset(torch.utils.data.Dataset):
    """A CSR document-term matrix seen as a torch dataset (no densification)."""

    def __init__(self, X):
        self.X = X

    def __len__(self):
        return self.X.shape[0]

    def __getitem__(self, index):
        return csr_to_dense_tensor(self.X, [index])[0], None


class CSRBatchIterator:
    """skorch iterator yielding ``(dense_batch, None)`` from a :class:`CSRDataset`.

    One fancy-index and one ``toarray`` per batch, no worker processes. The sampling
    order comes from a private numpy generator seeded with ``seed``, advancing from
    epoch to epoch, so the global RNGs are never touched.

    Parameters
    ----------
    dataset : CSRDataset
    batch_size : int
    sampling : {"with_replacement", "shuffle", "sequential"}
        ``"with_replacement"`` draws ``n // batch_size`` batches of ``batch_size``
        documents with replacement per epoch (the original AVITM code);
        ``"shuffle"`` visits a fresh permutation per epoch, dropping a trailing
        batch that is smaller than ``batch_size`` when ``n > batch_size`` (batch
        norm needs more than one document); ``"sequential"`` visits every document
        in order (evaluation).
    seed : int
    device : torch.device
    """

    def __init__(self, dataset, batch_size, sampling="shuffle", seed=0, device="cpu"):
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.sampling = sampling
        self.device = device
        self._rng = np.random.default_rng(seed)

    def _index_batches(self):
        n, size = len(self.dataset), self.batch_size
        if self.sampling == "with_replacement":
            for _ in range(max(n // size, 1)):
                yield np.sort(self._rng.integers(0, n, size=min(size, n)))
        elif self.sampling == "shuffle":
            order = self._rng.permutation(n)
            stop = n - n % size if n > size else n
            for start in range(0, stop, size):
                yield np.sort(order[start:start + size])
        else:
            for start in range(0, n, size):
                yield np.arange(start, min(start + size, n))

    def __iter__(self):
        for rows in self._index_batches():
            yield csr_to_dense_tensor(self.dataset.X, rows, device=self.device), None

    def __len__(self):
        n, size = len(self.dataset), self.batch_size
        if self.sampling == "with_replacement":
            return max(n // size, 1)
        if self.sampling == "shuffle" and n > size:
            return n // size
        return -(-n // size)
