"""The sparse training path of the VAEs against dense autograd (values and gradients)."""

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sktopics._neural._data import CSRBatchIterator, CSRDataset, DeviceCSR
from sktopics._neural._losses import mixture_nll, product_of_experts_nll, reconstruction_nll
from sktopics._neural._modules import Dropout, ProductOfExpertsDecoder, TFBatchNorm
from sktopics._neural._sparse import InputLinear


def _corpus(n_rows=12, n_columns=9, seed=0):
    rng = np.random.default_rng(seed)
    dense = rng.poisson(0.7, (n_rows, n_columns)).astype(np.float32)
    dense[3] = 0.0  # an empty row: an empty bag
    dense[:, 4] = 0.0  # a column no row uses
    return sp.csr_matrix(dense), dense


def _sparse(X, rows):
    return next(DeviceCSR(X, "cpu").sparse_batches([np.asarray(rows)]))


@pytest.mark.parametrize("n_columns", [9, 70_000])  # radix sort, then the wide-key sort
def test_sparse_batch_holds_the_rows_in_both_orders(n_columns):
    X, dense = _corpus(n_columns=n_columns)
    rows = [7, 0, 3, 11, 7]  # unsorted, repeated, with the empty row
    x = _sparse(X, rows)
    np.testing.assert_array_equal(x.to_dense().numpy(), dense[rows])
    np.testing.assert_array_equal(x.totals().numpy(), dense[rows].sum(1))
    by_column = x.by_column
    columns = x.columns[by_column.order]
    assert torch.all(columns[1:] >= columns[:-1])  # column-major
    np.testing.assert_array_equal(by_column.rows.numpy(), x.rows[by_column.order].numpy())
    np.testing.assert_array_equal(by_column.values.numpy(), x.values[by_column.order].numpy())
    np.testing.assert_array_equal(by_column.present.numpy(), np.flatnonzero(dense[rows].any(0)))
    np.testing.assert_array_equal(columns[by_column.bounds[:-1]].numpy(), by_column.present.numpy())


def test_input_linear_on_sparse_rows_matches_the_dense_product():
    X, dense = _corpus()
    rows = [5, 1, 3, 8, 1, 10]
    layer = InputLinear(X.shape[1], 4).double()
    with torch.no_grad():
        layer.bias.normal_(generator=torch.Generator().manual_seed(1))
    x = _sparse(X, rows)
    x.values = x.values.double()
    out = layer(x)
    grad_out = torch.randn(out.shape, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    (out * grad_out).sum().backward()
    sparse_grads = [p.grad.clone() for p in layer.parameters()]
    layer.zero_grad()
    counts = torch.from_numpy(dense[rows]).double()
    expected = counts @ layer.weight + layer.bias  # autograd through the dense product
    (expected * grad_out).sum().backward()
    torch.testing.assert_close(out, expected)
    torch.testing.assert_close(layer(counts), expected)
    for got, want in zip(sparse_grads, (p.grad for p in layer.parameters())):
        torch.testing.assert_close(got, want)


def test_input_linear_passes_gradcheck_on_sparse_rows():
    X, _ = _corpus()
    x = _sparse(X, [0, 2, 3, 9])
    x.values = x.values.double()
    layer = InputLinear(X.shape[1], 3).double()
    weight = layer.weight.detach().clone().requires_grad_()

    def product(w):
        return torch.func.functional_call(layer, {"weight": w, "bias": layer.bias}, (x,))

    assert torch.autograd.gradcheck(product, (weight,))


def _theta(n_rows, n_topics, seed=1):
    logits = torch.randn(n_rows, n_topics, dtype=torch.float64,
                         generator=torch.Generator().manual_seed(seed))
    return torch.softmax(logits, 1).requires_grad_()


def test_mixture_nll_on_non_zeros_matches_the_dense_table():
    X, dense = _corpus()
    rows = [2, 3, 4, 6]
    x = _sparse(X, rows)
    x.values = x.values.double()
    topic_word = torch.softmax(torch.randn(5, X.shape[1], dtype=torch.float64), 1)
    topic_word.requires_grad_()
    theta = _theta(len(rows), 5)
    got = mixture_nll(theta, topic_word, x)
    got.sum().backward()
    grads = theta.grad.clone(), topic_word.grad.clone()
    theta.grad = topic_word.grad = None
    want = reconstruction_nll(torch.from_numpy(dense[rows]).double(),
                              torch.log(theta @ topic_word + 1e-10))
    want.sum().backward()
    torch.testing.assert_close(got, want)
    torch.testing.assert_close(grads[0], theta.grad)
    torch.testing.assert_close(grads[1], topic_word.grad)


@pytest.mark.parametrize("momentum", [1e-3, 0.0])
def test_fused_product_of_experts_nll_matches_autograd_through_batch_norm(momentum):
    X, dense = _corpus(n_rows=30, n_columns=11)
    rows = np.arange(30)
    decoder = ProductOfExpertsDecoder(4, X.shape[1], bn_eps=1e-3, bn_momentum=momentum,
                                      background=np.linspace(-1, 1, X.shape[1])).double()
    with torch.no_grad():
        decoder.bn.bias.normal_(generator=torch.Generator().manual_seed(2))
    twin = ProductOfExpertsDecoder(4, X.shape[1], 1e-3, momentum).double()
    twin.load_state_dict(decoder.state_dict())
    x = _sparse(X, rows)
    x.values = x.values.double()
    theta = _theta(30, 4)
    weights = torch.rand(30, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    got = decoder.nll(theta, x)
    (got * weights).sum().backward()
    grads = theta.grad.clone(), decoder.beta.grad.clone(), decoder.bn.bias.grad.clone()
    theta.grad = None
    want = twin.nll(theta, torch.from_numpy(dense[rows]).double())  # dense: autograd
    (want * weights).sum().backward()
    torch.testing.assert_close(got, want)
    for a, b in zip(grads, (theta.grad, twin.beta.grad, twin.bn.bias.grad)):
        torch.testing.assert_close(a, b)
    torch.testing.assert_close(decoder.bn.running_mean, twin.bn.running_mean)
    torch.testing.assert_close(decoder.bn.running_var, twin.bn.running_var)


def test_fused_path_only_in_training_with_batch_statistics():
    X, dense = _corpus()
    x = _sparse(X, [0, 1, 2, 5])
    decoder = ProductOfExpertsDecoder(3, X.shape[1], 1e-3, 1e-3)
    theta = _theta(4, 3).float().detach()
    decoder.bn.use_running_stats = True
    decoder.eval()
    want = reconstruction_nll(torch.from_numpy(dense[[0, 1, 2, 5]]), decoder(theta))
    torch.testing.assert_close(decoder.nll(theta, x), want)
    norm = TFBatchNorm(3)
    norm.start_accumulating()
    assert not norm.batch_statistics()


def test_product_of_experts_nll_called_directly_updates_running_averages():
    X, _ = _corpus(n_rows=8)
    x = _sparse(X, np.arange(8))
    norm = TFBatchNorm(X.shape[1], momentum=0.5)
    z = torch.randn(8, X.shape[1])
    product_of_experts_nll(z, norm, torch.zeros(X.shape[1]), x)
    torch.testing.assert_close(norm.running_mean, 0.5 * z.mean(0))
    torch.testing.assert_close(norm.running_var, 0.5 + 0.5 * z.var(0))


def test_dropout_keeps_the_expected_share_and_scales():
    drop = Dropout(0.6)
    x = torch.ones(400, 500)
    out = drop(x)
    kept = (out != 0).float().mean().item()
    assert abs(kept - 0.4) < 0.01  # 200,000 draws: the standard error is 0.0011
    assert torch.all((out == 0) | torch.isclose(out, torch.tensor(2.5)))
    assert drop.eval()(x) is x


def test_iterator_yields_sparse_batches_by_default():
    X, dense = _corpus()
    iterator = CSRBatchIterator(CSRDataset(X), 4, sampling="sequential")
    seen = np.concatenate([b.to_dense().numpy() for b, _ in iterator])
    np.testing.assert_array_equal(seen, dense)
