"""The process group a data-parallel fit spans, and the collectives sktopics uses.

:func:`sktopics.distributed.data_parallel` opens a :class:`Collective` for the
block; the estimators and evaluators ask :func:`current_collective` for it and, when
there is none, run as one process. Every collective here is called by every rank in
the same order, so a rank must never skip one that the others make: errors found on
one rank are agreed on first (:meth:`Collective.agree`) and raised on all of them.
"""

import contextlib
import contextvars
import hashlib
from datetime import timedelta

import joblib
import numpy as np
import torch

__all__ = ["Collective", "agree_on_parameters", "current_collective", "nccl_device_problem",
           "on_rank_zero", "open_collective"]

_current = contextvars.ContextVar("sktopics_collective", default=None)


def current_collective():
    """The :class:`Collective` of the enclosing ``data_parallel`` block, or ``None``."""
    return _current.get()


def on_rank_zero():
    """Whether this process gives the user's messages: outside a ``data_parallel``
    block always, inside it on rank 0 only (warnings and progress lines once, not once
    per rank)."""
    collective = current_collective()
    return collective is None or collective.rank == 0


@contextlib.contextmanager
def open_collective(group=None, timeout=None):
    """Make a :class:`Collective` over ``group`` the current one inside the block."""
    token = _current.set(Collective(group, timeout))
    try:
        yield _current.get()
    finally:
        _current.reset(token)


class Collective:
    """Sums, extremes, gathers and agreement over a ``torch.distributed`` process group.

    Parameters
    ----------
    group : ProcessGroup or None
        ``None``: the default group.
    timeout : float or None
        Seconds a rank waits for the others in any collective before it raises
        (``None``: the process group's own timeout, 30 minutes by default).
    """

    def __init__(self, group=None, timeout=None):
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()):
            raise RuntimeError(
                "sktopics.distributed.data_parallel needs an initialised process group: call "
                "torch.distributed.init_process_group() first (torchrun sets the rank and "
                "the world size in the environment)."
            )
        self._dist = dist
        self.group = group
        self.rank = dist.get_rank(group)
        self.world_size = dist.get_world_size(group)
        self.backend = str(dist.get_backend(group))
        self.timeout = timeout

    def __repr__(self):
        return (f"Collective(rank={self.rank}, world_size={self.world_size}, "
                f"backend={self.backend!r})")

    # ----------------------------------------------------------------- tensors
    def _call(self, operation, *args):
        """Run a collective, waiting at most ``timeout`` seconds for the other ranks."""
        try:
            if self.timeout is None:
                operation(*args, group=self.group)
            else:
                work = operation(*args, group=self.group, async_op=True)
                work.wait(timeout=timedelta(seconds=float(self.timeout)))
        except RuntimeError as exc:
            raise _failed(self, exc) from exc

    def _device_for(self, tensor):
        # NCCL reduces CUDA tensors only: small host tensors make the trip there.
        if self.backend == "nccl" and tensor.device.type != "cuda":
            return torch.device("cuda", torch.cuda.current_device())
        return tensor.device

    def _reduce(self, tensor, op):
        if self.world_size == 1:
            return tensor
        work = tensor.to(self._device_for(tensor))
        self._call(self._dist.all_reduce, work, op)
        if work is not tensor:
            tensor.copy_(work)
        return tensor

    def sum_(self, tensor):
        """Sum ``tensor`` over the ranks, in place; returns it."""
        return self._reduce(tensor, self._dist.ReduceOp.SUM)

    def max_(self, tensor):
        """Elementwise maximum over the ranks, in place; returns it."""
        return self._reduce(tensor, self._dist.ReduceOp.MAX)

    def sum_autograd(self, tensor):
        """The sum of ``tensor`` over the ranks, as a new tensor that autograd sees
        through: its gradient is the sum of every rank's gradient (for statistics
        that enter each rank's loss, such as synchronised batch-norm moments)."""
        if self.world_size == 1:
            return tensor
        return _SumOverRanks.apply(tensor, self)

    def sum(self, value):
        """The sum of a Python number over the ranks (a float, or an int for ints)."""
        dtype = torch.int64 if isinstance(value, (int, np.integer)) else torch.float64
        return self.sum_(torch.tensor([value], dtype=dtype))[0].item()

    def gather(self, array):
        """Every rank's 1-d int64 ``array`` (same length on every rank), as a list."""
        local = torch.as_tensor(np.asarray(array, dtype=np.int64))
        if self.world_size == 1:
            return [local.numpy()]
        local = local.to(self._device_for(local))
        parts = [torch.zeros_like(local) for _ in range(self.world_size)]
        self._call(self._dist.all_gather, parts, local)
        return [p.cpu().numpy() for p in parts]

    def gather_objects(self, value):
        """Every rank's picklable ``value``, as a list in rank order."""
        if self.world_size == 1:
            return [value]
        self.gather([0])  # every rank has arrived (under the timeout) before objects travel
        found = [None] * self.world_size
        try:  # torch offers no timeout here; none is needed once every rank answered
            self._dist.all_gather_object(found, value, group=self.group)
        except RuntimeError as exc:
            raise _failed(self, exc) from exc
        return found

    def broadcast(self, value, src=0):
        """Rank ``src``'s int ``value`` on every rank."""
        return int(self.gather([value])[src][0])

    # ----------------------------------------------------------------- agreement
    def agree(self, problem):
        """Raise the same ``ValueError`` on every rank when any rank found a problem.

        Parameters
        ----------
        problem : str or None
            This rank's problem (``None``: none).
        """
        if self.world_size == 1:
            if problem:
                raise ValueError(problem)
            return
        # A flag first (under the timeout), the messages only when some rank has one.
        flags = [int(f[0]) for f in self.gather([int(bool(problem))])]
        if not any(flags):
            return
        found = [None] * self.world_size
        try:  # every rank has just answered: no timeout needed (nor offered by torch)
            self._dist.all_gather_object(found, problem, group=self.group)
        except RuntimeError as exc:
            raise _failed(self, exc) from exc
        problems = [f"rank {rank}: {p}" for rank, p in enumerate(found) if p]
        raise ValueError("Data-parallel input refused. " + " ".join(problems))

    def same_everywhere(self, what, value):
        """Agree that ``value`` (anything with a stable ``repr``) is equal on every rank."""
        digests = [int(d[0]) for d in self.gather([_digest(value)])]
        differ = [str(r) for r, d in enumerate(digests) if d != digests[0]]
        if differ:  # every rank sees the same digests: all raise the same error
            ranks = ("rank " if len(differ) == 1 else "ranks ") + ", ".join(differ)
            raise ValueError(f"Data-parallel input refused: {what} differs on {ranks} from "
                             "rank 0's.")


#: Parameters that may differ between the ranks of one data-parallel fit: threads,
#: messages and hardware are each rank's own; the seed is rank 0's (broadcast); the
#: global batch is the sum of the ranks' batches.
RANK_LOCAL_PARAMETERS = frozenset({"n_jobs", "verbose", "device", "callbacks", "random_state",
                                   "batch_size"})


def agree_on_parameters(estimator, collective):
    """Refuse, on every rank, an estimator whose class or parameters (other than
    :data:`RANK_LOCAL_PARAMETERS`) differ from rank 0's: ranks that build different
    models would exchange tensors of different meaning or shape."""
    params = {name: value for name, value in estimator.get_params(deep=False).items()
              if name not in RANK_LOCAL_PARAMETERS}
    collective.same_everywhere("The estimator (class and parameter names)",
                               (type(estimator).__name__, sorted(params)))
    names = sorted(params)
    found = collective.gather([_digest(params[name], exact=True) for name in names])
    differ = {}
    for rank, digests in enumerate(found):
        for name, digest, first in zip(names, digests, found[0]):
            if digest != first:
                differ.setdefault(name, []).append(str(rank))
    if differ:  # every rank sees the same digests: all raise the same error
        which = "; ".join(f"{name} on rank{'s' * (len(ranks) > 1)} {', '.join(ranks)}"
                          for name, ranks in differ.items())
        raise ValueError(
            f"Data-parallel input refused: parameters differ from rank 0's ({which}); every "
            "rank must fit the same model (only "
            f"{', '.join(sorted(RANK_LOCAL_PARAMETERS))} may differ).")


def nccl_device_problem(backend, device, current_index=None):
    """What is wrong with training on ``device`` in a process group of ``backend``
    (``None``: nothing). NCCL communicates on each process's current CUDA device
    (``current_index``, default ``torch.cuda.current_device()``): a model on another
    GPU of the process would make every exchange copy across GPUs or fail."""
    if "nccl" not in backend or device.type != "cuda":  # "cuda:nccl,cpu:gloo" too
        return None  # gloo takes any device; NCCL copies host tensors to the GPU
    current = torch.cuda.current_device() if current_index is None else current_index
    if device.index is not None and device.index != current:
        return (f"device {device} is not this process's current CUDA device (cuda:{current}), "
                "on which NCCL communicates: call torch.cuda.set_device(local_rank) before "
                "init_process_group and pass device='cuda' (or 'auto').")
    return None


def _digest(value, exact=False):
    """A 56-bit digest of ``value``: of its ``repr``, or ``exact``ly of its contents
    (joblib's hash: arrays bit for bit, whatever numpy prints)."""
    text = joblib.hash(value) if exact else repr(value)
    return int(hashlib.blake2b(text.encode(), digest_size=7).hexdigest(), 16)


class _SumOverRanks(torch.autograd.Function):
    """All-reduce (sum) forward and backward, under the collective's timeout."""

    @staticmethod
    def forward(ctx, tensor, collective):
        ctx.collective = collective
        return collective.sum_(tensor.detach().clone())

    @staticmethod
    def backward(ctx, grad):
        return ctx.collective.sum_(grad.detach().clone()), None


def _failed(collective, exc):
    """A collective that broke: say what most likely happened."""
    return RuntimeError(
        f"rank {collective.rank} of {collective.world_size}: a collective operation failed "
        f"({exc}). Another rank most likely stopped (an error, or its process died); see "
        "its own message. Resume from the last pickle with warm_start=True (the user "
        "guide, 'Training across machines')."
    )
