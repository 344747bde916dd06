"""What a model file may name: the fixed registry of classes, and the codecs of the
estimators' private state objects.

A file names its classes by these keys; :func:`estimator_class` looks them up here
and never imports or resolves a name taken from a file. The codecs say field by
field what the private objects of a fitted :class:`~sktopics.LDAGibbs` (the chain
memory, an interrupted run, snapshots) and of the PAM models (their structure) hold;
an object with an attribute a codec does not know is refused when saving, so that
nothing is dropped silently when the estimators grow new state.
"""

import numpy as np
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import Pipeline

from .._gibbs._chain import ChainMemory
from .._gibbs._lda_gibbs import LDAGibbs, Snapshot, _Run
from .._neural._avitm import AVITM
from .._neural._molda import MoLDA
from .._neural._pamvi import PAMVI
from .._neural._prodlda import ProdLDA
from ..pam import PAMStructure
from ._checks import check_array, check_int, check_tensor, fail
from ._encoder import Codec
from ._errors import ModelFileError

__all__ = ["ESTIMATORS", "PRIVATE_STATE", "STATE_CODECS", "VECTORIZERS", "estimator_class",
           "registered_name"]

#: The topic models a file may hold, alone or as a Pipeline's last step.
ESTIMATORS = {cls.__name__: cls for cls in (LDAGibbs, AVITM, ProdLDA, PAMVI, MoLDA)}

#: The steps a Pipeline may have before its topic model.
VECTORIZERS = {"CountVectorizer": CountVectorizer}

#: Every class a file may name.
CLASSES = {**ESTIMATORS, **VECTORIZERS, "Pipeline": Pipeline}


#: The private attributes (``_name``) a file may set, per class: the state that
#: ``partial_fit``, a warm ``fit`` and ``transform`` read. Any other is refused when
#: saving and when loading; fitted attributes (``name_``) follow scikit-learn's
#: convention instead. A new private attribute of an estimator goes here (and is then
#: checked in ``_objects.check_fitted``).
PRIVATE_STATE = {
    LDAGibbs: frozenset({"_interrupted_run", "_memory", "_topic_tokens", "_transform_seed"}),
    AVITM: frozenset({"_interrupted_run", "_rng_state"}),
    ProdLDA: frozenset({"_interrupted_run", "_rng_state", "_background"}),
    PAMVI: frozenset({"_interrupted_run", "_rng_state", "_initial_shift"}),
    MoLDA: frozenset({"_interrupted_run", "_rng_state", "_initial_shift"}),
    CountVectorizer: frozenset(),
    Pipeline: frozenset(),
}

#: Private attributes of scikit-learn's own that any of them may hold (``set_output``).
SKLEARN_PRIVATE_STATE = frozenset({"_sklearn_output_config"})


def registered_name(obj):
    """The registry's name of ``obj``'s class (exact class, not a subclass), or None."""
    name = type(obj).__name__
    return name if CLASSES.get(name) is type(obj) else None


def estimator_class(name, path, allowed=CLASSES):
    """The class registered as ``name``; a :class:`ModelFileError` for any other name."""
    cls = allowed.get(name) if type(name) is str else None
    if cls is None:
        raise ModelFileError(
            f"{path}: the file names the class {name!r}, which sktopics does not load. Only "
            f"{', '.join(sorted(allowed))} can be loaded; no class is ever imported by a name "
            "read from a file."
        )
    return cls


def _fields(obj, names, path):
    """``obj``'s attributes ``names``; refuses an object with others (state the format
    would drop)."""
    extra = sorted(set(vars(obj)) - set(names))
    if extra:
        raise TypeError(
            f"{path}: {type(obj).__name__} has attributes the model file format does not "
            f"know ({', '.join(extra)}); sktopics.io needs an update to save them."
        )
    return {name: getattr(obj, name) for name in names}


def _encoded_fields(obj, names, path, encoder):
    return {name: encoder.encode(value, f"{path}.{name}")
            for name, value in _fields(obj, names, path).items()}


def _decoded_fields(node, names, path, decoder, depth):
    return {name: decoder.field(node, name, path, depth) for name in names}


def _keyed(value, path):
    if type(value) is not dict or not all(type(k) is str for k in value):
        fail(path, "expected a dict keyed by corpus fingerprints")
    return value


# ----------------------------------------------------------------- LDAGibbs state
_MEMORY_FIELDS = ("word_topic", "shards", "documents")

#: The dtypes of a shard's topics (``_chain._compact_dtype``).
_TOPIC_DTYPES = (np.uint8, np.uint16, np.int32)


def _decode_memory(node, path, decoder, depth):
    """The chain memory, checked so that the compiled samplers, which trust it, never
    index outside their tables: every topic in ``[0, K)``, every count ``>= 0``."""
    fields = _decoded_fields(node, _MEMORY_FIELDS, path, decoder, depth)
    word_topic = check_array(fields["word_topic"], f"{path}.word_topic", (None, None),
                             dtypes=(np.int32,))
    n_topics = word_topic.shape[1]
    if word_topic.size and word_topic.min() < 0:
        fail(f"{path}.word_topic", "negative counts")
    shards = _keyed(fields["shards"], f"{path}.shards")
    documents = _keyed(fields["documents"], f"{path}.documents")
    if set(shards) != set(documents):
        fail(path, "shards and documents must have the same corpora")
    for key, topics in shards.items():
        where = f"{path}.shards[{key!r}]"
        check_array(topics, where, (None,), dtypes=_TOPIC_DTYPES)
        if topics.size and (int(topics.max()) >= n_topics or int(topics.min()) < 0):
            fail(where, f"topics outside 0 .. {n_topics - 1}")
    for key, statistics in documents.items():
        where = f"{path}.documents[{key!r}]"
        if type(statistics) is not tuple or len(statistics) != 5:
            fail(where, "expected the 5 arrays of document_statistics")
        for i, part in enumerate(statistics):
            check_array(part, f"{where}[{i}]", (None,), dtypes=(np.int64,))
            if part.size and part.min() < 0:
                fail(f"{where}[{i}]", "negative values")
        topic, count, weight, length, length_weight = statistics
        if not topic.shape == count.shape == weight.shape or length.shape != length_weight.shape:
            fail(where, "arrays of different lengths")
        if topic.size and topic.max() >= n_topics:
            fail(f"{where}[0]", f"topics outside 0 .. {n_topics - 1}")
    memory = ChainMemory(word_topic)
    memory.shards, memory.documents = shards, documents
    return memory


_RUN_FIELDS = ("fingerprint", "seed", "first", "last", "n_kept", "phi_sum", "doc_topic")


def _decode_run(node, path, decoder, depth):
    fields = _decoded_fields(node, _RUN_FIELDS, path, decoder, depth)
    if type(fields["fingerprint"]) is not str:
        fail(f"{path}.fingerprint", "expected a string")
    seed = check_int(fields["seed"], f"{path}.seed", 0, 1 << 64)
    first = check_int(fields["first"], f"{path}.first")
    last = check_int(fields["last"], f"{path}.last", first)
    n_kept = check_int(fields["n_kept"], f"{path}.n_kept")
    run = _Run(fields["fingerprint"], seed, first, last)
    run.n_kept = n_kept
    phi_sum, doc_topic = fields["phi_sum"], fields["doc_topic"]
    if (phi_sum is None) != (doc_topic is None):
        fail(path, "phi_sum and doc_topic go together")
    if phi_sum is not None:
        check_tensor(phi_sum, f"{path}.phi_sum", (None, None), torch.float64)
        check_array(doc_topic, f"{path}.doc_topic", (None, phi_sum.shape[0]), dtypes=(np.float64,))
    run.phi_sum, run.doc_topic = phi_sum, doc_topic
    return run


_SNAPSHOT_FIELDS = ("sweep", "components", "doc_topic_prior")


def _encode_snapshot(snapshot, path, encoder):
    return {name: encoder.encode(getattr(snapshot, name), f"{path}.{name}")
            for name in _SNAPSHOT_FIELDS}


def _decode_snapshot(node, path, decoder, depth):
    fields = _decoded_fields(node, _SNAPSHOT_FIELDS, path, decoder, depth)
    check_int(fields["sweep"], f"{path}.sweep")
    components = check_array(fields["components"], f"{path}.components", (None, None))
    check_array(fields["doc_topic_prior"], f"{path}.doc_topic_prior", (components.shape[0],))
    return Snapshot(**fields)


# ------------------------------------------------------------------- PAM structure
def _encode_structure(structure, path, encoder):
    return {"levels": encoder.encode(tuple(structure.levels), f"{path}.levels"),
            "masks": encoder.encode(tuple(structure.masks), f"{path}.masks")}


def _decode_structure(node, path, decoder, depth):
    """The structure, its level sizes tied to its saved masks before it is built (a
    structure builds its masks' shapes' worth of arrays)."""
    levels = decoder.field(node, "levels", path, depth)
    masks = decoder.field(node, "masks", path, depth)
    if type(levels) is not tuple or type(masks) is not tuple or len(levels) != len(masks) \
            or not levels:
        fail(path, "expected a tuple of level sizes and a tuple of as many masks")
    parents = 1
    for level, (size, mask) in enumerate(zip(levels, masks)):
        check_int(size, f"{path}.levels[{level}]", 1)
        check_array(mask, f"{path}.masks[{level}]", (parents, size), kinds="b")
        parents = size
    try:
        return PAMStructure(levels=levels, masks=masks)
    except ValueError as exc:
        fail(path, str(exc))


#: The private state objects of the estimators, field by field.
STATE_CODECS = (
    Codec("lda_chain_memory", ChainMemory,
          lambda obj, path, enc: _encoded_fields(obj, _MEMORY_FIELDS, path, enc), _decode_memory),
    Codec("lda_run", _Run,
          lambda obj, path, enc: _encoded_fields(obj, _RUN_FIELDS, path, enc), _decode_run),
    Codec("lda_snapshot", Snapshot, _encode_snapshot, _decode_snapshot),
    Codec("pam_structure", PAMStructure, _encode_structure, _decode_structure),
)
