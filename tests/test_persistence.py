"""Model files: ``sktopics.save`` / ``sktopics.load`` (``sktopics.io``).

* A round trip is exact: every fitted attribute, ``transform``, ``score``,
  ``score_samples`` and ``top_words`` come back bit for bit, for each estimator alone
  and inside a Pipeline, and continuing to train (``partial_fit``, a warm ``fit``, the
  end of a fit stopped by Ctrl-C) after loading gives what it gives without the round
  trip.
* Loading runs no code from the file: every load here runs under a guard that fails
  on unpickling (``pickle.load``, ``pickle.loads``, ``torch.load``, any unpickler's
  class lookup), ``exec``, ``compile`` and the import of a module not yet imported, and
  crafted files (another class, shapes that disagree, truncated, not safetensors,
  unknown versions, state that would make the samplers index outside their tables, a
  small file asking for a large network) are refused with a
  :class:`~sktopics.io.ModelFileError` saying what is wrong, before anything large is
  allocated.
* Versions, devices and the Hub helpers; the files of ``tests/data/saved_models``
  (written by ``tools/make_saved_models.py``) still load and give their topics.
"""

import contextlib
import importlib
import inspect
import json
import pickle
import shutil
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer
from sklearn.pipeline import Pipeline, make_pipeline

import sktopics
from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA, top_words
from sktopics._gibbs import _lda_gibbs
from sktopics._gibbs._state import GibbsCorpus
from sktopics._neural._net import EpochMonitor
from sktopics.datasets import make_lda_corpus
from sktopics.io import FORMAT_VERSION, ModelFileError, _format, _migrations
from sktopics.io._encoder import MAX_DEPTH, Decoder, Encoder
from sktopics.io._format import read_file, write_file
from sktopics.io._registry import STATE_CODECS
from sktopics.utils import DeviceWarning

from ._instances import FAST_PARAMS

try:
    import safetensors  # noqa: F401
except ImportError:
    HAVE_SAFETENSORS = False
else:
    HAVE_SAFETENSORS = True

#: The tests that run without safetensors (every other one is skipped there).
_WITHOUT_SAFETENSORS = {"test_save_without_safetensors_says_how_to_install_it",
                        "test_model_file_error_is_a_value_error",
                        "test_the_top_level_names_are_sktopics_io_s",
                        "test_the_unpickling_guard_has_power"}


@pytest.fixture(autouse=True)
def _needs_safetensors(request):
    if not HAVE_SAFETENSORS and request.function.__name__ not in _WITHOUT_SAFETENSORS:
        pytest.skip("needs safetensors (pip install 'sktopics[io]')")

ESTIMATORS = [LDAGibbs, AVITM, ProdLDA, PAMVI, MoLDA]
SAVED_MODELS = Path(__file__).parent / "data" / "saved_models"

#: Texts for the pipelines: two clear themes, a few words each.
TEXTS = ["apple banana cherry apple fruit", "banana cherry banana fruit juice",
         "dog cat mouse dog pet", "cat mouse cat pet food", "apple cherry banana juice",
         "dog mouse cat pet", "fruit juice apple", "pet food dog cat"] * 4


def _params(cls, **extra):
    return {**FAST_PARAMS[cls], "device": "cpu", "random_state": 0, **extra}


@pytest.fixture(scope="module")
def X():
    counts, _, _ = make_lda_corpus(n_samples=40, n_features=30, n_components=3, random_state=0)
    return sp.csr_matrix(counts)


#: The audit events that mean code is being run or looked up (Python's audit events
#: table): an unpickler's class lookup, ``exec``/``eval`` of code, compiling source, the
#: import of a module not imported yet, and the usual ways out to the system.
_CODE_EVENTS = frozenset({"pickle.find_class", "exec", "compile", "import", "marshal.loads",
                          "os.system", "subprocess.Popen", "os.exec", "os.posix_spawn"})

#: The guard's state: the audit hook below acts only while ``active`` (audit hooks
#: cannot be removed, so it is installed once and switched on around loads).
_GUARD = {"active": False, "events": []}


def _audit(event, args):
    if _GUARD["active"] and event in _CODE_EVENTS:
        _GUARD["events"].append((event, repr(args)[:200]))
        raise RuntimeError(f"a model file load reached {event}")


sys.addaudithook(_audit)


@contextlib.contextmanager
def no_unpickling():
    """Inside the block, loading a model must run no code: ``pickle.load``,
    ``pickle.loads`` and ``torch.load`` raise, and an audit hook records (and refuses)
    any unpickler's class lookup, ``exec``, ``compile`` and import of a module not
    imported yet; the block fails when anything was recorded, even if the code under
    test caught the exception. (Only around loading: numba's kernel cache unpickles
    its own compiled code when a fit first runs a kernel.)"""
    def refuse(*args, **kwargs):
        raise AssertionError("a model file load reached pickle or torch.load")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(pickle, "load", refuse)
        patch.setattr(pickle, "loads", refuse)
        patch.setattr(torch, "load", refuse)
        _GUARD["events"].clear()
        _GUARD["active"] = True
        try:
            yield
        finally:
            _GUARD["active"] = False
    events = list(_GUARD["events"])
    _GUARD["events"].clear()
    assert not events, f"a model file load ran code: {events}"


@pytest.fixture(scope="module", autouse=True)
def _imports_done(tmp_path_factory):
    """One load of each kind of file before the guarded ones, so that the modules a
    first load imports lazily (torch's meta kernels, safetensors) are imported: inside
    the guard, any import is then one that a file caused."""
    if not HAVE_SAFETENSORS:
        return
    folder = tmp_path_factory.mktemp("warm")
    X, _, _ = make_lda_corpus(n_samples=20, n_features=10, n_components=2, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = [make_pipeline(CountVectorizer(), LDAGibbs(**_params(LDAGibbs))).fit(TEXTS),
                  *(cls(**_params(cls)).fit(X) for cls in (ProdLDA, PAMVI))]
    for i, model in enumerate(models):
        path = sktopics.save(model, folder / f"{i}.safetensors")
        sktopics.load(path)
        if torch.cuda.is_available():  # a first load onto a GPU imports more
            sktopics.load(path, device="cuda")
        data = path.read_bytes()
        (folder / "bad.safetensors").write_bytes(data[:len(data) // 2])
        with pytest.raises(ModelFileError):
            sktopics.load(folder / "bad.safetensors")


def _load(path, **kwargs):
    """``sktopics.load`` (on the CPU unless told) with unpickling made to fail."""
    with no_unpickling():
        return sktopics.load(path, **{"device": "cpu", **kwargs})


def _round_trip(obj, tmp_path, name="model.safetensors", **load_kwargs):
    path = sktopics.save(obj, tmp_path / name)
    assert path == tmp_path / name and path.is_file()
    return _load(path, **load_kwargs)


def test_the_unpickling_guard_has_power():
    with no_unpickling(), pytest.raises(AssertionError, match="reached pickle"):
        pickle.loads(pickle.dumps(1))
    with no_unpickling(), pytest.raises(AssertionError, match="reached pickle"):
        torch.load("anything")
    payload = pickle.dumps(Path("x"))
    code = compile("1 + 1", "<file>", "exec")
    sys.modules.pop("colorsys", None)
    attempts = {
        "pickle.find_class": lambda: pickle.Unpickler(__import__("io").BytesIO(payload)).load(),
        "exec": lambda: exec(code),
        "compile": lambda: compile("1 + 1", "<file>", "eval"),
        "import": lambda: importlib.import_module("colorsys"),
    }
    for event, attempt in attempts.items():
        # (an import may be caught at its "import" event or at reading the module's code)
        event = "import|marshal.loads" if event == "import" else event
        with pytest.raises(AssertionError, match=f"ran code.*({event})"):
            with no_unpickling():
                with contextlib.suppress(Exception):  # caught by the code under test
                    attempt()
    with no_unpickling():  # what a load does: arrays, JSON, an import already done
        json.loads('{"a": [1, 2]}')
        importlib.import_module("json")


# ------------------------------------------------------------------ comparisons
#: What differs between two runs of the same training: the epochs' wall-clock times.
CLOCK = ("dur",)


def _assert_same(a, b, path="model", skip=()):
    """``a`` and ``b`` hold the same values, types and dtypes, recursively (arrays bit
    for bit, the net's weights, optimiser state and history included), except dict
    entries named in ``skip``."""
    if isinstance(a, torch.Tensor):
        assert isinstance(b, torch.Tensor) and a.dtype == b.dtype, path
        assert torch.equal(a.cpu(), b.cpu()), path
        return
    assert type(a) is type(b), f"{path}: {type(a)} != {type(b)}"
    if isinstance(a, np.ndarray):
        assert a.dtype == b.dtype and a.shape == b.shape, path
        np.testing.assert_array_equal(a, b, err_msg=path)
    elif isinstance(a, dict):
        assert list(a) == list(b), f"{path}: keys {list(a)} != {list(b)}"
        for key in a:
            if key not in skip:
                _assert_same(a[key], b[key], f"{path}[{key!r}]", skip)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            _assert_same(x, y, f"{path}[{i}]", skip)
    elif type(a).__name__ == "TopicNet":
        _assert_same(a.module_.state_dict(), b.module_.state_dict(), f"{path}.module_")
        _assert_same(a.optimizer_.state_dict(), b.optimizer_.state_dict(), f"{path}.optimizer_")
        _assert_same(list(map(dict, a.history)), list(map(dict, b.history)), f"{path}.history",
                     skip)
        assert a.module_.training == b.module_.training, path
        for (name, x), (_, y) in zip(a.module_.named_modules(), b.module_.named_modules()):
            for attr in ("training", "use_running_stats", "free_bits"):
                assert getattr(x, attr, None) == getattr(y, attr, None), f"{path}.{name}.{attr}"
    elif hasattr(a, "__dict__") and not isinstance(a, (type, torch.device)):
        _assert_same(vars(a), vars(b), path, skip)
    elif isinstance(a, float) and np.isnan(a):
        assert np.isnan(b), path
    else:
        assert a == b, f"{path}: {a!r} != {b!r}"


def _assert_same_params(a, b):
    pa, pb = a.get_params(), b.get_params()
    assert pa.keys() == pb.keys()
    for key in pa:
        if hasattr(pa[key], "get_params"):
            assert type(pa[key]) is type(pb[key]), key
        elif key != "steps":
            _assert_same(pa[key], pb[key], key)


def _model(obj):
    return obj[-1] if isinstance(obj, Pipeline) else obj


def _fitted(cls, X, pipeline=False, **extra):
    estimator = cls(**_params(cls, **extra))
    if pipeline:
        return make_pipeline(CountVectorizer(), estimator).fit(TEXTS)
    return estimator.fit(X)


def _data(obj, X):
    return TEXTS if isinstance(obj, Pipeline) else X


# --------------------------------------------------------------------- round trips
@pytest.mark.parametrize("pipeline", [False, True], ids=["alone", "pipeline"])
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_round_trip_is_exact(cls, pipeline, X, tmp_path):
    original = _fitted(cls, X, pipeline)
    loaded = _round_trip(original, tmp_path)
    assert type(loaded) is type(original)
    data = _data(original, X)
    _assert_same(vars(_model(loaded)), vars(_model(original)))
    np.testing.assert_array_equal(loaded.transform(data), original.transform(data))
    assert loaded.score(data) == original.score(data)
    np.testing.assert_array_equal(loaded.score_samples(data), original.score_samples(data))
    assert top_words(loaded, 5) == top_words(original, 5)
    _assert_same_params(loaded, original)
    again = clone(loaded)
    _assert_same_params(again, original)
    assert not hasattr(_model(again), "components_")


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_partial_fit_after_loading_continues_exactly(cls, X, tmp_path):
    first, second = X[:25], X[15:]
    original = cls(**_params(cls))
    original.partial_fit(first)
    original.partial_fit(second)
    loaded = _round_trip(original, tmp_path)
    for model in (original, loaded):
        model.partial_fit(first)
    assert loaded.n_iter_ == original.n_iter_ == 3
    _assert_same(vars(loaded), vars(original), skip=CLOCK)
    np.testing.assert_array_equal(loaded.transform(X), original.transform(X))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_warm_fit_after_loading_continues_exactly(cls, X, tmp_path):
    extra = {"snapshot_interval": 2} if cls is LDAGibbs else {}
    original = cls(**_params(cls, warm_start=True, **extra)).fit(X)
    loaded = _round_trip(original, tmp_path)
    original.fit(X)
    loaded.fit(X)
    assert loaded.n_iter_ == original.n_iter_ == 2 * FAST_PARAMS[cls]["max_iter"]
    _assert_same(vars(loaded), vars(original), skip=CLOCK)
    if cls is LDAGibbs:
        assert len(loaded.snapshots_) == 5 and loaded._memory is not None


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_warm_fit_of_a_loaded_pipeline_continues_exactly(cls, tmp_path):
    pipe = make_pipeline(CountVectorizer(), cls(**_params(cls, warm_start=True)))
    pipe.fit(TEXTS)
    loaded = _round_trip(pipe, tmp_path)
    pipe.fit(TEXTS)
    loaded.fit(TEXTS)
    _assert_same(vars(loaded[-1]), vars(pipe[-1]), skip=CLOCK)


def test_a_fit_stopped_by_ctrl_c_finishes_exactly_after_loading(X, tmp_path, monkeypatch):
    params = _params(LDAGibbs, max_iter=8, burn_in=2, n_kept_samples=2, sample_interval=2,
                     optimize_interval=2)
    whole = LDAGibbs(**params).fit(X)
    stopped = LDAGibbs(**params)
    original = _lda_gibbs.parallel_sweep

    def press_ctrl_c(state, alpha, beta, seed, sweep, *args):
        if sweep == 3:
            import signal

            signal.raise_signal(signal.SIGINT)
        return original(state, alpha, beta, seed, sweep, *args)

    with monkeypatch.context() as patch:
        patch.setattr(_lda_gibbs, "parallel_sweep", press_ctrl_c)
        with pytest.raises(KeyboardInterrupt, match="3 sweeps"):
            stopped.fit(X)
    assert stopped._interrupted_run is not None
    loaded = _round_trip(stopped, tmp_path)
    loaded.set_params(warm_start=True).fit(X)
    assert loaded.n_iter_ == 8 and loaded._interrupted_run is None
    for name in ("components_", "doc_topic_", "doc_topic_prior_", "log_likelihood_trace_"):
        np.testing.assert_array_equal(getattr(loaded, name), getattr(whole, name), err_msg=name)


def test_a_neural_fit_stopped_by_ctrl_c_finishes_exactly_after_loading(X, tmp_path,
                                                                        monkeypatch):
    params = _params(ProdLDA, max_iter=4)
    whole = ProdLDA(**params).fit(X)
    stopped = ProdLDA(**params)

    def press_ctrl_c(self, net, **kwargs):
        if len(net.history) == 2 and not getattr(self, "_pressed", False):
            import signal

            self._pressed = True
            signal.raise_signal(signal.SIGINT)

    with monkeypatch.context() as patch:
        patch.setattr(EpochMonitor, "on_batch_begin", press_ctrl_c, raising=False)
        with pytest.raises(KeyboardInterrupt, match="2 epochs"):
            stopped.fit(X)
    loaded = _round_trip(stopped, tmp_path)
    assert loaded._interrupted_run is not None
    loaded.set_params(warm_start=True).fit(X)
    assert loaded.n_iter_ == 4
    np.testing.assert_array_equal(loaded.components_, whole.components_)
    np.testing.assert_array_equal(loaded.transform(X), whole.transform(X))


@pytest.mark.parametrize("cls", ESTIMATORS)
def test_an_unfitted_estimator_round_trips_its_parameters(cls, tmp_path):
    original = cls(**_params(cls, random_state=3))
    loaded = _round_trip(original, tmp_path)
    _assert_same_params(loaded, original)
    assert not hasattr(loaded, "components_") and vars(loaded) == vars(original)
    pipe = _round_trip(make_pipeline(CountVectorizer(min_df=2), original), tmp_path, "p.safetensors")
    assert pipe[0].min_df == 2 and not hasattr(pipe[0], "vocabulary_")


def test_parameters_of_every_kind_round_trip(tmp_path):
    model = PAMVI(structure={"levels": (2, 3), "masks": [None, np.array([[1, 1, 0], [0, 1, 1]])]},
                  subtopic_prior=np.array([0.5, 1.0, 2.0]), doc_topic_prior=(1.0, 2.0),
                  hidden_sizes=[8], adam_betas=(0.9, 0.99), device=torch.device("cpu"),
                  random_state=np.random.RandomState(4))
    loaded = _round_trip(model, tmp_path)
    params = loaded.get_params()
    assert params["structure"]["levels"] == (2, 3) and params["hidden_sizes"] == [8]
    np.testing.assert_array_equal(params["structure"]["masks"][1], [[1, 1, 0], [0, 1, 1]])
    assert params["doc_topic_prior"] == (1.0, 2.0) and params["device"] == torch.device("cpu")
    assert params["random_state"].randint(1000) == np.random.RandomState(4).randint(1000)
    vectorizer = CountVectorizer(dtype=np.float32, ngram_range=(1, 2), stop_words=["pet"],
                                 vocabulary={"apple": 1, "dog": 0})
    pipe = _round_trip(make_pipeline(vectorizer, LDAGibbs(**_params(LDAGibbs))).fit(TEXTS),
                       tmp_path, "p.safetensors")
    assert pipe[0].dtype is np.float32 and pipe[0].vocabulary_ == {"apple": 1, "dog": 0}
    assert pipe[0].get_params() == vectorizer.get_params()


# ------------------------------------------------------------ what save refuses
class _OwnLDA(LDAGibbs):
    pass


def test_save_refuses_what_is_not_a_sktopics_model(tmp_path):
    from sklearn.linear_model import LogisticRegression

    for obj in (LogisticRegression(), _OwnLDA(), CountVectorizer(), [1, 2]):
        with pytest.raises(TypeError, match="sktopics.save takes"):
            sktopics.save(obj, tmp_path / "x.safetensors")
    assert not list(tmp_path.iterdir())


def test_save_refuses_other_pipeline_steps_and_callables_naming_them(tmp_path):
    model = LDAGibbs(**_params(LDAGibbs))
    cases = [
        (make_pipeline(CountVectorizer(), TfidfTransformer(), model), "'tfidftransformer'"),
        (make_pipeline(CountVectorizer(), CountVectorizer()), "'countvectorizer-2'"),
        (Pipeline([("counts", CountVectorizer()), ("skip", "passthrough"), ("lda", model)]),
         "'skip'"),
        (make_pipeline(CountVectorizer(tokenizer=str.split), model),
         "step 'countvectorizer'.*parameter 'tokenizer'"),
        (make_pipeline(CountVectorizer(preprocessor=lambda s: s.lower()), model),
         "parameter 'preprocessor'"),
        (make_pipeline(CountVectorizer(analyzer=str.split), model), "parameter 'analyzer'"),
    ]
    for pipe, match in cases:
        with pytest.raises(ValueError, match=match):
            sktopics.save(pipe, tmp_path / "x.safetensors")


def test_save_names_the_attribute_that_is_not_data(X, tmp_path):
    model = LDAGibbs(**_params(LDAGibbs)).fit(X)
    model.extra_ = {"fine": [1, 2.5, None], "bad": object()}
    with pytest.raises(TypeError, match=r"LDAGibbs\.extra_\['bad'\]: .* type object"):
        sktopics.save(model, tmp_path / "x.safetensors")
    neural = ProdLDA(**_params(ProdLDA), callbacks=[("print", EpochMonitor())]).fit(X)
    with pytest.raises(TypeError, match=r"ProdLDA\.params\['callbacks'\]"):
        sktopics.save(neural, tmp_path / "x.safetensors")
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("cls, change", [(LDAGibbs, {"n_components": 4}),
                                         (ProdLDA, {"hidden_sizes": (8,)})])
def test_save_refuses_parameters_changed_after_fit(cls, change, X, tmp_path):
    model = cls(**_params(cls)).fit(X).set_params(**change)
    with pytest.raises(ValueError, match="no longer describe its fitted state"):
        sktopics.save(model, tmp_path / "x.safetensors")


@pytest.mark.parametrize("cls", [AVITM, ProdLDA, PAMVI, MoLDA])
def test_save_checks_the_network_without_building_a_second_one(cls, X, tmp_path, monkeypatch):
    model = cls(**_params(cls)).fit(X)
    devices = []
    build_module = cls._build_module

    def recording(self, n_features):
        devices.append(torch.empty(0).device.type)
        return build_module(self, n_features)

    monkeypatch.setattr(cls, "_build_module", recording)
    sktopics.save(model, tmp_path / "x.safetensors")
    assert devices == ["meta"]


def test_save_without_safetensors_says_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "safetensors", None)
    with pytest.raises(ImportError, match=r'pip install "sktopics\[io\]"'):
        sktopics.save(LDAGibbs(), tmp_path / "x.safetensors")
    with pytest.raises(ImportError, match=r'pip install "sktopics\[io\]"'):
        sktopics.load(tmp_path / "x.safetensors")


# ---------------------------------------------------------------- the encoder
def test_every_kind_of_value_round_trips_through_a_file(tmp_path):
    generator = np.random.default_rng(5)
    generator.random(3)
    values = {
        "numbers": [None, True, 3, -2**70, 1.5, float("inf"), -float("inf"), "text"],
        "tuple": (1, (2, "x"), []),
        "int keys": {0: "a", 7: (1, 2)},
        "sets": [{3, 1}, frozenset({"b", "a"})],
        "numpy scalars": [np.float32(0.1), np.int64(-3), np.bool_(True), np.uint8(7)],
        "arrays": [np.arange(6, dtype=np.int16).reshape(2, 3), np.array(2.5),
                   np.zeros((0, 4)), np.array([True, False]), np.arange(5)[::2]],
        "strings": [np.array(["a", "bc", "", "é\u2028€𝄞"], dtype=object), np.array(["x", "yz"]),
                    np.array([], dtype=object)],
        "vocabularies": [{"apple": 0, "é": 2, "": 1}, {"a": np.int64(1), "b": np.int64(0)},
                         {"a": np.int32(3)}, {"mixed": 1, "types": np.int64(2)},
                         {"big": 2**70}, {"bool": True}],
        "sparse": [sp.csr_matrix(np.eye(3)), sp.csr_array(np.array([[0, 2.0], [1, 0]]))],
        "tensors": [torch.arange(4, dtype=torch.int32), torch.ones(2, 2, requires_grad=True),
                    torch.tensor(3.0), torch.zeros(3, dtype=torch.uint8)],
        "devices": [torch.device("cpu"), torch.device("cuda", 1)],
        "dtypes": [np.dtype("float32"), np.int64, float],
        "random": [np.random.RandomState(7), generator],
    }
    encoder = Encoder(STATE_CODECS)
    tree = encoder.encode(values, "values")
    text = json.dumps(tree, allow_nan=False)
    write_file(tmp_path / "v.safetensors", encoder.arrays,
               {"format": "sktopics", "format_version": str(FORMAT_VERSION)})
    _, _, arrays = read_file(tmp_path / "v.safetensors")
    back = Decoder(arrays, STATE_CODECS).decode(json.loads(text), "values")
    random = back.pop("random")
    values.pop("random")
    assert random[0].randint(10**6) == np.random.RandomState(7).randint(10**6)
    assert random[1].random() == generator.random()
    for a, b in zip(back.pop("sparse"), values.pop("sparse")):
        assert type(a) is type(b)
        np.testing.assert_array_equal(a.toarray(), b.toarray())
    assert back["numbers"][3] == -2**70 and back["numbers"][5] == float("inf")
    _assert_same(back, values)


def test_nan_and_numpy_scalar_types_survive(tmp_path):
    encoder = Encoder()
    tree = encoder.encode([float("nan"), np.float64("nan"), np.float16(1.5)], "x")
    back = Decoder({}).decode(json.loads(json.dumps(tree, allow_nan=False)), "x")
    assert type(back[0]) is float and np.isnan(back[0])
    assert type(back[1]) is np.float64 and np.isnan(back[1])
    assert type(back[2]) is np.float16 and back[2] == 1.5


@pytest.mark.parametrize("value, match", [
    (lambda: 1, "function"),
    (np.array([1 + 2j]), "complex128"),
    (np.array([["a"]], dtype=object), "one-dimensional"),
    (np.array([1, "a"], dtype=object), "holds strings"),
    (torch.zeros(2, dtype=torch.bfloat16), "bfloat16"),
    (Path("."), "Path"),
    ({1: object()}, r"x\[1\]"),
])
def test_the_encoder_refuses_what_is_not_data(value, match):
    with pytest.raises(TypeError, match=match):
        Encoder().encode({"ok": 1, "v": [value]} if match == "function" else value, "x")


# -------------------------------------------------------- no code runs on load
def _raw(path):
    """``(metadata, tree, arrays)`` of a file, read without sktopics."""
    from safetensors import safe_open

    with safe_open(str(path), framework="numpy") as handle:
        metadata = handle.metadata()
        arrays = {key: handle.get_tensor(key) for key in handle.keys()}
    return metadata, json.loads(metadata["model"]), arrays


def _write(path, metadata, tree, arrays):
    from safetensors.numpy import save_file

    save_file(arrays, str(path), metadata={**metadata, "model": json.dumps(tree)})
    return path


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """Files of a fitted LDAGibbs pipeline, a warm LDAGibbs (chain memory, snapshots),
    a fitted ProdLDA, PAMVI and MoLDA."""
    if not HAVE_SAFETENSORS:  # (module fixtures come before the autouse skip)
        pytest.skip("needs safetensors (pip install 'sktopics[io]')")
    folder = tmp_path_factory.mktemp("saved")
    X, _, _ = make_lda_corpus(n_samples=40, n_features=30, n_components=3, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        models = {
            "pipe": make_pipeline(CountVectorizer(), LDAGibbs(**_params(LDAGibbs))).fit(TEXTS),
            "lda_warm": LDAGibbs(**_params(LDAGibbs, warm_start=True, snapshot_interval=2)).fit(X),
            "prodlda": ProdLDA(**_params(ProdLDA)).fit(X),
            "pamvi": PAMVI(**_params(PAMVI)).fit(X),
            "molda": MoLDA(**_params(MoLDA)).fit(X),
        }
    return {name: sktopics.save(model, folder / f"{name}.safetensors")
            for name, model in models.items()}


def _state(tree):
    return (tree["steps"][-1][1] if tree["__type__"] == "pipeline" else tree)["state"]["value"]


def _crafted(saved, tmp_path, name, edit):
    metadata, tree, arrays = _raw(saved[name])
    metadata, tree, arrays = edit(metadata, tree, arrays) or (metadata, tree, arrays)
    return _write(tmp_path / "crafted.safetensors", metadata, tree, arrays)


def _rename_class(to):
    def edit(metadata, tree, arrays):
        tree["steps"][-1][1]["class"] = to
    return edit


def _set_state(name, node):
    def edit(metadata, tree, arrays):
        _state(tree)[name] = node
    return edit


def _resize(key_part, shape):
    def edit(metadata, tree, arrays):
        key = next(k for k in arrays if k.endswith(key_part))
        arrays[key] = np.zeros(shape, dtype=arrays[key].dtype)
    return edit


CRAFTED = {
    "a class outside the registry": (
        "pipe", _rename_class("LogisticRegression"), "names the class 'LogisticRegression'"),
    "a dotted path as class": (
        "pipe", _rename_class("os.system"), "names the class 'os.system'"),
    "a vectorizer as the model": (
        "pipe", _rename_class("CountVectorizer"), "names the class 'CountVectorizer'"),
    "an unknown value type": (
        "pipe", _set_state("n_iter_", {"__type__": "pickle", "data": "gASV"}),
        "unknown value type 'pickle'"),
    "a method name as attribute": (
        "pipe", _set_state("transform", 1), "transform: not an attribute"),
    "a dunder attribute": (
        "pipe", _set_state("__class__", "x"), "__class__: not an attribute"),
    "a parameter as attribute": (
        "pipe", _set_state("n_components", 9), "n_components: not an attribute"),
    "a missing tensor": (
        "pipe", _set_state("components_", {"__type__": "ndarray", "key": "nowhere"}),
        "tensor 'nowhere' the file does not hold"),
    "components_ against n_features_in_": (
        "pipe", _resize("components_", (3, 31)), r"components_: shape \(3, 31\)"),
    "the vocabulary against the model": (
        "pipe", _set_state("n_features_in_", 31), "components_: shape"),
    "a weight against the rebuilt network": (
        "prodlda", _resize("module_.encoder.mu.weight", (3, 9)),
        r"encoder.mu.weight: the saved state has shape \(3, 9\)"),
    "optimiser moments against the parameters": (
        "prodlda", _resize("['state'][0]['exp_avg']", (2, 2)), r"state\[0\]\['exp_avg'\]"),
    "a module attribute the network lacks": (
        "prodlda", lambda m, tree, a: tree["state"]["value"]["net_"]["module_attributes"]["value"]
        .update({"decoder": {"__type__": "dict", "value": {"forward": 1}}}),
        "decoder'].forward"),
    "an unknown parameter": (
        "prodlda", lambda m, tree, a: tree["params"]["value"].update({"n_layers": 2}),
        "no parameter.*n_layers"),
    "an invalid parameter": (
        "prodlda", lambda m, tree, a: tree["params"]["value"].update({"n_components": -1}),
        "invalid parameters for ProdLDA"),
    "no sktopics metadata": (
        "prodlda", lambda m, tree, a: (m.pop("format"), None)[1], "not a sktopics model"),
    "a newer format version": (
        "prodlda", lambda m, tree, a: m.update(format_version=str(FORMAT_VERSION + 1)),
        "written by a newer sktopics"),
    "steps as a parameter of the Pipeline": (
        "pipe", lambda m, tree, a: tree["params"]["value"].update({"steps": [["x", "passthrough"]]}),
        "steps are not a parameter"),
    "a format version that is no number": (
        "prodlda", lambda m, tree, a: m.update(format_version="1.0"), "unknown format version"),
    "model metadata that is not JSON": (
        "prodlda", lambda m, tree, a: (m, "{", a), None),
}


@pytest.mark.parametrize("case", list(CRAFTED))
def test_crafted_files_are_refused_with_a_clear_error(case, saved, tmp_path):
    name, edit, match = CRAFTED[case]
    if match is None:  # the tree itself replaced by text that is not JSON
        metadata, _, arrays = _raw(saved[name])
        from safetensors.numpy import save_file

        path = tmp_path / "crafted.safetensors"
        save_file(arrays, str(path), metadata={**metadata, "model": "{"})
        match = "not valid JSON"
    else:
        path = _crafted(saved, tmp_path, name, edit)
    with pytest.raises(ModelFileError, match=match):
        _load(path, device="cpu")


# ------------------------------------------ crafted files and what loading allocates
def _param(name, value):
    def edit(metadata, tree, arrays):
        tree["params"]["value"][name] = value
    return edit


def _tuple(*items):
    return {"__type__": "tuple", "items": list(items)}


def _pam_levels(levels):
    def edit(metadata, tree, arrays):
        _state(tree)["structure_"]["levels"] = _tuple(*levels)
    return edit


#: Small files that ask for a large network or structure: ``{case: (file, edit)}``.
#: Without the checks before building, the first took 670 MB, the PAM one ended in an
#: IndexError after allocating its masks.
ALLOCATING = {
    "hidden sizes": ("prodlda", _param("hidden_sizes", _tuple(6000, 6000))),
    "many hidden layers": ("prodlda", _param("hidden_sizes", _tuple(*[1] * 20_000))),
    "PAM levels": ("pamvi", _pam_levels((20_000, 20_000))),
    "MoLDA components": ("molda", _param("component_sizes", _tuple(2, 3 + 20_000))),
}


@pytest.mark.parametrize("case", list(ALLOCATING))
def test_a_small_file_asking_for_a_large_network_is_refused_before_building_it(
        case, saved, tmp_path, monkeypatch):
    """The order: the checks refuse the file before any module is built on a real
    device (every ``_build_module`` call runs on ``meta``, ``_build_net`` never)."""
    name, edit = ALLOCATING[case]
    path = _crafted(saved, tmp_path, name, edit)
    cls = {"prodlda": ProdLDA, "pamvi": PAMVI, "molda": MoLDA}[name]
    devices = []
    build_module = cls._build_module

    def recording(self, n_features):
        devices.append(torch.empty(0).device.type)  # where a shape-made tensor goes
        return build_module(self, n_features)

    def refuse(self, n_features):
        raise AssertionError("the network was built for real")

    monkeypatch.setattr(cls, "_build_module", recording)
    monkeypatch.setattr(cls, "_build_net", refuse)
    with pytest.raises(ModelFileError):
        _load(path)
    assert set(devices) <= {"meta"}


def test_refusing_a_small_file_allocates_little(saved, tmp_path):
    """Measured: the peak memory of a fresh process grows by under 100 MB while it
    refuses each of the :data:`ALLOCATING` files (after a load of a whole file, and a
    refused one, that took its imports and first allocations)."""
    paths = []
    for i, (name, edit) in enumerate(ALLOCATING.values()):
        paths.append(str(_crafted(saved, tmp_path, name, edit).rename(tmp_path / f"{i}.st")))
    warm = _crafted(saved, tmp_path, "prodlda", _resize("module_.encoder.mu.weight", (3, 9)))
    script = textwrap.dedent("""
        import json, resource, sys
        import sktopics
        from sktopics.io import ModelFileError

        def peak():
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # MB (Linux)

        sktopics.load(sys.argv[1])
        try:
            sktopics.load(sys.argv[2])
        except ModelFileError:
            pass
        out = []
        for path in sys.argv[3:]:
            before = peak()
            try:
                sktopics.load(path)
                error = None
            except Exception as exc:
                error = type(exc).__name__
            out.append([error, peak() - before])
        print(json.dumps(out))
    """)
    done = subprocess.run([sys.executable, "-c", script, str(saved["prodlda"]), str(warm), *paths],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    for case, (error, grown) in zip(ALLOCATING, results):
        assert error == "ModelFileError", case
        assert grown < 100, f"{case}: the peak grew by {grown:.0f} MB"


def _memory_edit(change):
    """An edit of the warm LDAGibbs file's chain memory: ``change(memory_node, arrays)``."""
    def edit(metadata, tree, arrays):
        change(_state(tree)["_memory"], arrays)
    return edit


def _shard_key(memory):
    return memory["shards"]["value"][next(iter(memory["shards"]["value"]))]["key"]


def _document_key(memory, part):
    return memory["documents"]["value"][next(iter(memory["documents"]["value"]))]["items"][part]["key"]


def _set_array(key_of, value):
    def change(memory, arrays):
        key = key_of(memory)
        arrays[key] = value(arrays[key])
    return change


#: Chain memories that would make the compiled samplers index outside their tables.
BAD_MEMORIES = {
    "a topic >= K": (_set_array(_shard_key, lambda a: np.full_like(a, 3)), r"topics outside 0 \.\. 2"),
    "a negative topic": (_set_array(_shard_key, lambda a: np.full(a.shape, -1, np.int32)),
                         "topics outside"),
    "topics as floats": (_set_array(_shard_key, lambda a: a.astype(np.float32)), "uint8"),
    "topics as a matrix": (_set_array(_shard_key, lambda a: a[:, None]), "shape"),
    "a negative count": (_set_array(lambda m: m["word_topic"]["key"], lambda a: a - a.max() - 1),
                         "negative counts"),
    "counts as int64": (_set_array(lambda m: m["word_topic"]["key"], lambda a: a.astype(np.int64)),
                        "int32"),
    "a negative document statistic": (
        _set_array(lambda m: _document_key(m, 2), lambda a: -a), "negative values"),
    "a statistic's topic >= K": (
        _set_array(lambda m: _document_key(m, 0), lambda a: a + 3), "topics outside"),
    "statistics of different lengths": (
        _set_array(lambda m: _document_key(m, 1), lambda a: a[:-1]), "different lengths"),
    "a shard without statistics": (
        lambda m, arrays: m["documents"]["value"].clear(), "same corpora"),
    "memory as a dict": (None, "expected a ChainMemory"),
}


@pytest.mark.parametrize("case", list(BAD_MEMORIES))
def test_a_chain_memory_the_samplers_cannot_trust_is_refused(case, saved, tmp_path):
    change, match = BAD_MEMORIES[case]
    if change is None:
        edit = _set_state("_memory", {"__type__": "dict", "value": {"word_topic": 1}})
    else:
        edit = _memory_edit(change)
    with pytest.raises(ModelFileError, match=match):
        _load(_crafted(saved, tmp_path, "lda_warm", edit))


BAD_STATE = {
    "negative topic tokens": (
        "lda_warm", lambda m, t, a: a.update({k: -a[k] - 1 for k in a if k.endswith("_topic_tokens")}),
        "_topic_tokens: expected token counts"),
    "a zero prior": (
        "lda_warm", lambda m, t, a: a.update({k: a[k] * 0 for k in a if k.endswith("doc_topic_prior_")}),
        "doc_topic_prior_: expected finite positive"),
    "a NaN topic-word prior": (
        "lda_warm", _set_state("topic_word_prior_", {"__type__": "float", "value": "nan"}),
        "topic_word_prior_: expected finite positive"),
    "snapshots as a dict": ("lda_warm", _set_state("snapshots_", {"__type__": "dict", "value": {}}),
                            "expected a list of Snapshot"),
    "a run as an int": ("lda_warm", _set_state("_interrupted_run", 3), "expected an LDAGibbs run"),
    "a neural run as an int": ("prodlda", _set_state("_interrupted_run", 3),
                               "expected the dict of an interrupted fit"),
    "a random state of another size": (
        "prodlda", lambda m, t, a: a.update({k: a[k][:10] for k in a if "_rng_state" in k}),
        r"_rng_state\[0\]"),
    "a transform seed of 2**70": ("lda_warm", _set_state("_transform_seed", 2**70), "_transform_seed"),
    "a numpy scalar out of its dtype's range": (
        "lda_warm", _set_state("n_iter_", {"__type__": "numpy_scalar", "dtype": "uint8", "value": 1000}),
        "not a value of dtype uint8"),
    "a generator state of huge ints": (
        "prodlda", _param("random_state", {"__type__": "numpy_generator", "bit_generator": "PCG64",
                                           "state": {"__type__": "dict", "value": {
                                               "bit_generator": "PCG64", "state": {
                                                   "__type__": "dict", "value": {"state": 2**300,
                                                                                 "inc": 2**300}},
                                               "has_uint32": 0, "uinteger": 0}}}),
        "random_state"),
    "PAM masks of other levels": (
        "pamvi", lambda m, t, a: _state(t)["structure_"]["levels"]["items"].reverse(),
        r"structure_\.masks\[0\]: shape"),
    "a format version in another script": (
        "prodlda", lambda m, t, a: m.update(format_version="\u00b2"), "unknown format version"),
    "a private attribute sktopics does not save": (
        "prodlda", _set_state("_fit_context", 1), "_fit_context: not an attribute"),
    "a private attribute of another estimator": (
        "prodlda", _set_state("_memory", None), "_memory: not an attribute"),
    "a Pipeline with a cache folder": (
        "pipe", lambda m, t, a: t["params"]["value"].update(memory="/tmp/somewhere"),
        "memory='/tmp/somewhere'"),
    "a vectorizer that opens files": (
        "pipe", lambda m, t, a: t["steps"][0][1]["params"]["value"].update(input="filename"),
        "input.*'filename'"),
    "a codec nested in itself": (
        "lda_warm", lambda m, t, a: _state(t).update(_memory=_nested_memory(MAX_DEPTH + 5)),
        "nested deeper"),
}


def _nested_memory(depth):
    node = None
    for _ in range(depth):
        node = {"__type__": "lda_chain_memory", "word_topic": node, "shards": None,
                "documents": None}
    return node


@pytest.mark.parametrize("case", list(BAD_STATE))
def test_state_of_the_wrong_type_or_range_is_refused(case, saved, tmp_path):
    name, edit, match = BAD_STATE[case]
    with pytest.raises(ModelFileError, match=match):
        _load(_crafted(saved, tmp_path, name, edit))


def test_an_unforeseen_error_while_loading_is_a_model_file_error(saved, monkeypatch):
    """Whatever the checks miss comes out as a ModelFileError, its cause chained."""
    def broken(*args, **kwargs):
        raise ZeroDivisionError("deep inside")

    monkeypatch.setattr(ProdLDA, "_build_net", broken)
    with pytest.raises(ModelFileError, match="ZeroDivisionError: deep inside") as info:
        _load(saved["prodlda"])
    assert isinstance(info.value.__cause__, ZeroDivisionError)
    monkeypatch.setattr(sktopics.io._objects, "check_fitted", broken)
    with pytest.raises(ModelFileError, match="cannot be loaded") as info:
        _load(saved["pipe"])
    assert isinstance(info.value.__cause__, ZeroDivisionError)


def test_the_header_is_checked_before_any_tensor_is_read(saved, tmp_path, monkeypatch):
    opened = []
    real = _format.import_safetensors

    def recording():
        numpy_module, safe_open, error = real()

        def opening(*args, **kwargs):
            opened.append(args)
            return safe_open(*args, **kwargs)
        return numpy_module, opening, error

    monkeypatch.setattr(_format, "import_safetensors", recording)
    edits = {"no format": lambda m, t, a: (m.pop("format"), None)[1],
             "a newer version": lambda m, t, a: m.update(format_version=str(FORMAT_VERSION + 1)),
             "no version": lambda m, t, a: (m.pop("format_version"), None)[1]}
    for edit in edits.values():
        with pytest.raises(ModelFileError):
            _load(_crafted(saved, tmp_path, "prodlda", edit))
    assert not opened
    _load(saved["prodlda"])
    assert len(opened) == 1


def test_a_shard_s_saved_topics_are_used_only_when_they_fit_the_corpus(X):
    corpus = GibbsCorpus(X, torch.device("cpu"))
    model = LDAGibbs(**_params(LDAGibbs, warm_start=True)).fit(X)
    memory = model._memory
    key = corpus.fingerprint()
    z = memory.topics(corpus)
    assert z is not None and z.shape == (corpus.n_tokens,)
    saved = memory.shards[key]
    for wrong in (saved[:-1], np.concatenate([saved, saved[:1]]),  # another length
                  np.full_like(saved, 3)):  # outside 0 .. K-1
        memory.shards[key] = wrong
        assert memory.topics(corpus) is None
    memory.shards[key] = saved
    counts = memory.word_topic
    memory.word_topic = np.zeros_like(counts)  # a file's counts that contradict the topics
    assert memory.topics(corpus) is None
    memory.word_topic = counts
    np.testing.assert_array_equal(memory.topics(corpus).numpy(), z.numpy())


def test_a_loaded_memory_whose_fingerprint_collides_starts_the_corpus_afresh(saved, tmp_path, X):
    """A file may give a shard any fingerprint (that of a public corpus): topics of
    another length are then ignored, and partial_fit runs."""
    def edit(metadata, tree, arrays):
        key = _shard_key(_state(tree)["_memory"])
        arrays[key] = arrays[key][:5]

    model = _load(_crafted(saved, tmp_path, "lda_warm", edit))
    model.partial_fit(X)
    assert np.isfinite(model.components_).all()


def test_save_refuses_a_pipeline_cache_and_vectorizers_that_open_files(tmp_path):
    model = LDAGibbs(**_params(LDAGibbs))
    with pytest.raises(ValueError, match="memory='cache'.*memory=None"):
        sktopics.save(Pipeline([("counts", CountVectorizer()), ("lda", model)], memory="cache"),
                      tmp_path / "x.safetensors")
    for kind in ("filename", "file"):
        with pytest.raises(ValueError, match=f"input='{kind}'"):
            sktopics.save(make_pipeline(CountVectorizer(input=kind), model),
                          tmp_path / "x.safetensors")
    assert not list(tmp_path.iterdir())


def test_save_refuses_private_attributes_it_does_not_know(X, tmp_path):
    model = LDAGibbs(**_params(LDAGibbs)).fit(X)
    model._notes = "mine"
    with pytest.raises(TypeError, match="LDAGibbs._notes: .*private attribute"):
        sktopics.save(model, tmp_path / "x.safetensors")
    del model._notes
    model.set_output(transform="default")  # scikit-learn's own private state is saved
    assert _round_trip(model, tmp_path)._sklearn_output_config == {"transform": "default"}


def test_a_vocabulary_problem_is_not_blamed_on_set_params(X, tmp_path):
    pipe = make_pipeline(CountVectorizer(), LDAGibbs(**_params(LDAGibbs))).fit(TEXTS)
    pipe[0].vocabulary_ = {**pipe[0].vocabulary_, "extra": len(pipe[0].vocabulary_)}
    with pytest.raises(ValueError, match="vocabulary") as info:
        sktopics.save(pipe, tmp_path / "x.safetensors")
    assert "set_params" not in str(info.value)
    pipe[0].vocabulary_ = {word: np.int32(i) for word, i in pipe[0].vocabulary_.items()
                           if word != "extra"}  # any numpy integer is an index
    loaded = _round_trip(pipe, tmp_path)
    assert loaded[0].vocabulary_ == pipe[0].vocabulary_
    assert {type(i) for i in loaded[0].vocabulary_.values()} == {np.int32}


def test_a_large_vocabulary_stays_out_of_the_json_header(tmp_path):
    words = [f"w{i:06d}é" for i in range(60_000)]
    texts = [" ".join(words[i::40]) for i in range(40)]
    pipe = make_pipeline(CountVectorizer(), LDAGibbs(**_params(LDAGibbs, max_iter=2))).fit(texts)
    path = sktopics.save(pipe, tmp_path / "big.safetensors")
    header_length = int.from_bytes(path.read_bytes()[:8], "little")
    assert header_length < 60_000  # the words are in the tensors, not the header
    loaded = _load(path)
    assert loaded[0].vocabulary_ == pipe[0].vocabulary_


def test_a_header_over_safetensors_limit_is_refused_with_an_explanation(X, tmp_path, monkeypatch):
    monkeypatch.setattr(_format, "MAX_HEADER", 2_000)
    with pytest.raises(ValueError, match="header would take .* over safetensors' limit"):
        sktopics.save(LDAGibbs(**_params(LDAGibbs)).fit(X), tmp_path / "x.safetensors")
    assert not list(tmp_path.iterdir())


def test_the_model_card_is_the_same_in_every_save(X, tmp_path):
    model = ProdLDA(**_params(ProdLDA, random_state=np.random.RandomState(0)))
    cards = []
    for name in ("a", "b"):
        _, tree_card = sktopics.io._persist.write_model(model, tmp_path / f"{name}.safetensors")
        cards.append(tree_card)
    assert cards[0] == cards[1] and "0x" not in cards[0] and "RandomState(MT19937)" in cards[0]


def test_broken_files_are_refused_with_a_clear_error(saved, tmp_path):
    data = saved["prodlda"].read_bytes()
    cases = {
        "truncated.safetensors": (data[:len(data) // 2], "truncated|not fully covered"),
        "tail.safetensors": (data[:-3], "truncated|not a valid safetensors"),
        "short.safetensors": (b"abc", "fewer than a safetensors header"),
        "pickle.safetensors": (pickle.dumps(LDAGibbs()), "not a safetensors file"),
        "zip.safetensors": (b"PK\x03\x04" + bytes(100), "not a safetensors file"),
        "text.safetensors": ((8).to_bytes(8, "little") + b"not json", "header is not JSON"),
    }
    for name, (content, match) in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ModelFileError, match=match):
            _load(tmp_path / name, device="cpu")
    with pytest.raises(FileNotFoundError):
        _load(tmp_path / "missing.safetensors")


def test_model_file_error_is_a_value_error():
    assert issubclass(ModelFileError, ValueError)


# ---------------------------------------------------------------- versions
def test_a_migration_upgrades_an_older_format_version(saved, tmp_path, monkeypatch):
    """A fake version-0 file, in which ``n_iter_`` was called ``n_sweeps_``: unknown
    without a migration, loaded once one is registered for version 0."""
    def old(metadata, tree, arrays):
        metadata["format_version"] = "0"
        state = _state(tree)
        state["n_sweeps_"] = state.pop("n_iter_")

    path = _crafted(saved, tmp_path, "pipe", old)
    monkeypatch.setattr(_migrations, "MIGRATIONS", {})
    with pytest.raises(ModelFileError, match="format version 0, which this sktopics cannot read"):
        _load(path, device="cpu")
    calls = []

    def rename(tree, arrays):
        calls.append(0)
        state = _state(tree)
        state["n_iter_"] = state.pop("n_sweeps_")
        return tree, arrays

    monkeypatch.setattr(_migrations, "MIGRATIONS", {0: rename})
    loaded = _load(path, device="cpu")
    reference = _load(saved["pipe"], device="cpu")
    assert calls == [0] and loaded[-1].n_iter_ == reference[-1].n_iter_
    np.testing.assert_array_equal(loaded.transform(TEXTS), reference.transform(TEXTS))


def test_every_file_records_its_format_and_versions(saved):
    metadata, tree, _ = _raw(saved["pipe"])
    assert metadata["format"] == "sktopics" and metadata["format_version"] == str(FORMAT_VERSION)
    versions = json.loads(metadata["versions"])
    assert versions["sktopics"] == sktopics.__version__ and {"scikit-learn", "torch"} <= set(versions)
    vocabulary = tree["steps"][0][1]["state"]["value"]["vocabulary_"]
    assert vocabulary["__type__"] == "str_int_dict"  # arrays, out of the JSON header
    card = metadata["model_card"]
    assert card.startswith("# LDAGibbs topic model") and "CountVectorizer -> LDAGibbs" in card
    assert "apple" in card and "| n_components | 3 |" in card and "32 documents" in card


def _saved_model_cases():
    return sorted(SAVED_MODELS.glob("v*/*.safetensors"))


@pytest.mark.parametrize("path", _saved_model_cases(),
                         ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_saved_models_of_every_format_version_load(path):
    """The small files written by ``tools/make_saved_models.py`` for each format version.

    ``components_`` are stored data: compared exactly. ``transform`` is computed, so it
    is compared to ``rtol=1e-5, atol=1e-7``:

    * The neural models' transform is a forward pass in float64 of float32 weights (dot
      products of up to 40 terms here, then a softmax). Another BLAS, SIMD width or
      thread count sums in another order, which moves the result by far less than
      1e-5: that covers it with room, and a wrong weight or a misplaced
      batch-norm statistic moves the proportions by 1e-2 or more.
    * LDAGibbs' transform is a sampler. Its uniforms are counter-based and its float32
      sums run in a fixed lane order on every CPU, so it normally reproduces exactly;
      a rounding that differed would flip a draw and move an entry by about 1 / (tokens
      x kept sweeps), some 1e-2, which no tolerance short of that would absorb. Such a
      failure (or an intended change of a sampler) means: check, then recompute the
      expectations with ``--update-expected``.
    """
    expected = json.loads(path.with_suffix(".json").read_text())
    model = _load(path, device="cpu")
    assert type(model).__name__ == expected["class"]
    np.testing.assert_array_equal(_model(model).components_, np.array(expected["components"]))
    data = expected["transform_input"]
    if not isinstance(model, Pipeline):
        data = np.array(data, dtype=np.float64)
    np.testing.assert_allclose(
        model.transform(data), expected["transform"], rtol=1e-5, atol=1e-7,
        err_msg="the loaded model's transform changed: if transform itself changed on purpose, "
                "recompute the expected results: python tools/make_saved_models.py "
                "--update-expected")
    assert top_words(model, 5) == expected["top_words"]
    step = _model(model)
    before = step.n_iter_
    step.partial_fit(model[:-1].transform(data) if isinstance(model, Pipeline) else data)
    assert step.n_iter_ == before + 1


def test_saved_models_cover_the_current_format_version_and_every_estimator():
    current = {p.stem for p in (SAVED_MODELS / f"v{FORMAT_VERSION}").glob("*.safetensors")}
    classes = {json.loads((SAVED_MODELS / f"v{FORMAT_VERSION}" / f"{n}.json").read_text())
               ["class"] for n in current}
    assert {"Pipeline", "AVITM", "ProdLDA", "PAMVI", "MoLDA"} <= classes
    for path in (SAVED_MODELS / f"v{FORMAT_VERSION}").glob("*.safetensors"):
        assert path.stat().st_size < 80_000, path


# ------------------------------------------------------------------ devices
def _recorded_on_cuda(saved, tmp_path, name):
    """A file as a GPU machine writes it: ``device_`` is cuda:0 (and for a neural model
    the random state has a CUDA generator's state)."""
    def edit(metadata, tree, arrays):
        _state(tree)["device_"] = {"__type__": "device", "value": "cuda:0"}
        if name == "prodlda":
            arrays["cuda_rng"] = np.zeros(16, dtype=np.uint8)
            _state(tree)["_rng_state"]["items"][1] = {"__type__": "tensor", "key": "cuda_rng"}
    return _crafted(saved, tmp_path, name, edit)


@pytest.mark.parametrize("name", ["pipe", "prodlda"])
def test_a_model_saved_on_a_gpu_loads_on_the_cpu_and_keeps_working(name, saved, tmp_path):
    path = _recorded_on_cuda(saved, tmp_path, name)
    reference = _load(saved[name], device="cpu")
    model = _load(path, device="cpu")
    assert _model(model).device_ == torch.device("cpu")
    data = TEXTS if name == "pipe" else make_lda_corpus(n_samples=40, n_features=30,
                                                        n_components=3, random_state=0)[0]
    np.testing.assert_array_equal(model.transform(data), reference.transform(data))
    counts = model[:-1].transform(data) if name == "pipe" else data
    _model(model).partial_fit(counts)
    assert _model(model).device_ == torch.device("cpu")
    if not torch.cuda.is_available():
        with pytest.warns(DeviceWarning, match="fitted on cuda:0"):
            mapped = _load(path, device=None)
        assert _model(mapped).device_ == torch.device("cpu")


def test_the_device_of_a_loaded_model_follows_the_request(saved):
    cpu = _load(saved["prodlda"], device=torch.device("cpu"))
    assert cpu.device_ == torch.device("cpu")
    assert cpu.net_.module_.encoder.mu.weight.device.type == "cpu"
    auto = _load(saved["prodlda"], device="auto")
    assert auto.device_ == sktopics.utils._devices.resolve_device("auto")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="CUDA is not available"):
            _load(saved["prodlda"], device="cuda")


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("cls", ESTIMATORS)
def test_a_model_fitted_on_a_gpu_round_trips_to_the_cpu(cls, X, tmp_path):
    original = cls(**_params(cls, device="cuda")).fit(X)
    path = sktopics.save(original, tmp_path / "gpu.safetensors")
    on_gpu = _load(path, device="cuda")
    np.testing.assert_array_equal(on_gpu.transform(X), original.transform(X))
    on_cpu = _load(path, device="cpu")
    assert on_cpu.device_ == torch.device("cpu")
    np.testing.assert_array_equal(on_cpu.components_, original.components_)
    if cls is LDAGibbs:
        # the CPU's compiled sampler and the GPU's torch one draw different random
        # numbers: the same posterior means, to Monte Carlo error of the average over
        # the documents (each document's own is about 0.05 at 10 iterations)
        np.testing.assert_allclose(on_cpu.transform(X).mean(0), original.transform(X).mean(0),
                                   atol=0.02)
    else:  # the encoder in float64 on both devices
        np.testing.assert_allclose(on_cpu.transform(X), original.transform(X), atol=1e-6)
    on_cpu.partial_fit(X)


# ---------------------------------------------------------------------- hub
@pytest.fixture
def fake_hub(monkeypatch, tmp_path):
    """huggingface_hub's upload and download, kept in a local folder (no network)."""
    hub = pytest.importorskip("huggingface_hub")
    remote = tmp_path / "remote"
    calls = {}

    # Each fake takes its arguments as the real function would (a renamed or removed
    # argument of huggingface_hub fails here, as it would fail for users).
    signatures = {name: inspect.signature(function) for name, function in (
        ("create_repo", hub.HfApi.create_repo), ("upload_folder", hub.HfApi.upload_folder),
        ("hf_hub_download", hub.hf_hub_download))}

    def create_repo(self, repo_id, **kwargs):
        signatures["create_repo"].bind(self, repo_id, **kwargs)
        calls["create_repo"] = (repo_id, kwargs)

    def upload_folder(self, *args, repo_id, folder_path, **kwargs):
        signatures["upload_folder"].bind(self, *args, repo_id=repo_id, folder_path=folder_path,
                                         **kwargs)
        calls["upload_folder"] = (repo_id, kwargs)
        shutil.copytree(folder_path, remote / repo_id, dirs_exist_ok=True)
        return "commit"

    def hf_hub_download(repo_id, filename, **kwargs):
        signatures["hf_hub_download"].bind(repo_id, filename, **kwargs)
        calls["hf_hub_download"] = (repo_id, filename, kwargs)
        return str(remote / repo_id / filename)

    monkeypatch.setattr(hub.HfApi, "create_repo", create_repo)
    monkeypatch.setattr(hub.HfApi, "upload_folder", upload_folder)
    monkeypatch.setattr(hub, "hf_hub_download", hf_hub_download)
    return remote, calls


def test_push_to_hub_and_from_pretrained(fake_hub, tmp_path):
    remote, calls = fake_hub
    pipe = make_pipeline(CountVectorizer(), LDAGibbs(**_params(LDAGibbs))).fit(TEXTS)
    assert sktopics.push_to_hub(pipe, "someone/fruit-and-pets", private=True) == "commit"
    assert calls["create_repo"] == ("someone/fruit-and-pets", {"private": True, "exist_ok": True})
    assert "LDAGibbs" in calls["upload_folder"][1]["commit_message"]
    folder = remote / "someone" / "fruit-and-pets"
    assert sorted(p.name for p in folder.iterdir()) == ["README.md", "model.safetensors"]
    readme = (folder / "README.md").read_text()
    assert readme.startswith("---\nlibrary_name: sktopics\ntags:\n- topic-modeling\n")
    assert "# LDAGibbs topic model" in readme
    with no_unpickling():
        loaded = sktopics.from_pretrained("someone/fruit-and-pets", revision="main")
    assert calls["hf_hub_download"][:2] == ("someone/fruit-and-pets", "model.safetensors")
    assert calls["hf_hub_download"][2]["revision"] == "main"
    np.testing.assert_array_equal(loaded.transform(TEXTS), pipe.transform(TEXTS))
    for local in (folder, folder / "model.safetensors"):  # a local folder or file
        with no_unpickling():
            again = sktopics.from_pretrained(local)
        np.testing.assert_array_equal(again.transform(TEXTS), pipe.transform(TEXTS))
    np.testing.assert_array_equal(_load(folder).transform(TEXTS), pipe.transform(TEXTS))


def test_from_pretrained_tells_a_missing_file_from_a_repository_id(tmp_path):
    for missing in (tmp_path / "lda.safetensors", "models/lda.safetensors", "./lda", "lda",
                    "a/b/c"):
        with pytest.raises(FileNotFoundError, match="no such file or folder"):
            sktopics.from_pretrained(missing)


def test_save_pretrained_writes_the_model_and_its_card(tmp_path):
    model = MoLDA(**_params(MoLDA))
    folder = sktopics.io.save_pretrained(model, tmp_path / "molda")
    assert (folder / "model.safetensors").is_file()
    assert "Not fitted" in (folder / "README.md").read_text()


def test_the_top_level_names_are_sktopics_io_s():
    for name in ("save", "load", "push_to_hub", "from_pretrained"):
        assert getattr(sktopics, name) is getattr(sktopics.io, name)
        assert name in sktopics.__all__ and name in dir(sktopics)
    # sktopics.io is there, but a star import does not shadow the standard library's io
    assert "io" not in sktopics.__all__ and "io" in dir(sktopics)
    namespace = {}
    exec("import io\nfrom sktopics import *", namespace)
    assert namespace["io"] is __import__("io") and namespace["load"] is sktopics.load


def test_the_hub_helpers_without_huggingface_hub_say_how_to_install_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(ImportError, match="pip install huggingface_hub"):
        sktopics.push_to_hub(LDAGibbs(), "someone/model")
    with pytest.raises(ImportError, match="pip install huggingface_hub"):
        sktopics.from_pretrained("someone/not-a-local-path")


def test_a_save_leaves_one_file_and_replaces_an_old_one(X, tmp_path):
    path = tmp_path / "model.safetensors"
    path.write_bytes(b"an older file")
    sktopics.save(LDAGibbs(**_params(LDAGibbs)).fit(X), path)
    assert [p.name for p in tmp_path.iterdir()] == ["model.safetensors"]
    assert _load(path).n_iter_ == FAST_PARAMS[LDAGibbs]["max_iter"]


def test_the_io_extra_is_in_the_test_and_docs_extras():
    tomllib = pytest.importorskip("tomllib")
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not a source checkout")
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert extras["io"] == ["safetensors>=0.4"]
    assert set(extras["io"]) <= set(extras["test"]) and set(extras["io"]) <= set(extras["docs"])
    assert any(r.startswith("huggingface_hub") for r in extras["test"])
