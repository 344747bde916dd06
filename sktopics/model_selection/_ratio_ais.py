"""Ratio-AIS (Foulds & Smyth 2014): anneal from one topic model to another.

The chains start at the posterior of model B, p(z | w, B), and anneal to
p(z | w, A); the mean importance weight estimates p(w | A) / p(w | B) directly, with
one z shared by both models and no second normaliser. Paths:

* ``"geometric"``: f_b = f_A^b f_B^(1 - b);
* ``"convex"``: f_b = p(w, z | b phi_A + (1 - b) phi_B, b alpha_A + (1 - b) alpha_B),
  sampled with alpha_b (drawing with B's alpha while weighting with alpha_b, as the
  reference Java code does, is an invalid kernel);
* ``"hybrid"``: geometric in phi, arithmetic in alpha (a single Polya term, so the
  blocked kernel applies even when the alphas differ).

Starts (how the chains reach p(z | w, B); the ratio chains are then weighted by the
start's importance weights, self-normalised over the chains, which is consistent):
``"sequential"`` (default) draws z token by token from B's left-to-right proposal, an
importance sampler whose weight is one left-to-right particle's, then runs
``n_burnin_sweeps`` Gibbs sweeps under B (they leave p(z | w, B) invariant, so the
weights stay valid); ``"ais"`` runs standard AIS prior -> B; ``"burnin"`` Gibbs-samples
B's posterior from a prior draw and ignores the start (biased, as in the reference
code); ``"exact"`` draws exact posterior samples by enumeration (tiny documents only;
tests).

With one chain the start's weight cancels and only how close the start is to
p(z | w, B) matters. At equal cost the sequential start plus a few sweeps is closer
than a short AIS run from the prior, so more of the budget goes to the path between
the models (``benchmarks/results/model_selection.rst``).
"""

import numbers

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state

from .._evaluation._ratio import embed_smaller_model, matching_permutation, ratio_direction
from .._evaluation._tokens import temperature_schedule
from .._evaluation._views import topic_distributions
from .._evaluation._zspace import resolve_kernel
from .._random import document_keys
from ..utils._distributed import current_collective, on_rank_zero
from ..utils._docstring import fill_doc
from ..utils._sklearn_compat import Interval, StrOptions, validate_params
from ..utils._threads import threads_from_n_jobs
from ..utils._warnings import warn
from ._ais import ais_log_likelihood
from ._gather import gather_result
from ._preamble import DATA_PARALLEL_NOTES, RUN_CONSTRAINTS, prepare, progress, run_settings
from ._results import ModelComparison

__all__ = ["align_topics", "ratio_ais"]


def align_topics(estimator_a, estimator_b):
    """Permutation of B's topics that matches them to A's.

    The Hungarian algorithm on the Hellinger distances between the topics'
    word distributions: the labelling of B closest to A's, as :func:`ratio_ais`
    uses with ``align_topics=True``.

    Parameters
    ----------
    estimator_a, estimator_b : estimator, Pipeline or array-like of shape (n_topics, n_words)
        Fitted topic models (``components_``), Pipelines ending in one, or
        non-negative topic-word matrices, with the same numbers of topics and
        words. Rows are normalised to distributions.

    Returns
    -------
    perm : ndarray of shape (n_topics,)
        ``components_b[perm]`` is aligned with ``components_a``: topic ``k`` of A
        matches topic ``perm[k]`` of B.

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.model_selection import align_topics
    >>> phi = np.array([[0.7, 0.2, 0.1], [0.1, 0.2, 0.7]])
    >>> align_topics(phi, phi[::-1])
    array([1, 0])
    """
    phi_a = topic_distributions(estimator_a, name="estimator_a")
    phi_b = topic_distributions(estimator_b, name="estimator_b")
    if phi_a.shape != phi_b.shape:
        raise ValueError(
            f"align_topics needs two models with the same numbers of topics and words; got "
            f"(n_topics, n_words) = {phi_a.shape} and {phi_b.shape}."
        )
    return matching_permutation(phi_a, phi_b)


@validate_params(
    {
        "estimator_a": "no_validation",
        "estimator_b": "no_validation",
        "X": ["array-like", "sparse matrix"],
        "path": [StrOptions({"geometric", "convex", "hybrid"})],
        "direction": [StrOptions({"forward", "reverse", "both"})],
        "n_temperatures": [Interval(numbers.Integral, 1, None, closed="left")],
        "n_chains": [Interval(numbers.Integral, 1, None, closed="left")],
        "schedule": [StrOptions({"sigmoid", "linear", "geometric", "power"}), "array-like"],
        "start": [StrOptions({"ais", "sequential", "burnin", "exact"})],
        "n_start_temperatures": [None, Interval(numbers.Integral, 1, None, closed="left")],
        "n_burnin_sweeps": [Interval(numbers.Integral, 0, None, closed="left")],
        "kernel": [StrOptions({"auto", "collapsed", "blocked"})],
        "align_topics": ["boolean"],
        "dirichlet_approximation": ["boolean"],
        **RUN_CONSTRAINTS,
    },
    prefer_skip_nested_validation=True,
)
@threads_from_n_jobs
@fill_doc(data_parallel=DATA_PARALLEL_NOTES)
def ratio_ais(
    estimator_a,
    estimator_b,
    X,
    *,
    path="geometric",
    direction="forward",
    n_temperatures=100,
    n_chains=10,
    schedule="linear",
    start="sequential",
    n_start_temperatures=None,
    n_burnin_sweeps=10,
    kernel="auto",
    align_topics=True,
    dirichlet_approximation=True,
    device="auto",
    n_jobs=None,
    random_state=None,
    verbose=0,
):
    """log p(w | A) - log p(w | B) per document by annealing between the models.

    Parameters
    ----------
    estimator_a, estimator_b : estimators, Pipelines, GenerativeViews or (phi, alpha)
        The two fitted models (same vocabulary). Pipelines transform ``X`` with
        ``estimator_a``'s leading steps.
    X : {array-like, sparse matrix} of shape (n_documents, n_words)
        Held-out integer counts.
    path : {"geometric", "convex", "hybrid"}, default="geometric"
        The intermediate distributions (see the module docstring).
    direction : {"forward", "reverse", "both"}, default="forward"
        ``"forward"`` anneals B -> A, ``"reverse"`` A -> B (the reciprocal, a
        convergence check), ``"both"`` runs both and reports their mean, the
        per-document gap and the bracket. Short paths bias the forward estimate down
        and the reverse one up by similar amounts, so at equal cost the mean of a
        forward and a reverse run of half the temperatures is usually closer to the
        truth than either direction alone (with one chain it is Bennett's acceptance
        ratio estimate). With ``"both"``, a ``ConvergenceWarning`` says when the two
        totals have opposite signs, i.e. when the bracket leaves open which model
        is better.
    n_temperatures : int, default=100
        Temperatures of the ratio path.
    n_chains : int, default=10
        Chains per document.
    schedule : str or array, default="linear"
    start : {"sequential", "ais", "burnin", "exact"}, default="sequential"
        How chains reach the source posterior: a left-to-right draw followed by
        ``n_burnin_sweeps`` Gibbs sweeps, weighted (consistent); standard AIS prior ->
        source with ``n_start_temperatures`` temperatures (consistent);
        ``n_burnin_sweeps`` Gibbs sweeps from a prior draw, unweighted (biased); or
        exact enumeration (tiny documents only).
    n_start_temperatures : int or None
        Temperatures of ``start="ais"``; defaults to ``n_temperatures``.
    n_burnin_sweeps : int, default=10
        Gibbs sweeps under the source model after a ``"sequential"`` or
        ``"burnin"`` start.
    kernel : {"auto", "collapsed", "blocked"}, default="auto"
        As in :func:`ais_log_likelihood`; ``"auto"`` keeps the collapsed sweep
        wherever the blocked kernel is invalid (the geometric path between models
        with different alphas), also on CUDA.
    align_topics : bool, default=True
        Permute B's topics to match A's (Hungarian on Hellinger distances); any
        labelling is valid, but the variance depends on it.
    dirichlet_approximation : bool, default=True
        As in :func:`ais_log_likelihood`: AVITM is compared under the Dirichlet
        its prior approximates (so that it has topic assignments to anneal).
    device : str or torch.device, default="auto"
        Where to compute.
    n_jobs : int or None, default=None
        Torch threads for this call, restored afterwards (see :ref:`threads`).
    random_state : int, RandomState or None, default=None
        Seed (random numbers keyed by document and chain, as in
        :func:`ais_log_likelihood`).
    verbose : int, default=0
        Progress lines, as in :func:`ais_log_likelihood`.

    Returns
    -------
    result : ModelComparison
        Per-document log-ratios, positive where A is better; its ``repr`` says
        which model is better, on how many documents, and whether the forward and
        reverse runs settle it. Models with different numbers of topics are
        compared exactly by embedding the smaller one (one of its topics
        duplicated, with its Dirichlet mass split). When the two models are not
        both per-token mixtures (e.g. LDAGibbs against ProdLDA) there is no path
        between them: a ``UserWarning`` says so and the result is paired standard
        AIS with common random numbers (``method="paired-ais"``), with this
        function's ``n_temperatures``, ``n_chains``, ``schedule`` and ``kernel``.

    {data_parallel}
    """
    run = prepare("ratio_ais", estimator_a, X, device=device,
                  dirichlet_approximation=dirichlet_approximation, random_state=random_state,
                  others=(estimator_b,))
    a, (b,) = run.model, run.others
    X, lengths, device, root = run.X, run.lengths, run.device, run.root
    settings = run_settings(
        random_state, device, (a.prior, b.prior), path=path, direction=direction,
        n_temperatures=n_temperatures, n_chains=n_chains,
        schedule=schedule if isinstance(schedule, str) else "array", start=start,
    )
    if a.kind != "topics" or b.kind != "topics":
        return _paired(a.view, b.view, X, settings, n_temperatures=n_temperatures,
                       n_chains=n_chains, schedule=schedule, kernel=kernel,
                       dirichlet_approximation=dirichlet_approximation, device=device,
                       n_jobs=n_jobs, random_state=random_state, verbose=verbose)
    phi_a, alpha_a = (np.asarray(m, float) for m in a.mixture)
    phi_b, alpha_b = (np.asarray(m, float) for m in b.mixture)
    if phi_a.shape[0] < phi_b.shape[0]:
        phi_a, alpha_a = embed_smaller_model(phi_a, alpha_a, phi_b)
        settings["embedded"] = "A split to B's number of topics (exact, Dirichlet aggregation)"
    elif phi_b.shape[0] < phi_a.shape[0]:
        phi_b, alpha_b = embed_smaller_model(phi_b, alpha_b, phi_a)
        settings["embedded"] = "B split to A's number of topics (exact, Dirichlet aggregation)"
        align_topics = False  # already aligned with A
    if "embedded" in settings and phi_a.shape[0] != phi_b.shape[0]:  # pragma: no cover
        raise AssertionError
    perm = matching_permutation(phi_a, phi_b) if align_topics else np.arange(phi_b.shape[0])
    phi_b, alpha_b = phi_b[perm], alpha_b[perm]
    two_polya_terms = path == "geometric" and not np.array_equal(alpha_a, alpha_b)
    kernel = resolve_kernel(kernel, device, blocked_valid=not two_polya_terms)
    if kernel == "blocked" and two_polya_terms:
        raise ValueError("kernel='blocked' is invalid on the geometric path with different "
                         "alphas; use path='hybrid' or kernel='collapsed'.")
    betas = temperature_schedule(schedule, n_temperatures)
    start_betas = temperature_schedule(schedule, n_start_temperatures or n_temperatures)
    n_start = {"ais": start_betas.size - 1, "sequential": 1 + n_burnin_sweeps,
               "burnin": n_burnin_sweeps}.get(start, 0)
    n_runs = 2 if direction == "both" else 1
    n_updates = int(lengths.sum() * n_chains * (len(betas) - 1 + n_start) * n_runs)
    fwd = rev = fwd_se = rev_se = None
    ess_min = np.inf
    with progress("ratio_ais", X.shape[0] * n_runs, n_updates, verbose) as line:
        common = dict(X=X, path=path, betas=betas, start=start, start_betas=start_betas,
                      n_burnin=n_burnin_sweeps, n_chains=n_chains, kernel=kernel, root=root,
                      device=device, progress=line)
        if direction in ("forward", "both"):
            out = ratio_direction((phi_b, alpha_b), (phi_a, alpha_a), stage=40, **common)
            fwd, fwd_se = out.estimate, out.stderr
            ess_min = min(ess_min, float(out.ess[lengths > 0].min(initial=np.inf)))
        if direction in ("reverse", "both"):
            out = ratio_direction((phi_a, alpha_a), (phi_b, alpha_b), stage=50, **common)
            rev, rev_se = -out.estimate, out.stderr
            ess_min = min(ess_min, float(out.ess[lengths > 0].min(initial=np.inf)))
    if direction == "forward":
        per_doc, se = fwd, fwd_se
    elif direction == "reverse":
        per_doc, se = rev, rev_se
    else:
        per_doc = 0.5 * (fwd + rev)
        se = 0.5 * np.sqrt(fwd_se**2 + rev_se**2)
    settings.update(kernel=kernel, aligned=align_topics,
                    n_start_temperatures=n_start_temperatures or n_temperatures,
                    n_burnin_sweeps=n_burnin_sweeps)
    result = gather_result(ModelComparison(
        per_document=per_doc,
        per_document_stderr=np.where(lengths > 0, se, 0.0),
        n_tokens=lengths,
        method="ratio-ais",
        settings=settings,
        forward=fwd,
        reverse=rev,
        forward_stderr=fwd_se,
        reverse_stderr=rev_se,
        topic_permutation=perm,
        n_token_updates=n_updates,
        min_ess=ess_min,
        document_keys=document_keys(X),
    ))
    if direction == "both":  # on the documents of every rank
        _warn_if_unsettled(result.forward, result.reverse)
    return result


def _warn_if_unsettled(forward, reverse):
    """ConvergenceWarning when the two directions disagree on the sign of the total.

    With exact starts the forward total is a stochastic lower bound of the log-ratio
    and the reverse total an upper bound, so a bracket around zero leaves open which
    model is better. Inside ``data_parallel``, on rank 0.
    """
    if not on_rank_zero():
        return
    low, high = sorted((float(np.sum(forward)), float(np.sum(reverse))))
    if low < 0.0 < high:
        warn(
            f"The forward and reverse runs disagree on which model is better (total "
            f"log-ratios {float(np.sum(forward)):.3f} and {float(np.sum(reverse)):.3f}): the "
            "comparison is not settled at this budget. The models may be about equally "
            "good, or the paths too short; increase n_temperatures to tell.",
            ConvergenceWarning)



def _paired(view_a, view_b, X, settings, *, random_state, **kwargs):
    """Paired standard AIS with common random numbers (no path between the models).

    Inside ``data_parallel`` both runs gather their results (rank 0's seed, for every
    rank), so the comparison is of every rank's documents already.
    """
    if on_rank_zero():
        warn(
            "ratio_ais: the two models are not both per-token mixtures over topics (e.g. "
            "LDAGibbs against ProdLDA), so there is no annealing path between them; "
            "comparing them by paired standard AIS with common random numbers instead "
            "(method='paired-ais'): a noisier comparison. Each run's log-estimate is biased "
            "low by its own amount, so their difference is biased too, in either direction; "
            "check that it is stable when n_temperatures is doubled.",
            UserWarning)
    # one seed for both runs: the same random numbers wherever their engines coincide
    seed = random_state if isinstance(random_state, numbers.Integral) else int(
        check_random_state(random_state).randint(np.iinfo(np.int32).max))
    if current_collective() is not None:
        seed = current_collective().broadcast(seed)
    ra = ais_log_likelihood(view_a, X, random_state=seed, **kwargs)
    rb = ais_log_likelihood(view_b, X, random_state=seed, **kwargs)
    se = np.sqrt(np.nan_to_num(ra.per_document_stderr) ** 2
                 + np.nan_to_num(rb.per_document_stderr) ** 2)
    settings = dict(settings, random_state=seed, device=ra.settings["device"],
                    kernel=(ra.settings["kernel"], rb.settings["kernel"]),
                    note="no path between the models: paired standard AIS with common "
                         "random numbers, not ratio-AIS")
    for key in ("path", "direction", "start"):
        settings.pop(key)
    return ModelComparison(
        per_document=ra.per_document - rb.per_document,
        per_document_stderr=se,
        n_tokens=ra.n_tokens,
        method="paired-ais",
        settings=settings,
        n_token_updates=ra.n_token_updates + rb.n_token_updates,
        min_ess=min(ra.min_ess, rb.min_ess),
        document_keys=ra.document_keys,
    )
