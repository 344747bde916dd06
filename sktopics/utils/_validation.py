"""Validation of count matrices: the count policy shared by every estimator."""

import numpy as np
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning

from ._distributed import current_collective
from ._pipeline import final_estimator
from ._sklearn_compat import validate_data
from ._warnings import warn

__all__ = [
    "EmptyDocumentWarning",
    "FractionalCountsWarning",
    "check_count_matrix",
    "check_counts",
    "check_doc_topic_prior",
    "check_topic_word",
    "text_input_kind",
    "warn_fractional_counts",
]


class EmptyDocumentWarning(UserWarning):
    """Documents without a token in the vocabulary: their proportions are the prior mean.

    Issued by ``transform`` with the number of such documents (empty rows, or rows
    made only of words the vectorizer did not keep). Filter it with
    ``warnings.simplefilter("ignore", EmptyDocumentWarning)`` where they are expected.
    """


class FractionalCountsWarning(UserWarning):
    """Non-integer entries in the counts a model that keeps them as weights is fitted on.

    Issued once by ``fit`` (and by the first ``partial_fit``, the calls that start a
    model; not by a warm-started ``fit``, ``transform`` or ``score``) of the models that
    use fractional entries as weights (AVITM, ProdLDA, PAMVI, MoLDA), with the number of
    such entries. Their likelihood treats the weights as token counts, so a TF-IDF or
    row-normalised matrix is usually a mistake. Filter it with
    ``warnings.filterwarnings("ignore", category=FractionalCountsWarning)`` where weights
    are meant.
    """


def check_count_matrix(estimator, X, *, reset, integer_counts=False, min_samples=1):
    """Validate a document-term count matrix and return it as CSR float.

    Parameters
    ----------
    estimator : BaseEstimator
        The estimator, for ``n_features_in_`` / ``feature_names_in_`` bookkeeping.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Non-negative counts.
    reset : bool
        True in ``fit`` (records the number of features), False afterwards (checks it).
    integer_counts : bool, default=False
        When True, non-integer entries are rounded with :func:`numpy.rint` and a
        :class:`~sklearn.exceptions.DataConversionWarning` is emitted (Gibbs models).
        When False, fractional entries are kept as weights (neural models), with a
        :class:`FractionalCountsWarning` when ``reset`` is True (the fit that starts
        the model).
    min_samples : int, default=1
        Minimum number of documents.

    Returns
    -------
    X : scipy.sparse.csr_matrix
        float64 or float32 CSR matrix with sorted indices; never the caller's object
        when a change (rounding, sorting) is needed.
    """
    _refuse_raw_text(X, type(estimator).__name__)
    X = validate_data(
        estimator,
        X,
        reset=reset,
        accept_sparse=("csr", "csc", "coo"),
        dtype=(np.float64, np.float32),
        ensure_min_samples=min_samples,
        ensure_all_finite=True,
    )
    owner = type(estimator).__name__
    X = check_counts(X, owner=owner, integer_counts=integer_counts)
    if reset and not integer_counts and current_collective() is None:
        warn_fractional_counts(X, owner)  # data-parallel: the caller, once ranks agree
    return X


def check_counts(X, *, owner, n_features=None, integer_counts=False):
    """The count policy on a matrix already converted to numbers: CSR, finite, >= 0.

    Parameters
    ----------
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
    owner : str
        Who asks (named in messages): an estimator's class or a function.
    n_features : int or None
        When given, the number of columns ``X`` must have (the model's vocabulary).
    integer_counts : bool, default=False
        Round non-integer entries, with a
        :class:`~sklearn.exceptions.DataConversionWarning`.

    Returns
    -------
    X : scipy.sparse.csr_matrix
        float CSR with sorted indices; never the caller's object when a change
        (conversion, rounding, sorting) is needed.
    """
    if not sp.issparse(X):
        X = np.asarray(X)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-D; got shape {X.shape}.")
    X = sp.csr_matrix(X) if not sp.isspmatrix_csr(X) else X
    if X.dtype not in (np.float64, np.float32):
        X = X.astype(np.float64)
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but {owner} expects {n_features} (the model's "
            "vocabulary size)."
        )
    values = X.data
    if not _all_chunks(values, lambda chunk: np.isfinite(chunk).all()):
        raise ValueError(f"X passed to {owner} contains NaN or infinite values.")
    if values.size and values.min() < 0:
        raise ValueError(
            f"Negative values in data passed to {owner}: a "
            "document-term matrix holds non-negative counts."
        )
    if integer_counts and not _all_chunks(values,
                                          lambda chunk: np.array_equal(np.rint(chunk), chunk)):
        X = _rounded_counts(X, np.rint(values), owner)
    if not X.has_sorted_indices:
        X = X.sorted_indices()
    return X


def _all_chunks(values, check, chunk=1 << 16):
    """Whether ``check`` holds for every chunk of ``values``: a check's temporaries
    are a chunk's, never a copy of a large corpus's values."""
    return all(check(values[i:i + chunk]) for i in range(0, values.size, chunk))


def text_input_kind(X):
    """What kind of documents ``X`` holds when it holds words rather than numbers.

    Parameters
    ----------
    X : object
        What was passed as a document-term matrix.

    Returns
    -------
    kind : {"raw text", "token lists"} or None
        ``"raw text"`` for a string or a list, tuple or array of strings;
        ``"token lists"`` for a list, tuple or object array of lists (or tuples) of
        strings, e.g. ``[doc.split() for doc in texts]``; ``None`` otherwise.
    """
    if isinstance(X, str):
        return "raw text"
    if isinstance(X, (list, tuple)):
        documents = X
    elif getattr(X, "dtype", None) is not None and X.dtype.kind in "OUS" and getattr(X, "size", 0):
        documents = np.asarray(X).ravel()
    else:
        return None
    # the first document that is not an empty token list says what the others are
    first = next((doc for doc in documents if not (_is_token_sequence(doc) and len(doc) == 0)),
                 None)
    if isinstance(first, str):
        return "raw text"
    if _is_token_sequence(first) and isinstance(first[0], str):
        return "token lists"
    return None


def _is_token_sequence(doc):
    return isinstance(doc, (list, tuple)) or (isinstance(doc, np.ndarray) and doc.ndim == 1)


def _refuse_raw_text(X, owner):
    """A clear error for documents passed as text or token lists, before numpy parses them."""
    kind = text_input_kind(X)
    if kind == "raw text":
        raise ValueError(
            f"{owner} expects a document-term matrix of token counts, not raw text: put a "
            f"vectorizer first, e.g. make_pipeline(CountVectorizer(), {owner}(...))."
        )
    if kind == "token lists":
        raise ValueError(
            f"{owner} expects a document-term matrix of token counts, not lists of tokens: "
            f"put a vectorizer first, e.g. make_pipeline(CountVectorizer(analyzer=list), "
            f"{owner}(...)) (analyzer=list counts each list's tokens as they are)."
        )


def warn_fractional_counts(X, owner, collective=None):
    """Say that non-integer entries will be used as weights (models that keep them).

    Data-parallel (``collective``), every rank must call it (after the ranks agreed on
    their input): one warning, on rank 0, counts every rank's entries.
    """
    values = X.data
    n_fractional, n_values = int(np.count_nonzero(values != np.rint(values))), X.nnz
    if collective is not None:
        n_fractional, n_values = collective.sum(n_fractional), collective.sum(n_values)
        if collective.rank != 0:
            return
    if not n_fractional:
        return
    warn(
        f"{n_fractional} of {n_values} non-zero entries of the X passed to {owner} are not "
        f"integers: {owner} uses them as weights, and its likelihood treats them as token "
        "counts. A TF-IDF or row-normalised matrix is usually a mistake for a count model: "
        "pass raw counts, e.g. from CountVectorizer. If the weights are meant, silence this "
        "with warnings.filterwarnings(\"ignore\", "
        "category=sktopics.utils.FractionalCountsWarning).",
        FractionalCountsWarning,
    )


def _rounded_counts(X, rounded, owner):
    """Counts rounded to integers, with what the rounding changed; an error for non-counts.

    A few fractional entries in a count matrix are repaired, saying what changed. A
    matrix whose rounding empties most documents (TF-IDF of long documents,
    normalised rows) leaves nothing sensible to fit and is refused.
    """
    before = np.asarray(X.sum(axis=1)).ravel()
    X = X.copy()
    changed = int(np.count_nonzero(rounded != X.data))
    zeroed = int(np.count_nonzero((rounded == 0) & (X.data != 0)))
    X.data = rounded
    after = np.asarray(X.sum(axis=1)).ravel()
    emptied = int(np.count_nonzero((before > 0) & (after <= 0)))
    n_docs = int(np.count_nonzero(before > 0))
    detail = (f"{changed} of {X.nnz} non-zero entries are not integers ({zeroed} round to 0), "
              f"{emptied} of {n_docs} documents become empty and the total count goes from "
              f"{before.sum():.4g} to {after.sum():.4g}")
    if 2 * emptied > n_docs or after.sum() <= 0:
        raise ValueError(
            f"{owner} needs integer token counts, and X does not hold them: {detail}. Is X a "
            "TF-IDF or normalised matrix? Pass raw counts, e.g. from CountVectorizer."
        )
    hint = (" Is X a TF-IDF or normalised matrix? Pass raw counts, e.g. from CountVectorizer."
            if 2 * changed > X.nnz else "")
    warn(
        f"{owner} needs integer token counts: {detail}; non-integer entries were rounded to "
        f"the nearest integer.{hint}",
        DataConversionWarning,
    )
    X.eliminate_zeros()
    return X


def check_topic_word(topic_word, name="topic_word"):
    """Return a finite 2-D float64 topic-word array, or the fitted model's one."""
    model = final_estimator(topic_word)
    if hasattr(model, "components_"):
        topic_word = model.components_
    array = np.asarray(topic_word, dtype=np.float64)
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(
            f"{name} must be a fitted topic model or a 2-D (n_topics, n_words) "
            f"array; got an array of shape {array.shape}."
        )
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or infinite values.")
    return array


def check_doc_topic_prior(value, n_components, name="doc_topic_prior"):
    """A document-topic Dirichlet prior as a float64 array of shape (n_components,).

    Parameters
    ----------
    value : float or array-like of shape (n_components,)
        Positive and finite: one value for every topic, or one per topic.
    n_components : int
    name : str
        The parameter's name, for the error message.

    Returns
    -------
    alpha : ndarray of shape (n_components,)
    """
    alpha = np.asarray(value, dtype=np.float64)
    if alpha.ndim == 0:
        alpha = np.full(n_components, float(alpha))
    if alpha.shape != (n_components,) or not np.all(np.isfinite(alpha)) or np.any(alpha <= 0):
        raise ValueError(
            f"{name} must be a positive float or an array of shape (n_components,) = "
            f"({n_components},) with positive entries; got shape {alpha.shape}."
        )
    return alpha
