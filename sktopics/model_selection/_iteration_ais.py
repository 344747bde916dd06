"""Iteration-AIS (Foulds & Smyth 2014): a held-out likelihood curve for a training run.

Segment 0 is standard AIS from the prior to the first snapshot; every later segment
continues the *same* chains along a ratio path from snapshot t-1 to snapshot t. Every
prefix is a complete AIS run, so the running estimate after segment t is an
(exp-unbiased) estimate of log p(w | snapshot t). Neighbouring snapshots are close,
so the later segments are cheap: a warm start.
"""

import numbers

import numpy as np

from .._evaluation._ratio import iteration_segments
from .._evaluation._tokens import temperature_schedule
from .._evaluation._zspace import resolve_kernel
from .._random import document_keys
from ..utils._docstring import fill_doc
from ..utils._fingerprint import array_fingerprint
from ..utils._sklearn_compat import Interval, StrOptions, validate_params
from ..utils._threads import threads_from_n_jobs
from ._gather import gather_result
from ._preamble import (
    DATA_PARALLEL_NOTES,
    RUN_CONSTRAINTS,
    agreed,
    evaluated_model,
    prepare_counts,
    progress,
    seed_of,
)
from ._results import HeldOutLikelihood

__all__ = ["iteration_ais"]


def _snapshot_mixture(snapshot, dirichlet_approximation):
    model = evaluated_model(snapshot, dirichlet_approximation)
    if model.kind != "topics":
        raise ValueError("iteration_ais needs per-token mixture snapshots (token_mixture()).")
    phi, alpha = model.mixture
    return np.asarray(phi, float), np.asarray(alpha, float), model.view.n_features


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
        "dirichlet_approximation": ["boolean"],
        **RUN_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@threads_from_n_jobs
@fill_doc(data_parallel=DATA_PARALLEL_NOTES)
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
    dirichlet_approximation=True,
    device="auto",
    n_jobs=None,
    random_state=None,
    verbose=0,
):
    """Held-out log-likelihood of every snapshot of a training run, by iteration-AIS.

    Parameters
    ----------
    snapshots : sequence, or an estimator with ``snapshots_``
        Successive states of one training run: fitted estimators, generative
        views, ``(phi, alpha)`` pairs or the entries of
        ``LDAGibbs(snapshot_interval=...).snapshots_`` (passing the fitted
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
    kernel : {"auto", "collapsed", "blocked"}, default="auto"
        As in :func:`ais_log_likelihood`; ``"auto"`` keeps the collapsed sweep when
        the path is geometric and the snapshots' alphas differ, where the blocked
        kernel is invalid.
    dirichlet_approximation : bool, default=True
        As in :func:`ais_log_likelihood` (for snapshots of neural models).
    device : str or torch.device, default="auto"
        Where to compute.
    n_jobs : int or None, default=None
        Torch threads for this call, restored afterwards (see :ref:`threads`).
    random_state : int, RandomState or None, default=None
        Seed.
    verbose : int, default=0
        Progress lines, as in :func:`ais_log_likelihood`.

    Returns
    -------
    results : list of HeldOutLikelihood
        One per snapshot; ``results[t].per_token`` is the learning curve.

    {data_parallel}
    """

    def prepare_locally():
        found = snapshots.snapshots_ if hasattr(snapshots, "snapshots_") else snapshots
        if len(found) < 1:
            raise ValueError("iteration_ais needs at least one snapshot.")
        mixes = [_snapshot_mixture(s, dirichlet_approximation) for s in found]
        n_topics, n_features = mixes[0][0].shape[0], mixes[0][2]
        if any(m[0].shape[0] != n_topics or m[2] != n_features for m in mixes):
            raise ValueError("All snapshots must have the same number of topics and words.")
        two_polya_terms = path == "geometric" and any(
            not np.array_equal(m[1], mixes[0][1]) for m in mixes)
        run = prepare_counts("iteration_ais", X, n_features, device=device)
        resolved = resolve_kernel(kernel, run.device, blocked_valid=not two_polya_terms)
        if resolved == "blocked" and two_polya_terms:
            raise ValueError("kernel='blocked' needs path='convex' or 'hybrid' when alphas "
                             "change.")
        return mixes, run, resolved

    def identity(prepared):
        return array_fingerprint(m for mix in prepared[0] for m in mix[:2])

    (mixes, run, kernel), root = agreed("iteration_ais", prepare_locally, identity,
                                        random_state)
    X, lengths, device = run.X, run.lengths, run.device
    keys = document_keys(X)
    total = lengths.sum() * n_chains * (n_start_temperatures
                                        + (len(mixes) - 1) * (n_segment_temperatures + 1))
    with progress("iteration_ais", X.shape[0], total, verbose) as line:
        outs, n_resampled = iteration_segments(
            mixes, X, path=path, start_betas=temperature_schedule(schedule, n_start_temperatures),
            segment_betas=temperature_schedule(schedule, n_segment_temperatures), n_chains=n_chains,
            kernel=kernel, resample_threshold=resample_threshold, root=root,
            device=device, progress=line)
    results = []
    n_tok = float(lengths.sum())
    for t, out in enumerate(outs):
        temps = n_start_temperatures + t * (n_segment_temperatures + 1)
        results.append(HeldOutLikelihood(
            document_keys=keys,
            per_document=out.estimate,
            per_document_stderr=np.where(lengths > 0, out.stderr, 0.0),
            n_tokens=lengths,
            method="iteration-ais",
            settings=dict(snapshot=t, n_start_temperatures=n_start_temperatures,
                          n_segment_temperatures=n_segment_temperatures, n_chains=n_chains,
                          path=path, schedule=schedule, kernel=kernel,
                          resample_threshold=resample_threshold,
                          n_resampling_events=n_resampled,
                          random_state=seed_of(random_state)),
            n_token_updates=int(n_tok * n_chains * temps),
            min_ess=out.min_ess(lengths > 0),
        ))
    return gather_result(results)
