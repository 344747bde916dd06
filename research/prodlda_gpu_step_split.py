"""Where a ProdLDA training step's time goes on a GPU with CUDA graphs.

For a 20 Newsgroups fit (K = 50, batch 200 drawn with replacement, the plain loop's
settings), per epoch: the wall time, the host time spent inside the training step
(padding the batch into the static one and launching the replay), and the GPU time
of the replays themselves (CUDA events around each launch). What remains of the wall
time is the batch iterator and skorch's per-batch bookkeeping. A step whose GPU time
is near its wall time is bound by the device; one whose host time dominates is bound
by Python.

Usage: ``python research/prodlda_gpu_step_split.py DATA_HOME OUT.json``
"""

import json
import os
import sys
import time

import numpy as np
import torch

from sktopics import ProdLDA
from sktopics._neural import _graphs, _net
from sktopics.datasets import load_20news_avitm

data_home, out = sys.argv[1], sys.argv[2]
X = load_20news_avitm(data_home, subset="train").data.astype(np.float64)
params = dict(dropout=0.6, learning_rate=2e-3, batch_size=200,
              batch_sampling="with_replacement", device="cuda", random_state=0)

events, host = [], []
capture = _graphs.CUDAGraphBackend.capture


def timed_capture(self, step):
    replay = capture(self, step)

    def timed_replay():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        outputs = replay()
        end.record()
        events.append((start, end))
        return outputs

    return timed_replay


train_step = _net.TopicNet.train_step


def timed_step(self, batch, **fit_params):
    tic = time.perf_counter()
    step = train_step(self, batch, **fit_params)
    host.append(time.perf_counter() - tic)
    return step


_graphs.CUDAGraphBackend.capture = timed_capture
_net.TopicNet.train_step = timed_step

results = {"commit": sys.argv[3] if len(sys.argv) > 3 else None, "runs": []}
for graphs in ("1", "0", "1"):
    os.environ["SKTOPICS_CUDA_GRAPHS"] = graphs
    ProdLDA(50, max_iter=1, **params).fit(X)  # warm-up
    events.clear()
    host.clear()
    torch.cuda.synchronize()
    tic = time.perf_counter()
    model = ProdLDA(50, max_iter=10, **params).fit(X)
    torch.cuda.synchronize()
    wall = time.perf_counter() - tic
    epochs = [row["dur"] for row in model.net_.history]
    gpu = sum(s.elapsed_time(e) for s, e in events) / 1e3
    steps = len(host)
    row = {"graphs": graphs == "1", "fit_seconds": wall, "epoch_seconds": epochs,
           "steps": steps, "step_host_seconds": sum(host), "replays": len(events),
           "replay_gpu_seconds": gpu,
           "per_step_ms": {"epoch_wall": 1e3 * sum(epochs) / steps,
                           "inside_train_step_host": 1e3 * sum(host) / steps,
                           "inside_train_step_host_median": 1e3 * float(np.median(host)),
                           "replay_gpu": 1e3 * gpu / max(len(events), 1)}}
    print(json.dumps(row["per_step_ms"]), row["fit_seconds"], flush=True)
    results["runs"].append(row)
with open(out, "w") as f:
    json.dump(results, f, indent=1)
