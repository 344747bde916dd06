"""Device logic, checked on the CPU: what must hold on any GPU machine too.

No GPU is needed. A second device is stood in for by torch's ``meta`` device (tensors
without data: computations run, nothing comes back), CUDA's presence is injected
into the pure device logic with monkeypatch, and the CUDA-only code paths that are
pure torch (sync-free resampling, fixed-point sums, the dense MH prior draw, the
device-resident corpus) are forced on the CPU and compared with the CPU paths.
``tests/test_gpu.py`` runs the same promises on a real GPU (``benchmarks/gpu_check.py``).
"""

import copy
import os
import pickle
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import sktopics._evaluation._resampling as resampling_mod
import sktopics._evaluation._zspace as zspace_mod
import sktopics._random as random_mod
from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA
from sktopics._gibbs._hyper import document_statistics, optimize_alpha
from sktopics._neural._data import CSRBatchIterator, CSRDataset, DeviceCSR
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import (
    ais_log_likelihood,
    generative_view,
    iteration_ais,
    left_to_right_log_likelihood,
    make_ais_scorer,
    make_coherence_scorer,
    make_left_to_right_scorer,
    make_ratio_ais_scorer,
    ratio_ais,
)
from sktopics.utils._devices import (
    DeviceWarning,
    available_device,
    check_deterministic_support,
    device_budget,
    resolve_device,
)
from sktopics.utils._generators import rng_scope
from sktopics.utils._modules import FrozenModule, TensorCache, evaluation_mode

from ._instances import TEST_DEVICE

NEURAL = dict(max_iter=2, batch_size=20, hidden_sizes=(8, 8), random_state=0)
ESTIMATORS = {
    "LDAGibbs": lambda: LDAGibbs(3, max_iter=10, snapshot_interval=5, random_state=0),
    "AVITM": lambda: AVITM(3, **NEURAL),
    "ProdLDA": lambda: ProdLDA(3, **NEURAL),
    "PAMVI": lambda: PAMVI(structure=(2, 3), **NEURAL),
    "MoLDA": lambda: MoLDA(component_sizes=(2, 2), **NEURAL),
}


@pytest.fixture(scope="module")
def X():
    return make_lda_corpus(n_samples=60, n_features=30, n_components=3, random_state=0)[0]


def _fit(name, X, **params):
    return ESTIMATORS[name]().set_params(**{"device": TEST_DEVICE, **params}).fit(X)


@pytest.fixture(scope="module")
def fitted(X):
    return {name: _fit(name, X) for name in ESTIMATORS}


# --------------------------------------------------------------------------- device resolution


def _fake_cuda(monkeypatch, n_devices, current=0):
    """Make torch report ``n_devices`` CUDA devices (for the pure device logic only)."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: n_devices > 0)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: n_devices)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: current)


def test_resolve_device_names_one_gpu(monkeypatch, machine_auto_device):
    _fake_cuda(monkeypatch, 2, current=1)
    assert resolve_device("auto") == torch.device("cuda", 1)
    assert resolve_device(None) == torch.device("cuda", 1)
    assert resolve_device("cuda") == torch.device("cuda", 1)
    assert resolve_device(torch.device("cuda", 0)) == torch.device("cuda", 0)
    with pytest.raises(ValueError, match="only 2 CUDA device"):
        resolve_device("cuda:2")
    _fake_cuda(monkeypatch, 0)
    assert resolve_device("auto") == torch.device("cpu")
    with pytest.raises(ValueError, match="CUDA is not available"):
        resolve_device("cuda:0")


def test_reading_tags_does_not_initialise_cuda(monkeypatch):
    """An estimator's tags (read by ``clone`` and scikit-learn's checks before any fit)
    say whether it will run on a GPU from ``is_available`` alone: asking for the current
    device would initialise CUDA in a process that may never use it."""
    _fake_cuda(monkeypatch, 1)

    def initialises(*args):
        raise AssertionError("tags initialised CUDA")

    monkeypatch.setattr(torch.cuda, "current_device", initialises)
    for model in (LDAGibbs(device="auto"), ProdLDA(), LDAGibbs(device=None)):
        assert model.__sklearn_tags__().non_deterministic
    assert not LDAGibbs(device="cpu").__sklearn_tags__().non_deterministic


def test_the_suite_runs_auto_on_its_test_device(monkeypatch):
    """The suite's switch: ``device="auto"`` runs where ``SKTOPICS_TEST_DEVICE`` says
    (the CPU unless it is "auto"), even on a machine where CUDA is visible."""
    _fake_cuda(monkeypatch, 1)
    if TEST_DEVICE == "auto":  # the machine's own choice
        assert resolve_device("auto") == torch.device("cuda", 0)
    else:
        assert resolve_device("auto") == torch.device(TEST_DEVICE)
        assert LDAGibbs(n_components=2, max_iter=1).fit(sp.eye(3, format="csr") * 3) \
            .device_ == torch.device(TEST_DEVICE)


@pytest.mark.cpu
def test_a_test_about_the_cpu_must_name_its_device():
    """A test marked ``cpu`` that leaves a device to "auto" fails (on a GPU it would run
    CUDA and pass without testing the CPU), whatever the machine has."""
    X = sp.eye(3, format="csr") * 3
    with pytest.raises(pytest.fail.Exception, match="marked 'cpu'"):
        LDAGibbs(n_components=2, max_iter=1).fit(X)
    with pytest.raises(pytest.fail.Exception, match="marked 'cpu'"):
        left_to_right_log_likelihood((np.full((2, 3), 1 / 3), 0.5), X, n_particles=2)
    assert LDAGibbs(n_components=2, max_iter=1, device="cpu").fit(X).device_.type == "cpu"


def test_the_test_device_switch_reaches_every_fast_instance(monkeypatch):
    import importlib

    from . import _instances

    try:
        monkeypatch.setenv("SKTOPICS_TEST_DEVICE", "cuda:3")
        importlib.reload(_instances)
        assert _instances.TEST_DEVICE == "cuda:3"
        assert {params["device"] for params in _instances.FAST_PARAMS.values()} == {"cuda:3"}
        hooked = {}
        _instances.use_suite_device(lambda module, name, value: hooked.update({name: value}))
        with pytest.raises(ValueError, match="cuda:3"):  # this machine has no such GPU
            hooked["_auto_device"]()
    finally:
        monkeypatch.undo()
        importlib.reload(_instances)


@pytest.mark.parametrize("n_devices, recorded, expected", [
    (0, "cuda:1", "cpu"),
    (0, "cuda", "cpu"),
    (1, "cuda:1", "cuda:0"),
    (1, "cuda", "cuda:0"),
])
def test_recorded_gpu_maps_to_an_available_device_with_a_warning(monkeypatch, n_devices,
                                                                 recorded, expected):
    _fake_cuda(monkeypatch, n_devices)
    with pytest.warns(DeviceWarning, match=f"fitted on {recorded}.*now runs on {expected}"):
        assert available_device(recorded) == torch.device(expected)


@pytest.mark.parametrize("n_devices, recorded", [(2, "cuda:1"), (1, "cuda:0"), (0, "cpu")])
def test_recorded_device_that_exists_is_kept_silently(monkeypatch, n_devices, recorded):
    _fake_cuda(monkeypatch, n_devices)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert available_device(recorded) == torch.device(recorded)


def test_deterministic_mode_on_cuda_is_a_clear_error():
    previous = (torch.are_deterministic_algorithms_enabled(),
                torch.is_deterministic_algorithms_warn_only_enabled())
    try:
        torch.use_deterministic_algorithms(True)
        with pytest.raises(RuntimeError, match="use_deterministic_algorithms.*warn_only"):
            check_deterministic_support(torch.device("cuda", 0))
        check_deterministic_support(torch.device("cpu"))  # the CPU samplers are fine
        torch.use_deterministic_algorithms(True, warn_only=True)
        check_deterministic_support(torch.device("cuda", 0))
    finally:
        torch.use_deterministic_algorithms(previous[0], warn_only=previous[1])


def test_rng_scope_restores_the_callers_generators():
    torch.manual_seed(123)
    state = torch.get_rng_state()
    with rng_scope(7):
        inside = torch.rand(3)
    assert torch.equal(torch.get_rng_state(), state)
    with rng_scope(7):
        assert torch.equal(torch.rand(3), inside)


def test_device_budget_is_the_cpu_budget_on_the_cpu():
    assert device_budget("cpu", 1 << 20) == 1 << 20


# --------------------------------------------------------------------------- never move a fitted module


def test_frozen_module_copies_per_device_and_leaves_the_source_alone():
    module = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Dropout(0.5))
    module.train()
    frozen = FrozenModule(module)
    on_meta = frozen.on("meta")
    out = on_meta(torch.ones(2, 4, device="meta"))
    assert out.device.type == "meta" and not on_meta.training
    assert frozen.on("meta") is on_meta  # one copy per device
    assert all(p.device.type == "cpu" and p.requires_grad for p in module.parameters())
    assert module.training and module[1].training


def test_evaluation_mode_restores_every_submodule():
    module = torch.nn.Sequential(torch.nn.Linear(2, 2), torch.nn.Dropout(0.1))
    module.train()
    module[0].eval()
    with evaluation_mode(module):
        assert not any(m.training for m in module.modules())
    assert module.training and not module[0].training and module[1].training


@pytest.mark.parametrize("name", ["AVITM", "ProdLDA", "PAMVI", "MoLDA"])
def test_proposal_runs_on_another_device_without_moving_the_encoder(fitted, X, name):
    # The proposal used to move the fitted encoder to the evaluation device.
    est = fitted[name]
    encoder = est.net_.module_.encoder
    before = {k: (v.device, v.clone()) for k, v in encoder.state_dict().items()}
    view = generative_view(est)
    x = torch.as_tensor(X[:5].toarray(), dtype=torch.float64)
    expected = [t.clone() for t in view.proposal(x)]
    theta = est.transform(X[:5])
    loc, scale = view.proposal(x.to("meta"))
    assert loc.device.type == "meta" and scale.device.type == "meta"
    assert loc.shape == (5, view.n_topics)
    for key, value in encoder.state_dict().items():
        assert value.device == before[key][0] and torch.equal(value, before[key][1])
    # and the view and the estimator give what they gave before, where they live
    for again, first in zip(view.proposal(x), expected):
        assert torch.equal(again, first)
    np.testing.assert_array_equal(est.transform(X[:5]), theta)


def test_views_convert_arrays_once_per_device_and_dtype(fitted):
    view = generative_view(fitted["ProdLDA"])
    theta = torch.full((4, 3), 1 / 3, dtype=torch.float32)
    first = view.likelihood.logits(theta)
    cached = dict(view.likelihood._tensors._store)
    second = view.likelihood.logits(theta)
    assert torch.equal(first, second)
    assert view.likelihood._tensors._store.keys() == cached.keys()
    assert all(view.likelihood._tensors._store[k] is v for k, v in cached.items())
    assert {k[2] for k in cached} == {torch.float32}
    cache = TensorCache()
    assert copy.deepcopy(cache)._store == {} and pickle.loads(pickle.dumps(cache))._store == {}


# --------------------------------------------------------------------------- evaluation never mutates


def _snapshot(est):
    """What evaluation might change: arrays, tensors with their devices and flags, module
    modes, optimiser state, the net's devices, the global random generators."""
    snap = {"rng": (torch.get_rng_state(), np.random.get_state()[1].copy())}
    for name, value in vars(est).items():
        if name == "net_":
            net = value
            module = net.module_
            snap["tensors"] = [(k, v.detach().clone(), v.device, v.dtype, v.requires_grad)
                               for k, v in list(module.named_parameters())
                               + list(module.named_buffers())]
            snap["modes"] = [(n, m.training, getattr(m, "use_running_stats", None))
                             for n, m in module.named_modules()]
            snap["optimizer"] = copy.deepcopy(net.optimizer_.state_dict())
            snap["net"] = (str(net.device), str(net.iterator_train__device),
                           str(net.iterator_valid__device), len(net.history))
        else:
            snap[name] = copy.deepcopy(value)
    return snap


def _assert_same(a, b, path="state"):
    if isinstance(a, torch.Tensor):
        assert a.device == b.device and a.dtype == b.dtype and torch.equal(a, b), path
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for key in a:
            _assert_same(a[key], b[key], f"{path}[{key!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (u, v) in enumerate(zip(a, b)):
            _assert_same(u, v, f"{path}[{i}]")
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        _assert_same(vars(a), vars(b), path)
    else:
        assert a == b, (path, a, b)


def _evaluations(name, est, other, X):
    view = generative_view(est)
    mixture = view.token_mixture() is not None or view.path_mixture() is not None
    yield "score", lambda: est.score(X)
    yield "perplexity", lambda: est.perplexity(X)
    yield "transform", lambda: est.transform(X)
    yield "ais scorer", lambda: make_ais_scorer(n_temperatures=3, n_chains=2)(est, X)
    yield "coherence scorer", lambda: make_coherence_scorer(top_n=3)(est, X)
    yield "ratio scorer", lambda: make_ratio_ais_scorer(other, n_temperatures=3, n_chains=2)(est, X)
    yield "ratio_ais", lambda: ratio_ais(est, other, X, n_temperatures=3, n_chains=2,
                                         direction="both", random_state=0)
    yield "ais prior start", lambda: ais_log_likelihood(est, X[:5], n_temperatures=3, n_chains=2,
                                                        start="prior", random_state=0)
    for kernel in ("collapsed", "blocked") if view.token_mixture() is not None else ("auto",):
        yield f"ais {kernel}", lambda kernel=kernel: ais_log_likelihood(
            est, X[:5], n_temperatures=3, n_chains=2, kernel=kernel, resample_threshold=0.5,
            random_state=0)
    if mixture:
        yield "left-to-right", lambda: left_to_right_log_likelihood(est, X, n_particles=5,
                                                                     random_state=0)
        yield "l2r scorer", lambda: make_left_to_right_scorer(n_particles=5)(est, X)
    if name == "LDAGibbs":
        yield "iteration_ais", lambda: iteration_ais(est, X[:5], n_start_temperatures=3,
                                                     n_segment_temperatures=2, n_chains=2,
                                                     random_state=0)


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_evaluation_never_mutates_the_estimator(X, name):
    est = _fit(name, X)
    other = _fit(name, X, random_state=1)
    if hasattr(est, "net_"):
        est.net_.module_.train()  # an unusual mode that evaluation must not switch
    for label, evaluate in _evaluations(name, est, other, X):
        before = _snapshot(est)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # e.g. an unsettled ratio bracket
            evaluate()
        _assert_same(before, _snapshot(est), label)


# --------------------------------------------------------------------------- kernel choice


def test_auto_kernel_never_picks_an_invalid_kernel():
    cuda = torch.device("cuda", 0)
    assert zspace_mod.resolve_kernel("auto", cuda) == "blocked"
    assert zspace_mod.resolve_kernel("auto", cuda, blocked_valid=False) == "collapsed"
    assert zspace_mod.resolve_kernel("auto", torch.device("cpu")) == "collapsed"
    assert zspace_mod.resolve_kernel("blocked", cuda, blocked_valid=False) == "blocked"


def test_ratio_and_iteration_ais_with_the_gpu_kernel_policy(monkeypatch):
    # On CUDA "auto" used to mean "blocked", and ratio-AIS raised whenever the
    # two alphas differed. Apply CUDA's policy to the CPU and run the default path.
    monkeypatch.setattr(zspace_mod, "AUTO_KERNEL", {"cpu": "blocked", "cuda": "blocked"})
    X = make_lda_corpus(n_samples=20, n_features=15, n_components=2, random_state=0)[0]
    a = LDAGibbs(2, max_iter=20, burn_in=2, optimize_interval=2, snapshot_interval=5,
                 device=TEST_DEVICE, random_state=0).fit(X)
    b = LDAGibbs(3, max_iter=20, device=TEST_DEVICE, random_state=1).fit(X)
    assert not np.array_equal(a.doc_topic_prior_, b.doc_topic_prior_[:2])
    cmp = ratio_ais(a, b, X, n_temperatures=3, n_chains=2, random_state=0)
    assert cmp.settings["kernel"] == "collapsed" and np.isfinite(cmp.total)
    hybrid = ratio_ais(a, b, X, path="hybrid", n_temperatures=3, n_chains=2, random_state=0)
    assert hybrid.settings["kernel"] == "blocked"
    score = make_ratio_ais_scorer(b, n_temperatures=3, n_chains=2)(a, X)
    assert np.isfinite(score)
    curve = iteration_ais(a, X, path="geometric", n_start_temperatures=3,
                          n_segment_temperatures=2, n_chains=2, random_state=0)
    assert curve[-1].settings["kernel"] == "collapsed"
    assert ais_log_likelihood(a, X, n_temperatures=3, n_chains=2).settings["kernel"] == "blocked"
    with pytest.raises(ValueError, match="blocked"):
        ratio_ais(a, b, X, kernel="blocked", n_temperatures=3, n_chains=2)


# --------------------------------------------------------------------------- GPU code paths on the CPU


def test_sync_free_resampling_gives_the_same_estimates(monkeypatch):
    # On a GPU the resampling steps run unconditionally instead of asking the device
    # whether any document needs them: the same numbers.
    X = make_lda_corpus(n_samples=30, n_features=20, n_components=3, random_state=2)[0]
    phi = np.random.default_rng(0).dirichlet(np.ones(20), 3)
    runs = {}
    for forced in (False, True):
        if forced:
            import sktopics._evaluation._smc as smc_mod

            monkeypatch.setattr(resampling_mod, "may_hold_any", lambda flags: True)
            monkeypatch.setattr(smc_mod, "may_hold_any", lambda flags: True)
        # On the CPU: CUDA's float atomics may change the last bit from run to run.
        ais = ais_log_likelihood((phi, 0.3), X, n_temperatures=10, n_chains=4,
                                 resample_threshold=0.7, random_state=0, device="cpu")
        l2r = left_to_right_log_likelihood((phi, 0.3), X, n_particles=8, random_state=0,
                                           device="cpu")
        runs[forced] = ais, l2r
    for off, on in zip(runs[False], runs[True]):
        np.testing.assert_array_equal(off.per_document, on.per_document)
        assert off.settings["n_resampling_events"] == on.settings["n_resampling_events"] > 0


def test_gamma_variates_do_not_depend_on_the_attempts_drawn_at_once():
    shape = torch.tensor([[0.05, 0.7, 3.0, 40.0]], dtype=torch.float64).expand(5000, 4)
    keys = torch.arange(5000).view(-1, 1)
    cpu = random_mod.counter_log_gamma(shape.contiguous(), keys, 9, n_tries=3)
    gpu = random_mod.counter_log_gamma(shape.contiguous(), keys, 9, n_tries=16)
    torch.testing.assert_close(cpu, gpu, rtol=0, atol=0)


def test_learned_alpha_does_not_depend_on_the_order_of_the_documents():
    """The histograms are integers (exact in any order, as a GPU's atomics add them)
    and the iteration runs on the host: the documents' order, which a GPU's threads
    do not keep, changes no bit of the learned alpha."""
    generator = torch.Generator().manual_seed(0)
    n_dk = torch.randint(0, 9, (300, 5), generator=generator, dtype=torch.int32)
    alpha = optimize_alpha([document_statistics(n_dk)], np.full(5, 0.3))
    order = torch.randperm(300, generator=generator)
    np.testing.assert_array_equal(optimize_alpha([document_statistics(n_dk[order])],
                                                 np.full(5, 0.3)), alpha)


def test_dense_mh_prior_draw_matches_the_subset_draw():
    X = make_lda_corpus(n_samples=40, n_features=30, n_components=4, random_state=0)[0]
    kw = dict(n_components=200, algorithm="mh", max_iter=3, burn_in=0, optimize_interval=None,
              doc_topic_prior=2.0, device="cpu", random_state=0)
    import sktopics._gibbs._sweeps as sweeps

    subset = LDAGibbs(**kw).fit(X)
    original = sweeps.mh_chunk
    try:
        sweeps.mh_chunk = lambda *a, **k: original(*a, **k, dense_prior=True)
        dense = LDAGibbs(**kw).fit(X)
    finally:
        sweeps.mh_chunk = original
    np.testing.assert_array_equal(subset.components_, dense.components_)


def test_device_resident_corpus_batches_like_scipy():
    rng = np.random.default_rng(0)
    dense = rng.poisson(0.5, (50, 17)).astype(float)
    dense[49, 0] = 1.0
    X = sp.csr_matrix(dense)
    # a CSR matrix may hold duplicate entries, which add up: repeat the last row's first
    first = X.indices[X.indptr[-2]]
    X = sp.csr_matrix((np.r_[X.data, 1.5], np.r_[X.indices, first], np.r_[X.indptr[:-1], X.nnz + 1]),
                      shape=X.shape)
    dense[49, first] += 1.5
    assert not X.has_canonical_format
    before = X.data.copy(), X.indices.copy(), X.indptr.copy()
    batches = [rng.integers(0, 50, 8), np.arange(50), np.array([49, 0, 49])]
    for rows, batch in zip(batches, DeviceCSR(X, "cpu").sparse_batches(batches)):
        np.testing.assert_array_equal(batch.to_dense().numpy(), dense[rows].astype(np.float32))
    for array, copy_ in zip((X.data, X.indices, X.indptr), before):  # the caller's matrix
        np.testing.assert_array_equal(array, copy_)
    iterator = CSRBatchIterator(CSRDataset(X), 8, sampling="shuffle", seed=3)
    seen = np.concatenate([b.to_dense().numpy() for b, _ in iterator])
    assert seen.shape == (48, 17)  # 6 batches of 8: the trailing 2 documents are dropped
    assert all((dense.astype(np.float32) == row).all(1).any() for row in seen)


# --------------------------------------------------------------------------- portable fitted state


_LOADER = textwrap.dedent("""
    import pickle, sys, warnings
    import numpy as np, torch
    from sktopics.utils._devices import DeviceWarning
    blob, X = pickle.load(open(sys.argv[1], "rb"))
    assert not torch.cuda.is_available()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = pickle.loads(blob)
    assert any(issubclass(w.category, DeviceWarning) for w in caught), caught
    assert model.device_ == torch.device("cpu"), model.device_
    out = {"transform": model.transform(X), "score": model.score(X)}
    net = getattr(model, "net_", None)
    if net is not None:
        assert {str(net.device), str(net.iterator_train__device)} == {"cpu"}
        assert all(p.device.type == "cpu" for p in net.module_.parameters())
    model.partial_fit(X)
    # fit resolves the device parameter again: "cuda" there is a clear error.
    model.set_params(warm_start=True, max_iter=1, device="auto").fit(X)
    out["n_iter"] = model.n_iter_
    pickle.dump(out, open(sys.argv[1] + ".out", "wb"))
""")


@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_model_recorded_on_a_gpu_loads_and_trains_on_a_cpu_only_machine(tmp_path, X, name):
    # A GPU-fitted model's device travels in its pickle. Record cuda:1 on a
    # CPU fit (what a pickle from a two-GPU machine carries) and load it where CUDA is
    # hidden: it must warn, move to the CPU and continue.
    est = _fit(name, X, device="cpu")
    expected = est.transform(X), est.score(X)
    est.device_ = torch.device("cuda", 1)
    if hasattr(est, "net_"):
        est.net_.device = est.net_.iterator_train__device = "cuda:1"
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps((pickle.dumps(est), X)))
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    subprocess.run([sys.executable, "-c", _LOADER, str(path)], check=True, env=env)
    out = pickle.loads((tmp_path / "model.pkl.out").read_bytes())
    np.testing.assert_allclose(out["transform"], expected[0], rtol=1e-6, atol=1e-7)
    assert out["score"] == pytest.approx(expected[1], rel=1e-6)
    assert out["n_iter"] == est.n_iter_ + 2


def test_neural_pickles_are_device_neutral(fitted):
    state = fitted["ProdLDA"].net_.__getstate__()
    assert state["device"] == "cpu" and state["iterator_train__device"] == "cpu"
