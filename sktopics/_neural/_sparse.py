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
    """A batch's non-zeros grouped by column (columns ascending, rows ascending within;
    a padded batch's padding follows each column's own entries)."""

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

        ``out`` keeps its shapes (a static buffer replayed by a CUDA graph); the
        ``out.nnz - nnz`` padding entries are zero-valued, so the padded batch computes
        every product and sum this one does. They are spread evenly over the rows
        (row-major) and over the present-column slots (column-major; slots beyond this
        batch's columns are column 0): on a GPU the products and row sums walk each
        row's or column's entries in one thread (per output feature), which would
        otherwise walk all the padding alone.
        The two orders hold the same entries: the ``k``-th padding entry of either is
        in the ``k``-th padding row and the ``k``-th padding slot's column, and
        ``order`` maps one onto the other. Within a row or column the padding follows
        the batch's own entries, so their order is no longer ascending.
        """
        if out.shape != self.shape or out.nnz < self.nnz:
            raise ValueError("pad_into needs a batch of the same shape with room for the entries.")
        n, n_pad = self.nnz, out.nnz - self.nnz
        columns, target = self.by_column, out.by_column
        n_slots, n_present = target.present.shape[0], columns.present.shape[0]
        index = torch.arange(max(n, n_pad), device=self.device)
        real, pad = index[:n], index[:n_pad]

        def spread(bounds, n_groups):
            """Groups' bounds with the padding shared out, and each padding entry's
            group and position."""
            extra = torch.arange(n_groups + 1, device=self.device) * n_pad // max(n_groups, 1)
            group = torch.searchsorted(extra[1:], pad, right=True)
            return bounds + extra, extra, group, bounds[1:].index_select(0, group) + pad

        # row-major: row r's entries move up by the padding of the rows before it
        out_bounds, extra, pad_row, pad_at = spread(self.bounds, self.shape[0])
        real_at = real + extra.index_select(0, self.rows)
        out.bounds.copy_(out_bounds)
        # column-major: the batch's present columns, then empty slots of column 0
        target.present[:n_present].copy_(columns.present)
        target.present[n_present:].fill_(0)
        slot_bounds = torch.cat([columns.bounds, columns.bounds.new_full((n_slots - n_present,), n)])
        target_bounds, slot_extra, pad_slot, pad_slot_at = spread(slot_bounds, n_slots)
        target.bounds.copy_(target_bounds)
        slot = torch.searchsorted(columns.bounds[1:], real, right=True)
        real_slot_at = real + slot_extra.index_select(0, slot)
        pad_column = target.present.index_select(0, pad_slot)

        out.rows.index_copy_(0, real_at, self.rows).index_copy_(0, pad_at, pad_row)
        out.columns.index_copy_(0, real_at, self.columns).index_copy_(0, pad_at, pad_column)
        out.values.index_copy_(0, real_at, self.values).index_fill_(0, pad_at, 0)
        target.rows.index_copy_(0, real_slot_at, columns.rows).index_copy_(0, pad_slot_at, pad_row)
        target.values.index_copy_(0, real_slot_at, columns.values).index_fill_(0, pad_slot_at, 0)
        target.order.index_copy_(0, real_slot_at, real_at.index_select(0, columns.order))
        target.order.index_copy_(0, pad_slot_at, pad_at)


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
