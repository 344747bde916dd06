"""What a pickled estimator records of the sktopics that wrote it."""


from .._version import __version__
from ._warnings import warn

__all__ = ["InconsistentVersionWarning", "check_pickle_version", "VERSION_KEY"]

#: The key of the writing version in a pickled estimator's state.
VERSION_KEY = "_sktopics_version"


class InconsistentVersionWarning(UserWarning):
    """An estimator is unpickled by another version of sktopics than the one that
    pickled it (as scikit-learn's own :class:`~sklearn.exceptions.InconsistentVersionWarning`).

    Fitted attributes and private state may differ between versions: refit the model,
    or load it with the version that wrote it.

    Attributes
    ----------
    estimator_name : str
    current_sktopics_version : str
    original_sktopics_version : str
    """

    def __init__(self, *, estimator_name, current_sktopics_version, original_sktopics_version):
        self.estimator_name = estimator_name
        self.current_sktopics_version = current_sktopics_version
        self.original_sktopics_version = original_sktopics_version
        super().__init__(str(self))

    def __str__(self):
        return (f"Trying to unpickle estimator {self.estimator_name} from sktopics version "
                f"{self.original_sktopics_version} when using version "
                f"{self.current_sktopics_version}. This might lead to breaking code or invalid "
                "results. Use at your own risk.")


def check_pickle_version(state, estimator_name):
    """Pop the writing version from an unpickled state; warn when it is not this one.

    A state without one was written before sktopics recorded its version.
    """
    original = state.pop(VERSION_KEY, "unknown")
    if original != __version__:
        warn(
            InconsistentVersionWarning(estimator_name=estimator_name,
                                       current_sktopics_version=__version__,
                                       original_sktopics_version=original))
