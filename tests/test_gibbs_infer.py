"""The fixed-topic inference kernel (``LDAGibbs.transform``) against exact answers."""

import itertools

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.special import gammaln
from scipy.stats import gamma, kstest

from sktopics._gibbs._infer import CellCorpus, infer_doc_topic, log_gamma

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
    # [10, 1, 2] has a cell with 10 tokens: a padded, masked block (width 16).
    exact = _exact_posterior_mean(counts)
    n_docs = 3000  # independent chains on copies of the document
    cells = CellCorpus(sp.csr_matrix(np.tile(counts, (n_docs, 1))), "cpu")
    if max(counts) > 8:
        assert any(not exact_block for *_, exact_block in cells.blocks)
    theta = infer_doc_topic(cells, torch.tensor(PHI.T, dtype=torch.float32),
                            torch.tensor(ALPHA), 60, 20,
                            generator=torch.Generator().manual_seed(0)).numpy()
    mean = theta.mean(0)
    se = theta.std(0) / np.sqrt(n_docs)
    assert np.all(np.abs(mean - exact) < 5 * se + 1e-3), (mean, exact, se)


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
    X = sp.csr_matrix(np.array([[3, 0, 17], [1, 9, 0], [0, 0, 0]]))
    cells = CellCorpus(X, "cpu")
    assert cells.n_tokens == X.sum()
    assert int(cells.count.sum()) == X.sum()
    np.testing.assert_array_equal(cells.doc_length.numpy(), [20, 10, 0])
    dense = np.zeros(X.shape, dtype=np.int64)
    np.add.at(dense, (cells.doc.numpy(), cells.word.numpy()), cells.count.numpy())
    np.testing.assert_array_equal(dense, X.toarray())
    for start, stop, width, exact in cells.blocks:
        count = cells.count[start:stop]
        assert (count <= width).all() and (count == width).all() == exact


@pytest.mark.parametrize("shape", [0.02, 0.5, 1.0, 3.7, 250.0])
def test_log_gamma_is_gamma_distributed(shape):
    draws = log_gamma(torch.full((20000,), shape), torch.Generator().manual_seed(0)).double()
    if shape < 0.1:
        # Most draws are far below float32's smallest normal: test log G instead;
        # log(Gamma(a)) = log(Gamma(a + 1)) + log(U) / a has CDF F(e**x).
        assert kstest(draws.numpy(), lambda x: gamma.cdf(np.exp(x), shape)).pvalue > 1e-3
    else:
        assert kstest(draws.exp().numpy(), gamma(shape).cdf).pvalue > 1e-3
