"""Iteration-AIS (Foulds & Smyth 2014): a held-out likelihood curve for a training run.

Segment 0 is standard AIS from the prior to the first snapshot; every later segment
continues the *same* chains along a ratio path from snapshot t-1 to snapshot t. Every
prefix is a complete AIS run, so the running estimate after segment t is an
(exp-unbiased) estimate of log p(w | snapshot t). Neighbouring snapshots are close,
so the later segments are cheap: a warm start.
"""

import numbers

import numpy as np
import torch

from ..utils._sklearn_compat import Interval, StrOptions, validate_params
from ..utils._torch import resolve_device
from ._ais import (
    _anneal,
    _batch_rows,
    _check_counts,
    _draw_prior,
    _kernel_batches,
    _log_phi_rows,
    _logmeanexp_stats,
    _resample,
    _resolve_kernel,
    _root_key,
    _row_keys,
    _schedule,
    _topic_word_tensor,
    _ZPath,
    generative_view,
)
from ._results import HeldOutLikelihood

__all__ = ["iteration_ais"]


def _snapshot_mixture(snapshot):
    if isinstance(snapshot, tuple) and len(snapshot) == 3:  # LDAGibbs.snapshots_ entries
        snapshot = snapshot[1:]
    view = generative_view(snapshot)
    mix = view.token_mixture()
    if mix is None:
        raise ValueError("iteration_ais needs per-token mixture snapshots (token_mixture()).")
    return np.asarray(mix[0], float), np.asarray(mix[1], float), view.n_features


@validate_params(
    {
        "snapshots": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "n_start_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_segment_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "path": [StrOptions({"geometric", "convex", "hybrid"})],
        "schedule": [StrOptions({"sigmoid", "linear", "geometric", "power"})],
        "kernel": [StrOptions({"auto", "collapsed", "blocked"})],
        "resample_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "device": [None, str, torch.device],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def iteration_ais(
    snapshots,
    X,
    *,
    n_start_temperatures=100,
    n_segment_temperatures=10,
    n_chains=10,
    path="convex",
    schedule="linear",
    kernel="auto",
    resample_threshold=0.5,
    device=None,
    random_state=None,
):
    """Held-out log-likelihood of every snapshot of a training run, by iteration-AIS.

    Parameters
    ----------
    snapshots : sequence, or an estimator with ``snapshots_``
        Successive states of one training run: fitted estimators, GenerativeViews,
        ``(phi, alpha)`` pairs or ``(sweep, phi, alpha)`` triples (the entries of
        ``LDAGibbs(snapshot_interval=...).snapshots_``; passing the fitted
        estimator itself uses them). Same number of topics and the same topic
        labels (no alignment is done).
    X : {array-like, sparse matrix} of shape (n_documents, n_words)
        Held-out integer counts.
    n_start_temperatures : int, default=100
        Temperatures of segment 0 (prior -> first snapshot).
    n_segment_temperatures : int, default=10
        Temperatures between consecutive snapshots.
    n_chains : int, default=10
    path : {"convex", "geometric", "hybrid"}, default="convex"
        Ratio path between consecutive snapshots.
    schedule : str, default="linear"
    resample_threshold : float, default=0.5
        Between segments, a document's chains are resampled (systematically) when
        their effective sample size falls below ``resample_threshold *
        n_chains``; 0 never resamples. Resampling keeps every estimate unbiased
        in probability (an SMC sampler) and fights weight degeneracy on long runs.
    kernel, device, random_state :
        As in :func:`ais_log_likelihood`; ``kernel="auto"`` keeps the collapsed
        sweep when the path is geometric and the snapshots' alphas differ, where
        the blocked kernel is invalid.

    Returns
    -------
    results : list of HeldOutLikelihood
        One per snapshot; ``results[t].per_token`` is the learning curve.
    """
    if hasattr(snapshots, "snapshots_"):  # a fitted estimator that kept snapshots
        snapshots = snapshots.snapshots_
    if len(snapshots) < 1:
        raise ValueError("iteration_ais needs at least one snapshot.")
    device = resolve_device(device)
    mixes = [_snapshot_mixture(s) for s in snapshots]
    n_topics, n_features = mixes[0][0].shape[0], mixes[0][2]
    if any(m[0].shape[0] != n_topics or m[2] != n_features for m in mixes):
        raise ValueError("All snapshots must have the same number of topics and words.")
    two_polya_terms = path == "geometric" and any(
        not np.array_equal(m[1], mixes[0][1]) for m in mixes)
    kernel = _resolve_kernel(kernel, device, blocked_valid=not two_polya_terms)
    if kernel == "blocked" and two_polya_terms:
        raise ValueError("kernel='blocked' needs path='convex' or 'hybrid' when alphas change.")
    X = _check_counts(X, n_features, integer=True)
    root = _root_key(random_state)
    b0 = _schedule(schedule, n_start_temperatures)
    bseg = _schedule(schedule, n_segment_temperatures)
    n_docs, n_snap = X.shape[0], len(mixes)
    lengths = np.asarray(X.sum(1)).ravel()
    est = np.zeros((n_snap, n_docs))
    se = np.zeros((n_snap, n_docs))
    ess_min = np.full(n_snap, np.inf)
    alphas = [torch.as_tensor(m[1], dtype=torch.float64, device=device) for m in mixes]
    n_resampled = 0
    phis = [_topic_word_tensor(m[0], device) for m in mixes]
    for batch in _kernel_batches(lengths.astype(np.int64), n_chains, n_topics, kernel, device):
        tokens, mask_r, n_active = _batch_rows(X, batch, n_chains, device)
        keys = _row_keys(root, batch, n_chains, 60, device)
        L_prev = _log_phi_rows(phis[0], tokens, n_chains, n_active)
        z, c = _draw_prior(alphas[0], mask_r, keys, (0,), n_topics)
        logw = _anneal(_ZPath("geometric", L_prev, alphas[0]), b0, z, c, mask_r, keys, kernel, stage=1)
        for t in range(n_snap):
            if t > 0 and resample_threshold > 0 and n_chains > 1:
                logw, z, c, n_res = _resample(logw, z, c, n_chains, resample_threshold, keys, t)
                n_resampled += n_res
            if t > 0:
                L_t = _log_phi_rows(phis[t], tokens, n_chains, n_active)
                seg = _ZPath(path, L_t, alphas[t], L_prev, alphas[t - 1])
                logw = logw + _anneal(seg, bseg, z, c, mask_r, keys, kernel, stage=(100 + t),
                                      move_first=True)
                L_prev = L_t
            e, s, ess = _logmeanexp_stats(logw.view(len(batch), n_chains))
            est[t, batch], se[t, batch] = e.cpu().numpy(), s.cpu().numpy()
            ess_min[t] = min(ess_min[t], float(ess.min()))
    results = []
    n_resampled = int(n_resampled)
    n_tok = float(lengths.sum())
    for t in range(n_snap):
        temps = n_start_temperatures + t * (n_segment_temperatures + 1)
        results.append(HeldOutLikelihood(
            per_document=est[t],
            per_document_stderr=np.where(lengths > 0, se[t], 0.0),
            n_tokens=lengths,
            method="iteration-ais",
            settings=dict(snapshot=t, n_start_temperatures=n_start_temperatures,
                          n_segment_temperatures=n_segment_temperatures, n_chains=n_chains,
                          path=path, schedule=schedule, kernel=kernel,
                          resample_threshold=resample_threshold,
                          n_resampling_events=n_resampled,
                          random_state=random_state if isinstance(random_state, numbers.Integral) else None),
            n_token_updates=int(n_tok * n_chains * temps),
            min_ess=float(ess_min[t]),
        ))
    return results
