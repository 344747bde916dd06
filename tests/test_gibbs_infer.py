"""The fixed-topic inference kernel (``LDAGibbs.transform``) against exact answers."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.special import gammaln
from scipy.stats import beta, gamma, kstest

from sktopics import LDAGibbs
from sktopics._gibbs._infer import CellCorpus, SharedGammas, infer_doc_topic, log_gamma
from sktopics._kernels._infer import infer_documents
from sktopics._random import stream_key

# Topics over 3 words and an asymmetric prior.
PHI = np.array([[0.6, 0.3, 0.1], [0.1, 0.2, 0.7]])
ALPHA = np.array([0.3, 0.8])


def _exact_posterior_mean(counts):
    """E[theta | w, phi, alpha] by enumerating every topic assignment (K**N terms)."""
    words = np.repeat(np.arange(len(counts)), counts)
    K = PHI.shape[0]
    z = np.array(list(itertools.product(range(K), repeat=len(words))))
    n_k = np.stack([(z == k).sum(1) for k in range(K)], 1)
    log_p = np.log(PHI[z, words]).sum(1) + gammaln(n_k + ALPHA).sum(1)
    weight = np.exp(log_p - log_p.max())
    weight /= weight.sum()
    return weight @ ((n_k + ALPHA) / (len(words) + ALPHA.sum()))


@pytest.mark.parametrize("counts", [[2, 1, 1], [10, 1, 2]])
def test_transform_kernel_matches_enumerated_posterior_mean(counts):
    # [10, 1, 2] has a cell of 10 tokens: sub-cells of widths 8 and 2.
    exact = _exact_posterior_mean(counts)
    # Copies of a document within one call share their Gamma tables, so they are
    # not independent; independent calls are, and give the standard error.
    n_calls, n_copies = 30, 100
    cells = CellCorpus(sp.csr_matrix(np.tile(counts, (n_copies, 1))), "cpu")
    means = np.array([
        infer_doc_topic(cells, torch.tensor(PHI.T, dtype=torch.float32), torch.tensor(ALPHA),
                        60, 20, generator=torch.Generator().manual_seed(seed)).numpy().mean(0)
        for seed in range(n_calls)])
    mean, se = means.mean(0), means.std(0, ddof=1) / np.sqrt(n_calls)
    assert np.all(np.abs(mean - exact) < 5 * se + 1e-3), (mean, exact, se)


@pytest.mark.parametrize("counts", [[2, 1, 1], [10, 1, 2]])
def test_compiled_transform_kernel_matches_enumerated_posterior_mean(counts):
    # A document's uniforms are keyed by its tokens: copies in one call are the same
    # chain, so independent chains come from calls with different keys.
    exact = _exact_posterior_mean(counts)
    X = sp.csr_matrix(np.array([counts], dtype=np.int64))
    word_topic = np.ascontiguousarray(PHI.T, dtype=np.float32)
    alpha = ALPHA.astype(np.float32)
    means = np.empty((400, len(ALPHA)))
    for seed in range(len(means)):
        keys = np.array([stream_key(seed, 10, 0)], dtype=np.int64)
        infer_documents(X, word_topic, alpha, 60, 20, keys, means[seed:], 0, 1)
    mean, se = means.mean(0), means.std(0, ddof=1) / np.sqrt(len(means))
    assert np.all(np.abs(mean - exact) < 5 * se + 1e-3), (mean, exact, se)
    assert se.max() < 0.01  # the check has power: the gap between the topics' words is far wider


@pytest.mark.cpu
def test_compiled_transform_is_the_same_in_any_batch_and_on_any_threads():
    dense = np.ceil(sp.random(40, 30, density=0.3, random_state=0).toarray() * 12)
    dense[5] = dense[3]  # two equal documents
    X = sp.csr_matrix(dense)
    phi = np.random.default_rng(0).dirichlet(np.ones(30), size=5)
    model = LDAGibbs(n_components=5, random_state=0, transform_max_iter=20, device="cpu").fit(X)
    model.components_ = phi
    whole = model.transform(X)
    np.testing.assert_array_equal(whole[5], whole[3])
    np.testing.assert_array_equal(model.transform(X[10:20]), whole[10:20])
    np.testing.assert_array_equal(model.transform(X[::-1]), whole[::-1])
    np.testing.assert_array_equal(model.set_params(n_jobs=3).transform(X), whole)
    np.testing.assert_allclose(whole.sum(1), 1.0)
    # The same counts stored otherwise: unsorted, a duplicate entry, an explicit zero.
    coo = X.tocoo()
    order = np.random.default_rng(1).permutation(coo.nnz)
    rows, cols, data = coo.row[order], coo.col[order], coo.data[order]
    messy = sp.csr_matrix((np.r_[data - 1, np.ones(coo.nnz), 0.0],
                           (np.r_[rows, rows, 0], np.r_[cols, cols, 29])), shape=X.shape)
    messy.has_canonical_format = False
    before = messy.copy()
    np.testing.assert_array_equal(model.transform(messy), whole)
    np.testing.assert_array_equal(messy.indices, before.indices)  # not modified


def test_transform_kernel_is_independent_of_chunk_size():
    X = sp.random(40, 30, density=0.3, random_state=0, format="csr")
    X.data = np.ceil(X.data * 12)
    phi = np.random.default_rng(0).dirichlet(np.ones(30), size=5)
    args = (torch.tensor(phi.T, dtype=torch.float32), torch.full((5,), 0.2, dtype=torch.float64),
            10, 5)
    results = [
        infer_doc_topic(CellCorpus(X, "cpu"), *args, generator=torch.Generator().manual_seed(1),
                        chunk_elements=size).numpy()
        for size in (64 * 5, 1 << 19)
    ]
    np.testing.assert_array_equal(results[0], results[1])


def test_cells_cover_every_token_once():
    X = sp.csr_matrix(np.array([[6, 0, 17], [1, 9, 0], [0, 0, 0], [7, 5, 0]]))
    cells = CellCorpus(X, "cpu")
    assert cells.n_tokens == X.sum()
    np.testing.assert_array_equal(cells.doc_length.numpy(), [23, 10, 0, 12])
    dense = np.zeros(X.shape, dtype=np.int64)
    for start, stop, width in cells.blocks:
        np.add.at(dense, (cells.doc[start:stop].numpy(), cells.word[start:stop].numpy()), width)
    np.testing.assert_array_equal(dense, X.toarray())
    assert [width for *_, width in cells.blocks] == [1, 2, 3, 4, 8]


@pytest.mark.parametrize("n_docs", [1, 3, 40])
def test_shared_gamma_tables_give_dirichlet_rows(n_docs):
    # Counts below, at and above the table (32), with several bits set; each call
    # reads a fresh table, so the first row of successive calls is an i.i.d. sample.
    counts = torch.tensor([0, 1, 5, 31, 32, 33, 64, 100, 1000, 4097], dtype=torch.int32)
    alpha = torch.linspace(0.3, 2.0, len(counts))
    gammas = SharedGammas(alpha, int(counts.sum()), n_docs, torch.Generator().manual_seed(0))
    X = counts.expand(n_docs, -1).contiguous()
    theta = np.array([gammas.draw_theta(X)[0].double().numpy() for _ in range(3000)])
    theta /= theta.sum(1, keepdims=True)
    a = (alpha.double() + counts).numpy()
    for k in range(len(counts)):  # marginals of Dirichlet(a) are Beta(a_k, sum(a) - a_k)
        assert kstest(theta[:, k], beta(a[k], a.sum() - a[k]).cdf).pvalue > 1e-3, k


@pytest.mark.parametrize("shape", [0.02, 0.5, 1.0, 3.7, 250.0])
def test_log_gamma_is_gamma_distributed(shape):
    draws = log_gamma(torch.full((20000,), shape), torch.Generator().manual_seed(0)).double()
    if shape < 0.1:
        # Most draws are far below float32's smallest normal: test log G instead;
        # log(Gamma(a)) = log(Gamma(a + 1)) + log(U) / a has CDF F(e**x).
        assert kstest(draws.numpy(), lambda x: gamma.cdf(np.exp(x), shape)).pvalue > 1e-3
    else:
        assert kstest(draws.exp().numpy(), gamma(shape).cdf).pvalue > 1e-3
