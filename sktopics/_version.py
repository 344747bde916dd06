"""The version of sktopics (one place: the package, pickles and the build read it)."""

__version__ = "0.1.0"
