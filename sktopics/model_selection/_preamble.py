"""What every public evaluation function does before it estimates anything.

Resolve the device, take the model out of a Pipeline (running the leading steps
on ``X``), take its generative view and the latent the engines anneal, check the
held-out counts, and derive the root random key. The progress line of a run is
:class:`~sktopics._evaluation._progress.Progress`, a context manager.
"""

import numbers
from typing import NamedTuple

import numpy as np
import torch

from .._evaluation._views import check_eval_counts, generative_view, latent_of
from .._random import root_key
from ..utils._devices import resolve_device
from ..utils._distributed import current_collective
from ..utils._pipeline import final_estimator, split_pipeline

__all__ = ["RUN_CONSTRAINTS", "EvaluatedModel", "Evaluation", "HeldOutRun", "evaluated_model",
           "held_out_counts", "prepare", "prepare_counts", "run_settings", "seed_of"]


#: The parameter constraints of how an evaluation runs, shared by the public functions.
RUN_CONSTRAINTS = {
    "device": [None, str, torch.device],
    "n_jobs": [None, numbers.Integral],
    "random_state": ["random_state"],
    "verbose": ["verbose"],
}


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
    root : int
        Root key of the run's counter-based random numbers.
    """

    X: object
    lengths: np.ndarray
    device: torch.device
    root: int


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
    """``(X, lengths)``: the counts checked over ``n_features`` words, and tokens per document.

    Refused inside :func:`sktopics.distributed.data_parallel`: these evaluators see the
    documents of one process, and would return each rank's own estimate, not the
    corpus's.
    """
    if current_collective() is not None:
        raise ValueError(
            f"{owner} evaluates the documents of one process: call it outside "
            "sktopics.distributed.data_parallel() (on one rank, or gather the documents "
            "first); inside it, an estimator's score() gives the score of every rank's "
            "documents.")
    X = check_eval_counts(X, n_features, integer=integer, owner=owner)
    return X, np.asarray(X.sum(1)).ravel()


def prepare_counts(owner, X, n_features, *, device, random_state, integer=True):
    """The part of the preamble that every evaluation shares, for engines that are not
    given an estimator (iteration-AIS's snapshots): the device, the checked counts
    and the root key.

    Returns
    -------
    run : HeldOutRun
    """
    X, lengths = held_out_counts(X, n_features, owner, integer=integer)
    return HeldOutRun(X, lengths, resolve_device(device), root_key(random_state))


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
        Counts are checked as integers, except for a continuous latent.
    """
    estimator, X = split_pipeline(estimator, X)
    model = evaluated_model(estimator, dirichlet_approximation)
    others = tuple(evaluated_model(final_estimator(o), dirichlet_approximation) for o in others)
    if any(o.view.n_features != model.view.n_features for o in others):
        raise ValueError("The models have different vocabularies.")
    run = prepare_counts(owner, X, model.view.n_features, device=device,
                         random_state=random_state, integer=model.kind != "continuous")
    return Evaluation(model, *run, others)
