"""The GPU half of the device promises; skipped without CUDA.

Run by the GPU kit (``python benchmarks/gpu_check.py``), which also runs the whole suite
with ``SKTOPICS_TEST_DEVICE=auto``. What can be checked without a GPU is in
``tests/test_devices.py``; these tests reuse its helpers on a real second device.
"""

import inspect
import os
import pickle
import subprocess
import sys
import warnings
from collections import Counter

import numpy as np
import pytest
import torch

import sktopics._random as random_mod
from sktopics import LDAGibbs, config_context
from sktopics._gibbs import _fused as fused
from sktopics._random import counter_uniform, stream_key
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import (
    ais_log_likelihood,
    iteration_ais,
    left_to_right_log_likelihood,
    ratio_ais,
)

from .test_devices import _LOADER, ESTIMATORS, _assert_same, _snapshot
from .test_model_selection_exact import (
    ALPHA,
    ALPHA_B,
    DOC,
    PHI,
    PHI_B,
    _pam_problem,
    _PAMView,
    assert_unbiased_in_probability,
    exact_copy,
    exact_log_likelihood,
    exact_pam_log_likelihood,
    repeated,
    split,
    words_of,
)

pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")]

CUDA = torch.device("cuda", 0) if torch.cuda.is_available() else None


@pytest.fixture(scope="module")
def X():
    return make_lda_corpus(n_samples=80, n_features=30, n_components=3, random_state=0)[0]


def _fit(name, X, device="cuda", **params):
    return ESTIMATORS[name]().set_params(device=device, **params).fit(X)


# --------------------------------------------------------------------------- random numbers


def test_counter_random_numbers_are_bit_identical_on_cpu_and_cuda():
    index = torch.arange(1 << 20, dtype=torch.int64)
    key = stream_key(7, 1, 3)
    assert torch.equal(counter_uniform(key, index), counter_uniform(key, index.to(CUDA)).cpu())
    keys = torch.arange(4096).view(-1, 1)
    positions = torch.arange(64).view(1, -1)
    cpu = random_mod.uniform(keys, 5, positions)
    assert torch.equal(cpu, random_mod.uniform(keys.to(CUDA), 5, positions.to(CUDA)).cpu())
    shape = torch.tensor([[0.05, 0.7, 3.0, 40.0]], dtype=torch.float64).expand(4096, 4)
    g_cpu = random_mod.counter_log_gamma(shape.contiguous(), keys, 9)
    g_gpu = random_mod.counter_log_gamma(shape.contiguous().to(CUDA), keys.to(CUDA), 9)
    torch.testing.assert_close(g_gpu.cpu(), g_cpu, rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- estimators on CUDA


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_two_cuda_fits_are_identical(X, name):
    params = dict(burn_in=2, optimize_interval=2) if name == "LDAGibbs" else {}
    a, b = _fit(name, X, **params), _fit(name, X, **params)
    for key, value in vars(a).items():
        if isinstance(value, np.ndarray):
            np.testing.assert_array_equal(value, vars(b)[key], err_msg=key)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_fit_score_transform_partial_fit_on_cuda(X, name):
    model = _fit(name, X, device="auto")
    assert model.device_ == CUDA
    theta = model.transform(X)
    np.testing.assert_allclose(theta.sum(1), 1.0, rtol=1e-6)
    assert np.isfinite(model.score(X))
    n_iter = model.n_iter_
    model.partial_fit(X)
    assert model.n_iter_ == n_iter + 1
    if hasattr(model, "net_"):
        assert all(p.device == CUDA for p in model.net_.module_.parameters())
        state = model.net_.optimizer_.state.values()
        assert all(v.device == CUDA for s in state for v in s.values() if torch.is_tensor(v))


@pytest.mark.parametrize("name", ["LDAGibbs", "ProdLDA", "PAMVI"])
def test_warm_fit_follows_the_device_parameter(X, name):
    model = _fit(name, X, warm_start=True)
    model.set_params(device="cpu").fit(X)
    assert model.device_ == torch.device("cpu")
    if hasattr(model, "net_"):
        assert all(p.device.type == "cpu" for p in model.net_.module_.parameters())
    model.set_params(device="cuda").fit(X)
    assert model.device_ == CUDA
    assert np.isfinite(model.score(X))


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_evaluation_across_devices_both_ways_leaves_the_model_alone(X, name):
    for model_device, eval_device in (("cuda", "cpu"), ("cpu", "cuda")):
        model = _fit(name, X, device=model_device)
        before = _snapshot(model)
        # the same kernel on both devices (kernel="auto" would differ), hence the same bias
        kw = dict(n_temperatures=50, n_chains=8, kernel="collapsed", random_state=0)
        here = ais_log_likelihood(model, X[:20], device=model_device, **kw)
        there = ais_log_likelihood(model, X[:20], device=eval_device, **kw)
        _assert_same(before, _snapshot(model), f"{name} on {model_device}")
        se = np.hypot(here.per_document_stderr, there.per_document_stderr)
        gap = np.abs(here.per_document - there.per_document)
        assert np.all(gap < np.maximum(0.5, 6 * np.nan_to_num(se, nan=1.0))), (gap, se)
        model.transform(X[:5])
        model.partial_fit(X)


def test_global_random_state_of_every_device_is_unchanged(X):
    cpu, cuda = torch.get_rng_state(), torch.cuda.get_rng_state_all()
    for name in ESTIMATORS:
        model = _fit(name, X)
        model.transform(X)
        model.score(X)
    assert torch.equal(torch.get_rng_state(), cpu)
    assert all(torch.equal(a, b) for a, b in zip(torch.cuda.get_rng_state_all(), cuda))


def test_model_pickled_on_cuda_loads_where_cuda_is_hidden(tmp_path, X):
    for name in ESTIMATORS:
        model = _fit(name, X)
        expected = model.transform(X), model.score(X)
        path = tmp_path / f"{name}.pkl"
        path.write_bytes(pickle.dumps((pickle.dumps(model), X)))
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
        proc = subprocess.run([sys.executable, "-c", _LOADER, str(path)], env=env,
                              capture_output=True, text=True)
        assert proc.returncode == 0, f"{name}: {proc.stderr[-3000:]}"
        out = pickle.loads((tmp_path / f"{name}.pkl.out").read_bytes())
        if name == "LDAGibbs":  # sampled with the CPU's generator there: Monte Carlo error
            assert np.abs(out["transform"] - expected[0]).mean() < 0.03
        else:  # the encoder, read off: float round-off only
            np.testing.assert_allclose(out["transform"], expected[0], rtol=1e-4, atol=1e-5)
        assert out["score"] == pytest.approx(expected[1], rel=1e-2)


def test_deterministic_mode_is_a_clear_error_on_cuda(X):
    previous = (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        torch.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="sktopics cannot run on CUDA"):
            LDAGibbs(3, max_iter=2, device="cuda").fit(X)
        with pytest.raises(RuntimeError, match="sktopics cannot run on CUDA"):
            ais_log_likelihood((split(PHI), ALPHA), repeated(n=10), device="cuda")
        torch.use_deterministic_algorithms(True, warn_only=True)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            LDAGibbs(3, max_iter=2, device="cuda").fit(X)
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])


# --------------------------------------------------------------------------- evaluation on CUDA


@pytest.mark.parametrize("kernel", ["auto", "blocked", "collapsed"])
def test_ais_and_ratio_ais_on_cuda_are_unbiased(kernel):
    words = words_of(DOC)
    exact = exact_log_likelihood(PHI, ALPHA, words)
    res = ais_log_likelihood((split(PHI), ALPHA), repeated(), n_temperatures=4, n_chains=1,
                             schedule="linear", kernel=kernel, device="cuda", random_state=0)
    assert_unbiased_in_probability(res.per_document, exact_copy(exact))
    ratio = exact - exact_log_likelihood(PHI_B, ALPHA_B, words)
    paths = ("hybrid", "convex") if kernel == "blocked" else ("geometric", "hybrid", "convex")
    for path in paths:
        res = ratio_ais((split(PHI), ALPHA), (split(PHI_B), ALPHA_B), repeated(n=2000), path=path,
                        n_temperatures=3, n_chains=1, start="exact", align_topics=False,
                        kernel=kernel, device="cuda", random_state=0)
        assert_unbiased_in_probability(res.forward, ratio)
    snaps = [(PHI_B, ALPHA_B), (0.5 * (PHI + PHI_B), 0.5 * (ALPHA + ALPHA_B)), (PHI, ALPHA)]
    results = iteration_ais([(split(phi), alpha) for phi, alpha in snaps], repeated(n=2000),
                            n_start_temperatures=4, n_segment_temperatures=2, n_chains=1,
                            kernel=kernel, device="cuda", random_state=0)
    for (phi, alpha), res in zip(snaps, results):
        assert_unbiased_in_probability(res.per_document,
                                       exact_copy(exact_log_likelihood(phi, alpha, words)))


def test_left_to_right_pam_ais_and_hmc_on_cuda(X):
    words = words_of(DOC)
    res = left_to_right_log_likelihood((split(PHI), ALPHA), repeated(), n_particles=2,
                                       n_filters=1, device="cuda", random_state=0)
    assert_unbiased_in_probability(res.per_document,
                                   exact_copy(exact_log_likelihood(PHI, ALPHA, words)))
    phi, alpha_root, alpha_sub = _pam_problem()
    doc = np.array([2, 1, 0, 1])
    exact = exact_pam_log_likelihood(phi, alpha_root, alpha_sub, words_of(doc))
    res = ais_log_likelihood(_PAMView(split(phi), alpha_root, alpha_sub), repeated(doc, 3000),
                             n_temperatures=4, n_chains=1, schedule="linear", device="cuda",
                             random_state=0)
    assert_unbiased_in_probability(res.per_document, exact_copy(exact, doc))
    prodlda = _fit("ProdLDA", X)
    cpu = ais_log_likelihood(prodlda, X[:10], n_temperatures=50, n_chains=8, device="cpu",
                             random_state=0)
    gpu = ais_log_likelihood(prodlda, X[:10], n_temperatures=50, n_chains=8, device="cuda",
                             random_state=0)
    assert gpu.method == "ais-hmc"
    assert abs(gpu.total - cpu.total) < max(1.0, 6 * np.hypot(gpu.stderr, cpu.stderr))


# --------------------------------------------------------------------------- no host syncs in hot loops


def _switch_lines():
    """``file:line`` of every line of ``torch.cuda.set_sync_debug_mode``."""
    lines, first = inspect.getsourcelines(torch.cuda.set_sync_debug_mode)
    path = inspect.getsourcefile(torch.cuda.set_sync_debug_mode)
    return {f"{path}:{first + i}" for i in range(len(lines))}


def _syncs(fn):
    """Where ``fn`` makes synchronising CUDA calls (torch's sync debug mode): a
    Counter of ``file:line``.

    Warnings that surface on the line switching the debug mode off are left out:
    in the whole suite one such appeared once in 8 Gibbs sweeps, with or without the
    garbage collector, while the same fits run alone, with every synchronisation's
    stack recorded, made none (likeliest source: a thread an earlier test left
    behind, whose warning torch delivers at this thread's next call).
    """
    torch.cuda.synchronize()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        torch.cuda.set_sync_debug_mode("warn")
        try:
            fn()
        finally:
            torch.cuda.set_sync_debug_mode("default")
    where = Counter(f"{w.filename}:{w.lineno}" for w in caught
                    if "synchroniz" in str(w.message))
    for line in _switch_lines() & set(where):
        del where[line]
    return where


def _per_step(make, small, large, where):
    """Syncs added by each extra step (sweep, epoch, temperature) of ``make(n)``; the
    lines that made the extra ones go to ``where``."""
    make(small)  # warm-up: caches, compilation
    extra = _syncs(lambda: make(large))
    extra.subtract(_syncs(lambda: make(small)))
    where.update({line: n for line, n in extra.items() if n})
    return sum(extra.values()) / (large - small)


def test_hot_loops_do_not_synchronise_per_step(X, record_property):
    X_big = make_lda_corpus(n_samples=400, n_features=50, n_components=4, random_state=0)[0]
    where = {"gibbs": Counter(), "epochs": Counter(), "ais": Counter()}
    gibbs = _per_step(lambda n: LDAGibbs(4, max_iter=n, n_kept_samples=1, optimize_interval=None,
                                         evaluate_every=1000, device="cuda").fit(X_big), 4, 12,
                      where["gibbs"])
    epochs = _per_step(lambda n: ESTIMATORS["ProdLDA"]().set_params(
        device="cuda", max_iter=n, batch_size=20).fit(X_big), 2, 6, where["epochs"])
    view = (split(PHI), ALPHA)
    ais = {k: _per_step(lambda n, k=k: ais_log_likelihood(view, repeated(n=200), n_chains=2,
                                                          n_temperatures=n, kernel=k,
                                                          device="cuda"), 5, 25, where["ais"])
           for k in ("collapsed", "blocked")}
    record_property("syncs_per_sweep", gibbs)
    record_property("syncs_per_epoch", epochs)
    record_property("syncs_per_temperature", ais)
    record_property("extra_syncs_at", {k: dict(v) for k, v in where.items()})
    assert gibbs == 0, where["gibbs"]
    assert epochs <= 2  # the epoch's losses read back once (train and valid)
    assert ais["collapsed"] == 0 and ais["blocked"] <= 1  # the Gamma draws' acceptance check


@pytest.mark.parametrize("name", ["ProdLDA", "AVITM", "PAMVI", "MoLDA"])
def test_cuda_graph_training_matches_eager_training(X, name, monkeypatch):
    """The recorded and replayed training steps (CUDA graphs) train the eager
    steps' model: a capture happened, none failed, and the weights agree."""
    from sktopics._neural import _graphs

    captures = []
    capture = _graphs.CUDAGraphBackend.capture
    monkeypatch.setattr(_graphs.CUDAGraphBackend, "capture",
                        lambda self, step: captures.append(1) or capture(self, step))
    params = dict(max_iter=6, batch_size=20)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # a failed capture warns
        graphed = _fit(name, X, **params)
    assert captures
    monkeypatch.setenv("SKTOPICS_CUDA_GRAPHS", "0")
    eager = _fit(name, X, **params)
    for key, value in eager.net_.module_.state_dict().items():
        torch.testing.assert_close(graphed.net_.module_.state_dict()[key], value,
                                   rtol=1e-3, atol=1e-4, msg=key)


def test_a_failed_cuda_graph_capture_leaves_the_random_generator_working(X, monkeypatch):
    """A step that synchronises with the host cannot be recorded: the fit warns once,
    trains eagerly (dropout and the reparameterisation draw random numbers), and the
    device's generator still draws afterwards, although the failed capture never
    reached torch's capture epilogue."""
    from sktopics._neural import _graphs

    capture = _graphs.CUDAGraphBackend.capture

    def synchronising(self, step):
        def step_then_read():
            outputs = step()
            outputs[0].item()  # a host read while the stream records: the capture fails
            return outputs
        return capture(self, step_then_read)

    pools = []  # the failed capture's memory pool
    handle = torch.cuda.graph_pool_handle
    monkeypatch.setattr(torch.cuda, "graph_pool_handle", lambda: pools.append(handle()) or pools[-1])
    monkeypatch.setattr(_graphs.CUDAGraphBackend, "capture", synchronising)
    with pytest.warns(RuntimeWarning, match="CUDA graph failed") as record:
        model = _fit("ProdLDA", X, max_iter=6, batch_size=20, dropout=0.2)
    assert sum(w.category is RuntimeWarning and "CUDA graph" in str(w.message)
               for w in record) == 1
    assert np.isfinite(model.components_).all()
    draws = torch.rand(1000, device=CUDA)
    assert 0.4 < draws.mean().item() < 0.6
    assert torch.cuda.current_stream(CUDA) == torch.cuda.default_stream(CUDA)
    # no allocation is routed to the failed capture's pool any more: ending it again fails
    end = (getattr(torch._C, "_cuda_endAllocateToPool", None)
           or torch._C._cuda_endAllocateCurrentStreamToPool)
    assert len(pools) == 1
    with pytest.raises(RuntimeError):
        end(CUDA.index, pools[0])
    captures = []  # and the next fit records its step again
    monkeypatch.setattr(_graphs.CUDAGraphBackend, "capture",
                        lambda self, step: captures.append(1) or capture(self, step))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _fit("ProdLDA", X, max_iter=6, batch_size=20)
    assert captures


def test_auto_sampler_on_cuda_is_the_fused_parallel_sweep(X):
    """At K = 600 "auto" takes the fused kernel on a GPU, and the kernel really runs: a
    fallback would warn, record its failure and switch the fit to MH."""
    pytest.importorskip("triton")
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        model = LDAGibbs(600, max_iter=3, device="cuda", random_state=0).fit(X)
    assert model.algorithm_ == "parallel"
    assert not fused._failures and fused.fused_dense_available("cuda", 600)
    with config_context(cpu_kernels="torch"):  # the CPU's torch operations take MH
        cpu = LDAGibbs(600, max_iter=1, device="cpu", random_state=0).fit(X)
    assert cpu.algorithm_ == "mh"
