"""sktopics: topic models for scikit-learn, with torch doing the heavy lifting.

Estimators: :class:`LDAGibbs` (collapsed Gibbs), :class:`AVITM`, :class:`ProdLDA`
(autoencoding variational inference), :class:`PAMVI` and :class:`MoLDA` (amortised
inference for Pachinko allocation), with :func:`top_words`; settings:
:func:`set_config`, :func:`get_config`, :func:`config_context`; model files:
:func:`save`, :func:`load`, :func:`push_to_hub`, :func:`from_pretrained` (from
:mod:`sktopics.io`). Submodules :mod:`sktopics.metrics`, :mod:`sktopics.datasets`,
:mod:`sktopics.model_selection`, :mod:`sktopics.inspection`, :mod:`sktopics.distributed`,
:mod:`sktopics.io` and :mod:`sktopics.pam` load on first use.
"""

import importlib

from ._config import config_context, get_config, set_config
from ._gibbs._lda_gibbs import LDAGibbs
from ._neural._avitm import AVITM
from ._neural._molda import MoLDA
from ._neural._pamvi import PAMVI
from ._neural._prodlda import ProdLDA
from ._topwords import top_words
from ._version import __version__

_SUBMODULES = ("datasets", "distributed", "inspection", "io", "metrics", "model_selection",
               "pam", "utils")

#: Functions of submodules offered at the top level, imported on first use.
_LAZY_FUNCTIONS = {"save": "io", "load": "io", "push_to_hub": "io", "from_pretrained": "io"}

#: Submodules left out of ``__all__``: ``from sktopics import *`` must not shadow the
#: standard library's ``io`` (``sktopics.io`` is imported on first use all the same).
_NOT_STARRED = frozenset({"io"})

__all__ = [
    "AVITM", "LDAGibbs", "MoLDA", "PAMVI", "ProdLDA", "config_context", "get_config",
    "set_config", "top_words", "__version__", *_LAZY_FUNCTIONS,
    *(name for name in _SUBMODULES if name not in _NOT_STARRED)
]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY_FUNCTIONS:
        return getattr(importlib.import_module(f"{__name__}.{_LAZY_FUNCTIONS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES) | set(_LAZY_FUNCTIONS))
