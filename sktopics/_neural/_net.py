"""The private skorch net that trains a topic VAE: a :class:`~._modules.TopicVAE`
(AVITM, ProdLDA) or a :class:`~._pam_modules.PAMVAE` (PAMVI, MoLDA).

No public class inherits from :class:`skorch.NeuralNet`: the estimators own one of
these as ``net_`` (composition), which keeps skorch's parameters out of
``get_params`` and its ``predict`` out of the public API.
"""

import contextlib
import math
import time

import torch
from skorch import NeuralNet
from skorch.callbacks import Callback, EpochTimer, PassthroughScoring, PrintLog
from skorch.dataset import unpack_data

from ..utils._interrupt import stop_now
from ._graphs import CUDAGraphBackend, GraphedSteps, step_kind, use_graphs
from ._norm_statistics import whole_set_statistics
from ._sparse import SparseRows

__all__ = ["TopicNet", "EpochMonitor", "sum_gradients", "module_negative_elbo"]


class TopicNet(NeuralNet):
    """skorch net whose loss is the negative ELBO, averaged over the batch.

    Departures from :class:`skorch.NeuralNet`:

    * an epoch reads its batch losses back from the device once, at its end,
      instead of once per batch (a host-device synchronisation per batch would
      stall a GPU's queue): a callback's ``on_batch_end`` receives the loss as a
      tensor, and the history's per-batch ``train_loss`` entries are filled in
      when the epoch ends;
    * a batch may be a :class:`~._sparse.SparseRows`, which goes to the module as is;
    * a training step calls the optimiser directly, without skorch's closure and
      ``on_grad_computed`` notification, unless a callback overrides
      ``on_grad_computed`` (gradient clipping does); on CUDA it is replayed from a
      CUDA graph where :mod:`._graphs` allows;
    * pickles are device-neutral: the tensors load on the CPU, and the owning
      estimator moves them to a device the loading machine has;
    * data-parallel (``collective`` set by the estimator for a fit inside
      :func:`sktopics.distributed.data_parallel`), each step's gradient is that of the
      global batch's mean loss (the ranks' summed losses' gradients summed, then
      divided by the global batch's documents; ``DistributedDataParallel`` averages
      the ranks' means instead, the same for equal batches) before the optimiser
      moves, and validation normalises with every rank's validation documents.
    """

    #: The process group of a data-parallel fit, or None.
    collective = None

    #: Records and replays training steps where :func:`~._graphs.use_graphs` allows.
    graph_backend = CUDAGraphBackend
    #: The current training call's :class:`~._graphs.GraphedSteps`, or None.
    _graphs = None

    def fit_loop(self, X, y=None, epochs=None, **fit_params):
        graphs = (use_graphs(self.device, self.collective, step_kind(self.module_))
                  and self.optimizer_.defaults.get("fused")
                  and all(isinstance(callback, _OWN_CALLBACKS) for _, callback in self.callbacks_))
        self._graphs = GraphedSteps(self, self.graph_backend(self.device)) if graphs else None
        try:
            return super().fit_loop(X, y, epochs=epochs, **fit_params)
        finally:
            if self._graphs is not None:  # graphs record this call's settings and memory
                self._graphs.close()
            self._graphs = None

    def train_step(self, batch, **fit_params):
        # skorch's step wraps the optimiser in a closure and hands every callback the
        # parameters after the backward pass; that is kept only for callbacks that
        # read the gradients (gradient clipping, a user's).
        if any(_reads_gradients(callback) for _, callback in self.callbacks_):
            return super().train_step(batch, **fit_params)
        if self._graphs is not None and not fit_params and isinstance(batch[0], SparseRows):
            step = self._graphs.step(batch[0])
            if step is not None:
                return step
        return self.optimiser_step(batch, **fit_params)

    def optimiser_step(self, batch, **fit_params):
        """One step: gradients set to None, forward and backward, the optimiser's
        update (what a CUDA graph records)."""
        self.optimizer_.zero_grad(set_to_none=True)
        step = self.train_step_single(batch, **fit_params)
        self.optimizer_.step()
        return step

    def train_step_single(self, batch, **fit_params):
        collective = self.collective
        if collective is None or collective.world_size == 1:
            return super().train_step_single(batch, **fit_params)
        self._set_training(True)
        Xi, yi = unpack_data(batch)
        y_pred = self.infer(Xi, **fit_params)
        loss = self.get_loss(y_pred, yi, X=Xi, training=True)
        # Each rank's summed loss: their sum is the global batch's, whose gradient
        # (through the synchronised batch-norm statistics too) is the sum of the
        # ranks' gradients; divided by the global batch's documents, the mean's (the
        # free-bits floor, where set, reads the global batch too).
        (loss * len(Xi)).backward()
        sum_gradients(self.module_, collective, len(Xi))
        return {"loss": loss, "y_pred": y_pred}

    def infer(self, x, **fit_params):
        if isinstance(x, SparseRows):  # already on the device; skorch cannot convert it
            return self.module_(x, **fit_params)
        return super().infer(x, **fit_params)

    def get_loss(self, y_pred, y_true, X=None, training=False):
        return module_negative_elbo(self.module_, X, y_pred).mean()

    def run_single_epoch(self, iterator, training, prefix, step_fn, **fit_params):
        if iterator is None:
            return
        if not training and self.collective is not None and self.collective.world_size > 1:
            # Data-parallel validation normalises with every rank's validation
            # documents' statistics, as one process normalises a validation set that
            # fits one inference batch (ranks hold different numbers of batches).
            statistics = whole_set_statistics(self.module_, lambda: (b for b, _ in iterator),
                                              None, self.collective)
        else:
            statistics = contextlib.nullcontext()
        with statistics:
            self._run_batches(iterator, training, prefix, step_fn, **fit_params)

    def _run_batches(self, iterator, training, prefix, step_fn, **fit_params):
        losses = []
        for batch in iterator:
            self.notify("on_batch_begin", batch=batch, training=training)
            step = step_fn(batch, **fit_params)
            losses.append(step["loss"].detach())
            self.history.record_batch(prefix + "_batch_size", len(batch[0]))
            self.notify("on_batch_end", batch=batch, training=training, **step)
        if losses:
            values = torch.stack(losses).tolist()
            for row, value in zip(self.history[-1]["batches"][-len(values):], values):
                row[prefix + "_loss"] = value
        self.history.record(prefix + "_batch_count", len(losses))

    def __getstate__(self):
        state = super().__getstate__()
        # ``module`` is the template the net was built from, a second copy of every
        # weight; a fitted net continues from ``module_`` and is never re-initialised
        # (a new fit builds a new net), so only the template's class is kept.
        if isinstance(state.get("module"), torch.nn.Module):
            state["module"] = type(state["module"])
        state["device"] = "cpu"  # skorch then maps every tensor to the CPU on load
        state.pop("collective", None)
        state.pop("_graphs", None)
        for key in ("iterator_train__device", "iterator_valid__device"):
            if key in state:
                state[key] = "cpu"
        return state


def sum_gradients(module, collective, n_documents):
    """Make every rank's gradients the sum of the ranks' divided by their documents
    ``n_documents`` summed, in place (one all-reduce).

    A parameter without a gradient on some rank (unused by its forward pass) counts
    as zero there and gets the result on every rank; one without a gradient on every
    rank keeps none, as in one process. Only a rank that lacks a gradient reads the
    others' flags back to the host.
    """
    params = [p for p in module.parameters() if p.requires_grad]
    grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
    flags = torch.tensor([float(p.grad is not None) for p in params] + [float(n_documents)],
                         dtype=grads[0].dtype, device=grads[0].device)
    flat = collective.sum_(torch.cat([g.reshape(-1) for g in grads] + [flags]))
    flat[:-len(flags)] /= flat[-1]
    lacking = [p.grad is None for p in params]
    if any(lacking):
        used = (flat[-len(flags):-1] > 0).tolist()
    offset = 0
    for i, p in enumerate(params):
        value = flat[offset:offset + p.numel()].view_as(p)
        if not lacking[i]:
            p.grad.copy_(value)
        elif used[i]:
            p.grad = value.clone()
        offset += p.numel()


def _reads_gradients(callback):
    """Whether a skorch callback overrides ``on_grad_computed``."""
    return type(callback).on_grad_computed is not Callback.on_grad_computed


def module_negative_elbo(module, x, y_pred):
    """Per-document negative ELBO of a topic VAE's output ``y_pred``: every module
    (:class:`~._modules.TopicVAE`, PAMVI's, MoLDA's) defines
    ``negative_elbo(x, y_pred)``."""
    return module.negative_elbo(x, y_pred)


class EpochMonitor(Callback):
    """Epoch bookkeeping without skorch's default callbacks.

    Records ``train_loss`` (and ``valid_loss``) per epoch as the document-weighted
    mean of the batch losses, ``train_tokens_per_document`` (and
    ``valid_tokens_per_document``: the mean length of the call's training and
    validation documents, which per-token curves divide by) and ``dur`` in
    seconds; prints a line per epoch when ``verbose``; raises ``FloatingPointError``
    at the end of an epoch in which a loss was not finite; stops training (early
    stopping) when ``valid_loss`` has not improved by ``tol`` for
    ``n_iter_no_change`` epochs of the same call, and at the end of the epoch in
    which the user pressed Ctrl-C (see :meth:`prepare`).
    """

    def __init__(self, verbose=0, n_iter_no_change=None, tol=0.0, estimator_name="model"):
        self.verbose = verbose
        self.n_iter_no_change = n_iter_no_change
        self.tol = tol
        self.estimator_name = estimator_name

    def initialize(self):
        self.best_loss_ = math.inf
        self.epochs_without_improvement_ = 0
        self.prepare(None, None, None, None)
        return self

    def prepare(self, stop, train, valid, progress):
        """Set up one call's training (``None`` each: nothing).

        Parameters
        ----------
        stop : StopRequest or None
            Ends training at the end of the epoch once ``stop.requested`` is set.
        train, valid : sparse matrix or None
            The call's training and validation documents (their mean lengths are
            recorded per epoch).
        progress : tuple or None
            :meth:`progress` of an interrupted run this call finishes.
        """
        self.stop_request = stop
        self.tokens_per_document = {
            prefix: float(X.sum()) / max(X.shape[0], 1)
            for prefix, X in (("train", train), ("valid", valid)) if X is not None
        }
        self.resumed_progress = progress

    def progress(self):
        """Where early stopping stands: ``(best_loss, epochs_without_improvement)``."""
        return self.best_loss_, self.epochs_without_improvement_

    def on_train_begin(self, net, **kwargs):
        # Early stopping counts within one call: a warm fit after an early stop trains
        # again. A call that finishes an interrupted run goes on counting.
        self.best_loss_, self.epochs_without_improvement_ = self.resumed_progress or (math.inf, 0)

    def on_epoch_begin(self, net, **kwargs):
        self._epoch_start = time.perf_counter()

    def on_epoch_end(self, net, **kwargs):
        row = net.history[-1]
        duration = time.perf_counter() - self._epoch_start
        net.history.record("dur", duration)
        for prefix, length in self.tokens_per_document.items():
            net.history.record(f"{prefix}_tokens_per_document", length)
        for prefix in ("train", "valid"):
            batches = row["batches"]
            losses = [b[f"{prefix}_loss"] for b in batches if f"{prefix}_loss" in b]
            sizes = [b[f"{prefix}_batch_size"] for b in batches if f"{prefix}_loss" in b]
            bad = [loss for loss in losses if not math.isfinite(loss)]
            failed = bool(bad)
            if net.collective is not None:  # every rank learns of a bad loss on any rank
                failed = bool(net.collective.sum(int(failed)))
            if failed:
                became = f"became {bad[0]}" if bad else "became non-finite on another rank"
                raise FloatingPointError(
                    f"{self.estimator_name}: the {prefix} loss {became} in epoch "
                    f"{len(net.history)}. Lower learning_rate, enable clip_grad_norm or "
                    "check the input counts."
                )
            if losses:
                total = sum(loss * size for loss, size in zip(losses, sizes))
                count = sum(sizes)
                if net.collective is not None:  # every rank records the global mean
                    total, count = net.collective.sum(float(total)), net.collective.sum(count)
                net.history.record(f"{prefix}_loss", total / count)
        if self.verbose:
            parts = [f"epoch {row['epoch']:4d}", f"train_loss {row['train_loss']:.4f}"]
            if "valid_loss" in row:
                parts.append(f"valid_loss {row['valid_loss']:.4f}")
            parts.append(f"{duration:.2f}s")
            print(f"[{self.estimator_name}] " + "  ".join(parts), flush=True)
        if self.n_iter_no_change is not None and "valid_loss" in row:
            if row["valid_loss"] < self.best_loss_ - self.tol:
                self.best_loss_ = row["valid_loss"]
                self.epochs_without_improvement_ = 0
            else:
                self.epochs_without_improvement_ += 1
            if self.epochs_without_improvement_ >= self.n_iter_no_change:
                if self.verbose:
                    print(f"[{self.estimator_name}] early stopping: valid_loss has not "
                          f"improved for {self.n_iter_no_change} epochs", flush=True)
                raise KeyboardInterrupt
        if stop_now(self.stop_request, net.collective):
            raise KeyboardInterrupt  # skorch ends training; the estimator re-raises it


#: The net's own bookkeeping callbacks, which neither read nor change a step.
_OWN_CALLBACKS = (EpochMonitor, EpochTimer, PassthroughScoring, PrintLog)
