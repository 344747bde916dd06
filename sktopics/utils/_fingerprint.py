"""The identity of a count matrix (to recognise the same corpus again) or of a model's
arrays (to check that every rank holds the same model)."""

import hashlib

import numpy as np
import scipy.sparse as sp

__all__ = ["array_fingerprint", "count_fingerprint"]


def count_fingerprint(X):
    """A 128-bit BLAKE2 digest of a count matrix's shape and non-zero cells.

    Equal cells give equal digests whatever the matrix's format, dtype, order of
    entries, duplicates (summed) or explicit zeros (left out); any change of a value,
    or of where it stands, gives another (exchanging the words of two documents of
    equal length included). O(nnz); a copy only when the matrix is not canonical.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)

    Returns
    -------
    digest : str
    """
    X = sp.csr_matrix(X)
    if not X.has_canonical_format or not X.data.all():
        X = X.copy()
        X.sum_duplicates()
        X.eliminate_zeros()
    digest = hashlib.blake2b(digest_size=16)
    for part in (np.asarray(X.shape), X.indptr, X.indices):
        digest.update(np.ascontiguousarray(part, dtype=np.int64).tobytes())
    digest.update(np.ascontiguousarray(X.data, dtype=np.float64).tobytes())
    return digest.hexdigest()


def array_fingerprint(arrays):
    """A 128-bit BLAKE2 digest of a sequence of arrays' shapes and values (as float64).

    Parameters
    ----------
    arrays : iterable of array-like

    Returns
    -------
    digest : str
    """
    digest = hashlib.blake2b(digest_size=16)
    for array in arrays:
        array = np.ascontiguousarray(array, dtype=np.float64)
        digest.update(np.asarray(array.shape, dtype=np.int64).tobytes())
        digest.update(array.tobytes())
    return digest.hexdigest()
