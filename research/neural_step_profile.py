"""Where a neural training step's time goes, on the CPU.

Fits the estimator for two epochs (skorch's epoch durations are printed), then times
bare epochs of the same module and optimiser over the same batches (forward, loss,
backward, Adam), times cutting an epoch's batches, and profiles 20 steps with
``torch.profiler``: operator calls per step and the 25 operators with the most
self time.

Usage::

    python research/neural_step_profile.py prodlda 2   # ProdLDA, the plain loop's settings
    python research/neural_step_profile.py pamvi 1     # PAMVI (2, 50) at its defaults

Run at ab8e3a5 (2-core AMD EPYC VM, torch 2.13): ProdLDA at 2 threads, 7.5 ms of
self time a step under the profiler, 571 operator calls; matrix products 2.4 ms, the
fused batch norm and softmax of the decoder 1.9 ms (forward and backward), Adam 0.7
ms, the encoder's sparse first layer 0.5 ms. PAMVI at 2 threads: 1,104 operator calls
a step; at eb76bde, with the level encoders batched, 797 at 1 thread.
"""

import sys
import time

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from sktopics import PAMVI, ProdLDA
from sktopics._neural._data import CSRBatchIterator, CSRDataset
from sktopics.datasets import load_20news_avitm


def main(which, threads, data_home="../shared/data"):
    torch.set_num_threads(threads)
    X = load_20news_avitm(data_home, subset="train").data.astype(np.float32)
    if which == "prodlda":
        model = ProdLDA(50, max_iter=2, dropout=0.6, learning_rate=2e-3, batch_size=200,
                        batch_sampling="with_replacement", device="cpu", random_state=0)
    else:
        model = PAMVI((2, 50), max_iter=2, device="cpu", random_state=0)
    model.fit(X)
    net = model.net_
    print("skorch epoch seconds", [round(row["dur"], 3) for row in net.history])
    module, optimizer = net.module_.train(), net.optimizer_

    def iterator(seed):
        return CSRBatchIterator(CSRDataset(X), model.batch_size, sampling=model.batch_sampling,
                                seed=seed, device="cpu")

    batches = [batch for batch, _ in iterator(1)]
    print("steps an epoch", len(batches))

    def bare(batches):
        for batch in batches:
            optimizer.zero_grad(set_to_none=True)
            module.negative_elbo(batch, module(batch)).mean().backward()
            optimizer.step()

    for _ in range(3):
        start = time.perf_counter()
        bare(batches)
        seconds = time.perf_counter() - start
        print(f"bare epoch {seconds:.3f} s, {1000 * seconds / len(batches):.2f} ms a step")
    start = time.perf_counter()
    list(iterator(2))
    print("cutting an epoch's batches", round(time.perf_counter() - start, 3), "s")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        bare(batches[:20])
    averages = prof.key_averages()
    calls = sum(e.count for e in averages if e.key.startswith("aten::"))
    print("operator calls a step (all levels)", calls / 20)
    print(averages.table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 2)
