"""The CUDA kernels of eager ProdLDA training steps on a GPU, by total device time.

20 Newsgroups, K = 50, batch 200 drawn with replacement (the plain loop's settings),
CUDA graphs off so that every kernel is seen: one epoch under torch's profiler after
a warm-up fit. Writes the kernel table and the device time per step.

Usage: ``python research/prodlda_gpu_kernels.py DATA_HOME OUT_DIR [COMMIT]``
"""

import os
import sys

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from sktopics import ProdLDA
from sktopics.datasets import load_20news_avitm

data_home, out = sys.argv[1], sys.argv[2]
os.environ["SKTOPICS_CUDA_GRAPHS"] = "0"
X = load_20news_avitm(data_home, subset="train").data.astype(np.float64)
params = dict(dropout=0.6, learning_rate=2e-3, batch_size=200,
              batch_sampling="with_replacement", device="cuda", random_state=0)
ProdLDA(50, max_iter=1, **params).fit(X)  # warm-up
with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
    model = ProdLDA(50, max_iter=1, **params).fit(X)
    torch.cuda.synchronize()
steps = X.shape[0] // 200
table = prof.key_averages().table(sort_by="self_cuda_time_total", row_limit=40)
# the kernels' own rows (operator rows repeat their kernels' device time)
events = [e for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA]
total = sum(e.self_device_time_total for e in events) / 1e3  # ms
kernels = sum(e.count for e in events)
with open(os.path.join(out, "prodlda_gpu_kernels.txt"), "w") as f:
    f.write(f"commit {sys.argv[3] if len(sys.argv) > 3 else '?'}; one epoch, {steps} steps "
            "(plus the fit's own passes over the corpus)\n")
    f.write(f"device time {total:.1f} ms, {total / steps:.3f} ms a step; "
            f"{kernels} kernel launches, {kernels / steps:.0f} a step\n\n")
    f.write(table)
print(f"device {total / steps:.3f} ms/step, {kernels / steps:.0f} kernels/step")
print(table[:6000])
