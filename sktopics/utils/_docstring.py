"""Inject shared parameter descriptions into numpydoc docstrings."""

__all__ = ["N_JOBS", "fill_doc"]

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
    fragment is indented to match.
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
        obj.__doc__ = doc
        return obj

    return decorate
