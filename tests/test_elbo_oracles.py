"""The topic VAEs' ELBO terms against independent computations.

* ``gaussian_kl`` against ``torch.distributions.kl_divergence``;
* a fitted PAMVI's per-node KL against ``torch.distributions`` over its unmasked edges
  only, and against a Monte Carlo estimate of ``E_q[log q(h) - log p(h)]`` with the
  generative view's prior density (an independent implementation of the prior);
* MoLDA recovers the topics of a corpus drawn from a mixture of LDAs.
"""

import numpy as np
import pytest
import torch
from scipy.optimize import linear_sum_assignment
from torch.distributions import Normal, kl_divergence

from sktopics import PAMVI, MoLDA
from sktopics._neural._losses import gaussian_kl
from sktopics.datasets import make_pam_corpus
from sktopics.model_selection import generative_view
from sktopics.pam import PAMStructure

from ._instances import TEST_DEVICE


def test_gaussian_kl_matches_torch_distributions():
    g = torch.Generator().manual_seed(0)
    mu, logvar = torch.randn(7, 5, generator=g), torch.randn(7, 5, generator=g)
    mean, var = torch.randn(5, generator=g), torch.rand(5, generator=g) + 0.1
    expected = kl_divergence(Normal(mu, torch.exp(0.5 * logvar)), Normal(mean, var.sqrt())).sum(-1)
    torch.testing.assert_close(gaussian_kl(mu, logvar, mean, var), expected)


@pytest.fixture(scope="module")
def pam():
    X, _, _ = make_pam_corpus(n_samples=60, n_features=30, structure=(2, 3), random_state=0)
    structure = {"levels": (2, 3), "masks": [None, np.array([[1, 1, 0], [0, 1, 1]], bool)]}
    model = PAMVI(structure, max_iter=3, batch_size=20, hidden_sizes=(16,), device="cpu",
                  random_state=0).fit(X)
    return model, X


def _posterior(model, X):
    module = model.net_.module_.eval()
    x = torch.as_tensor(X[:4].toarray(), dtype=torch.float32)
    with torch.no_grad():
        _, mus, logvars = module(x)
    return module, mus, logvars


def test_pam_kl_counts_only_the_edges_and_matches_torch_distributions(pam):
    model, X = pam
    module, mus, logvars = _posterior(model, X)
    with torch.no_grad():
        got = module.kl(mus, logvars)
    expected = 0.0
    for mu, logvar, mask, (mean, var) in zip(mus, logvars, module.masks(), module.priors()):
        q = Normal(mu[:, mask], torch.exp(0.5 * logvar[:, mask]))
        expected = expected + kl_divergence(q, Normal(mean[mask], var[mask].sqrt())).sum(-1)
    torch.testing.assert_close(got, expected)


def test_pam_kl_matches_a_monte_carlo_estimate_with_the_views_prior(pam):
    model, X = pam
    module, mus, logvars = _posterior(model, X)
    view = generative_view(model)
    # q over the flat latent, edge by edge in the view's layout (row-major per level)
    loc = torch.cat([mu[:, mask] for mu, mask in zip(mus, module.masks())], 1).double()
    scale = torch.cat([torch.exp(0.5 * lv[:, mask]) for lv, mask in zip(logvars, module.masks())],
                      1).double()
    g = torch.Generator().manual_seed(1)
    n = 200_000
    h = loc + scale * torch.randn((n,) + loc.shape, generator=g, dtype=torch.float64)
    log_ratio = Normal(loc, scale).log_prob(h).sum(-1) - view.prior.log_prob_h(h)
    estimate, se = log_ratio.mean(0), log_ratio.std(0) / np.sqrt(n)
    with torch.no_grad():
        analytic = module.kl(mus, logvars).double()
    assert torch.all((estimate - analytic).abs() < 5 * se + 1e-6), (estimate, analytic, se)
    assert PAMStructure.from_spec(model.structure).n_edges == loc.shape[1]


def test_molda_recovers_the_topics_of_a_mixture_of_ldas():
    # two LDA components of 3 topics each over 30 words, documents mostly in one
    # component: the learned topics match the generating ones after Hungarian matching
    structure = PAMStructure.mixture((3, 3))
    X, phi, _ = make_pam_corpus(n_samples=400, n_features=30, structure=structure,
                                doc_topic_prior=0.3, subtopic_prior=0.3,
                                topic_word_prior=0.1, doc_length=100, random_state=2)
    fits = [MoLDA((3, 3), max_iter=40, batch_size=40, hidden_sizes=(32, 32),
                  learning_rate=1e-2, device=TEST_DEVICE, random_state=seed).fit(X)
            for seed in range(3)]
    model = min(fits, key=lambda m: np.mean(m.history_[-5:, "train_loss"]))
    tv = 0.5 * np.abs(model.components_[:, None, :] - phi[None]).sum(-1)
    rows, cols = linear_sum_assignment(tv)
    off = tv[~np.eye(len(phi), dtype=bool)].mean()
    assert tv[rows, cols].mean() < 0.5 * off, (tv[rows, cols], off)
    # and it is not what any topics would score: random Dirichlet topics stay far
    random = np.random.default_rng(0).dirichlet(np.ones(30) * 0.1, len(phi))
    tv_random = 0.5 * np.abs(random[:, None, :] - phi[None]).sum(-1)
    assert tv[rows, cols].mean() < 0.5 * tv_random[linear_sum_assignment(tv_random)].mean()
