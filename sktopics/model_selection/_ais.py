"""Annealed importance sampling (AIS) for held-out log p(w | model).

The public function; the engines are in :mod:`sktopics._evaluation`: z-space AIS
over topic assignments (``_zspace``), over PAM paths (``_pam_paths``), and HMC over a
continuous latent (``_hmc``).

Randomness is counter-based (:mod:`sktopics._random`): every random number is a
function of (seed, document's counts, chain, stage, temperature, position), so a
document's estimate does not depend on its row, the batch size or the other
documents (identical documents get identical estimates), and grid candidates
evaluated with the same ``random_state`` share their random numbers.
"""

import numbers

import numpy as np

from .._evaluation._hmc import continuous_ais
from .._evaluation._pam_paths import pam_ais
from .._evaluation._tokens import temperature_schedule
from .._evaluation._zspace import resolve_kernel, z_ais
from .._random import document_keys
from ..utils._docstring import fill_doc
from ..utils._sklearn_compat import Interval, StrOptions, validate_params
from ..utils._threads import threads_from_n_jobs
from ._gather import gather_result
from ._preamble import DATA_PARALLEL_NOTES, RUN_CONSTRAINTS, prepare, progress, run_settings
from ._results import HeldOutLikelihood

__all__ = ["ais_log_likelihood"]


@validate_params(
    {
        "estimator": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "schedule": [StrOptions({"sigmoid", "linear", "geometric", "power"}), "array-like"],
        "kernel": [StrOptions({"auto", "collapsed", "blocked"})],
        "resample_threshold": [Interval(numbers.Real, 0, 1, closed="both")],
        "dirichlet_approximation": ["boolean"],
        "step_size": [Interval(numbers.Real, 0, None, closed="neither")],
        "n_leapfrog": [Interval(numbers.Integral, 1, None, closed="left")],
        "start": [StrOptions({"proposal", "prior"})],
        "target_acceptance": [None, Interval(numbers.Real, 0, 1, closed="neither")],
        **RUN_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@threads_from_n_jobs
@fill_doc(data_parallel=DATA_PARALLEL_NOTES)
def ais_log_likelihood(
    estimator,
    X,
    *,
    n_temperatures=1000,
    n_chains=10,
    schedule="sigmoid",
    kernel="auto",
    resample_threshold=0.0,
    dirichlet_approximation=True,
    step_size=0.25,
    n_leapfrog=5,
    start="proposal",
    target_acceptance=None,
    device="auto",
    n_jobs=None,
    random_state=None,
    verbose=0,
):
    """Held-out log p(w | model) by annealed importance sampling.

    For models whose words are a per-token mixture under a Dirichlet prior
    (LDAGibbs; AVITM, PAMVI and MoLDA under the Dirichlets their priors
    approximate) AIS runs over topic assignments z with theta collapsed, from the
    prior to the posterior (Wallach et al. 2009). Otherwise (ProdLDA, or
    ``dirichlet_approximation=False``) it runs over the continuous latent with
    Hamiltonian Monte Carlo, from the encoder proposal (or the prior). ``exp`` of
    each per-document estimate is unbiased for p(w_d); the log is biased low (a
    stochastic lower bound), by less with more temperatures.

    Parameters
    ----------
    estimator : estimator, Pipeline, generative view or (topic_word, alpha)
        The fitted model. A Pipeline's leading steps transform ``X`` first.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Held-out counts (integers for z-space AIS; other values are rounded, with
        a warning).
    n_temperatures : int, default=1000
        Number S of annealing steps (S + 1 inverse temperatures from 0 to 1).
    n_chains : int, default=10
        Independent AIS chains per document.
    schedule : {"sigmoid", "linear", "geometric", "power"} or array, default="sigmoid"
        The inverse temperatures; an array must go from 0 to 1. From the prior,
        the distributions change fastest near 0 and 1, where the sigmoid spends
        its steps; the paths between two fitted models of :func:`ratio_ais` and
        :func:`iteration_ais` change evenly and default to ``"linear"``.
    kernel : {"auto", "collapsed", "blocked"}, default="auto"
        z-space transition: the sequential collapsed sweep (lock-step over
        documents and chains) or blocked Gibbs on (theta, z). ``"auto"``: collapsed
        on CPU, blocked on CUDA.
    resample_threshold : float in [0, 1], default=0.0
        z-space engines with ``n_chains > 1``: after a weight update, a
        document's chains are resampled (systematically, in proportion to their
        weights) when their effective sample size falls below
        ``resample_threshold * n_chains``, and their weights reset to the mean
        weight. This is a sequential Monte Carlo sampler (Del Moral, Doucet &
        Jasra 2006): still unbiased in probability, with lower variance on long
        documents, where a few chains otherwise carry all the weight. 0 (the
        default) never resamples. After resampling, ``per_document_stderr`` (from
        the final weights) ignores the shared ancestry and is optimistic; compare
        independent runs instead. ``settings["n_resampling_events"]`` counts the
        (document, temperature) pairs resampled.
    dirichlet_approximation : bool, default=True
        The neural models AVITM, PAMVI and MoLDA train with logistic-normal priors
        that stand for Dirichlets (Laplace approximations). True evaluates them
        under those Dirichlets, in z-space (fast, the collapsed estimators of the
        literature); False evaluates the model as trained, logistic-normal prior
        included, with the continuous engine. ``settings["prior"]`` records which.
        No effect on LDAGibbs (a Dirichlet) or ProdLDA (continuous either way).
    step_size, n_leapfrog, start :
        Continuous engine only: HMC step (relative to the start's scale), leapfrog
        steps per transition, and where chains start (``"proposal"``: the
        encoder's q(h | w) when the view has one; ``"prior"``).
    target_acceptance : float in (0, 1) or None, default=None
        Continuous engine only. ``None``: every document uses ``step_size``
        (scaled by the start's spread and the document's length). A value (0.65
        is usual for HMC): a pilot run of min(50, ``n_temperatures``)
        temperatures, with its own chains and random numbers, tunes one step
        multiplier per document towards this acceptance rate (Robbins-Monro,
        Polyak-averaged); the main run then uses the tuned steps unchanged, so
        every transition is still a fixed, exactly invariant kernel. The pilot's
        cost is included in ``n_token_updates``; ``settings["step_multipliers"]``
        gives the (min, median, max) of the tuned multipliers (inside
        ``data_parallel`` the median is NaN when several ranks have documents).
    device : str or torch.device, default="auto"
        Where to compute, as for the estimators (``"auto"``: the current CUDA
        device when there is one).
    n_jobs : int or None, default=None
        Torch threads for this call, restored afterwards (see :ref:`threads`).
    random_state : int, RandomState or None, default=None
        Seed. Random numbers are keyed by (seed, document's counts, chain): a
        document's estimate does not depend on its row or the batch size, and equal
        seeds give grid candidates common random numbers.
    verbose : int, default=0
        1: a progress line (work and documents done, token-updates per second,
        time left) every 10 seconds; 2: every second.

    Returns
    -------
    result : HeldOutLikelihood
        Per-document estimates and standard errors; ``per_token``, ``total`` and
        ``perplexity()`` summarise them.

    {data_parallel}
    """
    run = prepare("ais_log_likelihood", estimator, X, device=device,
                  dirichlet_approximation=dirichlet_approximation, random_state=random_state)
    view, kind, mixture, prior = run.model
    X, lengths, device = run.X, run.lengths, run.device
    betas = temperature_schedule(schedule, n_temperatures)
    nonempty = lengths > 0
    settings = run_settings(
        random_state, device, prior, n_temperatures=len(betas) - 1, n_chains=n_chains,
        schedule=schedule if isinstance(schedule, str) else "array",
    )
    resample = None
    if resample_threshold > 0 and n_chains > 1:
        resample = {"threshold": float(resample_threshold), "events": 0}
    engine = dict(n_temperatures=n_temperatures, n_chains=n_chains, schedule_name=schedule,
                  device=device, root=run.root)
    if kind == "continuous":
        n_updates = int(nonempty.sum()) * n_chains * (len(betas) - 1) * (n_leapfrog + 1)
        with progress("ais_log_likelihood", X.shape[0], n_updates, verbose) as line:
            out, n_updates, acc, tuned = continuous_ais(
                view, X, step_size=step_size, n_leapfrog=n_leapfrog, start=start,
                target_acceptance=target_acceptance, progress=line, **engine)
        settings.update(kernel="hmc", step_size=step_size, n_leapfrog=n_leapfrog,
                        start=start if getattr(view, "proposal", None) is not None else "prior",
                        acceptance_rate=acc, target_acceptance=target_acceptance,
                        step_multipliers=tuned)
        method = "ais-hmc"
    else:
        n_updates = int(lengths.sum()) * n_chains * (len(betas) - 1)
        with progress("ais_log_likelihood", X.shape[0], n_updates, verbose) as line:
            if kind == "paths":
                out = pam_ais(mixture, X, resample=resample, progress=line, **engine)
                kernel, method = "collapsed", "ais-z-pam"
            else:
                kernel = resolve_kernel(kernel, device)  # one Polya term: blocked is valid
                out = z_ais(mixture, X, kernel=kernel, resample=resample, progress=line,
                            **engine)
                method = "ais-z"
        settings.update(kernel=kernel, resample_threshold=float(resample_threshold),
                        n_resampling_events=0 if resample is None else int(resample["events"]))
    return gather_result(HeldOutLikelihood(
        per_document=out.estimate,
        per_document_stderr=np.where(nonempty, out.stderr, 0.0),
        n_tokens=lengths,
        method=method,
        settings=settings,
        n_token_updates=n_updates,
        min_ess=out.min_ess(nonempty),
        document_keys=document_keys(X),
    ))
