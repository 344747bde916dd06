"""Old/new A/B of the issue #18 redesign of ``model_selection``.

Usage (two checkouts, e.g. ``git worktree add /tmp/base 512b636``)::

    python research/ab_issue18.py estimates /tmp/base .   # bit-identity of every path
    python research/ab_issue18.py speed /tmp/base .       # throughput, alternating

Each measurement runs in a fresh process with ``PYTHONPATH`` set to one tree.
``estimates`` runs every evaluator on every path it has (AIS: both kernels, with and
without resampling, PAM paths, HMC with and without step tuning, importance
sampling; left-to-right and document completion on LDA and PAM; ratio-AIS on the
three paths with the four starts and both directions, the paired fallback;
iteration-AIS; every estimator's ``score``) at fixed seeds and reports which
differ. ``speed`` times AIS (both kernels), ratio-AIS and left-to-right on 600
20NG test documents with a K = 50 LDAGibbs model, one thread.

Needs the corpora in ``../shared/data`` (or ``$SKTOPICS_DATA``).
"""

import json
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path

ESTIMATES = r'''
import pickle, sys, warnings
import numpy as np, torch
warnings.simplefilter("ignore")
torch.set_num_threads(1)
from sktopics import AVITM, MoLDA, PAMVI, LDAGibbs, ProdLDA
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import (ais_log_likelihood, document_completion_log_likelihood,
                                      iteration_ais, left_to_right_log_likelihood, ratio_ais)
X, _, _ = make_lda_corpus(n_samples=40, n_features=30, n_components=3, random_state=0)
r = {}
g = LDAGibbs(3, max_iter=40, optimize_interval=5, burn_in=5, snapshot_interval=10,
             device="cpu", random_state=0).fit(X)
g2 = LDAGibbs(4, max_iter=30, device="cpu", random_state=1).fit(X)
g3 = LDAGibbs(3, max_iter=30, device="cpu", random_state=2).fit(X)
r["score"] = g.score(X)
for k in ("collapsed", "blocked"):
    for t in (0.0, 0.5):
        r[f"ais_{k}_{t}"] = ais_log_likelihood(g, X, n_temperatures=15, n_chains=3, kernel=k,
                                              resample_threshold=t, random_state=0).per_document
r["ais_sched"] = ais_log_likelihood(g, X, n_temperatures=7, n_chains=2, schedule="geometric",
                                    random_state=3).per_document
r["l2r"] = left_to_right_log_likelihood(g, X, n_particles=8, random_state=0).per_document
r["l2r_rej"] = left_to_right_log_likelihood(g, X[:8], n_particles=4, rejuvenate=True,
                                            random_state=0).per_document
r["dc"] = document_completion_log_likelihood(g, X, n_particles=8, random_state=0).per_document
for path in ("geometric", "convex", "hybrid"):
    for start in ("sequential", "ais", "burnin"):
        for other in (g2, g3):
            for direction in ("forward", "both"):
                res = ratio_ais(g, other, X[:15], path=path, start=start, direction=direction,
                                n_temperatures=6, n_chains=2, random_state=0)
                r[f"ratio_{path}_{start}_{id(other) == id(g2)}_{direction}"] = res.per_document
r["iteration"] = [x.per_document for x in iteration_ais(g, X, n_chains=3, random_state=0)]
r["iteration_geo"] = [x.per_document for x in iteration_ais(g, X, path="hybrid", n_chains=2,
                                                            random_state=1)]
for cls, kw in ((ProdLDA, dict(n_components=3)), (AVITM, dict(n_components=3)),
                (PAMVI, dict(structure=(2, 3))), (MoLDA, dict(components=(2, 3)))):
    m = cls(max_iter=3, batch_size=20, hidden_sizes=(16,), device="cpu", random_state=0,
            **kw).fit(X)
    out = [m.score(X), ais_log_likelihood(m, X[:10], n_temperatures=8, n_chains=2,
                                          random_state=0).per_document]
    if cls is ProdLDA:
        out.append(ais_log_likelihood(m, X[:10], n_temperatures=8, n_chains=2, start="prior",
                                      target_acceptance=0.6, random_state=0).per_document)
        out.append(ratio_ais(m, g, X[:10], n_temperatures=5, n_chains=2,
                             random_state=0).per_document)
    if cls in (PAMVI, MoLDA):
        out.append(left_to_right_log_likelihood(m, X[:10], n_particles=5,
                                                random_state=0).per_document)
    r[cls.__name__] = out
pickle.dump(r, open(sys.argv[1], "wb"))
'''

SPEED = r'''
import json, os, pickle, sys, time
import numpy as np, torch
torch.set_num_threads(1)
from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm
from sktopics.model_selection import ais_log_likelihood, left_to_right_log_likelihood, ratio_ais
data = os.environ.get("SKTOPICS_DATA", "../shared/data")
model_path = os.environ["AB_MODEL"]
T = load_20news_avitm(data, subset="test").data
A, B = pickle.load(open(model_path, "rb"))
X = T[np.random.RandomState(0).permutation(T.shape[0])[:600]]
runs = {
    "ais default S=20 M=1": lambda: ais_log_likelihood(A, X, n_temperatures=20, n_chains=1, random_state=0),
    "ais collapsed S=10 M=10": lambda: ais_log_likelihood(
        A, X, n_temperatures=10, n_chains=10, kernel="collapsed", random_state=0),
    "ais blocked S=20 M=1": lambda: ais_log_likelihood(
        A, X, n_temperatures=20, n_chains=1, kernel="blocked", random_state=0),
    "ratio-ais geometric S=10 M=1": lambda: ratio_ais(A, B, X, n_temperatures=10, n_chains=1, random_state=0),
    "left-to-right R=20": lambda: left_to_right_log_likelihood(A, X, n_particles=20, n_filters=1, random_state=0),
    "left-to-right R=100 x 2": lambda: left_to_right_log_likelihood(A, X, n_particles=100, random_state=0),
}
ais_log_likelihood(A, X[:50], n_temperatures=2, n_chains=1, random_state=0)  # compile
out = {}
for name, fn in runs.items():
    t = time.perf_counter(); res = fn(); s = time.perf_counter() - t
    out[name] = dict(seconds=s, updates_per_s=res.n_token_updates / s, per_token=res.per_token)
json.dump(out, open(sys.argv[1], "w"))
'''


def run(tree, code, env=None):
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out"
        data = os.path.abspath(os.environ.get("SKTOPICS_DATA", "../shared/data"))
        env = {**os.environ, **(env or {}), "PYTHONPATH": str(Path(tree).resolve()),
               "SKTOPICS_DATA": data}
        subprocess.run([sys.executable, "-c", code, str(out)], check=True, env=env, cwd=tmp)
        return out.read_bytes()


def differences(a, b, prefix=""):
    import numpy as np

    if isinstance(a, dict):
        return [d for k in a for d in differences(a[k], b[k], f"{prefix}{k}.")]
    if isinstance(a, list):
        return [d for i, (u, v) in enumerate(zip(a, b)) for d in differences(u, v, f"{prefix}{i}.")]
    return [] if np.array_equal(np.asarray(a), np.asarray(b)) else [prefix.rstrip(".")]


def fit_models(path):
    """The K = 50 and K = 40 LDAGibbs models of the speed runs (once)."""
    if Path(path).exists():
        return
    code = r'''
import os, pickle, sys, torch
torch.set_num_threads(2)
from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm
X = load_20news_avitm(os.environ.get("SKTOPICS_DATA", "../shared/data"), subset="train").data
A = LDAGibbs(50, max_iter=100, device="cpu", random_state=0).fit(X)
B = LDAGibbs(40, max_iter=100, device="cpu", random_state=1).fit(X)
pickle.dump((A, B), open(sys.argv[1], "wb"))
'''
    Path(path).write_bytes(run(sys.argv[2], code))


def main():
    mode, old, new = sys.argv[1:4]
    if mode == "estimates":
        a, b = (pickle.loads(run(t, ESTIMATES)) for t in (old, new))
        diff = differences(a, b)
        print(f"{len(a)} groups of estimates; differing: {diff or 'none'}")
        return
    model = os.environ.get("AB_MODEL", "/tmp/ab_issue18_models.pkl")
    fit_models(model)
    for _ in range(int(os.environ.get("REPEATS", "2"))):
        for name, tree in (("old", old), ("new", new)):
            res = json.loads(run(tree, SPEED, {"AB_MODEL": model}))
            for k, v in res.items():
                print(f"{name} {k:32s} {v['seconds']:7.2f} s {v['updates_per_s'] / 1e6:6.2f} M/s "
                      f"per_token {v['per_token']:.4f}", flush=True)


if __name__ == "__main__":
    main()
