"""A batch of documents as its non-zero counts, and the two products the VAEs take of it.

A training batch of 200 documents over 2,000 words holds about 11,000 non-zeros:
multiplying it densely by the encoder's first layer, and reading the
reconstruction term off a dense ``(batch, words)`` table, cost 20 times the
arithmetic that matters. :class:`SparseRows` keeps the non-zeros in two orders
(row-major for the forward products, column-major for the first layer's weight
gradient), so both products are ``embedding_bag`` calls, on any device
(:class:`InputLinear`, :func:`row_sums`).

Maths only: imports torch, never scikit-learn or skorch.
"""

from typing import NamedTuple

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["SparseRows", "ColumnMajor", "InputLinear", "row_sums"]


class ColumnMajor(NamedTuple):
    """A batch's non-zeros grouped by column (columns ascending, rows ascending within)."""

    present: torch.Tensor  #: the columns with at least one non-zero
    bounds: torch.Tensor  #: where each present column's entries start, then their count
    order: torch.Tensor  #: row-major position of each column-major entry
    rows: torch.Tensor  #: each entry's row
    values: torch.Tensor  #: each entry's value


class SparseRows:
    """The non-zeros of ``n_rows`` count vectors over ``n_columns`` words.

    Parameters
    ----------
    rows, columns : int64 tensors of shape (nnz,)
        Row-major: rows ascending, no duplicate ``(row, column)`` pair.
    values : float tensor of shape (nnz,)
    bounds : int64 tensor of shape (n_rows + 1,)
        Where each row's non-zeros start, then their count.
    shape : (n_rows, n_columns)
    by_column : ColumnMajor
        The same non-zeros grouped by column.
    """

    def __init__(self, rows, columns, values, bounds, shape, by_column):
        self.rows = rows
        self.columns = columns
        self.values = values
        self.bounds = bounds
        self.shape = (int(shape[0]), int(shape[1]))
        self.by_column = by_column

    def __len__(self):
        return self.shape[0]

    @property
    def device(self):
        return self.values.device

    def totals(self):
        """Tokens per row, shape ``(n_rows,)``."""
        return row_sums(self, self.values)

    def at(self, dense):
        """``dense[row, column]`` at every non-zero, shape ``(nnz,)``."""
        return dense[self.rows, self.columns]

    def matmul(self, dense, weights=None):
        """``x @ dense``, shape ``(n_rows, dense.shape[1])``, for ``x`` with its values
        replaced by ``weights`` (one per non-zero) if given."""
        values = self.values if weights is None else weights
        return F.embedding_bag(self.columns, dense, self.bounds,
                               per_sample_weights=values.to(dense.dtype), mode="sum",
                               include_last_offset=True)

    def transpose_matmul(self, dense, weights=None):
        """``x.T @ dense``, shape ``(n_columns, dense.shape[1])``, for ``x`` with its
        values replaced by ``weights`` (one per non-zero, row-major) if given."""
        columns = self.by_column
        values = columns.values if weights is None else weights.index_select(0, columns.order)
        part = F.embedding_bag(columns.rows, dense.contiguous(), columns.bounds,
                               per_sample_weights=values.to(dense.dtype), mode="sum",
                               include_last_offset=True)
        out = dense.new_zeros(self.shape[1], dense.shape[1])
        # added, not copied: the empty bags of a padded batch repeat a column (adding
        # their zeros leaves every sum exact, in any order, so on CUDA too)
        return out.index_add_(0, columns.present, part)

    def to_dense(self):
        dense = self.values.new_zeros(self.shape)
        # accumulated: the zero-valued padding of a padded batch may repeat an entry
        return dense.index_put_((self.rows, self.columns), self.values, accumulate=True)

    @property
    def nnz(self):
        return self.values.shape[0]

    def tensors(self):
        """Every tensor of the batch, row-major arrays first (for static copies)."""
        return (self.rows, self.columns, self.values, self.bounds) + tuple(self.by_column)

    def padded(self, capacity):
        """A copy holding ``capacity`` entries (at least ``nnz``): see :meth:`pad_into`."""
        if capacity < self.nnz:
            raise ValueError(f"capacity {capacity} is below the batch's {self.nnz} non-zeros.")
        n_present = min(capacity, self.shape[1])
        sizes = (capacity,) * 3 + (self.shape[0] + 1, n_present, n_present + 1) + (capacity,) * 3
        empty = [t.new_empty(size) for t, size in zip(self.tensors(), sizes)]
        out = SparseRows(*empty[:4], shape=self.shape, by_column=ColumnMajor(*empty[4:]))
        self.pad_into(out)
        return out

    def pad_into(self, out):
        """Write this batch into ``out``, a padded batch of the same rows and columns.

        ``out`` keeps its shapes (a static buffer replayed by a CUDA graph): the entries
        beyond ``nnz`` are zero-valued, in the last row (row-major) and in the last
        present column's bag (column-major); the present columns beyond this batch's
        are empty bags. A zero value contributes nothing to any product or sum of the
        batch, so the padded batch computes what this one does.
        """
        if out.shape != self.shape or out.nnz < self.nnz:
            raise ValueError("pad_into needs a batch of the same shape with room for the entries.")
        nnz, last_row = self.nnz, self.shape[0] - 1
        columns = self.by_column
        n_present = columns.present.shape[0]
        target = out.by_column
        for source, static, fill in ((self.rows, out.rows, last_row), (self.columns, out.columns, 0),
                                     (self.values, out.values, 0),
                                     (columns.rows, target.rows, last_row),
                                     (columns.values, target.values, 0),
                                     (columns.present, target.present, 0)):
            static[:source.shape[0]].copy_(source)
            static[source.shape[0]:].fill_(fill)
        out.bounds.copy_(self.bounds)
        out.bounds[-1:].fill_(out.nnz)
        target.bounds[:n_present].copy_(columns.bounds[:n_present])
        target.bounds[n_present:].fill_(out.nnz)
        target.order[:nnz].copy_(columns.order)
        torch.arange(nnz, out.nnz, out=target.order[nnz:])


def row_sums(x, per_entry):
    """Sum ``per_entry`` (one value per non-zero of ``x``) within each row.

    A segmented reduction: deterministic on a GPU, where ``index_add`` adds
    floating-point numbers in the order threads happen to run.
    """
    return torch.segment_reduce(per_entry, "sum", offsets=x.bounds)


class _SparseMatmul(torch.autograd.Function):
    """``x @ table`` for sparse ``x`` and a word-major ``(n_columns, out)`` table.

    torch's own ``embedding_bag`` backward sorts the indices on every call; the
    batch's column-major order is known in advance, so the table's gradient is
    one more ``embedding_bag``, over the columns present.
    """

    @staticmethod
    def forward(ctx, table, x):
        ctx.x = x
        return x.matmul(table)

    @staticmethod
    def backward(ctx, grad_out):
        return ctx.x.transpose_matmul(grad_out), None


class InputLinear(nn.Module):
    """The encoder's first layer, ``x @ weight + bias``, for dense or sparse ``x``.

    The weight is stored word-major, ``(in_features, out_features)`` (the transpose
    of ``nn.Linear``'s), so that a sparse batch reads its rows as an embedding
    table without a transposed copy per step. Glorot-initialised, zero bias.
    """

    def __init__(self, in_features, out_features):
        super().__init__()
        self.weight = nn.Parameter(nn.init.xavier_uniform_(torch.empty(in_features, out_features)))
        self.bias = nn.Parameter(torch.zeros(out_features))

    def forward(self, x):
        if isinstance(x, SparseRows):
            return _SparseMatmul.apply(self.weight, x) + self.bias
        return torch.addmm(self.bias, x, self.weight)
