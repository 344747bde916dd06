"""Where the CPU's dense parallel sweep spends its time at K = 50 (one thread), and
whether ``torch.compile`` fuses it into something faster.

20 Newsgroups (AVITM's training set, 1 M tokens). Part 1 times each operation of
:func:`~sktopics._gibbs._sweeps.dense_chunk` on one chunk of the default size, with
the real (unpredictable) targets of a sweep. Part 2 compiles a one-function version of
the draw with ``torch.compile`` (inductor's C++ backend; needs a C++ compiler) and
times it against the same function run eagerly.

Usage: ``python research/gibbs_cpu_profile.py [--data-home DIR] [--no-compile]``.
"""

import argparse
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_home  # noqa: E402

from sktopics._gibbs import _sweeps as sw  # noqa: E402
from sktopics._gibbs._state import GibbsCorpus, GibbsState, default_chunk  # noqa: E402
from sktopics._random import counter_uniform, stream_key  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402

K, BETA = 50, 0.01


def per_token(fn, n_tokens, repeat=50):
    fn()
    tic = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - tic) / repeat / n_tokens * 1e9


def parts(corpus, state, alpha):
    theta, phi = sw._frozen_tables(state, alpha, BETA)
    C = default_chunk(K)
    doc, word, z = corpus.doc[:C], corpus.word[:C], state.z[:C]
    u = counter_uniform(stream_key(0, 1, 1), torch.arange(C))
    p, tmp = torch.empty(C, K), torch.empty(C, K)
    torch.index_select(theta, 0, doc, out=p)
    p.mul_(torch.index_select(phi, 0, word))
    cum = torch.cumsum(p, 1)
    target = (cum[:, -1] * u)[:, None]
    rows = {
        "gather theta rows": lambda: torch.index_select(theta, 0, doc, out=tmp),
        "gather phi rows": lambda: torch.index_select(phi, 0, word, out=tmp),
        "product": lambda: torch.mul(p, p, out=tmp),
        "cumsum over K": lambda: torch.cumsum(p, 1, out=tmp),
        "searchsorted": lambda: torch.searchsorted(cum, target, right=True, out_int32=True),
        "uniforms": lambda: counter_uniform(stream_key(0, 1, 1), torch.arange(C)),
        "dense_chunk, all of it": lambda: sw.dense_chunk(
            doc, word, z, theta, phi, state.n_dk, state.n_wk, state.n_k, alpha, BETA, u,
            (p, tmp)),
    }
    print(f"one chunk of {C} tokens, K = {K}, 1 thread (ns per token)")
    for name, fn in rows.items():
        print(f"  {name:28s} {per_token(fn, C):7.1f}")
    sweep = per_token(lambda: sw.parallel_sweep(state, alpha, BETA, 0, 1, C),
                      corpus.n_tokens, repeat=3)
    print(f"  {'parallel_sweep, per token':28s} {sweep:7.1f}")


def draw(doc, word, z, u, theta, phi, n_dk, n_wk, n_k, alpha):
    """The whole draw in one function, for the compiler."""
    d, w, zz = doc.long(), word.long(), z.long()
    p = theta[d] * phi[w]
    own = (n_dk[d, zz] + alpha[zz] - 1.0) * (n_wk[w, zz] + (BETA - 1.0)) / (
        n_k[zz] + (K * BETA - 1.0))
    p = torch.where(torch.arange(K)[None, :] == zz[:, None], own[:, None], p)
    cum = torch.cumsum(p, 1)
    return (cum <= cum[:, -1:] * u[:, None]).sum(1).clamp_max(K - 1)


def compiled(corpus, state, alpha):
    theta, phi = sw._frozen_tables(state, alpha, BETA)
    tables = (theta, phi, state.n_dk.float(), state.n_wk.float(), state.n_k.float(), alpha)
    u = counter_uniform(stream_key(0, 1, 1), torch.arange(corpus.n_tokens))
    C = 1 << 14

    def chunk_args(start):
        stop = start + C
        return (corpus.doc[start:stop], corpus.word[start:stop], state.z[start:stop],
                u[start:stop]) + tables

    tic = time.perf_counter()
    fused = torch.compile(draw, dynamic=False)
    fused(*chunk_args(0))
    print(f"torch.compile: {time.perf_counter() - tic:.1f} s to compile")
    starts = range(0, corpus.n_tokens - C, C)
    for name, fn in (("compiled", fused), ("eager", draw)):
        tic = time.perf_counter()
        for start in starts:
            fn(*chunk_args(start))
        seconds = time.perf_counter() - tic
        print(f"  {name:10s} {seconds / (len(starts) * C) * 1e9:7.1f} ns per token")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--data-home", default=default_data_home())
    p.add_argument("--no-compile", action="store_true")
    args = p.parse_args()
    torch.set_num_threads(1)
    X = load_20news_avitm(args.data_home, subset="train").data
    corpus = GibbsCorpus(X, "cpu")
    state = GibbsState(corpus, K, sw.random_init(corpus, K, 0))
    alpha = torch.full((K,), 0.1)
    parts(corpus, state, alpha)
    if not args.no_compile:
        compiled(corpus, state, alpha)


if __name__ == "__main__":
    main()
