"""Inject shared parameter descriptions into numpydoc docstrings."""

__all__ = ["fill_doc"]


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
