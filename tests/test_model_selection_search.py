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
from sklearn.exceptions import ConvergenceWarning
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
    make_ratio_ais_scorer,
    refit_best,
)
from sktopics.model_selection._scorers import AUTO_START, _HeldOutScorer
from sktopics.utils._cv_results import BUDGET_PARAMETERS

from ._instances import TEST_DEVICE
from .test_model_selection_api import corpus, distinct_documents, prodlda_exact, texts
from .test_model_selection_exact import (
    ALPHA,
    DOC,
    PHI,
    assert_unbiased_in_probability,
    exact_copy,
    exact_log_likelihood,
    repeated,
    split,
    words_of,
)

matplotlib.use("Agg")


# --------------------------------------------------------------------------- the AIS budget


def test_the_ais_scorer_warns_at_every_call_whose_budget_is_biased():
    # from 1 to 2 temperatures the score rises by 0.13-0.29 nats per token (8 seeds),
    # from 100 to 200 by about 0.01 (0.005-0.011 on different machines): a tolerance
    # of 0.05 is met with room to spare
    X = corpus(40, seed=2)
    model = (np.random.default_rng(0).dirichlet(np.ones(X.shape[1]), 3), 0.5)
    scorer = make_ais_scorer(n_temperatures=2)
    for _ in range(2):  # a scorer reused (a second search) is not silenced
        with pytest.warns(RankingWarning, match="bias_tolerance=0.01.*make_left_to_right_scorer"):
            scorer(model, X)
    with pytest.warns(RankingWarning, match="cannot be checked"):
        make_ais_scorer(n_temperatures=1)(model, X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        make_ais_scorer(n_temperatures=200, n_chains=8, bias_tolerance=0.05)(model, X)
        make_ais_scorer(n_temperatures=2, bias_tolerance=None)(model, X)
        make_ais_scorer(n_temperatures=1, bias_tolerance=None)(model, X)


def test_the_budget_warning_reaches_the_caller_of_a_parallel_search():
    # scoring in worker processes: their warnings do not reach this process, the
    # refit's check of the recorded biases does (1 -> 2 temperatures: rises of 0.1 and more
    # with the collapsed kernel, which "auto" takes on the CPU; on CUDA "auto" takes the
    # blocked kernel, whose rises differ, so the kernel is named)
    X = corpus(40, seed=2)
    scorer = make_ais_scorer(n_temperatures=2, n_chains=2, return_stderr=True,
                             kernel="collapsed")
    for _ in range(2):
        search = GridSearchCV(LDAGibbs(max_iter=5, device=TEST_DEVICE, random_state=0),
                              {"n_components": [2, 3]}, cv=2, scoring=scorer,
                              refit=refit_best, n_jobs=2)
        with pytest.warns(RankingWarning, match="budget checks of 2 of 2 candidates"):
            search.fit(X)
        np.testing.assert_array_equal(search.cv_results_["mean_test_bias_tolerance"], 0.01)
        np.testing.assert_array_equal(search.cv_results_["mean_test_budget"], 2)


def test_an_empty_fold_scores_nan_and_says_so():
    model = (np.random.default_rng(0).dirichlet(np.ones(6), 2), 0.5)
    empty = np.zeros((3, 6))
    for scorer in (make_left_to_right_scorer(n_particles=4),
                   make_ais_scorer(n_temperatures=4, n_chains=1)):
        with pytest.warns(UserWarning, match="no tokens"):
            assert np.isnan(scorer(model, empty))
    with pytest.warns(UserWarning, match="no tokens"):
        got = make_left_to_right_scorer(n_particles=4, return_stderr=True)(model, empty)
    assert np.isnan(got["score"]) and got["budget"] == 4


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
    assert budgets == [AUTO_START // 2, AUTO_START // 4, AUTO_START, 2 * AUTO_START,
                       4 * AUTO_START, 8 * AUTO_START]
    assert got["bias"] == pytest.approx(1 / 400) and got["score"] == pytest.approx(-1 / 400)
    # the rise one halving earlier, and the budget that was used
    assert got["bias_half"] == pytest.approx(1 / 200) and got["budget"] == 8 * AUTO_START
    budgets.clear()
    capped = _HeldOutScorer(run, {"n_temperatures": "auto"}, "ais", "n_temperatures",
                            bias_tolerance=1e-9, max_budget=4 * AUTO_START)
    with pytest.warns(RankingWarning, match="cap"):
        capped._score(lambda **kw: run(**kw))
    assert max(budgets) == 4 * AUTO_START


def test_auto_temperatures_in_a_real_scorer():
    X = corpus(30, seed=4)
    model = (np.random.default_rng(1).dirichlet(np.ones(X.shape[1]), 2), 0.5)
    tolerance, cap = 0.003, 4 * AUTO_START
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = make_ais_scorer(n_temperatures="auto", max_temperatures=cap,
                              bias_tolerance=tolerance, return_stderr=True)(model, X)
    capped = any("cap" in str(w.message) for w in caught)
    # stopped at the first budget whose check passed, or at the cap with a warning
    assert got["budget"] in (AUTO_START, 2 * AUTO_START, 4 * AUTO_START)
    assert (got["bias"] <= tolerance and not capped) or (got["budget"] == cap and capped)
    assert got["bias"] >= 0 and got["bias_half"] >= 0 and np.isfinite(got["score"])
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


def _checked(means, *, stderr=0.001, bias=None, half=None, tolerance=None, folds=None):
    """cv_results of two folds with the given means (or per-fold scores) and metrics."""
    folds = np.array([means, means]) if folds is None else np.asarray(folds)
    n = folds.shape[1]
    out = {"params": [{"k": i} for i in range(n)], "mean_test_score": folds.mean(0)}
    for f, row in enumerate(folds):
        out[f"split{f}_test_score"] = row
        out[f"split{f}_test_stderr"] = np.full(n, stderr)
    for name, value in (("bias", bias), ("bias_half", half), ("bias_tolerance", tolerance)):
        if value is not None:
            out[f"mean_test_{name}"] = np.broadcast_to(np.asarray(value, dtype=float), n)
    return out


def test_check_ranking_sees_estimates_that_converge_slowly():
    # the lead (0.1) is far beyond the Monte Carlo errors and the bias gap (0.02)
    quick = _checked([-7.0, -7.1], bias=[0.03, 0.01], half=[0.06, 0.02])  # rises halve
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        report = check_ranking(quick)
    assert report["settled"] and report["slow"] == []
    assert report["bias_gap"] == pytest.approx(0.02)
    # the best one's rises shrink by 0.91 per doubling: about 10 x 0.03 left
    slow = _checked([-7.0, -7.1], bias=[0.03, 0.01], half=[0.033, 0.02])
    with pytest.warns(RankingWarning, match="more slowly than 1 / budget"):
        report = check_ranking(slow)
    assert report["slow"] == [0] and not report["settled"]
    assert report["bias_gap"] == pytest.approx(0.3 - 0.01)
    # rises that grow: no bound on what is left
    growing = _checked([-7.0, -7.1], bias=[0.01, 0.03], half=[0.02, 0.02])
    with pytest.warns(RankingWarning, match="cannot rank"):
        assert not check_ranking(growing)["settled"]
    # slow, but by far not enough to close a lead of 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        far = check_ranking(_checked([-7.0, -8.0], bias=[0.03, 0.01], half=[0.033, 0.02]))
    assert far["slow"] == [0] and far["settled"]
    # rises within their Monte Carlo noise say nothing about the rate
    noisy = _checked([-7.0, -7.1], stderr=0.02, bias=[0.01, 0.01], half=[0.01, 0.01])
    assert check_ranking(noisy)["slow"] == []


def test_check_ranking_checks_the_recorded_budget_in_the_callers_process():
    over = _checked([-7.0, -7.1], bias=[0.05, 0.002], half=[0.1, 0.004], tolerance=0.01)
    with pytest.warns(RankingWarning, match="budget checks of 1 of 2 candidates"):
        report = check_ranking(over)
    assert report["over_tolerance"] == [0]
    with warnings.catch_warnings():  # an explicit tolerance overrides the scorer's
        warnings.simplefilter("error", RankingWarning)
        assert check_ranking(over, bias_tolerance=0.1)["over_tolerance"] == []
    unknown = _checked([-7.0, -7.1], bias=[np.nan, np.nan], tolerance=0.01)
    with pytest.warns(RankingWarning, match="could not be checked"):
        check_ranking(unknown)


def test_check_ranking_takes_the_larger_of_the_monte_carlo_and_fold_errors():
    # tiny Monte Carlo errors, but the folds disagree on the order
    folds = [[-7.00, -7.05], [-7.10, -7.06]]
    with pytest.warns(RankingWarning, match="cross-validation"):
        report = check_ranking(_checked(None, folds=folds, stderr=1e-4))
    assert report["cv_error"] > report["mc_error"] and report["error"] == report["cv_error"]
    assert not report["settled"]
    # the folds agree, the Monte Carlo errors are large
    agree = [[-7.00, -7.02], [-7.001, -7.021]]
    with pytest.warns(RankingWarning, match="Monte Carlo"):
        report = check_ranking(_checked(None, folds=agree, stderr=0.05))
    assert report["error"] == report["mc_error"] > report["cv_error"]


def _warned(cv_results):
    with pytest.warns(RankingWarning, match="cannot rank") as caught:
        report = check_ranking(cv_results)
    (message,) = [str(w.message) for w in caught if "cannot rank" in str(w.message)]
    return report, message


def test_the_ranking_warning_gives_its_numbers_and_the_remedy_for_its_cause():
    import re

    # Monte Carlo noise decides: per candidate sqrt(2 x 0.02^2) / 2, the lead's error
    # sqrt(2) times that, 0.02, against a lead of 0.01
    noisy = _checked([-7.0, -7.01], stderr=0.02)
    noisy["mean_test_budget"] = np.full(2, 20.0)
    report, message = _warned(noisy)
    assert report["error_kind"] == "Monte Carlo"
    # cv_results that do not say which scorer made them: every scorer's parameter
    for part in ("{'k': 0} scores -7.0000", "{'k': 1} -7.0100", "a lead of 0.0100",
                 "2 x 0.0200 = 0.0400", "Monte Carlo", "(it used 20)", "n_particles",
                 "n_samples", "n_temperatures"):
        assert part in message, (part, message)
    assert "more folds" not in message
    assert max(len(sentence) for sentence in re.split(r"(?<=\.) ", message)) < 200, message
    # a scorer that says its parameter: that one alone
    noisy["mean_test_budget_n_samples"] = np.full(2, 20.0)
    _, message = _warned(noisy)
    assert "raise n_samples (it used 20), or treat them" in message, message
    assert "n_particles" not in message and "n_temperatures" not in message
    # the folds disagree: the remedy is more folds, not a larger budget
    folds = np.array([[-7.00, -7.05], [-7.10, -7.06]])
    report, message = _warned(_checked(None, folds=folds, stderr=1e-4))
    diff = folds[:, 1] - folds[:, 0]
    error = np.std(diff, ddof=1) / np.sqrt(2)
    assert report["error_kind"] == "cross-validation"
    assert f"2 x {error:.4f} = {2 * error:.4f}." in message, message  # 0.0450: 3 digits
    assert "The standard error is the cross-validation one" in message
    assert "across the 2 folds" in message and "more folds" in message
    assert "n_particles" not in message
    # different budget biases decide: the remedy is the budget again
    _, message = _warned(_checked([-7.0, -7.01], stderr=1e-4, bias=[0.06, 0.01]))
    assert "budget biases differ" in message and "n_temperatures" in message


def test_a_left_to_right_search_names_n_particles_alone():
    import matplotlib.pyplot as plt

    # two copies of one model (same grid value, same seed): a lead of exactly 0, which
    # no error settles, so the warning gives its remedy, the scorer's own parameter
    X = corpus(40, seed=2)
    search = GridSearchCV(LDAGibbs(max_iter=5, device=TEST_DEVICE, random_state=0),
                          {"n_components": [2, 2]}, cv=2, refit=refit_best,
                          scoring=make_left_to_right_scorer(n_particles=4, return_stderr=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(X)
    results = search.cv_results_
    assert results["mean_test_score"][0] == results["mean_test_score"][1]
    np.testing.assert_array_equal(results["mean_test_budget_n_particles"], 4)
    np.testing.assert_array_equal(results["mean_test_budget"], 4)
    assert not any(f"mean_test_budget_{p}" in results for p in ("n_samples", "n_temperatures"))
    (message,) = [str(w.message) for w in caught if "cannot rank" in str(w.message)]
    assert "raise n_particles (it used 4)" in message, message
    assert "n_samples" not in message and "n_temperatures" not in message
    # every likelihood scorer records its parameter under a name check_ranking reads
    for scorer in (make_ais_scorer(), make_importance_sampling_scorer(),
                   make_ratio_ais_scorer(LDAGibbs())):
        assert scorer.budget in BUDGET_PARAMETERS
    # the criteria display does not draw the budget as a criterion
    display = CriteriaDisplay.from_cv_results(results, param="n_components")
    assert list(display.means) == ["score"]
    plt.close("all")


def test_the_ranking_warning_keeps_the_digits_of_small_errors():
    # per-token errors of a large corpus: a lead of 4e-5 against an error of 6e-5
    folds = np.array([[-7.41234, -7.412385], [-7.41234, -7.412375]])
    cv = _checked(None, folds=folds, stderr=6e-5)
    cv["mean_test_budget_n_particles"] = np.full(2, 20.0)
    report, message = _warned(cv)
    mc = np.hypot(*[np.sqrt(2 * 6e-5**2) / 2] * 2)  # of each candidate, in quadrature: 6e-5
    assert report["mc_error"] == pytest.approx(mc) and report["error_kind"] == "Monte Carlo"
    for part in ("scores -7.4123400 and {'k': 1} -7.4123800", "a lead of 0.0000400",
                 f"2 x {mc:.7f} = {2 * mc:.6f}", "(across the 2 folds: 0.00000500)",
                 "raise n_particles (it used 20)"):
        assert part in message, (part, message)
    assert "0.0000 " not in message and "0.0000." not in message
    assert len(message) < 420, (len(message), message)
    # the budget check's warning and the bias gap keep their digits too
    cv = _checked([-7.0, -7.0001], stderr=1e-6, bias=[3.21e-4, 1e-5], tolerance=1e-4)
    with pytest.warns(RankingWarning) as caught:
        check_ranking(cv)
    said = " ".join(str(w.message) for w in caught)
    assert "at most 0.000321, for {'k': 0}" in said, said
    assert "+ 0.000311 = " in said, said


def test_refit_best_with_a_named_scoring_dict():
    from functools import partial

    cv = {"params": [{"k": 5}, {"k": 10}], "mean_test_ll": np.array([-7.1, -7.0]),
          "split0_test_ll": np.array([-7.10, -7.00]),
          "split1_test_ll": np.array([-7.11, -7.01]),
          "split2_test_ll": np.array([-7.09, -7.00])}
    with pytest.raises(KeyError):
        refit_best(cv)
    assert partial(refit_best, score="ll", stderr=None, bias=None)(cv) == 1
    search = GridSearchCV(Fixed(noise=0.001), {"level": [-7.2, -7.0]}, cv=2,
                          scoring={"ll": lambda est, X, y=None: est.level},
                          refit=partial(refit_best, score="ll"))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        search.fit(np.zeros((8, 2)))
    assert search.best_params_ == {"level": -7.0}


# --------------------------------------------------------------------------- importance sampling


def test_importance_sampling_is_unbiased_in_probability_from_the_prior():
    res = importance_sampling_log_likelihood((split(PHI), ALPHA), repeated(n=3000), n_samples=1,
                                             random_state=0)
    assert res.method == "importance-sampling" and res.settings["proposal"] == "prior"
    assert_unbiased_in_probability(res.per_document,
                                   exact_copy(exact_log_likelihood(PHI, ALPHA, words_of(DOC))))


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
    X = distinct_documents(1200, seed=3)  # independent estimates, each of mean 1
    one = importance_sampling_log_likelihood(prodlda, X, n_samples=1, random_state=1)
    assert_unbiased_in_probability(one.per_document, prodlda_exact(generative_view(prodlda), X))


def test_importance_sampling_scorer_in_a_pipeline_search():
    pipe = make_pipeline(CountVectorizer(), ProdLDA(max_iter=2, batch_size=8,
                                                    hidden_sizes=(8, 8), device=TEST_DEVICE,
                                                    random_state=0))
    search = GridSearchCV(pipe, {"prodlda__n_components": [2, 3]}, cv=2, refit=refit_best,
                          scoring=make_importance_sampling_scorer(n_samples=16,
                                                                  return_stderr=True))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(texts(40))
    # whatever the scoring says is about its ranking or its budget (the models' own
    # warnings about their two-epoch training aside)
    said = [w for w in caught if not issubclass(w.category, ConvergenceWarning)]
    assert all(issubclass(w.category, RankingWarning) for w in said), said
    results = search.cv_results_
    for name in ("score", "stderr", "bias", "bias_half"):
        assert np.all(np.isfinite(results[f"mean_test_{name}"]))
    assert np.all(results["mean_test_bias"] >= 0) and np.all(results["mean_test_stderr"] > 0)
    np.testing.assert_array_equal(results["mean_test_budget"], 16)
    np.testing.assert_array_equal(results["mean_test_budget_n_samples"], 16)
    np.testing.assert_array_equal(results["mean_test_bias_tolerance"], 0.01)
    assert search.best_index_ == int(np.argmax(results["mean_test_score"]))


def test_the_importance_sampling_scorer_checks_its_budget(prodlda):
    X = corpus(20, seed=5)
    with pytest.warns(RankingWarning, match="bias_tolerance=1e-09.*n_samples"):
        make_importance_sampling_scorer(n_samples=2, bias_tolerance=1e-9)(prodlda, X)
    with pytest.warns(RankingWarning, match="cannot be checked"):
        make_importance_sampling_scorer(n_samples=1)(prodlda, X)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RankingWarning)
        make_importance_sampling_scorer(n_samples=8, bias_tolerance=None)(prodlda, X)


# --------------------------------------------------------------------------- criteria


def test_the_criteria_scorer_merges_its_scorers():
    X = corpus(40)
    model = LDAGibbs(2, max_iter=20, device=TEST_DEVICE, random_state=0).fit(X)
    got = make_criteria_scorer(make_left_to_right_scorer(n_particles=5, return_stderr=True),
                               coherence=make_coherence_scorer(top_n=3),
                               diversity=make_diversity_scorer(top_n=3))(model, X)
    assert set(got) == {"score", "stderr", "bias", "bias_half", "budget",
                        "budget_n_particles", "coherence", "diversity"}
    assert got["diversity"] == topic_diversity(model, top_n=3)
    plain = make_criteria_scorer(make_left_to_right_scorer(n_particles=5))(model, X)
    assert set(plain) == {"score"}
    with pytest.raises(ValueError, match="likelihood's metrics"):
        make_criteria_scorer(make_left_to_right_scorer(), bias=make_diversity_scorer())
    with pytest.raises(TypeError, match="not a scorer"):
        make_criteria_scorer(coherence=3)
    with pytest.raises(ValueError, match="likelihood"):  # checked when made
        make_criteria_scorer("score", coherence=make_coherence_scorer())


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
    # the folds agree on every difference (each fold shifts all candidates alike), so
    # the likelihood's Monte Carlo error decides: sqrt(2 x 0.01^2) / 2 per candidate,
    # twice in quadrature for a difference from the best (K = 20, the last); the
    # coherence has no Monte Carlo error and no spread
    mc = np.sqrt(2) * 0.01 / 2
    np.testing.assert_allclose(display.errors["score"], [np.hypot(mc, mc)] * 2 + [0.0])
    assert display.error_kinds["score"][:2] == ["Monte Carlo"] * 2
    np.testing.assert_allclose(display.errors["coherence"], 0.0, atol=1e-12)
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


def _drawn_bars(panel):
    """``x -> half-length`` of the error bars drawn in ``panel``."""
    (container,) = [c for c in panel.containers
                    if type(c).__name__ == "ErrorbarContainer"]
    segments = container.lines[2][0].get_segments()
    return {float(seg[0][0]): (seg[1][1] - seg[0][1]) / 2 for seg in segments}


def test_the_criteria_display_draws_the_errors_the_ranking_check_compares():
    import matplotlib.pyplot as plt

    # three folds that disagree on the order of K = 10 and 20; Monte Carlo errors far
    # smaller than the folds' spread
    folds = np.array([[-7.30, -7.20, -7.250],
                      [-7.28, -7.16, -7.175],
                      [-7.35, -7.21, -7.190]])
    cv = {"params": [{"n_components": k} for k in (5, 10, 20)],
          "mean_test_score": folds.mean(0)}
    for f, row in enumerate(folds):
        cv[f"split{f}_test_score"] = row
        cv[f"split{f}_test_stderr"] = np.full(3, 1e-4)
    with pytest.warns(RankingWarning, match="cross-validation"):
        report = check_ranking(cv)
    display = CriteriaDisplay.from_cv_results(cv)
    best = int(np.argmax(folds.mean(0)))
    assert best == 1 and display.best_ == {"score": 10}
    # the bars: 2 standard errors across the folds of each candidate's difference from
    # the best, computed here from the per-fold scores
    drawn = _drawn_bars(display.ax_[0])
    assert set(drawn) == {5.0, 20.0}  # none on the best
    for i, k in ((0, 5.0), (2, 20.0)):
        diff = folds[:, i] - folds[:, best]
        assert drawn[k] == pytest.approx(2 * np.std(diff, ddof=1) / np.sqrt(3))
    # the runner-up's bar is the lead's error the warning compares, and it reaches the
    # best mean because the ranking is not settled
    assert drawn[20.0] == pytest.approx(2 * report["error"])
    assert cv["mean_test_score"][2] + drawn[20.0] > cv["mean_test_score"][1]
    labels = display.ax_[0].get_legend_handles_labels()[1]
    bar_label = next(label for label in labels if "s.e." in label)
    assert "\u00b12 s.e. of the gap to the best, across folds" in bar_label
    mc = np.sqrt(3 * 1e-4**2) / 3
    assert "RankingWarning" in bar_label
    assert f"Monte Carlo s.e. at most {np.hypot(mc, mc):.2g}" in bar_label
    # with large Monte Carlo errors those decide, and the legend says so
    for f in range(3):
        cv[f"split{f}_test_stderr"] = np.full(3, 0.1)
    wide = CriteriaDisplay.from_cv_results(cv, n_sigma=3.0)
    mc = np.sqrt(3 * 0.1**2) / 3
    assert _drawn_bars(wide.ax_[0])[20.0] == pytest.approx(3 * np.hypot(mc, mc))
    labels = wide.ax_[0].get_legend_handles_labels()[1]
    assert any("\u00b13 s.e. of the gap to the best, Monte Carlo" in label for label in labels)
    plt.close("all")


def test_the_criteria_display_stars_the_candidate_its_bars_are_measured_from():
    import matplotlib.pyplot as plt

    # K = 20 and K = 5 tie exactly; the search lists K = 20 first, the display draws
    # K = 5 first: the best is the search's first, as check_ranking has it
    folds = np.array([[-6.75, -7.25, -7.5], [-7.25, -6.75, -7.5]])
    cv = {"params": [{"n_components": k} for k in (20, 5, 10)],
          "mean_test_score": folds.mean(0), "mean_test_coherence": np.array([0.1, 0.1, 0.05])}
    for f, row in enumerate(folds):
        cv[f"split{f}_test_score"] = row
    assert cv["mean_test_score"][0] == cv["mean_test_score"][1]
    with pytest.warns(RankingWarning, match="cannot rank"):
        assert check_ranking(cv)["best"] == 0
    display = CriteriaDisplay.from_cv_results(cv)
    np.testing.assert_array_equal(display.values, [5, 10, 20])
    # the coherence has no folds, hence no check_ranking: the same rule
    assert display.best_ == {"score": 20, "coherence": 20}
    drawn = _drawn_bars(display.ax_[0])
    assert set(drawn) == {5.0, 10.0}  # none on the starred K = 20
    # K = 5 against K = 20: per-fold differences -0.5 and 0.5, standard error 0.5
    assert drawn[5.0] == pytest.approx(2 * 0.5)
    for panel in display.ax_:
        (star,) = [line for line in panel.lines if line.get_marker() == "*"]
        assert list(star.get_xdata()) == [20.0]
    plt.close("all")


def test_the_criteria_display_draws_parameters_that_are_not_numbers():
    import matplotlib.pyplot as plt

    cv = _cv_results()
    for p, value in zip(cv["params"], ["online", "batch", None]):
        p["ldagibbs__n_components"] = value
    display = CriteriaDisplay.from_cv_results(cv, param="n_components")
    assert list(display.values) == ["online", "batch", None]  # in the searched order
    assert display.best_ == {"score": "online", "coherence": "batch"}
    labels = [t.get_text() for t in display.ax_[-1].get_xticklabels()]
    assert labels == ["online", "batch", "None"]
    plt.close("all")
