"""Blocks of consecutive documents, so that inference works in bounded memory.

``transform``, ``score`` and ``score_samples`` read a corpus block by block: what a
block needs beside the input (its slice, its documents' keys, the estimator's
tables) is a few times its non-zero cells, whatever the number of documents, and
only the output grows with them.
"""

import numpy as np

from ._devices import device_budget

__all__ = ["EVALUATION_CELLS", "document_blocks", "evaluation_blocks"]

#: Non-zero cells of a block of documents read together by ``score``,
#: ``score_samples`` and ``transform`` on the CPU (3 MB of a float64 CSR matrix;
#: GPUs take more, see :func:`~sktopics.utils._devices.device_budget`).
EVALUATION_CELLS = 1 << 18


def evaluation_blocks(X, device="cpu"):
    """The blocks of documents of the CSR matrix ``X`` that inference on ``device``
    reads together: :data:`EVALUATION_CELLS` non-zero cells each on the CPU, more on a
    GPU (:func:`~sktopics.utils._devices.device_budget`)."""
    return document_blocks(X.indptr, X.shape[0], device_budget(device, EVALUATION_CELLS))


def document_blocks(indptr, max_docs, max_cells):
    """``(start, stop)`` ranges of consecutive documents, each with at most ``max_docs``
    documents and ``max_cells`` non-zero cells (but at least one document).

    Parameters
    ----------
    indptr : ndarray
        A CSR matrix's row pointers.
    max_docs, max_cells : int
    """
    n_docs = len(indptr) - 1
    blocks, start = [], 0
    while start < n_docs:
        limit = int(indptr[start]) + int(max_cells)  # Python ints: int32 pointers overflow
        last = int(np.searchsorted(indptr, limit, side="right")) - 1
        stop = min(max(last, start + 1), start + max_docs, n_docs)
        blocks.append((start, stop))
        start = stop
    return blocks
