"""``score_samples``: the per-document held-out log-likelihood behind ``score``."""

import itertools
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from numpy.testing import assert_allclose
from sklearn.exceptions import NotFittedError

from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA
from sktopics.datasets import make_lda_corpus
from sktopics.utils import EmptyDocumentWarning

from ._instances import FAST_PARAMS, TEST_DEVICE
from ._ranks import run_ranks

# the fits are short on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

X, _, _ = make_lda_corpus(n_samples=60, n_features=30, n_components=3, doc_length=30,
                          random_state=0)
X = sp.csr_matrix(X)
X_TRAIN, X_TEST = X[:40], X[40:]

#: The encoder-based importance samplers run the encoder in float64 on a batch shaped
#: by the documents scored together: a document's value is the same to float64
#: rounding in any batch (float32 products differ with the batch's shape, by about
#: 1e-7 relative).
RTOL = 1e-12


def _fast(cls, **params):
    return cls(**{**FAST_PARAMS[cls], "n_jobs": 1, "random_state": 0, **params})


@pytest.fixture(scope="module", params=list(FAST_PARAMS), ids=lambda c: c.__name__)
def model(request):
    return _fast(request.param).fit(X_TRAIN)


def _without_rows(X, rows):
    """``X`` with the given rows emptied (the other rows keep their place)."""
    keep = np.ones(X.shape[0])
    keep[rows] = 0.0
    out = sp.diags(keep) @ X
    out.eliminate_zeros()
    return sp.csr_matrix(out)


def _lengths(X):
    return np.asarray(X.sum(axis=1)).ravel()


# --------------------------------------------------------------------------- the values


@pytest.mark.parametrize("cls", [AVITM, ProdLDA, PAMVI, MoLDA], ids=lambda c: c.__name__)
def test_a_document_scores_the_same_in_any_batch_at_the_defaults(cls):
    """At the default architecture and batch size (where float32 products would differ
    with the batch's shape), a document's proportions and log-likelihood are the same
    alone, in a slice and in the whole corpus, to float64 rounding."""
    structure = {PAMVI: dict(structure=(2, 3)), MoLDA: dict(component_sizes=(2, 3))}
    corpus, _, _ = make_lda_corpus(n_samples=300, n_features=200, n_components=5,
                                   doc_length=60, random_state=1)
    model = cls(max_iter=2, device=TEST_DEVICE, random_state=0,
                **structure.get(cls, {})).fit(corpus)
    rows = [0, 7, 150, 299]
    theta, values = model.transform(corpus), model.score_samples(corpus)
    for start, stop in ((0, 1), (5, 12), (140, 299)):
        part = corpus[start:stop]
        assert_allclose(model.transform(part), theta[start:stop], rtol=1e-12, atol=1e-15)
        assert_allclose(model.score_samples(part), values[start:stop], rtol=1e-12)
    alone = [model.score_samples(corpus[[r]])[0] for r in rows]
    assert_allclose(alone, values[rows], rtol=1e-12)


def test_shape_and_consistency_with_score(model):
    values = model.score_samples(X_TEST)
    assert values.shape == (X_TEST.shape[0],) and values.dtype == np.float64
    assert np.all(np.isfinite(values))
    assert_allclose(model.score(X_TEST), values.sum() / X_TEST.sum(), rtol=1e-12)
    assert_allclose(model.perplexity(X_TEST), np.exp(-values.sum() / X_TEST.sum()),
                    rtol=1e-12)
    # a dense array gives the same values
    assert_allclose(model.score_samples(X_TEST.toarray()), values, rtol=RTOL)


def test_consistency_with_score_on_fractional_counts(model):
    if model._integer_counts:
        pytest.skip("a Gibbs model rounds fractional counts")
    X_frac = X_TEST * 0.5  # the importance sampler of every model
    values = model.score_samples(X_frac)
    assert np.all(np.isfinite(values))
    assert_allclose(model.score(X_frac), values.sum() / X_frac.sum(), rtol=1e-12)


def _exact_lda_log_likelihood(words, phi, alpha):
    """log p(w) of a token sequence under LDA, by enumerating the topic assignments."""
    total, n_topics, a_sum = 0.0, len(alpha), alpha.sum()
    for z in itertools.product(range(n_topics), repeat=len(words)):
        counts, p = np.zeros(n_topics), 1.0
        for n, (w, k) in enumerate(zip(words, z)):
            p *= (counts[k] + alpha[k]) / (n + a_sum) * phi[k, w]
            counts[k] += 1
        total += p
    return np.log(total)


def test_lda_values_match_exact_enumeration():
    lda = _fast(LDAGibbs, max_iter=20).fit(X_TRAIN)
    phi = lda.components_ / lda.components_.sum(axis=1, keepdims=True)
    alpha = np.asarray(lda.doc_topic_prior_, dtype=np.float64)
    rng = np.random.default_rng(0)
    for length in (1, 4):
        docs = [rng.integers(0, X.shape[1], length) for _ in range(30)]
        counts = np.zeros((len(docs), X.shape[1]))
        for d, words in enumerate(docs):
            np.add.at(counts[d], words, 1)
        values = lda.score_samples(counts)
        exact = np.array([_exact_lda_log_likelihood(w, phi, alpha) for w in docs])
        if length == 1:  # the filter's first step is the exact predictive probability
            assert_allclose(values, exact, rtol=1e-12)
        else:  # 32 particles: a few hundredths of a nat per document
            assert np.abs(values - exact).max() < 0.5
            assert abs(np.mean(values - exact)) < 0.05


# --------------------------------------------------------------- one document at a time


def test_values_do_not_depend_on_the_other_documents(model):
    values = model.score_samples(X_TEST)
    kept = [0, 3, 7]
    # the other rows hold other documents (training ones), the kept rows stay in place
    other = X_TRAIN[: X_TEST.shape[0]].tolil()
    other[kept] = X_TEST[kept]
    assert_allclose(model.score_samples(other.tocsr())[kept], values[kept], rtol=RTOL)
    # the random numbers are keyed by the document's counts, not its row: alone, or in
    # another row, a document gets the value it gets in X
    for i in kept:
        alone = model.score_samples(X_TEST[i : i + 1])
        assert alone.shape == (1,)
        assert_allclose(alone[0], values[i], rtol=RTOL)
    order = np.random.default_rng(0).permutation(X_TEST.shape[0])
    assert_allclose(model.score_samples(X_TEST[order]), values[order], rtol=RTOL)
    # so identical documents get identical values
    twice = model.score_samples(X_TEST[[1, 4, 1, 1]])
    assert_allclose(twice[[0, 2, 3]], values[1], rtol=RTOL)
    assert_allclose(twice[1], values[4], rtol=RTOL)


@pytest.mark.filterwarnings("ignore::sktopics.utils.FractionalCountsWarning")
def test_a_fractional_document_does_not_change_the_others(model):
    """Each document's estimator follows from its own counts: a row of fractional
    counts beside integer ones leaves the integer rows' values as they are alone."""
    values = model.score_samples(X_TEST)
    fractional = sp.csr_matrix(0.5 * X_TEST[[2]])
    mixed = sp.vstack([X_TEST, fractional]).tocsr()
    both = model.score_samples(mixed)
    assert_allclose(both[:-1], values, rtol=RTOL)
    assert_allclose(both[-1], model.score_samples(fractional)[0], rtol=RTOL)


def test_empty_documents_have_log_likelihood_zero(model):
    values = model.score_samples(X_TEST)
    empty = [2, 5]
    X_empty = _without_rows(X_TEST, empty)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EmptyDocumentWarning)
        got = model.score_samples(X_empty)
    assert np.all(got[empty] == 0.0)
    others = np.setdiff1d(np.arange(X_TEST.shape[0]), empty)
    assert_allclose(got[others], values[others], rtol=RTOL)
    # they add nothing to the score's sum and no token to its count
    assert_allclose(model.score(X_empty), got.sum() / X_empty.sum(), rtol=1e-12)
    # fractional counts take the importance sampler, whose weights average 1 only in
    # expectation: an empty document is still exactly 0
    if not model._integer_counts:
        assert np.all(model.score_samples(X_empty * 0.5)[empty] == 0.0)
    nothing = sp.csr_matrix(X_TEST.shape)
    assert np.all(model.score_samples(nothing) == 0.0)
    with pytest.raises(ValueError, match="at least one token"):
        model.score(nothing)


# ------------------------------------------------------------------- off-domain texts


#: Training sweeps or epochs after which every model has learnt that the second
#: vocabulary is not its own.
OFF_DOMAIN_ITER = {LDAGibbs: 20, AVITM: 150, ProdLDA: 150}


@pytest.mark.parametrize("cls", list(FAST_PARAMS), ids=lambda c: c.__name__)
def test_documents_from_another_vocabulary_score_lower_per_token(cls):
    """Two domains with disjoint vocabularies: a model fitted on the first gives the
    second's words only what smoothing leaves them."""
    n_words = 20
    first, _, _ = make_lda_corpus(n_samples=90, n_features=n_words, n_components=3,
                                  doc_length=30, random_state=0)
    second, _, _ = make_lda_corpus(n_samples=30, n_features=n_words, n_components=3,
                                   doc_length=30, random_state=1)
    in_domain = sp.hstack([first, sp.csr_matrix((90, n_words))]).tocsr()
    off_domain = sp.hstack([sp.csr_matrix((30, n_words)), second]).tocsr()
    model = _fast(cls, max_iter=OFF_DOMAIN_ITER.get(cls, 20)).fit(in_domain[:60])
    held_out = in_domain[60:]
    per_token_in = model.score_samples(held_out) / _lengths(held_out)
    per_token_off = model.score_samples(off_domain) / _lengths(off_domain)
    assert per_token_off.max() < per_token_in.min() - 1.0


# -------------------------------------------------------------------------- validation


@pytest.mark.parametrize("cls", list(FAST_PARAMS), ids=lambda c: c.__name__)
def test_not_fitted(cls):
    with pytest.raises(NotFittedError):
        _fast(cls).score_samples(X_TEST)


def test_invalid_input_gets_the_errors_of_score(model):
    bad = {
        "n_features": X_TEST[:, :-1],
        "negative": -X_TEST,
        "nan": np.full((2, X.shape[1]), np.nan),
        "no documents": sp.csr_matrix((0, X.shape[1])),
    }
    for name, X_bad in bad.items():
        with pytest.raises(ValueError) as from_score:
            model.score(X_bad)
        with pytest.raises(ValueError) as from_samples:
            model.score_samples(X_bad)
        assert str(from_samples.value) == str(from_score.value), name
    with pytest.raises(ValueError, match="29 features.*expecting 30 features"):
        model.score_samples(X_TEST[:, :-1])


def test_n_jobs_sets_the_threads_inside(model, two_threads, monkeypatch):
    seen = []
    original = type(model)._score_samples

    def spy(self, X):
        seen.append(torch.get_num_threads())
        return original(self, X)

    monkeypatch.setattr(type(model), "_score_samples", spy)
    model.score_samples(X_TEST)
    model.score(X_TEST)
    assert seen == [1, 1] and torch.get_num_threads() == 2


# ------------------------------------------------------------------------ data-parallel


#: The ranks' shares of the held-out documents: 8 and 12, rank 1's with an empty row.
SHARES = [X_TEST[:8], _without_rows(X_TEST[8:], [4])]


def _scenario(rank, models):
    from sktopics.distributed import data_parallel

    found = {}
    with data_parallel():
        for name, model in models.items():
            found[name] = (model.score_samples(SHARES[rank]), model.score(SHARES[rank]))
        lda = models["LDAGibbs"]
        # a rank without tokens: its values are 0, the score is the other rank's
        share = SHARES[0] if rank == 0 else sp.csr_matrix((3, X.shape[1]))
        found["no tokens"] = (lda.score_samples(share), lda.score(share))
        try:
            lda.score_samples(SHARES[rank][:, : X.shape[1] - rank])
        except ValueError as exc:
            found["n_features"] = str(exc)
    return found


def test_data_parallel_values_are_the_ranks_rows_of_the_whole(tmp_path):
    import torch.distributed as dist

    if not dist.is_available() or not dist.is_gloo_available():
        pytest.skip("needs torch.distributed with gloo")
    if TEST_DEVICE != "cpu":
        pytest.skip("the gloo ranks run on the CPU")
    # one left-to-right filter, one encoder-based importance sampler
    models = {"LDAGibbs": _fast(LDAGibbs).fit(X_TRAIN), "ProdLDA": _fast(ProdLDA).fit(X_TRAIN)}
    results = run_ranks(_scenario, tmp_path, models, deadline=300)
    for found in results:
        assert not isinstance(found, Exception), found
    whole = sp.vstack(SHARES).tocsr()
    for name, model in models.items():
        expected = model.score_samples(whole)
        local = [found[name][0] for found in results]
        assert [v.shape for v in local] == [(8,), (12,)]
        assert_allclose(np.concatenate(local), expected, rtol=RTOL)
        assert local[1][4] == 0.0
        for found in results:
            assert_allclose(found[name][1], model.score(whole), rtol=RTOL)
    lda = models["LDAGibbs"]
    no_tokens = [found["no tokens"] for found in results]
    assert np.all(no_tokens[1][0] == 0.0)
    assert_allclose(no_tokens[0][0], lda.score_samples(SHARES[0]), rtol=RTOL)
    for _, score in no_tokens:
        assert_allclose(score, lda.score(SHARES[0]), rtol=RTOL)
    for found in results:  # one rank's bad input is refused on every rank
        assert "rank 1" in found["n_features"] and "features" in found["n_features"]
