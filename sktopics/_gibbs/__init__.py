"""Collapsed-Gibbs LDA (:class:`~sktopics.LDAGibbs`) with torch sampling kernels."""

from ._lda_gibbs import LDAGibbs

__all__ = ["LDAGibbs"]
