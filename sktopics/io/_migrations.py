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


def upgrade(version, tree, arrays):
    """The tree and arrays of a file of format ``version`` (at most
    :data:`~._format.FORMAT_VERSION`: :func:`~._format.format_version` refuses newer
    ones) upgraded to the current version."""
    current = FORMAT_VERSION
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
