"""PAMVI (2, 50) at its defaults, with and without early stopping, on 20 Newsgroups.

Does stopping when the held-out objective stops improving (``validation_fraction``,
``n_iter_no_change``) shorten a default fit without losing coherence? For each seed,
one default fit (100 epochs) and fits holding out 10 % of the training documents that
stop after 10 or 5 epochs without improvement, alternating, 2 torch threads: fit
seconds, epochs run, test-split NPMI (top 10 words, gensim's convention) and topic
diversity, as ``benchmarks/bench_pam.py`` measures them.

Usage: ``python research/pam_early_stopping.py DATA_HOME OUT.json [SEEDS]``
"""

import json
import sys
import time
import warnings

import numpy as np
import torch

from sktopics import PAMVI
from sktopics.datasets import load_20news_avitm
from sktopics.metrics import npmi_coherence, topic_diversity

data_home, out = sys.argv[1], sys.argv[2]
seeds = [int(s) for s in sys.argv[3].split(",")] if len(sys.argv) > 3 else [0, 1, 2]
torch.set_num_threads(2)
train = load_20news_avitm(data_home, subset="train").data.tocsr().astype(np.float64)
test = load_20news_avitm(data_home, subset="test").data.tocsr().astype(np.float64)
VARIANTS = {"default (100 epochs)": {},
            "early stopping, 10 epochs": {"validation_fraction": 0.1, "n_iter_no_change": 10},
            "early stopping, 5 epochs": {"validation_fraction": 0.1, "n_iter_no_change": 5}}
rows = []
for seed in seeds:
    for name, params in VARIANTS.items():
        model = PAMVI((2, 50), device="cpu", random_state=seed, **params)
        tic = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            model.fit(train)
            seconds = time.perf_counter() - tic
            npmi = float(npmi_coherence(model.components_, test, top_n=10,
                                        zero_cooccurrence="epsilon").mean)
        row = {"seed": seed, "variant": name, "seconds": seconds,
               "epochs": len(model.net_.history), "npmi": npmi,
               "td": float(topic_diversity(model.components_, top_n=10))}
        print(json.dumps(row), flush=True)
        rows.append(row)
        with open(out, "w") as f:
            json.dump({"commit": sys.argv[4] if len(sys.argv) > 4 else None, "rows": rows}, f,
                      indent=1)
