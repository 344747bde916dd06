"""Pictures of the held-out evaluations: AIS convergence, a two-model comparison."""

import numpy as np

from ._common import DisplayMixin

__all__ = ["AISConvergenceDisplay", "ComparisonDisplay"]


class AISConvergenceDisplay(DisplayMixin):
    """Held-out log-likelihood per token against the number of AIS temperatures.

    The log of an AIS estimate is a stochastic lower bound: the curve rises towards
    the truth as the budget grows, and it has converged where it stops rising.

    Parameters
    ----------
    temperatures : array-like of int
    estimates, stderrs : array-like of float
        Per-token estimates and their Monte Carlo standard errors.
    reference : float or None, default=None
        A reference level (e.g. a long left-to-right run), drawn as a line.
    reference_label : str, default="reference"
    n_chains : int or None, default=None
        Chains per document, for the legend.

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    """

    def __init__(self, temperatures, estimates, stderrs, reference=None,
                 reference_label="reference", n_chains=None):
        self.temperatures = np.asarray(temperatures)
        self.estimates = np.asarray(estimates, dtype=np.float64)
        self.stderrs = np.asarray(stderrs, dtype=np.float64)
        self.reference = reference
        self.reference_label = reference_label
        self.n_chains = n_chains

    @classmethod
    def from_estimator(cls, estimator, X, *, temperatures=(1, 3, 10, 30, 100, 300),
                       n_chains=8, reference=None, random_state=0, ax=None, **kwargs):
        """Run :func:`~sktopics.model_selection.ais_log_likelihood` at each budget and draw it.

        Parameters
        ----------
        estimator : fitted model or Pipeline
        X : {array-like, sparse matrix} or raw documents for a Pipeline
            Held-out documents.
        temperatures : sequence of int, default=(1, 3, 10, 30, 100, 300)
        n_chains : int, default=8
        reference : HeldOutLikelihood or None, default=None
            Drawn as a horizontal line (e.g. ``left_to_right_log_likelihood`` with
            many particles).
        random_state : int, default=0
        ax : matplotlib Axes or None, default=None
        **kwargs : dict
            Other keyword arguments of ``ais_log_likelihood``.

        Returns
        -------
        display : AISConvergenceDisplay
        """
        from ..model_selection import ais_log_likelihood

        runs = [ais_log_likelihood(estimator, X, n_temperatures=int(s), n_chains=n_chains,
                                   random_state=random_state, **kwargs) for s in temperatures]
        ref = None if reference is None else float(reference.per_token)
        label = "reference" if reference is None else f"reference ({reference.method})"
        display = cls(temperatures, [r.per_token for r in runs],
                      [r.per_token_stderr for r in runs], ref, label, n_chains)
        return display.plot(ax=ax)

    def plot(self, *, ax=None):
        """Draw the curve.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : AISConvergenceDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        ax = self._axes(ax, (6, 4))
        label = "AIS" if self.n_chains is None else f"AIS ({self.n_chains} chains)"
        ax.errorbar(self.temperatures, self.estimates, yerr=np.nan_to_num(self.stderrs),
                    marker="o", capsize=3, label=label)
        if self.reference is not None:
            ax.axhline(self.reference, color="k", ls="--", label=self.reference_label)
        ax.set_xscale("log")
        ax.set_xlabel("number of temperatures")
        ax.set_ylabel("held-out log-likelihood (nats per token)")
        ax.legend(fontsize=8)
        return self._drawn(ax)


class ComparisonDisplay(DisplayMixin):
    """A :class:`~sktopics.model_selection.ModelComparison`, document by document.

    Each point is a held-out document: its log-ratio per token
    ``(log p(w | A) - log p(w | B)) / N_d`` against its length, above zero where A is
    better; with ``direction="both"`` a vertical segment joins the forward and the
    reverse estimate of each document (their gap is the convergence check). The
    title gives the comparison's verdict.

    Parameters
    ----------
    comparison : ModelComparison

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : matplotlib Axes
    """

    def __init__(self, comparison):
        self.comparison = comparison

    @classmethod
    def from_comparison(cls, comparison, *, ax=None):
        """Draw a comparison returned by :func:`~sktopics.model_selection.ratio_ais`.

        Parameters
        ----------
        comparison : ModelComparison
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : ComparisonDisplay
        """
        return cls(comparison).plot(ax=ax)

    def plot(self, *, ax=None):
        """Draw the documents.

        Parameters
        ----------
        ax : matplotlib Axes or None, default=None

        Returns
        -------
        display : ComparisonDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        cmp = self.comparison
        ax = self._axes(ax, (6, 4))
        n = np.asarray(cmp.n_tokens, dtype=np.float64)
        keep = n > 0
        if cmp.forward is not None and cmp.reverse is not None:
            ax.vlines(n[keep], (cmp.forward / np.maximum(n, 1))[keep],
                      (cmp.reverse / np.maximum(n, 1))[keep], color="grey", alpha=0.5,
                      label="forward to reverse")
        better = cmp.per_document > 0
        for mask, color, label in ((better, "C0", "A better"), (~better, "C3", "B better")):
            ax.scatter(n[keep & mask], (cmp.per_document / np.maximum(n, 1))[keep & mask],
                       s=10, color=color, label=f"{label} ({int(np.sum(keep & mask))})")
        ax.axhline(0.0, color="k", linewidth=0.8)
        if keep.any() and n[keep].max() > 20 * n[keep].min():  # lengths over decades
            ax.set_xscale("log")
        ax.set_xlabel("document length (tokens)")
        ax.set_ylabel("log p(w | A) - log p(w | B), per token")
        verdict = {"A": "A is better", "B": "B is better", "undecided": "undecided"}[cmp.verdict]
        ax.set_title(f"{verdict}: perplexity ratio A/B {cmp.corpus_perplexity_ratio:.4f}",
                     fontsize=10)
        ax.legend(fontsize=8)
        return self._drawn(ax)
