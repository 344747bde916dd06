"""Result objects of the held-out likelihood estimators."""

from dataclasses import dataclass, field
from typing import ClassVar, NamedTuple, Optional

import numpy as np

__all__ = ["HeldOutLikelihood", "ModelComparison", "PerplexityBracket"]


def _sign_test_pvalue(values):
    """Two-sided sign test of median(values) = 0 (zeros dropped)."""
    from scipy.stats import binomtest

    values = np.asarray(values)
    pos, neg = int((values > 0).sum()), int((values < 0).sum())
    if pos + neg == 0:
        return 1.0
    return float(binomtest(pos, pos + neg, 0.5).pvalue)


@dataclass
class _PerDocumentResult:
    """The fields and sums a held-out likelihood and a model comparison share."""

    #: The fields with one entry per document (concatenated over data-parallel ranks).
    _PER_DOCUMENT: ClassVar[tuple] = ("per_document", "per_document_stderr", "n_tokens",
                                     "document_keys")

    per_document: np.ndarray
    per_document_stderr: np.ndarray
    n_tokens: np.ndarray
    method: str
    settings: dict = field(default_factory=dict)
    n_token_updates: int = 0
    min_ess: float = float("nan")
    document_keys: Optional[np.ndarray] = field(default=None, repr=False)

    @property
    def total(self):
        """Sum over documents of ``per_document``."""
        return float(np.sum(self.per_document))

    @property
    def per_token(self):
        """``total / sum(n_tokens)``: the per-token log-likelihood, or log-ratio (positive: A is better)."""
        return self.total / self._n_tokens_total()

    @property
    def per_token_stderr(self):
        """Monte Carlo standard error of ``per_token``: ``stderr / sum(n_tokens)``."""
        return self.stderr / self._n_tokens_total()

    def _n_tokens_total(self):
        return max(float(np.sum(self.n_tokens)), 1.0)

    def _total_stderr(self, unknown_if_any_nan):
        """Standard error of ``total``. The estimates of identical documents (equal
        ``document_keys``) share their random numbers, so their errors add linearly
        within a group and in quadrature across groups. A NaN entry (an error that
        cannot be estimated, e.g. from one chain) makes the total's NaN when
        ``unknown_if_any_nan``, and is left out otherwise."""
        se = np.asarray(self.per_document_stderr, dtype=np.float64)
        if np.isnan(se).any():
            if unknown_if_any_nan:
                return float("nan")
            se = np.nan_to_num(se)
        if self.document_keys is not None and len(self.document_keys) == len(se):
            _, group = np.unique(self.document_keys, return_inverse=True)
            se = np.bincount(group.ravel(), weights=se)
        return float(np.sqrt(np.sum(np.square(se))))


@dataclass
class HeldOutLikelihood(_PerDocumentResult):
    """Estimated held-out log-likelihood log p(w | model) of a set of documents.

    Token-sequence likelihood (no multinomial coefficient), natural logarithms.

    Attributes
    ----------
    per_document : ndarray of shape (n_documents,)
        Estimate of log p(w_d | model) for every document (0 for empty ones).
    per_document_stderr : ndarray of shape (n_documents,)
        Monte Carlo standard error of each entry (delta method from the effective
        sample size of the importance weights; NaN when it cannot be estimated,
        e.g. with one chain). It is too small under heavy-tailed weights: look at
        ``min_ess`` too.
    n_tokens : ndarray of shape (n_documents,)
        Tokens per document.
    method : str
        Which estimator produced the numbers.
    settings : dict
        The settings used (temperatures, chains, schedule, kernel, seed, ...).
    n_token_updates : int
        Cost: number of K-way draws (or likelihood evaluations) made.
    min_ess : float
        Smallest effective sample size over documents.
    document_keys : ndarray of shape (n_documents,) or None
        The key of each document's random numbers (from its counts): identical
        documents have equal keys, equal estimates and one shared error.
    """

    @property
    def stderr(self):
        """Monte Carlo standard error of ``total``: ``sqrt(sum se_d^2)`` over distinct
        documents (identical documents share their error: it adds linearly); NaN
        when a document's error cannot be estimated (one chain, particle filter or
        sample)."""
        return self._total_stderr(unknown_if_any_nan=True)

    def perplexity(self):
        """Corpus perplexity ``exp(-total / n_tokens)`` (natural log, token-weighted)."""
        return float(np.exp(-self.per_token))

    def per_document_perplexity(self):
        """AVITM's variant ``exp(mean_d(-log p(w_d) / N_d))`` over non-empty documents."""
        keep = self.n_tokens > 0
        return float(np.exp(np.mean(-self.per_document[keep] / self.n_tokens[keep])))

    def __repr__(self):
        return (
            f"HeldOutLikelihood(per_token={self.per_token:.5f} nats (perplexity "
            f"{self.perplexity():.1f}), total={self.total:.1f} +/- {self.stderr:.1f}, "
            f"n_documents={len(self.per_document)}, method={self.method!r})"
        )


@dataclass
class ModelComparison(_PerDocumentResult):
    """Estimated log p(w | A) - log p(w | B) per document (positive: A is better).

    Attributes
    ----------
    per_document : ndarray of shape (n_documents,)
        Estimated log-ratio per document; with ``direction="both"`` the mean of the
        forward and reverse estimates.
    per_document_stderr : ndarray
        Monte Carlo standard error per document.
    n_tokens : ndarray
        Tokens per document.
    method : str
        ``"ratio-ais"`` or ``"paired-ais"`` (the fallback when the latent spaces
        differ, with common random numbers).
    settings : dict
        Path, direction, start, schedule, temperatures, chains, seed, notes.
    n_token_updates : int
        Cost: number of K-way draws made (both runs, starts included).
    min_ess : float
        Smallest effective sample size over documents and runs.
    document_keys : ndarray of shape (n_documents,) or None
        The key of each document's random numbers (from its counts): identical
        documents have equal keys and one shared error.
    forward, reverse : ndarray or None
        Per-document estimates of the forward run (B -> A) and of the reverse run
        (A -> B, reported as a log-ratio A over B). By Jensen, with exact starts,
        ``E[forward] <= log p_A/p_B <= E[reverse]``.
    forward_stderr, reverse_stderr : ndarray or None
        Their per-document Monte Carlo standard errors.
    topic_permutation : ndarray or None
        The permutation applied to B's topics to align them with A's.
    """

    _PER_DOCUMENT: ClassVar[tuple] = _PerDocumentResult._PER_DOCUMENT + (
        "forward", "reverse", "forward_stderr", "reverse_stderr")

    forward: Optional[np.ndarray] = None
    reverse: Optional[np.ndarray] = None
    forward_stderr: Optional[np.ndarray] = None
    reverse_stderr: Optional[np.ndarray] = None
    topic_permutation: Optional[np.ndarray] = None

    @property
    def stderr(self):
        """Monte Carlo standard error of ``total`` (documents without one left out;
        identical documents share their error, which adds linearly)."""
        return self._total_stderr(unknown_if_any_nan=False)

    @property
    def paired_stderr(self):
        """Standard deviation of the per-document log-ratios over sqrt(n_documents)."""
        n = len(self.per_document)
        return float(np.std(self.per_document, ddof=1) / np.sqrt(n)) if n > 1 else np.nan

    @property
    def per_document_gap(self):
        """``reverse - forward`` per document (``None`` unless both were run)."""
        if self.forward is None or self.reverse is None:
            return None
        return self.reverse - self.forward

    def perplexity_ratio(self):
        """Per-document perplexity ratio ``exp(-delta_d / N_d)`` (< 1: A is better)."""
        n = np.maximum(self.n_tokens, 1)
        return np.exp(-self.per_document / n)

    @property
    def corpus_perplexity_ratio(self):
        """``exp(-sum delta / sum N)``: perplexity of A over that of B (< 1: A is better)."""
        return float(np.exp(-self.per_token))

    def bracket(self):
        """Corpus perplexity ratios of the two runs, when both were run.

        Returns
        -------
        bracket : PerplexityBracket or None
            ``(forward, reverse)``: by Jensen, with exact starts, the true ratio
            lies between them (the forward run's is the larger). ``None`` unless
            ``direction="both"``.
        """
        if self.forward is None or self.reverse is None:
            return None
        n = self._n_tokens_total()
        return PerplexityBracket(forward=float(np.exp(-np.sum(self.forward) / n)),
                                 reverse=float(np.exp(-np.sum(self.reverse) / n)))

    @property
    def sign_test_pvalue(self):
        """Two-sided sign test that A and B are equally often better."""
        return _sign_test_pvalue(self.per_document)

    @property
    def verdict(self):
        """``"A"``, ``"B"`` or ``"undecided"``: which model is better, if this run can tell.

        Undecided when the total log-ratio is within two Monte Carlo standard errors
        of zero, or when a forward and a reverse run disagree on its sign.
        """
        if self.forward is not None and self.reverse is not None:
            if np.sign(np.sum(self.forward)) != np.sign(np.sum(self.reverse)):
                return "undecided"
        stderr = self.stderr
        if not np.isfinite(stderr) or abs(self.total) <= 2.0 * stderr:
            return "undecided"
        return "A" if self.total > 0 else "B"

    def __repr__(self):
        n_docs = int(np.sum(np.asarray(self.n_tokens) > 0))
        wins = int(np.sum(self.per_document > 0))
        verdict = {"A": "A is better", "B": "B is better",
                   "undecided": "undecided"}[self.verdict]
        parts = [f"{verdict}: log p(A) - log p(B) = {self.total:+.1f} +/- {self.stderr:.1f} nats "
                 f"({self.per_token:+.4f} per token)",
                 f"perplexity A/B {self.corpus_perplexity_ratio:.4f}",
                 f"A better on {wins} of {n_docs} documents"]
        bracket = self.bracket()
        if bracket is not None:
            agree = ("forward and reverse agree" if np.sign(np.sum(self.forward))
                     == np.sign(np.sum(self.reverse)) else "forward and reverse disagree")
            parts.append(f"{agree} (perplexity ratio between {bracket.reverse:.4f} and "
                         f"{bracket.forward:.4f})")
        return f"ModelComparison({'; '.join(parts)}; method={self.method!r})"


class PerplexityBracket(NamedTuple):
    """Corpus perplexity ratios A/B of a forward and a reverse ratio-AIS run."""

    forward: float
    reverse: float
