"""sktopics.inspection: displays, the topic report and the pyLDAvis export."""

import builtins

import matplotlib
import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sktopics import LDAGibbs, top_words
from sktopics.inspection import TopicWordsDisplay, to_pyldavis, topic_report
from sktopics.metrics import npmi_coherence

matplotlib.use("Agg")

WORDS = ["apple", "banana", "cherry", "grape", "melon", "peach", "plum", "lime"]
TEXTS = [" ".join(WORDS[(i + j) % 4 + 4 * (i % 2)] for j in range(12)) for i in range(40)]


@pytest.fixture(scope="module")
def pipe():
    return make_pipeline(CountVectorizer(), LDAGibbs(2, max_iter=30, device="cpu",
                                                     random_state=0)).fit(TEXTS)


def test_topic_words_display_draws_the_top_words_and_their_weights(pipe):
    import matplotlib.pyplot as plt

    display = TopicWordsDisplay.from_estimator(pipe, top_n=3)
    words, weights = top_words(pipe, 3, return_weights=True)
    assert display.words == words and display.figure_ is not None and len(display.ax_) == 2
    for k, panel in enumerate(display.ax_):
        bars = sorted(panel.patches, key=lambda b: -b.get_y())  # the top bar first
        np.testing.assert_allclose([b.get_width() for b in bars], weights[k])
        ticks = zip(panel.get_yticks(), [t.get_text() for t in panel.get_yticklabels()])
        assert [label for _, label in sorted(ticks, reverse=True)] == words[k]  # top first
    fig, axes = plt.subplots(1, 1)
    one = TopicWordsDisplay.from_estimator(pipe, topics=[1], top_n=2, ax=[axes])
    assert one.figure_ is fig and one.ax_[0].get_title() == "topic 1"
    with pytest.raises(ValueError, match="Axes"):
        TopicWordsDisplay.from_estimator(pipe, ax=[axes])
    plt.close("all")


def test_a_missing_matplotlib_is_a_clear_error(pipe, monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("no matplotlib")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=r"sktopics\[plot\]"):
        TopicWordsDisplay.from_estimator(pipe)


def test_topic_report_is_a_dataframe_indexed_by_topic_with_its_values(pipe):
    pd = pytest.importorskip("pandas")
    report = topic_report(pipe, TEXTS, top_n=4, X_ref=TEXTS)
    assert isinstance(report, pd.DataFrame)
    assert report.index.name == "topic" and list(report.index) == [0, 1]
    assert list(report.columns) == ["top_words", "weights", "distinct", "prevalence", "npmi"]
    words, weights = top_words(pipe, 4, return_weights=True)
    assert list(report["top_words"]) == words
    np.testing.assert_allclose(np.vstack(report["weights"]), weights)
    assert report["prevalence"].sum() == pytest.approx(1.0)
    counts = pipe[0].transform(TEXTS)
    expected = npmi_coherence(pipe[-1], counts, top_n=4).per_topic
    np.testing.assert_allclose(report["npmi"], expected)
    assert report["distinct"].between(0, 1).all()


def test_topic_report_has_one_type_whatever_the_columns(pipe):
    pd = pytest.importorskip("pandas")
    bare = topic_report(pipe, top_n=3)
    assert isinstance(bare, pd.DataFrame) and bare.index.name == "topic"
    assert list(bare.columns) == ["top_words", "weights", "distinct"]


def test_topic_report_without_pandas_is_a_clear_error(pipe, monkeypatch):
    real_import = builtins.__import__

    def no_pandas(name, *args, **kwargs):
        if name.split(".")[0] == "pandas":
            raise ImportError("no pandas")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pandas)
    with pytest.raises(ImportError, match=r"sktopics\[report\]"):
        topic_report(pipe, TEXTS)


def test_to_pyldavis_follows_its_contract(pipe):
    kwargs = to_pyldavis(pipe, TEXTS)
    counts = pipe[0].transform(TEXTS)
    assert set(kwargs) == {"topic_term_dists", "doc_topic_dists", "doc_lengths", "vocab",
                           "term_frequency"}
    np.testing.assert_allclose(kwargs["topic_term_dists"].sum(1), 1.0)
    np.testing.assert_allclose(kwargs["doc_topic_dists"].sum(1), 1.0)
    np.testing.assert_array_equal(kwargs["doc_lengths"], np.asarray(counts.sum(1)).ravel())
    np.testing.assert_array_equal(kwargs["term_frequency"], np.asarray(counts.sum(0)).ravel())
    assert kwargs["vocab"] == list(pipe[0].get_feature_names_out())
    model_only = to_pyldavis(pipe[-1], sp.csr_matrix(counts))
    assert model_only["vocab"] == [str(i) for i in range(counts.shape[1])]


def test_pyldavis_accepts_the_export(pipe):
    pyLDAvis = pytest.importorskip("pyLDAvis")
    prepared = pyLDAvis.prepare(**to_pyldavis(pipe, TEXTS), sort_topics=False, n_jobs=1)
    assert len(prepared.topic_coordinates) == 2


def test_pam_hierarchy_display_draws_every_node_and_the_strongest_edges():
    import matplotlib.pyplot as plt

    from sktopics import PAMVI, MoLDA, ProdLDA
    from sktopics.datasets import make_pam_corpus
    from sktopics.inspection import PAMHierarchyDisplay

    X, _, _ = make_pam_corpus(n_samples=60, n_features=25, structure=(2, 6), random_state=0)
    fast = dict(max_iter=2, batch_size=20, hidden_sizes=(8,), device="cpu", random_state=0)
    for model in (PAMVI((2, 6), **fast).fit(X), MoLDA(component_sizes=(2, 4), **fast).fit(X)):
        n_super, n_sub = model.level_weights_[1].shape
        display = PAMHierarchyDisplay.from_estimator(model, top_n=3, max_edges=2)
        texts = [t.get_text() for t in display.ax_.texts]
        assert sum(t.split(":")[0] in {str(k) for k in range(n_sub)} for t in texts) >= n_sub
        assert "root" in texts
        # root edges, then at most 2 per super-topic plus each sub-topic's strongest
        assert n_super + n_sub <= len(display.ax_.lines) <= n_super + 2 * n_super + n_sub
        assert all(len(label.split(": ")[1].split()) == 3 for label in display.sub_labels)
        assert any(t.startswith("x") for t in texts)  # strength against uniform
    with pytest.raises(ValueError, match="two-level PAM"):
        PAMHierarchyDisplay.from_estimator(ProdLDA(n_components=3, **fast).fit(X))
    plt.close("all")


def test_pam_hierarchy_edges_and_labels_when_edges_are_weak():
    from sktopics.inspection._pam import _distinctive, _drawn_edges

    # Near-uniform weights: no edge above 1 / n_sub for sub-topics 2 and 3, yet each
    # sub-topic keeps its strongest edge.
    weights = np.array([[0.26, 0.26, 0.24, 0.24], [0.24, 0.24, 0.26, 0.26]])
    assert _drawn_edges(weights, 0.25, 1) == [(0, 0), (0, 1), (1, 2), (1, 3)]
    assert _drawn_edges(weights, 0.3, 1) == [(0, 0), (0, 1), (1, 2), (1, 3)]
    # Two super-topics share their most frequent word (0); each is labelled by its own.
    super_word = np.array([[0.5, 0.3, 0.1, 0.1], [0.5, 0.1, 0.3, 0.1]])
    scores = _distinctive(super_word, [0.5, 0.5])
    assert list(np.argmax(scores, axis=1)) == [1, 2]


def test_pam_hierarchy_edge_labels_never_overlap():
    import matplotlib.pyplot as plt

    from sktopics.inspection import PAMHierarchyDisplay

    # every super-topic leads to every sub-topic: four edges meet at each sub-topic
    rng = np.random.default_rng(0)
    weights = rng.dirichlet(np.ones(12), 4)
    labels = [f"{k}: word{k} other{k} more{k}" for k in range(12)]
    display = PAMHierarchyDisplay([0.25] * 4, weights, [f"{s}: s" for s in range(4)],
                                  labels, min_weight=0.0, max_edges=12).plot()
    assert set(display.edge_labels_) == {(s, k) for s in range(4) for k in range(12)}
    for (s, k), text in display.edge_labels_.items():
        lift = weights[s, k] * 12
        assert text.get_text() == (f"x{lift:.1f}" if lift < 9.95 else f"x{lift:.0f}")
    display.figure_.canvas.draw()
    renderer = display.figure_.canvas.get_renderer()
    boxes = [t.get_window_extent(renderer) for t in display.edge_labels_.values()]
    boxes += [t.get_window_extent(renderer) for t in display.ax_.texts
              if t.get_text() in labels]
    assert len(boxes) == 4 * 12 + 12
    overlapping = [(i, j) for i in range(len(boxes)) for j in range(i)
                   if boxes[i].overlaps(boxes[j])]
    assert overlapping == []
    plt.close("all")


def _text_boxes(display, labels, boxed=()):
    """Window extents of the edges' labels, of the texts ``labels`` and of the boxes
    around the texts ``boxed``."""
    display.figure_.canvas.draw()
    renderer = display.figure_.canvas.get_renderer()
    texts = list(display.edge_labels_.values())
    texts += [t for t in display.ax_.texts if t.get_text() in labels]
    return ([t.get_window_extent(renderer) for t in texts]
            + [t.get_bbox_patch().get_window_extent(renderer) for t in display.ax_.texts
               if t.get_text() in boxed])


def test_pam_hierarchy_labels_at_most_four_edges_per_sub_topic():
    import matplotlib.pyplot as plt

    from sktopics.inspection import PAMHierarchyDisplay
    from sktopics.inspection._pam import MAX_EDGE_LABELS

    # 10 super-topics, each leading to all 30 sub-topics almost uniformly: 10 edges
    # meet at every sub-topic, and super-topic 9 leads to none most
    n_super, n_sub = 10, 30
    rng = np.random.default_rng(0)
    weights = 1.0 + 0.05 * rng.random((n_super, n_sub))
    weights /= weights.sum(1, keepdims=True)
    assert not np.any(np.argmax(weights, axis=0) == 9)
    labels = [f"{k}: word{k} other{k} more{k} last{k}" for k in range(n_sub)]
    supers = [f"{s}: a{s} b{s} c{s}" for s in range(n_super)]
    for figsize in (None, (7, 4)):  # its own figure; a small Axes of the caller's
        ax = None if figsize is None else plt.subplots(figsize=figsize)[1]
        display = PAMHierarchyDisplay(np.full(n_super, 0.1), weights, supers, labels,
                                      min_weight=0.0, max_edges=n_sub).plot(ax=ax)
        # every edge is drawn, the strongest four of each sub-topic labelled
        assert len(display.ax_.lines) == n_super + n_super * n_sub
        strongest = {(int(s), k) for k in range(n_sub)
                     for s in np.argsort(-weights[:, k], kind="stable")[:MAX_EDGE_LABELS]}
        assert set(display.edge_labels_) == strongest
        (caption,) = [t for t in display.ax_.texts if t.get_text().startswith("edges")]
        assert "4 strongest edges;\nweaker ones are not labelled" in caption.get_text()
        # and the super-topics' boxes (9, beside none, was drawn over 8)
        boxes = _text_boxes(display, labels, supers)
        assert len(boxes) == MAX_EDGE_LABELS * n_sub + n_sub + n_super
        figure = display.figure_.bbox
        outside = [b for b in boxes + [caption.get_window_extent()]
                   if b.x0 < figure.x0 or b.x1 > figure.x1
                   or b.y0 < figure.y0 or b.y1 > figure.y1]
        assert outside == [], figsize
        overlapping = [(i, j) for i in range(len(boxes)) for j in range(i)
                       if boxes[i].overlaps(boxes[j])]
        assert overlapping == [], figsize
    plt.close("all")


def test_training_curves_are_per_token_with_a_held_out_curve():
    import matplotlib.pyplot as plt

    from sktopics import ProdLDA
    from sktopics.datasets import make_lda_corpus
    from sktopics.inspection import TrainingCurveDisplay
    from sktopics.model_selection import iteration_ais

    X, _, _ = make_lda_corpus(n_samples=60, n_features=30, n_components=3, random_state=0)
    gibbs = LDAGibbs(3, max_iter=20, evaluate_every=5, snapshot_interval=10, device="cpu",
                     random_state=0).fit(X)
    held_out = iteration_ais(gibbs, X[:10], n_chains=2, n_start_temperatures=10,
                             n_segment_temperatures=3, random_state=0)
    display = TrainingCurveDisplay.from_estimator(gibbs, held_out=held_out)
    x, y = display.curves["training: log p(w, z) per token"]
    np.testing.assert_allclose(y, gibbs.log_likelihood_trace_ / X.sum())
    assert gibbs.n_train_tokens_ == X.sum() and len(display.ax_.lines) >= 2
    np.testing.assert_allclose(display.held_out[1], [r.per_token for r in held_out])
    with pytest.raises(ValueError, match="held_out_at"):
        TrainingCurveDisplay.from_estimator(gibbs, held_out=held_out[:1])
    neural = ProdLDA(n_components=3, max_iter=4, batch_size=20, hidden_sizes=(8,),
                     validation_fraction=0.2, device="cpu", random_state=0).fit(X)
    curves = TrainingCurveDisplay.from_estimator(neural).curves
    # Each loss is divided by the mean length of the documents it was measured on: the
    # 48 training and the 12 validation documents, which together make up X.
    train_length = neural.history_[-1, "train_tokens_per_document"]
    valid_length = neural.history_[-1, "valid_tokens_per_document"]
    assert 48 * train_length + 12 * valid_length == pytest.approx(X.sum())
    np.testing.assert_allclose(curves["training: ELBO per token"][1],
                               -np.asarray(neural.history_[:, "train_loss"]) / train_length)
    np.testing.assert_allclose(curves["validation: ELBO per token"][1],
                               -np.asarray(neural.history_[:, "valid_loss"]) / valid_length)
    plt.close("all")


def test_the_training_curve_marks_where_prior_learning_starts():
    import matplotlib.pyplot as plt

    from sktopics.datasets import make_lda_corpus
    from sktopics.inspection import TrainingCurveDisplay

    X, _, _ = make_lda_corpus(n_samples=40, n_features=20, n_components=2, random_state=0)

    def vertical_lines(display):
        return [line for line in display.ax_.lines
                if len(set(np.asarray(line.get_xdata(), dtype=float))) == 1
                and len(line.get_xdata()) == 2]

    learned = LDAGibbs(2, max_iter=30, burn_in=12, optimize_interval=5, evaluate_every=5,
                       device="cpu", random_state=0).fit(X)
    display = TrainingCurveDisplay.from_estimator(learned)
    (line,) = vertical_lines(display)
    assert list(line.get_xdata()) == [12, 12]
    assert "burn_in = 12: prior learning starts, then every 5 sweeps" in line.get_label()
    assert line.get_label() in [t.get_text() for t in display.ax_.get_legend().get_texts()]
    # no line without prior learning, nor when the chain stopped before burn_in
    for model in (LDAGibbs(2, max_iter=30, burn_in=12, optimize_interval=None,
                           evaluate_every=5, device="cpu", random_state=0),
                  LDAGibbs(2, max_iter=10, burn_in=12, optimize_interval=5,
                           evaluate_every=5, device="cpu", random_state=0)):
        shown = TrainingCurveDisplay.from_estimator(model.fit(X))
        assert shown.burn_in is None and vertical_lines(shown) == []
    plt.close("all")


def test_evaluation_displays():
    import matplotlib.pyplot as plt

    from sktopics.inspection import AISConvergenceDisplay, ComparisonDisplay
    from sktopics.model_selection import (
        ModelComparison,
        left_to_right_log_likelihood,
    )

    from .test_model_selection_exact import dp_log_likelihood, words_of

    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.ones(12), 3)
    model = (phi, 0.5)
    X = rng.poisson(1.0, (15, 12))
    # The exact per-token log-likelihood, by dynamic programming over topic counts.
    exact = sum(dp_log_likelihood(phi, np.full(3, 0.5), words_of(x)) for x in X) / X.sum()
    reference = left_to_right_log_likelihood(model, X, n_particles=50, random_state=0)
    display = AISConvergenceDisplay.from_estimator(model, X, temperatures=[1, 300],
                                                   n_chains=8, reference=reference)
    assert display.reference == pytest.approx(reference.per_token)
    # AIS approaches the exact value from below as temperatures are added. Over 30
    # seeds: at one temperature it is 0.06 to 0.24 nats per token low; at 300 within
    # 0.007 of it (sd 0.003); left-to-right with 50 particles within 0.003.
    assert display.estimates[0] < exact - 0.03
    assert display.estimates[1] == pytest.approx(exact, abs=0.015)
    assert reference.per_token == pytest.approx(exact, abs=0.01)
    np.testing.assert_allclose(display.ax_.lines[0].get_ydata(), display.estimates)
    n = np.array([10.0, 20.0, 40.0])
    cmp = ModelComparison(per_document=np.array([2.0, -1.0, 4.0]), per_document_stderr=np.ones(3),
                          n_tokens=n, method="ratio-ais", forward=np.array([1.5, -1.5, 3.5]),
                          reverse=np.array([2.5, -0.5, 4.5]))
    shown = ComparisonDisplay.from_comparison(cmp)
    points = np.vstack([c.get_offsets() for c in shown.ax_.collections if c.get_offsets().size])
    points = points[points[:, 0].argsort()]
    np.testing.assert_allclose(points[-3:], np.c_[n, cmp.per_document / n])  # the documents
    assert "A better (2)" in [t.get_text() for t in shown.ax_.get_legend().get_texts()]
    plt.close("all")
