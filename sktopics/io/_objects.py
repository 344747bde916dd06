"""Estimators, vectorizers and pipelines to tree nodes, and back.

An object's node holds its class's registered name, its constructor parameters
(``get_params(deep=False)``) and its state: every other attribute of its ``__dict__``
(fitted attributes, and the private state that ``partial_fit`` and a warm ``fit``
continue from), each encoded as data. Loading builds the object with its class's
constructor from the parameters, checks them with the class's own validation, sets
the state and checks that the fitted arrays agree with each other; a neural model's
network is then rebuilt by the estimator (:mod:`._net`).
"""

import keyword
from numbers import Integral

import numpy as np
import torch
from sklearn.pipeline import Pipeline

from .._gibbs._chain import ChainMemory
from .._gibbs._lda_gibbs import Snapshot, _Run
from .._neural._estimator import NeuralTopicModel
from ..utils._devices import available_device
from ..utils._pipeline import final_estimator
from ._checks import Inconsistent, check_array, check_int, check_positive, check_tensor, fail
from ._encoder import Decoder, Encoder, mapping_node, type_name
from ._errors import ModelFileError
from ._net import check_module_state, decode_net, encode_net, meta_module
from ._registry import (
    CLASSES,
    ESTIMATORS,
    PRIVATE_STATE,
    SKLEARN_PRIVATE_STATE,
    STATE_CODECS,
    VECTORIZERS,
    estimator_class,
    registered_name,
)

__all__ = ["Inconsistent", "check_fitted", "check_saveable", "decode_object", "encode_object"]

#: Vectorizer attributes that are caches, not state (``_stop_words_id`` is the ``id`` of
#: the stop-word list last checked, meaningless in another process).
_VECTORIZER_CACHES = frozenset({"_stop_words_id"})

#: Why a vocabulary may disagree with the model when it is saved.
_VOCABULARY_HINT = ("the vectorizer's vocabulary does not match the topic model's features "
                    "(a step refitted, replaced or edited on its own after the Pipeline's fit?): "
                    "refit the Pipeline before saving")

#: Why private state may be wrong when it is saved.
_STATE_HINT = "a fitted or private attribute was changed by hand after fit: refit before saving"


# -------------------------------------------------------------------------- saving
def encode_object(obj):
    """``(tree, arrays)`` of a topic model or of a Pipeline ending in one."""
    encoder = Encoder(STATE_CODECS)
    if type(obj) is Pipeline:
        tree = _encode_pipeline(obj, encoder)
    elif registered_name(obj) in ESTIMATORS:
        tree = _encode_estimator(obj, type(obj).__name__, encoder)
    else:
        raise TypeError(
            f"sktopics.save takes a sktopics topic model ({', '.join(ESTIMATORS)}) or a "
            f"scikit-learn Pipeline ending in one; got {type_name(obj)}."
        )
    return tree, encoder.arrays


def _encode_pipeline(pipe, encoder):
    steps = pipe.steps
    if not isinstance(steps, list) or not steps:
        raise ValueError("Only a Pipeline with a list of steps can be saved.")
    nodes = []
    for position, step in enumerate(steps):
        name, estimator = step
        last = position == len(steps) - 1
        allowed = ESTIMATORS if last else VECTORIZERS
        if registered_name(estimator) not in allowed:
            role = ("its last step must be a sktopics topic model" if last else
                    "the steps before the topic model must be scikit-learn CountVectorizers")
            raise ValueError(
                f"Pipeline step {name!r} is {type_name(estimator)}: it cannot be saved; {role} "
                f"({', '.join(allowed)})."
            )
        if not last:
            _check_vectorizer(name, estimator)
        nodes.append([name, _encode_estimator(estimator, f"Pipeline[{name!r}]", encoder)])
    params = {key: value for key, value in pipe.get_params(deep=False).items() if key != "steps"}
    if params.get("memory") is not None:
        raise ValueError(
            f"A Pipeline with memory={params['memory']!r} cannot be saved: a loaded Pipeline "
            "would read its cache (pickles) from that folder. Set memory=None before saving."
        )
    state = _state(pipe, params.keys() | {"steps"})
    for key in state:
        _check_saveable_name(Pipeline, key, f"Pipeline.{key}")
    return {"__type__": "pipeline", "class": "Pipeline",
            "params": encoder.encode(params, "Pipeline.params"),
            "state": encoder.encode(state, "Pipeline"),
            "steps": nodes}


def _check_vectorizer(name, vectorizer):
    if vectorizer.input != "content":
        raise ValueError(
            f"Pipeline step {name!r} (CountVectorizer): input={vectorizer.input!r} cannot be "
            "saved: the loaded vectorizer would open the files named by its input. Only "
            "input='content' (the texts themselves) is saved."
        )
    for key, value in vectorizer.get_params(deep=False).items():
        if callable(value) and not isinstance(value, type):
            raise ValueError(
                f"Pipeline step {name!r} ({type(vectorizer).__name__}): parameter {key!r} holds "
                f"a callable ({value!r}), which is code and cannot be saved. Use the "
                "vectorizer's settings (token_pattern, lowercase, strip_accents='unicode', "
                "stop_words, ngram_range) instead of functions."
            )


def _state(obj, params, drop=frozenset()):
    return {key: value for key, value in vars(obj).items()
            if key not in params and key not in drop}


def _check_saveable_name(cls, key, where):
    """Refuse, when saving, an attribute that loading would refuse to set."""
    if not _settable(cls, key):
        known = ", ".join(sorted(PRIVATE_STATE.get(cls, ()) | SKLEARN_PRIVATE_STATE))
        raise TypeError(
            f"{where}: {cls.__name__} has a private attribute the model file format does not "
            f"know (of the private ones, {known} are saved); remove it, or update sktopics.io "
            "to save it."
        )


def _encode_estimator(estimator, path, encoder):
    params = estimator.get_params(deep=False)
    name = type(estimator).__name__
    state = _state(estimator, params, _VECTORIZER_CACHES if name in VECTORIZERS else ())
    nodes = {}
    for key, value in state.items():
        where = f"{path}.{key}"
        _check_saveable_name(type(estimator), key, where)
        if key == "net_" and isinstance(estimator, NeuralTopicModel):
            nodes[key] = {"__type__": "skorch_net", **encode_net(value, where, encoder)}
        else:
            nodes[key] = encoder.encode(value, where)
    return {"__type__": "estimator", "class": name,
            "params": encoder.encode(params, f"{path}.params"),
            "state": mapping_node(nodes)}


# ------------------------------------------------------------------------- loading
def decode_object(tree, arrays, device):
    """The object of a tree; ``device`` is a :class:`torch.device`, or None for the
    recorded one mapped to this machine."""
    decoder = Decoder(arrays, STATE_CODECS)
    if type(tree) is not dict:
        raise ModelFileError("model: expected an object node.")
    kind = tree.get("__type__")
    if kind == "pipeline":
        return _decode_pipeline(tree, decoder, device)
    if kind == "estimator":
        return _decode_estimator(tree, "model", decoder, device, ESTIMATORS)
    raise ModelFileError(f"model: the file holds a {kind!r}, not a topic model or a Pipeline.")


def _decode_pipeline(tree, decoder, device):
    estimator_class(tree.get("class"), "model", {"Pipeline": CLASSES["Pipeline"]})
    nodes = tree.get("steps")
    if type(nodes) is not list or not nodes:
        raise ModelFileError("Pipeline.steps: expected a non-empty list of steps.")
    params = _dict(decoder.field(tree, "params", "Pipeline"), "Pipeline.params")
    if "steps" in params:
        raise ModelFileError("Pipeline.params: the steps are not a parameter of the file.")
    if params.get("memory") is not None:
        raise ModelFileError(f"Pipeline.params: memory={params['memory']!r}; a model file's "
                             "Pipeline has memory=None (a cache folder is code: pickles).")
    steps = []
    for position, pair in enumerate(nodes):
        if type(pair) is not list or len(pair) != 2 or type(pair[0]) is not str:
            raise ModelFileError(f"Pipeline.steps[{position}]: expected a [name, step] pair.")
        allowed = ESTIMATORS if position == len(nodes) - 1 else VECTORIZERS
        name = pair[0]
        steps.append((name, _decode_estimator(pair[1], f"Pipeline[{name!r}]", decoder, device,
                                              allowed)))
    pipe = _construct(Pipeline, {"steps": steps, **params}, "Pipeline")
    _set_state(pipe, decoder.field(tree, "state", "Pipeline"), "Pipeline")
    _consistent(_check_pipeline, pipe)
    return pipe


def _decode_estimator(node, path, decoder, device, allowed):
    if type(node) is not dict or node.get("__type__") != "estimator":
        raise ModelFileError(f"{path}: expected an estimator node.")
    cls = estimator_class(node.get("class"), path, allowed)
    params = _dict(decoder.field(node, "params", path), f"{path}.params")
    estimator = _construct(cls, params, path)
    state_node = node.get("state")
    if type(state_node) is not dict or type(state_node.get("value")) is not dict:
        raise ModelFileError(f"{path}.state: expected a dict of attributes.")
    order = list(state_node["value"])
    state_nodes = dict(state_node["value"])
    net_node = state_nodes.pop("net_", None)
    for key in state_nodes:  # the names first: no value is decoded for a refused one
        _check_settable(cls, key, path)
    state = {key: decoder.decode(value, f"{path}.{key}") for key, value in state_nodes.items()}
    _set_state(estimator, state, path)
    if "device_" in state:
        estimator.device_ = _placed(estimator.device_, device, cls.__name__, path)
    # The fitted attributes' shapes, types and ranges (cheap: the arrays are the file's)
    # before anything is built from them.
    _consistent(check_fitted, estimator, path, False)
    if net_node is None and issubclass(cls, NeuralTopicModel) and hasattr(estimator, "components_"):
        raise ModelFileError(f"{path}.net_: a fitted neural model needs its network; the file "
                             "is inconsistent (damaged or edited).")
    if net_node is not None:
        if not issubclass(cls, NeuralTopicModel) or type(net_node) is not dict \
                or net_node.get("__type__") != "skorch_net" or "device_" not in state:
            raise ModelFileError(f"{path}.net_: a network only belongs to a fitted neural model.")
        estimator.net_ = _consistent(decode_net, net_node, estimator, f"{path}.net_", decoder)
        attributes = vars(estimator)
        rest = {key: attributes.pop(key) for key in order}  # the saved order of attributes
        attributes.update(rest)
    return estimator


def _consistent(function, *args):
    """``function(*args)``, its :class:`Inconsistent` said to come from the file."""
    try:
        return function(*args)
    except Inconsistent as exc:
        raise ModelFileError(f"{exc}; the file is inconsistent (damaged or edited).") from None


def _dict(value, path):
    if type(value) is not dict or not all(type(k) is str for k in value):
        raise ModelFileError(f"{path}: expected a dict keyed by names.")
    return value


def _construct(cls, params, path):
    unknown = sorted(set(params) - set(cls._get_param_names()))
    if unknown:
        raise ModelFileError(f"{path}: {cls.__name__} has no parameter(s) {', '.join(unknown)} "
                             "in this version of its library.")
    try:
        estimator = cls(**params)
        estimator._validate_params()
    except (TypeError, ValueError) as exc:
        raise ModelFileError(f"{path}: invalid parameters for {cls.__name__}: {exc}") from exc
    return estimator


def _settable(cls, key):
    """Whether a file may set the attribute ``key`` of a ``cls``: a fitted attribute
    (``name_``, scikit-learn's convention) or one of the class's known private ones;
    never a parameter, a special name, nor anything the class defines (its methods and
    properties)."""
    if not key.isidentifier() or keyword.iskeyword(key) or key.startswith("__") \
            or key in cls._get_param_names() or hasattr(cls, key):
        return False
    if key.startswith("_"):
        return key in PRIVATE_STATE.get(cls, ()) or key in SKLEARN_PRIVATE_STATE
    return key.endswith("_")


def _check_settable(cls, key, path):
    if type(key) is not str or not _settable(cls, key):
        raise ModelFileError(f"{path}.{key}: not an attribute a {cls.__name__} file may set.")


def _set_state(obj, state, path):
    state = _dict(state, f"{path}.state")
    for key, value in state.items():
        _check_settable(type(obj), key, path)
        setattr(obj, key, value)


def _placed(recorded, device, name, path):
    """The fitted ``device_``: the requested device, or the recorded one mapped to this
    machine (``device=None``)."""
    if type(recorded) is not torch.device:
        raise ModelFileError(f"{path}.device_: expected a torch device.")
    if device is None:
        return available_device(recorded, owner=name)
    return device


# ------------------------------------------------------------------ consistency
def _shape(value):
    return tuple(getattr(value, "shape", ()))


def _check_array(estimator, name, path, shape=None, kinds="f", dtypes=None):
    """The fitted array ``name`` of ``estimator``, if it has one, checked."""
    value = getattr(estimator, name, None)
    if value is not None:
        check_array(value, f"{path}.{name}", shape, kinds, dtypes)
    return value


def _check_vocabulary(vectorizer, path):
    vocabulary = getattr(vectorizer, "vocabulary_", None)
    if vocabulary is None:
        return
    indices = list(vocabulary.values()) if type(vocabulary) is dict else None
    if indices is None or not all(type(w) is str for w in vocabulary) or not all(
            isinstance(i, (int, np.integer)) and not isinstance(i, bool) for i in indices) \
            or sorted(int(i) for i in indices) != list(range(len(indices))):
        fail(f"{path}.vocabulary_", "expected a dict of words to the indices 0 .. n-1",
             _VOCABULARY_HINT)


def _check_output_config(estimator, path):
    config = getattr(estimator, "_sklearn_output_config", None)
    if config is not None and (type(config) is not dict or not all(
            type(k) is str and type(v) is str for k, v in config.items())):
        fail(f"{path}._sklearn_output_config", "expected a dict of strings (set_output's)",
             _STATE_HINT)


def check_fitted(estimator, path, net=True):
    """Raise :class:`Inconsistent` where a model's fitted arrays, private state or
    parameters disagree, or have the wrong types. ``net=False``: a neural model's
    network is not there yet (loading checks the rest first)."""
    _check_output_config(estimator, path)
    if type(estimator).__name__ in VECTORIZERS:
        if estimator.input != "content":
            fail(f"{path}.input", f"{estimator.input!r}; only 'content' is saved (the other "
                 "settings open files)", "set input='content' before saving")
        _check_vocabulary(estimator, path)
        return
    if not hasattr(estimator, "components_"):
        return
    n_features = getattr(estimator, "n_features_in_", None)
    if not isinstance(n_features, Integral) or isinstance(n_features, bool):
        fail(f"{path}.n_features_in_", "a fitted model needs an int n_features_in_", _STATE_HINT)
    n_topics = getattr(estimator, "n_components_", getattr(estimator, "n_components", None))
    check_int(n_topics, f"{path}.n_components", 1)
    _check_array(estimator, "components_", path, (n_topics, n_features))
    names = getattr(estimator, "feature_names_in_", None)
    if names is not None and _shape(names) != (n_features,):
        fail(f"{path}.feature_names_in_", f"{_shape(names)} names for {n_features} features",
             _STATE_HINT)
    if not isinstance(getattr(estimator, "device_", None), torch.device):
        fail(f"{path}.device_", "a fitted model needs a torch device", _STATE_HINT)
    if isinstance(estimator, NeuralTopicModel):
        _check_neural(estimator, path, n_topics, n_features, net)
    else:
        _check_gibbs(estimator, path, n_topics, n_features)


def _check_neural(model, path, n_topics, n_features, net):
    if net and getattr(model, "net_", None) is None:
        fail(f"{path}.net_", "a fitted neural model needs its network", _STATE_HINT)
    _check_array(model, "doc_topic_prior_", path, (None,))
    _check_array(model, "beta_", path, (n_topics, n_features))
    _check_array(model, "_background", path, (n_features,))
    _check_array(model, "_initial_shift", path, (n_features,))
    structure = getattr(model, "structure_", None)
    if structure is not None:
        if structure.n_leaf_topics != n_topics:
            fail(f"{path}.structure_", f"{structure.n_leaf_topics} leaf topics for {n_topics}")
        if hasattr(model, "component_sizes"):  # MoLDA: its network is built from them
            try:
                sizes = model._sizes()
            except ValueError as exc:
                fail(f"{path}.component_sizes", str(exc))
            if sum(sizes) != n_topics or len(sizes) != structure.levels[0]:
                fail(f"{path}.component_sizes", f"{model.component_sizes!r} for a mixture of "
                     f"{structure.levels[0]} components and {n_topics} topics")
        for name in ("level_priors_", "level_weights_"):
            levels = getattr(model, name, None)
            if levels is None:
                continue
            if type(levels) is not list or len(levels) != len(structure.masks):
                fail(f"{path}.{name}", f"expected one array per level ({len(structure.masks)})",
                     _STATE_HINT)
            for level, (array, mask) in enumerate(zip(levels, structure.masks)):
                check_array(array, f"{path}.{name}[{level}]", mask.shape, hint=_STATE_HINT)
    rng = getattr(model, "_rng_state", None)
    if rng is not None:
        if type(rng) is not tuple or len(rng) != 2:
            fail(f"{path}._rng_state", "expected (CPU state, CUDA state or None)", _STATE_HINT)
        check_tensor(rng[0], f"{path}._rng_state[0]",
                     tuple(torch.random.default_generator.get_state().shape), torch.uint8,
                     _STATE_HINT)
        if rng[1] is not None:
            check_tensor(rng[1], f"{path}._rng_state[1]", (None,), torch.uint8, _STATE_HINT)
    run = getattr(model, "_interrupted_run", None)
    if run is not None:
        where = f"{path}._interrupted_run"
        if type(run) is not dict or set(run) != {"seed", "last", "max_iter", "fingerprint",
                                                 "monitor"}:
            fail(where, "expected the dict of an interrupted fit", _STATE_HINT)
        check_int(run["seed"], f"{where}['seed']", 0, 1 << 64, _STATE_HINT)
        check_int(run["last"], f"{where}['last']", 0, None, _STATE_HINT)
        monitor = run["monitor"]
        if type(run["fingerprint"]) is not str or not (
                run["max_iter"] == "auto" or (type(run["max_iter"]) is int and run["max_iter"] > 0)) \
                or type(monitor) is not tuple or len(monitor) != 2 \
                or type(monitor[0]) not in (int, float) or type(monitor[1]) is not int:
            fail(where, "expected the dict of an interrupted fit", _STATE_HINT)


def _check_gibbs(model, path, n_topics, n_features):
    prior = _check_array(model, "doc_topic_prior_", path, (n_topics,))
    if prior is not None:
        check_positive(prior, f"{path}.doc_topic_prior_", _STATE_HINT)
    beta = getattr(model, "topic_word_prior_", None)
    if beta is not None:
        check_positive(beta, f"{path}.topic_word_prior_", _STATE_HINT)
    _check_array(model, "doc_topic_", path, (None, n_topics))
    tokens = _check_array(model, "_topic_tokens", path, (n_topics,), dtypes=(np.int64,))
    if tokens is not None and tokens.size and (tokens.min() < 0 or tokens.max() >= 1 << 53):
        fail(f"{path}._topic_tokens", "expected token counts (>= 0)", _STATE_HINT)
    seed = getattr(model, "_transform_seed", None)
    if seed is not None:
        check_int(seed, f"{path}._transform_seed", 0, 1 << 64, _STATE_HINT)
    memory = getattr(model, "_memory", None)
    if memory is not None:
        if type(memory) is not ChainMemory:
            fail(f"{path}._memory", f"expected a ChainMemory, got {type_name(memory)}",
                 _STATE_HINT)
        if memory.word_topic.shape != (n_features, n_topics):
            fail(f"{path}._memory.word_topic", f"shape {memory.word_topic.shape} for "
                 f"{n_features} words and {n_topics} topics")
    snapshots = getattr(model, "snapshots_", None)
    if snapshots is not None:
        if type(snapshots) is not list or not all(type(s) is Snapshot for s in snapshots):
            fail(f"{path}.snapshots_", "expected a list of Snapshot", _STATE_HINT)
        for i, snapshot in enumerate(snapshots):
            if snapshot.components.shape != (n_topics, n_features):
                fail(f"{path}.snapshots_[{i}]", f"components of shape {snapshot.components.shape}")
    run = getattr(model, "_interrupted_run", None)
    if run is not None:
        if type(run) is not _Run:
            fail(f"{path}._interrupted_run", f"expected an LDAGibbs run, got {type_name(run)}",
                 _STATE_HINT)
        if run.phi_sum is not None and tuple(run.phi_sum.shape) != (n_topics, n_features):
            fail(f"{path}._interrupted_run.phi_sum", f"shape {tuple(run.phi_sum.shape)}")


def _check_rebuildable(model, path):
    """A neural model's network has the state-dict shapes of one rebuilt from its
    parameters (what loading does); a parameter changed after fit breaks that. The
    rebuilt module is made on ``meta``: its shapes without its memory."""
    try:
        module = meta_module(model, model.n_features_in_)
    except (TypeError, ValueError) as exc:
        fail(f"{path}.net_", f"the network cannot be rebuilt from the parameters ({exc})")
    check_module_state(module, model.net_.module_.state_dict(), f"{path}.net_.module_",
                       "the fitted network")


def check_saveable(obj):
    """Refuse, before writing, a model that loading would refuse: its parameters must
    still describe its fitted state, its fitted state must be of the right types."""
    steps = obj.steps if type(obj) is Pipeline else [(type(obj).__name__, obj)]
    try:
        for name, estimator in steps:
            path = name if type(obj) is not Pipeline else f"Pipeline[{name!r}]"
            check_fitted(estimator, path)
            if isinstance(estimator, NeuralTopicModel) and hasattr(estimator, "net_") \
                    and hasattr(estimator, "components_"):
                _check_rebuildable(estimator, path)
        if type(obj) is Pipeline:
            _check_pipeline(obj)
    except Inconsistent as exc:
        raise ValueError(f"The model cannot be saved: {exc}: {exc.hint}.") from None


def _check_pipeline(pipe):
    model = final_estimator(pipe)
    if len(pipe.steps) < 2 or not hasattr(model, "n_features_in_"):
        return
    vocabulary = getattr(pipe.steps[-2][1], "vocabulary_", None)
    if vocabulary is not None and len(vocabulary) != model.n_features_in_:
        fail(f"Pipeline[{pipe.steps[-2][0]!r}].vocabulary_",
             f"{len(vocabulary)} words but the topic model has {model.n_features_in_} features",
             _VOCABULARY_HINT)
