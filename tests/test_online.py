"""Streaming, warm starts, interrupts and resumption.

``partial_fit`` over shards is one online fit over everything seen; a fit stopped by
Ctrl-C keeps the model of the work done and, continued with ``warm_start``, gives
what the uninterrupted fit gives; pickles record the version that wrote them.
"""

import pickle
import signal
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback

from sktopics import LDAGibbs, ProdLDA, config_context
from sktopics._gibbs import _lda_gibbs
from sktopics._gibbs._chain import ChainMemory
from sktopics._gibbs._state import GibbsCorpus, GibbsState
from sktopics._gibbs._sweeps import log_joint
from sktopics.datasets import make_lda_corpus
from sktopics.utils import InconsistentVersionWarning
from sktopics.utils._pickle import VERSION_KEY

from ._instances import TEST_DEVICE

FAST = dict(device=TEST_DEVICE, random_state=0)


@pytest.fixture(scope="module")
def shards():
    """800 documents in 4 shards; the first 20 words occur only in the first shard."""
    X, _, _ = make_lda_corpus(n_samples=800, n_features=200, n_components=5, doc_length=60,
                              random_state=0)
    X = X.tolil()
    X[200:, :20] = 0
    X = X.tocsr()
    X.eliminate_zeros()
    return X, [X[i:i + 200] for i in range(0, 800, 200)]


def _first_shard_mass(model):
    return model.components_[:, :20].sum()


# --------------------------------------------------------------------------- LDAGibbs online


def test_partial_fit_remembers_earlier_shards(shards):
    X, parts = shards
    full = LDAGibbs(5, max_iter=100, **FAST).fit(X)
    online = LDAGibbs(5, **FAST)
    for part in parts:
        online.partial_fit(part)
    one_pass = _first_shard_mass(online) / _first_shard_mass(full)
    for _ in range(4):
        for part in parts:
            online.partial_fit(part)
    five_passes = _first_shard_mass(online) / _first_shard_mass(full)
    assert one_pass >= 0.5, one_pass
    assert five_passes >= 0.8, five_passes


def test_shards_seen_again_are_counted_once(shards):
    """The counts behind the topics are every distinct shard's tokens, once each, and a
    shard seen again continues its own chain."""
    X, parts = shards
    model = LDAGibbs(5, optimize_interval=None, **FAST)
    for _ in range(3):
        for part in parts[:3]:
            model.partial_fit(part)
    memory = model._memory
    assert len(memory.shards) == 3
    assert memory.word_topic.sum() == sum(int(p.sum()) for p in parts[:3])
    assert model._topic_tokens.sum() == memory.word_topic.sum()
    # Each shard's saved topics give back its share of the total.
    for part in parts[:3]:
        corpus = GibbsCorpus(part, "cpu")
        z = memory.topics(corpus)
        background = memory.background(corpus, z, 5)
        assert z.shape == (corpus.n_tokens,)
        assert background.sum() == memory.word_topic.sum() - corpus.n_tokens
    assert model.n_iter_ == 9


def test_streamed_fit_matches_one_fit_on_the_whole_corpus():
    """Passes over shards reach the held-out likelihood of a fit of the concatenation
    with as many sweeps; the learned priors stay where that fit's are."""
    X, _, _ = make_lda_corpus(n_samples=1000, n_features=150, n_components=6, doc_length=50,
                              random_state=1)
    train, test = X[:800], X[800:]
    parts = [train[i:i + 200] for i in range(0, 800, 200)]
    full = LDAGibbs(6, max_iter=60, burn_in=20, **FAST).fit(train)
    online = LDAGibbs(6, burn_in=20, **FAST)
    for _ in range(60):
        for part in parts:
            online.partial_fit(part)
    gap = online.perplexity(test) / full.perplexity(test) - 1
    assert abs(gap) < 0.03, gap
    assert 0.5 < online.topic_word_prior_ / full.topic_word_prior_ < 2
    ratio = online.doc_topic_prior_.sum() / full.doc_topic_prior_.sum()
    assert 0.5 < ratio < 2, ratio


@pytest.mark.parametrize("algorithm", ["parallel", "mh", "sequential"])
def test_partial_fit_after_fit_builds_on_its_topics(shards, algorithm):
    """A fit without a kept chain, then partial_fit on another shard: the fitted topics
    stand for the earlier data instead of being forgotten."""
    X, parts = shards
    model = LDAGibbs(5, max_iter=30, algorithm=algorithm, **FAST).fit(parts[0])
    before = _first_shard_mass(model)
    model.partial_fit(parts[1])
    assert _first_shard_mass(model) > 0.5 * before
    assert model.n_iter_ == 31 and model.algorithm_ == algorithm


def test_memory_from_topics_gives_the_topics_back():
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.full(40, 0.3), size=4)
    tokens = np.array([5000, 8000, 3000, 12000])
    memory = ChainMemory.from_topics(phi, tokens, 0.01)
    counts = memory.word_topic.T
    again = (counts + 0.01) / (counts.sum(1, keepdims=True) + 40 * 0.01)
    np.testing.assert_allclose(again, phi, atol=2e-4)


def test_log_joint_with_a_background_is_the_conditional_joint():
    """log p(w_A, z_A | w_B, z_B) = log p(w, z) of A and B together - log p(w_B, z_B)."""
    rng = np.random.default_rng(2)
    A = sp.csr_matrix(rng.poisson(0.8, size=(6, 9)))
    B = sp.csr_matrix(rng.poisson(0.8, size=(5, 9)))
    K, alpha, beta = 3, np.array([0.2, 0.5, 0.9]), 0.1

    def state(X, z=None, background=None):
        corpus = GibbsCorpus(X, "cpu")
        if z is None:
            z = rng.integers(0, K, corpus.n_tokens)
        return GibbsState(corpus, K, torch.as_tensor(z, dtype=torch.int32), background)

    a, b = state(A), state(B)
    both = state(sp.vstack([A, B]).tocsr())
    # the same topics, token by token: both's tokens are sorted by word, then document
    order = np.lexsort((both.corpus.doc.numpy(), both.corpus.word.numpy()))
    doc, word = both.corpus.doc.numpy()[order], both.corpus.word.numpy()[order]
    z_both = np.empty(both.corpus.n_tokens, dtype=np.int64)
    za, zb = a.z.numpy(), b.z.numpy()
    ia = ib = 0
    for i, (d, _) in enumerate(zip(doc, word)):
        if d < A.shape[0]:
            z_both[order[i]] = za[ia]
            ia += 1
        else:
            z_both[order[i]] = zb[ib]
            ib += 1
    both = state(sp.vstack([A, B]).tocsr(), z_both)
    conditional = state(A, za, b.n_wk.numpy())
    expected = log_joint(both, alpha, beta) - log_joint(b, alpha, beta)
    assert log_joint(conditional, alpha, beta) == pytest.approx(expected, rel=1e-12)


# --------------------------------------------------------------------------- interrupts


def _interrupt_at(monkeypatch, name, at_sweep):
    """Press Ctrl-C (a real SIGINT) during sweep ``at_sweep`` of ``name``."""
    original = getattr(_lda_gibbs, name)

    def sweep(state, alpha, beta, seed, number, *args):
        if number == at_sweep:
            signal.raise_signal(signal.SIGINT)
        return original(state, alpha, beta, seed, number, *args)

    monkeypatch.setattr(_lda_gibbs, name, sweep)


@pytest.mark.parametrize("algorithm", ["parallel", "mh"])
def test_ctrl_c_keeps_the_work_done_and_warm_start_finishes_it(monkeypatch, algorithm):
    """Ctrl-C in sweep 7 of 20: the sweep finishes, the model holds 7 sweeps, the
    KeyboardInterrupt reaches the caller, torch's threads are as they were; pickled,
    loaded and continued with warm_start, the fit is bit-identical to one that never
    stopped."""
    X, _, _ = make_lda_corpus(n_samples=120, n_features=40, n_components=3, random_state=3)
    params = dict(n_components=3, max_iter=20, burn_in=5, n_kept_samples=3, sample_interval=3,
                  optimize_interval=4, evaluate_every=3, snapshot_interval=5,
                  algorithm=algorithm, n_jobs=1, **FAST)
    whole = LDAGibbs(**params).fit(X)
    threads = torch.get_num_threads()
    model = LDAGibbs(**params)
    with monkeypatch.context() as patch:
        _interrupt_at(patch, f"{'parallel' if algorithm == 'parallel' else 'mh'}_sweep", 7)
        with pytest.raises(KeyboardInterrupt, match="7 sweeps"):
            model.fit(X)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert torch.get_num_threads() == threads
    assert model.n_iter_ == 7
    np.testing.assert_allclose(model.components_.sum(1), 1.0)
    assert model.transform(X[:3]).shape == (3, 3)
    again = pickle.loads(pickle.dumps(model))
    again.set_params(warm_start=True).fit(X)
    assert again.n_iter_ == 20
    for name in ("components_", "doc_topic_", "doc_topic_prior_", "log_likelihood_trace_",
                 "log_likelihood_sweeps_"):
        np.testing.assert_array_equal(getattr(again, name), getattr(whole, name), err_msg=name)
    assert again.topic_word_prior_ == whole.topic_word_prior_
    for a, b in zip(again.snapshots_, whole.snapshots_):
        np.testing.assert_array_equal(a.components, b.components)
    assert again._interrupted_run is None


def test_a_second_ctrl_c_leaves_the_estimator_as_it_was(monkeypatch):
    X, _, _ = make_lda_corpus(n_samples=60, n_features=30, n_components=3, random_state=3)
    model = LDAGibbs(3, max_iter=5, **FAST).fit(X)
    before = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in vars(model).items()}
    original = _lda_gibbs.parallel_sweep

    def sweep(state, *args):
        if args[3] == 3:
            raise KeyboardInterrupt  # what a second Ctrl-C does, mid-sweep
        return original(state, *args)

    monkeypatch.setattr(_lda_gibbs, "parallel_sweep", sweep)
    threads = torch.get_num_threads()
    with pytest.raises(KeyboardInterrupt):
        model.set_params(max_iter=10, n_components=4, n_jobs=2).fit(X[:, :20])
    assert torch.get_num_threads() == threads
    assert set(vars(model)) == set(before)
    for key, value in before.items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(vars(model)[key], value)
    assert model.n_features_in_ == 30 and model.components_.shape == (3, 30)


class _PressCtrlC(Callback):
    """Press Ctrl-C once, during the first batch of epoch ``epoch`` (counted from 1)."""

    def __init__(self, epoch=None):
        self.epoch = epoch

    def initialize(self):
        self.pressed_ = False
        return self

    def on_batch_begin(self, net, **kwargs):
        if not self.pressed_ and len(net.history) == self.epoch:
            self.pressed_ = True
            signal.raise_signal(signal.SIGINT)


def test_neural_ctrl_c_stops_at_the_epoch_end_and_resumes_exactly():
    X, _, _ = make_lda_corpus(n_samples=120, n_features=40, n_components=3, random_state=3)
    params = dict(n_components=3, max_iter=6, batch_size=20, hidden_sizes=(16,), n_jobs=1,
                  **FAST)
    whole = ProdLDA(callbacks=[("ctrl_c", _PressCtrlC())], **params).fit(X)
    model = ProdLDA(callbacks=[("ctrl_c", _PressCtrlC(epoch=3))], **params)
    with pytest.raises(KeyboardInterrupt, match="3 epochs"):
        model.fit(X)
    assert model.n_iter_ == 3 and len(model.history_) == 3
    assert np.isfinite(model.score(X[:10]))
    again = pickle.loads(pickle.dumps(model))
    again.set_params(warm_start=True).fit(X)
    assert again.n_iter_ == 6
    np.testing.assert_array_equal(again.components_, whole.components_)
    np.testing.assert_array_equal(again.transform(X[:10]), whole.transform(X[:10]))


# --------------------------------------------------------------------------- neural streams


def test_neural_partial_fit_calls_continue_one_random_stream():
    """Two partial_fit calls are the two epochs of one fit: the second call's dropout
    and reparameterisation noise and batches follow the first's instead of replaying
    them."""
    X, _, _ = make_lda_corpus(n_samples=100, n_features=40, n_components=3, random_state=4)
    params = dict(n_components=3, batch_size=20, hidden_sizes=(16,), dropout=0.3, n_jobs=1,
                  **FAST)
    one = ProdLDA(max_iter=2, **params).fit(X)
    streamed = ProdLDA(**params)
    streamed.partial_fit(X)
    streamed.partial_fit(X)
    np.testing.assert_array_equal(streamed.components_, one.components_)


def test_early_stopping_counts_within_each_call():
    """A warm fit after an early stop trains again (its patience starts afresh)."""
    X, _, _ = make_lda_corpus(n_samples=100, n_features=40, n_components=3, random_state=4)
    # tol so large that no epoch after the first counts as an improvement
    model = ProdLDA(3, max_iter=10, batch_size=20, validation_fraction=0.2, n_iter_no_change=2,
                    tol=1e9, warm_start=True, **FAST).fit(X)
    assert model.n_iter_ == 3
    model.fit(X)
    assert model.n_iter_ == 6


# --------------------------------------------------------------------------- pickles


@pytest.mark.parametrize("cls", [LDAGibbs, ProdLDA])
def test_pickles_record_the_version_that_wrote_them(cls):
    X, _, _ = make_lda_corpus(n_samples=40, n_features=20, n_components=2, random_state=0)
    params = {"max_iter": 2} if cls is LDAGibbs else {"max_iter": 1, "batch_size": 10}
    model = cls(2, **params, **FAST).fit(X)
    state = model.__getstate__()
    from sktopics import __version__

    assert state[VERSION_KEY] == __version__
    with warnings.catch_warnings():
        warnings.simplefilter("error", InconsistentVersionWarning)
        pickle.loads(pickle.dumps(model))
    old = cls.__new__(cls)
    with pytest.warns(InconsistentVersionWarning, match="0.0.1") as record:
        old.__setstate__({**state, VERSION_KEY: "0.0.1"})
    assert record[0].message.original_sktopics_version == "0.0.1"
    assert record[0].message.estimator_name == cls.__name__
    np.testing.assert_array_equal(old.components_, model.components_)


def test_training_curve_of_a_streamed_model_is_per_token_entry_by_entry():
    """Each entry of a streamed model's curve is divided by the tokens of its own call,
    not by the last call's."""
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    from sktopics.inspection import TrainingCurveDisplay

    X, _, _ = make_lda_corpus(n_samples=90, n_features=30, n_components=3, doc_length=40,
                              random_state=5)
    long_docs = sp.csr_matrix(X[:30].toarray() * 3)  # three times the tokens per document
    gibbs = LDAGibbs(3, evaluate_every=1, **FAST)
    neural = ProdLDA(3, batch_size=10, hidden_sizes=(8,), **FAST)
    for part in (X[30:], long_docs):
        gibbs.partial_fit(part)
        neural.partial_fit(part)
    (_, y), = TrainingCurveDisplay.from_estimator(gibbs).curves.values()
    np.testing.assert_allclose(y, gibbs.log_likelihood_trace_ / [X[30:].sum(), long_docs.sum()])
    (_, y), = TrainingCurveDisplay.from_estimator(neural).curves.values()
    lengths = [X[30:].sum() / 60, long_docs.sum() / 30]
    np.testing.assert_allclose(y, -np.asarray(neural.history_[:, "train_loss"]) / lengths)


class _FailAt(Callback):
    """Raise an error during the first batch of epoch ``epoch`` (counted from 1)."""

    def __init__(self, epoch=None):
        self.epoch = epoch

    def on_batch_begin(self, net, **kwargs):
        if len(net.history) == self.epoch:
            raise RuntimeError("a failure half-way through a warm fit")


def test_a_warm_fit_that_fails_leaves_the_model_as_it_was():
    X, _, _ = make_lda_corpus(n_samples=80, n_features=30, n_components=3, random_state=6)
    model = ProdLDA(3, max_iter=2, batch_size=20, hidden_sizes=(8,), warm_start=True,
                    callbacks=[("fail", _FailAt())], **FAST).fit(X)
    components, theta = model.components_.copy(), model.transform(X)
    dict(model.net_.callbacks_)["fail"].epoch = 3
    with pytest.raises(RuntimeError, match="half-way"):
        model.fit(X)  # epoch 3 is the first of this call
    assert model.n_iter_ == 2 and len(model.history_) == 2
    np.testing.assert_array_equal(model.components_, components)
    np.testing.assert_array_equal(model.transform(X), theta)


class _TwoIdenticalRanks:
    """A stand-in process group of two ranks holding the same documents."""

    rank, world_size = 0, 2

    def gather(self, array):
        return [np.asarray(array), np.asarray(array)]

    def sum_(self, tensor):
        return tensor.mul_(2)


@pytest.mark.parametrize("cpu_kernels", ["compiled", "torch"])
@pytest.mark.parametrize("where", ["alone", "background", "ranks"])
def test_mh_sweep_proposes_from_the_counts_it_draws_from(monkeypatch, where, cpu_kernels):
    """The word proposal draws among this corpus's own tokens, so the acceptance ratio
    must be given their counts whenever n_wk holds more (other shards or ranks)."""
    from sktopics._gibbs import _sweeps
    from sktopics._kernels import _gibbs as kernels

    X, _, _ = make_lda_corpus(n_samples=20, n_features=15, n_components=3, random_state=1)
    corpus = GibbsCorpus(X, "cpu", _TwoIdenticalRanks() if where == "ranks" else None)
    background = np.ones((15, 3), dtype=np.int64) if where == "background" else None
    z = torch.zeros(corpus.n_tokens, dtype=torch.int32)
    state = GibbsState(corpus, 3, z, background)
    seen = []
    if cpu_kernels == "torch":
        original = _sweeps.mh_chunk

        def spy(*args, word_proposal=None, **kwargs):
            seen.append(word_proposal)
            return original(*args, word_proposal=word_proposal, **kwargs)

        monkeypatch.setattr(_sweeps, "mh_chunk", spy)
    else:
        original = kernels.mh_draws

        def spy(*args):  # (doc, word, z, frozen, tables, word_proposal, ...)
            seen.append(None if args[5] is args[4][1] else torch.from_numpy(args[5]))
            return original(*args)

        monkeypatch.setattr(kernels, "mh_draws", spy)
    with config_context(cpu_kernels=cpu_kernels):
        _sweeps.mh_sweep(state, np.full(3, 0.5), 0.1, 0, 1, 1 << 16)
    if where == "alone":
        assert seen == [None]
    else:
        # n_wk holds more than this corpus's tokens; the proposal gets only theirs
        assert int(state.n_wk.sum()) > corpus.n_tokens
        assert seen[0] is not None and seen[0].shape == (15, 3)
        assert int(seen[0].sum()) == corpus.n_tokens


def test_a_resume_that_fails_keeps_the_interrupted_run(monkeypatch):
    """Ctrl-C, then a resume stopped hard after a kept sweep, then another resume: the
    result is still the fit that never stopped."""
    X, _, _ = make_lda_corpus(n_samples=100, n_features=30, n_components=3, random_state=3)
    params = dict(n_components=3, max_iter=24, burn_in=5, n_kept_samples=4, sample_interval=3,
                  optimize_interval=4, n_jobs=1, **FAST)
    whole = LDAGibbs(**params).fit(X)
    model = LDAGibbs(**params)
    with monkeypatch.context() as patch:
        _interrupt_at(patch, "parallel_sweep", 7)
        with pytest.raises(KeyboardInterrupt):
            model.fit(X)
    original = _lda_gibbs.parallel_sweep

    def hard_stop(state, *args):
        if args[3] == 19:  # after the kept sweeps 12, 15 and 18
            raise KeyboardInterrupt
        return original(state, *args)

    model.set_params(warm_start=True)
    with monkeypatch.context() as patch:
        patch.setattr(_lda_gibbs, "parallel_sweep", hard_stop)
        with pytest.raises(KeyboardInterrupt):
            model.fit(X)
    assert model.n_iter_ == 7 and model._interrupted_run.n_kept == 0
    model.fit(X)
    np.testing.assert_array_equal(model.components_, whole.components_)
    np.testing.assert_array_equal(model.doc_topic_, whole.doc_topic_)


class _PressCtrlCTwice(Callback):
    """Press Ctrl-C twice during a batch of epoch ``epoch`` (counted from 1)."""

    def __init__(self, epoch=None):
        self.epoch = epoch

    def on_batch_end(self, net, **kwargs):
        if len(net.history) == self.epoch:
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)


def test_neural_second_ctrl_c_leaves_the_model_as_it_was():
    """Two presses stop at once, half-way through an epoch: the warm fit's updates are
    undone (skorch itself would keep them), and a cold fit leaves no model."""
    X, _, _ = make_lda_corpus(n_samples=80, n_features=30, n_components=3, random_state=6)
    params = dict(n_components=3, batch_size=20, hidden_sizes=(8,), **FAST)
    model = ProdLDA(max_iter=2, warm_start=True, callbacks=[("twice", _PressCtrlCTwice())],
                    **params).fit(X)
    components, theta = model.components_.copy(), model.transform(X)
    dict(model.net_.callbacks_)["twice"].epoch = 3
    with pytest.raises(KeyboardInterrupt):
        model.fit(X)
    assert model.n_iter_ == 2 and len(model.history_) == 2
    assert model._interrupted_run is None
    np.testing.assert_array_equal(model.components_, components)
    np.testing.assert_array_equal(model.transform(X), theta)
    cold = ProdLDA(max_iter=3, callbacks=[("twice", _PressCtrlCTwice(epoch=1))], **params)
    with pytest.raises(KeyboardInterrupt):
        cold.fit(X)
    assert not hasattr(cold, "components_") and not hasattr(cold, "net_")


def test_a_neural_warm_fit_that_fails_after_training_is_undone(monkeypatch):
    X, _, _ = make_lda_corpus(n_samples=80, n_features=30, n_components=3, random_state=6)
    model = ProdLDA(3, max_iter=2, batch_size=20, hidden_sizes=(8,), warm_start=True,
                    **FAST).fit(X)
    components, theta = model.components_.copy(), model.transform(X)

    def broken(*args):
        raise RuntimeError("failure after the epochs")

    monkeypatch.setattr(ProdLDA, "_freeze_batch_norm", broken)
    with pytest.raises(RuntimeError, match="after the epochs"):
        model.fit(X)
    assert model.n_iter_ == 2 and len(model.history_) == 2
    np.testing.assert_array_equal(model.components_, components)
    np.testing.assert_array_equal(model.transform(X), theta)


def test_an_interrupted_neural_run_is_finished_only_on_its_data_and_plan():
    X, _, _ = make_lda_corpus(n_samples=120, n_features=40, n_components=3, random_state=3)
    params = dict(n_components=3, max_iter=6, batch_size=20, hidden_sizes=(16,), **FAST)
    model = ProdLDA(callbacks=[("ctrl_c", _PressCtrlC(epoch=3))], **params)
    with pytest.raises(KeyboardInterrupt):
        model.fit(X)
    other = pickle.loads(pickle.dumps(model)).set_params(warm_start=True).fit(X[:100])
    assert other.n_iter_ == 3 + 6  # another corpus: a new run of max_iter epochs
    longer = pickle.loads(pickle.dumps(model)).set_params(warm_start=True, max_iter=8).fit(X)
    assert longer.n_iter_ == 3 + 8  # another plan: likewise
    model.set_params(warm_start=True).fit(X)
    assert model.n_iter_ == 6  # the interrupted run, finished


def test_pickling_leaves_the_model_unchanged():
    X, _, _ = make_lda_corpus(n_samples=40, n_features=20, n_components=2, random_state=0)
    model = LDAGibbs(2, max_iter=2, **FAST).fit(X)
    before = set(vars(model))
    pickle.dumps(model)
    assert set(vars(model)) == before


def test_document_blocks_bound_documents_and_cells():
    from sktopics.utils._blocks import document_blocks

    # 6 documents of 5, 0, 7, 1, 7 and 20 cells
    indptr = np.array([0, 5, 5, 12, 13, 20, 40], dtype=np.int32)
    blocks = document_blocks(indptr, max_docs=4, max_cells=8)
    assert blocks == [(0, 2), (2, 4), (4, 5), (5, 6)]  # the last one alone exceeds 8 cells
    assert document_blocks(indptr, max_docs=2, max_cells=100) == [(0, 2), (2, 4), (4, 6)]
    # int32 pointers near their limit do not overflow
    big = np.array([0, 2**31 - 10, 2**31 - 1], dtype=np.int32)
    assert document_blocks(big, max_docs=10, max_cells=2**20) == [(0, 1), (1, 2)]


def test_batch_layouts_in_small_groups_change_nothing(monkeypatch):
    """Training and transform with the batch layouts built a few non-zeros at a time give
    exactly what one group gives."""
    from sktopics._neural import _data

    X, _, _ = make_lda_corpus(n_samples=120, n_features=40, n_components=3, random_state=2)
    params = dict(n_components=3, max_iter=2, batch_size=20, hidden_sizes=(8,), n_jobs=1,
                  **FAST)
    whole = ProdLDA(**params).fit(X)
    monkeypatch.setattr(_data, "_LAYOUT_ELEMENTS", 50)  # a group holds one or two batches
    grouped = ProdLDA(**params).fit(X)
    np.testing.assert_array_equal(grouped.components_, whole.components_)
    np.testing.assert_array_equal(grouped.transform(X), whole.transform(X))


def test_online_alpha_is_learned_from_every_shard():
    """alpha is re-estimated every optimize_interval calls: from the statistics of every
    shard's documents, not only from the shard of that call (with 5 shards and an
    interval of 10 it would always be the 5th)."""
    parts = []
    for i, prior in enumerate((0.05, 1.0, 1.0, 1.0, 1.0)):  # one shard of peaked documents
        parts.append(make_lda_corpus(n_samples=100, n_features=60, n_components=4,
                                     doc_topic_prior=prior, doc_length=60,
                                     random_state=10 + i)[0])

    def streamed(order):
        model = LDAGibbs(4, burn_in=0, optimize_interval=10, **FAST)
        for _ in range(12):
            for i in order:
                model.partial_fit(parts[i])
        return model.doc_topic_prior_.sum()

    peaked_last, peaked_first = streamed([1, 2, 3, 4, 0]), streamed([0, 1, 2, 3, 4])
    assert 0.7 < peaked_last / peaked_first < 1.4, (peaked_last, peaked_first)
