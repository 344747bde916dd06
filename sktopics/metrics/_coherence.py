"""NPMI topic coherence counted over boolean reference documents."""

from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from sklearn.utils import check_array

from ..utils._pipeline import has_leading_steps, split_pipeline
from ..utils._sklearn_compat import HasMethods, Interval, StrOptions, validate_params
from ..utils._validation import check_topic_word, text_input_kind
from ..utils._warnings import warn

__all__ = ["NPMIResult", "npmi_coherence"]


class NPMIResult(NamedTuple):
    """Result of :func:`npmi_coherence`.

    Attributes
    ----------
    mean : float
        Mean of ``per_topic`` over the topics that have a score (NaN entries are
        left out); NaN when no topic has one.
    per_topic : ndarray of shape (n_topics,)
        Mean NPMI over each topic's word pairs; NaN for a topic left with fewer
        than two usable words.
    """

    mean: float
    per_topic: np.ndarray


def top_word_indices(topic_word, top_n):
    """Column indices of each topic's ``top_n`` largest values, best first.

    A stable sort on the negated values sends ties to the lower column index.
    """
    return np.argsort(-topic_word, axis=1, kind="stable")[:, :top_n]


def check_top_n(top_n, n_words):
    """Raise a ValueError when ``top_n`` exceeds the vocabulary size."""
    if top_n > n_words:
        raise ValueError(
            f"top_n={top_n} exceeds the number of words in the topic-word "
            f"matrix ({n_words})."
        )


def _reference_counts(model_or_topic_word, X_ref):
    """``X_ref`` as a matrix: documents go through a Pipeline's leading steps.

    A matrix is returned as is (it is over the model's vocabulary). Raw text or token
    lists need the vectorizer of a Pipeline; without one they are refused, without
    the corpus in the message.
    """
    kind = text_input_kind(X_ref)
    if kind is None:
        return X_ref
    if not has_leading_steps(model_or_topic_word):
        raise ValueError(
            f"X_ref holds {kind}, and model_or_topic_word has no vectorizer to count it: "
            "pass the fitted Pipeline, or vectorize the texts with the model's vectorizer."
        )
    try:
        return split_pipeline(model_or_topic_word, X_ref)[1]
    except (AttributeError, TypeError) as exc:
        if kind != "token lists":
            raise
        raise ValueError(
            "X_ref holds token lists, which the Pipeline's vectorizer does not take: pass "
            "the texts, or fit the Pipeline with CountVectorizer(analyzer=list)."
        ) from exc


def _check_reference(X_ref, n_words):
    """Validate ``X_ref`` and return it as a CSC matrix."""
    X_ref = check_array(
        X_ref,
        accept_sparse=True,
        dtype="numeric",
        ensure_all_finite=True,
        input_name="X_ref",
    )
    if X_ref.shape[1] != n_words:
        raise ValueError(
            f"X_ref has {X_ref.shape[1]} columns but the topic-word matrix has "
            f"{n_words} words; X_ref must be a documents x words matrix over the "
            "model's vocabulary."
        )
    # CSC sums duplicate COO entries, so the sign check sees the final values.
    X_ref = sp.csc_matrix(X_ref)
    if X_ref.nnz and X_ref.data.min() < 0:
        raise ValueError("X_ref contains negative values; it must hold counts.")
    return X_ref


def _document_counts(X_ref, columns):
    """Boolean-document counts restricted to ``columns``.

    Returns
    -------
    n_docs : int
        All rows of ``X_ref``, empty ones included.
    doc_freq : ndarray of shape (len(columns),)
        Number of documents containing each word.
    co_doc_freq : sparse matrix of shape (len(columns), len(columns))
        Number of documents containing both words.
    """
    B = (X_ref[:, columns] > 0).astype(np.int64)
    co_doc_freq = sp.csr_matrix(B.T @ B)
    doc_freq = np.asarray(B.sum(axis=0)).ravel()
    return X_ref.shape[0], doc_freq, co_doc_freq


def _pair_npmi(n_both, n_i, n_j, n_docs, zero_cooccurrence, eps):
    """NPMI of word pairs from their document counts (element-wise).

    ``"epsilon"`` follows gensim's ``c_npmi`` term for term, so that it agrees
    to rounding; pairs with an unseen word give inf/NaN and must be masked by
    the caller. ``"zero"`` scores never-co-occurring pairs 0 (Lau et al.,
    Scholar).
    """
    p_ij = n_both / n_docs
    p_i_p_j = (n_i / n_docs) * (n_j / n_docs)
    with np.errstate(divide="ignore", invalid="ignore"):
        if zero_cooccurrence == "epsilon":
            return np.log((p_ij + eps) / p_i_p_j) / -np.log(p_ij + eps)
        npmi = np.log(p_ij / p_i_p_j) / -np.log(p_ij)
    npmi = np.where(n_both == 0, 0.0, npmi)
    # A pair present in every document is 0/0; 1 is the limit of NPMI for two
    # words that always occur together.
    return np.where(n_both == n_docs, 1.0, npmi)


def _masked_row_means(values, mask):
    """Row means of ``values`` over ``mask``; NaN for a row with nothing in it."""
    counts = mask.sum(axis=1)
    sums = np.where(mask, values, 0.0).sum(axis=1)
    means = np.full(values.shape[0], np.nan)
    np.divide(sums, counts, out=means, where=counts > 0)
    return means


def _warn_unseen_words(unseen):
    n_topics = int(unseen.any(axis=1).sum())
    warn(
        f"{int(unseen.sum())} top word(s) of {n_topics} topic(s) never occur in "
        "X_ref; they are dropped from their topics, as gensim does. Use "
        "zero_cooccurrence='zero' to score their pairs 0 instead.",
        UserWarning)


@validate_params(
    {
        "model_or_topic_word": ["array-like", HasMethods(["fit"])],
        "X_ref": ["array-like", "sparse matrix"],
        "top_n": [Interval(Integral, 2, None, closed="left")],
        "zero_cooccurrence": [StrOptions({"epsilon", "zero"})],
        "eps": [Interval(Real, 0, None, closed="neither")],
    },
    prefer_skip_nested_validation=True,
)
def npmi_coherence(
    model_or_topic_word, X_ref, top_n=10, *, zero_cooccurrence="epsilon", eps=1e-12
):
    r"""Normalised pointwise mutual information (NPMI) of each topic's top words.

    Word probabilities are document frequencies in a reference corpus: each
    document of ``X_ref`` counts once for every word it contains (boolean
    document counting, no sliding window).

    Parameters
    ----------
    model_or_topic_word : estimator, Pipeline or array-like of shape (n_topics, n_words)
        A fitted topic model with a ``components_`` attribute, a
        :class:`~sklearn.pipeline.Pipeline` ending in one, or a topic-word
        matrix. Only the ranking of each row matters, so raw parameters,
        logits and probabilities give the same result.
    X_ref : {array-like, sparse matrix} of shape (n_documents, n_words), or raw documents for a Pipeline
        Reference document-term counts over the model's vocabulary (same
        columns). Held-out documents are recommended (Hoyle et al., 2021).
        Every row counts as a document, empty rows included. When
        ``model_or_topic_word`` is a Pipeline with a vectorizer, ``X_ref`` may
        also be what the Pipeline takes (raw texts, or token lists for a
        vectorizer that takes them): its leading steps count them. Texts given
        with a bare model or a topic-word matrix are a ``ValueError``.
    top_n : int, default=10
        Number of top words per topic; all ``top_n * (top_n - 1) / 2``
        unordered pairs are scored.
    zero_cooccurrence : {"epsilon", "zero"}, default="epsilon"
        Convention for pairs that never co-occur and for words absent from
        ``X_ref``; see Notes.
    eps : float, default=1e-12
        Smoothing added to the joint probability in the ``"epsilon"``
        convention. Ignored with ``"zero"``.

    Returns
    -------
    result : NPMIResult
        Named tuple ``(mean, per_topic)``: the model score (mean over topics)
        and the per-topic scores (mean over each topic's pairs).

    Warns
    -----
    UserWarning
        In ``"epsilon"`` mode, when top words never occur in ``X_ref``.

    See Also
    --------
    topic_diversity : Fraction of unique words among the topics' top words.

    Notes
    -----
    With :math:`D` the number of reference documents, :math:`D(w)` the number
    containing :math:`w` and :math:`D(w_i, w_j)` the number containing both,
    :math:`p = D(\cdot) / D` and

    .. math::

        \mathrm{NPMI}(w_i, w_j) = \frac{\log \frac{p_{ij} + \epsilon}{p_i p_j}}
                                       {-\log (p_{ij} + \epsilon)}.

    ``"epsilon"`` is gensim's ``c_npmi`` convention: a pair that never
    co-occurs scores about -1, and a word absent from ``X_ref`` is dropped from
    its topic with a warning. It equals gensim's ``CoherenceModel(coherence=
    "c_npmi")`` with a window at least as long as the longest document.
    ``"zero"`` is the convention of Lau et al. (2014) and of Scholar as used
    by Hoyle et al. (2021): with :math:`\epsilon = 0`, a pair that never
    co-occurs (in particular one with an absent word) scores 0. It gives
    markedly higher values; use it to compare with AVITM or Scholar numbers,
    and always report which convention and which reference corpus were used.

    A topic left with fewer than two usable words scores NaN and is excluded
    from the mean. A pair present in every document scores 1 in ``"zero"``
    mode.

    References
    ----------
    .. [1] A. Hoyle et al., "Is Automated Topic Model Evaluation Broken? The
       Incoherence of Coherence", NeurIPS 2021.
    .. [2] J. H. Lau, D. Newman and T. Baldwin, "Machine Reading Tea Leaves:
       Automatically Evaluating Topic Coherence and Topic Model Quality",
       EACL 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.metrics import npmi_coherence
    >>> X_ref = np.array([[1, 2, 0, 0], [1, 1, 0, 0], [0, 0, 3, 1], [0, 1, 1, 1]])
    >>> topic_word = np.array([[0.5, 0.4, 0.05, 0.05], [0.05, 0.05, 0.4, 0.5]])
    >>> result = npmi_coherence(topic_word, X_ref, top_n=2)
    >>> np.round(result.per_topic, 3).tolist()
    [0.415, 1.0]
    >>> round(result.mean, 3)
    0.708
    """
    topic_word = check_topic_word(model_or_topic_word, name="model_or_topic_word")
    check_top_n(top_n, topic_word.shape[1])
    X_ref = _check_reference(_reference_counts(model_or_topic_word, X_ref), topic_word.shape[1])

    top = top_word_indices(topic_word, top_n)
    columns, local = np.unique(top, return_inverse=True)
    local = local.reshape(top.shape)
    n_docs, doc_freq, co_doc_freq = _document_counts(X_ref, columns)

    first, second = np.triu_indices(top_n, k=1)
    word_i, word_j = local[:, first], local[:, second]
    n_both = co_doc_freq[word_i.ravel(), word_j.ravel()]
    n_both = np.asarray(n_both).reshape(word_i.shape)
    scores = _pair_npmi(
        n_both, doc_freq[word_i], doc_freq[word_j], n_docs, zero_cooccurrence, eps
    )

    usable = np.ones(scores.shape, dtype=bool)
    if zero_cooccurrence == "epsilon":
        seen = doc_freq[local] > 0
        if not seen.all():
            _warn_unseen_words(~seen)
        usable = seen[:, first] & seen[:, second]

    per_topic = _masked_row_means(scores, usable)
    scored = ~np.isnan(per_topic)
    mean = float(per_topic[scored].mean()) if scored.any() else float("nan")
    return NPMIResult(mean=mean, per_topic=per_topic)
