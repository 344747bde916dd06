"""Evaluation metrics for topic models: NPMI coherence and topic diversity."""

from ._coherence import NPMIResult, npmi_coherence
from ._diversity import topic_diversity

__all__ = ["NPMIResult", "npmi_coherence", "topic_diversity"]
