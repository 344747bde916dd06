"""What ``torch.compile`` of the training step's forward and loss buys on a CPU.

The step of a fitted estimator (its own module and Adam, its own sparse batches of
AVITM's 20 Newsgroups) is timed eagerly, then compiled (``torch.compile(dynamic=True)``
of forward + loss; the backward is compiled with it by AOTAutograd, the optimiser
stays eager), alternating over rounds. Reported: the first compiled call's seconds
(cold: an empty inductor cache; warm: a fresh process with the cache of an earlier
run), the seconds of the recompilations the first epoch triggers (the last, shorter
batch and the first batch of a new size of non-zeros), and the median ms per step of
each path.

Usage (each call is a fresh process; run twice for cold, then warm)::

    TORCHINDUCTOR_CACHE_DIR=/tmp/inductor python research/neural_compile_study.py pamvi 1
    python research/neural_compile_study.py prodlda 2

Prints one line of JSON; the four runs at ec3f29f are in ``results/neural_compile_study.json``.
"""

import json
import sys
import time
import warnings

import numpy as np
import torch

from sktopics import PAMVI, ProdLDA
from sktopics._neural._data import CSRBatchIterator, CSRDataset
from sktopics.datasets import load_20news_avitm


def main(model_name, threads, data_home="../shared/data", rounds=3):
    torch.set_num_threads(threads)
    X = load_20news_avitm(data_home, subset="train").data.astype(np.float32)
    if model_name == "pamvi":  # its defaults: batch 64, shuffled
        model = PAMVI((2, 50), max_iter=1, device="cpu", random_state=0)
    else:  # the original ProdLDA code's settings, as bench_neural_speed.py
        model = ProdLDA(50, max_iter=1, dropout=0.6, learning_rate=2e-3, batch_size=200,
                        batch_sampling="with_replacement", device="cpu", random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    module, optimizer = model.net_.module_.train(), model.net_.optimizer_
    batches = [b for b, _ in CSRBatchIterator(CSRDataset(X), model.batch_size,
                                              sampling=model.batch_sampling, seed=1,
                                              device="cpu")][:60]

    def loss(batch):
        return module.negative_elbo(batch, module(batch)).mean()

    def per_step(fn):
        start = time.perf_counter()
        for batch in batches:
            optimizer.zero_grad(set_to_none=True)
            fn(batch).backward()
            optimizer.step()
        return (time.perf_counter() - start) / len(batches) * 1e3

    per_step(loss)
    compiled = torch.compile(loss, dynamic=True)
    start = time.perf_counter()
    compiled(batches[0]).backward()
    first_call = time.perf_counter() - start
    start = time.perf_counter()
    per_step(compiled)  # the recompilations of the first pass over other batch shapes
    first_pass = time.perf_counter() - start
    times = {"eager": [], "compiled": []}
    for _ in range(rounds):
        times["eager"].append(per_step(loss))
        times["compiled"].append(per_step(compiled))
    print(json.dumps({
        "model": model_name, "threads": threads, "torch": torch.__version__,
        "first_compiled_call_s": round(first_call, 1), "first_pass_s": round(first_pass, 1),
        "ms_per_step": {k: round(float(np.median(v)), 2) for k, v in times.items()},
        "rounds": {k: [round(x, 2) for x in v] for k, v in times.items()},
    }))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
