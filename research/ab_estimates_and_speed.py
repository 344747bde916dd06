"""Old/new A/B of two checkouts on the CPU: the same numbers, and the same speed.

Written to check that the device-handling changes of f9dbdb0 (the evaluation's proposal
no longer moves the fitted encoder to the evaluation device, ratio-AIS accepts the GPU's
``kernel="auto"`` when the two priors differ, a GPU-fitted model's device travels in its
pickle) left CPU results bit-identical and CPU speed unchanged; it compares any two
trees.

Usage (two checkouts, e.g. ``git worktree add /tmp/base 24f5a56``)::

    python research/ab_estimates_and_speed.py /tmp/base .   # both trees, alternating
    MODES=gibbs REPEATS=5 python research/ab_estimates_and_speed.py /tmp/base .  # speed only

Each measurement runs in a fresh process with ``PYTHONPATH`` set to one tree:

* ``estimates``: every estimator's fitted attributes, transform and score, and every
  evaluator (AIS with both kernels and resampling, left-to-right, document
  completion, ratio-AIS, iteration-AIS, continuous AIS) at fixed seeds, compared
  for bit-identity;
* ``gibbs``: LDAGibbs K = 50, 100 sweeps on 20NG (one thread), fit and transform
  seconds and the final joint log-likelihood;
* ``prodlda``: ProdLDA K = 50, 5 epochs on 20NG (two threads), seconds per epoch and
  the final training loss;
* ``pamvi``: PAMVI (2, 50) at its defaults, 10 epochs on 20NG (two threads), seconds
  per epoch and the final training loss (``MODES=pamvi``; not in the default modes).

Needs the corpora in ``../shared/data`` (or ``$SKTOPICS_DATA``).
"""

import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = r'''
import json, os, pickle, sys, time, warnings
import numpy as np, torch
warnings.simplefilter("ignore")
from sktopics import AVITM, MoLDA, PAMVI, LDAGibbs, ProdLDA
from sktopics.datasets import load_20news_avitm, make_lda_corpus
from sktopics.model_selection import (ais_log_likelihood, document_completion_log_likelihood,
                                      iteration_ais, left_to_right_log_likelihood, ratio_ais)
mode, out = sys.argv[1], sys.argv[2]
data = os.environ.get("SKTOPICS_DATA", "../shared/data")
if mode == "estimates":
    torch.set_num_threads(1)
    X, _, _ = make_lda_corpus(n_samples=60, n_features=40, n_components=4, random_state=0)
    r = {}
    g = LDAGibbs(4, max_iter=60, burn_in=5, optimize_interval=5, snapshot_interval=10,
                 device="cpu", random_state=0).fit(X)
    g2 = LDAGibbs(3, max_iter=30, device="cpu", random_state=1).fit(X)
    r.update(gibbs=[g.components_, g.doc_topic_, g.doc_topic_prior_, g.transform(X), g.score(X)])
    for k in ("collapsed", "blocked"):
        r["ais_" + k] = ais_log_likelihood(g, X, n_temperatures=20, n_chains=3, kernel=k,
                                           resample_threshold=0.5, random_state=0).per_document
    r["l2r"] = left_to_right_log_likelihood(g, X, n_particles=10, random_state=0).per_document
    r["dc"] = document_completion_log_likelihood(g, X, n_particles=10, random_state=0).per_document
    r["ratio"] = ratio_ais(g, g2, X, n_temperatures=10, n_chains=3, direction="both",
                           random_state=0).per_document
    r["iteration"] = [x.per_document for x in iteration_ais(g, X, n_chains=3, random_state=0)]
    for cls, kw in ((ProdLDA, dict(n_components=4)), (AVITM, dict(n_components=4)),
                    (PAMVI, dict(structure=(2, 4))), (MoLDA, dict(component_sizes=(2, 3)))):
        m = cls(max_iter=3, batch_size=20, hidden_sizes=(16,), device="cpu", random_state=0,
                **kw).fit(X)
        r[cls.__name__] = [m.components_, m.transform(X), m.score(X),
                           list(m.history_[:, "train_loss"]),
                           ais_log_likelihood(m, X[:10], n_temperatures=10, n_chains=2,
                                              random_state=0).per_document]
    pickle.dump(r, open(out, "wb"))
elif mode == "gibbs":
    torch.set_num_threads(1)
    X = load_20news_avitm(data, subset="train").data
    T = load_20news_avitm(data, subset="test").data
    LDAGibbs(50, max_iter=2, device="cpu", random_state=0).fit(X[:500])
    t = time.perf_counter(); m = LDAGibbs(50, max_iter=100, device="cpu", random_state=0).fit(X)
    fit = time.perf_counter() - t
    t = time.perf_counter(); m.transform(T); transform = time.perf_counter() - t
    json.dump(dict(fit_s=fit, transform_s=transform, log_lik=m.log_likelihood_trace_[-1]),
              open(out, "w"))
elif mode == "pamvi":
    torch.set_num_threads(2)
    X = load_20news_avitm(data, subset="train").data.astype(np.float64)
    PAMVI((2, 50), max_iter=1, device="cpu", random_state=0).fit(X[:2000])
    t = time.perf_counter()
    m = PAMVI((2, 50), max_iter=10, device="cpu", random_state=0).fit(X)
    json.dump(dict(s_per_epoch=(time.perf_counter() - t) / 10,
                   loss=m.history_[-1, "train_loss"]), open(out, "w"))
else:
    torch.set_num_threads(2)
    X = load_20news_avitm(data, subset="train").data.astype(np.float64)
    ProdLDA(50, max_iter=1, device="cpu", random_state=0).fit(X[:2000])
    t = time.perf_counter()
    m = ProdLDA(50, max_iter=5, batch_size=200, device="cpu", random_state=0).fit(X)
    json.dump(dict(s_per_epoch=(time.perf_counter() - t) / 5,
                   loss=m.history_[-1, "train_loss"]), open(out, "w"))
'''


def run(tree, mode):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        env = {**os.environ, "PYTHONPATH": str(Path(tree).resolve())}
        subprocess.run([sys.executable, "-c", CHILD, mode, str(out)], check=True, env=env,
                       cwd=tmp)
        return pickle.loads(out.read_bytes()) if mode == "estimates" else json.loads(
            out.read_text())


def same(a, b):
    import numpy as np

    if isinstance(a, dict):
        return {k: same(a[k], b[k]) for k in a}
    if isinstance(a, list):
        return all(same(u, v) for u, v in zip(a, b)) and len(a) == len(b)
    return bool(np.array_equal(np.asarray(a), np.asarray(b)))


def main():
    old, new = sys.argv[1], sys.argv[2]
    modes = os.environ.get("MODES", "estimates,gibbs,prodlda").split(",")
    if "estimates" in modes:
        diff = same(run(old, "estimates"), run(new, "estimates"))
        print("bit-identical:", diff)
    for mode in [m for m in modes if m != "estimates"]:
        for _ in range(int(os.environ.get("REPEATS", "3"))):
            print(mode, "old", run(old, mode), flush=True)
            print(mode, "new", run(new, mode), flush=True)


if __name__ == "__main__":
    main()
