"""Held-out log p(w | model) by importance sampling of each document's latent (public API).

The engine is :mod:`sktopics._evaluation._importance`: samples of a document's topic
proportions from the defensive mixture of the encoder's proposal ``q(h | w)`` and the
prior (or from the prior alone when the model has no encoder), weighted by
``p(h) p(w | h) / proposal(h)``. ``exp`` of each estimate is unbiased for p(w_d).
"""

import numbers

import numpy as np

from .._evaluation._importance import importance_sampling
from .._random import document_keys
from ..utils._docstring import fill_doc
from ..utils._sklearn_compat import Interval, validate_params
from ..utils._threads import threads_from_n_jobs
from ._gather import gather_result
from ._preamble import DATA_PARALLEL_NOTES, RUN_CONSTRAINTS, prepare, progress, run_settings
from ._results import HeldOutLikelihood

__all__ = ["importance_sampling_log_likelihood"]


@validate_params(
    {
        "estimator": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "n_samples": [Interval(numbers.Integral, 1, None, closed="left")],
        **RUN_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@threads_from_n_jobs
@fill_doc(data_parallel=DATA_PARALLEL_NOTES)
def importance_sampling_log_likelihood(
    estimator,
    X,
    *,
    n_samples=256,
    device="auto",
    n_jobs=None,
    random_state=None,
    verbose=0,
):
    """Held-out log p(w | model) by importance sampling of each document's latent.

    A document's topic proportions are drawn ``n_samples`` times from the
    defensive mixture ``0.5 q(h | w) + 0.5 p(h)`` of the model's encoder (its
    amortised posterior) and its prior, and weighted by ``p(h) p(w | h)`` over the
    mixture's density (the prior's half bounds the weights; Hesterberg 1995).
    Models without an encoder (LDAGibbs) are sampled from their prior, which is
    only accurate on short documents. The model is evaluated as trained (a
    neural model's logistic-normal prior included). ``exp`` of each per-document
    estimate is unbiased for p(w_d); the log is biased low, by less with more
    samples. This is the recommended held-out likelihood for ProdLDA: on short
    documents a few hundred samples are close to the truth at a fraction of the
    cost of AIS (the user guide, "Choosing the number of topics").

    Parameters
    ----------
    estimator : estimator, Pipeline, generative view or (topic_word, alpha)
        The fitted model. A Pipeline's leading steps transform ``X`` first.
    X : {array-like, sparse matrix} of shape (n_samples, n_features)
        Held-out counts (fractional counts are accepted for neural models).
    n_samples : int, default=256
        Importance samples per document.
    device : str or torch.device, default="auto"
        Where to compute.
    n_jobs : int or None, default=None
        Torch threads for this call, restored afterwards (see :ref:`threads`).
    random_state : int, RandomState or None, default=None
        Seed. Samples are keyed by (document, sample): results do not depend on
        the batch size, and equal seeds give grid candidates common random numbers.
    verbose : int, default=0
        1: a last progress line; as in :func:`ais_log_likelihood`.

    Returns
    -------
    result : HeldOutLikelihood
        Per-document estimates and their Monte Carlo standard errors (from the
        effective sample size of the weights); ``settings["proposal"]`` says what
        was sampled.

    See Also
    --------
    ais_log_likelihood : AIS, the reference for long documents and prior-only models.
    left_to_right_log_likelihood : the estimator for mixture models.

    {data_parallel}

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.model_selection import importance_sampling_log_likelihood
    >>> phi = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> X = np.array([[2, 1, 0], [0, 1, 3]])
    >>> result = importance_sampling_log_likelihood((phi, [0.5, 0.5]), X, random_state=0)
    >>> result.per_document.shape
    (2,)
    """
    run = prepare("importance_sampling_log_likelihood", estimator, X, device=device,
                  dirichlet_approximation=False, random_state=random_state)
    view = run.model.view
    with progress("importance_sampling_log_likelihood", run.X.shape[0],
                  float(run.lengths.sum()) * n_samples, verbose) as line:
        out = importance_sampling(view, run.X, n_samples, run.root, run.device)
        line.finish_documents(run.X.shape[0])
    nonempty = run.lengths > 0
    proposal = ("0.5 encoder + 0.5 prior" if getattr(view, "proposal", None) is not None
                and hasattr(view.prior, "log_prob_h") else "prior")
    settings = run_settings(random_state, run.device, run.model.prior, n_samples=n_samples,
                            proposal=proposal)
    return gather_result(HeldOutLikelihood(
        per_document=np.where(nonempty, out.estimate, 0.0),
        per_document_stderr=np.where(nonempty, out.stderr, 0.0),
        n_tokens=run.lengths,
        method="importance-sampling",
        settings=settings,
        n_token_updates=int(run.lengths.sum()) * n_samples,
        min_ess=out.min_ess(nonempty),
        document_keys=document_keys(run.X),
    ))
