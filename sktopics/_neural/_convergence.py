"""When a neural topic model's fit stopped before its topics settled."""

__all__ = ["AUTO_STEPS", "WARN_STEPS", "undertrained"]

#: The optimiser steps ``max_iter="auto"`` trains for at least. ProdLDA's held-out
#: NPMI peaked between 600 and 2,400 steps on corpora of 150 to 11,000 documents,
#: and fell after it on some (BBC News, NIPS papers) while topic diversity rose
#: (research/neural_training_length.py): 1,000 steps lifts the smallest corpora and
#: leaves corpora of more than about 1,300 documents at 50 epochs, as measured when
#: the defaults were chosen.
AUTO_STEPS = 1000
#: Fewer steps than this, and a fit's topics were still forming: at about 300 steps
#: ProdLDA's NPMI was under half its peak, or negative, on six of the eight corpora
#: (within 80 % of it on BBC News and NIPS papers).
WARN_STEPS = 500


def undertrained(model, history, first, planned):
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
    cannot tell (on small corpora it keeps falling while the topics degrade, and
    its epoch-to-epoch noise hides a slow improvement), so the rule is the number
    of optimiser steps, cumulated over warm fits, against :data:`WARN_STEPS`.
    """
    name = type(model).__name__
    ran = len(history) - first
    if ran == 0:
        return ""
    if model.validation_fraction is not None:
        if ran < planned:  # early stopping ended it
            return ""
        return (
            f"{name}: valid_loss was still improving by more than tol={model.tol:g} "
            f"within the last n_iter_no_change={model.n_iter_no_change} epochs when "
            f"max_iter={model.max_iter} ended training. Raise max_iter; training then "
            "stops by itself once valid_loss stops improving."
        )
    steps = sum(row.get("train_batch_count", 0) for row in history)
    if steps >= WARN_STEPS:
        return ""
    per_epoch = max(history[-1].get("train_batch_count", 1), 1)
    needed = -(-AUTO_STEPS // per_epoch)
    return (
        f"{name} trained for {steps} optimiser steps ({len(history)} epochs of "
        f"{per_epoch} batches), too few for its topics to settle: they usually keep "
        f"improving up to {AUTO_STEPS:,} steps or more. Use max_iter='auto' (the default), "
        f"which trains that long, or max_iter={needed}, or set "
        "validation_fraction to stop on held-out documents."
    )
