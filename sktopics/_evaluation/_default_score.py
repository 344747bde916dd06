"""The held-out estimate behind every estimator's ``score`` and ``score_samples``:
cheap and deterministic."""

import numpy as np
import scipy.sparse as sp
import torch

from .._random import root_key
from ..utils._blocks import evaluation_blocks
from ._importance import importance_sampling
from ._smc import sequential_mixture, smc_log_likelihood

__all__ = ["default_log_likelihood", "default_score"]


def default_log_likelihood(view, X_csr, device="cpu"):
    """Cheap, deterministic per-document held-out log-likelihood for ``score_samples``.

    * Documents with integer counts, for views with ``token_mixture()``: the
      left-to-right sequential Monte Carlo estimator
      (``left_to_right_log_likelihood``) with 32 particles, one filter, fixed
      seed 0. At equal cost it is far less biased than AIS from the prior: on
      40-token documents (K = 4), 32 particles were within 0.001 nats/token of
      200 particles, while AIS with 50 temperatures x 4 chains was 0.13-0.33
      nats/token low (measured).
    * Otherwise (ProdLDA, PAM/MoLDA, documents with fractional counts):
      importance sampling of the latent with 64 samples from the defensive
      mixture 0.5 q(h | w) + 0.5 p(h) when the view has an encoder proposal q,
      else from the prior; fixed seed 0.

    Both are unbiased in probability (their logs are biased low), deterministic,
    and give every grid candidate the same random numbers. The random numbers of a
    document are keyed by its counts (:func:`~sktopics._random.document_keys`), so
    its estimate depends on its counts alone, not on its row nor on the other
    documents; identical documents get identical estimates.

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
    log_likelihood : ndarray of shape (n_documents,)
        Estimated log p(w_d) of each document (natural log); 0 for a document
        without tokens (the probability of the empty document given its length).

    Notes
    -----
    The documents are read in blocks (:mod:`sktopics.utils._blocks`): beside the
    input and the output, memory is that of one block, whatever their number. A
    document's estimate does not depend on the block it is read in.
    """
    X = sp.csr_matrix(X_csr)
    device = torch.device(device)
    out = np.zeros(X.shape[0])
    for start, stop in evaluation_blocks(X, device):
        out[start:stop] = _block_log_likelihood(view, X[start:stop], device)
    return out


def _block_log_likelihood(view, X, device):
    """:func:`default_log_likelihood` of one block of documents."""
    X = sp.csr_matrix(X, dtype=np.float64)
    nonempty = np.flatnonzero(np.asarray(X.sum(axis=1)).ravel() > 0)
    out = np.zeros(X.shape[0])
    if nonempty.size == 0:
        return out
    # Each document's estimator follows from its own counts (integer or not), so its
    # value does not depend on the other rows.
    fractional = np.zeros(X.shape[0], dtype=bool)
    rows = np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))
    fractional[rows[np.rint(X.data) != X.data]] = True
    filtered = nonempty[~fractional[nonempty]] if view.token_mixture() is not None else []
    if len(filtered):
        out[filtered] = smc_log_likelihood(
            sequential_mixture(view), X[filtered], n_particles=32, n_filters=1,
            resample_threshold=0.5, rejuvenate=False, device=device,
            root=root_key(0))[0].estimate
    sampled = np.setdiff1d(nonempty, filtered)
    if len(sampled):
        # (an empty document keeps 0: its importance weights average 1 only in expectation)
        out[sampled] = importance_sampling(view, X[sampled], 64, root_key(0), device).estimate
    return out


def default_score(view, X_csr, device="cpu"):
    """Cheap, deterministic per-token held-out log-likelihood for ``estimator.score``.

    The sum of :func:`default_log_likelihood` over the documents divided by the
    number of tokens.

    Parameters
    ----------
    view : generative view
    X_csr : sparse matrix of shape (n_documents, n_words)
        Validated counts, with at least one token.
    device : str or torch.device, default="cpu"
        Where to compute.

    Returns
    -------
    score : float
        Estimated sum of log p(w_d) divided by the number of tokens (natural log).
    """
    X = sp.csr_matrix(X_csr, dtype=np.float64)
    n_tokens = float(X.sum())
    if n_tokens <= 0:
        raise ValueError("score needs at least one token in X.")
    return float(np.sum(default_log_likelihood(view, X, device)) / n_tokens)
