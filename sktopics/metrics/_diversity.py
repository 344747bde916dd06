"""Topic diversity: how many distinct words the topics' top words use."""

from numbers import Integral

import numpy as np

from ..utils._sklearn_compat import HasMethods, Interval, validate_params
from ..utils._validation import check_topic_word
from ._coherence import check_top_n, top_word_indices

__all__ = ["topic_diversity"]


@validate_params(
    {
        "model_or_topic_word": ["array-like", HasMethods(["fit"])],
        "top_n": [Interval(Integral, 1, None, closed="left")],
    },
    prefer_skip_nested_validation=True,
)
def topic_diversity(model_or_topic_word, top_n=25):
    """Fraction of unique words among all topics' top-``top_n`` words.

    Parameters
    ----------
    model_or_topic_word : estimator, Pipeline or array-like of shape (n_topics, n_words)
        A fitted topic model with a ``components_`` attribute, a
        :class:`~sklearn.pipeline.Pipeline` ending in one, or a topic-word
        matrix. Only the ranking of each row matters.
    top_n : int, default=25
        Number of top words per topic. Ties go to the lower column index.

    Returns
    -------
    diversity : float
        Between ``1 / n_topics`` (every topic has the same top words) and 1
        (no word is shared between topics).

    See Also
    --------
    npmi_coherence : NPMI coherence of each topic's top words.

    Notes
    -----
    Dieng et al. (2020) define topic diversity (TD) with ``top_n=25``; many
    papers use 10. The value depends strongly on ``top_n``, so always report it
    next to the score.

    References
    ----------
    .. [1] A. B. Dieng, F. J. R. Ruiz and D. M. Blei, "Topic Modeling in
       Embedding Spaces", TACL 8, 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.metrics import topic_diversity
    >>> topic_word = np.array([[0.4, 0.3, 0.2, 0.1, 0.0],
    ...                        [0.0, 0.1, 0.2, 0.3, 0.4]])
    >>> topic_diversity(topic_word, top_n=2)
    1.0
    >>> topic_diversity(topic_word, top_n=3)
    0.8333333333333334
    """
    topic_word = check_topic_word(model_or_topic_word, name="model_or_topic_word")
    check_top_n(top_n, topic_word.shape[1])
    top = top_word_indices(topic_word, top_n)
    return np.unique(top).size / top.size
