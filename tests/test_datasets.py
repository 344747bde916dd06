"""Tests for sktopics.datasets: embedded, local and synthetic corpora."""

import collections
import os
import socket
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from scipy import stats

import sktopics.datasets as ds
from sktopics.datasets import (
    _synthetic,
    get_data_home,
    load_20news_avitm,
    load_20ng_etm,
    load_bbc_news,
    load_googlenews,
    load_nips,
    load_nyt,
    load_octis,
    make_lda_corpus,
)


def _shared_data():
    env = os.environ.get("SKTOPICS_DATA")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "data"


DATA = _shared_data()


def _data_folder(name):
    """The corpus folder ``name`` under the shared data, or skip the test."""
    folder = DATA / name
    if not folder.is_dir():
        pytest.skip(f"local corpus folder {folder} not available")
    return DATA


def _check_counts(X, n_features=None):
    assert sp.isspmatrix_csr(X)
    assert X.dtype == np.int64
    assert X.has_sorted_indices
    assert X.data.size == 0 or X.data.min() >= 1  # positive integers, no stored zeros
    if n_features is not None:
        assert X.shape[1] == n_features


def _same_csr(A, B):
    return A.shape == B.shape and (A != B).nnz == 0


# --------------------------------------------------------------------------- embedded


BBC_SIZES = {"train": 1556, "validation": 334, "test": 335, "all": 2225}
BBC_NAMES = ["business", "entertainment", "politics", "sport", "tech"]


def test_public_api():
    assert sorted(ds.__all__) == sorted(
        [
            "ShardedCorpus",
            "get_data_home",
            "load_20news_avitm",
            "load_20ng_etm",
            "load_bbc_news",
            "load_googlenews",
            "load_nips",
            "load_nyt",
            "load_octis",
            "make_lda_corpus",
            "make_pam_corpus",
        ]
    )
    for name in ds.__all__:
        assert callable(getattr(ds, name))


@pytest.mark.parametrize("subset", list(BBC_SIZES))
def test_bbc_news_shapes(subset):
    bunch = load_bbc_news(subset=subset)
    X = bunch.data
    _check_counts(X, n_features=2949)
    assert X.shape[0] == BBC_SIZES[subset]
    assert bunch.target.shape == (X.shape[0],)
    assert bunch.target.dtype.kind == "i"
    assert bunch.feature_names.shape == (2949,)
    assert all(isinstance(w, str) for w in bunch.feature_names[:20])
    assert bunch.subset == subset
    assert np.all(np.asarray(X.sum(axis=1)).ravel() >= 5)  # OCTIS dropped docs < 5 words
    if subset != "all":
        assert set(bunch.split) == {subset}


def test_bbc_news_totals_and_labels():
    bunch = load_bbc_news(subset="all")
    assert bunch.data.nnz == 182_484
    assert bunch.data.sum() == 267_259
    assert bunch.data.max() == 81
    assert bunch.target_names == BBC_NAMES
    assert bunch.target.min() == 0 and bunch.target.max() == len(BBC_NAMES) - 1
    counts = collections.Counter(bunch.target_names[t] for t in bunch.target)
    assert counts == {
        "business": 510, "entertainment": 386, "politics": 417, "sport": 511, "tech": 401
    }
    assert len(set(bunch.feature_names)) == 2949
    assert "Greene" in bunch.DESCR and "OCTIS" in bunch.DESCR


def test_bbc_news_subsets_partition_all():
    full = load_bbc_news(subset="all")
    seen = np.zeros(full.data.shape[0], dtype=int)
    for subset in ("train", "validation", "test"):
        part = load_bbc_news(subset=subset)
        mask = full.split == subset
        seen += mask
        assert _same_csr(part.data, full.data[mask])
        np.testing.assert_array_equal(part.target, full.target[mask])
        np.testing.assert_array_equal(part.feature_names, full.feature_names)
    np.testing.assert_array_equal(seen, 1)  # every document in exactly one subset
    # OCTIS's split is contiguous: train, then validation, then test.
    assert list(dict.fromkeys(full.split)) == ["train", "validation", "test"]


def test_bbc_news_return_X_y():
    X, y = load_bbc_news(subset="validation", return_X_y=True)
    bunch = load_bbc_news(subset="validation")
    assert _same_csr(X, bunch.data)
    np.testing.assert_array_equal(y, bunch.target)


def test_bbc_news_fresh_arrays():
    first = load_bbc_news(subset="all")
    X0 = first.data.copy()
    first.data.data[:] = 0
    first.data.indices[:] = 0
    first.target[:] = 99
    first.feature_names[:] = "x"
    first.target_names[0] = "changed"
    first.split[:] = "x"
    second = load_bbc_news(subset="all")
    assert _same_csr(second.data, X0)
    assert second.target.max() == 4
    assert second.feature_names[0] != "x"
    assert second.target_names == BBC_NAMES
    assert set(second.split) == {"train", "validation", "test"}
    X, y = load_bbc_news(return_X_y=True)
    X.data[:] = -1
    y[:] = -1
    X2, y2 = load_bbc_news(return_X_y=True)
    assert X2.data.min() >= 1 and y2.min() >= 0


def test_bbc_news_bad_subset():
    with pytest.raises(ValueError, match="subset"):
        load_bbc_news(subset="val")


def test_bbc_news_never_touches_network(monkeypatch):
    def no_socket(*args, **kwargs):
        raise AssertionError("sktopics.datasets tried to open a socket")

    monkeypatch.setattr(socket, "socket", no_socket)
    monkeypatch.setattr(socket, "create_connection", no_socket)
    assert load_bbc_news(subset="test").data.shape == (335, 2949)


def test_embedded_files_small_and_documented():
    data = resources.files("sktopics.datasets").joinpath("data")
    npz = data.joinpath("bbc_news.npz")
    assert len(npz.read_bytes()) < 2 * 1024 * 1024
    provenance = data.joinpath("PROVENANCE.txt").read_text(encoding="utf-8")
    commit = "8f9a0ac5a12e3b72ecd77dcba4f181c77e4595f1"
    for needle in ("MIND-Lab/OCTIS", "MIT License", "Greene", commit):
        assert needle in provenance


def test_bbc_news_matches_octis_source():
    data_home = _data_folder("octis_BBC_News")
    embedded = load_bbc_news(subset="all")
    local = load_octis("BBC_News", data_home, subset="all")
    assert _same_csr(embedded.data, local.data)
    np.testing.assert_array_equal(embedded.target, local.target)
    np.testing.assert_array_equal(embedded.split, local.split)
    np.testing.assert_array_equal(embedded.feature_names, local.feature_names)
    assert embedded.target_names == local.target_names
    # and a document against its raw text
    with open(data_home / "octis_BBC_News" / "corpus.tsv", encoding="utf-8") as fh:
        text = fh.readline().split("\t")[0]
    row = embedded.data[0]
    got = {embedded.feature_names[j]: c for j, c in zip(row.indices, row.data)}
    assert got == collections.Counter(text.split())


# --------------------------------------------------------------------------- data_home


def test_data_home_required(monkeypatch):
    monkeypatch.delenv("SKTOPICS_DATA", raising=False)
    with pytest.raises(ValueError, match="data_home"):
        load_nips()
    with pytest.raises(ValueError, match="SKTOPICS_DATA"):
        get_data_home()


def test_data_home_from_environment(monkeypatch):
    _data_folder("nips_uci_giuseppedib")
    monkeypatch.setenv("SKTOPICS_DATA", str(DATA))
    assert get_data_home() == DATA
    assert load_nips(subset="test").data.shape == (150, 7605)


def test_missing_folder_and_files(tmp_path):
    with pytest.raises(FileNotFoundError, match="not an existing folder"):
        load_nyt(tmp_path / "nowhere")
    loaders = [
        (load_20news_avitm, "20news_avitm"),
        (load_20ng_etm, "20ng_etm"),
        (load_nyt, "nyt_topmost"),
        (load_nips, "nips_uci_giuseppedib"),
        (lambda home: load_octis("M10", home), "octis_M10"),
        (load_googlenews, "gnews_ctm"),
    ]
    for loader, folder in loaders:
        with pytest.raises(FileNotFoundError) as info:
            loader(tmp_path)
        message = str(info.value)
        assert str(tmp_path / folder) in message
        assert "never downloads" in message


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="name"):
        load_octis("20NewsGroup", tmp_path)
    with pytest.raises(ValueError, match="subset"):
        load_20news_avitm(tmp_path, subset="validation")
    with pytest.raises(ValueError, match="subset"):
        load_20ng_etm(tmp_path, subset="valid")


# --------------------------------------------------------------------------- local corpora


@pytest.mark.parametrize(
    "subset, n_docs, tokens, nnz",
    [("train", 11_258, 991_493, 629_540), ("test", 7_487, 629_312, 410_358)],
)
def test_20news_avitm(subset, n_docs, tokens, nnz):
    home = _data_folder("20news_avitm")
    bunch = load_20news_avitm(home, subset=subset)
    _check_counts(bunch.data, n_features=1995)
    assert bunch.data.shape == (n_docs, 1995)
    assert bunch.data.sum() == tokens and bunch.data.nnz == nnz
    assert np.all(np.diff(bunch.data.indptr) > 0)
    assert bunch.feature_names.shape == (1995,) and bunch.feature_names[0] == "_eos_"
    assert bunch.data[:, 0].nnz == 0  # _eos_ never occurs
    kept = load_20news_avitm(home, subset=subset, drop_empty=False).data
    assert kept.shape[0] == n_docs + 1
    assert kept[-1].nnz == 0
    assert _same_csr(kept[:-1], bunch.data)


def test_20news_avitm_all():
    home = _data_folder("20news_avitm")
    X = load_20news_avitm(home, subset="all").data
    assert X.shape == (11_258 + 7_487, 1995)
    assert X.sum() == 991_493 + 629_312


def test_20ng_etm():
    home = _data_folder("20ng_etm")
    expected = {"train": (11_214, 919_850), "validation": (100, 8_334), "test": (7_531, 594_276)}
    for subset, (n_docs, tokens) in expected.items():
        bunch = load_20ng_etm(home, subset=subset)
        _check_counts(bunch.data, n_features=3072)
        assert bunch.data.shape[0] == n_docs and bunch.data.sum() == tokens
        assert bunch.feature_names.shape == (3072,)
    h1 = load_20ng_etm(home, subset="test_h1").data
    h2 = load_20ng_etm(home, subset="test_h2").data
    assert h1.sum() == 295_245 and h2.sum() == 299_031
    # the halves split each test document
    assert _same_csr(h1 + h2, load_20ng_etm(home, subset="test").data)
    assert load_20ng_etm(home, subset="all").data.shape == (18_845, 3072)


@pytest.mark.parametrize(
    "subset, n_docs, tokens", [("train", 8_254, 1_447_992), ("test", 918, 160_048)]
)
def test_nyt(subset, n_docs, tokens):
    home = _data_folder("nyt_topmost")
    bunch = load_nyt(home, subset=subset)
    _check_counts(bunch.data, n_features=10_000)
    assert bunch.data.shape == (n_docs, 10_000) and bunch.data.sum() == tokens
    assert bunch.feature_names.shape == (10_000,)
    assert len(bunch.target_names) == 12
    assert bunch.target_names[0] == "arts" and bunch.target_names[-1] == "world"
    assert bunch.target.shape == (n_docs,)
    assert 0 <= bunch.target.min() and bunch.target.max() <= 11
    assert bunch.year.shape == (n_docs,)
    assert 2012 <= bunch.year.min() and bunch.year.max() <= 2022


@pytest.mark.parametrize(
    "subset, n_docs, tokens", [("train", 1_350, 1_683_117), ("test", 150, 187_589)]
)
def test_nips(subset, n_docs, tokens):
    home = _data_folder("nips_uci_giuseppedib")
    bunch = load_nips(home, subset=subset)
    _check_counts(bunch.data, n_features=7_605)
    assert bunch.data.shape == (n_docs, 7_605) and bunch.data.sum() == tokens
    uci_vocab = (home / "nips_uci_giuseppedib" / "vocab.nips.txt").read_text().split()
    assert len(uci_vocab) == 12_419
    np.testing.assert_array_equal(
        np.asarray(uci_vocab, dtype=object)[bunch.uci_word_index], bunch.feature_names
    )


def test_nips_all_matches_uci_filter():
    home = _data_folder("nips_uci_giuseppedib")
    X = load_nips(home, subset="all").data
    assert X.shape == (1_500, 7_605)
    assert X.sum() == 1_870_706
    assert np.asarray(X.sum(axis=0)).min() > 20  # kept words have total count > 20


@pytest.mark.parametrize(
    "name, n_docs, n_words, tokens, n_labels, splits",
    [
        ("DBLP", 54_595, 1_513, 294_757, 4, (38_215, 8_190, 8_190)),
        ("M10", 8_355, 1_696, 49_385, 10, (5_847, 1_254, 1_254)),
    ],
)
def test_octis(name, n_docs, n_words, tokens, n_labels, splits):
    home = _data_folder(f"octis_{name}")
    full = load_octis(name, home, subset="all")
    _check_counts(full.data, n_features=n_words)
    assert full.data.shape == (n_docs, n_words) and full.data.sum() == tokens
    assert len(full.target_names) == n_labels
    assert set(np.unique(full.target)) == set(range(n_labels))
    assert name in full.DESCR
    for subset, size in zip(("train", "validation", "test"), splits):
        part = load_octis(name, home, subset=subset)
        assert part.data.shape == (size, n_words)
        assert _same_csr(part.data, full.data[full.split == subset])


def test_googlenews():
    home = _data_folder("gnews_ctm")
    bunch = load_googlenews(home)
    _check_counts(bunch.data, n_features=8_110)
    assert bunch.data.shape == (11_108, 8_110) and bunch.data.sum() == 69_229
    assert list(bunch.feature_names) == sorted(bunch.feature_names)
    assert bunch.target.shape == (11_108,)
    assert np.unique(bunch.target).size == 152
    first = (home / "gnews_ctm" / "GoogleNews.txt").read_text(encoding="utf-8").splitlines()[0]
    row = bunch.data[0]
    got = {bunch.feature_names[j]: c for j, c in zip(row.indices, row.data)}
    assert got == collections.Counter(first.split())


# --------------------------------------------------------------------------- synthetic


def test_make_lda_corpus_shapes():
    X, phi, theta = make_lda_corpus(n_samples=40, n_features=30, n_components=4, random_state=0)
    _check_counts(X, n_features=30)
    assert X.shape == (40, 30) and phi.shape == (4, 30) and theta.shape == (40, 4)
    np.testing.assert_allclose(phi.sum(axis=1), 1.0)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0)
    assert phi.min() >= 0 and theta.min() >= 0


def test_make_lda_corpus_reproducible():
    a = make_lda_corpus(random_state=7)
    b = make_lda_corpus(random_state=7)
    c = make_lda_corpus(random_state=8)
    assert _same_csr(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])
    np.testing.assert_array_equal(a[2], b[2])
    assert not np.array_equal(a[1], c[1])
    d = make_lda_corpus(random_state=np.random.RandomState(7))
    e = make_lda_corpus(random_state=np.random.RandomState(7))
    assert _same_csr(d[0], e[0])


def test_make_lda_corpus_doc_lengths():
    X, _, _ = make_lda_corpus(n_samples=2_000, doc_length=1, random_state=0)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert lengths.min() >= 1  # zero-length draws are redrawn
    X, _, _ = make_lda_corpus(n_samples=500, doc_length=(3, 9), random_state=0)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert lengths.min() >= 3 and lengths.max() <= 9
    assert set(lengths) == set(range(3, 10))  # inclusive range, all values hit
    X, _, _ = make_lda_corpus(n_samples=4_000, doc_length=50, random_state=0)
    lengths = np.asarray(X.sum(axis=1)).ravel()
    assert abs(lengths.mean() - 50) < 4 * np.sqrt(50 / 4_000)
    assert abs(lengths.var() - 50) < 5  # Poisson: variance = mean


@pytest.mark.parametrize("by_token", [False, True])
def test_make_lda_corpus_word_frequencies_match_model(by_token, monkeypatch):
    if by_token:  # force the token-level draw that large, sparse corpora use
        from sktopics.datasets import _synthetic

        monkeypatch.setattr(_synthetic, "_TOKEN_LEVEL_MIN_CELLS", 0)
        monkeypatch.setattr(_synthetic, "_TOKEN_LEVEL_SPARSITY", 0)
    n_docs, n_words, length = 200, 30, 20_000
    X, phi, theta = make_lda_corpus(
        n_samples=n_docs,
        n_features=n_words,
        n_components=4,
        doc_topic_prior=0.5,
        topic_word_prior=0.3,
        doc_length=(length, length),
        random_state=42,
    )
    p = theta @ phi
    freq = X.toarray() / length
    # per document: each frequency within ~8 standard errors (sd <= 0.5 / sqrt(L))
    assert np.abs(freq - p).max() < 8 * 0.5 / np.sqrt(length)
    # pooled over documents: Pearson chi-square goodness of fit of the word totals
    observed = np.asarray(X.sum(axis=0)).ravel()
    expected = length * p.sum(axis=0)
    chi2 = np.sum((observed - expected) ** 2 / expected)
    assert chi2 < stats.chi2.ppf(0.9999, df=n_words - 1)


def test_make_lda_corpus_priors():
    alpha = np.array([5.0, 1.0, 0.5])
    _, _, theta = make_lda_corpus(
        n_samples=20_000, n_features=5, n_components=3, doc_topic_prior=alpha, random_state=0
    )
    # Dirichlet mean alpha / sum(alpha); sd of each coordinate < 0.5 / sqrt(N)
    np.testing.assert_allclose(theta.mean(axis=0), alpha / alpha.sum(), atol=0.02)
    _, phi, _ = make_lda_corpus(
        n_features=200, n_components=3, topic_word_prior=0.001, random_state=0
    )
    assert np.all(np.isfinite(phi))
    np.testing.assert_allclose(phi.sum(axis=1), 1.0)


def test_make_lda_corpus_blocked_sampling_is_identical(monkeypatch):
    whole = make_lda_corpus(n_samples=300, n_features=50, random_state=3)
    monkeypatch.setattr(_synthetic, "_BLOCK_CELLS", 100)  # 2 documents per block
    blocked = make_lda_corpus(n_samples=300, n_features=50, random_state=3)
    assert _same_csr(whole[0], blocked[0])


@pytest.mark.parametrize(
    "kwargs",
    [
        {"n_samples": 0},
        {"n_features": 2.5},
        {"n_components": -1},
        {"doc_topic_prior": 0.0},
        {"doc_topic_prior": [0.1, 0.2]},
        {"topic_word_prior": -1.0},
        {"doc_length": 0},
        {"doc_length": (5, 2)},
        {"doc_length": (0, 3)},
        {"doc_length": "long"},
    ],
)
def test_make_lda_corpus_invalid(kwargs):
    with pytest.raises(ValueError):
        make_lda_corpus(**kwargs)
