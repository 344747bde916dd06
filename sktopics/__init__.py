"""sktopics: topic models for scikit-learn, with torch doing the heavy lifting.

Estimators: :class:`LDAGibbs` (collapsed Gibbs), :class:`AVITM`, :class:`ProdLDA`
(autoencoding variational inference), :class:`PAMVI` and :class:`MoLDA` (amortised
inference for Pachinko allocation), with :func:`top_words`; settings:
:func:`set_config`, :func:`get_config`, :func:`config_context`. Submodules
:mod:`sktopics.metrics`, :mod:`sktopics.datasets`, :mod:`sktopics.model_selection`,
:mod:`sktopics.inspection`, :mod:`sktopics.distributed` and :mod:`sktopics.pam` load on
first use.
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

_SUBMODULES = ("datasets", "distributed", "inspection", "metrics", "model_selection", "pam",
               "utils")

__all__ = [
    "AVITM", "LDAGibbs", "MoLDA", "PAMVI", "ProdLDA", "config_context", "get_config",
    "set_config", "top_words", "__version__", *_SUBMODULES
]


def __getattr__(name):
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_SUBMODULES))
