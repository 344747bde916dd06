"""AVITM and ProdLDA: the estimator contract, training behaviour and inference."""

import contextlib
import copy
import pickle
import re
import warnings

import joblib
import numpy as np
import pytest
import scipy.sparse as sp
import torch
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import Pipeline

from sktopics import AVITM, PAMVI, MoLDA, ProdLDA, top_words
from sktopics.datasets import make_lda_corpus
from sktopics.utils._devices import resolve_device

from ._instances import TEST_DEVICE

NEURAL = [AVITM, ProdLDA]
FAST = dict(max_iter=3, batch_size=20, hidden_sizes=(16, 16), device=TEST_DEVICE)


@pytest.fixture(scope="module")
def corpus():
    X, topic_word, _ = make_lda_corpus(
        n_samples=120, n_features=40, n_components=4, doc_topic_prior=0.2,
        topic_word_prior=0.05, doc_length=40, random_state=0,
    )
    return X


def fitted(cls, X, **params):
    return cls(**{"n_components": 4, "random_state": 0, **FAST, **params}).fit(X)


@pytest.mark.parametrize("cls", NEURAL)
def test_shapes_and_normalisation(cls, corpus):
    model = fitted(cls, corpus)
    theta = model.transform(corpus)
    assert theta.shape == (corpus.shape[0], 4)
    np.testing.assert_allclose(theta.sum(axis=1), 1.0, rtol=1e-6)
    np.testing.assert_allclose(model.components_.sum(axis=1), 1.0, rtol=1e-10)
    assert model.components_.shape == (4, corpus.shape[1])
    assert model.n_iter_ == 3
    assert model.n_features_in_ == corpus.shape[1]
    assert model.device_ == resolve_device(TEST_DEVICE)
    assert list(model.get_feature_names_out()) == [f"{cls.__name__.lower()}{k}" for k in range(4)]
    assert isinstance(model.components_, np.ndarray)


@pytest.mark.parametrize("cls", NEURAL)
def test_input_formats_agree_and_input_untouched(cls, corpus):
    model = fitted(cls, corpus)
    dense = corpus.toarray()
    dense_copy = dense.copy()
    csr_copy = corpus.copy()
    expected = model.transform(corpus)
    for X in (dense, corpus.tocsc(), corpus.tocoo(), dense.astype(np.int32), dense.astype(np.float32)):
        np.testing.assert_allclose(model.transform(X), expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(dense, dense_copy)
    assert (corpus != csr_copy).nnz == 0
    assert model.transform(dense.astype(np.float32)).dtype == np.float32


@pytest.mark.parametrize("cls", NEURAL)
def test_same_seed_bit_identical_and_global_rng_untouched(cls, corpus):
    torch.manual_seed(123)
    np.random.seed(123)
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()
    first = fitted(cls, corpus)
    second = fitted(cls, corpus)
    assert torch.equal(torch.get_rng_state(), torch_state)
    assert np.array_equal(np.random.get_state()[1], numpy_state[1])
    np.testing.assert_array_equal(first.components_, second.components_)
    np.testing.assert_array_equal(first.transform(corpus), second.transform(corpus))
    other = fitted(cls, corpus, random_state=1)
    assert not np.array_equal(first.components_, other.components_)


@pytest.mark.parametrize("cls", NEURAL)
def test_no_global_torch_setting_changed(cls, corpus):
    threads = torch.get_num_threads()
    deterministic = torch.are_deterministic_algorithms_enabled()
    fitted(cls, corpus)
    assert torch.get_num_threads() == threads
    assert torch.are_deterministic_algorithms_enabled() == deterministic


@pytest.mark.parametrize("cls", NEURAL)
def test_pickle_roundtrip_and_no_training_data(cls, corpus):
    model = fitted(cls, corpus, validation_fraction=0.2)
    blob = pickle.dumps(model)
    restored = pickle.loads(blob)
    np.testing.assert_array_equal(restored.transform(corpus), model.transform(corpus))
    assert restored.score(corpus) == model.score(corpus)
    # The training matrix is 120 x 40: no array of that size may travel in the pickle.
    n_stored = corpus.nnz
    assert len(blob) < 400_000
    assert not any(
        isinstance(v, (np.ndarray, sp.spmatrix)) and getattr(v, "shape", (0,))[0] == corpus.shape[0]
        for v in vars(restored).values()
    )
    assert restored.net_.train_split is None
    joblib_restored = joblib.load(_joblib_roundtrip(model))
    np.testing.assert_array_equal(joblib_restored.components_, model.components_)
    del n_stored


def _joblib_roundtrip(model):
    import io

    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    buffer.seek(0)
    return buffer


@pytest.mark.parametrize("cls", NEURAL)
def test_clone_gives_unfitted_copy(cls, corpus):
    model = fitted(cls, corpus)
    copy = clone(model)
    assert copy.get_params() == model.get_params()
    with pytest.raises(NotFittedError):
        copy.transform(corpus)


@pytest.mark.parametrize("cls", NEURAL)
def test_warm_start_and_partial_fit_accumulate_epochs(cls, corpus):
    model = cls(n_components=4, random_state=0, warm_start=True, **FAST).fit(corpus)
    before = model.components_.copy()
    model.fit(corpus)
    assert model.n_iter_ == 6
    assert len(model.history_) == 6
    assert not np.array_equal(before, model.components_)

    partial = cls(n_components=4, random_state=0, **FAST)
    partial.partial_fit(corpus)
    partial.partial_fit(corpus)
    assert partial.n_iter_ == 2  # one epoch per call
    cold = cls(n_components=4, random_state=0, **FAST).fit(corpus)
    assert cold.n_iter_ == 3


@pytest.mark.parametrize("cls", NEURAL)
def test_training_lowers_the_loss(cls, corpus):
    model = cls(n_components=4, random_state=0, **{**FAST, "max_iter": 30}).fit(corpus)
    losses = model.history_[:, "train_loss"]
    assert np.mean(losses[-5:]) < np.mean(losses[:5])


@pytest.mark.parametrize("cls", NEURAL)
def test_validation_fraction_records_and_stops_early(cls, corpus):
    model = cls(
        n_components=4, random_state=0, validation_fraction=0.25, n_iter_no_change=2,
        tol=1e6, **{**FAST, "max_iter": 50},
    ).fit(corpus)
    assert "valid_loss" in model.history_[-1]
    # tol is huge, so no epoch counts as an improvement after the first.
    assert model.n_iter_ == 3


@pytest.mark.parametrize("cls", [AVITM, ProdLDA, PAMVI, MoLDA])
def test_max_iter_auto_trains_enough_steps_on_a_small_corpus(cls, corpus, monkeypatch):
    """"auto" runs its epochs, or as many as the auto step count needs (rounded up):
    120 documents in shuffled batches of 20 give 6 steps an epoch, 50 documents 2, and
    the 90 training documents left by a validation split of a quarter 4."""
    from sktopics._neural import _convergence

    assert cls().max_iter == "auto"
    monkeypatch.setattr(_convergence, "MIN_STEPS", 61)
    structure = {"n_components": 4} if cls in NEURAL else {}
    params = {**structure, **FAST, "max_iter": "auto", "random_state": 0}
    monkeypatch.setattr(cls, "_auto_epochs", 3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for X, extra, steps_per_epoch in (
                (corpus, {}, 6), (corpus[:50], {}, 2),
                (corpus, {"validation_fraction": 0.25, "n_iter_no_change": 100}, 4)):
            model = cls(**params, **extra).fit(X)
            assert model.n_iter_ == -(-61 // steps_per_epoch)
            assert sum(model.history_[:, "train_batch_count"]) == model.n_iter_ * steps_per_epoch
    monkeypatch.setattr(cls, "_auto_epochs", 40)  # the epoch floor
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert cls(**params).fit(corpus).n_iter_ == 40


def test_prodlda_trains_fewer_steps_on_long_documents_and_many_topics():
    """"auto"'s steps: 1,000 for AVITM; for ProdLDA 2,000,000 / (K L) within
    [300, 1,000] (its held-out NPMI peaked sooner on long documents at large K), so
    on 150 documents of 400 tokens in batches of 64 (2 steps an epoch) at K = 20
    ProdLDA trains its 300 steps where AVITM trains 1,000."""
    from sktopics._neural._convergence import auto_steps

    assert [auto_steps(ProdLDA(n_components=k), length)
            for k, length in ((20, 6), (20, 100), (20, 200), (50, 200), (20, 1250))] \
        == [1000, 1000, 500, 300, 300]
    assert auto_steps(AVITM(n_components=50), 1250) == 1000
    X, _, _ = make_lda_corpus(n_samples=150, n_features=300, n_components=5, doc_length=400,
                              random_state=0)
    params = dict(n_components=20, hidden_sizes=(8, 8), device="cpu", random_state=0)
    plan = {}
    for cls in (ProdLDA, AVITM):
        model = cls(**params)
        plan[cls] = model._epochs(X.astype(np.float32), None)
    assert plan == {ProdLDA: 150, AVITM: 500}


@pytest.mark.parametrize("cls", NEURAL)
def test_a_fit_of_too_few_steps_warns_with_the_remedy(cls, corpus, monkeypatch):
    from sklearn.exceptions import ConvergenceWarning

    from sktopics._neural import _convergence

    monkeypatch.setattr(_convergence, "MIN_STEPS", 120)  # a warning below 30 steps
    with pytest.warns(ConvergenceWarning) as record:
        fitted(cls, corpus, max_iter=4)  # 24 steps
    message = str(next(r.message for r in record if r.category is ConvergenceWarning))
    assert "24 optimiser steps (4 epochs of 6 batches)" in message
    length = corpus.sum() / corpus.shape[0]
    assert f"documents of about {length:.0f} tokens" in message and "about 120 steps" in message
    assert "max_iter='auto'" in message and "max_iter=20." in message
    with pytest.warns(ConvergenceWarning):
        model = fitted(cls, corpus, max_iter=3, warm_start=True)  # 18 steps
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        fitted(cls, corpus, max_iter=5)  # 30 steps: a quarter of them, no advice
        # Warm fits count every step so far; partial_fit (an epoch a call) never warns.
        model.set_params(max_iter=2).fit(corpus)  # 18 + 12 steps
        online = cls(n_components=4, random_state=0, **FAST)
        for _ in range(2):
            online.partial_fit(corpus)
    assert model.n_iter_ == 5


@pytest.mark.parametrize("cls", NEURAL)
def test_validation_loss_still_improving_at_max_iter_warns(cls, corpus):
    from sklearn.exceptions import ConvergenceWarning

    # Patience beyond max_iter: training runs to max_iter.
    with pytest.warns(ConvergenceWarning, match="valid_loss was still improving"):
        fitted(cls, corpus, max_iter=3, validation_fraction=0.25, n_iter_no_change=5)
    with warnings.catch_warnings():  # stopped early: converged, however few the steps
        warnings.simplefilter("error", ConvergenceWarning)
        model = fitted(cls, corpus, max_iter=50, validation_fraction=0.25,
                       n_iter_no_change=2, tol=1e6)
        assert model.n_iter_ == 3
        # stopped early at the last planned epoch: converged too
        model = fitted(cls, corpus, max_iter=3, validation_fraction=0.25,
                       n_iter_no_change=2, tol=1e6)
        assert model.n_iter_ == 3


def test_validation_fraction_too_large_raises(corpus):
    with pytest.raises(ValueError, match="validation_fraction"):
        ProdLDA(validation_fraction=0.999, **FAST).fit(corpus[:10])


@pytest.mark.parametrize("cls", NEURAL)
def test_verbose_prints_epochs(cls, corpus, capsys):
    fitted(cls, corpus, verbose=1)
    out = capsys.readouterr().out
    assert len(re.findall(r"epoch\s+\d+\s+train_loss [\d.]+\s+[\d.]+s", out)) == 3
    fitted(cls, corpus, verbose=0)
    assert capsys.readouterr().out == ""


@pytest.mark.parametrize("cls", NEURAL)
def test_nan_guard(cls, corpus):
    with pytest.raises(FloatingPointError, match="loss became"):
        fitted(cls, corpus * 1e30)


@pytest.mark.parametrize("cls", NEURAL)
def test_single_document_transform_matches_batch(cls, corpus):
    model = fitted(cls, corpus)
    batch = model.transform(corpus[:10])
    singles = np.vstack([model.transform(corpus[i]) for i in range(10)])
    np.testing.assert_allclose(singles, batch, rtol=1e-5, atol=1e-6)
    # A single document is not collapsed to the bias as BN in training mode would do.
    assert np.ptp(singles, axis=0).max() > 1e-3


def test_batch_norm_statistics_are_recomputed(corpus):
    model = fitted(ProdLDA, corpus)
    norm = model.net_.module_.encoder.mu_bn
    assert norm.use_running_stats
    # With momentum 1e-3 and a handful of steps the running mean would still be ~0;
    # the recomputed statistics equal the exact training-set mean of the pre-BN head.
    encoder = model.net_.module_.encoder
    X = torch.as_tensor(corpus.toarray(), dtype=torch.float32, device=norm.bias.device)
    with torch.no_grad():
        encoder.eval()
        pre = encoder.mu(encoder.hidden(X)).mean(0).cpu().numpy()
    np.testing.assert_allclose(norm.running_mean.cpu().numpy(), pre, rtol=1e-4, atol=1e-5)
    running = fitted(ProdLDA, corpus, bn_statistics="running").net_.module_.encoder.mu_bn
    assert np.abs(running.running_mean.cpu().numpy()).max() < np.abs(pre).max()


@pytest.mark.parametrize("cls", NEURAL)
def test_empty_documents_ignored_by_fit_and_get_prior_mean(cls, corpus):
    X = sp.vstack([corpus, sp.csr_matrix((3, corpus.shape[1]))]).tocsr()
    with_empty = fitted(cls, X)
    without = fitted(cls, corpus)
    np.testing.assert_array_equal(with_empty.components_, without.components_)
    theta = with_empty.transform(X[-3:])
    np.testing.assert_allclose(theta, 0.25)
    prior = fitted(cls, corpus, doc_topic_prior=[1.0, 1.0, 2.0, 4.0])
    np.testing.assert_allclose(prior.transform(X[-1:])[0], [0.125, 0.125, 0.25, 0.5])


@pytest.mark.parametrize("cls", NEURAL)
def test_score_is_per_token_repeatable_and_perplexity(cls, corpus):
    model = fitted(cls, corpus)
    score = model.score(corpus)
    assert np.isfinite(score) and score < 0
    assert model.score(corpus) == score
    # Per token: doubling the corpus leaves it unchanged (up to the noise draw).
    doubled = sp.vstack([corpus, corpus]).tocsr()
    assert abs(model.score(doubled) - score) < 0.05 * abs(score)
    assert model.perplexity(corpus) == pytest.approx(np.exp(-score))
    # A uniform model over 40 words scores log(1/40); a trained one is better.
    assert fitted(cls, corpus, max_iter=30).score(corpus) > np.log(1 / 40)


@pytest.mark.parametrize("cls", NEURAL)
@pytest.mark.filterwarnings("ignore:.*topic proportions are weak")
def test_fractional_counts_are_weights(cls, corpus, monkeypatch):
    """The reconstruction term of the training objective is ``-sum_w x_w log p_w`` with
    the fractional entries as the weights ``x_w``: they reach it unrounded during fit,
    and on fixed parameters (training and inference modes) it equals that sum computed
    densely and is linear in them. Rounding the weights, or reading only which words
    occur, fails these checks."""
    from sktopics._neural import _modules

    weighted = corpus.astype(np.float64)
    weighted.data = weighted.data * np.random.default_rng(0).uniform(0.3, 1.7, weighted.nnz)
    seen = []

    def spy_on(decoder_class):
        real = decoder_class.nll

        def nll(self, theta, x):
            seen.append(x.values.detach().cpu().numpy().copy())
            return real(self, theta, x)

        monkeypatch.setattr(decoder_class, "nll", nll)

    spy_on(_modules.MixtureDecoder)
    spy_on(_modules.ProductOfExpertsDecoder)
    # On CUDA the training step is recorded once as a graph and replayed: the spy would
    # see only the recording's padded warm-up batch (and its copy to the host would
    # break the capture). Without graphs every step runs the Python code it spies on.
    monkeypatch.setenv("SKTOPICS_CUDA_GRAPHS", "0")
    model = fitted(cls, weighted)
    monkeypatch.undo()
    values = np.concatenate(seen)
    assert np.all(np.isin(values.astype(np.float32), weighted.data.astype(np.float32)))
    assert np.any(values != np.round(values))

    def mapped(x, f):  # the batch with f applied to every non-zero
        out = copy.copy(x)
        out.values = f(x.values)
        out.by_column = x.by_column._replace(values=f(x.by_column.values))
        return out

    x = next(iter(model._batches(weighted[:30])))
    rounded = mapped(x, torch.round)
    with torch.no_grad():
        theta = torch.softmax(model.net_.module_.encoder.eval()(x)[0], dim=-1)
    for training in (True, False):  # ProdLDA's fused training pass, and inference
        decoder = copy.deepcopy(model.net_.module_.decoder).train(training)
        with torch.no_grad():
            log_p = decoder(theta).double()
            r1, r2, r3, r_rounded = (decoder.nll(theta, batch).double().cpu().numpy()
                                     for batch in (x, mapped(x, lambda v: 2 * v),
                                                   mapped(x, lambda v: 3 * v), rounded))
        for batch, r in ((x, r1), (rounded, r_rounded)):
            dense = -(batch.to_dense().double() * log_p).sum(-1).cpu().numpy()
            np.testing.assert_allclose(r, dense, rtol=1e-5)
        np.testing.assert_allclose(r2, 2 * r1, rtol=1e-5)
        np.testing.assert_allclose(r3, 3 * r1, rtol=1e-5)
        # the check has power: rounded weights give another objective
        assert np.max(np.abs(r_rounded / r1 - 1)) > 0.01
        # Training follows the gradient, which the custom backward passes compute:
        # it must be the gradient of the dense weighted sum, for theta and the decoder.
        grads = []
        for loss_of in (lambda d, t: d.nll(t, x).sum(),
                        lambda d, t: -(x.to_dense() * d(t)).sum()):
            d = copy.deepcopy(decoder)
            t = theta.clone().requires_grad_(True)
            loss_of(d, t).backward()
            grads.append([t.grad] + [p.grad for p in d.parameters() if p.requires_grad])
        for got, want in zip(*grads):
            assert want is not None and float(want.abs().max()) > 0
            np.testing.assert_allclose(got.double().cpu().numpy(), want.double().cpu().numpy(),
                                       rtol=1e-4, atol=1e-6 * float(want.abs().max()))


BAD_INPUTS = [
    (lambda X: -X.toarray(), "Negative values"),
    (lambda X: np.where(X.toarray() > 0, np.nan, 0.0), "NaN"),
    (lambda X: np.where(X.toarray() > 0, np.inf, 0.0), "infinity"),
    (lambda X: X[:1], "minimum of 2"),
    (lambda X: np.empty((0, X.shape[1])), "0 sample"),
    (lambda X: sp.csr_matrix(X.shape), "at least 2 documents with tokens"),
]


@pytest.mark.parametrize("cls", NEURAL)
@pytest.mark.parametrize("make_bad, message", BAD_INPUTS)
def test_bad_input_at_fit(cls, corpus, make_bad, message):
    with pytest.raises(ValueError, match=message):
        cls(**FAST).fit(make_bad(corpus))


@pytest.mark.parametrize("cls", NEURAL)
def test_bad_input_after_fit(cls, corpus):
    model = fitted(cls, corpus)
    with pytest.raises(ValueError, match="features"):
        model.transform(corpus[:, :10])
    with pytest.raises(ValueError, match="features"):
        model.score(corpus[:, :10])
    with pytest.raises(ValueError, match="Negative"):
        model.transform(-corpus.toarray())
    with pytest.raises(ValueError, match="at least one token"):
        model.score(sp.csr_matrix((2, corpus.shape[1])))


@pytest.mark.parametrize("cls", NEURAL)
@pytest.mark.parametrize(
    "params, message",
    [
        (dict(doc_topic_prior=[1.0, 2.0]), "doc_topic_prior"),
        (dict(activation="sigmoid"), "activation"),
        (dict(batch_sampling="nope"), "batch_sampling"),
        (dict(device="tpu"), "device"),
        (dict(free_bits=-0.1), "free_bits"),
    ],
)
def test_bad_parameters(cls, corpus, params, message):
    with pytest.raises(ValueError, match=message):
        cls(n_components=4, **{**FAST, **params}).fit(corpus)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the error without CUDA")
@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda")])
def test_cuda_request_without_cuda_is_a_clear_error(corpus, device):
    with pytest.raises(ValueError, match="CUDA is not available"):
        ProdLDA(**{**FAST, "device": device}).fit(corpus)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("cls", NEURAL)
def test_fit_on_gpu_pickles_to_cpu(cls, corpus):
    model = fitted(cls, corpus, device="cuda")
    assert model.device_.type == "cuda"
    restored = pickle.loads(pickle.dumps(model))
    np.testing.assert_allclose(restored.transform(corpus), model.transform(corpus), atol=1e-5)


def test_collapse_warning():
    X, _, _ = make_lda_corpus(n_samples=60, n_features=200, n_components=4, random_state=0)
    model = ProdLDA(n_components=8, **{**FAST, "max_iter": 1})
    model.fit(X)
    # Force identical topics and re-run the check the fit performs.
    model.components_ = np.tile(model.components_[:1], (8, 1))
    with pytest.warns(UserWarning, match="collapsed"):
        model._warn_if_collapsed(X)


def test_pipeline_grid_search_and_top_words():
    docs = [
        "apple banana fruit juice", "banana fruit smoothie apple", "fruit apple pie",
        "engine car wheel road", "car road truck engine", "wheel truck car",
        "apple juice fruit", "road engine car wheel",
    ] * 3
    pipe = Pipeline([("vec", CountVectorizer()), ("topics", ProdLDA(n_components=2, **FAST))])
    search = GridSearchCV(pipe, {"topics__n_components": [2, 3]}, cv=2, n_jobs=2)
    search.fit(docs)
    assert search.best_params_["topics__n_components"] in (2, 3)
    words = top_words(search.best_estimator_, top_n=3)
    vocabulary = set(CountVectorizer().fit(docs).get_feature_names_out())
    assert all(word in vocabulary for topic in words for word in topic)
    assert len(words) == search.best_params_["topics__n_components"]


def test_word_background_is_the_log_training_frequency(corpus):
    model = fitted(ProdLDA, corpus, word_background=True)
    frequencies = np.asarray(corpus.sum(axis=0)).ravel() + 1.0
    expected = np.log(frequencies / frequencies.sum())
    background = model.net_.module_.decoder.background.cpu().numpy()
    np.testing.assert_allclose(background, expected, rtol=1e-5)
    view_bias = model._generative_view().likelihood.bn_bias
    bn_bias = model.net_.module_.decoder.bn.bias.detach().cpu().numpy()
    np.testing.assert_allclose(view_bias, bn_bias + expected, rtol=1e-5, atol=1e-6)
    assert not np.any(fitted(ProdLDA, corpus).net_.module_.decoder.background.cpu().numpy())


@pytest.mark.parametrize("cls, faithful", [
    (ProdLDA, {"dropout": 0.6, "batch_size": 200, "batch_sampling": "with_replacement",
               "free_bits": 0.0}),
    (AVITM, {"dropout": 0.25, "learning_rate": 1e-2, "batch_size": 200,
             "batch_sampling": "with_replacement", "shared_noise": True, "free_bits": 0.0}),
])
def test_from_preset(cls, faithful):
    with pytest.raises(ValueError, match="became .*'s defaults"):
        cls.from_preset("diverse")
    with pytest.raises(ValueError, match="Unknown preset 'fast'"):
        cls.from_preset("fast")
    paper = cls.from_preset("avitm", max_iter=3)
    assert clone(paper).get_params() == paper.get_params()
    assert {key: paper.get_params()[key] for key in faithful} == faithful
    assert paper.max_iter == 3  # parameters override the preset
    with pytest.raises(ValueError, match=f"preset 'nope' for {cls.__name__}"):
        cls.from_preset("nope")


@pytest.mark.parametrize("cls", NEURAL)
def test_generative_view_matches_the_trained_decoder(cls, corpus):
    from sktopics._generative import LogisticNormalPrior, laplace_logistic_normal

    model = fitted(cls, corpus, doc_topic_prior=[0.5, 1.0, 1.0, 2.0])
    view = model._generative_view()
    assert view.n_features == corpus.shape[1] and view.n_topics == 4
    assert isinstance(view.prior, LogisticNormalPrior)
    mean, var = laplace_logistic_normal([0.5, 1.0, 1.0, 2.0])
    np.testing.assert_allclose(view.prior.mean, mean)
    np.testing.assert_allclose(view.prior.var, var)

    module = model.net_.module_.eval()
    theta = torch.softmax(torch.randn(5, 4, generator=torch.Generator().manual_seed(0)), -1)
    device = next(module.parameters()).device
    with torch.no_grad():
        expected = module.decoder(theta.to(device)).double().cpu()
    x = torch.as_tensor(corpus[:5].toarray(), dtype=torch.float64)
    got = view.likelihood.log_prob(x, theta.double())
    np.testing.assert_allclose(got.numpy(), (x * expected).sum(-1).numpy(), rtol=1e-4)

    loc, scale = view.proposal(x)
    assert loc.shape == (5, 4) and bool((scale > 0).all())
    if cls is AVITM:
        phi, alpha = view.token_mixture()
        np.testing.assert_allclose(phi, model.components_)
        np.testing.assert_allclose(alpha, [0.5, 1.0, 1.0, 2.0])
    else:
        assert view.token_mixture() is None


def test_laplace_approximation_formula():
    from sktopics._generative import laplace_logistic_normal

    mean, var = laplace_logistic_normal(np.ones(50))
    np.testing.assert_allclose(mean, 0.0)
    np.testing.assert_allclose(var, 1 - 1 / 50)
    alpha = np.array([0.5, 2.0, 3.0])
    mean, var = laplace_logistic_normal(alpha)
    np.testing.assert_allclose(mean, np.log(alpha) - np.log(alpha).mean())
    np.testing.assert_allclose(var, (1 / alpha) * (1 - 2 / 3) + (1 / alpha).sum() / 9)


def test_avitm_warns_when_every_document_gets_the_same_proportions(corpus):
    from sklearn.feature_extraction.text import TfidfTransformer

    from sktopics._neural._collapse import proportions_collapse

    model = AVITM(4, random_state=0, **{**FAST, "max_iter": 167})  # 1,002 steps
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fit whose documents differ: no warning
        model.fit(corpus)
    collapsed, share, _ = proportions_collapse(model, corpus)
    assert not collapsed
    assert share == pytest.approx(model.transform(corpus).max(axis=1).mean())
    # An encoder collapsed to the prior: mu = 0 for every document (theta uniform).
    encoder = model.net_.module_.encoder
    with torch.no_grad():
        encoder.mu.weight.zero_()
        encoder.mu_bn.running_mean.copy_(encoder.mu.bias)
        encoder.mu_bn.bias.zero_()
    np.testing.assert_allclose(model.transform(corpus), 0.25, rtol=1e-5)
    for X, advice in ((corpus, "fewer topics"),
                      (TfidfTransformer().fit_transform(corpus), "tf-idf")):
        with pytest.warns(UserWarning, match=f"collapsed.*{advice}") as record:
            model._warn_if_collapsed(X)
        assert "free_bits" not in str(record[0].message)  # free_bits is already > 0


def test_the_collapse_check_asks_more_of_fractional_weights(corpus):
    from sklearn.feature_extraction.text import TfidfTransformer

    from sktopics._neural._collapse import proportions_collapse

    class Stub:  # proportions whose largest share is 2 / K for every document
        n_components = 10
        components_ = np.eye(10, 40)

        def _transform(self, X):
            theta = np.full((X.shape[0], 10), 0.8 / 9)
            theta[:, 0] = 0.2
            return theta

    counts, share, _ = proportions_collapse(Stub(), corpus)
    assert share == pytest.approx(0.2) and not counts  # counts: below 1.5 / K only
    tfidf, _, message = proportions_collapse(Stub(), TfidfTransformer().fit_transform(corpus))
    assert tfidf and "tf-idf" in message  # fractional weights: below 4 / K


def test_whole_set_statistics_puts_the_batch_norms_back(corpus):
    """Inside the block the norms use the statistics of the given documents; after it,
    also when the block raises, their running averages, modes and the module's
    training flag are as before."""
    from sktopics._neural._modules import TFBatchNorm
    from sktopics._neural._norm_statistics import whole_set_statistics

    model = ProdLDA(4, random_state=0, **{**FAST, "max_iter": 2}).fit(corpus)
    module = model.net_.module_.train()
    norms = [m for m in module.modules() if isinstance(m, TFBatchNorm)]
    before = [(n.running_mean.clone(), n.running_var.clone(), n.use_running_stats)
              for n in norms]
    for raise_inside in (False, True):
        random_state = torch.get_rng_state()
        with contextlib.suppress(RuntimeError):
            with whole_set_statistics(module, lambda: model._batches(corpus[:50]), None, None):
                # the measuring passes' noise is drawn again by the passes inside
                assert torch.equal(torch.get_rng_state(), random_state)
                encoder = module.encoder.mu_bn
                assert encoder.use_running_stats and not module.training
                assert not torch.equal(encoder.running_mean, before[norms.index(encoder)][0])
                if raise_inside:
                    raise RuntimeError
        assert module.training
        for norm, (mean, var, frozen) in zip(norms, before):
            assert torch.equal(norm.running_mean, mean) and torch.equal(norm.running_var, var)
            assert norm.use_running_stats == frozen and norm._accumulator is None


def test_a_warm_fit_takes_the_current_batch_size(corpus):
    model = ProdLDA(4, random_state=0, **{**FAST, "max_iter": 1, "batch_size": 50})
    model.fit(corpus)
    steps = model.net_.history[-1, "train_batch_count"]
    model.set_params(warm_start=True, batch_size=25).fit(corpus)
    assert model.net_.history[-1, "train_batch_count"] == 2 * steps


class _OtherRankSums:
    """A two-rank group seen from rank 0: each sum adds the other rank's value, in the
    order the collapse check asks for them (shares' total, probe size, fractional)."""

    world_size, rank = 2, 0

    def __init__(self, *others):
        self.others = list(others)

    def sum(self, value):
        return value + self.others.pop(0)


def test_the_collapse_check_reads_every_ranks_documents(corpus):
    """Data-parallel, the verdict is the mean largest share over every rank's probe:
    this rank's documents alone pass (0.3 at K = 10, above 1.5 / K); three times as
    many on the other rank at 0.05 pull the pooled mean below the bar, on every rank."""
    from sktopics._neural._collapse import proportions_collapse
    from sktopics.utils._distributed import _current

    stub = _ProportionsStub(10, 0.3, np.eye(10, corpus.shape[1]))
    here = corpus[:100]
    n = 100
    assert (np.asarray(here.sum(axis=1)) > 0).all()  # every document is probed
    assert not proportions_collapse(stub, here)[0]
    group = _OtherRankSums(0.05 * 3 * n, 3 * n, 0)
    token = _current.set(group)
    try:
        fires, share, _ = proportions_collapse(stub, here)
    finally:
        _current.reset(token)
    assert share == pytest.approx((0.3 * n + 0.05 * 3 * n) / (4 * n))
    assert fires and not group.others


class _ProportionsStub:
    """A fitted model's stand-in whose every document's largest topic share is ``top``."""

    def __init__(self, n_components, top, components, free_bits=0.25):
        self.n_components, self.top, self.free_bits = n_components, top, free_bits
        self.components_ = components

    def _transform(self, X):
        theta = np.full((X.shape[0], self.n_components),
                        (1 - self.top) / (self.n_components - 1))
        theta[:, 0] = self.top
        return theta


def _distinct_topics(n_topics, n_words):
    """Topic-word weights whose top-10 words overlap by 2 between neighbours."""
    weights = np.zeros((n_topics, n_words))
    for k in range(n_topics):
        weights[k, (8 * k + np.arange(10)) % n_words] = np.arange(10, 0, -1)
    return weights


@pytest.mark.parametrize("n_topics", [4, 5])
def test_the_fractional_bar_stays_below_one_half_at_small_k(corpus, n_topics):
    from sktopics._neural._collapse import proportions_collapse

    distinct = _distinct_topics(n_topics, corpus.shape[1])
    scaled = sp.csr_matrix(corpus, dtype=np.float64) * 3.5
    assert np.any(scaled.data % 1)  # fractional values, the counts' relative weights
    # A healthy share, fractional input: 4 / K would be 1 at K = 4 and 0.8 at K = 5.
    fires, share, _ = proportions_collapse(_ProportionsStub(n_topics, 0.55, distinct), scaled)
    assert share == pytest.approx(0.55) and not fires
    # Weak but not collapsed (between 1.5 / K and 1 / 2): the raw-counts advice only.
    fires, _, message = proportions_collapse(_ProportionsStub(n_topics, 0.45, distinct), scaled)
    assert fires and "raw counts" in message and "collapsed" not in message
    assert "near-duplicate" not in message and "share 8" not in message  # none exist
    # The same shares on counts: no warning.
    for top in (0.45, 0.55):
        assert not proportions_collapse(_ProportionsStub(n_topics, top, distinct), corpus)[0]


@pytest.mark.parametrize("n_topics", [4, 5])
def test_the_collapse_message_says_only_what_holds(corpus, n_topics):
    from sktopics._neural._collapse import proportions_collapse

    flat = 1.2 / n_topics  # below 1.5 / K: collapsed
    distinct = _distinct_topics(n_topics, corpus.shape[1])
    same = np.tile(np.linspace(1, 0, corpus.shape[1]), (n_topics, 1))
    fires, _, message = proportions_collapse(_ProportionsStub(n_topics, flat, distinct), corpus)
    assert fires and "collapsed" in message and "top words" not in message
    assert "fewer topics" in message and "free_bits" not in message  # free_bits > 0 already
    fires, _, message = proportions_collapse(
        _ProportionsStub(n_topics, flat, same, free_bits=0.0), corpus)
    assert fires and f"{n_topics} of {n_topics} topics share 8" in message
    assert "free_bits above 0" in message


def test_free_bits_floor_each_dimensions_batch_mean_kl():
    from sktopics._neural._losses import gaussian_kl

    prior_mean, prior_var = torch.zeros(3), torch.full((3,), 0.5)
    generator = torch.Generator().manual_seed(0)
    mu = torch.randn(6, 3, generator=generator) * torch.tensor([0.01, 2.0, 0.05])
    mu.requires_grad_(True)
    logvar = torch.full((6, 3), float(np.log(0.5)), requires_grad=True)  # the prior's
    exact = 0.5 * (mu ** 2 / prior_var).detach()  # per document and dimension
    kl = gaussian_kl(mu, logvar, prior_mean, prior_var)
    torch.testing.assert_close(kl, exact.sum(1))
    free = gaussian_kl(mu, logvar, prior_mean, prior_var, free_nats=0.25)
    floored = exact.mean(0) < 0.25
    assert floored.tolist() == [True, False, True]
    # averaged over the batch: sum_k max(free, mean KL_k)
    torch.testing.assert_close(free.mean(), torch.maximum(exact.mean(0), torch.tensor(0.25)).sum())
    free.sum().backward()
    assert torch.all(mu.grad[:, floored] == 0)  # no pull towards the prior there
    assert torch.all(mu.grad[:, 1] != 0)
    # a floor below every dimension's KL changes nothing, bit for bit
    low = gaussian_kl(mu, logvar, prior_mean, prior_var, free_nats=exact.mean(0).min() / 2)
    assert torch.equal(low, kl)


@pytest.mark.parametrize("cls", NEURAL)
def test_free_bits_apply_in_training_only_and_follow_the_parameter(cls, corpus):
    from sktopics._neural._losses import gaussian_kl

    model = fitted(cls, corpus, free_bits=50.0)  # a floor above every dimension's KL
    module = model.net_.module_
    assert module.free_bits == 50.0
    x = torch.as_tensor(corpus[:8].toarray(), dtype=torch.float32,
                        device=next(module.parameters()).device)
    module.train()
    y_pred = module(x)
    reconstruction, mu, logvar = y_pred
    torch.testing.assert_close(module.negative_elbo(x, y_pred), reconstruction + 4 * 50.0)
    module.eval()
    torch.testing.assert_close(module.negative_elbo(x, y_pred),
                               reconstruction + gaussian_kl(mu, logvar, module.prior_mean,
                                                            module.prior_var))
    model.set_params(free_bits=0.0, warm_start=True).fit(corpus)  # set before each fit
    assert module.free_bits == 0.0


@pytest.mark.parametrize("cls", NEURAL)
def test_free_bits_leave_a_fit_whose_dimensions_stay_above_the_floor_unchanged(cls, corpus):
    default = fitted(cls, corpus)
    elbo = fitted(cls, corpus, free_bits=0.0)
    np.testing.assert_array_equal(default.components_, elbo.components_)


def test_the_collapse_check_runs_once_per_fit(corpus, monkeypatch):
    checked = []
    monkeypatch.setattr(AVITM, "_warn_if_collapsed", lambda self, X=None: checked.append(X))
    model = AVITM(4, random_state=0, **FAST)
    for _ in range(3):  # a stream: checked on its first call only
        model.partial_fit(corpus)
    assert len(checked) == 1
    model.fit(corpus)
    model.set_params(warm_start=True).fit(corpus)
    assert len(checked) == 3


def test_a_callback_that_reads_gradients_sees_every_step(corpus):
    """The training step skips skorch's gradient notification only when no callback
    asks for it: a callback that zeroes the gradients it is handed leaves the weights
    where they started, and is called once per step."""
    from skorch.callbacks import Callback

    class ZeroGradients(Callback):
        calls = 0

        def on_grad_computed(self, net, named_parameters, **kwargs):
            type(self).calls += 1
            for _, parameter in named_parameters:
                parameter.grad.zero_()

    X = corpus
    start = fitted(ProdLDA, X, max_iter=0).net_.module_.state_dict()
    model = fitted(ProdLDA, X, callbacks=[("zero", ZeroGradients())])
    steps = sum(len(row["batches"]) for row in model.history_)
    assert ZeroGradients.calls == steps > 0
    for name, value in model.net_.module_.state_dict().items():
        if "running" not in name:  # batch-norm statistics move without gradients
            torch.testing.assert_close(value, start[name], msg=name)
