"""What a new user sees for the usual mistakes: clear messages.

Raw text or token lists instead of counts, a TF-IDF matrix into a sampler of integer
counts or into a model that keeps fractional values as weights, more topics than words,
documents without a known word, a one-level PAM, and the coherence scorer's warning
inside a grid search.
"""

import pickle
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sktopics import PAMVI, LDAGibbs
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import make_coherence_scorer
from sktopics.utils import EmptyDocumentWarning, FractionalCountsWarning
from sktopics.utils._validation import text_input_kind

from ._instances import FAST_PARAMS, TEST_DEVICE

TEXTS = [f"topic {w} model {w} word sample {w}{i}" for i, w in
         enumerate(["apple", "banana", "cherry", "grape"] * 10)]
TOKENS = [doc.split() for doc in TEXTS]
ESTIMATORS = list(FAST_PARAMS)
#: The models that keep fractional entries as weights (LDAGibbs rounds them).
WEIGHTED = [cls for cls in ESTIMATORS if cls is not LDAGibbs]


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_raw_text_says_that_a_vectorizer_is_needed(cls):
    with pytest.raises(ValueError, match="not raw text.*CountVectorizer") as info:
        cls(**FAST_PARAMS[cls]).fit(TEXTS)
    assert "apple" not in str(info.value)  # the document is not printed
    with pytest.raises(ValueError, match="raw text"):
        cls(**FAST_PARAMS[cls]).fit(np.array(TEXTS, dtype=object))


def _object_array(documents):
    array = np.empty(len(documents), dtype=object)
    array[:] = documents
    return array


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_token_lists_say_how_to_count_them(cls):
    ragged = [doc[: 3 + i % 4] for i, doc in enumerate(TOKENS)]  # numpy: "inhomogeneous"
    for tokens in (TOKENS, ragged, tuple(tuple(doc) for doc in TOKENS), _object_array(ragged)):
        with pytest.raises(ValueError, match=r"not lists of tokens: put a vectorizer first, e\.g\. "
                           r"make_pipeline\(CountVectorizer\(analyzer=list\), "
                           rf"{cls.__name__}\(\.\.\.\)\) \(analyzer=list counts") as info:
            cls(**FAST_PARAMS[cls]).fit(tokens)
        assert "apple" not in str(info.value)  # the documents are not printed
    # what the message proposes counts the tokens as they are and fits
    pipe = make_pipeline(CountVectorizer(analyzer=list), cls(**FAST_PARAMS[cls]))
    pipe.fit(ragged)
    expected = CountVectorizer(token_pattern=r"\S+", lowercase=False).fit(
        [" ".join(doc) for doc in ragged])
    np.testing.assert_array_equal(pipe[0].get_feature_names_out(), expected.get_feature_names_out())
    np.testing.assert_array_equal(
        pipe[0].transform(ragged).toarray(),
        expected.transform([" ".join(doc) for doc in ragged]).toarray())
    assert pipe.transform(ragged).shape == (len(ragged), pipe[-1].components_.shape[0])
    assert pickle.loads(pickle.dumps(pipe))[0].vocabulary_ == pipe[0].vocabulary_


def test_what_counts_as_text_and_as_numbers():
    assert text_input_kind("one document") == "raw text"
    assert text_input_kind(np.array(TEXTS)) == "raw text"
    assert text_input_kind([[], [], ["apple", "pie"]]) == "token lists"  # empty ones first
    assert text_input_kind([np.array(["apple", "pie"])]) == "token lists"
    counts = CountVectorizer().fit_transform(TEXTS)
    for numbers in (counts, counts.toarray(), counts.toarray().tolist(), [[], []],
                    np.array([[1, 2]], dtype=object), [np.array([1.0, 2.0])]):
        assert text_input_kind(numbers) is None
    # counts as a list of lists are still counts
    model = LDAGibbs(**FAST_PARAMS[LDAGibbs]).fit(counts.toarray().tolist())
    assert model.n_features_in_ == counts.shape[1]


def test_tfidf_into_the_sampler_is_refused_with_what_rounding_would_lose():
    # long documents: every TF-IDF entry is below 0.5, rounding empties every document
    long_texts = [" ".join(f"w{(i * 7 + j) % 300}" for j in range(40)) for i in range(30)]
    X = TfidfVectorizer().fit_transform(long_texts)
    with pytest.raises(ValueError, match=r"TF-IDF.*CountVectorizer") as info:
        LDAGibbs(3, max_iter=5, device=TEST_DEVICE).fit(X)
    assert "30 of 30 documents become empty" in str(info.value)
    # short documents: rounding keeps them, but every entry changed: said, with a hint
    with pytest.warns(DataConversionWarning, match=r"240 of 240 non-zero.*TF-IDF"):
        LDAGibbs(3, max_iter=5, device=TEST_DEVICE).fit(TfidfVectorizer().fit_transform(TEXTS))
    # a few fractional entries in real counts: repaired, with what was changed
    counts = CountVectorizer().fit_transform(TEXTS).astype(float)
    counts.data[:3] = 0.4
    with pytest.warns(DataConversionWarning, match=r"3 of \d+ non-zero entries.*round to 0") as rec:
        model = LDAGibbs(3, max_iter=5, device=TEST_DEVICE).fit(counts)
    assert "TF-IDF" not in str(rec[0].message)
    assert counts.data[0] == 0.4 and model.n_features_in_ == counts.shape[1]  # input untouched


def _fractional_warnings(call):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if issubclass(w.category, FractionalCountsWarning)]


@pytest.mark.parametrize("cls", WEIGHTED, ids=lambda c: c.__name__)
def test_fractional_values_into_a_weighting_model_are_said_once_per_fit(cls):
    tfidf = TfidfVectorizer().fit_transform(TEXTS)
    model = cls(**FAST_PARAMS[cls])
    messages = _fractional_warnings(lambda: model.fit(tfidf))
    assert len(messages) == 1
    message = messages[0]
    assert f"{tfidf.nnz} of {tfidf.nnz} non-zero entries" in message
    assert cls.__name__ in message and "weights" in message and "token counts" in message
    assert "TF-IDF" in message and "CountVectorizer" in message
    assert ("warnings.filterwarnings(\"ignore\", category=sktopics.utils.FractionalCountsWarning)"
            in message)
    # inference on the same matrix says nothing more
    with warnings.catch_warnings():
        warnings.simplefilter("error", FractionalCountsWarning)
        model.transform(tfidf)
        model.score(tfidf)
    # a few fractional entries among counts: their number
    counts = CountVectorizer().fit_transform(TEXTS).astype(np.float64)
    counts.data[:3] = 0.5
    messages = _fractional_warnings(lambda: cls(**FAST_PARAMS[cls]).fit(counts))
    assert len(messages) == 1 and f"3 of {counts.nnz} non-zero entries" in messages[0]
    # partial_fit: the first call starts the model and says it, the next ones do not
    online = cls(**FAST_PARAMS[cls])
    assert len(_fractional_warnings(lambda: online.partial_fit(tfidf))) == 1
    assert _fractional_warnings(lambda: online.partial_fit(tfidf)) == []
    # a warm-started fit continues a model already told about its input
    warm = cls(**FAST_PARAMS[cls], warm_start=True)
    assert len(_fractional_warnings(lambda: warm.fit(tfidf))) == 1
    assert _fractional_warnings(lambda: warm.fit(tfidf)) == []
    # the filter the message gives silences it
    with warnings.catch_warnings():
        warnings.simplefilter("error", FractionalCountsWarning)
        warnings.filterwarnings("ignore", category=FractionalCountsWarning)
        cls(**FAST_PARAMS[cls]).fit(tfidf)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_integer_counts_give_no_fractional_warning(cls):
    counts = CountVectorizer().fit_transform(TEXTS)
    for X in (counts, counts.astype(np.float32), counts.toarray().astype(np.float64)):
        assert _fractional_warnings(lambda X=X: cls(**FAST_PARAMS[cls]).fit(X)) == []
    if cls is LDAGibbs:  # it rounds fractional values (a DataConversionWarning), not weights
        messages = _fractional_warnings(
            lambda: cls(**FAST_PARAMS[cls]).fit(TfidfVectorizer().fit_transform(TEXTS)))
        assert messages == []


def test_more_topics_than_words_is_said():
    X = sp.csr_matrix(np.array([[3, 1, 0], [0, 2, 5], [1, 1, 1], [4, 0, 2]]))
    with pytest.warns(UserWarning, match="more topics than words"):
        LDAGibbs(10, max_iter=3, device=TEST_DEVICE).fit(X)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_transform_counts_documents_without_a_known_word(cls):
    X, _, _ = make_lda_corpus(n_samples=30, n_features=20, n_components=3, random_state=0)
    model = cls(**FAST_PARAMS[cls]).fit(X)
    new = sp.vstack([X[:3], sp.csr_matrix((2, X.shape[1]))]).tocsr()
    with pytest.warns(EmptyDocumentWarning, match="2 of 5 documents"):
        doc_topic = model.transform(new)
    np.testing.assert_allclose(doc_topic[3], doc_topic[4])  # both the prior mean
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyDocumentWarning)
        model.transform(X[:3])  # none empty: no warning


def test_a_one_level_pam_is_refused():
    X, _, _ = make_lda_corpus(n_samples=30, n_features=20, n_components=3, random_state=0)
    with pytest.raises(ValueError, match="two levels.*AVITM"):
        PAMVI(structure=5, max_iter=1, device=TEST_DEVICE).fit(X)


def test_coherence_scorer_warns_once_per_search():
    # every fold has top words missing from the held-out fold: one warning, not one per fold
    X, _, _ = make_lda_corpus(n_samples=60, n_features=200, n_components=3, doc_length=10,
                              random_state=0)
    search = GridSearchCV(LDAGibbs(max_iter=10, device=TEST_DEVICE, random_state=0),
                          {"n_components": [2, 3]}, cv=3, scoring=make_coherence_scorer(top_n=15))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X)
    unseen = [w for w in caught if "never occur in X_ref" in str(w.message)]
    assert len(unseen) == 1 and "once per scorer" in str(unseen[0].message)
