"""What the pictures of a ProdLDA show: the numbers that rank its words, and pyLDAvis
distributions that separate its topics."""

import matplotlib
import numpy as np
import pytest
import torch
from scipy.spatial.distance import jensenshannon

from sktopics import LDAGibbs, ProdLDA, top_words
from sktopics.datasets import make_lda_corpus
from sktopics.inspection import TopicWordsDisplay, to_pyldavis

from ._instances import TEST_DEVICE

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def data():
    X, topic_word, _ = make_lda_corpus(
        n_samples=400, n_features=80, n_components=4, doc_topic_prior=0.1,
        topic_word_prior=0.05, doc_length=60, random_state=0,
    )
    return X, topic_word


@pytest.fixture(scope="module")
def prodlda(data):
    X, _ = data
    return ProdLDA(4, max_iter=30, batch_size=50, hidden_sizes=(32, 32), device=TEST_DEVICE,
                   random_state=0).fit(X)


def _mean_js(topic_word):
    k = len(topic_word)
    return np.mean([jensenshannon(topic_word[i], topic_word[j]) ** 2
                    for i in range(k) for j in range(i + 1, k)])


def test_prodlda_bars_are_the_logits_that_rank_the_words(prodlda):
    import matplotlib.pyplot as plt

    display = TopicWordsDisplay.from_estimator(prodlda, top_n=5)
    words, _ = top_words(prodlda, 5, return_weights=True)
    assert display.words == words  # the ranking of components_, unchanged
    beta = prodlda.beta_
    for k, panel in enumerate(display.ax_):
        bars = sorted(panel.patches, key=lambda b: -b.get_y())  # the top bar first
        widths = np.array([b.get_width() for b in bars])
        np.testing.assert_allclose(widths, beta[k, words[k]] - beta[k].mean())
        assert np.all(np.diff(widths) <= 0)
        assert "logit" in panel.get_xlabel()
    plt.close("all")


def test_other_models_keep_probabilities_on_a_labelled_axis(data):
    import matplotlib.pyplot as plt

    X, _ = data
    lda = LDAGibbs(4, max_iter=20, device="cpu", random_state=0).fit(X)
    display = TopicWordsDisplay.from_estimator(lda, top_n=4)
    _, weights = top_words(lda, 4, return_weights=True)
    np.testing.assert_allclose(display.weights, weights)
    assert display.ax_[0].get_xlabel() == "probability in topic"
    plt.close("all")


def test_pyldavis_rows_are_the_words_of_a_single_topic_document(prodlda, data):
    X, _ = data
    exported = to_pyldavis(prodlda, X)["topic_term_dists"]
    np.testing.assert_allclose(exported.sum(1), 1.0)
    module = prodlda.net_.module_.eval()  # the decoder, frozen batch norm, at theta = e_k
    device = next(module.parameters()).device
    with torch.no_grad():
        expected = module.decoder(torch.eye(4, device=device)).exp().double().cpu().numpy()
    np.testing.assert_allclose(exported, expected, rtol=1e-4, atol=1e-9)


def test_pyldavis_distributions_separate_the_topics(prodlda, data):
    # The map pyLDAvis draws places topics by the Jensen-Shannon divergences of
    # their distributions: near-uniform rows would put them all at one point.
    X, true_topics = data
    exported = to_pyldavis(prodlda, X)["topic_term_dists"]
    assert _mean_js(exported) > 0.3 * _mean_js(true_topics)
    assert _mean_js(prodlda.components_) < 0.05 * _mean_js(true_topics)
    # each exported topic is closest to a different true topic
    distance = np.array([[jensenshannon(e, t) for t in true_topics] for e in exported])
    assert len(set(distance.argmin(1))) == 4
