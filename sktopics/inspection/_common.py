"""What the inspection tools share: the Display mixin, matplotlib, token counts."""

import numpy as np

__all__ = ["DisplayMixin", "as_dense_rowsums", "check_matplotlib"]


def check_matplotlib(caller):
    """``matplotlib.pyplot``, or an ImportError that says how to get it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:  # pragma: no cover - matplotlib is in the test extra
        raise ImportError(
            f"{caller} needs matplotlib, which sktopics does not install: "
            'pip install "sktopics[plot]" (or matplotlib).'
        ) from exc
    return plt


class DisplayMixin:
    """Where a Display draws, and what it records once drawn (``figure_``, ``ax_``).

    A Display's ``plot(ax=...)`` starts with :meth:`_axes` and ends with
    ``return self._drawn(ax)``; its ``from_estimator`` builds the Display and
    returns ``display.plot(ax=ax)``.
    """

    def _axes(self, ax, figsize):
        """``ax``, or the Axes of a new figure of ``figsize`` (matplotlib checked)."""
        plt = check_matplotlib(type(self).__name__)
        if ax is None:
            _, ax = plt.subplots(figsize=figsize)
        return ax

    def _drawn(self, ax, figure=None):
        """Lay out ``figure`` (default: ``ax``'s), record ``figure_`` and ``ax_``; ``self``."""
        figure = ax.figure if figure is None else figure
        figure.tight_layout()
        self.figure_, self.ax_ = figure, ax
        return self


def as_dense_rowsums(X, axis):
    """Sums of ``X`` along ``axis``, as a flat float64 array."""
    return np.asarray(X.sum(axis=axis)).ravel().astype(np.float64)
