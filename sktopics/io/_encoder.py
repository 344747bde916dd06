"""Plain data to a JSON tree plus named arrays, and back.

:class:`Encoder` walks a value and returns a JSON-able node: JSON's own types for
``None``, ``bool``, ``int``, ``str`` and finite ``float``, and ``{"__type__": tag, ...}``
objects for everything else it knows (tuples, dicts, sets, numpy arrays and scalars,
torch tensors, CSR matrices, devices, numpy random states, dtypes). Numeric arrays and
tensors are not written into the tree: they are collected in :attr:`Encoder.arrays`
under a key named after their path, and the node refers to that key. Any other type
raises a ``TypeError`` that names the value's path and type: nothing is ever
serialised by reflection, so a file holds data only.

:class:`Decoder` turns nodes back into values, looking every tag up in fixed tables:
no name in a file selects code. Types that need more (the estimators' private state
objects) come as :class:`Codec` entries passed in by the caller.
"""

import math
from typing import Callable, NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from ._errors import ModelFileError

__all__ = ["Codec", "Decoder", "Encoder", "mapping_node"]

#: Deepest nesting of a tree the decoder follows (a real model's is under 15).
MAX_DEPTH = 64

#: numpy dtypes stored as arrays (what safetensors holds); strings have a node of their own.
_ARRAY_KINDS = frozenset("biuf")

#: Python types a vectorizer's ``dtype`` may name.
_PYTHON_TYPES = {"bool": bool, "int": int, "float": float, "complex": complex}

#: numpy bit generators a ``numpy.random.Generator`` may use.
_BIT_GENERATORS = {name: getattr(np.random, name)
                   for name in ("MT19937", "PCG64", "PCG64DXSM", "Philox", "SFC64")}

_TYPE = "__type__"


class Codec(NamedTuple):
    """How one more type is saved: ``encode(value, path, encoder)`` returns the node's
    fields (a dict), ``decode(node, path, decoder, depth)`` the value (decoding its
    fields with ``decoder.field(node, name, path, depth)``, so that the nesting limit
    holds through it)."""

    tag: str
    type: type
    encode: Callable
    decode: Callable


def mapping_node(nodes):
    """The node of a dict whose values are already nodes."""
    return {_TYPE: "dict", "value": nodes}


def type_name(value):
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


class Encoder:
    """Turns values into JSON-able nodes; arrays go to :attr:`arrays`.

    Parameters
    ----------
    codecs : sequence of Codec
        Types beyond the built-in ones, matched by exact type.
    """

    def __init__(self, codecs=()):
        self.codecs = {codec.type: codec for codec in codecs}
        self.arrays = {}

    def array(self, array, path):
        """Store a numeric numpy array under ``path``; returns the key."""
        array = np.asarray(array)
        if array.dtype.kind not in _ARRAY_KINDS or array.dtype.byteorder == ">":
            raise TypeError(f"{path}: a numpy array of dtype {array.dtype} cannot be saved; "
                            "numeric and boolean arrays can.")
        key = path
        while key in self.arrays:  # paths are unique; this only guards against misuse
            key += "'"
        self.arrays[key] = array if array.flags.c_contiguous else array.copy(order="C")  # 0-d stays 0-d
        return key

    def encode(self, value, path):
        """The node of ``value``; ``path`` names it in error messages and array keys."""
        kind = type(value)
        if value is None or kind in (bool, int, str):
            return value
        if kind is float:
            return value if math.isfinite(value) else {_TYPE: "float", "value": repr(value)}
        if kind is list:
            return [self.encode(v, f"{path}[{i}]") for i, v in enumerate(value)]
        if kind is tuple:
            return {_TYPE: "tuple", "items": [self.encode(v, f"{path}[{i}]")
                                              for i, v in enumerate(value)]}
        if kind is dict:
            if value and all(type(k) is str for k in value):
                mapping = self._str_int_dict(value, path)
                if mapping is not None:
                    return mapping
                return {_TYPE: "dict", "value": {k: self.encode(v, f"{path}[{k!r}]")
                                                 for k, v in value.items()}}
            return {_TYPE: "dict", "items": [[self.encode(k, f"{path}.keys()"),
                                              self.encode(v, f"{path}[{k!r}]")]
                                             for k, v in value.items()]}
        if kind in (set, frozenset):
            items = list(value)
            try:
                items = sorted(items)
            except TypeError:
                pass
            return {_TYPE: kind.__name__, "items": [self.encode(v, f"{path}.item")
                                                    for v in items]}
        if kind is np.ndarray:
            return self._ndarray(value, path)
        if isinstance(value, np.generic) and kind is value.dtype.type:
            if value.dtype.kind not in _ARRAY_KINDS:
                raise TypeError(f"{path}: a numpy scalar of dtype {value.dtype} cannot be saved.")
            return {_TYPE: "numpy_scalar", "dtype": value.dtype.name,
                    "value": self.encode(value.item(), path)}
        if kind in (torch.Tensor, torch.nn.Parameter):
            return self._tensor(value, path)
        if kind in (sp.csr_matrix, sp.csr_array):
            return {_TYPE: "csr", "class": kind.__name__, "shape": list(value.shape),
                    "data": self.array(value.data, f"{path}.data"),
                    "indices": self.array(value.indices, f"{path}.indices"),
                    "indptr": self.array(value.indptr, f"{path}.indptr")}
        if kind is torch.device:
            return {_TYPE: "device", "value": str(value)}
        if isinstance(value, np.dtype):
            return {_TYPE: "numpy_dtype", "value": self._dtype_name(value, path)}
        if kind is type and issubclass(value, np.generic):
            return {_TYPE: "numpy_type", "value": self._dtype_name(np.dtype(value), path)}
        if kind is type and value.__name__ in _PYTHON_TYPES and _PYTHON_TYPES[value.__name__] is value:
            return {_TYPE: "python_type", "value": value.__name__}
        if kind is np.random.RandomState:
            return {_TYPE: "numpy_random_state",
                    "state": self.encode(value.get_state(legacy=False), f"{path}.state")}
        if kind is np.random.Generator:
            bit_generator = value.bit_generator
            return {_TYPE: "numpy_generator", "bit_generator": type(bit_generator).__name__,
                    "state": self.encode(bit_generator.state, f"{path}.state")}
        codec = self.codecs.get(kind)
        if codec is not None:
            return {_TYPE: codec.tag, **codec.encode(value, path, self)}
        raise TypeError(
            f"{path}: cannot save a value of type {type_name(value)}. A model file holds plain "
            "data only (numbers, strings, None, lists, tuples, dicts, numpy arrays, torch "
            "tensors, CSR matrices, random states); set this attribute or parameter to plain "
            "data, or remove it, before saving."
        )

    def _ndarray(self, value, path):
        if value.dtype.kind in "OU":
            if value.ndim != 1 or not all(type(v) is str for v in value.tolist()):
                raise TypeError(f"{path}: an array of dtype {value.dtype} can be saved only when "
                                "it is one-dimensional and holds strings.")
            return {_TYPE: "str_array", "dtype": "object" if value.dtype.kind == "O" else "str",
                    **self.strings(value.tolist(), path)}
        return {_TYPE: "ndarray", "key": self.array(value, path)}

    def strings(self, strings, path):
        """Store strings as arrays: their UTF-8 bytes one after the other and where each
        ends. A vocabulary of millions of words stays out of the JSON header (which
        safetensors limits to 100 MB) and is read back without a JSON parse."""
        encoded = [text.encode("utf-8", "surrogatepass") for text in strings]
        ends = np.cumsum([len(b) for b in encoded], dtype=np.int64)
        return {"bytes": self.array(np.frombuffer(b"".join(encoded), dtype=np.uint8),
                                    f"{path}.bytes"),
                "ends": self.array(ends, f"{path}.ends")}

    def _str_int_dict(self, value, path):
        """A dict of strings to ints (of one type) as arrays, such as a vectorizer's
        vocabulary; None for any other dict."""
        values = list(value.values())
        kind = type(values[0])
        if kind is not int and not (issubclass(kind, np.integer) and kind is np.dtype(kind).type):
            return None
        if not all(type(v) is kind for v in values):
            return None
        if kind is int and not all(-(1 << 63) <= v < (1 << 63) for v in values):
            return None
        numbers = np.array(values, dtype=np.int64 if kind is int else kind)
        return {_TYPE: "str_int_dict", "value_type": "int" if kind is int else numbers.dtype.name,
                "keys": self.strings(list(value), f"{path}.keys()"),
                "values": self.array(numbers, f"{path}.values()")}

    def _tensor(self, value, path):
        tensor = value.detach().cpu()  # a model from any device loads anywhere
        try:
            array = tensor.contiguous().numpy()
        except TypeError as exc:
            raise TypeError(f"{path}: a tensor of dtype {tensor.dtype} cannot be saved "
                            "(it has no numpy dtype).") from exc
        return {_TYPE: "tensor", "key": self.array(array, path)}

    @staticmethod
    def _dtype_name(dtype, path):
        if dtype.kind not in _ARRAY_KINDS | {"c"}:
            raise TypeError(f"{path}: the dtype {dtype} cannot be saved.")
        return dtype.name


class Decoder:
    """Turns nodes back into values.

    Parameters
    ----------
    arrays : dict
        The file's arrays by key.
    codecs : sequence of Codec
        Types beyond the built-in ones, by tag.
    """

    def __init__(self, arrays, codecs=()):
        self.arrays = arrays
        self.codecs = {codec.tag: codec for codec in codecs}

    def decode(self, node, path, depth=0):
        """The value of ``node``; errors name ``path``."""
        if depth > MAX_DEPTH:
            raise ModelFileError(f"{path}: the tree is nested deeper than {MAX_DEPTH} levels.")
        if node is None or type(node) in (bool, int, str, float):
            return node
        if type(node) is list:
            return [self.decode(v, f"{path}[{i}]", depth + 1) for i, v in enumerate(node)]
        if type(node) is not dict or not isinstance(node.get(_TYPE), str):
            raise ModelFileError(f"{path}: not a value node of an sktopics model file.")
        tag = node[_TYPE]
        try:
            method = getattr(self, f"_decode_{tag}", None) if tag.isidentifier() else None
            if method is not None:
                return method(node, path, depth + 1)
            codec = self.codecs.get(tag)
            if codec is not None:
                return codec.decode(node, path, self, depth + 1)
        except ModelFileError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, RuntimeError, IndexError,
                OverflowError) as exc:
            raise ModelFileError(f"{path}: invalid {tag!r} node ({type(exc).__name__}: "
                                 f"{exc}).") from exc
        raise ModelFileError(f"{path}: unknown value type {tag!r} (not one this version of "
                             "sktopics reads).")

    def field(self, node, name, path, depth=0):
        """Decode ``node[name]``."""
        if name not in node:
            raise ModelFileError(f"{path}: missing field {name!r}.")
        return self.decode(node[name], f"{path}.{name}", depth)

    def array(self, key, path):
        """The array stored under ``key``."""
        if type(key) is not str or key not in self.arrays:
            raise ModelFileError(f"{path}: refers to a tensor {key!r} the file does not hold.")
        return self.arrays[key]

    # ------------------------------------------------------------ built-in types
    def _decode_float(self, node, path, depth):
        value = node["value"]
        if value not in ("inf", "-inf", "nan"):
            raise ModelFileError(f"{path}: {value!r} is not a non-finite float.")
        return float(value)

    def _decode_tuple(self, node, path, depth):
        return tuple(self.decode(v, f"{path}[{i}]", depth) for i, v in enumerate(_list(node, "items", path)))

    def _decode_dict(self, node, path, depth):
        if "value" in node:
            mapping = node["value"]
            if type(mapping) is not dict:
                raise ModelFileError(f"{path}: a dict node's value must be a JSON object.")
            return {k: self.decode(v, f"{path}[{k!r}]", depth) for k, v in mapping.items()}
        out = {}
        for pair in _list(node, "items", path):
            if type(pair) is not list or len(pair) != 2:
                raise ModelFileError(f"{path}: a dict item must be a [key, value] pair.")
            key = self.decode(pair[0], f"{path}.keys()", depth)
            try:
                out[key] = self.decode(pair[1], f"{path}[{key!r}]", depth)
            except TypeError as exc:  # an unhashable key
                raise ModelFileError(f"{path}: the key {key!r} cannot be a dict key.") from exc
        return out

    def _decode_set(self, node, path, depth):
        return set(self._decode_tuple(node, path, depth))

    def _decode_frozenset(self, node, path, depth):
        return frozenset(self._decode_tuple(node, path, depth))

    def _decode_ndarray(self, node, path, depth):
        return self.array(node["key"], path)

    def strings(self, node, path):
        """The strings of :meth:`Encoder.strings`'s node."""
        data = self.array(node["bytes"], f"{path}.bytes")
        ends = self.array(node["ends"], f"{path}.ends")
        if data.dtype != np.uint8 or data.ndim != 1 or ends.dtype != np.int64 or ends.ndim != 1:
            raise ModelFileError(f"{path}: strings need a 1-d uint8 array of bytes and a 1-d "
                                 "int64 array of where each ends.")
        if ends.size and (ends[0] < 0 or (np.diff(ends) < 0).any() or ends[-1] != data.size) \
                or (not ends.size and data.size):
            raise ModelFileError(f"{path}: the string ends do not cut the bytes into strings.")
        blob = data.tobytes()
        starts = np.concatenate([[0], ends[:-1]]).tolist()
        try:
            return [blob[a:b].decode("utf-8", "surrogatepass")
                    for a, b in zip(starts, ends.tolist())]
        except UnicodeDecodeError as exc:
            raise ModelFileError(f"{path}: a string is not valid UTF-8.") from exc

    def _decode_str_array(self, node, path, depth):
        values = self.strings(node, path)
        dtype = {"object": object, "str": str}[node["dtype"]]
        return np.array(values, dtype=dtype) if values else np.empty(0, dtype=dtype)

    def _decode_str_int_dict(self, node, path, depth):
        keys = self.strings(node["keys"], f"{path}.keys()")
        values = self.array(node["values"], f"{path}.values()")
        kind = node["value_type"]
        dtype = np.dtype(np.int64 if kind == "int" else kind)
        if dtype.kind not in "iu" or values.dtype != dtype or values.shape != (len(keys),):
            raise ModelFileError(f"{path}: expected {len(keys)} values of dtype {dtype}.")
        if len(set(keys)) != len(keys):
            raise ModelFileError(f"{path}: the keys repeat.")
        return dict(zip(keys, values.tolist() if kind == "int" else values))

    def _decode_numpy_scalar(self, node, path, depth):
        dtype = np.dtype(node["dtype"])
        if dtype.kind not in _ARRAY_KINDS:
            raise ModelFileError(f"{path}: a numpy scalar of dtype {dtype} is not data.")
        value = self.decode(node["value"], path, depth)
        if type(value) not in (bool, int, float):
            raise ModelFileError(f"{path}: a numpy scalar's value must be a number.")
        if dtype.kind in "iu" and (type(value) is not int
                                   or not np.iinfo(dtype).min <= value <= np.iinfo(dtype).max):
            raise ModelFileError(f"{path}: {value!r} is not a value of dtype {dtype}.")
        return dtype.type(value)

    def _decode_tensor(self, node, path, depth):
        return torch.from_numpy(self.array(node["key"], path))

    def _decode_csr(self, node, path, depth):
        kind = {"csr_matrix": sp.csr_matrix, "csr_array": sp.csr_array}[node["class"]]
        shape = tuple(int(n) for n in _list(node, "shape", path))
        parts = [self.array(node[name], f"{path}.{name}") for name in ("data", "indices", "indptr")]
        matrix = kind(tuple(parts), shape=shape)
        matrix.check_format(full_check=True)
        return matrix

    def _decode_device(self, node, path, depth):
        return torch.device(str(node["value"]))

    def _decode_numpy_dtype(self, node, path, depth):
        return _checked_dtype(node["value"], path)

    def _decode_numpy_type(self, node, path, depth):
        return _checked_dtype(node["value"], path).type

    def _decode_python_type(self, node, path, depth):
        return _PYTHON_TYPES[node["value"]]

    def _decode_numpy_random_state(self, node, path, depth):
        state = self.field(node, "state", path, depth)
        generator = np.random.RandomState()
        generator.set_state(state)
        return generator

    def _decode_numpy_generator(self, node, path, depth):
        bit_generator = _BIT_GENERATORS[node["bit_generator"]]()
        bit_generator.state = self.field(node, "state", path, depth)
        return np.random.Generator(bit_generator)


def _list(node, name, path):
    value = node.get(name)
    if type(value) is not list:
        raise ModelFileError(f"{path}: field {name!r} must be a list.")
    return value


def _checked_dtype(name, path):
    dtype = np.dtype(str(name))
    if dtype.kind not in _ARRAY_KINDS | {"c"}:
        raise ModelFileError(f"{path}: {name!r} is not a numeric dtype.")
    return dtype
