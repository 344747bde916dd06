"""Tests of sktopics.metrics: NPMI coherence and topic diversity."""

import math
import warnings
from itertools import combinations

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import BaseEstimator
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sktopics.metrics import NPMIResult, npmi_coherence, topic_diversity

EPS = 1e-12


def random_corpus(seed, n_docs=60, n_words=40, n_topics=5, n_empty=3):
    """Sparse random counts with a few empty documents, and a topic-word matrix."""
    rng = np.random.default_rng(seed)
    rates = rng.uniform(0.1, 0.8, size=n_words)
    X = rng.poisson(rates, size=(n_docs, n_words)).astype(float)
    X[rng.choice(n_docs, size=n_empty, replace=False)] = 0
    topic_word = rng.dirichlet(np.full(n_words, 0.3), size=n_topics)
    return X, topic_word


def ranked_words(topic_word, top_n):
    return [list(np.argsort(-row, kind="stable")[:top_n]) for row in topic_word]


def npmi_epsilon(c_ij, c_i, c_j, n):
    """gensim's c_npmi term from document counts."""
    p_ij = c_ij / n
    return math.log((p_ij + EPS) / ((c_i / n) * (c_j / n))) / -math.log(p_ij + EPS)


def npmi_scholar(c_ij, c_i, c_j, n):
    """The formula of Scholar's ``compute_npmi.py`` (base-10 logs, 0 if unseen)."""
    if c_ij == 0:
        return 0.0
    return (math.log10(n) + math.log10(c_ij) - math.log10(c_i) - math.log10(c_j)) / (
        math.log10(n) - math.log10(c_ij)
    )


class FittedModel(BaseEstimator):
    """The least a fitted topic model offers: ``fit`` and ``components_``."""

    def __init__(self, components=None):
        self.components = components

    def fit(self, X=None, y=None):
        self.components_ = np.asarray(self.components)
        return self


# --------------------------------------------------------------------- gensim


@pytest.mark.parametrize("seed", [0, 3, 5])
def test_npmi_matches_gensim_c_npmi(seed):
    pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    X, topic_word = random_corpus(seed)
    # Each present word once per document; empty documents stay empty texts.
    texts = [[f"w{j}" for j in np.flatnonzero(row)] for row in X]
    assert sum(len(t) == 0 for t in texts) >= 3
    topics = [[f"w{j}" for j in words] for words in ranked_words(topic_word, 10)]
    assert (X[:, np.unique(ranked_words(topic_word, 10))] > 0).any(axis=0).all()
    B = X > 0
    assert any(  # some pairs never co-occur: the epsilon term is exercised
        not (B[:, i] & B[:, j]).any()
        for words in ranked_words(topic_word, 10)
        for i, j in combinations(words, 2)
    )

    # A window as long as the longest document makes every document one
    # window; gensim >= 4.1 counts a shorter (or empty) document as one window
    # too, so its counts are boolean document counts over all rows.
    cm = CoherenceModel(
        topics=topics,
        texts=texts,
        dictionary=Dictionary(texts),
        coherence="c_npmi",
        window_size=max(len(t) for t in texts),
        topn=10,
        processes=1,
    )
    expected = np.array(cm.get_coherence_per_topic())

    result = npmi_coherence(topic_word, sp.csr_matrix(X), top_n=10)
    np.testing.assert_allclose(result.per_topic, expected, rtol=0, atol=1e-10)
    assert result.mean == pytest.approx(cm.get_coherence(), abs=1e-10)


def test_npmi_matches_gensim_with_unseen_words_dropped():
    pytest.importorskip("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel

    X, topic_word = random_corpus(3)
    X[:, [0, 1]] = 0
    topic_word[:, [0, 1]] = 10.0  # every topic ranks the two unseen words first
    texts = [[f"w{j}" for j in np.flatnonzero(row)] for row in X]
    topics = [[f"w{j}" for j in words] for words in ranked_words(topic_word, 10)]
    # gensim silently drops tokens missing from the dictionary.
    cm = CoherenceModel(
        topics=topics,
        texts=texts,
        dictionary=Dictionary(texts),
        coherence="c_npmi",
        window_size=max(len(t) for t in texts),
        topn=10,
        processes=1,
    )
    with pytest.warns(UserWarning, match="never occur in X_ref"):
        result = npmi_coherence(topic_word, X)
    np.testing.assert_allclose(
        result.per_topic, cm.get_coherence_per_topic(), rtol=0, atol=1e-10
    )


# ------------------------------------------------------------- hand examples


def hand_example():
    # doc0: w0 w1 | doc1: w0 w1 w2 | doc2: w2 w3 (counts > 1 count once)
    X = np.array([[2, 1, 0, 0], [1, 1, 3, 0], [0, 0, 1, 1]])
    topic_word = np.array(
        [
            [0.4, 0.3, 0.2, 0.1],  # top 3: w0 w1 w2
            [0.2, 0.1, 0.0, 0.7],  # top 3: w3 w0 w1
        ]
    )
    return X, topic_word


def test_npmi_hand_computed_epsilon():
    X, topic_word = hand_example()
    log = math.log
    # p(w0) = p(w1) = p(w2) = 2/3, p(w3) = 1/3
    # p(w0, w1) = 2/3, p(w0, w2) = p(w1, w2) = 1/3, p(w3, w0) = p(w3, w1) = 0
    npmi_01 = log((2 / 3 + EPS) / (4 / 9)) / -log(2 / 3 + EPS)
    npmi_02 = log((1 / 3 + EPS) / (4 / 9)) / -log(1 / 3 + EPS)
    npmi_30 = log(EPS / (2 / 9)) / -log(EPS)
    expected = [(npmi_01 + 2 * npmi_02) / 3, (2 * npmi_30 + npmi_01) / 3]

    result = npmi_coherence(topic_word, X, top_n=3)
    assert isinstance(result, NPMIResult)
    assert result.per_topic.shape == (2,)
    np.testing.assert_allclose(result.per_topic, expected, rtol=1e-12)
    assert result.mean == pytest.approx(np.mean(expected), rel=1e-12)
    assert npmi_30 == pytest.approx(-1, abs=0.1)  # never co-occurring: about -1


def test_npmi_hand_computed_zero():
    X, topic_word = hand_example()
    log = math.log
    npmi_01 = log((2 / 3) / (4 / 9)) / -log(2 / 3)
    npmi_02 = log((1 / 3) / (4 / 9)) / -log(1 / 3)
    expected = [(npmi_01 + 2 * npmi_02) / 3, (0 + 0 + npmi_01) / 3]

    result = npmi_coherence(topic_word, X, top_n=3, zero_cooccurrence="zero")
    np.testing.assert_allclose(result.per_topic, expected, rtol=1e-12)
    assert result.mean == pytest.approx(np.mean(expected), rel=1e-12)


def test_npmi_counts_empty_documents():
    X, topic_word = hand_example()
    X = np.vstack([X, np.zeros((2, 4))])  # D = 5
    c = {"0": 2, "1": 2, "2": 2, "01": 2, "02": 1, "12": 1}
    expected = (
        npmi_epsilon(c["01"], c["0"], c["1"], 5)
        + npmi_epsilon(c["02"], c["0"], c["2"], 5)
        + npmi_epsilon(c["12"], c["1"], c["2"], 5)
    ) / 3
    result = npmi_coherence(topic_word, X, top_n=3)
    assert result.per_topic[0] == pytest.approx(expected, rel=1e-12)


def test_npmi_topic_score_does_not_depend_on_other_topics():
    X, topic_word = random_corpus(4)
    together = npmi_coherence(topic_word, X).per_topic
    alone = [npmi_coherence(row[None, :], X).per_topic[0] for row in topic_word]
    np.testing.assert_allclose(together, alone, rtol=0, atol=1e-14)


# --------------------------------------------------------------- conventions


@pytest.mark.parametrize("top_n", [2, 5, 10])
def test_npmi_zero_matches_scholar_formula(top_n):
    X, topic_word = random_corpus(5)
    X[:, 7] = 0  # an unseen word, ranked first by topic 0: its pairs score 0
    topic_word[0, 7] = 10.0
    B = X > 0
    n = X.shape[0]
    expected = []
    for words in ranked_words(topic_word, top_n):
        pairs = [
            npmi_scholar((B[:, i] & B[:, j]).sum(), B[:, i].sum(), B[:, j].sum(), n)
            for i, j in combinations(words, 2)
        ]
        expected.append(np.mean(pairs))

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning for unseen words in "zero" mode
        result = npmi_coherence(topic_word, X, top_n=top_n, zero_cooccurrence="zero")
    np.testing.assert_allclose(result.per_topic, expected, rtol=0, atol=1e-12)
    assert result.mean == pytest.approx(np.mean(expected), abs=1e-12)


def test_npmi_zero_pair_in_every_document_scores_one():
    X = np.array([[1, 1, 0], [1, 1, 1]])
    result = npmi_coherence([[0.5, 0.4, 0.1]], X, top_n=2, zero_cooccurrence="zero")
    assert result.per_topic[0] == 1.0


def test_npmi_epsilon_drops_unseen_words_with_warning():
    X, topic_word = hand_example()
    X = np.hstack([X, np.zeros((3, 1))])  # w4 never occurs
    topic_word = np.hstack([topic_word, [[0.9], [0.0]]])  # topic 0 top 3: w4 w0 w1

    with pytest.warns(UserWarning, match="1 top word.*1 topic.*never occur") as record:
        result = npmi_coherence(topic_word, X, top_n=3)
    assert record[0].filename == __file__  # the warning points at the caller
    # Topic 0 keeps the single pair (w0, w1).
    assert result.per_topic[0] == pytest.approx(npmi_epsilon(2, 2, 2, 3), rel=1e-12)


def test_npmi_nan_topic_excluded_from_mean():
    X = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [0, 1, 0, 0]])
    topic_word = np.array(
        [
            [0.5, 0.4, 0.0, 0.0],  # w0 w1: scored
            [0.3, 0.0, 0.4, 0.5],  # w3 w2 unseen, w0 alone -> NaN
        ]
    )
    with pytest.warns(UserWarning, match="never occur"):
        result = npmi_coherence(topic_word, X, top_n=3)
    assert np.isnan(result.per_topic[1])
    assert not np.isnan(result.per_topic[0])
    assert result.mean == result.per_topic[0]


def test_npmi_all_topics_nan_gives_nan_mean_quietly():
    X = np.array([[1, 0, 0], [1, 0, 0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.warns(UserWarning, match="never occur"):
            result = npmi_coherence([[0.5, 0.3, 0.2]], X, top_n=3)
    assert np.isnan(result.mean)
    assert np.isnan(result.per_topic).all()


def test_npmi_ties_go_to_lower_column():
    X = np.array([[1, 1, 0, 0], [1, 1, 1, 1], [0, 0, 1, 1]])
    tied = npmi_coherence([[1.0, 1.0, 1.0, 1.0]], X, top_n=2).per_topic
    first_two = npmi_coherence([[1.0, 0.9, 0.0, 0.0]], X, top_n=2).per_topic
    assert tied[0] == first_two[0]


# ------------------------------------------------------------------- inputs


@pytest.mark.parametrize(
    "to_format",
    [
        np.asarray,
        sp.csr_matrix,
        sp.csc_matrix,
        sp.coo_matrix,
        sp.lil_matrix,
        sp.csr_array,
    ],
)
def test_npmi_accepts_dense_and_any_sparse_format(to_format):
    X, topic_word = random_corpus(6)
    expected = npmi_coherence(topic_word, X).per_topic
    result = npmi_coherence(topic_word, to_format(X))
    np.testing.assert_array_equal(result.per_topic, expected)


def test_npmi_fractional_counts_are_binarised():
    X, topic_word = random_corpus(7)
    expected = npmi_coherence(topic_word, X).per_topic
    result = npmi_coherence(topic_word, X * 0.37)
    np.testing.assert_array_equal(result.per_topic, expected)


def test_metrics_accept_fitted_model_and_pipeline():
    docs = [
        "apple banana apple fruit",
        "banana fruit salad",
        "car engine wheel",
        "engine wheel road car",
        "fruit apple car",
    ]
    pipe = make_pipeline(
        CountVectorizer(),
        LatentDirichletAllocation(n_components=2, max_iter=5, random_state=0),
    ).fit(docs)
    X_ref = pipe[0].transform(docs)
    lda = pipe[-1]

    from_array = npmi_coherence(lda.components_, X_ref, top_n=3)
    for model in (lda, pipe):
        result = npmi_coherence(model, X_ref, top_n=3)
        np.testing.assert_array_equal(result.per_topic, from_array.per_topic)
        expected_td = topic_diversity(lda.components_, top_n=3)
        assert topic_diversity(model, top_n=3) == expected_td

    fake = FittedModel(components=[[3.0, 2.0, 1.0], [1.0, 2.0, 3.0]]).fit()
    assert topic_diversity(fake, top_n=2) == 0.75  # {0, 1} and {2, 1}
    X_fake = np.array([[1, 1, 0], [0, 1, 1], [1, 0, 1]])
    np.testing.assert_array_equal(
        npmi_coherence(fake, X_fake, top_n=2).per_topic,
        npmi_coherence(fake.components_, X_fake, top_n=2).per_topic,
    )


TRAIN_TEXTS = [
    "apple banana apple fruit salad",
    "banana fruit salad juice",
    "car engine wheel road",
    "engine wheel road car driver",
    "fruit apple juice banana",
    "driver car road engine",
] * 3
#: Held-out texts: words the vectorizer never saw, and training words they lack, so a
#: vectorizer fitted on them would count other columns than the model's.
REF_TEXTS = ["apple juice zebra", "car road banana", "wheel engine wheel kiwi", "salad fruit",
             "driver", "unknown words only"]


@pytest.fixture(scope="module")
def text_pipeline():
    return make_pipeline(
        CountVectorizer(),
        LatentDirichletAllocation(n_components=3, max_iter=5, random_state=0),
    ).fit(TRAIN_TEXTS)


@pytest.mark.parametrize("zero_cooccurrence", ["epsilon", "zero"])
def test_npmi_of_a_pipeline_counts_texts_with_its_vectorizer(text_pipeline, zero_cooccurrence):
    pipe = text_pipeline
    counted = pipe[0].transform(REF_TEXTS)
    assert CountVectorizer().fit_transform(REF_TEXTS).shape[1] != counted.shape[1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # top words absent from REF_TEXTS
        expected = npmi_coherence(pipe[-1], counted, top_n=4, zero_cooccurrence=zero_cooccurrence)
        for texts in (REF_TEXTS, np.array(REF_TEXTS, dtype=object)):
            result = npmi_coherence(pipe, texts, top_n=4, zero_cooccurrence=zero_cooccurrence)
            np.testing.assert_array_equal(result.per_topic, expected.per_topic)
            assert result.mean == expected.mean or (np.isnan(result.mean) and np.isnan(expected.mean))
        # a matrix over the model's vocabulary is still taken as it is
        np.testing.assert_array_equal(
            npmi_coherence(pipe, counted, top_n=4, zero_cooccurrence=zero_cooccurrence).per_topic,
            expected.per_topic)
    assert np.isfinite(expected.per_topic).any()


def test_npmi_of_a_pipeline_counts_token_lists_when_its_vectorizer_takes_them():
    tokens = [text.split() for text in TRAIN_TEXTS]
    ref = [text.split() for text in REF_TEXTS]
    pipe = make_pipeline(
        CountVectorizer(analyzer=list),
        LatentDirichletAllocation(n_components=3, max_iter=5, random_state=0),
    ).fit(tokens)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        expected = npmi_coherence(pipe[-1], pipe[0].transform(ref), top_n=4, zero_cooccurrence="zero")
        result = npmi_coherence(pipe, ref, top_n=4, zero_cooccurrence="zero")
    np.testing.assert_array_equal(result.per_topic, expected.per_topic)
    # a vectorizer of strings cannot count them: said, without the corpus
    text_pipe = make_pipeline(CountVectorizer(), LatentDirichletAllocation(2, max_iter=2)).fit(TRAIN_TEXTS)
    with pytest.raises(ValueError, match="token lists, which the Pipeline's vectorizer does not "
                                         r"take.*analyzer=list") as info:
        npmi_coherence(text_pipe, ref, top_n=4)
    assert "zebra" not in str(info.value)


def test_npmi_refuses_texts_without_a_vectorizer_in_one_sentence(text_pipeline):
    model = text_pipeline[-1]
    tokens = [text.split() for text in REF_TEXTS]
    for owner, X_ref, kind in [(model, REF_TEXTS, "raw text"), (model.components_, REF_TEXTS, "raw text"),
                               (make_pipeline(model), REF_TEXTS, "raw text"),
                               (model, tokens, "token lists"), (model.components_, tokens, "token lists")]:
        with pytest.raises(ValueError) as info:
            npmi_coherence(owner, X_ref, top_n=4)
        message = str(info.value)
        assert message.startswith(f"X_ref holds {kind}")
        assert "pass the fitted Pipeline, or vectorize the texts with the model's vectorizer" in message
        assert "zebra" not in message and "apple" not in message  # the corpus is not pasted
        assert message.count(". ") == 0 and message.endswith(".")  # one sentence


def test_topic_diversity_takes_the_same_pipeline(text_pipeline):
    model = text_pipeline[-1]
    for top_n in (2, 4):
        assert topic_diversity(text_pipeline, top_n=top_n) == topic_diversity(model, top_n=top_n)
        assert topic_diversity(text_pipeline, top_n=top_n) == topic_diversity(model.components_, top_n=top_n)


def test_npmi_rejects_mismatched_vocabulary():
    X, topic_word = hand_example()
    with pytest.raises(ValueError, match="X_ref has 3 columns.*4 words"):
        npmi_coherence(topic_word, X[:, :3], top_n=3)


def test_npmi_rejects_negative_values():
    X, topic_word = hand_example()
    X = X.astype(float)
    X[0, 3] = -1.0
    with pytest.raises(ValueError, match="negative"):
        npmi_coherence(topic_word, X, top_n=3)
    with pytest.raises(ValueError, match="negative"):
        npmi_coherence(topic_word, sp.coo_matrix(X), top_n=3)


def test_npmi_rejects_non_finite_values():
    X, topic_word = hand_example()
    X = X.astype(float)
    X[1, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        npmi_coherence(topic_word, X, top_n=3)
    with pytest.raises(ValueError, match="NaN or infinite"):
        npmi_coherence([[np.inf, 1.0, 0.0, 0.0]], X[[0]], top_n=2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"top_n": 1}, "top_n"),
        ({"top_n": 2.5}, "top_n"),
        ({"top_n": 5}, "top_n=5 exceeds"),
        ({"zero_cooccurrence": "one"}, "zero_cooccurrence"),
        ({"eps": 0.0}, "eps"),
    ],
)
def test_npmi_rejects_bad_parameters(kwargs, match):
    X, topic_word = hand_example()
    with pytest.raises(ValueError, match=match):
        npmi_coherence(topic_word, X, **kwargs)


def test_npmi_requires_x_ref_and_2d_topic_word():
    X, topic_word = hand_example()
    with pytest.raises(TypeError):
        npmi_coherence(topic_word)
    with pytest.raises(ValueError, match="2-D"):
        npmi_coherence(topic_word[0], X, top_n=3)


# ---------------------------------------------------------- topic diversity


def test_topic_diversity_all_distinct():
    assert topic_diversity(np.eye(6)[:3] + np.eye(6)[3:], top_n=2) == 1.0
    assert topic_diversity(np.eye(5), top_n=1) == 1.0


def test_topic_diversity_with_duplicates():
    identical = np.tile([0.5, 0.3, 0.1, 0.1], (4, 1))
    assert topic_diversity(identical, top_n=2) == pytest.approx(2 / 8)
    overlap = np.array([[5, 4, 3, 0, 0], [0, 0, 3, 4, 5]])  # {0,1,2} and {4,3,2}
    assert topic_diversity(overlap, top_n=3) == pytest.approx(5 / 6)


def test_topic_diversity_ties_go_to_lower_column():
    tied = np.array([[1.0, 1.0, 1.0, 0.0], [0.0, 1.0, 1.0, 1.0]])  # {0,1} and {1,2}
    assert topic_diversity(tied, top_n=2) == pytest.approx(3 / 4)


def test_topic_diversity_default_top_n_is_25():
    rng = np.random.default_rng(0)
    topic_word = rng.random((3, 30))
    top = np.argsort(-topic_word, axis=1, kind="stable")[:, :25]
    assert topic_diversity(topic_word) == np.unique(top).size / 75


@pytest.mark.parametrize("top_n, match", [(0, "top_n"), (1.5, "top_n"), (7, "exceeds")])
def test_topic_diversity_rejects_bad_top_n(top_n, match):
    with pytest.raises(ValueError, match=match):
        topic_diversity(np.eye(6), top_n=top_n)
