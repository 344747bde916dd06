"""Mini-batches of a CSR corpus, densified one batch at a time on the training device."""

import numpy as np
import torch

from ..utils._torch import csr_to_dense_tensor, device_budget

__all__ = ["CSRDataset", "CSRBatchIterator", "DeviceCSR"]

#: float32 elements of device memory the non-zeros of a corpus may take (free memory
#: permitting, see :func:`~sktopics.utils._torch.device_budget`) before they stay on
#: the host.
_RESIDENT_ELEMENTS = 1 << 28


class CSRDataset(torch.utils.data.Dataset):
    """A CSR document-term matrix seen as a torch dataset (no densification)."""

    def __init__(self, X):
        self.X = X

    def __len__(self):
        return self.X.shape[0]

    def __getitem__(self, index):
        return csr_to_dense_tensor(self.X, [index])[0], None


class DeviceCSR:
    """The non-zeros of a CSR matrix held on a device, densified a batch at a time.

    The columns and values go to ``device`` once (when they fit in its memory
    budget; otherwise they stay on the host and each dense batch is copied over).
    For a sequence of row batches, the positions of their non-zeros are computed
    on the host and uploaded in one copy, so a batch is then a slice, two gathers
    and one scatter on the device: no host round trip and no synchronisation per
    batch.
    """

    def __init__(self, X, device):
        if not X.has_canonical_format:  # duplicate entries would be lost by the scatter
            X = X.copy()
            X.sum_duplicates()
        self.device = torch.device(device)
        self.shape = X.shape
        self.indptr = np.asarray(X.indptr, dtype=np.int64)
        fits = 2 * X.nnz <= device_budget(self.device, _RESIDENT_ELEMENTS)
        self.storage = self.device if fits else torch.device("cpu")
        # On the CPU these share the matrix's own arrays (float32 data: no copy at all).
        self.columns = torch.from_numpy(X.indices).to(self.storage)
        self.values = torch.as_tensor(X.data, dtype=torch.float32).to(self.storage)

    def dense_batches(self, batches):
        """Yield one dense float32 ``(len(rows), n_columns)`` tensor per array of rows."""
        if not batches:
            return
        rows = np.concatenate(batches)
        starts = self.indptr[rows]
        lengths = self.indptr[rows + 1] - starts
        ends = np.cumsum(lengths)
        positions = np.repeat(starts - ends + lengths, lengths) + np.arange(ends[-1])
        sizes = np.array([len(b) for b in batches])
        local = np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        flat_row = np.repeat(local * self.shape[1], lengths)
        host = torch.from_numpy(np.stack([positions, flat_row]))
        if self.storage.type == "cuda":
            host = host.pin_memory()
        index = host.to(self.storage, non_blocking=True)
        bounds = np.concatenate([[0], ends[np.cumsum(sizes) - 1]])
        for b, size in enumerate(sizes):
            part = index[:, bounds[b]:bounds[b + 1]]
            flat = part[1] + self.columns.index_select(0, part[0])
            dense = torch.zeros(int(size) * self.shape[1], dtype=torch.float32, device=self.storage)
            dense[flat] = self.values.index_select(0, part[0])
            yield dense.view(int(size), self.shape[1]).to(self.device, non_blocking=True)


class CSRBatchIterator:
    """skorch iterator yielding ``(dense_batch, None)`` from a :class:`CSRDataset`.

    The corpus goes to the device once (:class:`DeviceCSR`); each epoch's batches
    are densified there. The sampling order comes from a private numpy generator
    seeded with ``seed``, advancing from epoch to epoch, so the global RNGs are
    never touched and every device sees the same batches.

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
        self._corpus = DeviceCSR(dataset.X, device)

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
        for batch in self._corpus.dense_batches(list(self._index_batches())):
            yield batch, None

    def __len__(self):
        n, size = len(self.dataset), self.batch_size
        if self.sampling == "with_replacement":
            return max(n // size, 1)
        if self.sampling == "shuffle" and n > size:
            return n // size
        return -(-n // size)
