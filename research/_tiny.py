"""The tiny mode of every study here, so that a test can run each one at the current code.

``SKTOPICS_RESEARCH_TINY=1`` in the environment: each study takes the smallest slice of
its corpus and one or two iterations, and writes to ``SKTOPICS_RESEARCH_OUT`` (default:
a new temporary folder) instead of ``research/results``. Its numbers mean nothing; the
run only shows that the study still works.
"""

import os
import tempfile
from pathlib import Path

TINY = os.environ.get("SKTOPICS_RESEARCH_TINY") == "1"


def results_dir():
    """Where a study writes: ``research/results``, or the tiny run's folder."""
    if not TINY:
        return Path(__file__).resolve().parent / "results"
    out = os.environ.get("SKTOPICS_RESEARCH_OUT")
    path = Path(out) if out else Path(tempfile.mkdtemp(prefix="sktopics-research-"))
    path.mkdir(parents=True, exist_ok=True)
    return path


def rows(X, n):
    """``X``'s first ``n`` rows in a tiny run, ``X`` itself otherwise."""
    return X[:n] if TINY else X
