"""The corpus shipped inside the package: BBC News (OCTIS preprocessing)."""

from importlib import resources

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = ["load_bbc_news"]

_PACKAGE = "sktopics.datasets"
_SPLIT_NAMES = ("train", "validation", "test")
_SUBSETS = _SPLIT_NAMES + ("all",)


def _resource(name):
    """Traversable for ``sktopics/datasets/data/<name>`` (works from wheels/zips too)."""
    return resources.files(_PACKAGE).joinpath("data").joinpath(name)


def _read_text(name):
    return _resource(name).read_text(encoding="utf-8")


def _load_npz(name):
    """Read an embedded ``.npz`` into a dict of new arrays (no pickles allowed)."""
    with resources.as_file(_resource(name)) as path:
        with np.load(path, allow_pickle=False) as z:
            return {key: z[key] for key in z.files}


def load_bbc_news(*, subset="train", return_X_y=False):
    r"""Load the BBC News corpus embedded in sktopics (no download).

    2,225 BBC news articles (2004-2005) in five topical classes, as preprocessed
    and split by OCTIS: a bag-of-words over 2,949 lemmatised, stop-worded words.
    The data ship with the package; every call builds new arrays, so modifying
    the returned objects never affects a later call.

    =================  ==========================================
    Documents          2,225 (train 1,556 / validation 334 / test 335)
    Vocabulary         2,949
    Tokens             267,259
    Classes            5
    =================  ==========================================

    Parameters
    ----------
    subset : {"train", "validation", "test", "all"}, default="train"
        Which documents to return. ``"train"``, ``"validation"`` and ``"test"``
        are OCTIS's own split (OCTIS calls the second one ``val``); they
        partition ``"all"``, which keeps the order of OCTIS's ``corpus.tsv``.
    return_X_y : bool, default=False
        If True, return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        Dictionary-like object with the following attributes.

        data : scipy.sparse.csr_matrix of shape (n_documents, 2949), dtype int64
            Word counts; column indices sorted within each row.
        target : ndarray of shape (n_documents,), dtype int64
            Class of each document, an index into ``target_names``.
        target_names : list of str
            ``["business", "entertainment", "politics", "sport", "tech"]``.
        feature_names : ndarray of shape (2949,), dtype object
            The vocabulary (str), in column order.
        split : ndarray of shape (n_documents,), dtype object
            ``"train"``, ``"validation"`` or ``"test"`` for each document.
        texts : list of str
            Each document as text: its (preprocessed) words, each repeated as
            often as it occurs, in vocabulary order. Feeding these to
            :class:`~sklearn.feature_extraction.text.CountVectorizer` with
            ``token_pattern=r"\S+"`` gives back ``data`` (up to column order).
        subset : str
            The requested subset.
        DESCR : str
            Description of the corpus, its preprocessing and its origin.

    (data, target) : tuple if ``return_X_y`` is True
        The CSR count matrix and the label array described above.

    Notes
    -----
    Origin: ``MIND-Lab/OCTIS`` ``preprocessed_datasets/BBC_News`` (MIT licence),
    built from the BBC dataset of Greene & Cunningham (2006), "Practical
    Solutions to the Problem of Diagonal Dominance in Kernel Document
    Clustering", ICML. ``sktopics/datasets/data/PROVENANCE.txt`` gives the
    commit, checksums and conversion.

    Examples
    --------
    >>> from sktopics.datasets import load_bbc_news
    >>> bunch = load_bbc_news(subset="all")
    >>> bunch.data.shape
    (2225, 2949)
    >>> bunch.target_names
    ['business', 'entertainment', 'politics', 'sport', 'tech']
    >>> X, y = load_bbc_news(subset="test", return_X_y=True)
    >>> X.shape, y.shape
    ((335, 2949), (335,))
    """
    if subset not in _SUBSETS:
        raise ValueError(f"subset must be one of {list(_SUBSETS)}; got {subset!r}.")

    z = _load_npz("bbc_news.npz")
    X = sp.csr_matrix(
        (
            z["counts"].astype(np.int64),
            z["indices"].astype(np.int32),
            z["indptr"].astype(np.int32),
        ),
        shape=tuple(int(n) for n in z["shape"]),
    )
    X.has_sorted_indices = True
    target = z["target"].astype(np.int64)
    split_code = z["split"]
    if subset != "all":
        mask = split_code == _SPLIT_NAMES.index(subset)
        X = X[mask]
        target = target[mask]
        split_code = split_code[mask]
    split = np.asarray(_SPLIT_NAMES, dtype=object)[split_code]

    if return_X_y:
        return X, target
    return Bunch(
        data=X,
        target=target,
        target_names=[str(name) for name in z["target_names"]],
        feature_names=z["feature_names"].astype(object),
        split=split,
        texts=_bag_to_texts(X, z["feature_names"]),
        subset=subset,
        DESCR=_read_text("bbc_news.rst"),
    )


def _bag_to_texts(X, feature_names):
    words = np.asarray(feature_names, dtype=object)
    return [
        " ".join(np.repeat(words[X.indices[start:stop]], X.data[start:stop]))
        for start, stop in zip(X.indptr[:-1], X.indptr[1:])
    ]
