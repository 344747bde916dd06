"""Upgrades of files written in earlier format versions.

When the format changes (a fitted attribute renamed, a sampler's saved state laid out
differently), :data:`~._format.FORMAT_VERSION` goes up by one and a function is
registered here under the version it upgrades *from*: ``MIGRATIONS[n](tree, arrays)``
takes the decoded JSON tree and the arrays of a version-``n`` file and returns those of
a version ``n + 1`` file. Loading applies them in turn, so that a file of any earlier
version reaches the current one. There is none yet: version 1 is the first.

Each migration is a pure function of data (JSON and numpy arrays) and is tested with a
file of its version kept under ``tests/data/saved_models/``.
"""

from ._errors import ModelFileError
from ._format import FORMAT_VERSION

__all__ = ["MIGRATIONS", "upgrade"]

#: {format version: function(tree, arrays) -> (tree, arrays) upgrading it to the next}
MIGRATIONS = {}


def upgrade(version, tree, arrays, current=None):
    """The tree and arrays of a file of format ``version`` upgraded to ``current``
    (default :data:`~._format.FORMAT_VERSION`)."""
    current = FORMAT_VERSION if current is None else current
    if version > current:
        raise ModelFileError(
            f"The file has format version {version}, written by a newer sktopics; this one "
            f"reads format versions up to {current}. Upgrade sktopics to load it."
        )
    while version < current:
        step = MIGRATIONS.get(version)
        if step is None:
            raise ModelFileError(
                f"The file has format version {version}, which this sktopics cannot read (it "
                f"reads format version {current} and upgrades "
                f"{', '.join(map(str, sorted(MIGRATIONS))) or 'no earlier version'})."
            )
        tree, arrays = step(tree, arrays)
        version += 1
    return tree, arrays
