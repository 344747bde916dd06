"""The SparseLDA sweep (``algorithm="sparse"``): its law against exact enumeration, its
partitions, its threads and its fallbacks."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.optimize import linear_sum_assignment
from scipy.special import gammaln

from sktopics import LDAGibbs, config_context
from sktopics._gibbs import _sweeps as sweeps
from sktopics._gibbs._state import GibbsCorpus, GibbsState
from sktopics._gibbs._sweeps import random_init, sparse_parts, sparse_sweep
from sktopics._kernels import _sparse as kernels
from sktopics._kernels._pool import split_by_weight
from sktopics.datasets import make_lda_corpus

from .test_gibbs_sampler import (
    ALPHA,
    BETA,
    X_TINY,
    K,
    _batch_means_se,
    _chain,
    _conditional,
    _exact_posterior,
)

pytestmark = pytest.mark.cpu  # the sparse sampler is a compiled CPU kernel


def _start(seed, background=None):
    corpus = GibbsCorpus(X_TINY, "cpu")
    return GibbsState(corpus, K, random_init(corpus, K, seed), background)


def _assert_counts_are_recounts(state):
    fresh = GibbsState(state.corpus, K, state.z.clone(), state.background)
    for a, b in ((state.n_dk, fresh.n_dk), (state.n_wk, fresh.n_wk), (state.n_k, fresh.n_k)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)


def _assert_law(counts, trace, configs, law):
    freq = counts / counts.sum()
    exact_marginal = (law[:, None] * (configs == 0)).sum(0)
    se = _batch_means_se(trace)
    assert np.all(np.abs(trace.mean(0) - exact_marginal) <= 4.5 * se + 5e-3)
    tv = 0.5 * np.abs(freq - law).sum()
    assert tv < 0.06, tv  # 32 states, 6000 correlated draws: sampling TV about 0.03


def test_one_partition_is_exact_collapsed_gibbs():
    """On a corpus small enough for one partition the sparse sweep is exact collapsed
    Gibbs: its stationary law is the enumerated posterior (all three buckets are
    large here: beta = 0.3 on three words)."""
    state = _start(7)
    assert sparse_parts(state.corpus.n_tokens) == 1
    configs, posterior = _exact_posterior()

    def sweep_fn(state, sweep):
        assert sparse_sweep(state, ALPHA, BETA, 7, sweep)

    counts, trace = _chain(state, sweep_fn, 6000)
    _assert_law(counts, trace, configs, posterior)
    _assert_counts_are_recounts(state)


def _adlda_stationary(corpus, n_parts):
    """Exact stationary law of the sweep with ``n_parts`` partitions: each partition
    draws its documents' tokens in turn (document-major order) given its own moves and
    the other partitions' tokens as they were at the start of the sweep."""
    configs, _ = _exact_posterior()
    doc, word = corpus.doc.numpy(), corpus.word.numpy()
    order = corpus.doc_perm.numpy()
    doc_start = corpus.doc_start.numpy()
    parts = [order[doc_start[a]:doc_start[b]]
             for a, b in split_by_weight(doc_start, n_parts)]
    assert len(parts) == n_parts
    n = len(configs)
    T = np.ones((n, n))
    for a, za in enumerate(configs):
        for b, zb in enumerate(configs):
            for tokens in parts:
                z = za.copy()
                for i in tokens:
                    T[a, b] *= _conditional(doc, word, z, i, corpus.n_docs,
                                            corpus.n_features)[zb[i]]
                    z[i] = zb[i]
    assert np.allclose(T.sum(1), 1.0)
    values, vectors = np.linalg.eig(T.T)
    pi = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    return configs, pi / pi.sum()


def test_several_partitions_are_ad_lda():
    """With a partition per document the sweep is AD-LDA: its stationary law is the one
    enumerated from the partitions' sequential draws on frozen counts, which is not
    the posterior."""
    state = _start(3)
    configs, adlda = _adlda_stationary(state.corpus, 2)
    _, posterior = _exact_posterior()
    assert 0.5 * np.abs(adlda - posterior).sum() > 0.1  # approximate, visibly so here

    def sweep_fn(state, sweep):
        assert sparse_sweep(state, ALPHA, BETA, 3, sweep, n_parts=2)

    counts, trace = _chain(state, sweep_fn, 6000)
    _assert_law(counts, trace, configs, adlda)
    assert 0.5 * np.abs(counts / counts.sum() - posterior).sum() > 0.05
    _assert_counts_are_recounts(state)


def _posterior_given_background(corpus, background):
    """``p(z | w, background)`` by enumeration: the word terms of the collapsed joint
    with the background's counts added, less those of the background alone."""
    doc, word = corpus.doc.numpy(), corpus.word.numpy()
    configs = np.array(list(itertools.product(range(K), repeat=corpus.n_tokens)))
    V = corpus.n_features
    logp = []
    for z in configs:
        n_dk = np.zeros((corpus.n_docs, K))
        n_wk = np.array(background, dtype=np.float64)
        np.add.at(n_dk, (doc, z), 1)
        np.add.at(n_wk, (word, z), 1)
        value = (gammaln(n_dk + ALPHA).sum() - gammaln(n_dk.sum(1) + ALPHA.sum()).sum()
                 + gammaln(n_wk + BETA).sum() - gammaln(n_wk.sum(0) + V * BETA).sum())
        logp.append(value)
    p = np.exp(np.array(logp) - max(logp))
    return configs, p / p.sum()


def test_one_partition_with_a_background_is_exact_gibbs_given_it():
    """With word-topic counts of other shards (``partial_fit``), the rows are built
    from the merged table: the chain's law is the posterior given the background."""
    background = np.array([[3, 0], [0, 2], [1, 4]], dtype=np.int32)
    state = _start(5, background)
    configs, posterior = _posterior_given_background(state.corpus, background)

    def sweep_fn(state, sweep):
        assert sparse_sweep(state, ALPHA, BETA, 5, sweep)

    counts, trace = _chain(state, sweep_fn, 6000)
    _assert_law(counts, trace, configs, posterior)
    _assert_counts_are_recounts(state)


def test_partition_rule_depends_on_the_corpus_only():
    size = sweeps.SPARSE_PART_TOKENS
    assert [sparse_parts(n) for n in (0, 5, size - 1, size, 2 * size + 7)] == [1, 1, 1, 1, 2]
    assert sparse_parts(10**9) == sweeps.SPARSE_MAX_PARTS
    assert sparse_parts(227_871) == 6  # BBC News (train and validation)


@pytest.fixture
def synthetic():
    return make_lda_corpus(n_samples=300, n_features=60, n_components=4, doc_length=80,
                           random_state=0)


def _topic_error(true_topics, components):
    """The largest L1 distance between a true topic and its matched fitted one."""
    cost = np.abs(true_topics[:, None, :] - components[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return cost[rows, cols].max()


def test_several_partitions_recover_known_topics_as_well_as_the_parallel_sweep(
        synthetic, monkeypatch):
    X, topic_word, _ = synthetic
    monkeypatch.setattr(sweeps, "SPARSE_PART_TOKENS", 4096)
    assert sparse_parts(int(X.sum())) == 5
    errors = {}
    for algorithm in ("sparse", "parallel"):
        model = LDAGibbs(n_components=4, max_iter=100, algorithm=algorithm,
                         random_state=0, device="cpu").fit(X)
        assert model.algorithm_ == algorithm
        errors[algorithm] = _topic_error(topic_word, model.components_)
    assert errors["sparse"] < 0.1, errors  # uniform topics: 1.8
    assert errors["sparse"] <= errors["parallel"] + 0.03, errors


def test_fits_are_bit_identical_at_any_n_jobs(synthetic, monkeypatch):
    X, _, _ = synthetic
    monkeypatch.setattr(sweeps, "SPARSE_PART_TOKENS", 2048)  # 11 partitions
    params = dict(n_components=6, max_iter=12, algorithm="sparse", random_state=0, device="cpu",
                  evaluate_every=3)
    fits = [LDAGibbs(n_jobs=n_jobs, **params).fit(X) for n_jobs in (1, 2, 3)]
    for model in fits[1:]:
        np.testing.assert_array_equal(model.components_, fits[0].components_)
        np.testing.assert_array_equal(model.doc_topic_, fits[0].doc_topic_)
        np.testing.assert_array_equal(model.log_likelihood_trace_,
                                      fits[0].log_likelihood_trace_)


def test_partial_fit_sweeps_each_shard_given_the_others(synthetic):
    X, topic_word, _ = synthetic
    shards = [X[:150], X[150:]]
    model = LDAGibbs(n_components=4, algorithm="sparse", random_state=0, device="cpu")
    for _ in range(40):
        for shard in shards:
            model.partial_fit(shard)
    assert model.algorithm_ == "sparse" and model.n_iter_ == 80
    assert _topic_error(topic_word, model.components_) < 0.15


@pytest.mark.filterwarnings("ignore:.*more topics than words")
def test_auto_takes_the_sparse_sweep_from_500_topics_with_the_compiled_kernels():
    X, _, _ = make_lda_corpus(n_samples=20, n_features=30, n_components=3, random_state=0)
    params = dict(max_iter=2, device="cpu", random_state=0)
    assert LDAGibbs(n_components=500, **params).fit(X).algorithm_ == "sparse"
    assert LDAGibbs(n_components=499, **params).fit(X).algorithm_ == "parallel"
    with config_context(cpu_kernels="torch"):
        assert LDAGibbs(n_components=500, **params).fit(X).algorithm_ == "mh"


def test_without_the_compiled_kernels_the_parallel_sweep_runs_with_a_warning(synthetic):
    X = synthetic[0][:60]
    params = dict(n_components=5, max_iter=4, random_state=0, optimize_interval=None,
                  device="cpu")
    with config_context(cpu_kernels="torch"):
        expected = LDAGibbs(algorithm="parallel", **params).fit(X)
        with pytest.warns(UserWarning, match="algorithm='sparse'.*cpu_kernels='torch'"):
            model = LDAGibbs(algorithm="sparse", **params).fit(X)
    assert model.algorithm_ == "parallel"
    np.testing.assert_array_equal(model.components_, expected.components_)


def test_a_failing_kernel_falls_back_to_the_parallel_sweep_with_one_warning(synthetic,
                                                                             monkeypatch):
    X = synthetic[0][:60]
    params = dict(n_components=5, max_iter=4, random_state=0, optimize_interval=None,
                  device="cpu")
    with config_context(cpu_kernels="torch"):
        expected = LDAGibbs(algorithm="parallel", **params).fit(X)

    def broken(*args):
        raise RuntimeError("no such instruction")

    monkeypatch.setattr(kernels, "sparse_draws", broken)
    with pytest.warns(RuntimeWarning, match="sparse sweep failed") as record:
        model = LDAGibbs(algorithm="sparse", **params).fit(X)
    assert sum("compiled CPU kernel" in str(w.message) for w in record) == 1
    assert model.algorithm_ == "parallel"
    # The failed sweep left no trace: the torch parallel sweep's chain from the start.
    np.testing.assert_array_equal(model.components_, expected.components_)


def test_asking_for_the_compiled_kernels_raises_what_failed(synthetic, monkeypatch):
    def broken(*args):
        raise RuntimeError("no such instruction")

    monkeypatch.setattr(kernels, "sparse_draws", broken)
    with config_context(cpu_kernels="compiled"):
        with pytest.raises(RuntimeError, match="no such instruction"):
            LDAGibbs(n_components=3, max_iter=2, algorithm="sparse",
                     random_state=0, device="cpu").fit(synthetic[0][:40])


def test_word_rows_from_the_tokens_are_those_of_the_counts():
    """The two ways of building the sorted rows (the tokens' topics, or a count table
    read whole when it holds a background) give the same rows."""
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(3.0, size=(40, 20)))
    corpus = GibbsCorpus(X, "cpu")
    n_topics = 50  # rows longer than the insertion sort's 32 entries
    z = rng.integers(0, 3 * n_topics // 2, corpus.n_tokens).clip(max=n_topics - 1)
    state = GibbsState(corpus, n_topics, torch.as_tensor(z, dtype=torch.int32))
    row_start = kernels.word_row_starts(state.word_totals, n_topics)
    rows = []
    for n_wk in (np.zeros((0, 0), np.int32), state.n_wk.numpy()):
        codes = np.full(row_start[-1], -1, np.int64)
        n_nonzero = np.empty(corpus.n_features, np.int32)
        kernels.build_word_rows(n_wk, corpus.word_start.numpy(), state.z.numpy(), n_topics,
                                row_start, codes, n_nonzero, 0, corpus.n_features)
        rows.append((codes, n_nonzero))
    np.testing.assert_array_equal(rows[0][1], rows[1][1])
    n_wk = state.n_wk.numpy()
    for w in range(corpus.n_features):
        a = row_start[w]
        row = rows[0][0][a:a + rows[0][1][w]]
        np.testing.assert_array_equal(row, rows[1][0][a:a + rows[1][1][w]])
        counts, topics = row >> 32, row & 0xFFFFFFFF
        assert np.all(np.diff(row) < 0)  # largest first
        np.testing.assert_array_equal(n_wk[w, topics], counts)
        assert n_wk[w].astype(bool).sum() == len(row)
    assert rows[0][1].max() > 32


def test_data_parallel_refuses_the_sparse_sweep(monkeypatch):
    from sktopics._gibbs import _lda_gibbs

    class _OneRank:  # a one-process group: what a fit asks of it before the refusal
        world_size, rank = 1, 0

        def sum(self, value):
            return value

        def sum_(self, tensor):
            return tensor

    monkeypatch.setattr(_lda_gibbs, "current_collective", lambda: _OneRank())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(ValueError, match="algorithm='sparse' runs in one process"):
            LDAGibbs(n_components=2, max_iter=2, algorithm="sparse",
                     random_state=0, device="cpu").fit(X_TINY)


def test_one_partition_is_exact_with_rows_of_several_topics():
    """Three topics and words repeated three times, so the sorted per-word rows hold
    several entries that move past each other, and topics leave the middle of a
    document's topic list: the chain's pair co-assignment and per-topic marginals match
    the enumerated posterior (asymmetric alpha, so the topics are not exchangeable)."""
    X = sp.csr_matrix(np.array([[3.0, 1.0, 0.0], [0.0, 2.0, 1.0]]))
    n_topics, alpha, beta = 3, np.array([0.3, 1.0, 2.0]), 0.2
    corpus = GibbsCorpus(X, "cpu")
    doc, word = corpus.doc.numpy(), corpus.word.numpy()
    n, n_words = corpus.n_tokens, X.shape[1]
    configs = np.array(list(itertools.product(range(n_topics), repeat=n)))

    def log_joint(z):
        n_dk = np.zeros((2, n_topics))
        n_wk = np.zeros((n_words, n_topics))
        np.add.at(n_dk, (doc, z), 1)
        np.add.at(n_wk, (word, z), 1)
        docs = (gammaln(n_dk + alpha).sum(1) - gammaln(n_dk.sum(1) + alpha.sum())).sum()
        topics = (gammaln(n_wk + beta).sum(0) - gammaln(n_wk.sum(0) + n_words * beta)).sum()
        return docs + topics

    logp = np.array([log_joint(z) for z in configs])
    law = np.exp(logp - logp.max())
    law /= law.sum()
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    exact = np.concatenate([
        [(law * (configs[:, i] == configs[:, j])).sum() for i, j in pairs],
        [(law * (configs[:, i] == k)).sum() for i in range(n) for k in range(n_topics)]])
    state = GibbsState(corpus, n_topics, random_init(corpus, n_topics, 3))
    trace = []
    for sweep in range(1, 8001):
        assert sparse_sweep(state, alpha, beta, 11, sweep, n_parts=1)
        z = state.z.numpy()
        trace.append(np.concatenate([[z[i] == z[j] for i, j in pairs],
                                     [z[i] == k for i in range(n) for k in range(n_topics)]]))
    trace = np.array(trace, dtype=np.float64)
    se = _batch_means_se(trace)
    assert np.all(np.abs(trace.mean(0) - exact) <= 4.5 * se + 5e-3)
    # the statistics tell topics apart: a sampler ignoring alpha's asymmetry fails
    assert np.ptp(exact[len(pairs):].reshape(n, n_topics).mean(0)) > 0.1
    fresh = GibbsState(corpus, n_topics, state.z.clone())
    for a, b in ((state.n_dk, fresh.n_dk), (state.n_wk, fresh.n_wk), (state.n_k, fresh.n_k)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
