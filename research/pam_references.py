"""Reference models for PAMVI's coherence on 20 Newsgroups 2 / 50 (seventh round of pam_diagnosis.md).

Attributes tomotopy PAModel's lead (``pam_diagnosis.md``): the same Gibbs PAM with its
priors learned (tomotopy's default ``optim_interval=10``) and fixed, tomotopy's and
sktopics' flat Gibbs LDA with 50 topics, and EM refinement of a fitted PAMVI: multiplicative
EM updates of the leaf proportions (started at the posterior means) and of the topics, which
maximise the likelihood of the paths-summed-out PAM (its MAP for ``alpha = subalpha = 1``),
against the same EM (PLSA) from a random start. Quality only; the seconds printed are not
timings.

Usage: ``python research/pam_references.py [--seed 0] [--iterations 200]``.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common, bench_pam
from bench_pam import coherence, load, tomotopy_add_docs, tomotopy_topic_word

from sktopics import PAMVI, LDAGibbs
from sktopics.metrics import topic_diversity


def report(label, topic_word, X_test, seconds=None):
    eps, zero = coherence(topic_word, X_test)
    tail = f"  ({seconds:.0f} s)" if seconds is not None else ""
    print(f"{label:<58} NPMI eps {eps:.3f} zero {zero:.3f}  "
          f"TD {topic_diversity(topic_word, top_n=10):.2f}{tail}", flush=True)


def em(X, theta, phi, iterations, update_theta=True):
    """Maximum-likelihood EM for ``p(w | d) = theta_d @ phi`` (PLSA updates)."""
    X = sp.csr_matrix(X, dtype=np.float64)
    rows, cols = X.nonzero()
    for _ in range(iterations):
        ratio = X.data / np.einsum("ik,ik->i", theta[rows], phi[:, cols].T)
        R = sp.csr_matrix((ratio, (rows, cols)), shape=X.shape)
        new_phi = phi * (theta.T @ R)
        if update_theta:
            theta = theta * (R @ phi.T)
            theta /= theta.sum(1, keepdims=True)
        phi = new_phi / new_phi.sum(1, keepdims=True)
    return theta, phi


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=200, help="Gibbs iterations")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    import tomotopy as tp

    X, X_test, vocab = load("20ng")
    X = X[np.asarray(X.sum(1)).ravel() > 0]
    gibbs = {
        "tomotopy PAModel(2, 50), priors learned": tp.PAModel(k1=2, k2=50, seed=args.seed),
        "tomotopy PAModel(2, 50), priors fixed": tp.PAModel(k1=2, k2=50, seed=args.seed),
        "tomotopy LDAModel(50), alpha learned": tp.LDAModel(k=50, seed=args.seed),
    }
    gibbs["tomotopy PAModel(2, 50), priors fixed"].optim_interval = 0
    for label, model in gibbs.items():
        tomotopy_add_docs(model, X, vocab)
        start = time.perf_counter()
        model.train(args.iterations, workers=1)
        report(label, tomotopy_topic_word(model, vocab, 50), X_test, time.perf_counter() - start)
        if isinstance(model, tp.PAModel):
            sub = np.array([model.subalpha[s] for s in range(2)])
            print(f"    alpha {np.round(model.alpha, 3)}, subalpha {sub.min():.4f}-{sub.max():.4f}"
                  f" (sums {np.round(sub.sum(1), 2)})")
    start = time.perf_counter()
    lda = LDAGibbs(50, max_iter=args.iterations, random_state=args.seed).fit(X)
    report("sktopics LDAGibbs(50)", lda.components_, X_test, time.perf_counter() - start)

    pam = PAMVI((2, 50), max_iter=20, random_state=args.seed, device="cpu").fit(X)
    theta0, phi0 = pam.transform(X).astype(np.float64), pam.components_.astype(np.float64)
    report("PAMVI((2, 50)), 20 epochs", phi0, X_test)
    for n in (1, 5, 20):
        report(f"  EM on phi only, theta fixed, {n} iterations", em(X, theta0, phi0, n, False)[1],
               X_test)
    for n in (5, 20, 50):
        report(f"  EM on theta and phi, {n} iterations", em(X, theta0, phi0, n)[1], X_test)
    rng = np.random.default_rng(args.seed)
    phi = rng.dirichlet(np.ones(X.shape[1]), 50)
    theta = np.full((X.shape[0], 50), 1 / 50)
    for n, total in ((50, 50), (100, 150)):
        theta, phi = em(X, theta, phi, n)
        report(f"PLSA from a random start, {total} iterations", phi, X_test)


if __name__ == "__main__":
    main()
