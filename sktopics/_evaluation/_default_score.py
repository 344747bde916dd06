"""The held-out score behind every estimator's ``score``: cheap and deterministic."""

import numpy as np
import scipy.sparse as sp
import torch

from .._random import root_key
from ._importance import importance_sampling
from ._smc import sequential_mixture, smc_log_likelihood

__all__ = ["default_score"]


def default_score(view, X_csr, device="cpu"):
    """Cheap, deterministic per-token held-out log-likelihood for ``estimator.score``.

    * Views with ``token_mixture()`` and integer counts: the left-to-right
      sequential Monte Carlo estimator (``left_to_right_log_likelihood``) with
      32 particles, one filter, fixed seed 0. At equal cost it is far less biased
      than AIS from the prior: on 40-token documents (K = 4), 32 particles were
      within 0.001 nats/token of 200 particles, while AIS with 50 temperatures x 4
      chains was 0.13-0.33 nats/token low (measured).
    * Otherwise (ProdLDA, PAM/MoLDA, fractional counts): importance sampling of
      the latent with 64 samples from the defensive mixture
      0.5 q(h | w) + 0.5 p(h) when the view has an encoder proposal q, else from
      the prior; fixed seed 0.

    Both are unbiased in probability (their logs are biased low), deterministic,
    and give every grid candidate the same random numbers.

    Parameters
    ----------
    view : generative view
    X_csr : sparse matrix of shape (n_documents, n_words)
        Validated counts.
    device : str or torch.device, default="cpu"
        Where to compute (estimators pass the device their model lives on). The
        estimate is deterministic for a given device; different devices agree
        within Monte Carlo error.

    Returns
    -------
    score : float
        Estimated sum of log p(w_d) divided by the number of tokens (natural log).
    """
    X = sp.csr_matrix(X_csr, dtype=np.float64)
    n_tokens = float(X.sum())
    if n_tokens <= 0:
        raise ValueError("score needs at least one token in X.")
    device = torch.device(device)
    integer = X.nnz == 0 or np.array_equal(np.rint(X.data), X.data)
    if view.token_mixture() is not None and integer:
        est = smc_log_likelihood(sequential_mixture(view), X, n_particles=32, n_filters=1,
                                 resample_threshold=0.5, rejuvenate=False, device=device,
                                 root=root_key(0))[0].estimate
    else:
        est = importance_sampling(view, X, 64, root_key(0), device).estimate
    return float(np.sum(est) / n_tokens)
