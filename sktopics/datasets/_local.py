"""Loaders for corpora kept in a local folder (never downloaded).

Every loader reads from ``data_home``: the folder that *contains* the corpus
folders (``20news_avitm/``, ``20ng_etm/``, ``nyt_topmost/``,
``nips_uci_giuseppedib/``, ``octis_<name>/``, ``gnews_ctm/``) in the layout and
formats documented in the project's data README. When ``data_home`` is None the
environment variable ``SKTOPICS_DATA`` is used.
"""

import ast
import json
import os
import pickle
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from sklearn.utils import Bunch

__all__ = [
    "get_data_home",
    "load_20news_avitm",
    "load_20ng_etm",
    "load_nyt",
    "load_nips",
    "load_octis",
    "load_googlenews",
]

ENV_VAR = "SKTOPICS_DATA"
_OCTIS_NAMES = ("BBC_News", "DBLP", "M10")
_OCTIS_SPLITS = {"train": "train", "val": "validation", "test": "test"}
_SPLIT_NAMES = ("train", "validation", "test")


# --------------------------------------------------------------------------- helpers
def get_data_home(data_home=None):
    """Return the folder that holds the local corpora.

    Parameters
    ----------
    data_home : str or path-like, default=None
        The folder that contains the corpus folders. If None, the value of the
        environment variable ``SKTOPICS_DATA`` is used.

    Returns
    -------
    data_home : pathlib.Path
        The folder, with ``~`` expanded.

    Raises
    ------
    ValueError
        If ``data_home`` is None and ``SKTOPICS_DATA`` is unset or empty.
    FileNotFoundError
        If the folder does not exist.

    Examples
    --------
    >>> from sktopics.datasets import get_data_home
    >>> get_data_home("~/topic-data")  # doctest: +SKIP
    PosixPath('/home/me/topic-data')
    """
    if data_home is None:
        data_home = os.environ.get(ENV_VAR) or None
        if data_home is None:
            raise ValueError(
                "No data folder given: pass data_home=<folder that contains the corpus "
                f"folders> or set the environment variable {ENV_VAR}. sktopics never "
                "downloads data; only load_bbc_news() works without a local folder."
            )
    path = Path(data_home).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"data_home {str(path)!r} is not an existing folder.")
    return path


def _require(path):
    """Return ``path`` if it is a file, else raise a FileNotFoundError naming it."""
    if not path.is_file():
        raise FileNotFoundError(
            f"Expected corpus file {str(path)!r} was not found. Put the corpus folder "
            f"{path.parent.name!r} (see the sktopics data README for its layout) inside "
            "data_home; sktopics never downloads data."
        )
    return path


def _check_subset(subset, allowed):
    if subset not in allowed:
        raise ValueError(f"subset must be one of {list(allowed)}; got {subset!r}.")


def _read_words(path):
    """One word per line (empty lines ignored) -> object ndarray of str."""
    words = _require(path).read_text(encoding="utf-8").split()
    return np.asarray(words, dtype=object)


def _as_counts(X):
    """CSR int64 counts with int32 indices, duplicates summed, indices sorted."""
    X = sp.csr_matrix(X)
    X.sum_duplicates()
    X.sort_indices()
    return sp.csr_matrix(
        (X.data.astype(np.int64), X.indices.astype(np.int32), X.indptr.astype(np.int32)),
        shape=X.shape,
    )


def _csr_from_arrays(z, split):
    """The ``<split>_data/_indices/_indptr/_shape`` arrays of a converted npz."""
    return sp.csr_matrix(
        (z[f"{split}_data"], z[f"{split}_indices"], z[f"{split}_indptr"]),
        shape=tuple(int(n) for n in z[f"{split}_shape"]),
    )


def _csr_from_tokens(docs, vocabulary_index, source):
    """Count matrix of tokenised documents over a word -> column mapping."""
    lengths = np.fromiter((len(doc) for doc in docs), dtype=np.int64, count=len(docs))
    try:
        cols = np.fromiter(
            (vocabulary_index[w] for doc in docs for w in doc),
            dtype=np.int64,
            count=int(lengths.sum()),
        )
    except KeyError as exc:
        raise ValueError(f"{source}: token {exc.args[0]!r} is not in the vocabulary.") from None
    rows = np.repeat(np.arange(len(docs)), lengths)
    X = sp.csr_matrix(
        (np.ones(cols.size, dtype=np.int64), (rows, cols)),
        shape=(len(docs), len(vocabulary_index)),
    )
    return _as_counts(X)


class _ListOfStrUnpickler(pickle.Unpickler):
    """Unpickler that refuses every global: enough for a pickled list of str."""

    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            f"refusing to load {module}.{name}: a vocabulary pickle holds only strings"
        )


# --------------------------------------------------------------------------- 20news AVITM
_AVITM_DESCR = """\
20 Newsgroups as preprocessed for AVITM / ProdLDA (Srivastava & Sutton, ICLR 2017).
1,995-word vocabulary (column 0 is the unused NVDM token '_eos_'); 11,258 train and
7,487 test documents once the empty last row of each file is dropped, as AVITM does
(991,493 and 629,312 tokens). No labels. Read from 20news_avitm/20news_avitm.npz
(CSR arrays converted from NVDM .feat files re-shipped by
sophieburkhardt/dirichlet-vae-topic-models) and 20news_avitm/vocab.txt.
"""


def load_20news_avitm(data_home=None, *, subset="train", drop_empty=True):
    """Load 20 Newsgroups as preprocessed for AVITM / ProdLDA.

    The bag-of-words used by Srivastava & Sutton (2017): 1,995 words, 11,258
    training and 7,487 test documents. Read from ``<data_home>/20news_avitm/``
    (``20news_avitm.npz`` and ``vocab.txt``); nothing is downloaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder containing ``20news_avitm/``; defaults to ``$SKTOPICS_DATA``.
    subset : {"train", "test", "all"}, default="train"
        The AVITM split; ``"all"`` stacks train then test.
    drop_empty : bool, default=True
        Drop documents without tokens (the last row of each original file), as
        AVITM does with its ``np.sum(doc) != 0`` filter. With False the files'
        11,259 / 7,488 rows are kept.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_documents, 1995), dtype int64
            Word counts.
        feature_names : ndarray of shape (1995,), dtype object
            Vocabulary in column order (column 0, ``"_eos_"``, never occurs).
        subset : str
            The requested subset.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    FileNotFoundError
        If a corpus file is missing; the message names the expected path.

    Examples
    --------
    >>> from sktopics.datasets import load_20news_avitm
    >>> bunch = load_20news_avitm("/path/to/data", subset="train")  # doctest: +SKIP
    >>> bunch.data.shape  # doctest: +SKIP
    (11258, 1995)
    """
    _check_subset(subset, ("train", "test", "all"))
    folder = get_data_home(data_home) / "20news_avitm"
    npz = _require(folder / "20news_avitm.npz")
    feature_names = _read_words(folder / "vocab.txt")
    splits = ("train", "test") if subset == "all" else (subset,)
    with np.load(npz, allow_pickle=False) as z:
        blocks = [_csr_from_arrays(z, s) for s in splits]
    X = _as_counts(sp.vstack(blocks, format="csr"))
    if drop_empty:
        X = X[np.diff(X.indptr) > 0]
    return Bunch(data=X, feature_names=feature_names, subset=subset, DESCR=_AVITM_DESCR)


# --------------------------------------------------------------------------- 20ng ETM
_ETM_SPLITS = {
    "train": "tr",
    "validation": "va",
    "test": "ts",
    "test_h1": "ts_h1",
    "test_h2": "ts_h2",
}
_ETM_DESCR = """\
20 Newsgroups as preprocessed for ETM (Dieng, Ruiz & Blei, TACL 2020), as vendored
by OCTIS: 3,072-word vocabulary; 11,214 train, 100 validation and 7,531 test
documents (919,850 / 8,334 / 594,276 tokens). test_h1 / test_h2 are the two halves
of every test document used for document-completion perplexity (295,245 + 299,031
tokens). No labels. Read from 20ng_etm/bow_<split>_{tokens,counts}.mat and
20ng_etm/vocab.pkl.
"""


def _load_etm_split(folder, code, n_features):
    import scipy.io

    tokens = scipy.io.loadmat(_require(folder / f"bow_{code}_tokens.mat"))["tokens"].ravel()
    counts = scipy.io.loadmat(_require(folder / f"bow_{code}_counts.mat"))["counts"].ravel()
    if tokens.size != counts.size:
        raise ValueError(f"20ng_etm split {code!r}: tokens and counts differ in length.")
    lengths = np.fromiter((t.size for t in tokens), dtype=np.int64, count=tokens.size)
    rows = np.repeat(np.arange(tokens.size), lengths)
    cols = np.concatenate([np.asarray(t).ravel() for t in tokens]).astype(np.int64)
    vals = np.concatenate([np.asarray(c).ravel() for c in counts]).astype(np.int64)
    X = sp.csr_matrix((vals, (rows, cols)), shape=(tokens.size, n_features))
    return _as_counts(X)


def load_20ng_etm(data_home=None, *, subset="train"):
    """Load 20 Newsgroups as preprocessed for the Embedded Topic Model (ETM).

    Read from ``<data_home>/20ng_etm/`` (MATLAB ``.mat`` token/count files and a
    pickled vocabulary, as shipped by ETM and vendored by OCTIS); nothing is
    downloaded. The vocabulary pickle is read with an unpickler that accepts
    plain lists of strings only.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder containing ``20ng_etm/``; defaults to ``$SKTOPICS_DATA``.
    subset : {"train", "validation", "test", "test_h1", "test_h2", "all"}, \
            default="train"
        ETM's split. ``"test_h1"`` and ``"test_h2"`` are the first and second
        halves of each test document (document-completion evaluation); ``"all"``
        stacks train, validation and test.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_documents, 3072), dtype int64
            Word counts (11,214 / 100 / 7,531 documents for train / validation /
            test).
        feature_names : ndarray of shape (3072,), dtype object
            Vocabulary in column order.
        subset : str
            The requested subset.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    FileNotFoundError
        If a corpus file is missing; the message names the expected path.

    Examples
    --------
    >>> from sktopics.datasets import load_20ng_etm
    >>> train = load_20ng_etm("/path/to/data")  # doctest: +SKIP
    >>> h1 = load_20ng_etm("/path/to/data", subset="test_h1")  # doctest: +SKIP
    >>> train.data.shape, h1.data.shape  # doctest: +SKIP
    ((11214, 3072), (7531, 3072))
    """
    _check_subset(subset, tuple(_ETM_SPLITS) + ("all",))
    folder = get_data_home(data_home) / "20ng_etm"
    with open(_require(folder / "vocab.pkl"), "rb") as fh:
        vocab = _ListOfStrUnpickler(fh).load()
    feature_names = np.asarray([str(w) for w in vocab], dtype=object)
    names = ("train", "validation", "test") if subset == "all" else (subset,)
    blocks = [_load_etm_split(folder, _ETM_SPLITS[s], feature_names.size) for s in names]
    X = blocks[0] if len(blocks) == 1 else _as_counts(sp.vstack(blocks, format="csr"))
    return Bunch(data=X, feature_names=feature_names, subset=subset, DESCR=_ETM_DESCR)


# --------------------------------------------------------------------------- NYT
_NYT_DESCR = """\
New York Times articles 2012-2022, the TopMost tutorial set (Wu et al., ACL 2024
demo; BobXWu/TopMost, Apache-2.0): 10,000-word vocabulary, 8,254 train and 918 test
documents (1,447,992 / 160,048 tokens). target = news section (12 classes, names in
target_names); year = publication year (2012..2022). Read from
nyt_topmost/{train,test}_bow.npz (scipy.sparse.save_npz files), vocab.txt,
{train,test}_labels.txt, label2id.txt, {train,test}_times.txt and time2id.txt.
"""


def _read_mapping(path):
    """A ``{name: id}`` dict written as JSON or as a Python literal."""
    text = _require(path).read_text(encoding="utf-8")
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError:
        mapping = ast.literal_eval(text.strip())
    names = [None] * len(mapping)
    for name, idx in mapping.items():
        names[int(idx)] = str(name)
    return names


def load_nyt(data_home=None, *, subset="train"):
    """Load the New York Times corpus of the TopMost toolkit.

    Read from ``<data_home>/nyt_topmost/``; nothing is downloaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder containing ``nyt_topmost/``; defaults to ``$SKTOPICS_DATA``.
    subset : {"train", "test", "all"}, default="train"
        TopMost's split; ``"all"`` stacks train then test.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_documents, 10000), dtype int64
            Word counts (8,254 train / 918 test documents).
        target : ndarray of shape (n_documents,), dtype int64
            News section, an index into ``target_names``.
        target_names : list of str
            The 12 sections (``"arts"``, ``"business"``, ..., ``"world"``).
        year : ndarray of shape (n_documents,), dtype int64
            Publication year (2012 to 2022).
        feature_names : ndarray of shape (10000,), dtype object
            Vocabulary in column order.
        subset : str
            The requested subset.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    FileNotFoundError
        If a corpus file is missing; the message names the expected path.

    Examples
    --------
    >>> from sktopics.datasets import load_nyt
    >>> nyt = load_nyt("/path/to/data", subset="test")  # doctest: +SKIP
    >>> nyt.data.shape, nyt.target_names[:2]  # doctest: +SKIP
    ((918, 10000), ['arts', 'business'])
    """
    _check_subset(subset, ("train", "test", "all"))
    folder = get_data_home(data_home) / "nyt_topmost"
    feature_names = _read_words(folder / "vocab.txt")
    target_names = _read_mapping(folder / "label2id.txt")
    years = np.asarray([int(y) for y in _read_mapping(folder / "time2id.txt")], dtype=np.int64)
    blocks, targets, times = [], [], []
    for s in ("train", "test") if subset == "all" else (subset,):
        blocks.append(sp.load_npz(_require(folder / f"{s}_bow.npz")))
        targets.append(np.loadtxt(_require(folder / f"{s}_labels.txt"), dtype=np.int64, ndmin=1))
        times.append(np.loadtxt(_require(folder / f"{s}_times.txt"), dtype=np.int64, ndmin=1))
        if not blocks[-1].shape[0] == targets[-1].size == times[-1].size:
            raise ValueError(f"nyt_topmost {s}: bag-of-words and label files disagree.")
    X = _as_counts(sp.vstack(blocks, format="csr"))
    return Bunch(
        data=X,
        target=np.concatenate(targets),
        target_names=target_names,
        year=years[np.concatenate(times)],
        feature_names=feature_names,
        subset=subset,
        DESCR=_NYT_DESCR,
    )


# --------------------------------------------------------------------------- NIPS
_NIPS_DESCR = """\
UCI "Bag of Words" NIPS papers (1,500 full papers, NIPS 1-12), restricted to the
7,605 words whose total count exceeds 20 (alphabetical, UCI order) and split at
random 90/10 with R's set.seed(0), as in giuseppedib/LDA: 1,350 train and 150 test
documents (1,683,117 / 187,589 tokens). No labels. uci_word_index maps each column
to its 0-based line in UCI's vocab.nips.txt. Read from
nips_uci_giuseppedib/nips_uci_subset.npz and vocab.txt. UCI data: CC BY 4.0.
"""


def load_nips(data_home=None, *, subset="train"):
    """Load the frequency-filtered UCI NIPS bag-of-words.

    Read from ``<data_home>/nips_uci_giuseppedib/`` (``nips_uci_subset.npz``,
    plain CSR arrays ``<split>_data/_indices/_indptr/_shape`` plus
    ``uci_word_index``, and ``vocab.txt``); nothing is downloaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder containing ``nips_uci_giuseppedib/``; defaults to
        ``$SKTOPICS_DATA``.
    subset : {"train", "test", "all"}, default="train"
        The random 90/10 split; ``"all"`` stacks train then test.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_documents, 7605), dtype int64
            Word counts (1,350 train / 150 test documents).
        feature_names : ndarray of shape (7605,), dtype object
            Vocabulary in column order.
        uci_word_index : ndarray of shape (7605,), dtype int64
            0-based line of each column's word in UCI's ``vocab.nips.txt``.
        subset : str
            The requested subset.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    FileNotFoundError
        If a corpus file is missing; the message names the expected path.

    Examples
    --------
    >>> from sktopics.datasets import load_nips
    >>> nips = load_nips("/path/to/data", subset="test")  # doctest: +SKIP
    >>> nips.data.shape  # doctest: +SKIP
    (150, 7605)
    """
    _check_subset(subset, ("train", "test", "all"))
    folder = get_data_home(data_home) / "nips_uci_giuseppedib"
    npz = _require(folder / "nips_uci_subset.npz")
    feature_names = _read_words(folder / "vocab.txt")
    with np.load(npz, allow_pickle=False) as z:
        splits = ("train", "test") if subset == "all" else (subset,)
        blocks = [_csr_from_arrays(z, s) for s in splits]
        uci_word_index = z["uci_word_index"].astype(np.int64)
    X = _as_counts(sp.vstack(blocks, format="csr"))
    return Bunch(
        data=X,
        feature_names=feature_names,
        uci_word_index=uci_word_index,
        subset=subset,
        DESCR=_NIPS_DESCR,
    )


# --------------------------------------------------------------------------- OCTIS
_OCTIS_DESCR = """\
OCTIS preprocessed dataset {name} (MIND-Lab/OCTIS, preprocessed_datasets/{name}, MIT):
{n_docs:,} documents, {n_words:,}-word vocabulary, {n_labels} labels; OCTIS's
train / validation / test split ({split_sizes}). Tokenised, lemmatised and
stop-worded by OCTIS; counts built from corpus.tsv over vocabulary.txt.
OCTIS metadata: {info}
"""


def load_octis(name, data_home=None, *, subset="train"):
    """Load an OCTIS preprocessed dataset from its ``corpus.tsv``.

    Builds the document-term count matrix of ``<data_home>/octis_<name>/corpus.tsv``
    (lines ``text<TAB>split<TAB>label``, whitespace-tokenised) over the columns of
    ``vocabulary.txt``; labels follow ``metadata.json``. Nothing is downloaded.

    Parameters
    ----------
    name : {"BBC_News", "DBLP", "M10"}
        The OCTIS dataset. DBLP (54,595 paper titles, 4 labels) and M10 (8,355
        CiteSeer titles, 10 labels) are short-text corpora; BBC_News is the corpus
        also embedded as :func:`~sktopics.datasets.load_bbc_news`.
    data_home : str or path-like, default=None
        Folder containing ``octis_<name>/``; defaults to ``$SKTOPICS_DATA``.
    subset : {"train", "validation", "test", "all"}, default="train"
        OCTIS's split (its ``val`` is called ``"validation"``); ``"all"`` keeps
        every document in file order.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (n_documents, n_words), dtype int64
            Word counts.
        target : ndarray of shape (n_documents,), dtype int64
            Label of each document, an index into ``target_names``.
        target_names : list of str
            Label names from ``metadata.json``.
        feature_names : ndarray of shape (n_words,), dtype object
            Vocabulary in column order.
        split : ndarray of shape (n_documents,), dtype object
            ``"train"``, ``"validation"`` or ``"test"`` for each document.
        subset : str
            The requested subset.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    FileNotFoundError
        If a corpus file is missing; the message names the expected path.

    Examples
    --------
    >>> from sktopics.datasets import load_octis
    >>> m10 = load_octis("M10", "/path/to/data", subset="all")  # doctest: +SKIP
    >>> m10.data.shape, len(m10.target_names)  # doctest: +SKIP
    ((8355, 1696), 10)
    """
    if name not in _OCTIS_NAMES:
        raise ValueError(f"name must be one of {list(_OCTIS_NAMES)}; got {name!r}.")
    _check_subset(subset, _SPLIT_NAMES + ("all",))
    folder = get_data_home(data_home) / f"octis_{name}"
    corpus = _require(folder / "corpus.tsv")
    feature_names = _read_words(folder / "vocabulary.txt")
    meta = json.loads(_require(folder / "metadata.json").read_text(encoding="utf-8"))

    docs, splits, labels = [], [], []
    with open(corpus, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            fields = line.rstrip("\n").split("\t")
            if len(fields) != 3:
                raise ValueError(f"{corpus}:{lineno}: expected text<TAB>split<TAB>label.")
            text, part, label = fields
            if part not in _OCTIS_SPLITS:
                raise ValueError(f"{corpus}:{lineno}: unknown split {part!r}.")
            docs.append(text.split())
            splits.append(_OCTIS_SPLITS[part])
            labels.append(label)

    target_names = [str(x) for x in meta.get("labels") or sorted(set(labels))]
    label_index = {lab: i for i, lab in enumerate(target_names)}
    unknown = set(labels) - set(label_index)
    if unknown:
        raise ValueError(f"{corpus}: labels {sorted(unknown)} are not in metadata.json.")

    index = {w: i for i, w in enumerate(feature_names)}
    X = _csr_from_tokens(docs, index, str(corpus))
    target = np.asarray([label_index[lab] for lab in labels], dtype=np.int64)
    split = np.asarray(splits, dtype=object)
    sizes = [int(np.sum(split == s)) for s in _SPLIT_NAMES]
    descr = _OCTIS_DESCR.format(
        name=name,
        n_docs=X.shape[0],
        n_words=X.shape[1],
        n_labels=len(target_names),
        split_sizes=" / ".join(f"{n:,}" for n in sizes),
        info=json.dumps(meta.get("info", {}))[:500],
    )
    if subset != "all":
        mask = split == subset
        X, target, split = X[mask], target[mask], split[mask]
    return Bunch(
        data=X,
        target=target,
        target_names=target_names,
        feature_names=feature_names,
        split=split,
        subset=subset,
        DESCR=descr,
    )


# --------------------------------------------------------------------------- GoogleNews
_GNEWS_DESCR = """\
GoogleNews short texts as shipped with Contextualized Topic Models
(MilaNLProc/contextualized-topic-models, MIT): 11,108 lower-cased, stop-worded news
titles/snippets (69,229 tokens, 6.2 per document); vocabulary = the 8,110
whitespace-separated types, sorted. target = story-cluster id from
GoogleNews_LABEL.txt (152 clusters, ids 1..152 as in the file). No split.
"""


def load_googlenews(data_home=None):
    """Load the GoogleNews short-text corpus of the CTM repository.

    Documents are the lines of ``<data_home>/gnews_ctm/GoogleNews.txt``, split
    on whitespace; the vocabulary is every distinct token, sorted. Nothing is
    downloaded.

    Parameters
    ----------
    data_home : str or path-like, default=None
        Folder containing ``gnews_ctm/``; defaults to ``$SKTOPICS_DATA``.

    Returns
    -------
    data : :class:`~sklearn.utils.Bunch`
        data : scipy.sparse.csr_matrix of shape (11108, 8110), dtype int64
            Word counts.
        target : ndarray of shape (11108,), dtype int64
            Story-cluster id of each document, as written in
            ``GoogleNews_LABEL.txt`` (152 distinct ids, 1 to 152).
        feature_names : ndarray of shape (8110,), dtype object
            Sorted vocabulary in column order.
        DESCR : str
            Description of the corpus.

    Raises
    ------
    FileNotFoundError
        If a corpus file is missing; the message names the expected path.

    Examples
    --------
    >>> from sktopics.datasets import load_googlenews
    >>> gnews = load_googlenews("/path/to/data")  # doctest: +SKIP
    >>> gnews.data.shape  # doctest: +SKIP
    (11108, 8110)
    """
    folder = get_data_home(data_home) / "gnews_ctm"
    lines = _require(folder / "GoogleNews.txt").read_text(encoding="utf-8").splitlines()
    target = np.asarray(
        _require(folder / "GoogleNews_LABEL.txt").read_text(encoding="utf-8").split(),
        dtype=np.int64,
    )
    docs = [line.split() for line in lines]
    if len(docs) != target.size:
        raise ValueError(
            f"gnews_ctm: {len(docs)} documents but {target.size} labels."
        )
    vocab = sorted({w for doc in docs for w in doc})
    X = _csr_from_tokens(docs, {w: i for i, w in enumerate(vocab)}, "gnews_ctm/GoogleNews.txt")
    return Bunch(
        data=X,
        target=target,
        feature_names=np.asarray(vocab, dtype=object),
        DESCR=_GNEWS_DESCR,
    )
