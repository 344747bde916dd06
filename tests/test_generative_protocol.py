"""Every estimator's generative view follows the public protocol the evaluators rely on.

``sktopics.model_selection.GenerativeModel``: a view has ``n_features``, ``prior``,
``likelihood``, ``proposal`` and ``token_mixture`` / ``path_mixture`` (with and
without the Dirichlet approximation); views without a mixture have what the
continuous engine needs. Each part is checked against an independent computation
(numpy, torch.distributions), and every evaluator runs on the view.
"""

import numpy as np
import pytest
import torch

from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA
from sktopics._evaluation._default_score import default_score
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import (
    GenerativeModel,
    PathMixture,
    TokenMixture,
    ais_log_likelihood,
    generative_view,
    left_to_right_log_likelihood,
)

X, _, _ = make_lda_corpus(n_samples=40, n_features=25, n_components=3, random_state=0)
NEURAL = dict(max_iter=2, batch_size=10, hidden_sizes=(8,), device="cpu", random_state=0)
MODELS = {
    "LDAGibbs": lambda: LDAGibbs(3, max_iter=10, device="cpu", random_state=0).fit(X),
    "AVITM": lambda: AVITM(n_components=3, **NEURAL).fit(X),
    "ProdLDA": lambda: ProdLDA(n_components=3, **NEURAL).fit(X),
    "PAMVI": lambda: PAMVI(structure=(2, 3), **NEURAL).fit(X),
    "MoLDA": lambda: MoLDA(component_sizes=(2, 3), **NEURAL).fit(X),
    "(topic_word, alpha)": lambda: (np.random.default_rng(0).dirichlet(np.ones(25), 3),
                                    np.array([0.5, 1.0, 2.0])),
}
#: what each view offers: (token mixture exact, token mixture approximated, path mixture)
EXPECTED = {
    "LDAGibbs": (True, True, False), "AVITM": (False, True, False),
    "ProdLDA": (False, False, False), "PAMVI": (False, False, True),
    "MoLDA": (False, False, True), "(topic_word, alpha)": (True, True, False),
}


@pytest.fixture(scope="module", params=list(MODELS))
def model(request):
    return request.param, MODELS[request.param]()


def _check_topics(topic_word):
    assert topic_word.shape[1] == X.shape[1] and np.all(topic_word >= 0)
    np.testing.assert_allclose(topic_word.sum(1), 1.0, rtol=1e-6)


def test_view_follows_the_protocol(model):
    name, est = model
    view = generative_view(est)
    assert isinstance(view, GenerativeModel)
    assert view.n_features == X.shape[1]
    exact, approx = view.token_mixture(approximate=False), view.token_mixture(approximate=True)
    paths = view.path_mixture(approximate=True)
    assert (exact is not None, approx is not None, paths is not None) == EXPECTED[name]
    assert view.path_mixture(approximate=False) is None or name == "(topic_word, alpha)"
    for mix in (exact, approx):
        if mix is not None:
            assert isinstance(mix, TokenMixture)
            _check_topics(mix.topic_word)
            assert mix.doc_topic_prior.shape == (mix.topic_word.shape[0],)
            assert np.all(mix.doc_topic_prior > 0)
    if paths is not None:
        assert isinstance(paths, PathMixture)
        _check_topics(paths.topic_word)
        n_super, n_sub = paths.subtopic_prior.shape
        assert paths.root_prior.shape == (n_super,) and np.all(paths.root_prior > 0)
        assert n_sub == paths.topic_word.shape[0] and np.all(paths.subtopic_prior >= 0)
        assert np.all((paths.subtopic_prior > 0).any(1))


def test_mixture_likelihood_is_the_mixture(model):
    # likelihood.log_prob(x, theta) = sum_w x_w log (theta @ topic_word)_w, by numpy
    name, est = model
    view = generative_view(est)
    mix = view.token_mixture()
    if mix is None:
        pytest.skip("not a token mixture")
    theta = np.random.default_rng(1).dirichlet(mix.doc_topic_prior, 5)
    x = X[:5].toarray() if hasattr(X, "toarray") else np.asarray(X[:5])
    expected = (x * np.log(theta @ mix.topic_word)).sum(1)
    got = view.likelihood.log_prob(torch.as_tensor(x, dtype=torch.float64),
                                   torch.as_tensor(theta)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-8)


def test_continuous_capabilities(model):
    # what the continuous engine needs, wherever the view has a Gaussian prior on h
    name, est = model
    view = generative_view(est)
    if not hasattr(view.prior, "gaussian"):
        assert view.token_mixture(approximate=False) is not None  # LDA: z-space only
        return
    mean, var = view.prior.gaussian("cpu", torch.float64)
    assert mean.shape == var.shape and mean.ndim == 1 and bool((var > 0).all())
    h = mean + torch.randn(4, mean.shape[0], dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    normal = torch.distributions.Normal(mean, var.sqrt())
    torch.testing.assert_close(view.prior.log_prob_h(h), normal.log_prob(h).sum(-1))
    to_theta = getattr(view.prior, "to_theta", None)
    theta = (torch.softmax(h, -1) if to_theta is None else to_theta(h)).requires_grad_(True)
    x = torch.as_tensor(np.asarray(X[:4].todense()), dtype=torch.float64)
    value = view.likelihood.log_prob(x, theta)
    assert value.shape == (4,) and bool(torch.isfinite(value).all())
    (grad,) = torch.autograd.grad(value.sum(), theta)
    assert bool(torch.isfinite(grad).all())
    if view.proposal is not None:
        loc, scale = view.proposal(x)
        assert loc.shape == scale.shape == (4, mean.shape[0]) and bool((scale > 0).all())


def test_every_evaluator_runs_on_the_view(model):
    name, est = model
    view = generative_view(est)
    res = ais_log_likelihood(view, X[:6], n_temperatures=3, n_chains=2, random_state=0)
    assert np.all(np.isfinite(res.per_document)) and np.all(res.per_document < 0)
    if view.token_mixture(approximate=False) is not None:
        assert res.settings["prior"] == "dirichlet"
    if view.token_mixture() is not None or view.path_mixture() is not None:
        l2r = left_to_right_log_likelihood(view, X[:6], n_particles=4, random_state=0)
        assert np.all(np.isfinite(l2r.per_document))
    assert np.isfinite(default_score(view, X[:6]))


def test_dirichlet_approximation_is_an_explicit_choice():
    # AVITM: under the Dirichlet its prior approximates (z-space), or as trained (HMC)
    est = MODELS["AVITM"]()
    approx = ais_log_likelihood(est, X[:6], n_temperatures=3, n_chains=2, random_state=0)
    trained = ais_log_likelihood(est, X[:6], n_temperatures=3, n_chains=2, random_state=0,
                                 dirichlet_approximation=False)
    assert approx.method == "ais-z" and "approximated" in approx.settings["prior"]
    assert trained.method == "ais-hmc" and trained.settings["prior"] == "as trained"
    with pytest.raises(ValueError, match="dirichlet_approximation"):
        left_to_right_log_likelihood(est, X[:6], dirichlet_approximation=False)
