"""Old/new A/B of every evaluation path: are two checkouts' estimates bit-identical?

Written for the redesign of ``model_selection`` (the engines moved to
``sktopics._evaluation``, one random-number module, one count policy, one batch
driver), which was to change no estimate; it compares any two trees.

Usage (two checkouts, e.g. ``git worktree add /tmp/base 512b636``)::

    python research/ab_evaluation_estimates.py estimates /tmp/base .   # every path

Each measurement runs in a fresh process with ``PYTHONPATH`` set to one tree.
``estimates`` runs every evaluator on every path it has (AIS: both kernels, with and
without resampling, PAM paths, HMC with and without step tuning, importance
sampling; left-to-right and document completion on LDA and PAM; ratio-AIS on the
three paths with the four starts and both directions, the paired fallback;
iteration-AIS; every estimator's ``score``) at fixed seeds and reports which
differ. The old/new speed comparison is a benchmark:
``benchmarks/bench_model_selection.py --speed --baseline /tmp/base``.
"""

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
                (PAMVI, dict(structure=(2, 3))), (MoLDA, dict(component_sizes=(2, 3)))):
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


def main():
    old, new = sys.argv[2:4] if sys.argv[1] == "estimates" else sys.argv[1:3]
    a, b = (pickle.loads(run(t, ESTIMATES)) for t in (old, new))
    diff = differences(a, b)
    print(f"{len(a)} groups of estimates; differing: {diff or 'none'}")


if __name__ == "__main__":
    main()
