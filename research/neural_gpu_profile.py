"""Where a ProdLDA epoch's time goes on a GPU (torch.profiler over 3 epochs).

20 Newsgroups (AVITM's), K = 50, batch 200, as in the GPU kit. Prints the operators
by total host time and the host-device synchronisations; writes the table to
``neural_gpu_profile.txt`` in ``--output`` (default: ``research/results``).

Usage (a CUDA machine): ``python research/neural_gpu_profile.py --data-home DIR
[--output DIR]``.
"""

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sktopics import ProdLDA  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-home", required=True)
    p.add_argument("--output", default=str(ROOT / "research" / "results"), metavar="DIR",
                   help="folder for neural_gpu_profile.txt (default: research/results)")
    args = p.parse_args()
    X = load_20news_avitm(args.data_home, subset="train").data.astype(np.float64)
    ProdLDA(50, max_iter=1, batch_size=200, device="cuda", random_state=0).fit(X)
    torch.cuda.synchronize()
    tic = time.perf_counter()
    ProdLDA(50, max_iter=3, batch_size=200, device="cuda", random_state=0).fit(X)
    torch.cuda.synchronize()
    print(f"3 epochs without the profiler: {time.perf_counter() - tic:.3f} s", flush=True)
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        ProdLDA(50, max_iter=3, batch_size=200, device="cuda", random_state=0).fit(X)
        torch.cuda.synchronize()
    table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=45)
    table_self = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=30)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "neural_gpu_profile.txt").write_text(table + "\n\n" + table_self)
    print(table_self)


if __name__ == "__main__":
    main()
