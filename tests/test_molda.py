"""MoLDA: a word-level mixture of LDAs trained by aviPAM's structured inference."""

import pickle

import numpy as np
import pytest
import torch
from sklearn.base import clone

from sktopics import MoLDA
from sktopics.datasets import make_lda_corpus

from ._instances import TEST_DEVICE

FAST = dict(max_iter=3, batch_size=16, hidden_sizes=(16,), device=TEST_DEVICE, random_state=0)



@pytest.fixture(scope="module")
def X():
    return make_lda_corpus(n_samples=60, n_features=25, n_components=4, random_state=0)[0]


def test_shapes_and_per_component_views(X):
    model = MoLDA(component_sizes=(2, 3), **FAST).fit(X)
    assert not hasattr(model, "predict")
    theta = model.transform(X)
    assert theta.shape == (60, 5) and model.n_components_ == 5
    np.testing.assert_allclose(theta.sum(1), 1, atol=1e-10)
    root = model.transform_root(X)
    assert root.shape == (60, 2)
    np.testing.assert_allclose(root.sum(1), 1, atol=1e-10)
    parts = model.transform_components(X)
    assert [p.shape for p in parts] == [(60, 2), (60, 3)]
    for m, (part, cols) in enumerate(zip(parts, model.component_slices_)):
        np.testing.assert_allclose(part.sum(1), 1, atol=1e-10)
        # The joint is theta_r[m] * theta_m[k].
        np.testing.assert_allclose(theta[:, cols], root[:, [m]] * part, atol=1e-10)
    per_model = model.components_per_model_
    assert [c.shape for c in per_model] == [(2, 25), (3, 25)]
    np.testing.assert_allclose(np.vstack(per_model), model.components_)
    for c in per_model:
        np.testing.assert_allclose(c.sum(1), 1)
    # Each component only reaches its own topics.
    weights = model.sub_topic_weights_
    assert np.all(weights[0, 2:] == 0) and np.all(weights[1, :2] == 0)
    assert {k for k, _ in model.get_sub_topics(1)} == {2, 3, 4}
    assert model.get_feature_names_out()[0] == "molda0"
    assert np.isfinite(model.score(X))


def test_components_have_their_own_decoder(X):
    model = MoLDA(component_sizes=(2, 3), **FAST).fit(X)
    decoder = model.net_.module_.decoder
    assert [part.beta.shape[0] for part in decoder.parts] == [2, 3]


def test_subtopic_prior_per_component(X):
    model = MoLDA(component_sizes=(2, 3), subtopic_prior=(0.5, [1.0, 2.0, 3.0]),
                  doc_topic_prior=[1.0, 2.0], **FAST).fit(X)
    np.testing.assert_allclose(model.level_priors_[1],
                               [[0.5, 0.5, 0, 0, 0], [0, 0, 1, 2, 3]])
    np.testing.assert_allclose(model.doc_topic_prior_, [1.0, 2.0])
    with pytest.raises(ValueError, match="one entry per component"):
        MoLDA(component_sizes=(2, 3), subtopic_prior=(0.5,), **FAST).fit(X)
    with pytest.raises(ValueError, match=r"subtopic_prior\[1\]"):
        MoLDA(component_sizes=(2, 3), subtopic_prior=(0.5, [1.0]), **FAST).fit(X)


@pytest.mark.parametrize("sizes", [(), (2, 0), (2, 1.5)])
def test_bad_component_sizes(X, sizes):
    with pytest.raises(ValueError, match="component_sizes"):
        MoLDA(component_sizes=sizes, **FAST).fit(X)


def test_elbo_decreases(X):
    model = MoLDA(component_sizes=(2, 3), **{**FAST, "max_iter": 15}).fit(X)
    losses = np.asarray(model.history_[:, "train_loss"])
    assert losses[-3:].mean() < losses[:3].mean()


def test_generative_view(X):
    model = MoLDA(component_sizes=(2, 3), **FAST).fit(X)
    view = model._generative_view()
    phi, alpha_root, alpha_sub = view.path_mixture()
    np.testing.assert_allclose(phi, model.components_)
    np.testing.assert_allclose(alpha_sub, [[1, 1, 0, 0, 0], [0, 0, 1, 1, 1]])
    h = view.prior.sample_h(3, generator=torch.Generator().manual_seed(0))
    theta = view.prior.to_theta(h)
    x = torch.as_tensor(X[:3].toarray(), dtype=torch.float64)
    got = view.likelihood.log_prob(x, theta)
    # Word level admixture: p_w = sum_m theta_r[m] (theta_m @ phi_m)_w.
    root = theta[:, :2].numpy()
    thetas = [theta[:, 2:4].numpy(), theta[:, 4:7].numpy()]
    p = sum(root[:, [m]] * (t @ c) for m, (t, c) in enumerate(zip(thetas, model.components_per_model_)))
    np.testing.assert_allclose(got.numpy(), (x.numpy() * np.log(p)).sum(1), rtol=1e-10)


def test_pickle_clone_reproducible(X):
    a = MoLDA(component_sizes=(2, 3), **FAST).fit(X)
    b = MoLDA(component_sizes=(2, 3), **FAST).fit(X)
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    restored = pickle.loads(pickle.dumps(a))
    for u, v in zip(restored.transform_components(X), a.transform_components(X)):
        np.testing.assert_array_equal(u, v)
    assert clone(a).get_params() == a.get_params()


def test_l2_norm(X):
    model = MoLDA(component_sizes=(2, 3), logvar_norm="l2", **FAST).fit(X)
    np.testing.assert_allclose(model.transform(X[:1]), model.transform(X)[:1], atol=1e-10)


def test_word_gain_per_component():
    X, _, _ = make_lda_corpus(n_samples=40, n_features=20, n_components=3, random_state=0)
    model = MoLDA(component_sizes=(2, 3), **FAST).fit(X)
    assert all(part.gain is not None for part in model.net_.module_.decoder.parts)
    plain = MoLDA(component_sizes=(2, 3), word_gain=False, **FAST).fit(X)
    assert all(part.gain is None for part in plain.net_.module_.decoder.parts)
