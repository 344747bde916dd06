"""Tests of the LDAGibbs estimator: recovery, priors, determinism, API, bad input."""

import importlib.util

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.optimize import linear_sum_assignment
from sklearn.base import clone
from sklearn.exceptions import DataConversionWarning
from sklearn.utils._param_validation import InvalidParameterError

from sktopics import LDAGibbs, config_context
from sktopics.datasets import make_lda_corpus

from ._instances import TEST_DEVICE

FAST = dict(device=TEST_DEVICE, random_state=0)


def _match(true_phi, est_phi):
    """Hungarian matching on L1 distance; returns (perm, mean total variation)."""
    cost = np.abs(true_phi[:, None, :] - est_phi[None, :, :]).sum(-1)
    rows, cols = linear_sum_assignment(cost)
    return cols, 0.5 * cost[rows, cols].mean()


@pytest.fixture(scope="module")
def corpus():
    X, phi, theta = make_lda_corpus(n_samples=300, n_features=60, n_components=4,
                                    doc_topic_prior=0.2, topic_word_prior=0.05,
                                    doc_length=80, random_state=0)
    return X, phi, theta


@pytest.fixture(scope="module")
def fitted(corpus):
    X, _, _ = corpus
    return LDAGibbs(n_components=4, max_iter=150, burn_in=50, **FAST).fit(X)


@pytest.mark.parametrize("algorithm", ["parallel", "mh"])
def test_recovers_known_topics(corpus, algorithm):
    X, phi, theta = corpus
    model = LDAGibbs(n_components=4, max_iter=150, burn_in=50, algorithm=algorithm,
                     optimize_interval=None, doc_topic_prior=0.2, topic_word_prior=0.05,
                     **FAST).fit(X)
    perm, tv = _match(phi, model.components_)
    assert tv < 0.12, tv
    theta_hat = model.transform(X)[:, perm]
    assert np.abs(theta_hat - theta).sum(1).mean() / 2 < 0.15


def test_fitted_attributes(fitted, corpus):
    X, _, _ = corpus
    K, V = 4, X.shape[1]
    assert fitted.components_.shape == (K, V)
    np.testing.assert_allclose(fitted.components_.sum(1), 1.0)
    assert fitted.doc_topic_prior_.shape == (K,)
    assert np.all(fitted.doc_topic_prior_ > 0)
    assert fitted.topic_word_prior_ > 0
    assert fitted.n_iter_ == 150
    assert fitted.algorithm_ == "parallel"
    assert fitted.doc_topic_.shape == (X.shape[0], K)
    np.testing.assert_allclose(fitted.doc_topic_.sum(1), 1.0)
    # Trace every 10 sweeps; the joint likelihood increases from a random start.
    np.testing.assert_array_equal(fitted.log_likelihood_sweeps_, np.arange(10, 151, 10))
    trace = fitted.log_likelihood_trace_
    assert trace.shape == (15,) and np.all(np.isfinite(trace))
    assert trace[-1] > trace[0]
    view = fitted._generative_view()
    topic_word, alpha = view.token_mixture()
    np.testing.assert_array_equal(topic_word, fitted.components_)
    np.testing.assert_array_equal(alpha, fitted.doc_topic_prior_)


def test_transform_and_score(fitted, corpus):
    X, _, _ = corpus
    theta = fitted.transform(X[:20])
    assert theta.shape == (20, 4)
    np.testing.assert_allclose(theta.sum(1), 1.0)
    # Deterministic for a fitted model, and independent of the batch it is in.
    np.testing.assert_array_equal(theta, fitted.transform(X[:20]))
    # Empty documents get the prior mean.
    X_empty = sp.csr_matrix((2, X.shape[1]))
    alpha = fitted.doc_topic_prior_
    np.testing.assert_allclose(fitted.transform(X_empty), np.tile(alpha / alpha.sum(), (2, 1)))
    # float32 input keeps its dtype.
    assert fitted.transform(X[:3].astype(np.float32)).dtype == np.float32
    score = fitted.score(X)
    assert np.isfinite(score) and score < 0
    assert score == fitted.score(X)
    assert fitted.perplexity(X) == pytest.approx(np.exp(-score))
    with pytest.raises(ValueError, match="at least one token"):
        fitted.score(X_empty)


@pytest.mark.slow
def test_learns_asymmetric_alpha():
    alpha_true = np.array([0.8, 0.4, 0.2, 0.1])
    X, phi, _ = make_lda_corpus(n_samples=1500, n_features=100, n_components=4,
                                doc_topic_prior=alpha_true, topic_word_prior=0.05,
                                doc_length=100, random_state=1)
    model = LDAGibbs(n_components=4, max_iter=200, burn_in=20, optimize_interval=10,
                     doc_topic_prior=0.5, **FAST).fit(X)
    perm, tv = _match(phi, model.components_)
    assert tv < 0.1
    np.testing.assert_allclose(model.doc_topic_prior_[perm], alpha_true, rtol=0.3)
    assert model.topic_word_prior_ == pytest.approx(0.05, rel=0.5)


def test_alpha_optimisation_moves_towards_asymmetric_alpha():
    """Fast version: the learned alpha ranks topics as the truth does."""
    alpha_true = np.array([0.8, 0.3, 0.1])
    X, phi, _ = make_lda_corpus(n_samples=500, n_features=80, n_components=3,
                                doc_topic_prior=alpha_true, topic_word_prior=0.05,
                                doc_length=80, random_state=2)
    # About one chain in five (26 of 120 seeds) ends in a local optimum that does not recover
    # the rare topic, always at a lower joint likelihood (at most -103,587 against at
    # least -103,502): keep the likeliest of five chains, as a user would.
    chains = [LDAGibbs(n_components=3, max_iter=60, burn_in=10, optimize_interval=10,
                       doc_topic_prior=0.3, **{**FAST, "random_state": seed}).fit(X)
              for seed in range(5)]
    model = max(chains, key=lambda m: m.log_likelihood_trace_[-1])
    perm, _ = _match(phi, model.components_)
    learned = model.doc_topic_prior_[perm]
    assert np.all(np.diff(learned) < 0), learned
    np.testing.assert_allclose(learned, alpha_true, rtol=0.25)


def test_same_seed_identical_and_thread_count_independent(corpus):
    X, _, _ = corpus
    params = dict(n_components=4, max_iter=20, n_kept_samples=2, sample_interval=5, **FAST)
    assert torch.get_num_threads() == 1  # the suite's setting: a and b run on one thread
    for algorithm in ("parallel", "mh"):
        a = LDAGibbs(algorithm=algorithm, **params).fit(X)
        b = LDAGibbs(algorithm=algorithm, **params).fit(X)
        np.testing.assert_array_equal(a.components_, b.components_)
        np.testing.assert_array_equal(a.log_likelihood_trace_, b.log_likelihood_trace_)
        c = LDAGibbs(algorithm=algorithm, n_jobs=2, **params).fit(X)  # a and b: one thread
        theta_c = c.transform(X[:30])
        np.testing.assert_array_equal(a.components_, c.components_)
        np.testing.assert_array_equal(a.doc_topic_prior_, c.doc_topic_prior_)
        np.testing.assert_array_equal(a.transform(X[:30]), theta_c)
    other = LDAGibbs(**{**params, "random_state": 1}).fit(X)
    assert not np.array_equal(other.components_, a.components_)


def test_global_rng_untouched(corpus):
    X, _, _ = corpus
    state = torch.random.get_rng_state()
    np_state = np.random.get_state()[1].copy()
    model = LDAGibbs(n_components=4, max_iter=5, **FAST).fit(X)
    model.transform(X[:5])
    assert torch.equal(state, torch.random.get_rng_state())
    np.testing.assert_array_equal(np_state, np.random.get_state()[1])


def test_sequential_algorithm_end_to_end():
    X, phi, _ = make_lda_corpus(n_samples=30, n_features=20, n_components=2,
                                doc_length=15, random_state=3)
    model = LDAGibbs(n_components=2, max_iter=30, algorithm="sequential", **FAST).fit(X)
    assert model.algorithm_ == "sequential"
    np.testing.assert_allclose(model.components_.sum(1), 1.0)
    model2 = LDAGibbs(n_components=2, max_iter=30, algorithm="sequential", **FAST).fit(X)
    np.testing.assert_array_equal(model.components_, model2.components_)


def test_auto_algorithm():
    X, _, _ = make_lda_corpus(n_samples=20, n_features=30, n_components=3, random_state=0)
    assert LDAGibbs(n_components=3, max_iter=2, **FAST).fit(X).algorithm_ == "parallel"
    wide = LDAGibbs(n_components=600, max_iter=2, **FAST).fit(X)
    # At this K the compiled CPU kernels take the sparse sampler, the fused kernel (a GPU
    # with Triton) the parallel sweep; torch operations take MH.
    fused = wide.device_.type == "cuda" and importlib.util.find_spec("triton") is not None
    cpu = wide.device_.type == "cpu"
    assert wide.algorithm_ == ("sparse" if cpu else "parallel" if fused else "mh")
    with config_context(cpu_kernels="torch"):
        eager = LDAGibbs(n_components=600, max_iter=2, **FAST).fit(X)
    assert eager.algorithm_ == ("parallel" if fused else "mh")


def test_auto_switches_to_mh_when_the_fused_kernel_fails(monkeypatch):
    """At a K where "auto" takes the parallel sweep only for the fused kernel, a kernel
    that fails during the fit (a launch error: the sweep then ran eagerly) hands the
    remaining sweeps to Metropolis-Hastings."""
    from sktopics._gibbs import _lda_gibbs

    X, _, _ = make_lda_corpus(n_samples=20, n_features=30, n_components=3, random_state=0)
    failed, used = [], []
    monkeypatch.setattr(_lda_gibbs, "fused_dense_available", lambda device, k: not failed)
    monkeypatch.setattr(_lda_gibbs, "compiled_path", lambda device, kernel=None: False)
    real_parallel, real_mh = _lda_gibbs.parallel_sweep, _lda_gibbs.mh_sweep

    def parallel(*args):
        used.append("parallel")
        failed.append(True)
        return real_parallel(*args)

    def mh(*args):
        used.append("mh")
        return real_mh(*args)

    monkeypatch.setattr(_lda_gibbs, "parallel_sweep", parallel)
    monkeypatch.setattr(_lda_gibbs, "mh_sweep", mh)
    model = LDAGibbs(n_components=600, max_iter=4, device="cpu", random_state=0).fit(X)
    assert used == ["parallel", "mh", "mh", "mh"] and model.algorithm_ == "mh"
    used.clear()
    failed.clear()
    LDAGibbs(n_components=600, max_iter=2, algorithm="parallel", device="cpu").fit(X)
    assert used == ["parallel", "parallel"]  # asked for by name: kept


def test_default_priors():
    X, _, _ = make_lda_corpus(n_samples=20, n_features=30, n_components=3, random_state=0)
    model = LDAGibbs(n_components=4, max_iter=3, optimize_interval=None, **FAST).fit(X)
    np.testing.assert_allclose(model.doc_topic_prior_, np.full(4, 5.0 / 4))
    assert model.topic_word_prior_ == 0.01
    model = LDAGibbs(n_components=3, max_iter=3, optimize_interval=None,
                     doc_topic_prior=[0.1, 0.2, 0.3], topic_word_prior=0.1, **FAST).fit(X)
    np.testing.assert_allclose(model.doc_topic_prior_, [0.1, 0.2, 0.3])
    assert model.topic_word_prior_ == 0.1


def test_warm_start_and_partial_fit(corpus):
    X, _, _ = corpus
    model = LDAGibbs(n_components=4, max_iter=10, warm_start=True, **FAST).fit(X)
    trace = model.log_likelihood_trace_.copy()
    model.fit(X)
    assert model.n_iter_ == 20
    assert model.log_likelihood_trace_.shape == (2,)
    assert model.log_likelihood_trace_[0] == trace[0]
    # Continuing the chain keeps improving over a cold start of the same length.
    cold = LDAGibbs(n_components=4, max_iter=10, **FAST).fit(X)
    assert model.log_likelihood_trace_[-1] > cold.log_likelihood_trace_[-1]
    # partial_fit runs one sweep per call and continues the chain, also on
    # another corpus.
    pf = LDAGibbs(n_components=4, max_iter=5, **FAST)
    for _ in range(3):
        pf.partial_fit(X)
    assert pf.n_iter_ == 3
    same = LDAGibbs(n_components=4, max_iter=3, **FAST).fit(X)
    np.testing.assert_array_equal(pf.log_likelihood_trace_[-1:], same.log_likelihood_trace_[-1:])
    pf.partial_fit(X[150:])
    assert pf.n_iter_ == 4
    np.testing.assert_allclose(pf.components_.sum(1), 1.0)


def test_sampling_schedule_and_snapshots(corpus):
    X, _, _ = corpus
    model = LDAGibbs(n_components=4, max_iter=30, burn_in=5, n_kept_samples=3, sample_interval=5,
                     snapshot_interval=10, **FAST)
    assert model._sample_sweeps(0, 30) == {20, 25, 30}
    model.fit(X)
    assert [s[0] for s in model.snapshots_] == [10, 20, 30]
    assert model.snapshots_[0][1].shape == (4, X.shape[1])
    # Runs shorter than burn-in still average the final state.
    short = LDAGibbs(n_components=4, max_iter=3, burn_in=50, n_kept_samples=5)
    assert short._sample_sweeps(0, 3) == {3}


def test_verbose_prints(corpus, capsys):
    X, _, _ = corpus
    LDAGibbs(n_components=4, max_iter=4, evaluate_every=2, verbose=1, **FAST).fit(X)
    out = capsys.readouterr().out
    assert out.count("[LDAGibbs] sweep") == 2
    assert "tokens/s" in out


def test_clone_and_pickle_round_trip(fitted, corpus):
    import pickle

    X, _, _ = corpus
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.transform(X[:5]), fitted.transform(X[:5]))
    assert clone(fitted).get_params() == fitted.get_params()


def test_bad_input():
    X, _, _ = make_lda_corpus(n_samples=10, n_features=8, n_components=2, random_state=0)
    dense = X.toarray().astype(float)
    with pytest.raises(ValueError, match="Negative"):
        LDAGibbs(n_components=2, max_iter=2, **FAST).fit(-dense)
    with pytest.warns(DataConversionWarning, match="rounded"):
        LDAGibbs(n_components=2, max_iter=2, **FAST).fit(dense + 0.3)
    with pytest.raises(ValueError, match="doc_topic_prior"):
        LDAGibbs(n_components=3, max_iter=2, doc_topic_prior=[0.1, 0.2], **FAST).fit(X)
    with pytest.raises(InvalidParameterError):
        LDAGibbs(n_components=2, algorithm="vb").fit(X)
    with pytest.raises(InvalidParameterError):
        LDAGibbs(n_components=2, topic_word_prior=-1.0).fit(X)
    with pytest.raises(ValueError):
        LDAGibbs(n_components=2, max_iter=2, **FAST).fit(dense[:1])
    with pytest.raises(ValueError):
        LDAGibbs(n_components=2, max_iter=2, **FAST).fit(np.full_like(dense, np.nan))
    model = LDAGibbs(n_components=2, max_iter=2, **FAST).fit(X)
    with pytest.raises(ValueError, match="features"):
        model.transform(dense[:, :5])


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the CPU-only error message")
def test_cuda_requested_without_cuda():
    X, _, _ = make_lda_corpus(n_samples=10, n_features=8, n_components=2, random_state=0)
    with pytest.raises(ValueError, match="CUDA is not available"):
        LDAGibbs(n_components=2, max_iter=2, device="cuda").fit(X)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("algorithm", ["parallel", "mh"])
def test_cuda_fit_matches_quality_and_is_deterministic(corpus, algorithm):
    X, phi, _ = corpus
    params = dict(n_components=4, max_iter=150, burn_in=50, algorithm=algorithm,
                  random_state=0)
    a = LDAGibbs(device="cuda", **params).fit(X)
    b = LDAGibbs(device="cuda", **params).fit(X)
    np.testing.assert_array_equal(a.components_, b.components_)
    assert a.device_.type == "cuda"
    assert isinstance(a.components_, np.ndarray)
    _, tv = _match(phi, a.components_)
    assert tv < 0.12
    np.testing.assert_allclose(a.transform(X[:5]).sum(1), 1.0, rtol=1e-6)


def test_the_training_curve_changes_where_prior_learning_starts(corpus):
    """With the same seed, learning the priors leaves the chain as it is until the first
    update (the first multiple of optimize_interval after burn_in): the curve's change
    there is the priors moving, which the training-curve display marks."""
    X = corpus[0]
    params = dict(n_components=4, max_iter=45, burn_in=20, evaluate_every=1, random_state=0,
                  device=TEST_DEVICE)
    fixed = LDAGibbs(optimize_interval=None, **params).fit(X)
    learned = LDAGibbs(optimize_interval=10, **params).fit(X)
    first_update = 30
    before = learned.log_likelihood_sweeps_ < first_update
    np.testing.assert_array_equal(learned.log_likelihood_trace_[before],
                                  fixed.log_likelihood_trace_[before])
    at = learned.log_likelihood_sweeps_ == first_update
    assert learned.log_likelihood_trace_[at] != fixed.log_likelihood_trace_[at]
    assert learned.topic_word_prior_ != fixed.topic_word_prior_


class _TwoRanks:
    """A stand-in for a two-rank group, seen from one rank: the other rank's values are
    given, sums add them, and same_everywhere refuses a difference as the real one does."""

    world_size = 2

    def __init__(self, other):
        self.other = other

    def sum(self, value):
        return value + self.other["parallel"]

    def same_everywhere(self, what, value):
        if value != self.other["algorithm"]:
            raise ValueError(f"Data-parallel input refused: {what} differs on rank 1")


@pytest.mark.parametrize("here, there, agreed", [
    ("parallel", "parallel", "parallel"),
    ("parallel", "mh", "mh"),  # the other rank has no kernel of its own for the dense sweep
    ("mh", "parallel", "mh"),
])
def test_ranks_agree_on_the_sampler_auto_picks(here, there, agreed):
    from sktopics._gibbs._lda_gibbs import _agreed_algorithm

    other = {"parallel": int(there == "parallel"), "algorithm": agreed}
    assert _agreed_algorithm(here, "auto", _TwoRanks(other)) == agreed


def test_ranks_refuse_different_explicit_samplers():
    from sktopics._gibbs._lda_gibbs import _agreed_algorithm

    with pytest.raises(ValueError, match="sampler"):
        _agreed_algorithm("parallel", "parallel", _TwoRanks({"parallel": 0, "algorithm": "mh"}))
