"""The model_selection evaluators inside data_parallel: two CPU processes with gloo.

One process group runs every evaluator on the two ranks' shares of a held-out set
(unequal, one with an empty document, a document on both ranks); every rank's result
must be the one this process gives on the shares concatenated in rank order.
"""

import contextlib
import dataclasses
import io
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch.distributed as dist
from numpy.testing import assert_allclose, assert_array_equal
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sktopics import LDAGibbs, ProdLDA
from sktopics.datasets import make_lda_corpus
from sktopics.distributed import data_parallel
from sktopics.model_selection import (
    ais_log_likelihood,
    document_completion_log_likelihood,
    generative_view,
    importance_sampling_log_likelihood,
    iteration_ais,
    left_to_right_log_likelihood,
    make_left_to_right_scorer,
    ratio_ais,
)
from sktopics.utils._devices import resolve_device

from ._ranks import run_ranks

pytestmark = [
    pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                       reason="needs torch.distributed with gloo"),
    pytest.mark.filterwarnings("ignore:ratio_ais. the two models are not both"),
]

X, _, _ = make_lda_corpus(n_samples=140, n_features=30, n_components=3, doc_length=25,
                          random_state=11)
TRAIN, HELD_OUT = X[:120], X[120:]
EMPTY = sp.csr_matrix((1, X.shape[1]))
#: Rank 0: 7 documents, one of them empty; rank 1: 15, the last one rank 0's third.
SHARES = [sp.vstack([HELD_OUT[:3], EMPTY, HELD_OUT[3:6]]).tocsr(),
          sp.vstack([HELD_OUT[6:], HELD_OUT[2]]).tocsr()]
WHOLE = sp.vstack(SHARES).tocsr()
GIBBS = dict(n_components=3, max_iter=20, burn_in=5, n_kept_samples=3, sample_interval=3,
             device="cpu")

#: Every evaluator with small budgets: ``name -> (function, model names, keywords)``.
EVALUATORS = {
    "ais": (ais_log_likelihood, ("a",),
            dict(n_temperatures=20, n_chains=3, resample_threshold=0.5)),
    "ais_hmc": (ais_log_likelihood, ("prodlda",),
                dict(n_temperatures=8, n_chains=2, start="prior", target_acceptance=0.65)),
    "left_to_right": (left_to_right_log_likelihood, ("a",), dict(n_particles=6)),
    "completion": (document_completion_log_likelihood, ("a",), dict(n_particles=6)),
    "importance": (importance_sampling_log_likelihood, ("a",), dict(n_samples=32)),
    "ratio": (ratio_ais, ("a", "b"), dict(n_temperatures=10, n_chains=3, direction="both")),
    "paired": (ratio_ais, ("a", "prodlda"), dict(n_temperatures=6, n_chains=2)),
    "iteration": (iteration_ais, ("snapshots",),
                  dict(n_start_temperatures=10, n_segment_temperatures=3, n_chains=3)),
}


def _models():
    """Two LDA models, a learning run's snapshots, and a ProdLDA view without an encoder
    (the continuous engine from the prior: float64 throughout)."""
    a = LDAGibbs(**GIBBS, random_state=0).fit(TRAIN)
    b = LDAGibbs(**GIBBS, random_state=1).fit(TRAIN)
    run = LDAGibbs(**{**GIBBS, "max_iter": 6, "snapshot_interval": 2}, random_state=2).fit(TRAIN)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too few steps: its view is all that is needed
        prodlda = ProdLDA(n_components=3, max_iter=2, device="cpu", random_state=0).fit(TRAIN)
    view = dataclasses.replace(generative_view(prodlda), proposal=None)
    return {"a": a, "b": b, "snapshots": run.snapshots_[:3], "prodlda": view}


def _evaluate(name, models, X_eval):
    function, model_names, kwargs = EVALUATORS[name]
    return function(*(models[m] for m in model_names), X_eval, random_state=5, **kwargs)


def _scenario(rank, models):
    found = {}
    share = SHARES[rank]
    with data_parallel(timeout=60):
        for name in EVALUATORS:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                found[name] = _evaluate(name, models, share)
            found[f"{name} warnings"] = [str(w.message) for w in caught]
        # no seed: every rank draws one, rank 0's is used
        found["unseeded"] = left_to_right_log_likelihood(models["a"], share, n_particles=4)
        scorer = make_left_to_right_scorer(n_particles=8, return_stderr=True)
        found["scorer"] = scorer(models["a"], share)
        bad = {"n_features": (models["a"], share[:, : X.shape[1] - rank]),
               "model": (models["a"] if rank == 0 else models["b"], share)}
        for case, (model, counts) in bad.items():
            try:
                left_to_right_log_likelihood(model, counts, n_particles=2)
            except ValueError as exc:
                found[case] = str(exc)
        # a pipeline whose leading step fails on rank 1 only, inside a scorer
        pipe = make_pipeline(FunctionTransformer(_fails_on_rank_one, kw_args={"rank": rank}),
                             models["a"])
        try:
            scorer(pipe, share)
        except ValueError as exc:
            found["pipeline"] = str(exc)
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):  # the group still works after refusals
            found["after"] = importance_sampling_log_likelihood(models["a"], share,
                                                                n_samples=4, verbose=1)
        found["printed"] = printed.getvalue()
    return found


def _fails_on_rank_one(X, rank):
    if rank == 1:
        raise RuntimeError("this rank's transformer broke")
    return X


@pytest.fixture(scope="module")
def models():
    return _models()


@pytest.fixture(scope="module")
def ranks(models, tmp_path_factory):
    """Every rank's findings; a rank that hangs fails the tests instead of CI."""
    found = run_ranks(_scenario, tmp_path_factory.mktemp("evaluators"), models)
    for result in found:
        if isinstance(result, Exception):
            raise result
    return found


def _assert_same(got, expected):
    assert type(got) is type(expected) and got.method == expected.method
    # CUDA adds some of the chains' sums with atomics, in no fixed order: a standard
    # error that is zero in exact arithmetic (a document whose chains all agree) is
    # rounding noise of about 1e-16 there, which no relative tolerance covers.
    atol = 1e-12 if resolve_device("auto").type == "cuda" else 0
    for name in expected._PER_DOCUMENT:
        value, reference = getattr(got, name), getattr(expected, name)
        if reference is None:
            assert value is None, name
        elif name == "document_keys":
            assert_array_equal(value, reference)
        else:
            assert_allclose(value, reference, rtol=1e-9, atol=atol, err_msg=name)
    assert_allclose([got.total, got.stderr], [expected.total, expected.stderr], rtol=1e-9)
    assert got.n_token_updates == expected.n_token_updates
    assert_allclose(got.min_ess, expected.min_ess, rtol=1e-9)
    assert got.settings.keys() == expected.settings.keys()
    for key, reference in expected.settings.items():
        numeric = np.asarray(reference).dtype.kind == "f"
        if numeric:  # acceptance rates, tuned step multipliers
            assert_allclose(got.settings[key], reference, rtol=1e-9, err_msg=key)
        else:
            assert got.settings[key] == reference, key


@pytest.mark.parametrize("name", [n for n in EVALUATORS if n != "iteration"])
def test_every_rank_gets_the_one_process_result_of_the_concatenation(ranks, models, name):
    expected = _evaluate(name, models, WHOLE)
    for found in ranks:
        got = found[name]
        if name == "ais_hmc":  # the tuned steps' median needs every rank's documents
            median = got.settings["step_multipliers"][1]
            assert np.isnan(median)
            expected.settings["step_multipliers"] = (
                expected.settings["step_multipliers"][0], median,
                expected.settings["step_multipliers"][2])
        _assert_same(got, expected)
        assert got.per_document.shape == (22,)
    # the duplicated document: one estimate (HMC's batches round differently)
    first = ranks[0][name]
    assert first.per_document[2] == pytest.approx(first.per_document[-1], rel=1e-12)
    if name == "ratio":
        for field in ("forward", "reverse", "topic_permutation"):
            assert_array_equal(ranks[0][name].__dict__[field], ranks[1][name].__dict__[field])
        assert_array_equal(first.topic_permutation, expected.topic_permutation)


def test_iteration_ais_gives_every_snapshot_of_the_concatenation(ranks, models):
    expected = _evaluate("iteration", models, WHOLE)
    for found in ranks:
        assert len(found["iteration"]) == len(expected) == 3
        for got, reference in zip(found["iteration"], expected):
            _assert_same(got, reference)


def test_counts_that_add_up_over_the_ranks(ranks, models):
    for name in ("ais", "left_to_right", "iteration"):
        alone = [_evaluate(name, models, share) for share in SHARES]
        if name == "iteration":
            alone = [runs[-1] for runs in alone]
        got = ranks[0][name][-1] if name == "iteration" else ranks[0][name]
        assert got.n_token_updates == sum(r.n_token_updates for r in alone)
        assert got.settings["n_resampling_events"] == sum(
            r.settings["n_resampling_events"] for r in alone)
    hmc = [_evaluate("ais_hmc", models, share) for share in SHARES]
    low, _, high = ranks[0]["ais_hmc"].settings["step_multipliers"]
    assert low == pytest.approx(min(r.settings["step_multipliers"][0] for r in hmc), rel=1e-9)
    assert high == pytest.approx(max(r.settings["step_multipliers"][2] for r in hmc), rel=1e-9)


def test_without_a_seed_every_rank_uses_rank_zeros(ranks):
    first, second = (found["unseeded"] for found in ranks)
    assert_array_equal(first.per_document, second.per_document)
    # the document on both ranks got the same random numbers there
    assert first.per_document[2] == first.per_document[-1]
    assert first.settings["random_state"] is None


def test_a_scorer_returns_the_one_process_dict_on_every_rank(ranks, models):
    expected = make_left_to_right_scorer(n_particles=8, return_stderr=True)(models["a"], WHOLE)
    assert ranks[0]["scorer"] == ranks[1]["scorer"]
    assert ranks[0]["scorer"].keys() == expected.keys()
    for key, value in expected.items():
        assert_allclose(ranks[0]["scorer"][key], value, rtol=1e-9, err_msg=key)


def test_one_ranks_bad_input_raises_the_same_error_on_every_rank(ranks):
    assert ranks[0]["n_features"] == ranks[1]["n_features"]
    assert "rank 1" in ranks[0]["n_features"] and "features" in ranks[0]["n_features"]
    assert "rank 0" not in ranks[0]["n_features"]
    assert ranks[0]["model"] == ranks[1]["model"]
    assert "rank 1" in ranks[0]["model"] and "model" in ranks[0]["model"]
    # a scorer's pipeline whose leading step fails on one rank: the same error on both
    assert ranks[0]["pipeline"] == ranks[1]["pipeline"]
    assert "rank 1" in ranks[0]["pipeline"] and "transformer broke" in ranks[0]["pipeline"]
    # the ranks still agree on what comes next
    assert ranks[0]["after"].per_document.shape == ranks[1]["after"].per_document.shape == (22,)


def test_messages_come_from_rank_zero(ranks):
    paired = [w for w in ranks[0]["paired warnings"] if "no annealing path" in w]
    assert len(paired) == 1
    for name in EVALUATORS:
        assert ranks[1][f"{name} warnings"] == []
    assert "importance_sampling_log_likelihood" in ranks[0]["printed"]
    assert ranks[1]["printed"] == ""
