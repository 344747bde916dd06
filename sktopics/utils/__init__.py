"""Utilities shared by the sktopics estimators and evaluation code.

Public: the warnings the estimators give. :class:`DeviceWarning`: a fitted model is
moved to another device than the one it recorded (see the user guide, "GPUs").
:class:`EmptyDocumentWarning`: ``transform`` met documents without a token in the
vocabulary. :class:`FractionalCountsWarning`: a model that keeps non-integer entries as
weights is fitted on some (a TF-IDF matrix, say). :class:`InconsistentVersionWarning`:
an estimator is unpickled by another version of sktopics than the one that pickled it.
"""

from ._devices import DeviceWarning
from ._pickle import InconsistentVersionWarning
from ._validation import EmptyDocumentWarning, FractionalCountsWarning

__all__ = [
    "DeviceWarning",
    "EmptyDocumentWarning",
    "FractionalCountsWarning",
    "InconsistentVersionWarning",
]
