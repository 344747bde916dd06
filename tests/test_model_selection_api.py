"""model_selection: continuous AIS (ProdLDA), scorers, sklearn integration, API."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, TransformerMixin
from sklearn.exceptions import ConvergenceWarning
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.utils._param_validation import InvalidParameterError

from sktopics import ProdLDA
from sktopics._evaluation._default_score import default_score
from sktopics._generative import DirichletPrior, GenerativeView, MixtureLikelihood
from sktopics.metrics import npmi_coherence
from sktopics.model_selection import (
    HeldOutLikelihood,
    ModelComparison,
    ais_log_likelihood,
    generative_view,
    iteration_ais,
    left_to_right_log_likelihood,
    make_ais_scorer,
    make_coherence_scorer,
    make_left_to_right_scorer,
    make_ratio_ais_scorer,
    ratio_ais,
)

from ._instances import TEST_DEVICE


class StandInLDA(TransformerMixin, BaseEstimator):
    """A tiny deterministic 'LDA': topics from smoothed counts of a fixed split."""

    def __init__(self, n_components=2, alpha=0.5):
        self.n_components = n_components
        self.alpha = alpha

    def fit(self, X, y=None):
        X = sp.csr_matrix(X, dtype=np.float64)
        rng = np.random.default_rng(self.n_components)
        resp = rng.dirichlet(np.ones(self.n_components), X.shape[0])
        for _ in range(20):  # a few EM steps of a mixture of unigrams
            phi = (resp.T @ X.toarray()) + 0.1
            phi /= phi.sum(1, keepdims=True)
            log_r = X @ np.log(phi).T
            resp = np.exp(log_r - logsumexp(log_r, axis=1, keepdims=True))
        self.components_ = phi
        self.n_features_in_ = X.shape[1]
        return self

    def transform(self, X):
        return np.asarray(sp.csr_matrix(X) @ self.components_.T)

    def _generative_view(self):
        return GenerativeView(
            prior=DirichletPrior(np.full(self.n_components, self.alpha)),
            likelihood=MixtureLikelihood(self.components_),
            n_features=self.components_.shape[1],
        )


def corpus(n_docs=60, seed=0):
    rng = np.random.default_rng(seed)
    phi = np.array([[0.3, 0.3, 0.2, 0.1, 0.05, 0.05], [0.05, 0.05, 0.1, 0.2, 0.3, 0.3]])
    theta = rng.dirichlet([0.3, 0.3], n_docs)
    X = np.stack([rng.multinomial(rng.integers(3, 9), t @ phi) for t in theta])
    return X.astype(float)


def texts(n_docs=40, seed=0):
    X = corpus(n_docs, seed).astype(int)
    words = np.array(["apple", "banana", "cherry", "delta", "echo", "foxtrot"])
    return [" ".join(np.repeat(words, x)) or "apple" for x in X]


# --------------------------------------------------------------------------- ProdLDA


@pytest.fixture(scope="module")
def prodlda():
    with torch.random.fork_rng():
        torch.set_num_threads(1)
        X = corpus(60)
        return ProdLDA(n_components=2, max_iter=5, batch_size=20, hidden_sizes=(16, 16),
                       device=TEST_DEVICE, random_state=0).fit(X)


def prodlda_exact(view, X):
    """K = 2: theta depends on d = h1 - h2 ~ N(mu1 - mu2, var1 + var2); 1-D quadrature."""
    mu, var = view.prior.mean, view.prior.var
    m, s = mu[0] - mu[1], np.sqrt(var[0] + var[1])
    d = np.linspace(m - 12 * s, m + 12 * s, 20001)
    theta = torch.softmax(torch.tensor(np.stack([d, np.zeros_like(d)], 1)), -1)
    log_prior = -0.5 * ((d - m) / s) ** 2 - np.log(s * np.sqrt(2 * np.pi))
    out = []
    for x in X:
        ll = view.likelihood.log_prob(torch.tensor(x)[None], theta).numpy()
        out.append(logsumexp(ll + log_prior) + np.log(d[1] - d[0]))
    return np.array(out)


@pytest.mark.parametrize("start", ["prior", "proposal"])
def test_prodlda_continuous_ais_matches_quadrature(prodlda, start):
    X = corpus(6, seed=3)
    exact = prodlda_exact(generative_view(prodlda), X)
    res = ais_log_likelihood(prodlda, X, n_temperatures=60, n_chains=60, random_state=0,
                             start=start)
    assert res.method == "ais-hmc"
    err = np.abs(res.per_document - exact)
    assert np.all(err < np.maximum(0.05, 6 * res.per_document_stderr)), (err, res.per_document_stderr)


N_SYNONYMS = 10


def split_topics(phi, n_synonyms=N_SYNONYMS):
    """Topics over a vocabulary where each word is ``n_synonyms`` synonyms (columns
    ``w * n_synonyms + r``), each with the word's probability over ``n_synonyms``."""
    return np.repeat(np.asarray(phi, dtype=np.float64), n_synonyms, axis=1) / n_synonyms


def synonym_copies(doc, n_docs, n_synonyms=N_SYNONYMS, seed=0):
    """``n_docs`` distinct documents with the law of ``doc`` under :func:`split_topics`.

    Each writes every token of ``doc`` as one of its word's synonyms. A synonym's
    probability is its word's over ``n_synonyms`` in every topic, so the posterior of
    the topics and every estimator's draws are the document's, and log-likelihoods are
    shifted by ``-n_tokens * log(n_synonyms)``. Copies of one row would share their
    random numbers (they are keyed by a document's counts); these get their own.
    """
    rng = np.random.default_rng(seed)
    words = np.repeat(np.arange(len(doc)), doc)
    seen, rows = set(), []
    while len(rows) < n_docs:
        row = np.bincount(words * n_synonyms + rng.integers(0, n_synonyms, words.size),
                          minlength=len(doc) * n_synonyms)
        if row.tobytes() not in seen:
            seen.add(row.tobytes())
            rows.append(row)
    return np.array(rows, dtype=np.float64)


def distinct_documents(n_docs, seed):
    """``n_docs`` distinct documents of :func:`corpus`: independent estimates (a
    document's random numbers are keyed by its counts, so copies would share them)."""
    X = np.unique(corpus(5 * n_docs, seed), axis=0)
    assert X.shape[0] >= n_docs
    return np.random.default_rng(seed).permutation(X)[:n_docs]


@pytest.mark.parametrize("target_acceptance", [None, 0.65])
def test_prodlda_continuous_ais_unbiased_in_probability(prodlda, target_acceptance):
    X = distinct_documents(1200, seed=5)
    exact = prodlda_exact(generative_view(prodlda), X)
    res = ais_log_likelihood(prodlda, X, n_temperatures=3, n_chains=1,
                             schedule="linear", start="prior", random_state=1,
                             target_acceptance=target_acceptance)
    # independent, each of mean 1 (not identically distributed)
    ratio = np.exp(res.per_document - exact)
    assert abs(ratio.mean() - 1) < 4.5 * ratio.std(ddof=1) / np.sqrt(ratio.size)


def test_prodlda_hmc_step_tuned_in_a_pilot_run(prodlda):
    X = corpus(6, seed=3)
    exact = prodlda_exact(generative_view(prodlda), X)
    kw = dict(n_temperatures=60, n_chains=60, random_state=0, start="prior", step_size=4.0)
    fixed = ais_log_likelihood(prodlda, X, **kw)
    tuned = ais_log_likelihood(prodlda, X, target_acceptance=0.65, **kw)
    assert fixed.settings["acceptance_rate"] < 0.05  # a far too large step
    assert 0.5 < tuned.settings["acceptance_rate"] < 0.85
    assert tuned.settings["step_multipliers"][2] < 1  # shrunk for every document
    err = np.abs(tuned.per_document - exact)
    assert np.all(err < np.maximum(0.05, 6 * tuned.per_document_stderr)), err
    assert tuned.n_token_updates > fixed.n_token_updates  # the pilot is paid for


@pytest.mark.parametrize("random_state", [0, np.random.RandomState(5), None])
def test_prodlda_ratio_falls_back_to_paired_with_common_random_numbers(prodlda, random_state):
    # The fallback warns, and its two AIS runs share one seed (the point of
    # pairing) and this call's schedule and kernel, whatever random_state is
    X = corpus(4, seed=6)
    lda = StandInLDA(2).fit(corpus(60))
    with pytest.warns(UserWarning, match="paired standard AIS"):
        res = ratio_ais(lda, prodlda, X, n_temperatures=5, n_chains=2, kernel="blocked",
                        random_state=random_state)
    assert res.method == "paired-ais" and "paired" in res.settings["note"]
    seed = res.settings["random_state"]
    assert isinstance(seed, int)
    kw = dict(n_temperatures=5, n_chains=2, schedule="linear", random_state=seed)
    a = ais_log_likelihood(lda, X, kernel="blocked", **kw)
    b = ais_log_likelihood(prodlda, X, **kw)
    assert res.settings["kernel"] == ("blocked", "hmc")
    # Equal up to the last bit, which CUDA's float atomics may change from run to run
    # (another seed would move the estimates by about 1e-2).
    np.testing.assert_allclose(res.per_document, a.per_document - b.per_document,
                               rtol=1e-12, atol=1e-12)


# --------------------------------------------------------------------------- default_score


def test_default_score_is_cheap_and_deterministic(prodlda, monkeypatch):
    # cheap by construction: 32 particles in one filter, or 64 importance samples
    import sktopics._evaluation._default_score as ds

    budgets = []
    smc, importance = ds.smc_log_likelihood, ds.importance_sampling
    monkeypatch.setattr(ds, "smc_log_likelihood", lambda *a, **kw: (
        budgets.append(("smc", kw["n_particles"] * kw["n_filters"])) or smc(*a, **kw)))
    monkeypatch.setattr(ds, "importance_sampling", lambda view, X, n, *a: (
        budgets.append(("is", n)) or importance(view, X, n, *a)))
    rng = np.random.default_rng(0)
    for n_words in (3, 10):
        X = sp.csr_matrix(np.abs(rng.normal(3, 1, (20, n_words))).round())
        view = generative_view((rng.dirichlet(np.ones(n_words), 3), np.full(3, 0.5)))
        s1 = default_score(view, X)
        assert np.isfinite(s1) and s1 == default_score(view, X)
    X = sp.csr_matrix(np.abs(rng.normal(3, 1, (20, 6))))  # fractional counts
    view = generative_view(prodlda)
    s = default_score(view, X)
    assert np.isfinite(s) and s == default_score(view, X)
    assert set(budgets) == {("smc", 32), ("is", 64)}
    with pytest.raises(ValueError):
        default_score(view, sp.csr_matrix((2, 6)))


def test_default_score_close_to_long_ais():
    X = corpus(10, seed=2)
    lda = StandInLDA(2).fit(corpus(60))
    long = ais_log_likelihood(lda, X, n_temperatures=300, n_chains=20, random_state=0)
    assert default_score(lda._generative_view(), sp.csr_matrix(X)) == pytest.approx(long.per_token, abs=0.02)


# --------------------------------------------------------------------------- views, validation


def test_generative_view_accessor():
    lda = StandInLDA(2).fit(corpus(30))
    pipe = make_pipeline(CountVectorizer(), StandInLDA(2)).fit(texts())
    assert isinstance(generative_view(lda), GenerativeView)
    assert isinstance(generative_view(pipe), GenerativeView)
    view = generative_view(lda)
    assert generative_view(view) is view
    assert generative_view((np.ones((2, 3)), 0.5)).token_mixture()[0].shape == (2, 3)
    with pytest.raises(TypeError):
        generative_view(object())


@pytest.mark.parametrize(
    "call",
    [
        lambda X: ais_log_likelihood((np.ones((2, 6)) / 6, [1, 1]), X, n_temperatures=0),
        lambda X: ais_log_likelihood((np.ones((2, 6)) / 6, [1, 1]), X, schedule="bogus"),
        lambda X: left_to_right_log_likelihood((np.ones((2, 6)) / 6, [1, 1]), X, n_particles=0),
        lambda X: ratio_ais((np.ones((2, 6)) / 6, [1, 1]), (np.ones((2, 6)) / 6, [1, 1]), X, path="x"),
        lambda X: iteration_ais([(np.ones((2, 6)) / 6, [1, 1])], X, n_chains=0),
        lambda X: make_ais_scorer(n_chains=0),
    ],
)
def test_validate_params(call):
    with pytest.raises(InvalidParameterError):
        call(corpus(3))


def test_wrong_vocabulary_and_bad_counts():
    with pytest.raises(ValueError, match="features"):
        ais_log_likelihood((np.ones((2, 5)) / 5, [1, 1]), corpus(3))
    with pytest.raises(ValueError):
        ais_log_likelihood((np.ones((2, 6)) / 6, [1, 1]), -corpus(3))
    with pytest.warns(UserWarning, match="rounded"):
        ais_log_likelihood((np.ones((2, 6)) / 6, [1, 1]), corpus(3) + 0.3, n_temperatures=2,
                           n_chains=1, random_state=0)


def test_ratio_ais_both_warns_when_the_directions_disagree_on_the_sign():
    # Documents of word 0 only, so that no draw is left to chance on any machine. Under
    # B every token's topic is 0 and under A it is 1: the other topic gives word 0 a
    # probability of 1e-12, and the uniforms (32-bit) never come within 1e-10 of 1.
    # The forward run, started from B's posterior, then only sees
    # log phi_A[0, 0] - log phi_B[0, 0] < 0 and the reverse run, from A's, only
    # -(log phi_B[1, 0] - log phi_A[1, 0]) > 0: opposite signs, whatever the seed.
    X = sp.csr_matrix(np.column_stack([np.arange(1, 9), np.zeros(8)]))
    tiny = 1e-12
    phi_a = np.array([[tiny, 1 - tiny], [0.5, 0.5]])
    phi_b = np.array([[0.5, 0.5], [tiny, 1 - tiny]])
    kw = dict(direction="both", n_chains=2, align_topics=False, random_state=0)
    with pytest.warns(ConvergenceWarning, match="disagree on which model is better"):
        short = ratio_ais((phi_a, [0.3, 0.3]), (phi_b, [0.3, 0.3]), X, n_temperatures=1, **kw)
    assert short.forward.sum() < 0 < short.reverse.sum()
    # Word 0 is likelier under A whatever its topic: every increment of either
    # direction has the sign of log p(A) - log p(B), so the two runs agree.
    phi_a = np.array([[0.6, 0.4], [0.3, 0.7]])
    phi_b = np.array([[0.5, 0.5], [0.2, 0.8]])
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        settled = ratio_ais((phi_a, [0.3, 0.3]), (phi_b, [0.3, 0.3]), X, n_temperatures=5, **kw)
        swapped = ratio_ais((phi_b, [0.3, 0.3]), (phi_a, [0.3, 0.3]), X, n_temperatures=5, **kw)
    assert settled.forward.sum() > 0 and settled.reverse.sum() > 0
    assert swapped.forward.sum() < 0 and swapped.reverse.sum() < 0


def test_results_objects():
    X = corpus(5)
    res = ais_log_likelihood((np.ones((2, 6)) / 6, [1, 1]), X, n_temperatures=3, n_chains=2,
                             random_state=0)
    assert isinstance(res, HeldOutLikelihood)
    # uniform topics: p(w) = 6^-N exactly, whatever z
    np.testing.assert_allclose(res.per_document, -X.sum(1) * np.log(6))
    assert res.perplexity() == pytest.approx(6.0)
    assert res.stderr == pytest.approx(0.0, abs=1e-12)
    assert "HeldOutLikelihood" in repr(res)
    # same phi, different alpha: p(w) is the same (6^-N), the estimate is stochastic
    cmp = ratio_ais((np.ones((2, 6)) / 6, [1, 1]), (np.ones((2, 6)) / 6, [2, 2]), X,
                    direction="both", n_temperatures=3, n_chains=2, random_state=0)
    assert isinstance(cmp, ModelComparison)
    # Over 200 seeds (29 tokens, 3 temperatures): the corpus ratio's s.d. is 0.0045 and
    # its largest deviation 0.026; a document's largest deviation was 0.056
    assert cmp.corpus_perplexity_ratio == pytest.approx(1.0, abs=0.03)
    assert np.allclose(cmp.perplexity_ratio(), 1.0, atol=0.1)
    same = ratio_ais((np.ones((2, 6)) / 6, [1, 1]), (np.ones((2, 6)) / 6, [1, 1]), X,
                     n_temperatures=3, n_chains=2, random_state=0)
    assert same.corpus_perplexity_ratio == 1.0
    assert 0 <= cmp.sign_test_pvalue <= 1
    assert np.isfinite(cmp.paired_stderr)
    for result in (res, cmp):
        assert result.per_token_stderr == result.stderr / X.sum()


def test_align_topics_takes_models_pipelines_and_arrays(prodlda):
    from sktopics.model_selection import align_topics

    flipped = prodlda.components_[::-1]
    np.testing.assert_array_equal(align_topics(prodlda, flipped), [1, 0])
    np.testing.assert_array_equal(align_topics(flipped, prodlda), [1, 0])
    pipe_a = make_pipeline(CountVectorizer(), StandInLDA(2)).fit(texts())
    pipe_b = make_pipeline(CountVectorizer(), StandInLDA(2)).fit(texts(seed=1))
    np.testing.assert_array_equal(align_topics(pipe_a, pipe_b),
                                  align_topics(pipe_a[-1].components_, pipe_b[-1]))
    # rows are normalised: scaled counts give the permutation of their distributions
    np.testing.assert_array_equal(align_topics(3 * prodlda.components_, flipped), [1, 0])
    with pytest.raises(ValueError, match="same numbers of topics"):
        align_topics(prodlda, np.ones((3, prodlda.components_.shape[1])))
    with pytest.raises(ValueError, match="estimator_b must be non-negative"):
        align_topics(prodlda, -prodlda.components_)


def test_the_preamble_unwraps_checks_and_keys():
    from sktopics._evaluation._progress import Progress
    from sktopics.model_selection._preamble import prepare

    docs = texts(10)
    pipe = make_pipeline(CountVectorizer(), StandInLDA(2)).fit(docs)
    run = prepare("f", pipe, docs, device="cpu", dirichlet_approximation=True, random_state=3)
    assert run.model.kind == "topics" and run.model.prior == "dirichlet"
    assert sp.isspmatrix_csr(run.X) and run.X.dtype == np.float64
    np.testing.assert_array_equal(run.lengths, np.asarray(pipe[0].transform(docs).sum(1)).ravel())
    assert run.device == torch.device("cpu")
    again = prepare("f", pipe, docs, device="cpu", dirichlet_approximation=True, random_state=3)
    assert run.root == again.root
    with pytest.raises(ValueError, match="f expects 6"):
        prepare("f", pipe[-1], np.ones((2, 5)), device="cpu", dirichlet_approximation=True,
                random_state=0)
    # the progress line: the last line on success only
    with Progress("f", 1, 1.0, verbose=1) as progress:
        pass
    closed = []
    progress.close = lambda: closed.append(True)
    with pytest.raises(RuntimeError), progress:
        raise RuntimeError
    assert not closed


# --------------------------------------------------------------------------- scorers


def test_scorers_unwrap_pipelines_and_are_deterministic():
    docs = texts(40)
    pipe = make_pipeline(CountVectorizer(), StandInLDA(2)).fit(docs)
    ref = make_pipeline(CountVectorizer(), StandInLDA(3)).fit(docs)
    for scorer in (make_ais_scorer(n_temperatures=10, n_chains=2),
                   make_left_to_right_scorer(n_particles=5),
                   make_ratio_ais_scorer(ref, n_temperatures=5, n_chains=2),
                   make_coherence_scorer(top_n=3)):
        s1, s2 = scorer(pipe, docs[:10]), scorer(pipe, docs[:10])
        assert np.isfinite(s1) and s1 == s2, scorer
        assert re.match(r"make_\w+_scorer\(", repr(scorer)), repr(scorer)
    # the ratio scorer of a model against itself is ~0
    same = make_ratio_ais_scorer(pipe, n_temperatures=5, n_chains=2)
    assert abs(same(pipe, docs[:10])) < 1e-9


@pytest.mark.parametrize("n_jobs", [1, pytest.param(2, marks=pytest.mark.slow)])
def test_grid_search_over_n_components_with_ais_and_multimetric_refit(n_jobs):
    X = corpus(60)
    grid = GridSearchCV(
        StandInLDA(),
        {"n_components": [1, 2, 3]},
        # K = 2 beats K = 1 by about 0.03 nats per token; at this budget AIS's spread
        # over seeds is 0.005 per fold (at 20 temperatures and 2 chains: up to 0.015)
        scoring={"ll": make_ais_scorer(n_temperatures=100, n_chains=4, bias_tolerance=None),
                 "npmi": make_coherence_scorer(top_n=3)},
        refit="ll",
        cv=2,
        n_jobs=n_jobs,
    ).fit(X)
    scores = grid.cv_results_["mean_test_ll"]
    assert np.all(np.isfinite(scores))
    assert grid.best_params_["n_components"] >= 2  # two true topics beat one
    assert scores[1] > scores[0]


def test_cross_validate_pipeline_with_prodlda_ais_scorer():
    docs = texts(40)
    pipe = make_pipeline(CountVectorizer(), ProdLDA(n_components=2, max_iter=3, batch_size=20,
                                                     hidden_sizes=(8, 8), device=TEST_DEVICE,
                                                     random_state=0))
    out = cross_validate(pipe, docs, cv=2, return_estimator=True, return_indices=True,
                         scoring={"ll": make_ais_scorer(n_temperatures=5, n_chains=2,
                                                        bias_tolerance=None),
                                  "npmi": make_coherence_scorer(top_n=3)})
    # Each fold's scores are the evaluators' on that fold's model and held-out documents.
    for fold, fitted in enumerate(out["estimator"]):
        held_out = [docs[i] for i in out["indices"]["test"][fold]]
        counts = fitted[:-1].transform(held_out)
        ll = ais_log_likelihood(fitted[-1], counts, n_temperatures=5, n_chains=2,
                                random_state=0)
        assert out["test_ll"][fold] == pytest.approx(ll.per_token, rel=1e-9)
        npmi = npmi_coherence(fitted[-1], counts, top_n=3)
        assert out["test_npmi"][fold] == pytest.approx(npmi.mean, rel=1e-9)
        assert -1 <= out["test_npmi"][fold] <= 1 and out["test_ll"][fold] < 0


# --------------------------------------------------------------------------- devices, layering


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_matches_cpu_statistically():
    phi = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.05, 0.05, 0.3, 0.6]])
    alpha = np.array([0.3, 0.6, 0.9])
    # 2000 documents with the law of one (2, 1, 1, 1), each with its own random numbers
    X, phi = synonym_copies([2, 1, 1, 1], 2000), split_topics(phi)
    kw = dict(n_temperatures=4, n_chains=1, schedule="linear", random_state=0)
    cpu = ais_log_likelihood((phi, alpha), X, device="cpu", **kw).per_document
    gpu = ais_log_likelihood((phi, alpha), X, device="cuda", kernel="collapsed", **kw).per_document
    a, b = np.exp(cpu - cpu.max()), np.exp(gpu - cpu.max())
    se = np.sqrt(a.var() / a.size + b.var() / b.size)
    assert abs(a.mean() - b.mean()) < 4.5 * se


def test_pam_views_use_the_path_engine():
    from sktopics import PAMVI

    X = corpus(40)
    est = PAMVI(structure=(2, 3), hidden_sizes=(8, 8), max_iter=2, batch_size=20, device=TEST_DEVICE,
                random_state=0).fit(X)
    res = ais_log_likelihood(est, X[:4], n_temperatures=5, n_chains=2, random_state=0)
    assert res.method == "ais-z-pam" and np.all(np.isfinite(res.per_document))
    assert np.isfinite(default_score(generative_view(est), sp.csr_matrix(X[:4])))


def test_left_to_right_scores_two_level_pams_and_explains_the_others(prodlda):
    from sktopics import PAMVI, MoLDA

    X = corpus(40)
    for est in (PAMVI(structure=(2, 3), hidden_sizes=(8, 8), max_iter=2, batch_size=20,
                      device=TEST_DEVICE, random_state=0),
                MoLDA(component_sizes=(2, 3), hidden_sizes=(8, 8), max_iter=2, batch_size=20,
                      device=TEST_DEVICE, random_state=0)):
        est.fit(X)
        lr = left_to_right_log_likelihood(est, X[:4], n_particles=200, random_state=0)
        ais = ais_log_likelihood(est, X[:4], n_temperatures=200, n_chains=20, random_state=0)
        # the same model (the Dirichlets the Laplace priors approximate), two estimators
        se = np.hypot(lr.per_document_stderr, ais.per_document_stderr)
        assert np.all(np.abs(lr.per_document - ais.per_document) < np.maximum(0.05, 6 * se))
        scorer = make_left_to_right_scorer(n_particles=10, random_state=0)
        assert np.isfinite(scorer(est, X[:4]))
    deep = PAMVI(structure=(2, 2, 3), hidden_sizes=(8, 8), max_iter=1, batch_size=20,
                 device=TEST_DEVICE, random_state=0).fit(X)
    for est, name in ((deep, "deeper than two levels"), (prodlda, "ProdLDA")):
        with pytest.raises(ValueError, match=name):
            left_to_right_log_likelihood(est, X[:2], n_particles=2)


def test_iteration_ais_accepts_an_estimator_with_snapshots():
    from sktopics import LDAGibbs

    X = corpus(60)
    est = LDAGibbs(2, max_iter=20, snapshot_interval=5, device=TEST_DEVICE, random_state=0).fit(X[:40])
    results = iteration_ais(est, X[40:], n_start_temperatures=20, n_segment_temperatures=5,
                            n_chains=2, random_state=0)
    assert len(results) == len(est.snapshots_)
    assert all(np.isfinite(r.per_token) for r in results)
    same = iteration_ais([s[1:] for s in est.snapshots_], X[40:], n_start_temperatures=20,
                         n_segment_temperatures=5, n_chains=2, random_state=0)
    # the (phi, alpha) pairs are renormalised: equal up to rounding
    np.testing.assert_allclose(results[-1].per_document, same[-1].per_document, rtol=1e-9)


def test_grid_search_with_ratio_ais_scorer_across_numbers_of_topics():
    X = corpus(60)
    reference = StandInLDA(2).fit(X)
    grid = GridSearchCV(StandInLDA(), {"n_components": [1, 2, 3]},
                        scoring=make_ratio_ais_scorer(reference, n_temperatures=10, n_chains=2),
                        cv=2).fit(X)
    scores = grid.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores))
    assert scores[1] > scores[0]  # two topics beat one, relative to the same reference


# --------------------------------------------------------------------------- scorers, checks, displays


def test_scorer_keywords_are_checked_when_the_scorer_is_made():
    with pytest.raises(TypeError, match="n_temperature"):
        make_ais_scorer(n_temperature=5)
    with pytest.raises(ValueError, match="kernel"):
        make_ais_scorer(kernel="fast")
    with pytest.raises(TypeError, match="rejuvenation"):
        make_left_to_right_scorer(rejuvenation=True)
    with pytest.raises(ValueError, match="path"):
        make_ratio_ais_scorer(None, path="straight")
    assert "schedule='linear'" in repr(make_ais_scorer(schedule="linear"))


def test_scores_with_their_errors_in_a_grid_search_and_a_ranking_check():
    from sklearn.model_selection import GridSearchCV

    from sktopics import LDAGibbs
    from sktopics.model_selection import check_ranking

    X = corpus(60)
    search = GridSearchCV(LDAGibbs(max_iter=20, device=TEST_DEVICE, random_state=0),
                          {"n_components": [2, 3]}, cv=2, refit="score",
                          scoring=make_left_to_right_scorer(n_particles=10, return_stderr=True))
    search.fit(X)
    for name in ("score", "stderr", "bias"):
        assert np.all(np.isfinite(search.cv_results_[f"mean_test_{name}"]))
    assert np.all(search.cv_results_["mean_test_stderr"] > 0)
    report = check_ranking(search.cv_results_)
    assert report["best"] == search.best_index_ and report["error"] > 0


def _cv_results(means, stderrs, biases=None):
    out = {"params": [{"k": i} for i in range(len(means))],
           "mean_test_score": np.array(means),
           "split0_test_stderr": np.array(stderrs) * np.sqrt(2),
           "split1_test_stderr": np.array(stderrs) * np.sqrt(2)}
    if biases is not None:
        out["mean_test_bias"] = np.array(biases)
    return out


def test_check_ranking_warns_when_the_errors_exceed_the_lead():
    from sktopics.model_selection import RankingWarning, check_ranking

    # the lead 0.01 against a combined error of 0.001: settled
    assert check_ranking(_cv_results([-7.0, -7.01, -7.2], [0.001, 0.001, 0.001]))["settled"]
    with pytest.warns(RankingWarning, match="cannot rank"):  # Monte Carlo error
        report = check_ranking(_cv_results([-7.0, -7.01], [0.01, 0.01]))
    assert not report["settled"] and report["best"] == 0
    with pytest.warns(RankingWarning, match="bias"):  # budget error: biases differ by 0.05
        report = check_ranking(_cv_results([-7.0, -7.01], [0.001, 0.001], [0.06, 0.01]))
    assert report["bias_gap"] == pytest.approx(0.05)
    with pytest.raises(KeyError, match="return_stderr"):
        check_ranking({"mean_test_score": np.zeros(2), "params": [{}, {}]})


def test_the_budget_check_sees_a_short_annealing():
    # the AIS score rises far more from 1 to 2 temperatures than from 50 to 100 (over
    # 8 seeds: 0.13-0.29 nats per token against 0-0.018, the Monte Carlo noise)
    from sktopics.model_selection import RankingWarning

    X = corpus(40, seed=2)
    model = (np.random.default_rng(0).dirichlet(np.ones(X.shape[1]), 3), 0.5)
    quiet = dict(return_stderr=True, bias_tolerance=None)  # the warning: test_model_selection_search
    short = make_ais_scorer(n_temperatures=2, **quiet)(model, X)
    long = make_ais_scorer(n_temperatures=100, **quiet)(model, X)
    assert short["bias"] > long["bias"] + 0.05 and long["bias"] >= 0
    assert short["score"] < long["score"]
    with pytest.warns(RankingWarning, match="cannot be checked"):
        one = make_ais_scorer(n_temperatures=1, return_stderr=True)(model, X)
    assert np.isnan(one["bias"]) and "bias_half" not in one


def test_model_comparison_reads_as_an_answer():
    n = np.full(4, 10.0)
    clear = ModelComparison(per_document=np.array([2.0, 1.0, 3.0, -1.0]),
                            per_document_stderr=np.full(4, 0.1), n_tokens=n, method="ratio-ais",
                            forward=np.array([1.9, 0.9, 2.9, -1.1]),
                            reverse=np.array([2.1, 1.1, 3.1, -0.9]))
    assert clear.verdict == "A"
    text = repr(clear)
    assert "A is better" in text and "3 of 4 documents" in text and "agree" in text
    bracket = clear.bracket()
    assert bracket.forward > bracket.reverse  # perplexity ratios: forward's is larger
    assert bracket.forward == pytest.approx(np.exp(-4.6 / 40))
    split = ModelComparison(per_document=np.array([0.1, -0.1]), per_document_stderr=np.ones(2),
                            n_tokens=n[:2], method="ratio-ais", forward=np.array([-1.0, -1.0]),
                            reverse=np.array([1.0, 1.0]))
    assert split.verdict == "undecided" and "disagree" in repr(split)
    noisy = ModelComparison(per_document=np.array([0.5, 0.5]), per_document_stderr=np.ones(2),
                            n_tokens=n[:2], method="paired-ais")
    assert noisy.verdict == "undecided" and noisy.bracket() is None


def test_verbose_prints_progress(capsys, monkeypatch):
    import sktopics._evaluation._progress as progress

    monkeypatch.setattr(progress.time, "perf_counter", iter(range(0, 10_000, 5)).__next__)
    X = corpus(30)
    model = (np.random.default_rng(0).dirichlet(np.ones(X.shape[1]), 3), 0.5)
    ais_log_likelihood(model, X, n_temperatures=4, n_chains=2, random_state=0, verbose=2)
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) >= 3 and all(line.startswith("[ais_log_likelihood]") for line in lines)
    assert "ETA" in lines[0] and "token-updates/s" in lines[0]
    assert lines[-1].endswith("done") and "30/30 documents" in lines[-1]
    left_to_right_log_likelihood(model, X, n_particles=3, random_state=0, verbose=1)
    assert "[left_to_right_log_likelihood] 100%" in capsys.readouterr().out
    ais_log_likelihood(model, X, n_temperatures=4, n_chains=2, random_state=0)
    assert capsys.readouterr().out == ""


def test_one_device_default_across_functions():
    import inspect

    from sktopics.model_selection import document_completion_log_likelihood

    for fn in (ais_log_likelihood, left_to_right_log_likelihood, ratio_ais, iteration_ais,
               document_completion_log_likelihood):
        assert inspect.signature(fn).parameters["device"].default == "auto", fn.__name__
