"""How long a neural topic model trains by default, and when its fit stopped before
its topics settled.

The rules come from ``research/neural_training_length.py`` (the neural guide, "How
long to train"): held-out NPMI (both conventions) and topic diversity against
optimiser steps for AVITM and ProdLDA, at K = 10, 20 and 50, on corpora of 100 to
5,000 documents of 6 to 1,250 tokens, three seeds each.
"""

import math

__all__ = ["MIN_STEPS", "auto_steps", "undertrained"]

#: The optimiser steps ``max_iter="auto"`` trains for at least (ProdLDA: at most; see
#: :func:`auto_steps`). AVITM's held-out NPMI rose up to 1,000 steps on every corpus
#: of the study; ProdLDA's did on short documents, and on corpora of more than about
#: 1,300 documents 50 epochs already give more steps.
MIN_STEPS = 1000

#: ProdLDA: the steps over which its held-out NPMI rose fall with the topics and the
#: length of the documents (a step's batch holds 64 documents of L tokens for K
#: topics to share): ``TOKEN_TOPIC_STEPS / (K L)`` steps, within
#: ``[PRODLDA_MIN_STEPS, MIN_STEPS]``.
TOKEN_TOPIC_STEPS = 2_000_000
PRODLDA_MIN_STEPS = 300

#: A fit warns when it ran fewer than this fraction of :func:`auto_steps`: between it
#: and the full count, more training raised the zero-convention NPMI and the topic
#: diversity while lowering the epsilon-convention NPMI on long documents, so more
#: training is not advice the measurements back.
WARN_FRACTION = 0.25


def auto_steps(model, tokens_per_document):
    """The optimiser steps ``max_iter="auto"`` trains ``model`` for at least.

    Parameters
    ----------
    model : neural topic model
    tokens_per_document : float
        The training documents' mean length (tokens of the documents with tokens).

    Returns
    -------
    steps : int
        :data:`MIN_STEPS`; for ProdLDA ``TOKEN_TOPIC_STEPS / (K L)`` within
        ``[PRODLDA_MIN_STEPS, MIN_STEPS]``: 1,000 on short texts (L below 100 at
        K = 20), 300 on long documents at K >= 20 (L above 330 at K = 20).
    """
    if not model._steps_by_length:
        return MIN_STEPS
    steps = TOKEN_TOPIC_STEPS / (model.n_components * max(tokens_per_document, 1.0))
    return int(min(MIN_STEPS, max(PRODLDA_MIN_STEPS, round(steps))))


def undertrained(model, history, first, planned, stopped_early):
    """Why a fit of a neural model looks under-trained, or "" when it does not.

    Parameters
    ----------
    model : fitted neural topic model
    history : skorch History
        The net's history; rows from ``first`` on are this call's epochs.
    first : int
        Epochs run before this call (warm start).
    planned : int
        The epochs this call was to run.
    stopped_early : bool
        Whether early stopping ended this call's training.

    Returns
    -------
    message : str
        The ConvergenceWarning's text, or "".

    Notes
    -----
    With ``validation_fraction`` the rule is scikit-learn's for its neural
    networks: a fit that ran all its epochs without early stopping had a
    validation loss still improving by ``tol`` within the last
    ``n_iter_no_change`` epochs. Without a validation split neither loss can tell
    (the training loss kept falling while held-out NPMI fell, and early stopping on
    the validation loss stopped ProdLDA after 10-100 steps on small corpora and
    after 1,400-3,000 on long documents), so the rule counts optimiser steps,
    cumulated over warm fits: fewer than :data:`WARN_FRACTION` of
    :func:`auto_steps`.
    """
    name = type(model).__name__
    ran = len(history) - first
    if ran == 0:
        return ""
    if model.validation_fraction is not None:
        if stopped_early or ran < planned:
            return ""
        return (
            f"{name}: valid_loss was still improving by more than tol={model.tol:g} "
            f"within the last n_iter_no_change={model.n_iter_no_change} epochs when "
            f"training ended after {ran} epochs. Set max_iter above {ran}: training then "
            "stops by itself once valid_loss stops improving."
        )
    steps = sum(row.get("train_batch_count", 0) for row in history)
    length = history[-1].get("train_tokens_per_document", 0.0)
    target = auto_steps(model, length)
    if steps >= WARN_FRACTION * target:
        return ""
    per_epoch = max(history[-1].get("train_batch_count", 1), 1)
    needed = math.ceil(target / per_epoch)
    corpus = f"documents of about {length:.0f} tokens" + (
        f" and K = {model.n_components}" if model._steps_by_length else "")
    return (
        f"{name} trained for {steps} optimiser steps ({len(history)} epochs of "
        f"{per_epoch} batches), too few for its topics to form: on {corpus}, held-out "
        f"coherence kept improving up to about {target:,} steps. Use max_iter='auto' "
        f"(the default), which trains that long, or max_iter={needed}."
    )
