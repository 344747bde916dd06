"""Mini-batches of a CSR corpus on the training device, as their non-zeros."""

import numpy as np
import torch

from ..utils._devices import csr_to_dense_tensor, device_budget
from ..utils._distributed import current_collective
from ._sparse import ColumnMajor, SparseRows

__all__ = ["CSRDataset", "CSRBatchIterator", "DeviceCSR", "corpus_word_counts",
           "natural_batches"]

#: float32 elements of device memory the non-zero values of a corpus may take (free
#: memory permitting, see :func:`~sktopics.utils._devices.device_budget`) before they
#: stay on the host.
_RESIDENT_ELEMENTS = 1 << 28

#: Non-zeros whose batch layouts are built and uploaded together on the CPU (about 90
#: bytes each while they are: 47 MB; a GPU takes 64 times more, a 20 Newsgroups epoch
#: in one upload).
_LAYOUT_ELEMENTS = 1 << 19


class CSRDataset(torch.utils.data.Dataset):
    """A CSR document-term matrix seen as a torch dataset (no densification)."""

    def __init__(self, X):
        self.X = X

    def __len__(self):
        return self.X.shape[0]

    def __getitem__(self, index):
        return csr_to_dense_tensor(self.X, [index])[0], None


class DeviceCSR:
    """The non-zeros of a CSR matrix held on a device, cut into batches there.

    The values go to ``device`` once (when they fit in its memory budget;
    otherwise they stay on the host and each batch is copied over). For a
    sequence of row batches, the positions, columns and column-major order of
    their non-zeros are computed on the host and uploaded in one copy, so a batch
    is then a few slices and gathers on the device: no host round trip and no
    synchronisation per batch.
    """

    def __init__(self, X, device):
        if not X.has_canonical_format:  # a batch holds each (row, column) at most once
            X = X.copy()
            X.sum_duplicates()
        self.device = torch.device(device)
        self.shape = X.shape
        self.indptr = np.asarray(X.indptr, dtype=np.int64)
        fits = X.nnz <= device_budget(self.device, _RESIDENT_ELEMENTS)
        self.storage = self.device if fits else torch.device("cpu")
        self.columns = X.indices
        # On the CPU the matrix's own values (no copy; torch refuses to share a
        # read-only array), cast to float32 a batch at a time; a GPU holds them in
        # float32.
        shared = self.storage.type == "cpu" and X.data.flags.writeable
        self.values = (torch.as_tensor(X.data) if shared
                       else torch.as_tensor(X.data, dtype=torch.float32).to(self.storage))

    def _batch_values(self, positions):
        """The float32 values at ``positions`` of the non-zeros."""
        return self.values.index_select(0, positions).to(torch.float32)

    def _layout(self, batches):
        """Host-side positions of a sequence of row batches' non-zeros.

        Returns, per batch, the positions of its entries in the matrix's non-zeros
        and each entry's row within the batch.
        """
        rows = np.concatenate(batches)
        starts = self.indptr[rows]
        lengths = self.indptr[rows + 1] - starts
        ends = np.cumsum(lengths)
        positions = np.repeat(starts - ends + lengths, lengths) + np.arange(ends[-1])
        sizes = np.array([len(b) for b in batches])
        local = np.arange(len(rows)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        entry_rows = np.repeat(local, lengths)
        bounds = np.concatenate([[0], ends[np.cumsum(sizes) - 1]])
        return [(positions[lo:hi], entry_rows[lo:hi]) for lo, hi in zip(bounds, bounds[1:])]

    def _upload(self, per_batch):
        """Upload per-batch tuples of int64 host arrays in one copy; yield them as
        tuples of tensors on the storage device."""
        flat = [np.asarray(a, dtype=np.int64) for arrays in per_batch for a in arrays]
        host = torch.from_numpy(np.concatenate(flat))
        if self.storage.type == "cuda":
            host = host.pin_memory()
        device_copy = host.to(self.storage, non_blocking=True)
        bounds = np.concatenate([[0], np.cumsum([a.size for a in flat])])
        arity = len(per_batch[0])
        for b in range(len(per_batch)):
            yield tuple(device_copy[bounds[i]:bounds[i + 1]]
                        for i in range(b * arity, (b + 1) * arity))

    def sparse_batches(self, batches):
        """Yield one :class:`~._sparse.SparseRows` per array of rows.

        The batches' layouts are built and uploaded a group at a time, a group
        holding about ``device_budget(device, _LAYOUT_ELEMENTS)`` non-zeros, so that
        the host memory they take stays bounded whatever the corpus.
        """
        budget = device_budget(self.device, _LAYOUT_ELEMENTS)
        sizes = np.array([int((self.indptr[rows + 1] - self.indptr[rows]).sum())
                          for rows in batches], dtype=np.int64)
        start = 0
        while start < len(batches):
            ends = np.cumsum(sizes[start:])
            stop = start + max(1, int(np.searchsorted(ends, budget, side="right")))
            yield from self._group(batches[start:stop])
            start = stop

    def _group(self, batches):
        """The batches of one group, laid out and uploaded together.

        The column-major order of each batch (for the products with the
        transpose) is a stable sort of its columns on the host, a radix sort
        while the vocabulary fits in 16 bits.
        """
        key_type = np.uint16 if self.shape[1] <= 1 << 16 else np.int64
        host = []
        for rows, (positions, entry_rows) in zip(batches, self._layout(batches)):
            row_bounds = np.searchsorted(entry_rows, np.arange(len(rows) + 1))
            columns = self.columns[positions]
            order = np.argsort(columns.astype(key_type), kind="stable")
            ordered = columns[order]
            first = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])[:ordered.size]
            host.append((positions, entry_rows, columns, row_bounds, order, ordered[first],
                         np.r_[first, ordered.size]))
        for rows, arrays in zip(batches, self._upload(host)):
            positions, entry_rows, columns, row_bounds, order, present, column_bounds = arrays
            by_position = positions.index_select(0, order)
            yield SparseRows(
                *(t.to(self.device, non_blocking=True) for t in (
                    entry_rows, columns, self._batch_values(positions), row_bounds)),
                shape=(len(rows), self.shape[1]),
                by_column=ColumnMajor(*(t.to(self.device, non_blocking=True) for t in (
                    present, column_bounds, order, entry_rows.index_select(0, order),
                    self._batch_values(by_position)))),
            )


class CSRBatchIterator:
    """skorch iterator yielding ``(batch, None)`` from a :class:`CSRDataset`.

    The corpus goes to the device once (:class:`DeviceCSR`); each epoch's batches
    are cut there, as :class:`~._sparse.SparseRows`. Epoch ``e``'s order comes from
    a private numpy generator seeded with ``(seed, e)``: the global RNGs are never
    touched, every device sees the same batches, and a run continued from epoch
    ``e`` (a warm fit, a ``partial_fit``) draws what one long run would have.

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
    first_epoch : int, default=0
        The number of the first epoch this iterator serves (counted from 0 over the
        whole training run).
    n_batches : int or None, default=None
        Batches per training epoch, when they must be fewer than the sampling gives
        (every rank of a data-parallel fit takes as many steps).
    """

    def __init__(self, dataset, batch_size, sampling="shuffle", seed=0, device="cpu",
                 first_epoch=0, n_batches=None):
        self.dataset = dataset
        self.batch_size = int(batch_size)
        self.sampling = sampling
        self.device = device
        self.seed = int(seed)
        self._epoch = int(first_epoch)
        self.n_batches = n_batches
        self._corpus = DeviceCSR(dataset.X, device)

    def _index_batches(self):
        n, size = len(self.dataset), self.batch_size
        rng = np.random.default_rng([self.seed, self._epoch])
        if self.sampling != "sequential":
            self._epoch += 1
        if self.sampling == "with_replacement":
            for _ in range(max(n // size, 1)):
                yield np.sort(rng.integers(0, n, size=min(size, n)))
        elif self.sampling == "shuffle":
            order = rng.permutation(n)
            stop = n - n % size if n > size else n
            for start in range(0, stop, size):
                yield np.sort(order[start:start + size])
        else:
            for start in range(0, n, size):
                yield np.arange(start, min(start + size, n))

    def __iter__(self):
        batches = list(self._index_batches())
        if self.n_batches is not None and self.sampling != "sequential":
            batches = batches[:self.n_batches]
        for batch in self._corpus.sparse_batches(batches):
            yield batch, None

    def __len__(self):
        return natural_batches(len(self.dataset), self.batch_size, self.sampling,
                               self.n_batches)


def natural_batches(n, size, sampling, limit=None):
    """Batches an epoch over ``n`` documents has (at most ``limit`` when training)."""
    if sampling == "with_replacement":
        count = max(n // size, 1)
    elif sampling == "shuffle" and n > size:
        count = n // size
    else:
        return -(-n // size)
    return count if limit is None else min(count, limit)


def corpus_word_counts(X):
    """Each word's count over the training documents, as float64: in a data-parallel
    fit, over every rank's documents (for data-dependent initial values that must be
    the same on every rank)."""
    counts = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
    collective = current_collective()
    if collective is not None:
        counts = collective.sum_(torch.from_numpy(counts)).numpy()
    return counts
