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
        return out.index_copy_(0, columns.present, part)

    def to_dense(self):
        dense = self.values.new_zeros(self.shape)
        dense[self.rows, self.columns] = self.values
        return dense


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
