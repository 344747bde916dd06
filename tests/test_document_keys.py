"""A document's random numbers are keyed by its counts, not by its row.

``sktopics._random.document_keys`` gives each document a key from its non-zero cells;
every evaluator derives its random numbers from it, so a document's estimate is the
same alone, at any row and among any other documents, and identical documents get
identical estimates (each still unbiased; they share their Monte Carlo error).
"""

import numpy as np
import pytest
import scipy.sparse as sp
from numpy.testing import assert_allclose, assert_array_equal

from sktopics import PAMVI, ProdLDA
from sktopics._random import document_keys
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import (
    ais_log_likelihood,
    document_completion_log_likelihood,
    importance_sampling_log_likelihood,
    iteration_ais,
    left_to_right_log_likelihood,
    ratio_ais,
)

from ._instances import TEST_DEVICE

# the models' fits are short on purpose
pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")

N_WORDS = 12
#: Short documents, so that ratio-AIS's exact start can enumerate their assignments.
X, _, _ = make_lda_corpus(n_samples=10, n_features=N_WORDS, n_components=3, doc_length=8,
                          random_state=0)
X = sp.csr_matrix(X, dtype=np.float64)
#: Other documents, to put around X's.
OTHER = sp.csr_matrix(make_lda_corpus(n_samples=6, n_features=N_WORDS, n_components=3,
                                      doc_length=5, random_state=1)[0], dtype=np.float64)

_rng = np.random.default_rng(0)
PHI = _rng.dirichlet(np.full(N_WORDS, 0.5), 3)
ALPHA = _rng.uniform(0.2, 1.0, 3)
PHI_B = _rng.dirichlet(np.full(N_WORDS, 0.5), 3)
ALPHA_B = np.full(3, 0.5)


def test_corpus_documents_are_distinct():
    assert np.unique(X.toarray(), axis=0).shape[0] == X.shape[0]
    assert np.all(np.asarray(X.sum(1)).ravel() > 0)


# ------------------------------------------------------------------------ the keys


def test_keys_do_not_depend_on_rows_or_other_documents():
    keys = document_keys(X)
    assert keys.dtype == np.int64 and keys.shape == (X.shape[0],)
    assert np.unique(keys).size == X.shape[0]  # distinct documents, distinct keys
    order = np.random.default_rng(1).permutation(X.shape[0])
    assert_array_equal(document_keys(X[order]), keys[order])
    assert_array_equal(document_keys(X[3:4]), keys[3:4])
    mixed = sp.vstack([OTHER[:2], X[[5]], OTHER[2:], X[[5, 0]]]).tocsr()
    assert_array_equal(document_keys(mixed)[[2, 7, 8]], keys[[5, 5, 0]])


def test_empty_documents_share_one_fixed_key():
    empty = document_keys(sp.csr_matrix((3, N_WORDS)))
    assert np.all(empty == empty[0])
    assert document_keys(sp.csr_matrix((1, 2 * N_WORDS)))[0] == empty[0]
    assert empty[0] not in document_keys(X)


def test_keys_depend_on_the_counts_not_on_how_they_are_stored():
    dense = np.array([[2, 0, 1, 3], [0, 0, 0, 0], [0, 0.5, 0, 0]])
    keys = document_keys(sp.csr_matrix(dense))
    assert_array_equal(document_keys(sp.csr_matrix(dense[:2].astype(np.int32))), keys[:2])
    # unsorted indices, duplicated entries (summed) and explicit zeros
    data = np.array([1.0, 1.0, 3.0, 1.0, 0.0, 0.0, 0.5])
    indices = np.array([2, 0, 3, 0, 1, 1, 1])
    stored = sp.csr_matrix((data, indices, np.array([0, 5, 6, 7])), shape=dense.shape)
    assert not stored.has_canonical_format
    assert_array_equal(document_keys(stored), keys)
    assert_array_equal(stored.indices, indices)  # the caller's matrix is left alone


def test_one_count_or_one_column_changes_the_key():
    base = np.array([[2.0, 0, 1, 3, 0]])
    key = document_keys(sp.csr_matrix(base))[0]
    variants = []
    for j in range(base.shape[1]):  # one count up (a new column where it was 0)
        v = base.copy()
        v[0, j] += 1
        variants.append(v)
    for j, k in [(0, 1), (2, 4), (3, 1)]:  # one cell moved to another column
        v = base.copy()
        v[0, k], v[0, j] = v[0, j], 0
        variants.append(v)
    swapped = base.copy()  # the same counts on the same columns, paired otherwise
    swapped[0, [0, 3]] = swapped[0, [3, 0]]
    variants.append(swapped)
    ulp = base.copy()  # the exact float64 pattern of a fractional count
    ulp[0, 2] = np.nextafter(1.0, 2.0)
    variants.append(ulp)
    others = document_keys(sp.csr_matrix(np.vstack(variants)))
    assert key not in others
    assert np.unique(others).size == len(variants)


def test_keys_of_many_distinct_documents_do_not_collide():
    counts = np.random.default_rng(2).integers(0, 3, (4000, 8))
    distinct = np.unique(counts, axis=0)
    assert np.unique(document_keys(sp.csr_matrix(distinct))).size == distinct.shape[0]


# -------------------------------------------------------------------- the evaluators


@pytest.fixture(scope="module")
def prodlda():
    return ProdLDA(n_components=2, max_iter=3, batch_size=5, hidden_sizes=(8, 8),
                   device=TEST_DEVICE, random_state=0).fit(X)


@pytest.fixture(scope="module")
def pamvi():
    return PAMVI(structure=(2, 3), max_iter=3, batch_size=5, hidden_sizes=(8, 8),
                 device=TEST_DEVICE, random_state=0).fit(X)


def _stack(*results):
    return np.stack([np.asarray(r, dtype=np.float64) for r in results], axis=1)


def _ratio(counts, **kw):
    res = ratio_ais((PHI, ALPHA), (PHI_B, ALPHA_B), counts, direction="both",
                    n_temperatures=4, n_chains=3, random_state=0, **kw)
    return _stack(res.per_document, res.forward, res.reverse)


#: {case: (per-document estimates of a count matrix, the estimator it needs, rtol)}.
#: No estimate is coupled across documents (resampling, HMC step tuning and ratio-AIS
#: starts are per document): the z-space and left-to-right engines give the same
#: values to float64 rounding; the encoder (float32, run on a batch of documents) and
#: the HMC trajectories that start from it agree to its rounding.
CASES = {
    "ais collapsed": (lambda m, c: ais_log_likelihood(
        (PHI, ALPHA), c, n_temperatures=6, n_chains=4, kernel="collapsed",
        resample_threshold=0.7, random_state=0).per_document, None, 1e-12),
    "ais blocked": (lambda m, c: ais_log_likelihood(
        (PHI, ALPHA), c, n_temperatures=6, n_chains=4, kernel="blocked",
        random_state=0).per_document, None, 1e-12),
    "ais pam paths": (lambda m, c: ais_log_likelihood(
        m, c, n_temperatures=6, n_chains=3, random_state=0).per_document, "pamvi", 1e-12),
    "ais hmc": (lambda m, c: ais_log_likelihood(
        m, c, n_temperatures=5, n_chains=3, target_acceptance=0.65, random_state=0).per_document, "prodlda", 1e-6),
    "left-to-right": (lambda m, c: left_to_right_log_likelihood(
        (PHI, ALPHA), c, n_particles=8, n_filters=2, random_state=0).per_document, None, 1e-12),
    "left-to-right rejuvenated": (lambda m, c: left_to_right_log_likelihood(
        (PHI, ALPHA), c, n_particles=4, n_filters=1, rejuvenate=True,
        random_state=0).per_document, None, 1e-12),
    "left-to-right pam paths": (lambda m, c: left_to_right_log_likelihood(
        m, c, n_particles=8, random_state=0).per_document, "pamvi", 1e-12),
    "document completion": (lambda m, c: document_completion_log_likelihood(
        (PHI, ALPHA), c, n_particles=8, random_state=0).per_document, None, 1e-12),
    "importance sampling": (lambda m, c: importance_sampling_log_likelihood(
        (PHI, ALPHA), c, n_samples=16, random_state=0).per_document, None, 1e-12),
    "importance sampling encoder": (lambda m, c: importance_sampling_log_likelihood(
        m, c, n_samples=16, random_state=0).per_document, "prodlda", 1e-6),
    "ratio-ais": (lambda m, c: _ratio(c), None, 1e-12),
    "ratio-ais exact start": (lambda m, c: _ratio(c, start="exact"), None, 1e-12),
    "iteration-ais": (lambda m, c: _stack(*(r.per_document for r in iteration_ais(
        [(PHI_B, ALPHA_B), (0.5 * (PHI + PHI_B), ALPHA_B), (PHI, ALPHA_B)], c,
        n_start_temperatures=4, n_segment_temperatures=3, n_chains=3, resample_threshold=0.8,
        random_state=0))), None, 1e-12),
}


@pytest.mark.filterwarnings("ignore:The forward and reverse runs disagree")
@pytest.mark.parametrize("case", list(CASES))
def test_a_documents_estimate_depends_on_its_counts_alone(case, request):
    estimate, fixture, rtol = CASES[case]
    model = request.getfixturevalue(fixture) if fixture else None
    n = X.shape[0]
    values = estimate(model, X)
    assert np.all(np.isfinite(values))

    def close(got, expected):
        assert_allclose(got, expected, rtol=rtol, atol=1e-12 if rtol < 1e-9 else 0.0)

    # at other rows
    order = np.random.default_rng(3).permutation(n)
    close(estimate(model, X[order]), values[order])
    # alone
    for i in (0, n - 1):
        close(estimate(model, X[i : i + 1])[0], values[i])
    # among other documents, at other rows
    mixed = sp.vstack([OTHER[:3], X[[1]], OTHER[3:], X[[0]]]).tocsr()
    close(estimate(model, mixed)[[3, mixed.shape[0] - 1]], values[[1, 0]])
    # identical documents get identical estimates
    twice = estimate(model, X[[2, 2, 1, 2]])
    close(twice[[0, 1, 3]], values[[2, 2, 2]])
    close(twice[2], values[1])


@pytest.mark.parametrize("estimate", [left_to_right_log_likelihood, ais_log_likelihood])
def test_identical_documents_share_their_error_in_the_total(estimate):
    """Copies of a document draw the same random numbers, so the standard error of the
    total counts each group of copies once, times its size, not as independent draws."""
    kwargs = {"n_temperatures": 20, "n_chains": 4} if estimate is ais_log_likelihood else {}
    model = (PHI, ALPHA)
    copies = [0, 0, 0, 1, 1, 2]
    single = estimate(model, X[[0, 1, 2]], random_state=0, **kwargs)
    result = estimate(model, X[copies], random_state=0, **kwargs)
    se = single.per_document_stderr
    assert np.all(se > 0)
    assert result.stderr == pytest.approx(np.sqrt((3 * se[0]) ** 2 + (2 * se[1]) ** 2 + se[2] ** 2),
                                          rel=1e-9)
    assert result.stderr > np.sqrt(np.sum(result.per_document_stderr ** 2)) * 1.05


def test_an_error_that_cannot_be_estimated_stays_unknown_in_the_total():
    """One particle filter (or one importance sample) gives no per-document error: the
    total's error is NaN, not 0."""
    from sktopics.model_selection import importance_sampling_log_likelihood

    one_filter = left_to_right_log_likelihood((PHI, ALPHA), X, n_filters=1, random_state=0)
    one_sample = importance_sampling_log_likelihood((PHI, ALPHA), X, n_samples=1,
                                                    random_state=0)
    for result in (one_filter, one_sample):
        assert np.isnan(result.per_document_stderr).any()
        assert np.isnan(result.stderr) and np.isnan(result.per_token_stderr)
    two_filters = left_to_right_log_likelihood((PHI, ALPHA), X, n_filters=2, random_state=0)
    assert np.isfinite(two_filters.stderr) and two_filters.stderr > 0
