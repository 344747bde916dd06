"""When a neural topic model's fit stopped before its topics settled."""

__all__ = ["MIN_STEPS", "undertrained"]

#: The optimiser steps ``max_iter="auto"`` trains for at least, and below which a fit
#: warns (research/neural_training_length.py). At 1,000 steps ProdLDA's held-out NPMI
#: was within 0.03 of its best checkpoint on corpora of 100 to 500 documents (three
#: seeds), where the 100 steps that 50 epochs give them left it lower on every corpus;
#: past 1,500 steps it collapsed on 140 NIPS papers, and on BBC News and the NIPS
#: papers it fell after 600 steps. Corpora of more than about 1,300 documents get 50
#: epochs and at least 1,000 steps anyway, as when the defaults were chosen.
MIN_STEPS = 1000


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
    ``n_iter_no_change`` epochs. Without a validation split the training loss
    cannot tell (on BBC News and the NIPS papers it kept falling while the topics'
    NPMI fell), so the rule is the number of optimiser steps, cumulated over warm
    fits, against :data:`MIN_STEPS`.
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
    if steps >= MIN_STEPS:
        return ""
    per_epoch = max(history[-1].get("train_batch_count", 1), 1)
    needed = -(-MIN_STEPS // per_epoch)
    return (
        f"{name} trained for {steps} optimiser steps ({len(history)} epochs of "
        f"{per_epoch} batches), too few for its topics to form: they usually keep "
        f"improving up to about {MIN_STEPS:,} steps. Use max_iter='auto' (the default), "
        f"which trains that long, or max_iter={needed}."
    )
