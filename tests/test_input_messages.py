"""What a new user sees for the usual mistakes: clear messages.

Raw text instead of counts, a TF-IDF matrix into a sampler of integer counts, more
topics than words, documents without a known word, a one-level PAM, and the coherence
scorer's warning inside a grid search.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.exceptions import DataConversionWarning
from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
from sklearn.model_selection import GridSearchCV

from sktopics import PAMVI, LDAGibbs
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import make_coherence_scorer
from sktopics.utils import EmptyDocumentWarning

from ._instances import FAST_PARAMS, TEST_DEVICE

TEXTS = [f"topic {w} model {w} word sample {w}{i}" for i, w in
         enumerate(["apple", "banana", "cherry", "grape"] * 10)]
ESTIMATORS = list(FAST_PARAMS)


@pytest.mark.parametrize("cls", ESTIMATORS, ids=lambda c: c.__name__)
def test_raw_text_says_that_a_vectorizer_is_needed(cls):
    with pytest.raises(ValueError, match="not raw text.*CountVectorizer") as info:
        cls(**FAST_PARAMS[cls]).fit(TEXTS)
    assert "apple" not in str(info.value)  # the document is not printed
    with pytest.raises(ValueError, match="raw text"):
        cls(**FAST_PARAMS[cls]).fit(np.array(TEXTS, dtype=object))


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
