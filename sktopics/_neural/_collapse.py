"""The check behind AVITM's warning that its topics collapsed into near-duplicates."""

import numpy as np

__all__ = ["proportions_collapse"]

#: Training documents (evenly spaced) whose topic proportions the check reads.
_SAMPLE = 2000

#: The check fires when the mean largest topic share is below this many times 1 / K:
#: counts, and fractional weights (tf-idf), which carry less evidence per document.
_FACTOR = 1.5
_FRACTIONAL_FACTOR = 4.0


def _near_duplicates(topic_word, top_n=10, shared=8):
    """How many topics share ``shared`` or more of their ``top_n`` top words with another."""
    top = np.argsort(-topic_word, axis=1, kind="stable")[:, :top_n]
    overlap = np.array([[np.intersect1d(a, b).size for b in top] for a in top])
    np.fill_diagonal(overlap, 0)
    return int((overlap.max(axis=1) >= shared).sum())


def proportions_collapse(model, X):
    """Whether a fitted neural model gives every document nearly uniform proportions.

    When every document gets the same proportions, no document tells the topics
    apart: the encoder has collapsed to the prior and the topics are interchangeable
    near-duplicates. The check reads ``transform`` on up to 2,000 evenly spaced
    documents of ``X`` and fires when their mean largest topic share is below
    1.5 / K, or below 4 / K when ``X`` has fractional values (tf-idf weights, which
    gave AVITM 1.5-3.2 / K where the same documents' counts gave 2.6 / K or more;
    ``research/avitm_duplicates.py``).

    Parameters
    ----------
    model : fitted AVITM or ProdLDA
    X : sparse matrix of shape (n_samples, n_features)
        Validated counts (the training documents).

    Returns
    -------
    collapsed : bool
    share : float
        The mean largest topic share (NaN when not checked: K < 4 or no tokens).
    message : str
        What happened and what to do, for the warning.
    """
    n_topics = model.n_components
    rows = np.unique(np.linspace(0, X.shape[0] - 1, min(X.shape[0], _SAMPLE)).astype(np.int64))
    probe = X[rows]
    probe = probe[np.asarray(probe.sum(axis=1)).ravel() > 0]
    if n_topics < 4 or probe.shape[0] == 0:
        return False, float("nan"), ""
    share = float(model._transform(probe).max(axis=1).mean())
    message = (
        f"{type(model).__name__}: the topics collapsed into near-duplicates: the "
        f"documents get nearly the same topic proportions (mean largest share "
        f"{share:.3f}; uniform is {1 / n_topics:.3f}), so they barely tell the topics "
        f"apart ({_near_duplicates(model.components_)} of {n_topics} topics share 8 or "
        "more of their 10 top words with another). "
    )
    fractional = bool(np.any(probe.data != np.round(probe.data)))
    if fractional:
        message += (
            "The input has fractional values (tf-idf weights?): the model reads them as "
            "counts, and a document whose weights sum to a few units is too little "
            "evidence for its topics. Fit raw counts (CountVectorizer)."
        )
    else:
        message += ("The documents may be too short for this many topics: fit fewer "
                    "topics, or keep free_bits above 0 (see the user guide).")
    factor = _FRACTIONAL_FACTOR if fractional else _FACTOR
    return share < factor / n_topics, share, message
