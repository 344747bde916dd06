"""The file: one safetensors file, arrays as tensors, everything else as JSON metadata.

Layout (safetensors' own: an 8-byte little-endian header length, a JSON header, the
tensors' bytes). The header's ``__metadata__`` (str -> str) holds:

``format``
    ``"sktopics"``: tells a sktopics model from any other safetensors file.
``format_version``
    The version of this layout and of the tree's conventions (:data:`FORMAT_VERSION`);
    files of earlier versions are upgraded on load by :mod:`._migrations`.
``versions``
    JSON: the versions of sktopics, scikit-learn, torch, numpy, scipy, skorch and
    safetensors that wrote the file (for the reader's information).
``model``
    JSON: the object tree (classes by registered name, parameters, fitted state);
    arrays appear in it as references to the file's tensors.
``model_card``
    Markdown: a short description of the model (:mod:`._card`).
"""

import json
import os
import platform
import uuid
from pathlib import Path

from .._version import __version__
from ._errors import ModelFileError

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "MAX_HEADER", "import_safetensors", "read_file",
           "versions", "write_file"]

FORMAT_NAME = "sktopics"

#: The format version this sktopics writes.
FORMAT_VERSION = 1

#: safetensors refuses headers above 100 MB; a larger length is no safetensors file.
MAX_HEADER = 100_000_000

_INSTALL = 'pip install "sktopics[io]"'


def import_safetensors():
    """``(safetensors.numpy, safe_open, SafetensorError)``, or an ImportError saying how to
    install it."""
    try:
        import safetensors
        import safetensors.numpy
    except ImportError as exc:
        raise ImportError(f"Saving and loading sktopics models needs safetensors: {_INSTALL} "
                          "(or pip install safetensors).") from exc
    return safetensors.numpy, safetensors.safe_open, safetensors.SafetensorError


def versions():
    """The versions of what wrote a file."""
    import numpy
    import scipy
    import sklearn
    import skorch
    import torch

    safetensors_numpy, _, _ = import_safetensors()
    import safetensors

    return {"sktopics": __version__, "scikit-learn": sklearn.__version__,
            "torch": torch.__version__, "numpy": numpy.__version__, "scipy": scipy.__version__,
            "skorch": skorch.__version__, "safetensors": safetensors.__version__,
            "python": platform.python_version()}


def write_file(path, arrays, metadata):
    """Write ``arrays`` and the str -> str ``metadata`` to ``path`` atomically (a
    temporary file in the same folder, renamed over ``path`` when complete)."""
    safetensors_numpy, _, _ = import_safetensors()
    _check_header_size(arrays, metadata)
    path = Path(path)
    # A new name beside the target; the file gets the permissions the user's umask gives.
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with open(temporary, "wb"):
            mode = os.stat(temporary).st_mode & 0o777
        safetensors_numpy.save_file(arrays, temporary, metadata=metadata)
        os.chmod(temporary, mode)  # safetensors writes owner-only files
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.remove(temporary)
        raise
    return path


def _check_header_size(arrays, metadata):
    """Refuse, before writing, a header that safetensors would refuse to read."""
    entries = {key: {"dtype": "F64", "shape": list(array.shape), "data_offsets": [0, 0]}
               for key, array in arrays.items()}
    size = len(json.dumps({"__metadata__": metadata, **entries}).encode("utf-8")) \
        + 40 * len(arrays)  # the offsets' digits
    if size > MAX_HEADER:
        largest = sorted(metadata, key=lambda k: -len(metadata[k]))[0] if metadata else "-"
        raise ValueError(
            f"The model cannot be saved: its file's JSON header would take {size / 1e6:.0f} MB, "
            f"over safetensors' limit of {MAX_HEADER / 1e6:.0f} MB (its largest part is the "
            f"{largest!r} metadata, {len(metadata.get(largest, '')) / 1e6:.0f} MB). Arrays and "
            "vocabularies are stored outside the header; what is left is the parameters, the "
            "training history and lists such as stop_words: shorten them before saving."
        )


def read_file(path):
    """``(version, metadata, arrays)`` of a model file: its format version, its
    metadata and its arrays.

    A :class:`ModelFileError` for a file that is not a whole safetensors file with
    sktopics' metadata, or whose format version this sktopics cannot read; the header
    is checked before any tensor is read.
    """
    _, safe_open, safetensor_error = import_safetensors()
    path = Path(path)
    header = _check_header(path)
    metadata = header.get("__metadata__") or {}
    if type(metadata) is not dict or metadata.get("format") != FORMAT_NAME:
        raise ModelFileError(
            f"{path} is a safetensors file but not a sktopics model: its metadata lacks "
            "format='sktopics' (it holds tensors only, such as another library's checkpoint)."
        )
    version = format_version(metadata.get("format_version"), path)
    try:
        with safe_open(str(path), framework="numpy") as handle:
            metadata = handle.metadata() or {}
            arrays = {key: handle.get_tensor(key) for key in handle.keys()}
    except safetensor_error as exc:
        raise ModelFileError(f"{path} is not a valid safetensors file ({exc}); it may be "
                             "truncated or damaged.") from exc
    return version, metadata, arrays


def format_version(text, path):
    """The format version of a file's metadata; a :class:`ModelFileError` for one that
    is no number, or newer than this sktopics reads."""
    if type(text) is not str or not (text.isascii() and text.isdecimal()) or len(text) > 9:
        raise ModelFileError(f"{path}: unknown format version {text!r} (expected a number; "
                             f"this sktopics writes version {FORMAT_VERSION}).")
    version = int(text)
    if version > FORMAT_VERSION:
        raise ModelFileError(
            f"{path}: the file has format version {version}, written by a newer sktopics; this "
            f"one reads format versions up to {FORMAT_VERSION}. Upgrade sktopics to load it."
        )
    return version


def _check_header(path):
    size = path.stat().st_size
    with open(path, "rb") as handle:
        prefix = handle.read(8)
        if len(prefix) < 8:
            raise ModelFileError(f"{path} is not a safetensors file: it has {size} bytes, fewer "
                                 "than a safetensors header needs.")
        length = int.from_bytes(prefix, "little")
        if length > MAX_HEADER:
            raise ModelFileError(f"{path} is not a safetensors file (its first bytes do not "
                                 "give a header length).")
        if 8 + length > size:
            raise ModelFileError(f"{path} is truncated, or is not a safetensors file: its first "
                                 f"bytes announce a header of {length} bytes, but the file has "
                                 f"{size} bytes in all.")
        header = handle.read(length)
    try:
        parsed = json.loads(header.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ModelFileError(f"{path} is not a safetensors file: its header is not "
                             "JSON.") from exc
    if type(parsed) is not dict:
        raise ModelFileError(f"{path} is not a safetensors file: its header is not a JSON object.")
    return parsed
