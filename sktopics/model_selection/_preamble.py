"""What every public evaluation function does before it estimates anything.

Resolve the device, take the model out of a Pipeline (running the leading steps
on ``X``), take its generative view and the latent the engines anneal, check the
held-out counts, and derive the root random key. The progress line of a run is
:func:`progress`, a context manager.

Inside :func:`sktopics.distributed.data_parallel` each rank prepares its own
documents; the ranks then agree (:func:`agreed`): a problem any rank found is raised
on every rank, the models must be the same everywhere, and the root key is rank 0's,
so that a document's random numbers are the same whichever rank evaluates it. The
evaluators pass their result to :func:`~sktopics.model_selection._gather.gather_result`.
"""

import numbers
from typing import NamedTuple

import numpy as np
import torch

from .._evaluation._progress import Progress
from .._evaluation._views import check_eval_counts, generative_view, latent_of
from .._random import root_key
from ..utils._devices import resolve_device
from ..utils._distributed import current_collective, on_rank_zero
from ..utils._fingerprint import array_fingerprint
from ..utils._pipeline import final_estimator, split_pipeline

__all__ = ["DATA_PARALLEL_NOTES", "RUN_CONSTRAINTS", "EvaluatedModel", "Evaluation", "HeldOutRun",
           "agreed", "evaluated_model", "held_out_counts", "model_fingerprint", "prepare",
           "prepare_counts", "progress", "run_settings", "seed_of"]


#: The parameter constraints of how an evaluation runs, shared by the public functions.
RUN_CONSTRAINTS = {
    "device": [None, str, torch.device],
    "n_jobs": [None, numbers.Integral],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


#: The Notes section of every public evaluator (``fill_doc(data_parallel=...)``).
DATA_PARALLEL_NOTES = """
Notes
-----
Inside :func:`sktopics.distributed.data_parallel`, ``X`` holds this rank's documents
and every rank returns the result of all the ranks' documents: the result one
process gives on the ranks' ``X`` concatenated in rank order (per-document arrays
in that order; costs and resampling events summed). Every rank must pass the same
models and arguments; a problem with one rank's input is raised on every rank.
Warnings about the result and progress lines come from rank 0 (the user guide,
:ref:`distributed`).
"""


class EvaluatedModel(NamedTuple):
    """A fitted model as the engines see it.

    Attributes
    ----------
    view : GenerativeView or PAMGenerativeView
    kind : {"topics", "paths", "continuous"}
        What the engines anneal (see :func:`~sktopics._evaluation._views.latent_of`).
    mixture : TokenMixture, PathMixture or None
        The collapsed mixture of ``kind``; ``None`` for ``"continuous"``.
    prior : str
        Which prior is evaluated, for the results' ``settings``.
    """

    view: object
    kind: str
    mixture: object
    prior: str


class HeldOutRun(NamedTuple):
    """Held-out counts, checked, and how the run that evaluates them goes.

    Attributes
    ----------
    X : scipy.sparse.csr_matrix of shape (n_documents, n_words)
        Float64 counts over the model's vocabulary.
    lengths : ndarray of shape (n_documents,)
        Tokens per document (float64).
    device : torch.device
    root : int or None
        Root key of the run's counter-based random numbers (``None`` until the
        ranks agreed on it, :func:`agreed`).
    """

    X: object
    lengths: np.ndarray
    device: torch.device
    root: object


class Evaluation(NamedTuple):
    """A model (and the models it is compared with) and its held-out counts, checked
    and ready for an engine.

    Attributes
    ----------
    model : EvaluatedModel
    X, lengths, device, root
        As in :class:`HeldOutRun`.
    others : tuple of EvaluatedModel
        The other models of a comparison, over the same vocabulary.
    """

    model: EvaluatedModel
    X: object
    lengths: np.ndarray
    device: torch.device
    root: int
    others: tuple = ()


def seed_of(random_state):
    """``random_state`` as recorded in ``settings`` (ints only)."""
    return random_state if isinstance(random_state, numbers.Integral) else None


def run_settings(random_state, device, prior, **settings):
    """A result's ``settings``: the function's own entries, then seed, device and prior."""
    return dict(settings, random_state=seed_of(random_state), device=str(device), prior=prior)


def evaluated_model(estimator, dirichlet_approximation=True):
    """The :class:`EvaluatedModel` of a fitted model, Pipeline, view or (phi, alpha)."""
    view = generative_view(estimator)
    return EvaluatedModel(view, *latent_of(view, dirichlet_approximation))


def held_out_counts(X, n_features, owner, *, integer=True):
    """``(X, lengths)``: the counts checked over ``n_features`` words, and tokens per document."""
    X = check_eval_counts(X, n_features, integer=integer, owner=owner)
    return X, np.asarray(X.sum(1)).ravel()


def model_fingerprint(estimator, model):
    """A digest of what an evaluation depends on in a model: an estimator's fitted
    parameters, or the arrays of a view's prior and likelihood; with the latent its
    engines anneal (which ``dirichlet_approximation`` decides).

    Parameters
    ----------
    estimator : estimator, Pipeline, generative view or (topic_word, alpha)
    model : EvaluatedModel
        ``estimator``'s.

    Returns
    -------
    fingerprint : tuple
    """
    final = final_estimator(estimator)
    if hasattr(final, "_model_fingerprint"):
        digest = final._model_fingerprint()
    else:
        parts = [model.mixture] if model.mixture is not None else []
        parts += [model.view.prior, model.view.likelihood]
        digest = array_fingerprint(_arrays(parts))
    return digest, model.kind, model.prior, model.view.n_features


def _arrays(value):
    """The numbers in ``value``: arrays, and those in the public attributes of its
    objects (not their caches)."""
    if isinstance(value, (np.ndarray, numbers.Number)):
        yield np.atleast_1d(np.asarray(value, dtype=np.float64))
    elif isinstance(value, (list, tuple)):
        for item in value:
            yield from _arrays(item)
    elif hasattr(value, "__dict__"):
        for name, item in sorted(vars(value).items()):
            if not name.startswith("_"):
                yield from _arrays(item)


def agreed(owner, prepare_locally, identity, random_state):
    """``(prepared, root)``: what ``prepare_locally()`` returns, and the run's root key.

    Outside :func:`sktopics.distributed.data_parallel` it is ``prepare_locally()`` and
    the key of ``random_state``. Inside it the ranks agree first, so that none waits
    for the others in an exchange they will never reach: an error of
    ``prepare_locally()`` on any rank raises the same ``ValueError`` on every rank
    (naming the ranks), ``identity(prepared)`` (the models) and the seed must be the
    same on every rank, and the root key is rank 0's (a ``None`` or ``RandomState``
    seed draws on every rank; rank 0's draw is used).

    Parameters
    ----------
    owner : str
        The public function's name, for messages.
    prepare_locally : callable
        Checks this rank's input; returns what the evaluation needs.
    identity : callable
        ``identity(prepared)``: what must be equal on every rank, with a stable ``repr``.
    random_state : int, RandomState or None

    Returns
    -------
    prepared : object
    root : int
    """
    collective = current_collective()
    if collective is None:
        return prepare_locally(), root_key(random_state)
    error = prepared = None
    try:
        prepared = prepare_locally()
    except Exception as exc:  # noqa: BLE001 - agreed on, then raised on every rank
        error = exc
    problem = None if error is None else (
        str(error) if isinstance(error, ValueError) else f"{type(error).__name__}: {error}")
    try:
        collective.agree(problem)
    except ValueError as refused:
        raise refused from error
    collective.same_everywhere(f"The model evaluated by {owner} (its parameters)",
                               identity(prepared))
    collective.same_everywhere(f"The random_state of {owner}", seed_of(random_state))
    return prepared, collective.broadcast(root_key(random_state))


def progress(label, n_documents, total, verbose):
    """The :class:`~sktopics._evaluation._progress.Progress` of a run; silent on the
    ranks other than 0 of a ``data_parallel`` block (rank 0's line counts its own
    documents and work)."""
    return Progress(label, n_documents, total, verbose if on_rank_zero() else 0)


def prepare_counts(owner, X, n_features, *, device, integer=True):
    """The part of the preamble that every evaluation shares, for engines that are not
    given an estimator (iteration-AIS's snapshots): the device and the checked counts.
    The root key comes with the agreement (:func:`agreed`).

    Returns
    -------
    run : HeldOutRun
        With ``root=None``.
    """
    X, lengths = held_out_counts(X, n_features, owner, integer=integer)
    return HeldOutRun(X, lengths, resolve_device(device), None)


def prepare(owner, estimator, X, *, device, dirichlet_approximation, random_state,
            others=()):
    """The preamble of a function that evaluates a model, or compares it with others.

    Parameters
    ----------
    owner : str
        The public function's name, for messages.
    estimator : estimator, Pipeline, generative view or (topic_word, alpha)
        The model; a Pipeline's leading steps transform ``X``.
    X : {array-like, sparse matrix}
        Held-out counts, or what a Pipeline's leading steps take.
    device : str, torch.device or None
    dirichlet_approximation : bool
    random_state : int, RandomState or None
    others : sequence of the same kinds as ``estimator``
        Models compared with ``estimator`` (a Pipeline's last step is taken), over
        its vocabulary.

    Returns
    -------
    evaluation : Evaluation
        Counts are checked as integers, except for a continuous latent. Inside
        ``data_parallel`` the ranks have agreed (:func:`agreed`).
    """

    def prepare_locally():
        model_estimator, counts = split_pipeline(estimator, X)
        model = evaluated_model(model_estimator, dirichlet_approximation)
        compared = tuple(final_estimator(o) for o in others)
        evaluated = tuple(evaluated_model(o, dirichlet_approximation) for o in compared)
        if any(o.view.n_features != model.view.n_features for o in evaluated):
            raise ValueError("The models have different vocabularies.")
        run = prepare_counts(owner, counts, model.view.n_features, device=device,
                             integer=model.kind != "continuous")
        return Evaluation(model, *run, evaluated), (model_estimator, *compared)

    def identity(prepared):
        evaluation, estimators = prepared
        models = (evaluation.model, *evaluation.others)
        return [model_fingerprint(e, m) for e, m in zip(estimators, models)]

    (evaluation, _), root = agreed(owner, prepare_locally, identity, random_state)
    return evaluation._replace(root=root)
