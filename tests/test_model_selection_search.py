"""Scorers in a search: right or loud (budget checks, refit_best), importance sampling,
the criteria scorer and its display.

Outcomes are certain by construction: scores handed in directly, budgets whose bias is
far from the tolerance on either side (measured margins in the comments), or exact
answers by enumeration and quadrature.
"""

import warnings

import matplotlib
import numpy as np
import pytest
import torch
from sklearn.base import BaseEstimator
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sktopics import LDAGibbs, ProdLDA
from sktopics.inspection import CriteriaDisplay
from sktopics.metrics import topic_diversity
from sktopics.model_selection import (
    RankingWarning,
    check_ranking,
    generative_view,
    importance_sampling_log_likelihood,
    make_ais_scorer,
    make_coherence_scorer,
    make_criteria_scorer,
    make_diversity_scorer,
    make_importance_sampling_scorer,
    make_left_to_right_scorer,
    refit_best,
)
from sktopics.model_selection._scorers import AUTO_START, _HeldOutScorer

from ._instances import TEST_DEVICE
from .test_model_selection_api import corpus, prodlda_exact, texts
from .test_model_selection_exact import (
    ALPHA,
    DOC,
    PHI,
    assert_unbiased_in_probability,
    exact_log_likelihood,
    repeated,
    words_of,
)

matplotlib.use("Agg")


# --------------------------------------------------------------------------- the AIS budget


def test_the_ais_scorer_warns_once_when_its_budget_is_biased():
    # from 1 to 2 temperatures the score rises by 0.13-0.29 nats per token (8 seeds),
    # from 100 to 200 by less than 0.005 on this corpus
    X = corpus(40, seed=2)
    model = (np.random.default_rng(0).dirichlet(np.ones(X.shape[1]), 3), 0.5)
    scorer = make_ais_scorer(n_temperatures=2)
    with pytest.warns(RankingWarning, match="bias_tolerance=0.01.*make_left_to_right_scorer"):
        scorer(model, X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        scorer(model, X)  # said once per scorer
        make_ais_scorer(n_temperatures=200, n_chains=8)(model, X)
        make_ais_scorer(n_temperatures=2, bias_tolerance=None)(model, X)


class _Result:
    def __init__(self, per_token):
        self.per_token, self.per_token_stderr = per_token, 0.0


def test_auto_temperatures_double_until_the_rise_is_below_the_tolerance():
    # a score that rises as -1/S: from S/2 to S it rises by exactly 1/S
    budgets = []

    def run(n_temperatures, **kw):
        budgets.append(n_temperatures)
        return _Result(-1.0 / n_temperatures)

    scorer = _HeldOutScorer(run, {"n_temperatures": "auto"}, "ais", "n_temperatures",
                            return_stderr=True, bias_tolerance=1 / 300, max_budget=10**6)
    got = scorer._score(lambda **kw: run(**kw))
    assert budgets == [AUTO_START // 2, AUTO_START, 2 * AUTO_START, 4 * AUTO_START,
                       8 * AUTO_START]
    assert got["bias"] == pytest.approx(1 / 400) and got["score"] == pytest.approx(-1 / 400)
    budgets.clear()
    capped = _HeldOutScorer(run, {"n_temperatures": "auto"}, "ais", "n_temperatures",
                            bias_tolerance=1e-9, max_budget=4 * AUTO_START)
    with pytest.warns(RankingWarning, match="cap"):
        capped._score(lambda **kw: run(**kw))
    assert max(budgets) == 4 * AUTO_START


def test_auto_temperatures_in_a_real_scorer():
    X = corpus(30, seed=4)
    model = (np.random.default_rng(1).dirichlet(np.ones(X.shape[1]), 2), 0.5)
    got = make_ais_scorer(n_temperatures="auto", max_temperatures=100, bias_tolerance=0.5,
                          return_stderr=True)(model, X)
    assert got["bias"] <= 0.5 and np.isfinite(got["score"])
    with pytest.raises(ValueError, match="bias_tolerance"):
        make_ais_scorer(n_temperatures="auto", bias_tolerance=None)
    assert "max_temperatures=100" in repr(make_ais_scorer(n_temperatures="auto",
                                                          max_temperatures=100))


# --------------------------------------------------------------------------- refit_best


class Fixed(BaseEstimator):
    """An 'estimator' whose score is its parameter, with a given Monte Carlo error."""

    def __init__(self, level=0.0, noise=0.0):
        self.level = level
        self.noise = noise

    def fit(self, X, y=None):
        return self


def _fixed_scorer(est, X, y=None):
    return {"score": est.level, "stderr": est.noise, "bias": 0.0}


def test_refit_best_picks_the_best_and_says_when_it_cannot_tell():
    X = np.zeros((12, 2))
    settled = GridSearchCV(Fixed(noise=0.001), {"level": [-7.2, -7.0, -7.1]}, cv=3,
                           scoring=_fixed_scorer, refit=refit_best)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        settled.fit(X)
    assert settled.best_index_ == 1 and settled.best_estimator_.level == -7.0
    close = GridSearchCV(Fixed(noise=0.1), {"level": [-7.2, -7.0, -7.1]}, cv=3,
                         scoring=_fixed_scorer, refit=refit_best)
    with pytest.warns(RankingWarning, match="Monte Carlo"):
        close.fit(X)
    assert close.best_index_ == 1


def test_check_ranking_falls_back_to_the_folds():
    cv = {"params": [{"k": 5}, {"k": 10}], "mean_test_score": np.array([-7.10, -7.00]),
          "split0_test_score": np.array([-7.10, -7.00]),
          "split1_test_score": np.array([-7.00, -7.05])}
    cv["mean_test_score"] = (cv["split0_test_score"] + cv["split1_test_score"]) / 2
    with pytest.warns(RankingWarning, match="cross-validation"):
        report = check_ranking(cv)
    assert report["error_kind"] == "cross-validation" and not report["settled"]
    steady = {"params": [{"k": 5}, {"k": 10}], "mean_test_score": np.array([-7.1, -7.0]),
              "split0_test_score": np.array([-7.10, -7.00]),
              "split1_test_score": np.array([-7.11, -7.01]),
              "split2_test_score": np.array([-7.09, -7.00])}
    assert check_ranking(steady)["settled"] and refit_best(steady) == 1


# --------------------------------------------------------------------------- importance sampling


def test_importance_sampling_is_unbiased_in_probability_from_the_prior():
    res = importance_sampling_log_likelihood((PHI, ALPHA), repeated(n=3000), n_samples=1,
                                             random_state=0)
    assert res.method == "importance-sampling" and res.settings["proposal"] == "prior"
    assert_unbiased_in_probability(res.per_document, exact_log_likelihood(PHI, ALPHA,
                                                                          words_of(DOC)))


@pytest.fixture(scope="module")
def prodlda():
    with torch.random.fork_rng():
        torch.set_num_threads(1)
        return ProdLDA(n_components=2, max_iter=5, batch_size=20, hidden_sizes=(16, 16),
                       device=TEST_DEVICE, random_state=0).fit(corpus(60))


def test_importance_sampling_from_the_encoder_matches_quadrature(prodlda):
    X = corpus(6, seed=3)
    exact = prodlda_exact(generative_view(prodlda), X)
    res = importance_sampling_log_likelihood(prodlda, X, n_samples=2000, random_state=0)
    assert res.settings["proposal"] == "0.5 encoder + 0.5 prior"
    err = np.abs(res.per_document - exact)
    assert np.all(err < np.maximum(0.02, 6 * res.per_document_stderr)), err
    one = importance_sampling_log_likelihood(prodlda, np.tile(X[:1], (2000, 1)), n_samples=1,
                                             random_state=1)
    assert_unbiased_in_probability(one.per_document, exact[0])


def test_importance_sampling_scorer_in_a_pipeline_search():
    pipe = make_pipeline(CountVectorizer(), ProdLDA(max_iter=2, batch_size=8,
                                                    hidden_sizes=(8, 8), device=TEST_DEVICE,
                                                    random_state=0))
    search = GridSearchCV(pipe, {"prodlda__n_components": [2, 3]}, cv=2, refit=refit_best,
                          scoring=make_importance_sampling_scorer(n_samples=16,
                                                                  return_stderr=True))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RankingWarning)
        search.fit(texts(40))
    for name in ("score", "stderr", "bias"):
        assert np.all(np.isfinite(search.cv_results_[f"mean_test_{name}"]))


# --------------------------------------------------------------------------- criteria


def test_the_criteria_scorer_merges_its_scorers():
    X = corpus(40)
    model = LDAGibbs(2, max_iter=20, device=TEST_DEVICE, random_state=0).fit(X)
    got = make_criteria_scorer(make_left_to_right_scorer(n_particles=5, return_stderr=True),
                               coherence=make_coherence_scorer(top_n=3),
                               diversity=make_diversity_scorer(top_n=3))(model, X)
    assert set(got) == {"score", "stderr", "bias", "coherence", "diversity"}
    assert got["diversity"] == topic_diversity(model, top_n=3)
    plain = make_criteria_scorer(make_left_to_right_scorer(n_particles=5))(model, X)
    assert set(plain) == {"score"}
    with pytest.raises(ValueError, match="likelihood's metrics"):
        make_criteria_scorer(make_left_to_right_scorer(), bias=make_diversity_scorer())
    with pytest.raises(TypeError, match="not a scorer"):
        make_criteria_scorer(coherence=3)


def _cv_results():
    ks = np.array([20, 5, 10])  # not sorted: the display sorts
    score = np.array([-7.0, -7.3, -7.1])
    coherence = np.array([0.05, 0.12, 0.08])
    out = {"params": [{"ldagibbs__n_components": int(k), "ldagibbs__max_iter": 50} for k in ks],
           "mean_test_score": score, "mean_test_bias": np.array([0.02, 0.0, 0.01]),
           "mean_test_coherence": coherence, "mean_test_stderr": np.full(3, 0.01)}
    for f, shift in enumerate((-0.01, 0.01)):
        out[f"split{f}_test_score"] = score + shift
        out[f"split{f}_test_stderr"] = np.full(3, 0.01)
        out[f"split{f}_test_coherence"] = coherence + shift
    return out


def test_the_criteria_display_draws_each_metric_with_its_errors():
    import matplotlib.pyplot as plt

    display = CriteriaDisplay.from_cv_results(_cv_results())
    assert display.best_ == {"score": 20, "coherence": 5}
    assert len(display.ax_) == 2 and display.figure_ is not None
    np.testing.assert_array_equal(display.values, [5, 10, 20])
    # the likelihood's error is Monte Carlo: sqrt(2 x 0.01^2) / 2 per candidate
    np.testing.assert_allclose(display.errors["score"], np.full(3, np.sqrt(2) * 0.01 / 2))
    np.testing.assert_allclose(display.errors["coherence"], np.full(3, np.sqrt(2) * 0.01 / np.sqrt(2)))
    np.testing.assert_allclose(display.biases["score"], [0.0, 0.01, 0.02])
    assert "n_components" in display.ax_[-1].get_xlabel()
    fig, axes = plt.subplots(1, 1)
    one = CriteriaDisplay.from_cv_results(_cv_results(), param="n_components",
                                          metrics=["coherence"], ax=[axes])
    assert one.figure_ is fig
    with pytest.raises(ValueError, match="Axes"):
        CriteriaDisplay.from_cv_results(_cv_results(), ax=[axes])
    with pytest.raises(ValueError, match="matches"):
        CriteriaDisplay.from_cv_results(_cv_results(), param="alpha")
    varying = _cv_results()
    varying["params"][0]["ldagibbs__max_iter"] = 10
    with pytest.raises(ValueError, match="vary"):
        CriteriaDisplay.from_cv_results(varying)
    with pytest.raises(TypeError, match="cv_results_"):
        CriteriaDisplay.from_estimator(LDAGibbs())
    plt.close("all")
