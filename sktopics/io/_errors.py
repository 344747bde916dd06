"""The error of a file that sktopics cannot load."""

__all__ = ["ModelFileError"]


class ModelFileError(ValueError):
    """A file that is not a model sktopics can load.

    Raised by :func:`sktopics.load` for a file that is truncated, is not a safetensors
    file, is a safetensors file without sktopics' metadata, has an unknown format
    version, names a class outside the fixed registry of loadable classes, or holds
    values that contradict each other or are out of range (an array whose shape does
    not match the model's, a network state that does not fit the network rebuilt from
    the parameters, topics outside ``0 .. K-1``). The message says which, and where in
    the file; an error that no check foresaw is chained as its cause.
    """
