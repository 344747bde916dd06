"""The compiled CPU kernels: the switch between them and torch, the fallback, their
random numbers and their threads."""

import threading
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import sktopics
from sktopics import LDAGibbs, config_context, get_config, set_config
from sktopics._gibbs import _sweeps as sweeps
from sktopics._gibbs._state import GibbsCorpus, GibbsState
from sktopics._kernels import _gibbs as kernels
from sktopics._kernels import _jit
from sktopics._kernels._pool import run_parts, split_evenly
from sktopics._kernels._random import counter_uniform as compiled_uniform
from sktopics._random import counter_uniform, stream_key

pytestmark = pytest.mark.cpu


def _corpus(seed=0, n_docs=60, n_words=40):
    rng = np.random.default_rng(seed)
    X = sp.random(n_docs, n_words, density=0.2, random_state=rng, format="csr")
    X.data = rng.integers(1, 5, X.nnz).astype(np.float64)
    return X


def test_config_switch_and_context():
    assert get_config()["cpu_kernels"] == "auto"
    with config_context(cpu_kernels="torch"):
        assert get_config()["cpu_kernels"] == "torch"
        assert not _jit.compiled_path("cpu")
    assert get_config()["cpu_kernels"] == "auto"
    assert _jit.compiled_path("cpu")
    assert not _jit.compiled_path("meta")  # not a CPU: the torch kernels
    with pytest.raises(ValueError, match="cpu_kernels must be one of"):
        set_config(cpu_kernels="fast")
    with pytest.raises(ValueError, match="cpu_kernels must be one of"):
        with config_context(cpu_kernels="fast"):
            pass
    assert get_config()["cpu_kernels"] == "auto"


def test_compiled_uniforms_are_the_torch_uniforms():
    key = stream_key(7, 1, 3)
    index = np.array([0, 1, 2, 12345, 2**31 + 5, 2**40 + 17], dtype=np.int64)
    expected = counter_uniform(key, torch.from_numpy(index)).numpy()
    got = [compiled_uniform(np.uint64(key & 0xFFFFFFFFFFFFFFFF), int(i)) for i in index]
    np.testing.assert_array_equal(np.array(got, dtype=np.float32), expected)


def test_the_53_bit_uniforms_refine_the_24_bit_ones():
    """The sparse sampler's uniform (compared with float64 masses) has 53 random bits:
    the 24-bit uniform of the same counter, refined."""
    from sktopics._kernels._random import counter_uniform64

    key = np.uint64(stream_key(3, 2, 1) & 0xFFFFFFFFFFFFFFFF)
    coarse = np.array([compiled_uniform(key, i) for i in range(2000)], dtype=np.float64)
    fine = np.array([counter_uniform64(key, i) for i in range(2000)])
    assert np.all((fine >= 0) & (fine < 1))
    np.testing.assert_array_equal(np.floor(fine * 2**24) / 2**24, coarse)
    assert np.mean(fine * 2**24 != np.floor(fine * 2**24)) > 0.99  # more bits than 24


def test_a_wider_pool_shuts_the_narrower_one_down(monkeypatch):
    from sktopics._kernels import _pool

    monkeypatch.setattr(_pool, "_executor", None)
    monkeypatch.setattr(_pool, "_workers", 0)
    monkeypatch.setattr(_pool.os, "cpu_count", lambda: 2)
    run_parts(lambda a, b: b - a, [(0, 1), (1, 2)], 2)
    first = _pool._executor
    run_parts(lambda a, b: b - a, [(0, 1), (1, 2), (2, 3), (3, 4)], 4)
    assert _pool._executor is not first and first._shutdown
    _pool._executor.shutdown()


def test_compiled_counts_are_the_torch_counts():
    X = _corpus()
    corpus = GibbsCorpus(X, "cpu")
    z = torch.from_numpy(np.random.default_rng(1).integers(0, 7, corpus.n_tokens,
                                                           dtype=np.int32))
    with config_context(cpu_kernels="compiled"):
        compiled = GibbsState(corpus, 7, z)
    with config_context(cpu_kernels="torch"):
        eager = GibbsState(corpus, 7, z)
    for a, b in ((compiled.n_dk, eager.n_dk), (compiled.n_wk, eager.n_wk),
                 (compiled.n_k, eager.n_k)):
        torch.testing.assert_close(a, b, rtol=0, atol=0)
    for n_threads in (2, 3, 8):  # parts of documents and of words
        n_dk = np.full_like(eager.n_dk.numpy(), -5)
        n_wk = np.full_like(eager.n_wk.numpy(), -5)
        n_k = kernels.count_topics(corpus.doc.numpy(), corpus.word.numpy(), z.numpy(),
                                   corpus.word_start.numpy(), n_dk, n_wk, n_threads)
        np.testing.assert_array_equal(n_dk, eager.n_dk.numpy())
        np.testing.assert_array_equal(n_wk, eager.n_wk.numpy())
        np.testing.assert_array_equal(n_k, eager.n_k.numpy())


def test_draws_do_not_depend_on_the_parts_or_threads():
    X = _corpus(2)
    corpus = GibbsCorpus(X, "cpu")
    K = 37  # not a multiple of the lanes
    state = GibbsState(corpus, K, sweeps.random_init(corpus, K, 0))
    alpha = torch.full((K,), 0.3)
    arrays = [a.numpy() for a in (corpus.doc, corpus.word, state.z, state.n_dk, state.n_wk,
                                  state.n_k, alpha)]
    key, none = stream_key(3, 1, 1), np.zeros(0, np.int64)
    outs = []
    for n_parts in (1, 2, 5):
        out = np.full(corpus.n_tokens, -1, np.int32)
        run_parts(lambda a, b, out=out: kernels.parallel_draws(*arrays, 0.02, key, none, out,
                                                               a, b),
                  split_evenly(corpus.n_tokens, n_parts))
        outs.append(out)
    assert outs[0].min() >= 0 and outs[0].max() < K
    for out in outs[1:]:
        np.testing.assert_array_equal(out, outs[0])


def test_split_evenly_covers_every_item_once():
    for n, parts in ((10, 3), (2, 5), (0, 2), (7, 1)):
        ranges = split_evenly(n, parts)
        covered = [i for a, b in ranges for i in range(a, b)]
        assert covered == list(range(n))
        assert len(ranges) == max(1, min(parts, n))


def test_run_parts_raises_after_every_part_finished():
    done = []

    def kernel(start, stop):
        if start == 0:
            raise ValueError("part 0")
        done.append(start)
        return start

    with pytest.raises(ValueError, match="part 0"):
        run_parts(kernel, [(0, 1), (1, 2), (2, 3)])
    assert sorted(done) == [1, 2]
    assert run_parts(lambda a, b: b - a, [(0, 2), (2, 7)]) == [2, 5]


def _broken(exc):
    def kernel(*args):
        raise exc

    return kernel


def test_a_kernel_failing_on_a_call_hands_it_to_torch_with_one_warning(monkeypatch):
    """A failure on a call's input (not a compile error) changes that call only: the
    torch counterpart runs it, one warning per kernel says so, and the next call tries
    the compiled kernel again."""
    X = _corpus(3)
    params = dict(n_components=5, max_iter=4, random_state=0, optimize_interval=None,
                  device="cpu")
    with config_context(cpu_kernels="torch"):
        expected = LDAGibbs(**params).fit(X)
    real_draws = kernels.parallel_draws
    monkeypatch.setattr(kernels, "parallel_draws", _broken(IndexError("index 9 out of bounds")))
    monkeypatch.setattr(kernels, "count_topics", _broken(IndexError("index 9 out of bounds")))
    with config_context(cpu_kernels="torch"), warnings.catch_warnings():
        warnings.simplefilter("error")  # the torch path never calls the compiled kernels
        LDAGibbs(**params).fit(X)
    with pytest.warns(RuntimeWarning, match="failed") as record:
        model = LDAGibbs(**params).fit(X)
    said = sorted(str(w.message).split(" failed")[0] for w in record)
    assert said == ["sktopics: the compiled CPU kernel of the parallel sweep",
                    "sktopics: the compiled CPU kernel of the topic counts"]
    np.testing.assert_array_equal(model.components_, expected.components_)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # fails again, silently
        np.testing.assert_array_equal(LDAGibbs(**params).fit(X).components_,
                                      expected.components_)
    assert _jit.compiled_path("cpu", "parallel sweep")  # tried again by later calls
    calls = []
    monkeypatch.setattr(kernels, "parallel_draws", lambda *a: calls.append(1) or real_draws(*a))
    LDAGibbs(**params).fit(X)
    assert calls


def test_a_kernel_that_cannot_run_is_not_tried_again_and_the_others_go_on(monkeypatch):
    """A compile error is remembered for its kernel alone: that kernel's torch
    counterpart runs from then on (said once), while the other kernels, and so the
    results they give (a transform's random numbers, say), are those of a process where
    nothing failed."""
    from numba.core.errors import TypingError

    X = _corpus(3)
    params = dict(n_components=5, max_iter=4, random_state=0, optimize_interval=None,
                  device="cpu")
    before = LDAGibbs(**params).fit(X)
    theta = before.transform(X)
    with config_context(cpu_kernels="torch"):
        expected = LDAGibbs(**params).fit(X)
    monkeypatch.setattr(kernels, "parallel_draws", _broken(TypingError("cannot type")))
    with pytest.warns(RuntimeWarning, match="parallel sweep cannot run here") as record:
        model = LDAGibbs(**params).fit(X)
    assert sum("cannot run here" in str(w.message) for w in record) == 1
    np.testing.assert_array_equal(model.components_, expected.components_)
    assert not _jit.compiled_path("cpu", "parallel sweep")
    assert _jit.compiled_path("cpu", "transform") and _jit.compiled_path("cpu")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # said once
        LDAGibbs(**params).fit(X)
        np.testing.assert_array_equal(before.transform(X), theta)  # the compiled transform
    with config_context(cpu_kernels="compiled"):
        with pytest.raises(RuntimeError, match="parallel sweep failed earlier"):
            _jit.compiled_path("cpu", "parallel sweep")
        assert _jit.compiled_path("cpu", "MH sweep")


def test_asking_for_compiled_kernels_raises_what_failed(monkeypatch):
    def broken(*args):
        raise RuntimeError("no such instruction")

    monkeypatch.setattr(kernels, "parallel_draws", broken)
    with config_context(cpu_kernels="compiled"):
        with pytest.raises(RuntimeError, match="no such instruction"):
            LDAGibbs(n_components=3, max_iter=2, random_state=0, device="cpu").fit(_corpus())


def test_without_numba_the_torch_kernels_run(monkeypatch):
    monkeypatch.setattr(_jit, "_have_numba", lambda: False)
    assert not _jit.compiled_path("cpu")
    with config_context(cpu_kernels="compiled"):
        with pytest.raises(ImportError, match="pip install numba"):
            LDAGibbs(n_components=3, max_iter=2, random_state=0, device="cpu").fit(_corpus())


def test_compiled_and_torch_fits_recover_the_same_known_topics():
    """The two paths draw from the same conditionals (on different random paths): on a
    corpus drawn from known topics both recover them, equally well."""
    from scipy.optimize import linear_sum_assignment

    from sktopics.datasets import make_lda_corpus

    X, topic_word, _ = make_lda_corpus(n_samples=300, n_features=60, n_components=4,
                                       doc_length=80, random_state=0)
    errors = {}
    for cpu_kernels in ("compiled", "torch"):
        with config_context(cpu_kernels=cpu_kernels):
            model = LDAGibbs(n_components=4, max_iter=100, random_state=0,
                             device="cpu").fit(X)
        cost = np.abs(topic_word[:, None, :] - model.components_[None, :, :]).sum(-1)
        rows, cols = linear_sum_assignment(cost)
        errors[cpu_kernels] = cost[rows, cols].max()
    assert max(errors.values()) < 0.1, errors  # uniform topics: 1.8


def test_config_is_public():
    assert {"set_config", "get_config", "config_context"} <= set(sktopics.__all__)


def test_compiled_mh_draws_are_the_torch_draws(monkeypatch):
    """The compiled Metropolis-Hastings kernel does the torch kernel's float32
    arithmetic on the same uniforms: the same chain, bit for bit (the prior branches
    of both proposals included: a small beta and alpha make them rare, not absent)."""
    X = _corpus(4, n_docs=80, n_words=50)
    params = dict(n_components=30, algorithm="mh", max_iter=6, random_state=0, mh_steps=3,
                  device="cpu",
                  doc_topic_prior=2.0, topic_word_prior=0.5)
    calls = []
    draws = kernels.mh_draws
    monkeypatch.setattr(kernels, "mh_draws", lambda *a: calls.append(1) or draws(*a))
    fits = {}
    for cpu_kernels in ("compiled", "torch"):
        with config_context(cpu_kernels=cpu_kernels):
            fits[cpu_kernels] = LDAGibbs(**params).fit(X)
        assert (len(calls) > 0) == (cpu_kernels == "compiled")
        calls.clear()
    np.testing.assert_array_equal(fits["compiled"].components_, fits["torch"].components_)
    np.testing.assert_array_equal(fits["compiled"].log_likelihood_trace_,
                                  fits["torch"].log_likelihood_trace_)


def test_kernels_compile_in_memory_where_no_cache_can_be_written(monkeypatch):
    """numba refuses ``cache=True`` when no folder can hold the cache (a read-only
    install without a writable home): the kernel is then compiled in memory."""
    import numba

    real = numba.njit

    def njit(*args, **options):
        if options.get("cache"):
            raise RuntimeError("cannot cache function: no locator available")
        return real(*args, **options)

    monkeypatch.setattr(numba, "njit", njit)

    def add_one(x):
        return x + 1

    assert _jit.jit(add_one)(41) == 42


def test_kernels_keep_n_jobs_threads_while_torch_runs_on_one(monkeypatch):
    """During a compiled fit torch's own operations run on one thread (its OpenMP
    threads would otherwise spin beside the kernels'), the kernels on n_jobs."""
    from sktopics._kernels import _pool

    seen = []
    draws = kernels.parallel_draws

    def spy(*args):
        if threading.current_thread() is threading.main_thread():  # the call's own thread
            seen.append((torch.get_num_threads(), _pool.n_threads()))
        return draws(*args)

    monkeypatch.setattr(kernels, "parallel_draws", spy)
    before = torch.get_num_threads()
    LDAGibbs(n_components=3, max_iter=2, random_state=0, n_jobs=2, device="cpu").fit(_corpus())
    assert seen and set(seen) == {(1, 2)}
    assert torch.get_num_threads() == before


def _evaluations():
    """Each evaluator loop the compiled kernels replace, on a corpus with long and short
    documents (the torch engine's fixed-point tail included) and two models whose
    alphas differ (the geometric path's two Polya terms)."""
    from sktopics.model_selection import (
        ais_log_likelihood,
        document_completion_log_likelihood,
        left_to_right_log_likelihood,
        ratio_ais,
    )

    rng = np.random.default_rng(7)
    X = _corpus(7, n_docs=40, n_words=30)
    X = sp.vstack([X, sp.csr_matrix(rng.integers(0, 6, (3, 30)).astype(np.float64))]).tocsr()
    a = (rng.dirichlet(np.full(30, 0.3), 6), rng.uniform(0.1, 1.0, 6))
    b = (rng.dirichlet(np.full(30, 0.3), 6), rng.uniform(0.1, 1.0, 6))
    return {
        "left-to-right": lambda: left_to_right_log_likelihood(
            a, X, n_particles=12, n_filters=2, random_state=0, device="cpu"),
        "completion": lambda: document_completion_log_likelihood(
            a, X, n_particles=12, random_state=0, device="cpu"),
        "ais": lambda: ais_log_likelihood(a, X, n_temperatures=15, n_chains=3,
                                          kernel="collapsed", random_state=0, device="cpu"),
        "ratio-ais geometric": lambda: ratio_ais(a, b, X, n_temperatures=12, n_chains=3,
                                                 kernel="collapsed", align_topics=False,
                                                 random_state=0, device="cpu"),
    }


@pytest.mark.filterwarnings("ignore:The forward and reverse runs disagree")
@pytest.mark.parametrize("name", ["left-to-right", "completion", "ais", "ratio-ais geometric"])
def test_compiled_evaluators_draw_what_the_torch_loops_draw(name, monkeypatch):
    """The compiled filter and sweeps use the torch loops' uniforms and arithmetic (the
    float32 cumulative sums of the sweeps included): the same estimates, to the order of
    a few float64 sums, and the same resampling events; and they did run."""
    from sktopics._kernels import _smc, _zspace

    calls = []
    for module, names in ((_smc, ["smc_documents"]),
                          (_zspace, ["shifted_sweep", "geometric_sweep", "sequential_draw"])):
        for kernel in names:
            real = getattr(module, kernel)
            monkeypatch.setattr(module, kernel,
                                lambda *a, _real=real, _k=kernel: calls.append(_k) or _real(*a))
    results = {}
    for cpu_kernels in ("compiled", "torch"):
        with config_context(cpu_kernels=cpu_kernels):
            results[cpu_kernels] = _evaluations()[name]()
        assert bool(calls) == (cpu_kernels == "compiled")
        if name == "ratio-ais geometric" and cpu_kernels == "compiled":
            assert {"geometric_sweep", "sequential_draw"} <= set(calls)
        calls.clear()
    compiled, torch_loops = results["compiled"], results["torch"]
    np.testing.assert_allclose(compiled.per_document, torch_loops.per_document,
                               rtol=1e-11, atol=1e-11)
    assert compiled.settings == torch_loops.settings


@pytest.mark.parametrize("name", ["left-to-right", "ais", "ratio-ais geometric"])
def test_a_failing_evaluator_kernel_leaves_the_chain_to_the_torch_loops(name, monkeypatch):
    """A compiled evaluator kernel that fails changes nothing: the torch loops take over
    from the same state, with one warning, and give the torch loops' estimates."""
    from sktopics._kernels import _smc, _zspace

    with config_context(cpu_kernels="torch"):
        expected = _evaluations()[name]()

    def broken(*args):
        raise RuntimeError("kernel failed")

    for module, kernel in ((_smc, "smc_documents"), (_zspace, "shifted_sweep"),
                           (_zspace, "geometric_sweep"), (_zspace, "sequential_draw")):
        monkeypatch.setattr(module, kernel, broken)
    with pytest.warns(RuntimeWarning, match="compiled CPU kernel of the .* failed"):
        got = _evaluations()[name]()
    np.testing.assert_allclose(got.per_document, expected.per_document, rtol=1e-11,
                               atol=1e-11)
