"""One model across processes and machines, on ``torch.distributed``.

Inside :func:`data_parallel`, ``fit``, ``partial_fit`` and ``score`` of the estimators
that support it, and the evaluators and scorers of :mod:`sktopics.model_selection`, see
the union of every rank's documents as one corpus; ``transform`` and ``score_samples``
return the rows of this rank's documents. Outside it nothing changes. See the user
guide, "Training across machines".
"""

import contextlib

from .utils._distributed import open_collective

__all__ = ["data_parallel"]


@contextlib.contextmanager
def data_parallel(group=None, *, timeout=None):
    """Fit and score one model over the documents of every rank of a process group.

    Start the processes with ``torchrun`` (one per GPU, or per machine) and call
    :func:`torch.distributed.init_process_group` first; each rank then passes its own
    share of the corpus. :class:`~sktopics.LDAGibbs` sweeps each rank's tokens and sums
    the word-topic counts over the ranks once per sweep (with
    ``algorithm="parallel"`` the model equals a one-process fit of the concatenated
    corpus, ranks in order); the learned priors and the likelihood trace use global
    sums; every rank ends with the same ``components_``, and ``doc_topic_`` holds the
    rows of its own documents. The neural estimators take every step down the gradient
    of the global batch's mean loss (the global batch is the sum of the ranks'
    ``batch_size``) and normalise with the global batch's statistics. ``score`` returns the score of
    every rank's documents on every rank, and so do the evaluators of
    :mod:`sktopics.model_selection` (their result is the whole held-out set's).

    Parameters
    ----------
    group : torch.distributed.ProcessGroup or None, default=None
        The ranks the model spans; ``None``: the default group (gloo on CPUs, NCCL on
        GPUs, as initialised).
    timeout : float or None, default=None
        Seconds a rank waits for the others at each exchange before it raises a
        ``RuntimeError`` (when a rank died, say); ``None``: the process group's own
        timeout.

    Yields
    ------
    collective : object
        The group's ``rank`` and ``world_size``.

    Raises
    ------
    RuntimeError
        When no process group is initialised.

    Examples
    --------
    Launched with ``torchrun --nproc-per-node 2 train.py``::

        import torch.distributed as dist
        from sktopics import LDAGibbs
        from sktopics.distributed import data_parallel

        dist.init_process_group("gloo")
        X_local = my_share_of_the_corpus(dist.get_rank(), dist.get_world_size())
        with data_parallel():
            model = LDAGibbs(n_components=100, algorithm="parallel").fit(X_local)
    """
    with open_collective(group, timeout) as collective:
        yield collective
