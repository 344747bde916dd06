"""The criteria of a search (likelihood, coherence, diversity...) against its parameter."""


import numbers
import warnings

import numpy as np

from ..model_selection import RankingWarning, check_ranking
from ..utils._cv_results import LIKELIHOOD_METRICS, fold_scores, rank_order
from ._common import DisplayMixin

__all__ = ["CriteriaDisplay"]

#: Axis labels of the metrics the sktopics scorers name.
_LABELS = {
    "score": "held-out log-likelihood\n(nats per token)",
    "coherence": "NPMI coherence\n(held-out fold)",
    "diversity": "topic diversity\n(distinct top words)",
}

#: What each criterion rewards, for the panels' titles.
_TITLES = {
    "score": "held-out likelihood: rewards predicting unseen words",
    "coherence": "coherence: rewards top words that co-occur in held-out documents",
    "diversity": "diversity: rewards topics that do not share their top words",
}


def _plain(value):
    """A NumPy scalar as the Python number it holds; other values as they are."""
    return value.item() if isinstance(value, np.generic) else value


class CriteriaDisplay(DisplayMixin):
    """A search's criteria against one parameter, one panel each, with their errors.

    Each panel draws one metric's mean over the folds against the parameter's
    values (e.g. the number of topics) and marks its best value. The error bars are
    what decides a ranking: on each candidate, ``n_sigma`` standard errors of its
    difference from the best candidate's mean, by the rule of
    :func:`~sktopics.model_selection.check_ranking` (its ``gap_errors``; the
    likelihood's :class:`~sktopics.model_selection.RankingWarning` is issued by that
    rule): the standard deviation across the folds of the per-fold differences over
    ``sqrt(k)`` or, for a likelihood scored with ``return_stderr=True`` (metrics
    ``"score"``, ``"stderr"``, ``"bias"``), the Monte Carlo error of the difference
    when that is larger. A bar that reaches the dashed line at the best mean marks
    a candidate the search cannot tell from the best. The legend says which error
    decided; when the folds' did, it gives the largest Monte Carlo error too, which
    is then not drawn (it is the smaller). The best candidate has no bar: its
    difference from itself is 0. A likelihood's budget bias (how much more its score
    may rise with a larger budget) is a thin bar above each point. The criteria
    need not agree: held-out likelihood rewards models that predict unseen words,
    coherence topics whose top words co-occur, diversity topics that do not share
    their top words. The picture shows where they part.

    Parameters
    ----------
    values : array-like of shape (n_candidates,)
        The parameter's values, in increasing order.
    means : dict
        ``metric -> array (n_candidates,)`` of mean scores (greater is better).
    errors : dict
        ``metric -> array (n_candidates,)`` of the standard errors of each
        candidate's difference from the best (0 for the best, NaN: unknown).
    biases : dict
        ``metric -> array (n_candidates,)`` of budget biases (may be empty).
    param : str
        The parameter's name, for the x-axis.
    error_kinds : dict
        ``metric -> list`` of each candidate's ``"cross-validation"`` or ``"Monte
        Carlo"`` (which error is in ``errors``), or None, for the legend.
    mc_errors : dict or None, default=None
        ``metric -> array (n_candidates,)`` of the Monte Carlo standard errors of
        the differences, for the legend; ``None``: none.
    n_sigma : float, default=2.0
        The bars' half-length, in standard errors (``check_ranking``'s ``n_sigma``).
    best : dict or None, default=None
        ``metric -> index into values`` of the best candidate, the one ``errors``
        are measured from; ``None``, or a metric left out: the first of the highest
        means in ``values``' order. :meth:`from_cv_results` passes
        ``check_ranking``'s (on ties, the first in the search's order).

    Attributes
    ----------
    figure_ : matplotlib Figure
    ax_ : ndarray of matplotlib Axes
        One panel per metric, top to bottom.
    best_ : dict
        ``metric -> value of the parameter with the best mean`` (the starred
        candidate, the one the bars are measured from).

    Examples
    --------
    >>> import numpy as np
    >>> from sktopics.inspection import CriteriaDisplay
    >>> cv_results = {"params": [{"n_components": k} for k in (5, 10, 20)],
    ...               "param_n_components": np.array([5, 10, 20]),
    ...               "mean_test_score": np.array([-7.3, -7.2, -7.15]),
    ...               "split0_test_score": np.array([-7.3, -7.2, -7.15]),
    ...               "mean_test_coherence": np.array([0.12, 0.10, 0.07]),
    ...               "split0_test_coherence": np.array([0.12, 0.10, 0.07])}
    >>> display = CriteriaDisplay.from_cv_results(cv_results)  # doctest: +SKIP
    >>> display.best_  # doctest: +SKIP
    {'score': 20, 'coherence': 5}
    """

    def __init__(self, values, means, errors, biases, param, error_kinds, mc_errors=None,
                 n_sigma=2.0, best=None):
        self.values = np.asarray(values)
        self.means = means
        self.errors = errors
        self.biases = biases
        self.param = param
        self.error_kinds = error_kinds
        self.mc_errors = {} if mc_errors is None else mc_errors
        self.n_sigma = n_sigma
        self.best = best
        self.best_ = {m: _plain(self.values[i]) for m, i in self._best_indices().items()}

    @classmethod
    def from_cv_results(cls, cv_results, *, param=None, metrics=None, n_sigma=2.0, ax=None):
        """Read a search's ``cv_results_`` and draw its criteria.

        Parameters
        ----------
        cv_results : dict
            ``search.cv_results_`` of a search over one parameter (other
            parameters fixed).
        param : str or None, default=None
            The searched parameter, as in ``params`` (e.g. ``"n_components"`` or
            ``"ldagibbs__n_components"``); a name that ends a key also matches.
            ``None``: the one parameter that varies.
        metrics : sequence of str or None, default=None
            The metrics to draw, in order; ``None``: every ``mean_test_*`` except
            the likelihood's ``stderr`` and ``bias``.
        n_sigma : float, default=2.0
            The error bars' half-length in standard errors, as ``n_sigma`` of
            :func:`~sktopics.model_selection.check_ranking`.
        ax : sequence of matplotlib Axes or None, default=None
            One per metric; ``None``: a new figure.

        Returns
        -------
        display : CriteriaDisplay
        """
        params = cv_results["params"]
        names = sorted({k for p in params for k in p})
        varying = [k for k in names if len({repr(p.get(k)) for p in params}) > 1]
        if param is None:
            if len(varying) != 1:
                raise ValueError(f"Pass param=: the parameters that vary are {varying}.")
            key = varying[0]
        else:
            match = [k for k in names if k == param or k.endswith("__" + param)]
            if len(match) != 1:
                raise ValueError(f"param={param!r} matches {match or 'none'} of the searched "
                                 f"parameters {names}.")
            key = match[0]
        others = [k for k in varying if k != key]
        if others:
            raise ValueError(f"{others} vary too: draw a search over {key!r} alone (or pass "
                             "the rows of one setting of the others).")
        if metrics is None:
            metrics = [k[len("mean_test_"):] for k in cv_results if k.startswith("mean_test_")]
            metrics = [m for m in metrics if m == "score" or m not in LIKELIHOOD_METRICS]
        values = np.empty(len(params), dtype=object)
        values[:] = [p[key] for p in params]
        numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool) for v in values)
        # numbers in increasing order; other values (strings, None...) as searched
        order = (np.argsort(values.astype(float), kind="stable") if numeric
                 else np.arange(len(values)))
        position = np.argsort(order)  # where each candidate is drawn
        means, errors, biases, kinds, mc_errors, best = {}, {}, {}, {}, {}, {}
        for m in metrics:
            means[m] = np.asarray(cv_results[f"mean_test_{m}"], dtype=float)[order]
            error, kind, mc_error, top = _gap_errors(cv_results, m, len(values))
            errors[m], kinds[m], mc_errors[m] = error[order], [kind[i] for i in order], \
                mc_error[order]
            best[m] = int(position[top])
            if m == "score" and "mean_test_bias" in cv_results:
                biases[m] = np.asarray(cv_results["mean_test_bias"], dtype=float)[order]
        return cls(values[order], means, errors, biases, key, kinds, mc_errors,
                   n_sigma, best).plot(ax=ax)

    @classmethod
    def from_estimator(cls, search, *, param=None, metrics=None, n_sigma=2.0, ax=None):
        """Draw the criteria of a fitted search (``GridSearchCV`` and the like).

        Parameters
        ----------
        search : fitted search with ``cv_results_``
        param, metrics, n_sigma, ax :
            As in :meth:`from_cv_results`.

        Returns
        -------
        display : CriteriaDisplay
        """
        if not hasattr(search, "cv_results_"):
            raise TypeError(f"{type(search).__name__} has no cv_results_: pass a fitted "
                            "GridSearchCV (or another search).")
        return cls.from_cv_results(search.cv_results_, param=param, metrics=metrics,
                                   n_sigma=n_sigma, ax=ax)

    def plot(self, *, ax=None):
        """Draw the panels.

        Parameters
        ----------
        ax : sequence of matplotlib Axes or None, default=None
            One per metric.

        Returns
        -------
        display : CriteriaDisplay
            ``self``, with ``figure_`` and ``ax_`` set.
        """
        metrics = list(self.means)
        if ax is None:
            plt = self._axes_module()
            figure, axes = plt.subplots(len(metrics), 1, sharex=True,
                                        figsize=(9.5, 1.0 + 2.1 * len(metrics)), squeeze=False)
            axes = axes[:, 0]
        else:
            axes = np.atleast_1d(np.asarray(ax, dtype=object))
            if len(axes) != len(metrics):
                raise ValueError(f"{len(metrics)} metrics need {len(metrics)} Axes; got "
                                 f"{len(axes)}.")
            figure = axes[0].figure
        numeric = all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                      for v in self.values)
        x = (np.asarray(self.values, dtype=float) if numeric
             else np.arange(len(self.values), dtype=float))
        best_indices = self._best_indices()
        for panel, m in zip(axes, metrics):
            mean = self.means[m]
            best = best_indices[m]
            panel.plot(x, mean, marker="o", color="C0", label="mean over the folds")
            bar = self.n_sigma * np.asarray(self.errors[m], dtype=float)
            shown = np.isfinite(bar) & (np.arange(len(x)) != best)
            if shown.any():
                panel.errorbar(x[shown], mean[shown], yerr=bar[shown], fmt="none",
                               ecolor="C0", capsize=4,
                               label=self._bar_label(m, list(np.flatnonzero(shown))))
                panel.axhline(mean[best], color="C1", linestyle="--", linewidth=0.8,
                              label="best mean: a bar that reaches it is a tie")
            if m in self.biases:  # beside the error bars, not over them
                from matplotlib.transforms import offset_copy

                bias = np.nan_to_num(self.biases[m])
                panel.vlines(x, mean, mean + bias, color="C3", linewidth=3, alpha=0.6,
                             label="budget bias (may still rise)",
                             transform=offset_copy(panel.transData, figure, x=5,
                                                   units="points"))
                panel.update_datalim(np.column_stack([x, mean + bias]))  # not autoscaled
                panel.autoscale_view()
            panel.plot([x[best]], [mean[best]], marker="*", markersize=14, color="C1",
                       linestyle="none", label=f"best: {self.param.split('__')[-1]} = "
                                               f"{self.values[best]}")
            panel.set_ylabel(_LABELS.get(m, m), fontsize=9)
            if m in _TITLES:
                panel.set_title(_TITLES[m], fontsize=9, loc="left")
            panel.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
        if not numeric:
            axes[-1].set_xticks(x, [str(v) for v in self.values])
        elif x.min() > 0 and x.max() / x.min() >= 8:
            axes[-1].set_xscale("log", base=2)
            axes[-1].set_xticks(x, [str(v) for v in self.values])
            axes[-1].minorticks_off()
        axes[-1].set_xlabel(self.param.split("__")[-1])
        return self._drawn(axes, figure)

    def _best_indices(self):
        """``metric -> index into values`` of the starred candidate (see ``best``)."""
        given = self.best or {}
        return {m: int(given[m]) if m in given else int(rank_order(v)[0])
                for m, v in self.means.items()}

    def _bar_label(self, metric, drawn):
        """The legend of ``metric``'s error bars: how long, and which error decided."""
        kinds = {self.error_kinds[metric][i] for i in drawn}
        if kinds == {"cross-validation"}:
            which = "across folds"
        elif kinds == {"Monte Carlo"}:
            which = "Monte Carlo"
        else:
            which = "the larger of across folds and Monte Carlo"
        label = f"\u00b1{self.n_sigma:g} s.e. of the gap to the best, {which}"
        mc = np.asarray(self.mc_errors.get(metric, np.full(len(self.values), np.nan)),
                        dtype=float)[drawn]
        note = ("; Monte Carlo s.e. at most "
                f"{np.nanmax(mc):.2g}" if "Monte Carlo" not in kinds and np.isfinite(mc).any()
                else "")
        rule = "RankingWarning" if metric == "score" else "check_ranking"
        return f"{label}\n({rule}'s rule{note})"

    def _axes_module(self):
        from ._common import check_matplotlib

        return check_matplotlib(type(self).__name__)


def _gap_errors(cv_results, metric, n):
    """The standard errors of each candidate's difference from the best in ``metric``,
    their kinds, the Monte Carlo ones and the best candidate's index, as
    :func:`check_ranking` computes them (NaN errors where there is neither a second
    fold nor a Monte Carlo error; the best then by the same rule)."""
    likelihood = metric == "score"
    stderr = "stderr" if likelihood and fold_scores(cv_results, "stderr") is not None else None
    if stderr is None and fold_scores(cv_results, metric) is None:
        best = int(rank_order(cv_results[f"mean_test_{metric}"])[0])
        return np.full(n, np.nan), [None] * n, np.full(n, np.nan), best
    with warnings.catch_warnings():  # drawn here; check_ranking and refit_best say it
        warnings.simplefilter("ignore", RankingWarning)
        report = check_ranking(cv_results, score=metric, stderr=stderr,
                               bias="bias" if likelihood else None)
    return (report["gap_errors"], report["gap_error_kinds"], report["gap_mc_errors"],
            report["best"])
