"""Warnings point at the user's line, whatever wrappers lie between it and sktopics.

A user reads a warning's file and line to find the call that caused it; through
``Pipeline.transform``, scikit-learn's ``set_output`` wrapper and ``_fit_context``, a
fixed ``stacklevel`` named scikit-learn's code instead. Every test here checks that
``warning.filename`` is this file.
"""

import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sktopics import LDAGibbs
from sktopics.utils import EmptyDocumentWarning
from sktopics.utils._warnings import LIBRARIES, user_stacklevel, warn

TEXTS = ["apple banana cherry apple", "banana cherry banana", "dog cat mouse dog",
         "cat mouse cat", "apple cherry banana", "dog mouse cat"] * 3
#: The second document has only words the vectorizer never saw: an empty row.
NEW_TEXTS = ["apple banana", "zebra", "cat dog"]

def _model():
    return LDAGibbs(2, max_iter=5, device="cpu", random_state=0)


def _caught(category, call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    caught = [w for w in caught if issubclass(w.category, category)]
    assert caught, f"no {category.__name__} was issued"
    return caught


@pytest.fixture(scope="module")
def pipe():
    return make_pipeline(CountVectorizer(), _model()).fit(TEXTS)


def test_empty_document_warning_of_a_pipeline_names_the_caller(pipe):
    caught = _caught(EmptyDocumentWarning, lambda: pipe.transform(NEW_TEXTS))
    assert [w.filename for w in caught] == [__file__]


def test_empty_document_warning_of_a_model_names_the_caller(pipe):
    model, counts = pipe[-1], pipe[0].transform(NEW_TEXTS)
    caught = _caught(EmptyDocumentWarning, lambda: model.transform(counts))
    assert [w.filename for w in caught] == [__file__]


def _fractional_counts():
    X = CountVectorizer().fit_transform(TEXTS).astype(np.float64)
    X = sp.csr_matrix(X)
    X.data[0] += 0.25  # one entry that is not a count
    return X


def test_count_rounding_warning_of_fit_names_the_caller():
    X = _fractional_counts()
    caught = _caught(DataConversionWarning, lambda: _model().fit(X))
    assert [w.filename for w in caught] == [__file__]


def test_count_rounding_warning_of_a_pipeline_names_the_caller():
    X = _fractional_counts()
    pipe = make_pipeline(_model())  # scikit-learn's Pipeline between the user and the model
    caught = _caught(DataConversionWarning, lambda: pipe.fit(X))
    assert [w.filename for w in caught] == [__file__]
    caught = _caught(DataConversionWarning, lambda: pipe.transform(X))
    assert [w.filename for w in caught] == [__file__]


def _library_function(name, source):
    """A function defined in a module named ``name`` (as if it were that library's)."""
    namespace = {"__name__": name, "warn": warn, "user_stacklevel": user_stacklevel}
    exec(source, namespace)  # noqa: S102
    return namespace


def test_warn_skips_every_library_frame():
    assert {"sktopics", "sklearn", "skorch", "torch", "joblib", "numpy", "scipy"} <= LIBRARIES
    inner = _library_function("sktopics.fake", "def inner():\n    warn('deep', UserWarning)\n")
    outer = _library_function("sklearn.fake", "def outer(f):\n    return f()\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = inspect.currentframe().f_lineno + 1
        outer["outer"](inner["inner"])
    assert [(w.filename, w.lineno) for w in caught] == [(__file__, line)]


def test_warn_names_the_first_frame_outside_the_libraries():
    # user code called back from inside a library is the first frame outside: it is named
    inner = _library_function("sktopics.fake", "def inner():\n    warn('x')\n")
    outer = _library_function("sklearn.fake", "def outer(f):\n    return f()\n")

    def user_callback():
        outer["outer"](inner["inner"])

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        outer["outer"](user_callback)
    assert caught[0].filename == __file__
    assert caught[0].lineno == user_callback.__code__.co_firstlineno + 1


def test_user_stacklevel_counts_the_library_frames():
    level = _library_function("sktopics.fake", "def level():\n    return user_stacklevel()\n")
    run = _library_function("joblib.fake", "def run(f):\n    return f()\n")
    assert level["level"]() == 2  # level, then this test
    assert run["run"](level["level"]) == 3  # level, run, then this test
