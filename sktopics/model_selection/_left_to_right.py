"""Left-to-right estimation of log p(w | model) and document completion (public API).

The sequential Monte Carlo filter behind both is :mod:`sktopics._evaluation._smc`:
particles over the topic assignments (or PAM paths) of each document's prefix,
weighted by their predictive probabilities and resampled, so that ``exp`` of the
estimate is unbiased for p(w) (Wallach et al.'s and Mallet's product of
per-position particle means is biased upwards).
"""

import numbers

import numpy as np

from .._evaluation._smc import require_sequential_mixture, smc_log_likelihood
from .._random import document_keys
from ..utils._docstring import fill_doc
from ..utils._sklearn_compat import Interval, validate_params
from ..utils._threads import threads_from_n_jobs
from ._gather import gather_result
from ._preamble import DATA_PARALLEL_NOTES, RUN_CONSTRAINTS, prepare, progress, run_settings
from ._results import HeldOutLikelihood

__all__ = ["document_completion_log_likelihood", "left_to_right_log_likelihood"]


@validate_params(
    {
        "estimator": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "n_particles": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_filters": [Interval(numbers.Integral, 1, None, closed="left")],
        "resample_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "rejuvenate": ["boolean"],
        "dirichlet_approximation": ["boolean"],
        **RUN_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@threads_from_n_jobs
@fill_doc(data_parallel=DATA_PARALLEL_NOTES)
def left_to_right_log_likelihood(
    estimator,
    X,
    *,
    n_particles=100,
    n_filters=2,
    resample_threshold=0.5,
    rejuvenate=False,
    dirichlet_approximation=True,
    device="auto",
    n_jobs=None,
    random_state=None,
    verbose=0,
):
    """Held-out log p(w | model) by the left-to-right algorithm (SMC, unbiased form).

    Tokens of each document are taken in a seeded random order; ``n_particles``
    particles carry topic assignments of the prefix, weighted by their predictive
    probabilities and resampled (systematically) when the effective sample size
    falls below ``resample_threshold * n_particles``. ``n_filters`` independent
    filters give the standard error; the estimate averages them in probability.

    Parameters
    ----------
    estimator : estimator, Pipeline, generative view or (topic_word, alpha)
        A model whose tokens are a mixture under collapsible Dirichlet priors: an
        LDA-like view (``token_mixture()``: LDAGibbs, AVITM) or a two-level PAM
        (``path_mixture()``: 4-PAM PAMVI, MoLDA), whose particles then carry each
        token's path ``(super-topic, sub-topic)`` with every node's distribution
        collapsed. A Pipeline's leading steps transform ``X`` first.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Held-out integer counts.
    n_particles : int, default=100
        Particles per filter.
    n_filters : int, default=2
        Independent filters per document (cost is ``n_particles * n_filters * N``).
    resample_threshold : float, default=0.5
        Resample when ESS < threshold * n_particles; 0 never resamples.
    rejuvenate : bool, default=False
        Re-sample the prefix's assignments by a collapsed Gibbs sweep before each
        token (cost O(N^2); Wallach et al.'s "resampling").
    dirichlet_approximation : bool, default=True
        Evaluate AVITM, PAMVI and MoLDA under the Dirichlets their logistic-normal
        priors approximate (as in :func:`ais_log_likelihood`); False refuses them,
        since their trained priors cannot be collapsed.
    device : str or torch.device, default="auto"
        Where to compute.
    n_jobs : int or None, default=None
        Torch threads for this call, restored afterwards (see :ref:`threads`).
    random_state : int, RandomState or None, default=None
        Seed (token orders and particles are keyed by document).
    verbose : int, default=0
        Progress lines, as in :func:`ais_log_likelihood`.

    Returns
    -------
    result : HeldOutLikelihood
        Per-document estimates and standard errors (from the ``n_filters``
        filters; NaN with one filter).

    {data_parallel}
    """
    return _sequential("left_to_right_log_likelihood", estimator, X, n_particles=n_particles,
                       n_filters=n_filters, resample_threshold=resample_threshold,
                       rejuvenate=rejuvenate, dirichlet_approximation=dirichlet_approximation,
                       device=device, random_state=random_state, verbose=verbose)


@validate_params(
    {
        "estimator": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "observed_fraction": [Interval(numbers.Real, 0, 1, closed="neither")],
        "n_particles": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_filters": [Interval(numbers.Integral, 1, None, closed="left")],
        "dirichlet_approximation": ["boolean"],
        **RUN_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@threads_from_n_jobs
@fill_doc(data_parallel=DATA_PARALLEL_NOTES)
def document_completion_log_likelihood(
    estimator,
    X,
    *,
    observed_fraction=0.5,
    n_particles=100,
    n_filters=2,
    dirichlet_approximation=True,
    device="auto",
    n_jobs=None,
    random_state=None,
    verbose=0,
):
    """Document completion: log p(w_unseen | w_seen, model) per document.

    Each document's tokens are put in a seeded random order; the first
    ``floor(observed_fraction * N_d)`` are observed and the rest are scored, by the
    same sequential Monte Carlo filter as :func:`left_to_right_log_likelihood`
    (the predictive increments summed over the unseen part only).

    Parameters
    ----------
    estimator : estimator, Pipeline, generative view or (topic_word, alpha)
        As in :func:`left_to_right_log_likelihood`.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Held-out integer counts.
    observed_fraction : float in (0, 1), default=0.5
        Share of each document's tokens that is observed.
    n_particles : int, default=100
        Particles per filter.
    n_filters : int, default=2
        Independent filters per document.
    dirichlet_approximation : bool, default=True
        As in :func:`left_to_right_log_likelihood`.
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
    result : HeldOutLikelihood
        ``n_tokens`` counts the scored tokens, so ``result.perplexity()`` is the
        document-completion perplexity.

    {data_parallel}
    """
    return _sequential("document_completion_log_likelihood", estimator, X,
                       n_particles=n_particles, n_filters=n_filters, resample_threshold=0.5,
                       rejuvenate=False, dirichlet_approximation=dirichlet_approximation,
                       device=device, random_state=random_state, verbose=verbose,
                       observed_fraction=observed_fraction)


def _sequential(name, estimator, X, *, n_particles, n_filters, resample_threshold, rejuvenate,
                dirichlet_approximation, device, random_state, verbose, observed_fraction=None):
    """The shared body of the two public functions: the SMC filter and its result."""
    run = prepare(name, estimator, X, device=device,
                  dirichlet_approximation=dirichlet_approximation, random_state=random_state)
    mix = require_sequential_mixture(run.model.view, name, dirichlet_approximation)
    X = run.X
    lengths = run.lengths.astype(np.int64)
    per_doc_cost = lengths * n_particles * n_filters
    if rejuvenate:
        per_doc_cost = per_doc_cost + lengths * (lengths - 1) // 2 * n_particles * n_filters
    with progress(name, X.shape[0], float(lengths.sum()) * n_particles * n_filters,
                  verbose) as line:
        out, n_res = smc_log_likelihood(mix, X, n_particles=n_particles, n_filters=n_filters,
                                        resample_threshold=resample_threshold,
                                        rejuvenate=rejuvenate, device=run.device, root=run.root,
                                        observed_fraction=observed_fraction, progress=line)
    settings = run_settings(random_state, run.device, run.model.prior, n_particles=n_particles,
                            n_filters=n_filters, resample_threshold=resample_threshold,
                            rejuvenate=rejuvenate)
    settings["n_resampling_events"] = n_res
    scored = lengths
    method = "left-to-right-smc"
    if observed_fraction is not None:
        scored = lengths - np.floor(observed_fraction * lengths).astype(np.int64)
        settings["observed_fraction"] = observed_fraction
        method = "document-completion-smc"
    return gather_result(HeldOutLikelihood(
        per_document=out.estimate,
        per_document_stderr=np.where(lengths > 0, out.stderr, 0.0),
        n_tokens=scored.astype(np.float64),
        method=method,
        settings=settings,
        n_token_updates=int(per_doc_cost.sum()),
        document_keys=document_keys(X),
    ))
