"""The check behind AVITM's warnings that its documents barely tell the topics apart."""

import numpy as np

from ..utils._distributed import current_collective

__all__ = ["proportions_collapse"]

#: Training documents (evenly spaced) whose topic proportions the check reads.
_SAMPLE = 2000

#: Collapse: the mean largest topic share is below this many times 1 / K.
_FACTOR = 1.5
#: Fractional input (tf-idf weights), which carries less evidence per document, is
#: held to this many times 1 / K, but never above a share of one half.
_FRACTIONAL_FACTOR = 4.0
_FRACTIONAL_CAP = 0.5


def _near_duplicates(topic_word, top_n=10, shared=8):
    """How many topics share ``shared`` or more of their ``top_n`` top words with another."""
    top = np.argsort(-topic_word, axis=1, kind="stable")[:, :top_n]
    overlap = np.array([[np.intersect1d(a, b).size for b in top] for a in top])
    np.fill_diagonal(overlap, 0)
    return int((overlap.max(axis=1) >= shared).sum())


def proportions_collapse(model, X):
    """Whether a fitted neural model's documents barely tell its topics apart.

    When every document gets nearly the same proportions, the encoder has collapsed
    to the prior and no document tells the topics apart. The check reads
    ``transform`` on up to 2,000 evenly spaced documents of ``X`` (data-parallel, up
    to 2,000 of each rank's, with the same verdict on every rank) and fires when
    their mean largest topic share is below 1.5 / K (a collapse), or, when ``X`` has
    fractional values, below ``min(4 / K, 1 / 2)``: tf-idf weights gave AVITM
    1.5-3.2 / K where the same documents' counts gave 2.6 / K or more
    (``research/avitm_duplicates.py``), and the cap keeps the bar below one at
    small K, where 4 / K would flag every fit.

    Parameters
    ----------
    model : fitted AVITM or ProdLDA
    X : sparse matrix of shape (n_samples, n_features)
        Validated counts (the training documents).

    Returns
    -------
    fires : bool
    share : float
        The mean largest topic share (NaN when not checked: K < 4 or no tokens).
    message : str
        What happened and what to do, for the warning (empty when not checked).
    """
    n_topics = model.n_components
    if n_topics < 4:
        return False, float("nan"), ""
    rows = np.unique(np.linspace(0, X.shape[0] - 1, min(X.shape[0], _SAMPLE)).astype(np.int64))
    probe = X[rows]
    probe = probe[np.asarray(probe.sum(axis=1)).ravel() > 0]
    total = float(model._transform(probe).max(axis=1).sum()) if probe.shape[0] else 0.0
    count = int(probe.shape[0])
    fractional = bool(np.any(probe.data != np.round(probe.data)))
    collective = current_collective()
    if collective is not None:  # every rank's probe: one verdict, the same on every rank
        total, count = collective.sum(total), collective.sum(count)
        fractional = collective.sum(int(fractional)) > 0
    if count == 0:
        return False, float("nan"), ""
    share = total / count
    collapsed = share < _FACTOR / n_topics
    name = type(model).__name__
    measured = f"mean largest topic share {share:.3f}; uniform is {1 / n_topics:.3f}"
    if collapsed:
        message = (f"{name}: the topic proportions collapsed: the documents get nearly "
                   f"the same proportions ({measured}), so they barely tell the topics "
                   "apart. ")
    else:
        message = (f"{name}: the documents' topic proportions are weak ({measured}). ")
    duplicates = _near_duplicates(model.components_)
    if duplicates:
        message += (f"{duplicates} of {n_topics} topics share 8 or more of their 10 top "
                    "words with another. ")
    if fractional:
        message += ("The input has fractional values (tf-idf weights?): the model reads "
                    "them as counts, and a document whose weights sum to a few units is "
                    "little evidence for its topics. Pass raw counts (CountVectorizer).")
    else:
        floor = "" if getattr(model, "free_bits", 0) > 0 else ", or set free_bits above 0"
        message += ("The documents may be too short for this many topics: fit fewer "
                    f"topics{floor} (see the user guide).")
    bar = min(_FRACTIONAL_FACTOR / n_topics, _FRACTIONAL_CAP) if fractional else 0.0
    return collapsed or share < bar, share, message.rstrip()
