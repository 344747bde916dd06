"""Looking at fitted topic models: displays, reports and exports.

* :class:`TopicWordsDisplay`: each topic's top words with their weights, as bar panels;
* :class:`PAMHierarchyDisplay`: a two-level PAM's DAG (PAMVI, MoLDA) with its words;
* :class:`TrainingCurveDisplay`: the training objective per token, with a held-out
  curve when there is one;
* :class:`AISConvergenceDisplay`, :class:`ComparisonDisplay`: AIS against its budget,
  and a ratio-AIS comparison document by document;
* :class:`CriteriaDisplay`: a search's criteria (held-out likelihood with its errors,
  coherence, diversity) against the searched parameter, one panel each;
* :func:`topic_report`: one row per topic (top words, weights, prevalence, NPMI,
  distinct share), as a pandas DataFrame (the ``report`` extra);
* :func:`to_pyldavis`: the keyword arguments of ``pyLDAvis.prepare``.

The displays follow scikit-learn's conventions (``from_estimator``, ``plot(ax=...)``,
``figure_`` and ``ax_``); matplotlib is imported only when a picture is drawn and is
not a dependency of sktopics (``pip install "sktopics[plot]"``).
"""

from ._curves import TrainingCurveDisplay
from ._evaluation import AISConvergenceDisplay, ComparisonDisplay
from ._pam import PAMHierarchyDisplay
from ._pyldavis import to_pyldavis
from ._report import topic_report
from ._selection import CriteriaDisplay
from ._topic_words import TopicWordsDisplay

__all__ = [
    "AISConvergenceDisplay",
    "ComparisonDisplay",
    "CriteriaDisplay",
    "PAMHierarchyDisplay",
    "TopicWordsDisplay",
    "TrainingCurveDisplay",
    "to_pyldavis",
    "topic_report",
]
