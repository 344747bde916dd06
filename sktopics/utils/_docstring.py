"""Inject shared parameter descriptions into numpydoc docstrings."""

__all__ = ["N_JOBS", "fill_doc", "replace_entries"]

#: The ``n_jobs`` parameter of every estimator.
N_JOBS = """
n_jobs : int or None, default=None
    Torch threads used inside ``fit``, ``partial_fit``, ``transform`` and ``score``;
    the caller's setting is restored afterwards. ``None``: the caller's torch
    setting, capped at the available cores minus one (a core is left to the rest
    of the machine; see :ref:`threads`), and 1 in a worker thread; ``-1``: every
    core; ``k``: ``k`` threads.
"""


def fill_doc(**fragments):
    """Class or function decorator replacing ``{name}`` placeholders in ``__doc__``.

    Placeholders stand on their own line at the docstring's indentation; the
    fragment is indented to match. A fragment whose placeholder is not in the
    docstring raises a ``ValueError`` when the decorator runs (at import).
    """

    def decorate(obj):
        doc = obj.__doc__
        for name, text in fragments.items():
            placeholder = "{" + name + "}"
            for line in doc.splitlines():
                if line.strip() == placeholder:
                    indent = line[: len(line) - len(line.lstrip())]
                    block = "\n".join(
                        (indent + row) if row.strip() else "" for row in text.strip("\n").splitlines()
                    )
                    doc = doc.replace(line, block)
                    break
            else:
                raise ValueError(
                    f"The docstring of {obj.__qualname__} has no {placeholder} line to fill."
                )
        obj.__doc__ = doc
        return obj

    return decorate


def replace_entries(block, **entries):
    """``block`` with the numpydoc entries of the names given replaced, in place.

    Parameters
    ----------
    block : str
        Flush-left numpydoc entries (``name : type`` lines, each followed by its
        indented description).
    **entries : str
        ``name=text``: the entry of ``name`` is replaced by ``text``, flush-left
        numpydoc too (its own ``name : type`` line included; several entries to
        insert more after it).

    Returns
    -------
    block : str

    Raises
    ------
    ValueError
        When ``block`` does not hold exactly one entry for a name, so that a
        renamed parameter cannot leave a stale description behind.
    """
    lines = block.split("\n")
    for name, text in entries.items():
        starts = [i for i, line in enumerate(lines) if line.split(" : ")[0] == name]
        if len(starts) != 1:
            raise ValueError(f"Expected one entry for {name!r} in the block; found {len(starts)}.")
        stop = starts[0] + 1
        while stop < len(lines) and lines[stop].startswith(" "):
            stop += 1
        lines[starts[0]:stop] = text.strip("\n").split("\n")
    return "\n".join(lines)
