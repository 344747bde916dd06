"""Training steps replayed from CUDA graphs.

On a GPU a topic VAE's training step is about a hundred small kernels, and
launching them from Python costs several times the GPU's own work. A CUDA graph
records a whole step once (forward, backward, the optimiser's update) and replays
it with one launch. A graph replays fixed shapes on fixed memory, so each batch is
copied into a static batch whose non-zeros are padded to a capacity (the next
power of two, :meth:`~._sparse.SparseRows.pad_into`): with the batch size fixed by
the fit, a corpus needs one or two graphs. Steps without a graph (the first few of
each capacity, which warm the kernels up as capture requires) run eagerly.

Graphs live for one training call. They are used only where nothing outside the
step reads or changes it between steps: on CUDA, with torch's fused Adam (whose
step counters live on the device), in a one-process fit, with no callback of the
user's (a learning-rate schedule or gradient clipping would change
what the recorded step does). Setting the environment variable
``SKTOPICS_CUDA_GRAPHS=0`` turns them off. A capture that fails (an operation that
synchronises with the host, an old driver, an autograd graph of the parameters kept
alive from outside the fit) warns once, and training goes on eagerly; after
:data:`MAX_FAILURES` failed captures of one model's step with one kind of error in a
process, fits of that model stop trying (the warning of the last one says so), while
other models' fits go on recording theirs.

The capture itself is a small backend (:class:`CUDAGraphBackend`), so that the
padding, the bookkeeping and the fallback run in tests on any device with a
backend that replays by calling the step again (:class:`EagerBackend`).
"""

import os
import threading

import torch

from ..utils._warnings import warn

__all__ = ["CUDAGraphBackend", "EagerBackend", "GraphedSteps", "nnz_capacity", "step_kind",
           "use_graphs"]

#: Eager steps of each capacity before its capture (CUDA needs warmed-up kernels,
#: and the optimiser's state must exist before it is recorded).
WARMUP_STEPS = 3

#: Graphs kept per training call, each with its own memory pool.
MAX_GRAPHS = 4

#: The smallest capacity, in non-zeros.
MIN_CAPACITY = 1024

#: Failed captures of one model's step, with one kind of error, in a process, after
#: which its fits stop trying.
MAX_FAILURES = 3

_CAPTURE_LOCK = threading.Lock()

# Graphs whose capture failed, kept alive for the process: a capture that did not end
# may have left references to its graph in torch.
_FAILED_GRAPHS = []

# Failed captures so far in this process, any backend: (model, error type) -> count.
_failures = {}
_FAILURES_LOCK = threading.Lock()


def _count_failure(model, exc):
    """Count a failed capture of ``model``'s step (its :func:`step_kind`) that raised
    ``exc``; returns whether that model's fits stop trying from now on."""
    key = (model, type(exc).__name__)
    with _FAILURES_LOCK:
        _failures[key] = _failures.get(key, 0) + 1
        return _failures[key] == MAX_FAILURES


def step_kind(module):
    """Which model's step a capture records: the module's class with its decoder's
    (AVITM and ProdLDA share a ``TopicVAE`` with different decoders)."""
    decoder = getattr(module, "decoder", None)
    return type(module).__name__ + ("" if decoder is None else f"/{type(decoder).__name__}")


def nnz_capacity(nnz):
    """The padded size of a batch of ``nnz`` non-zeros: the next power of two."""
    return max(MIN_CAPACITY, 1 << max(int(nnz) - 1, 0).bit_length())


def use_graphs(device, collective, model=None):
    """Whether training steps of ``model`` (its :func:`step_kind`) on ``device`` can be
    replayed from CUDA graphs (the net also checks that no callback of the user's is
    present)."""
    if os.environ.get("SKTOPICS_CUDA_GRAPHS", "1") == "0":
        return False
    if any(count >= MAX_FAILURES for (failed, _), count in _failures.items()
           if failed == model):
        return False
    return torch.device(device).type == "cuda" and collective is None


class CUDAGraphBackend:
    """Warm-up on a side stream and capture into a ``torch.cuda.CUDAGraph``, on the
    net's own device (which need not be the current one)."""

    def __init__(self, device):
        self.device = torch.device(device)
        # torch's default capture stream is made once per process, on the device
        # current at the first capture: a stream of the net's own device instead
        self.stream = torch.cuda.Stream(device=self.device)

    def warmup(self, step):
        with torch.cuda.device(self.device):
            self.stream.wait_stream(torch.cuda.current_stream(self.device))
            with torch.cuda.stream(self.stream):
                outputs = step()
            torch.cuda.current_stream(self.device).wait_stream(self.stream)
        return outputs

    def capture(self, step):
        """Record ``step`` and return a function that replays it and returns its outputs."""
        graph = torch.cuda.CUDAGraph()
        pool = torch.cuda.graph_pool_handle()  # the graph's own memory pool
        with torch.cuda.device(self.device):
            stream = torch.cuda.current_stream(self.device)
            # One capture at a time in a process (torch's rule); thread_local: fits in
            # other threads (joblib's threading backend) go on running while this one
            # records.
            with _CAPTURE_LOCK:
                try:
                    with torch.cuda.graph(graph, pool=pool, stream=self.stream,
                                          capture_error_mode="thread_local"):
                        outputs = step()
                except BaseException:
                    try:
                        _FAILED_GRAPHS.append(graph)
                        _end_failed_capture(self.stream, pool)
                    finally:
                        torch.cuda.set_stream(stream)  # a failed capture can leave its stream current
                    raise

        def replay():
            with torch.cuda.device(self.device):
                graph.replay()
            return outputs

        return replay


def _end_failed_capture(stream, pool):
    """Undo, as far as torch allows, what a capture that failed before its end left.

    Its end never ran. In some torch versions the caching allocator then goes on
    routing the capture's allocations to its pool (consulting the capture at every
    allocation on the device), and the device's random generator stays marked as
    capturing, so that every later random draw raises ("Offset increment outside graph
    capture"). Ending the pool's routing (and releasing the pool) clears the first; a
    small capture that ends cleanly runs torch's capture epilogue, which clears the
    second. Best effort: the failed capture's own error is the one reported.
    """
    device = stream.device
    try:
        # torch 2.8 renamed the binding
        end = (getattr(torch._C, "_cuda_endAllocateToPool", None)
               or torch._C._cuda_endAllocateCurrentStreamToPool)
        end(device.index, pool)
        torch._C._cuda_releasePool(device.index, pool)
    except Exception:  # noqa: BLE001 -- torch ended the routing itself
        pass
    graph = None
    try:
        scratch = torch.zeros(1, device=device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream, capture_error_mode="thread_local"):
            scratch.add_(1)
    except Exception:  # noqa: BLE001
        if graph is not None:
            _FAILED_GRAPHS.append(graph)


class EagerBackend:
    """A stand-in for tests: "capture" keeps the step, "replay" runs it again."""

    def __init__(self, device=None):
        self.device = device

    def warmup(self, step):
        return step()

    def capture(self, step):
        return step


class GraphedSteps:
    """One training call's graphs of a :class:`~._net.TopicNet`, by batch shape.

    Parameters
    ----------
    net : TopicNet
    backend : CUDAGraphBackend or EagerBackend
    """

    def __init__(self, net, backend):
        self.net = net
        self.backend = backend
        self.statics = {}  # (rows, capacity) -> the padded static batch
        self.replays = {}  # (rows, capacity) -> replay function
        self.warmed = {}  # (rows, capacity) -> eager steps taken
        self.failed = False
        self.evicted = 0
        self.capturable = [group.get("capturable", False)
                           for group in net.optimizer_.param_groups]

    def close(self):
        """Drop the graphs, their gradients (which live in a graph's memory) and give
        the optimiser back its setting."""
        self._set_capturable(False)
        self.net.optimizer_.zero_grad(set_to_none=True)
        self.statics, self.replays, self.warmed = {}, {}, {}

    def _set_capturable(self, capturable):
        """``True``: every parameter group capturable; ``False``: their own settings."""
        for group, own in zip(self.net.optimizer_.param_groups, self.capturable):
            group["capturable"] = True if capturable else own

    def step(self, batch):
        """Train on ``batch`` (a :class:`~._sparse.SparseRows`); returns skorch's step
        dict, or ``None`` when graphs have failed and the caller must step eagerly."""
        if self.failed:
            return None
        key = (len(batch), nnz_capacity(batch.nnz))
        static = self.statics.pop(key, None)
        if static is None:
            if len(self.statics) >= MAX_GRAPHS:  # forget the least recently used shape
                stale = next(iter(self.statics))
                for table in (self.statics, self.replays, self.warmed):
                    table.pop(stale, None)
                self.evicted += 1
            static = batch.padded(key[1])
        else:
            batch.pad_into(static)
        self.statics[key] = static  # most recently used last
        self.net._set_training(True)
        replay = self.replays.get(key)
        if replay is None:
            if self.warmed.get(key, 0) < WARMUP_STEPS:
                self.warmed[key] = self.warmed.get(key, 0) + 1
                return self._as_step(self.backend.warmup(lambda: self._recorded_step(static)))
            try:
                # torch.optim refuses to be recorded otherwise; set for the capture only
                # (a replay runs no Python, and an eager step of a capturable optimiser
                # warns), and put back before any other step
                self._set_capturable(True)
                replay = self.backend.capture(lambda: self._recorded_step(static))
            except Exception as exc:  # noqa: BLE001 -- any failure means: train eagerly
                last = _count_failure(step_kind(self.net.module_), exc)
                self.failed = True
                self.close()  # also drops the gradients the failed capture left
                warn(f"Recording the training step as a CUDA graph failed ({exc!s:.200}); "
                     "training goes on without graphs."
                     + (f" After {MAX_FAILURES} such failed captures, later fits of this "
                        "model in this process train without graphs too." if last else ""),
                     RuntimeWarning)
                return None
            finally:
                self._set_capturable(False)
            self.replays[key] = replay
        return self._as_step(replay())

    def _recorded_step(self, static):
        # Gradients set to None first: the recorded backward writes them afresh each replay.
        step = self.net.optimiser_step((static, None))
        return step["loss"], step["y_pred"]

    @staticmethod
    def _as_step(outputs):
        loss, y_pred = outputs
        # The replayed outputs are overwritten by the next replay: keep the loss's value.
        return {"loss": loss.detach().clone(), "y_pred": y_pred}
