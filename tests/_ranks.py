"""Run a test's scenario on several gloo ranks, each in its own process."""

import os
import pickle
import time
from pathlib import Path

import pytest


def gloo_rank(rank, world_size, folder, scenario, *args):
    """One rank: join a gloo group through ``folder/store`` with one torch thread, run
    ``scenario(rank, *args)`` and write what it returned, or the exception it raised,
    to ``folder/rank<r>.pkl``."""
    import torch
    import torch.distributed as dist

    from ._instances import use_suite_device

    use_suite_device()
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"file://{folder}/store", rank=rank,
                            world_size=world_size)
    try:
        out = scenario(rank, *args)
    except Exception as exc:  # noqa: BLE001 - reported to the test
        out = exc
    with open(os.path.join(folder, f"rank{rank}.pkl"), "wb") as f:
        pickle.dump(out, f)
    dist.destroy_process_group()


def run_ranks(scenario, folder, *args, world_size=2, deadline=600):
    """``scenario(rank, *args)`` on ``world_size`` spawned gloo ranks (:func:`gloo_rank`).
    Returns the ranks' findings in rank order; a rank that hangs fails the test after
    ``deadline`` seconds instead of holding up CI."""
    import torch.multiprocessing as mp

    context = mp.start_processes(gloo_rank, args=(world_size, str(folder), scenario, *args),
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
