"""Training curves, per token, with a held-out curve when there is one."""

import numpy as np

from ._common import axes_for, finished

__all__ = ["TrainingCurveDisplay"]


class TrainingCurveDisplay:
    """A model's training objective per token against its iterations.

    LDAGibbs: the joint log-likelihood ``log p(w, z)`` per token at every evaluated
    sweep. The neural models: the ELBO per token of every epoch (minus the
    per-document training loss over the mean training document length), and the
    validation ELBO when ``validation_fraction`` was set. Higher is better for
    both. A held-out curve (e.g. :func:`~sktopics.model_selection.iteration_ais`
    over ``LDAGibbs.snapshots_``) can be drawn alongside.

    Parameters
    ----------
    curves : dict
        ``label -> (x, y)`` arrays.
    xlabel, ylabel : str

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    """

    def __init__(self, curves, xlabel, ylabel):
        self.curves = curves
        self.xlabel = xlabel
        self.ylabel = ylabel

    @classmethod
    def from_estimator(cls, estimator, *, held_out=None, held_out_at=None, ax=None):
        """Draw the training curve of a fitted model.

        Parameters
        ----------
        estimator : fitted sktopics estimator or Pipeline ending in one
        held_out : list of HeldOutLikelihood or None, default=None
            Held-out estimates along training (``iteration_ais(model, X_test)``),
            drawn with their standard errors.
        held_out_at : array-like or None, default=None
            The iterations of ``held_out``; ``None``: the sweeps of
            ``snapshots_`` (LDAGibbs).
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : TrainingCurveDisplay
        """
        model = estimator[-1] if hasattr(estimator, "steps") else estimator
        curves = {}
        if hasattr(model, "log_likelihood_trace_"):
            curves["training: log p(w, z) per token"] = (
                model.log_likelihood_sweeps_, model.log_likelihood_trace_ / model.n_train_tokens_)
            xlabel, ylabel = "sweep", "nats per token"
        elif hasattr(model, "history_"):
            history = model.history_
            length = model.n_train_tokens_ / max(model.n_train_documents_, 1)
            epochs = np.asarray(history[:, "epoch"])
            curves["training: ELBO per token"] = (epochs,
                                                  -np.asarray(history[:, "train_loss"]) / length)
            if "valid_loss" in history[-1]:
                curves["validation: ELBO per token"] = (
                    epochs, -np.asarray(history[:, "valid_loss"]) / length)
            xlabel, ylabel = "epoch", "nats per token"
        else:
            raise ValueError(f"{type(model).__name__} records no training curve.")
        display = cls(curves, xlabel, ylabel)
        if held_out is not None:
            at = held_out_at
            if at is None:
                at = [snapshot.sweep for snapshot in getattr(model, "snapshots_", [])]
            if len(at) != len(held_out):
                raise ValueError(f"{len(held_out)} held-out results for {len(at)} iterations: "
                                 "pass held_out_at.")
            display.held_out = (np.asarray(at), np.array([r.per_token for r in held_out]),
                                np.array([r.stderr / max(float(np.sum(r.n_tokens)), 1.0)
                                          for r in held_out]))
        return display.plot(ax=ax)

    held_out = None

    def plot(self, *, ax=None):
        """Draw the curves.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : TrainingCurveDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        ax = axes_for("TrainingCurveDisplay", ax, (6, 4))
        for label, (x, y) in self.curves.items():
            ax.plot(x, y, marker=".", label=label)
        if self.held_out is not None:
            x, y, err = self.held_out
            ax.errorbar(x, y, yerr=np.nan_to_num(err), marker="o", capsize=3,
                        label="held-out: log p(w) per token")
        ax.set_xlabel(self.xlabel)
        ax.set_ylabel(self.ylabel)
        ax.legend(fontsize=8)
        return finished(self, ax)
