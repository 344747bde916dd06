"""Run a test's worker on several gloo ranks, each in its own process."""

import pickle
import time
from pathlib import Path

import pytest


def run_ranks(worker, folder, *args, world_size=2, deadline=600):
    """``worker(rank, world_size, folder, *args)`` on ``world_size`` spawned processes;
    each writes what it found to ``folder/rank<r>.pkl``. Returns the ranks' findings in
    rank order; a rank that hangs fails the test after ``deadline`` seconds instead of
    holding up CI."""
    import torch.multiprocessing as mp

    context = mp.start_processes(worker, args=(world_size, str(folder), *args),
                                 nprocs=world_size, start_method="spawn", join=False)
    end = time.monotonic() + deadline
    while not context.join(timeout=5):
        if time.monotonic() > end:
            for process in context.processes:
                process.kill()
            pytest.fail(f"the ranks are still running after {deadline} s")
    found = []
    for rank in range(world_size):
        with open(Path(folder) / f"rank{rank}.pkl", "rb") as f:
            found.append(pickle.load(f))
    return found
