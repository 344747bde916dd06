"""Mini-batches of a CSR corpus on the training device, as non-zeros or dense."""

import numpy as np
import torch

from ..utils._torch import csr_to_dense_tensor, device_budget
from ._sparse import ColumnMajor, SparseRows

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
        self.host_columns = X.indices
        # On the CPU these share the matrix's own arrays (float32 data: no copy at all).
        self.columns = torch.from_numpy(X.indices).to(self.storage)
        self.values = torch.as_tensor(X.data, dtype=torch.float32).to(self.storage)

    def _layout(self, batches):
        """Host-side positions of a sequence of row batches' non-zeros.

        Returns the positions in the matrix's non-zeros, each entry's row within
        its batch, each row's first entry within its batch, and the entry bounds
        of each batch.
        """
        rows = np.concatenate(batches)
        starts = self.indptr[rows]
        lengths = self.indptr[rows + 1] - starts
        ends = np.cumsum(lengths)
        positions = np.repeat(starts - ends + lengths, lengths) + np.arange(ends[-1])
        sizes = np.array([len(b) for b in batches])
        first_row = np.cumsum(sizes) - sizes
        local = np.arange(len(rows)) - np.repeat(first_row, sizes)
        bounds = np.concatenate([[0], ends[np.cumsum(sizes) - 1]])
        row_starts = ends - lengths - np.repeat(bounds[:-1], sizes)
        return positions, np.repeat(local, lengths), row_starts, bounds, sizes

    def _upload(self, *arrays):
        host = torch.from_numpy(np.concatenate(arrays))
        if self.storage.type == "cuda":
            host = host.pin_memory()
        return host.to(self.storage, non_blocking=True)

    def dense_batches(self, batches):
        """Yield one dense float32 ``(len(rows), n_columns)`` tensor per array of rows."""
        if not batches:
            return
        positions, entry_rows, _, bounds, sizes = self._layout(batches)
        index = self._upload(positions, entry_rows).view(2, -1)
        for b, size in enumerate(sizes):
            part = index[:, bounds[b]:bounds[b + 1]]
            flat = part[1] * self.shape[1] + self.columns.index_select(0, part[0])
            dense = torch.zeros(int(size) * self.shape[1], dtype=torch.float32, device=self.storage)
            dense[flat] = self.values.index_select(0, part[0])
            yield dense.view(int(size), self.shape[1]).to(self.device, non_blocking=True)

    def sparse_batches(self, batches):
        """Yield one :class:`~._sparse.SparseRows` per array of rows.

        The column-major order of each batch (for the first layer's weight
        gradient) is a stable sort of its columns on the host, a radix sort
        while the vocabulary fits in 16 bits.
        """
        if not batches:
            return
        positions, entry_rows, row_starts, bounds, sizes = self._layout(batches)
        columns = self.host_columns[positions]
        key_type = np.uint16 if self.shape[1] <= 1 << 16 else np.int64
        orders, present, firsts, column_bounds = [], [], [], [0]
        for b in range(len(sizes)):
            part = columns[bounds[b]:bounds[b + 1]]
            order = np.argsort(part.astype(key_type), kind="stable")
            ordered = part[order]
            first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if part.size else order
            orders.append(order)
            present.append(ordered[first])
            firsts.append(first)
            column_bounds.append(column_bounds[-1] + first.size)
        n = bounds[-1]
        index = self._upload(positions, entry_rows, np.concatenate(orders).astype(np.int64),
                             row_starts)
        by_column = self._upload(np.concatenate(present).astype(np.int64),
                                 np.concatenate(firsts).astype(np.int64)).view(2, -1)
        row_bounds = np.concatenate([[0], np.cumsum(sizes)])
        device = self.device
        for b, size in enumerate(sizes):
            lo, hi = bounds[b], bounds[b + 1]
            where, order = index[lo:hi], index[2 * n + lo:2 * n + hi]
            rows = index[n + lo:n + hi]
            clo, chi = column_bounds[b], column_bounds[b + 1]
            parts = (
                rows, self.columns.index_select(0, where).long(),
                self.values.index_select(0, where),
                index[3 * n + row_bounds[b]:3 * n + row_bounds[b + 1]],
                by_column[0, clo:chi], by_column[1, clo:chi], order,
                rows.index_select(0, order), self.values.index_select(0, where[order]),
            )
            rows, columns, values, offsets, *by_column_b = (
                t.to(device, non_blocking=True) for t in parts)
            yield SparseRows(rows, columns, values, offsets, (int(size), self.shape[1]),
                             ColumnMajor(*by_column_b))


class CSRBatchIterator:
    """skorch iterator yielding ``(batch, None)`` from a :class:`CSRDataset`.

    The corpus goes to the device once (:class:`DeviceCSR`); each epoch's batches
    are cut there, as :class:`~._sparse.SparseRows` or dense tensors. The sampling order comes from a private numpy generator
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
    layout : {"sparse", "dense"}
    """

    def __init__(self, dataset, batch_size, sampling="shuffle", seed=0, device="cpu",
                 layout="sparse"):
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.sampling = sampling
        self.device = device
        self.layout = layout
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
        make = (self._corpus.sparse_batches if self.layout == "sparse"
                else self._corpus.dense_batches)
        for batch in make(list(self._index_batches())):
            yield batch, None

    def __len__(self):
        n, size = len(self.dataset), self.batch_size
        if self.sampling == "with_replacement":
            return max(n // size, 1)
        if self.sampling == "shuffle" and n > size:
            return n // size
        return -(-n // size)
