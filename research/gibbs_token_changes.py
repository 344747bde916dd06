"""How many tokens change topic per sweep (what a sparse exchange of count changes sends).

Ran at commit b51da54 on the 2-core development VM (one thread): AVITM 20 Newsgroups
training set, alpha = 5 / K, beta = 0.01, from a random start; the share of tokens
whose topic changed in sweeps 50, 100, 150 and 200. K = 50 with the parallel sweep,
K = 1024 with Metropolis-Hastings (2 cycles). Result: research/results/gibbs_token_changes.md.
"""

import torch

from sktopics._gibbs._state import GibbsCorpus, GibbsState
from sktopics._gibbs._sweeps import mh_sweep, parallel_sweep, random_init
from sktopics.datasets import load_20news_avitm

torch.set_num_threads(1)
X = load_20news_avitm(subset="train").data
for K in (50, 1024):
    corpus = GibbsCorpus(X, "cpu")
    state = GibbsState(corpus, K, random_init(corpus, K, 0))
    alpha = torch.full((K,), 5.0 / K)
    shares = []
    for sweep in range(1, 201):
        before = state.z.clone()
        if K == 50:
            parallel_sweep(state, alpha, 0.01, 0, sweep, 1 << 14)
        else:
            mh_sweep(state, alpha, 0.01, 0, sweep, 1 << 16, 2)
        if sweep % 50 == 0:
            shares.append((sweep, float((state.z != before).float().mean())))
    print(K, shares)
