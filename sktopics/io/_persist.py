"""``save`` and ``load``: a topic model (or a Pipeline ending in one) to one
safetensors file and back."""

import json
from pathlib import Path

from ..utils._devices import resolve_device
from ._card import model_card
from ._errors import ModelFileError
from ._format import FORMAT_NAME, FORMAT_VERSION, import_safetensors, read_file, versions, write_file
from ._migrations import upgrade
from ._objects import check_saveable, decode_object, encode_object

__all__ = ["MODEL_FILENAME", "load", "save", "write_model"]

#: The model file's name inside a folder (what the hub helpers write and read).
MODEL_FILENAME = "model.safetensors"


def write_model(obj, path):
    """Write ``obj`` to ``path``; returns ``(path, card)``."""
    import_safetensors()  # the ImportError before any work
    tree, arrays = encode_object(obj)
    check_saveable(obj)
    written_by = versions()
    card = model_card(obj, written_by, FORMAT_VERSION)
    metadata = {
        "format": FORMAT_NAME,
        "format_version": str(FORMAT_VERSION),
        "versions": json.dumps(written_by),
        "model": json.dumps(tree, allow_nan=False, separators=(",", ":")),
        "model_card": card,
    }
    return write_file(path, arrays, metadata), card


def save(obj, path):
    """Save a topic model, or a Pipeline ending in one, to a safetensors file.

    The file holds data only: the fitted arrays (and the state that ``partial_fit`` and
    a warm ``fit`` continue from) and a vectorizer's vocabulary as tensors, and the
    class names, parameters, the versions and a model card as JSON in the header's
    metadata. :func:`load` reads it without running any code from it, on any machine
    and with later versions of sktopics. Read more in the :ref:`User Guide
    <persistence>`.

    Parameters
    ----------
    obj : estimator or Pipeline
        One of :class:`~sktopics.LDAGibbs`, :class:`~sktopics.AVITM`,
        :class:`~sktopics.ProdLDA`, :class:`~sktopics.PAMVI`, :class:`~sktopics.MoLDA`,
        fitted (on any device) or not, or a :class:`~sklearn.pipeline.Pipeline` of
        :class:`~sklearn.feature_extraction.text.CountVectorizer` steps ending in one.
        A vectorizer with a callable (``tokenizer``, ``preprocessor``, ``analyzer``)
        cannot be saved: a function is code.
    path : str or path-like
        The file to write (by convention ``*.safetensors``); replaced if it exists. The
        file is written under a temporary name and renamed when complete.

    Returns
    -------
    path : pathlib.Path
        The file written.

    Raises
    ------
    ImportError
        When safetensors is not installed (``pip install "sktopics[io]"``).
    TypeError
        When ``obj`` is of another type, or holds a value that is not plain data (the
        message names its attribute path).
    ValueError
        When a Pipeline has another step type, a ``memory`` or a vectorizer that holds
        a callable or reads files (``input`` other than ``"content"``), when a parameter
        changed after fit no longer describes the fitted model, or when the file's JSON
        header would pass safetensors' 100 MB limit.

    See Also
    --------
    load : Read a model file.
    push_to_hub : Save to the Hugging Face Hub.

    Examples
    --------
    >>> import tempfile
    >>> import numpy as np
    >>> import sktopics
    >>> from sktopics.datasets import make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_samples=30, n_features=20, n_components=3,
    ...                           random_state=0)
    >>> model = sktopics.LDAGibbs(3, max_iter=5, device="cpu", random_state=0).fit(X)
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     path = sktopics.save(model, f"{folder}/lda.safetensors")
    ...     loaded = sktopics.load(path)
    >>> np.array_equal(loaded.transform(X), model.transform(X))
    True
    """
    path, _ = write_model(obj, path)
    return path


def load(path, *, device="cpu"):
    """Load a topic model, or a Pipeline ending in one, saved by :func:`save`.

    Only data is read: classes come from a fixed registry (the five sktopics
    estimators, :class:`~sklearn.pipeline.Pipeline` and
    :class:`~sklearn.feature_extraction.text.CountVectorizer`), never from a name in
    the file, and no pickle is involved; a neural model's network is rebuilt by the
    estimator's own code and its weights, optimiser state and history are loaded into
    it. Files of earlier format versions are upgraded. Read more in the :ref:`User
    Guide <persistence>`.

    Parameters
    ----------
    path : str or path-like
        A file written by :func:`save`, or a folder holding ``model.safetensors`` (as
        written by :func:`~sktopics.io.save_pretrained`).
    device : {"cpu", "auto", "cuda"}, str, torch.device or None, default="cpu"
        Where the fitted model is placed (its ``device_``, where ``transform``,
        ``score`` and ``partial_fit`` run). The CPU by default because a file may
        come from any machine, and every machine has a CPU; ``"auto"`` uses the current
        GPU when there is one. ``None`` keeps the device the model was fitted on when
        this machine has it, and otherwise maps it as unpickling does (the current GPU,
        else the CPU, with a :class:`~sktopics.utils.DeviceWarning`). The ``device``
        *parameter* keeps its saved value: set it with ``set_params`` before a warm
        ``fit`` on another machine.

    Returns
    -------
    obj : estimator or Pipeline
        The model as it was saved, on ``device``.

    Raises
    ------
    ModelFileError
        When the file is not a sktopics model file sktopics can read (truncated, not
        safetensors, another library's file, a newer or unknown format version, a
        class outside the registry, inconsistent shapes, values out of range, settings
        that reach outside the file); the message says which, and where in the file.
    ImportError
        When safetensors is not installed (``pip install "sktopics[io]"``).

    See Also
    --------
    save : Write a model file.
    from_pretrained : Load from a folder or from the Hugging Face Hub.
    """
    path = Path(path)
    if path.is_dir():
        path = path / MODEL_FILENAME
    target = None if device is None else resolve_device(device)
    version, metadata, arrays = read_file(path)
    try:
        tree = json.loads(metadata.get("model", ""))
    except ValueError as exc:
        raise ModelFileError(f"{path}: the model metadata is not valid JSON ({exc}).") from exc
    except RecursionError as exc:
        raise ModelFileError(f"{path}: the model metadata is nested too deeply.") from exc
    try:
        tree, arrays = upgrade(version, tree, arrays)
        return decode_object(tree, arrays, target)
    except ModelFileError as exc:  # said of the model's parts: the file's name first
        raise ModelFileError(f"{path}: {exc}") from exc.__cause__
    except (Exception, RecursionError) as exc:
        # What no check above foresaw (a value of a wrong type deep in a state object,
        # an overflow): still a file this sktopics cannot load, with its cause chained.
        raise ModelFileError(f"{path}: the file cannot be loaded ({type(exc).__name__}: "
                             f"{exc}); it is damaged, edited, or of a layout this sktopics "
                             "does not check.") from exc
