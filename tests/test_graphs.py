"""Training steps replayed from CUDA graphs: the padded static batches, the decision
to record, and the replayed training against eager training.

The capture itself needs a GPU (``tests/test_gpu.py``); here a backend that replays
by running the step again stands in for it, so that everything around the capture
(padding, shapes, warm-up, bookkeeping, fallback) runs on the CPU.
"""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch

from sktopics import AVITM, PAMVI, ProdLDA
from sktopics._neural import _graphs, _net
from sktopics._neural._data import DeviceCSR
from sktopics._neural._losses import mixture_nll, product_of_experts_nll, reconstruction_nll
from sktopics._neural._modules import TFBatchNorm
from sktopics._neural._sparse import InputLinear


def _batch(n_rows=12, n_columns=40, seed=0, dtype=torch.float64):
    rng = np.random.default_rng(seed)
    dense = rng.poisson(0.4, (n_rows, n_columns)).astype(np.float32)
    dense[:, 5] = 0.0  # a column no row uses
    dense[-1, :3] = 2.0  # the last row has entries
    x = next(DeviceCSR(sp.csr_matrix(dense), "cpu").sparse_batches([np.arange(n_rows)]))
    x.values = x.values.to(dtype)
    x.by_column = x.by_column._replace(values=x.by_column.values.to(dtype))
    return x, torch.from_numpy(dense).to(dtype)


@pytest.mark.parametrize("nnz, capacity", [(1, 1024), (1024, 1024), (1025, 2048), (9000, 16384)])
def test_capacity_is_the_next_power_of_two(nnz, capacity):
    assert _graphs.nnz_capacity(nnz) == capacity


def test_padded_batch_computes_what_the_batch_computes():
    """Every product and sum the training step takes of a batch, and their
    gradients, are unchanged by the zero-valued padding (against the dense counts)."""
    x, dense = _batch()
    padded = x.padded(x.nnz + 37)
    assert padded.nnz == x.nnz + 37 and padded.shape == x.shape
    assert padded.by_column.present.shape[0] == x.shape[1]  # capacity above the columns
    torch.testing.assert_close(padded.to_dense(), dense)
    torch.testing.assert_close(padded.totals(), dense.sum(1))
    generator = torch.Generator().manual_seed(0)
    table = torch.randn(x.shape[1], 6, dtype=dense.dtype, generator=generator)
    rows = torch.randn(x.shape[0], 6, dtype=dense.dtype, generator=generator)
    torch.testing.assert_close(padded.matmul(table), dense @ table)
    torch.testing.assert_close(padded.transpose_matmul(rows), dense.T @ rows)

    layer = InputLinear(x.shape[1], 4).double()
    theta = torch.softmax(torch.randn(x.shape[0], 3, dtype=dense.dtype, generator=generator), 1)
    topic_word = torch.softmax(torch.randn(3, x.shape[1], dtype=dense.dtype, generator=generator), 1)
    z = torch.randn(x.shape[0], x.shape[1], dtype=dense.dtype, generator=generator)

    def losses(batch):
        inputs = [p.detach().clone().requires_grad_() for p in (theta, topic_word, z)]
        norm = TFBatchNorm(x.shape[1], momentum=0.0).double()
        layer.zero_grad()
        total = (layer(batch).square().sum()
                 + mixture_nll(inputs[0], inputs[1], batch).sum()
                 + product_of_experts_nll(inputs[2], norm, torch.zeros(x.shape[1]).double(),
                                          batch).sum()
                 + reconstruction_nll(batch, torch.log_softmax(inputs[2], 1)).sum())
        total.backward()
        return [total.detach()] + [t.grad for t in inputs] + [layer.weight.grad.clone()]

    for got, want in zip(losses(padded), losses(x)):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("n_rows, n_columns, extra", [
    (12, 40, 0), (12, 40, 1), (12, 40, 37), (12, 40, 500),
    (1, 40, 37),  # one row takes all the row-major padding
    (2, 400, 37),  # a capacity below the number of columns: fewer slots than columns
])
def test_padding_is_shared_out_and_both_orders_hold_the_same_entries(n_rows, n_columns, extra):
    """No row and no column slot takes more than its even share of the padding (one
    GPU thread walks each), and the row-major and column-major layouts of the padded
    batch are one set of entries: ``order`` is a permutation that maps every
    column-major entry to a row-major entry of the same row, column and value."""
    x, dense = _batch(n_rows, n_columns)
    padded = x.padded(x.nnz + extra)
    assert (padded.by_column.present.shape[0] < n_columns) == (n_columns == 400)
    torch.testing.assert_close(padded.to_dense(), dense)
    columns = padded.by_column
    n_slots = columns.present.shape[0]

    def shares(padded_bounds, bounds, n_groups):
        lengths = bounds.diff()
        added = padded_bounds.diff() - torch.cat([lengths, lengths.new_zeros(n_groups - len(lengths))])
        assert added.min() >= 0 and added.sum() == extra
        assert added.max() - added.min() <= 1

    shares(padded.bounds, x.bounds, x.shape[0])
    shares(columns.bounds, x.by_column.bounds, n_slots)
    positions = torch.arange(padded.nnz)
    assert torch.equal(padded.rows, torch.repeat_interleave(torch.arange(x.shape[0]),
                                                            padded.bounds.diff()))
    assert torch.equal(torch.sort(columns.order).values, positions)
    slot_columns = torch.repeat_interleave(columns.present, columns.bounds.diff())
    assert torch.equal(padded.rows[columns.order], columns.rows)
    assert torch.equal(padded.columns[columns.order], slot_columns)
    assert torch.equal(padded.values[columns.order], columns.values)
    assert (padded.values == 0).sum() == extra  # _batch stores no zeros


def test_pad_into_overwrites_a_larger_batch_entirely():
    """A static batch that held a batch with more non-zeros holds the new one
    exactly: no entry of the former survives in the padding."""
    big, _ = _batch(seed=1)
    small, dense = _batch(seed=2)
    capacity = max(big.nnz, small.nnz) + 5
    static = big.padded(capacity)
    small.pad_into(static)
    torch.testing.assert_close(static.to_dense(), dense)
    torch.testing.assert_close(static.transpose_matmul(torch.ones(12, 1).double()),
                               dense.sum(0, keepdim=True).T)
    with pytest.raises(ValueError, match="capacity"):
        small.padded(small.nnz - 1)


def test_graphs_are_used_on_cuda_only_in_a_one_process_fit(monkeypatch):
    assert not _graphs.use_graphs("cpu", None)
    assert _graphs.use_graphs("cuda", None)
    assert _graphs.use_graphs(torch.device("cuda", 0), None)
    assert not _graphs.use_graphs("cuda", collective=object())
    monkeypatch.setenv("SKTOPICS_CUDA_GRAPHS", "0")
    assert not _graphs.use_graphs("cuda", None)


class _CountingBackend(_graphs.EagerBackend):
    """Counts warm-up steps, captures and replays."""

    counts = None

    def __init__(self, device=None):
        super().__init__(device)
        type(self).counts = {"warmup": 0, "capture": 0, "replay": 0}

    def warmup(self, step):
        self.counts["warmup"] += 1
        return step()

    def capture(self, step):
        self.counts["capture"] += 1
        self.optimizer = _net_of(step).optimizer_

        def replay():
            self.counts["replay"] += 1
            # capturable only while recording: a replay runs no Python, and an eager
            # step of a capturable optimiser on CUDA warns
            assert not any(g["capturable"] for g in self.optimizer.param_groups)
            return step()

        return replay


def _net_of(step):
    """The net a recorded step belongs to (the GraphedSteps bound in its closure)."""
    return next(cell.cell_contents for cell in step.__closure__
                if isinstance(cell.cell_contents, _graphs.GraphedSteps)).net


def _simulated(monkeypatch, backend=_CountingBackend):
    """Graphs on the CPU: the decision says yes, the backend replays eagerly."""
    monkeypatch.setattr(_net, "use_graphs", lambda device, collective, model: True)
    monkeypatch.setattr(_net.TopicNet, "graph_backend", backend)


def _corpus():
    rng = np.random.default_rng(0)
    return sp.csr_matrix(rng.poisson(0.3, (120, 60)).astype(np.float64))


def _fit(cls, X, **params):
    model = cls(**{"max_iter": 4, "batch_size": 20, "hidden_sizes": (8,), "device": "cpu",
                   "n_jobs": 1, "random_state": 0, **params})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # collapsed-topic warnings of tiny fits
        return model.fit(X)


def _weights(model):
    return {k: v.detach().clone() for k, v in model.net_.module_.state_dict().items()}


@pytest.mark.parametrize("cls, params", [
    (ProdLDA, {"n_components": 4}),
    (AVITM, {"n_components": 4}),
    (PAMVI, {"structure": (2, 3)}),
])
def test_replayed_training_is_eager_training(monkeypatch, cls, params):
    """Training through the graph machinery (padded static batches, warm-up steps,
    one recorded step replayed) gives the eager fit's weights: the padding changes
    no value, and every step draws the same noise. Tolerance: float32 sums over a
    padded bag may be grouped differently, a few units in the last place a step."""
    X = _corpus()
    eager = _weights(_fit(cls, X, **params))
    _simulated(monkeypatch)
    model = _fit(cls, X, **params)
    counts = _CountingBackend.counts
    n_steps = 4 * (120 // 20)
    assert counts["capture"] == 1 and counts["warmup"] == _graphs.WARMUP_STEPS
    assert counts["replay"] == n_steps - _graphs.WARMUP_STEPS
    for name, value in _weights(model).items():
        torch.testing.assert_close(value, eager[name], rtol=1e-4, atol=1e-5, msg=name)
    assert np.isfinite([row["train_loss"] for row in model.history_]).all()
    assert getattr(model.net_, "_graphs", None) is None  # graphs end with the call
    assert not any(group["capturable"] for group in model.net_.optimizer_.param_groups)


def test_each_capacity_gets_its_own_graph_and_old_ones_are_dropped(monkeypatch):
    """Batches of different sizes of non-zeros use one graph per capacity, at most
    ``MAX_GRAPHS`` of them, and training still matches eager training."""
    rng = np.random.default_rng(1)
    long = rng.random(120) < 0.5  # documents of one word or of every word
    X = sp.csr_matrix(np.where(long[:, None], 1.0, np.arange(60) == rng.integers(60, size=(120, 1))))
    params = dict(n_components=3, batch_sampling="shuffle", batch_size=5, max_iter=3)
    eager = _weights(_fit(ProdLDA, X, **params))
    monkeypatch.setattr(_graphs, "MIN_CAPACITY", 8)
    monkeypatch.setattr(_graphs, "MAX_GRAPHS", 2)
    monkeypatch.setattr(_graphs, "WARMUP_STEPS", 0)  # record at first sight
    _simulated(monkeypatch)
    seen = []
    close = _graphs.GraphedSteps.close
    monkeypatch.setattr(_graphs.GraphedSteps, "close",
                        lambda self: seen.append((self.evicted, len(self.replays))) or close(self))
    model = _fit(ProdLDA, X, **params)
    assert _CountingBackend.counts["capture"] >= 3
    evicted, kept = seen[0]
    assert evicted >= 1 and kept <= 2  # at most MAX_GRAPHS at once
    for name, value in _weights(model).items():
        torch.testing.assert_close(value, eager[name], rtol=1e-4, atol=1e-5, msg=name)


def test_a_user_callback_or_clipping_keeps_training_eager(monkeypatch):
    from skorch.callbacks import Callback

    _simulated(monkeypatch)
    X = _corpus()
    for params in ({"callbacks": [("mine", Callback())]}, {"clip_grad_norm": 1.0}):
        _CountingBackend.counts = None
        _fit(ProdLDA, X, n_components=3, **params)
        assert _CountingBackend.counts is None  # no graph machinery was built


def test_graphs_need_the_fused_optimiser(monkeypatch):
    """Without fused Adam the step counters live on the host, which a graph cannot
    update: training stays eager."""
    from sktopics._neural import _estimator

    _simulated(monkeypatch)
    monkeypatch.setattr(_estimator, "_FUSED_ADAM", {})
    _CountingBackend.counts = None
    _fit(ProdLDA, _corpus(), n_components=3)
    assert _CountingBackend.counts is None


class _FailingBackend(_graphs.EagerBackend):
    def capture(self, step):
        raise RuntimeError("operation not permitted when stream is capturing")


def test_a_failed_capture_warns_once_and_training_goes_on_eagerly(monkeypatch):
    X = _corpus()
    eager = _weights(_fit(ProdLDA, X, n_components=3))
    _simulated(monkeypatch, _FailingBackend)
    flags = []  # the optimiser's setting at each step after the failure
    step = _graphs.GraphedSteps.step

    def spy(self, batch):
        out = step(self, batch)
        if self.failed:
            flags.extend(g["capturable"] for g in self.net.optimizer_.param_groups)
        return out

    monkeypatch.setattr(_graphs.GraphedSteps, "step", spy)
    with pytest.warns(RuntimeWarning, match="CUDA graph failed") as record:
        model = _fit(ProdLDA, X, n_components=3)
    assert flags and not any(flags)
    assert sum("CUDA graph" in str(w.message) for w in record) == 1
    for name, value in _weights(model).items():
        torch.testing.assert_close(value, eager[name], rtol=1e-4, atol=1e-5, msg=name)


def test_fits_stop_trying_after_repeated_failed_captures(monkeypatch):
    """A capture that always fails (an old driver) costs each fit a warning and a
    graph's memory: after MAX_FAILURES of them that model trains eagerly, silently,
    while another model's fits still record their steps."""
    X = _corpus()
    monkeypatch.setattr(_net, "use_graphs", lambda device, collective, model: _graphs.use_graphs(
        "cuda", collective, model))  # the real decision, as if on CUDA
    monkeypatch.setattr(_net.TopicNet, "graph_backend", _FailingBackend)
    for fit in range(1, _graphs.MAX_FAILURES + 1):
        with pytest.warns(RuntimeWarning, match="CUDA graph failed") as record:
            _fit(ProdLDA, X, n_components=3)
        said = any("later fits of this model" in str(w.message) for w in record)
        assert said == (fit == _graphs.MAX_FAILURES)
    kind = _graphs.step_kind(_fit(ProdLDA, X, n_components=3, max_iter=1).net_.module_)
    assert not _graphs.use_graphs("cuda", None, kind)
    monkeypatch.setattr(_net.TopicNet, "graph_backend", _CountingBackend)
    _CountingBackend.counts = None
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        _fit(ProdLDA, X, n_components=3)
    assert _CountingBackend.counts is None
    _fit(AVITM, X, n_components=3)  # another model's step: recorded
    assert _CountingBackend.counts["capture"] == 1
