"""Training curves, per token, with a held-out curve when there is one."""

import numpy as np

from ..utils._pipeline import final_estimator
from ._common import DisplayMixin

__all__ = ["TrainingCurveDisplay"]


class TrainingCurveDisplay(DisplayMixin):
    """A model's training objective per token against its iterations.

    LDAGibbs: the joint log-likelihood ``log p(w, z | alpha, beta)`` per token at
    every evaluated sweep, under the priors of that sweep. With prior learning
    (``optimize_interval`` set) a dashed line marks ``burn_in``, after which the
    priors are re-estimated every ``optimize_interval`` sweeps: the curve then
    follows a target that moves. It jumps at the first update (the new priors fit
    the current counts better), then falls below where a run with fixed priors
    would be for a few tens of sweeps, as the chain moves to the states typical of
    the new priors, and climbs again; that dip is the priors moving, not a fault of
    the sampler. The neural models: the ELBO per token of every epoch (minus the
    per-document training loss over the mean training document length), and the
    validation ELBO when ``validation_fraction`` was set. Higher is better for
    both. A held-out curve (e.g. :func:`~sktopics.model_selection.iteration_ais`
    over ``LDAGibbs.snapshots_``) can be drawn alongside.

    Parameters
    ----------
    curves : dict
        ``label -> (x, y)`` arrays.
    xlabel, ylabel : str
    burn_in : int or None, default=None
        The sweep after which the priors are learned (a vertical line); ``None``:
        no line.
    optimize_interval : int or None, default=None
        Sweeps between prior updates after ``burn_in``, for the line's label.

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    """

    def __init__(self, curves, xlabel, ylabel, *, burn_in=None, optimize_interval=None):
        self.curves = curves
        self.xlabel = xlabel
        self.ylabel = ylabel
        self.burn_in = burn_in
        self.optimize_interval = optimize_interval

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
        model = final_estimator(estimator)
        curves, priors = {}, {}
        if hasattr(model, "log_likelihood_trace_"):
            # A streamed model's entries cover the shard of their own call.
            tokens = getattr(model, "log_likelihood_n_tokens_", model.n_train_tokens_)
            sweeps = np.asarray(model.log_likelihood_sweeps_)
            curves["training: log p(w, z) per token"] = (
                sweeps, model.log_likelihood_trace_ / tokens)
            xlabel, ylabel = "sweep", "nats per token"
            interval = getattr(model, "optimize_interval", None)
            # the priors were learned if the chain ran past burn_in
            if interval is not None and len(sweeps) and sweeps.max() > model.burn_in:
                priors = {"burn_in": model.burn_in, "optimize_interval": interval}
        elif hasattr(model, "history_"):
            history = model.history_
            epochs = np.asarray(history[:, "epoch"])
            curves["training: ELBO per token"] = (epochs, _elbo_per_token(model, "train"))
            validation = _elbo_per_token(model, "valid")
            if not np.isnan(validation).all():
                curves["validation: ELBO per token"] = (epochs, validation)
            xlabel, ylabel = "epoch", "nats per token"
        else:
            raise ValueError(f"{type(model).__name__} records no training curve.")
        display = cls(curves, xlabel, ylabel, **priors)
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
        ax = self._axes(ax, (6, 4))
        for label, (x, y) in self.curves.items():
            ax.plot(x, y, marker=".", label=label)
        if self.held_out is not None:
            x, y, err = self.held_out
            ax.errorbar(x, y, yerr=np.nan_to_num(err), marker="o", capsize=3,
                        label="held-out: log p(w) per token")
        if self.burn_in is not None:
            every = (f", then every {self.optimize_interval} sweeps"
                     if self.optimize_interval is not None else "")
            ax.axvline(self.burn_in, color="grey", linestyle="--", linewidth=1,
                       label=f"burn_in = {self.burn_in}: prior learning starts{every}")
        ax.set_xlabel(self.xlabel)
        ax.set_ylabel(self.ylabel)
        ax.legend(fontsize=8)
        return self._drawn(ax)


def _elbo_per_token(model, prefix):
    """Each epoch's ELBO per token: minus its per-document loss over the mean length of
    the documents it was measured on (recorded per epoch; streamed calls differ). NaN
    where an epoch has no such loss."""
    fallback = model.n_train_tokens_ / max(model.n_train_documents_, 1)
    values = []
    for row in model.history_:
        loss = row.get(f"{prefix}_loss")
        length = row.get(f"{prefix}_tokens_per_document", fallback)
        values.append(np.nan if loss is None else -loss / length)
    return np.asarray(values, dtype=np.float64)
