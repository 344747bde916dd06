"""The estimator contract shared by every sktopics topic model."""

from abc import abstractmethod
from numbers import Integral

import numpy as np
import torch
from sklearn.base import BaseEstimator, ClassNamePrefixFeaturesOutMixin, TransformerMixin

from ._evaluation._default_score import default_log_likelihood
from ._version import __version__
from .utils._devices import available_device, requests_cuda, resolve_device
from .utils._distributed import agree_on_parameters, current_collective, nccl_device_problem
from .utils._fingerprint import array_fingerprint
from .utils._generators import draw_seed
from .utils._interrupt import deferred_interrupt
from .utils._pickle import VERSION_KEY, check_pickle_version
from .utils._sklearn_compat import (
    Interval,
    StrOptions,
    _fit_context,
    check_is_fitted,
)
from .utils._threads import thread_scope
from .utils._validation import EmptyDocumentWarning, check_count_matrix, warn_fractional_counts
from .utils._warnings import warn

__all__ = ["BaseTopicModel"]


def _warn_empty_documents(X, owner):
    n_empty = int(np.count_nonzero(np.asarray(X.sum(axis=1)).ravel() <= 0))
    if n_empty:
        warn(
            f"{owner}.transform: {n_empty} of {X.shape[0]} documents have no token in the "
            "vocabulary (empty, or only unseen words); their topic proportions are the "
            "prior mean.",
            EmptyDocumentWarning)


def _agree_on_warm(warm):
    """Data-parallel, the ranks continue a fitted model (``warm_start``, a later
    ``partial_fit``) together or not at all: the two paths make different exchanges."""
    collective = current_collective()
    if collective is not None:
        collective.same_everywhere("Whether the model was fitted before (warm_start=True, "
                                   "or earlier partial_fit calls)", warm)


class BaseTopicModel(ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator):
    """Base class of the sktopics estimators.

    Subclasses implement ``_fit(X, seed)``, ``_transform(X)``,
    ``_score_samples(X)`` and ``_generative_view()``. This class owns validation,
    the count policy, device resolution, seeding and the scikit-learn plumbing.

    ``score_samples(X)`` is a per-document held-out log-likelihood estimate,
    ``score(X)`` its sum over the documents per token (higher is better) and
    ``perplexity(X) = exp(-score(X))``.
    """

    _parameter_constraints = {
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "device": [StrOptions({"auto", "cpu", "cuda"}), str, torch.device],
        "n_jobs": [None, Integral],
        "random_state": ["random_state"],
        "verbose": ["verbose"],
    }

    #: Gibbs samplers need integer counts: non-integers are rounded with a warning.
    _integer_counts = False

    #: Extra keyword arguments ``partial_fit`` passes to ``_fit`` (e.g. one epoch).
    _partial_fit_options = {}

    #: Whether ``fit`` runs data-parallel inside ``sktopics.distributed.data_parallel``.
    _data_parallel = False

    #: What a fit finishes before it stops on Ctrl-C (``_fit`` checks ``stop.requested``
    #: after each one).
    _fit_step = "iteration"

    # ----------------------------------------------------------------- fitting
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the topic model to a document-term count matrix.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts (for example the output of
            :class:`~sklearn.feature_extraction.text.CountVectorizer`).
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The fitted estimator.
        """
        warm = bool(getattr(self, "warm_start", False)) and self._is_fitted()
        _agree_on_warm(warm)
        return self._train(X, warm)

    def partial_fit(self, X, y=None):
        """Continue training on ``X`` for one more pass.

        The first call initialises the model; every call then runs one pass over
        ``X`` (one epoch for the neural models, one sweep for the samplers),
        continuing from the current parameters as ``warm_start=True`` would.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        self : object
            The updated estimator.
        """
        warm = self._is_fitted()
        _agree_on_warm(warm)
        if not warm:
            self._validate_params()
        return self._train(X, warm, online=True)

    def _validate_params(self):
        # Data-parallel, an invalid parameter on one rank is raised on every rank.
        collective = current_collective()
        if collective is None:
            return super()._validate_params()
        try:
            super()._validate_params()
            problem = None
        except (ValueError, TypeError) as exc:
            problem = str(exc)
        collective.agree(problem)

    def _train(self, X, warm, online=False):
        """Validate, resolve the device and threads, fit; the plumbing of ``fit`` and
        ``partial_fit``.

        Interrupts: the first Ctrl-C ends training after the current sweep or epoch,
        the estimator keeps the model of the work done, and the KeyboardInterrupt is
        raised again here. Any other exception out of ``_fit`` (a second Ctrl-C
        included) leaves the estimator's attributes as they were before the call.
        """
        before = dict(self.__dict__)
        name = type(self).__name__
        collective = current_collective()
        try:
            X = self._checked_training_counts(X, warm, collective)
            if not online:
                self._warn_more_topics_than_words(X)
            if not (online and warm):
                self.device_ = self._agreed_device(collective)
            options = self._partial_fit_options if online else {}
            seed = draw_seed(self.random_state)
            if collective is not None:
                seed = collective.broadcast(seed)  # every rank draws the same numbers
            with thread_scope(self.n_jobs), deferred_interrupt(name, self._fit_step) as stop:
                self._fit(X, seed, warm=warm, stop=stop, **options)
        except BaseException:
            self.__dict__.clear()
            self.__dict__.update(before)
            if "device_" in before:
                self._relocate(self.device_)  # fitted state moved to a new device goes back
            raise
        self._record_training_size(X, collective)
        if stop.requested:
            raise KeyboardInterrupt(
                f"{name} stopped after {self.n_iter_} {self._fit_step}s: the estimator "
                "holds the model of the work done."
            )
        return self

    # --------------------------------------------------------------- inference
    def transform(self, X):
        """Document-topic proportions of ``X``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.

        Returns
        -------
        doc_topic : ndarray of shape (n_samples, n_components)
            Rows sum to 1. Documents without tokens (empty, or made only of words
            outside the vocabulary, which a vectorizer drops) get the prior mean,
            with a :class:`~sktopics.utils.EmptyDocumentWarning` that counts them.
        """
        X = self._check_X(X)
        _warn_empty_documents(X, type(self).__name__)
        with thread_scope(self.n_jobs):
            doc_topic = np.asarray(self._transform(X), dtype=np.float64)
        return doc_topic.astype(X.dtype, copy=False)

    def score(self, X, y=None):
        """Per-token held-out log-likelihood estimate of ``X`` (higher is better).

        See the estimator's Notes for the estimator used. Because the value is
        normalised by the number of tokens it does not grow with the fold size, so
        :class:`~sklearn.model_selection.GridSearchCV` can use it directly. It is
        ``score_samples(X).sum()`` divided by the number of tokens of ``X`` (after
        the count policy: a Gibbs model rounds fractional counts).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts, with at least one token.
        y : Ignored
            Not used, present for API consistency by convention.

        Returns
        -------
        score : float
            Estimate of ``log p(X) / n_tokens`` in nats per token. Inside
            :func:`sktopics.distributed.data_parallel`, ``X`` holds this rank's
            documents and every rank returns the score of all the ranks' documents,
            the one a single process gives on their concatenation (to float rounding).
        """
        X, collective = self._inference_counts(X)
        n_tokens = float(X.sum(dtype=np.float64))
        if collective is not None:
            n_tokens = collective.sum(n_tokens)
        if n_tokens <= 0:
            where = " on every rank" if collective is not None else ""
            raise ValueError(
                f"score needs at least one token: every document of X is empty{where}."
            )
        total = float(np.sum(self._log_likelihood(X)))
        if collective is not None:
            total = collective.sum(total)
        return total / n_tokens

    def score_samples(self, X):
        """Held-out log-likelihood estimate of each document of ``X``.

        The same estimate as :meth:`score`, with the same random numbers, per
        document and not divided by the number of tokens:
        ``score(X) == score_samples(X).sum() / n_tokens`` up to float rounding.
        Divided by the documents' lengths it is comparable across documents: a
        document far below the per-token values of held-out documents of the
        training domain is one the model explains poorly, for instance a text from
        another domain (:ref:`inspection`).

        The random numbers of a document are keyed by its counts: its estimate does
        not depend on its row nor on the other documents of ``X``, and identical
        documents get identical estimates (each unbiased; they share their Monte
        Carlo error).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts.

        Returns
        -------
        log_likelihood : ndarray of shape (n_samples,)
            Estimate of ``log p(w_d)`` of each document ``d`` in nats: the
            probability of its tokens given its length (no multinomial coefficient
            for the orderings of a bag of words). A document without tokens (empty,
            or made only of words outside the vocabulary) gets 0, the log of the
            probability 1 of the empty document given its length 0. Inside
            :func:`sktopics.distributed.data_parallel`, ``X`` holds this rank's
            documents and the values are this rank's: concatenated over the ranks,
            they are the values a single process gives on the concatenated corpus.
        """
        X, _ = self._inference_counts(X)
        return self._log_likelihood(X)

    def _inference_counts(self, X):
        """``(X, collective)`` for ``score`` / ``score_samples``: validated counts and
        the data-parallel collective (``None`` outside one).

        Data-parallel, the ranks agree first (a problem on any of them is raised on all)
        and check that they hold the same model.
        """
        collective = current_collective()
        if collective is None:
            return self._check_X(X), None
        try:
            X = self._check_X(X)
            problem = None
        except ValueError as exc:
            problem = str(exc)
        collective.agree(problem)
        collective.same_everywhere("The model (its parameters)", self._model_fingerprint())
        return X, collective

    def _log_likelihood(self, X):
        """``_score_samples`` of validated counts as float64, under the ``n_jobs`` threads."""
        with thread_scope(self.n_jobs):
            return np.asarray(self._score_samples(X), dtype=np.float64).reshape(X.shape[0])

    def perplexity(self, X):
        """Corpus-level perplexity ``exp(-score(X))`` (lower is better).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Non-negative token counts, with at least one token.

        Returns
        -------
        perplexity : float
        """
        return float(np.exp(-self.score(X)))

    def _model_fingerprint(self):
        """A digest of the fitted parameters a score depends on: every rank of a
        data-parallel evaluation must hold the same model."""
        return array_fingerprint(self._model_arrays())

    def _model_arrays(self):
        """The fitted arrays of :meth:`_model_fingerprint` (subclasses add theirs)."""
        yield self.components_
        yield np.atleast_1d(np.asarray(self.doc_topic_prior_, dtype=np.float64))

    def _checked_training_counts(self, X, warm, collective):
        """Validated training counts. Data-parallel, the ranks agree first: a problem on
        any of them (bad counts, no documents, another vocabulary) is raised on all, so
        that none waits for the others in a collective they will never reach."""
        if collective is None:
            return check_count_matrix(
                self, X, reset=not warm, integer_counts=self._integer_counts, min_samples=2
            )
        agree_on_parameters(self, collective)
        if not self._data_parallel:
            raise ValueError(f"{type(self).__name__} does not train data-parallel: fit it "
                             "outside sktopics.distributed.data_parallel().")
        try:
            X = check_count_matrix(
                self, X, reset=not warm, integer_counts=self._integer_counts, min_samples=2
            )
            problem = None
        except ValueError as exc:
            problem = str(exc)
        collective.agree(problem)
        names = getattr(self, "feature_names_in_", None)
        collective.same_everywhere(
            "The vocabulary (number of features and their names; fit one vectorizer for "
            "every rank, or use a HashingVectorizer)",
            (X.shape[1], None if names is None else list(names)))
        if not warm and not self._integer_counts:
            warn_fractional_counts(X, type(self).__name__, collective)
        return X

    def _agreed_device(self, collective):
        """The resolved ``device``; data-parallel, a device a rank cannot use (no CUDA,
        or a GPU other than the one NCCL communicates on) is refused on every rank."""
        if collective is None:
            return resolve_device(self.device)
        try:
            device = resolve_device(self.device)
            problem = nccl_device_problem(collective.backend, device)
        except ValueError as exc:
            device, problem = None, str(exc)
        collective.agree(problem)
        return device

    def _record_training_size(self, X, collective=None):
        """``n_train_tokens_`` / ``n_train_documents_``: per-token training curves need them.

        Data-parallel, they count the whole corpus (every rank's documents).
        """
        tokens, documents = float(X.sum()), int(X.shape[0])
        if collective is not None:
            tokens, documents = collective.sum(tokens), collective.sum(documents)
        self.n_train_tokens_ = tokens
        self.n_train_documents_ = documents

    def _warn_more_topics_than_words(self, X):
        n_topics = getattr(self, "n_components", None)
        if isinstance(n_topics, Integral) and n_topics > X.shape[1]:
            warn(
                f"{type(self).__name__}: n_components={n_topics} topics over a vocabulary of "
                f"{X.shape[1]} words: more topics than words cannot all be told apart.",
                UserWarning)

    def _check_X(self, X):
        """Validate counts for inference on a fitted model (features must match)."""
        check_is_fitted(self, "components_")
        return check_count_matrix(self, X, reset=False, integer_counts=self._integer_counts)

    # ------------------------------------------------------- scikit-learn glue
    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    def _is_fitted(self):
        return hasattr(self, "components_")

    def __sklearn_is_fitted__(self):
        return self._is_fitted()

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        tags.input_tags.sparse = True
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        tags.non_deterministic = requests_cuda(self.device)
        return tags

    def __getstate__(self):
        state = dict(super().__getstate__())  # a copy: the live model stays as it is
        state[VERSION_KEY] = __version__
        return state

    def __setstate__(self, state):
        check_pickle_version(state, type(self).__name__)
        super().__setstate__(state)
        device = getattr(self, "device_", None)
        if device is not None:
            # A model fitted on a device this machine lacks (a GPU machine's cuda:1,
            # any GPU on a CPU-only machine) keeps working on one it has.
            self.device_ = available_device(device, owner=type(self).__name__)
            self._relocate(self.device_)

    # ------------------------------------------------------- subclass hooks
    @abstractmethod
    def _fit(self, X, seed, *, warm, stop=None):
        """Fit on validated CSR counts; set the fitted attributes as numpy.

        ``stop`` is a :class:`~sktopics.utils._interrupt.StopRequest`: when its
        ``requested`` is set, end after the current step with the model of the work
        done (and ``n_iter_`` counting it).
        """

    @abstractmethod
    def _transform(self, X):
        """Document-topic proportions of validated CSR counts."""

    def _relocate(self, device):
        """Move fitted torch state to ``device`` (after unpickling); nothing to move here."""

    def _score_samples(self, X):
        """Per-document held-out log-likelihood estimates of validated CSR counts.

        The cheap, deterministic default of :mod:`sktopics.model_selection`:
        left-to-right sequential Monte Carlo for mixture models, importance
        sampling from the amortised posterior otherwise, computed on the device
        the model lives on. Documents without tokens get 0.
        """
        return default_log_likelihood(self._generative_view(), X, device=self.device_)

    @abstractmethod
    def _generative_view(self):
        """The fitted generative model, as a :class:`~sktopics._generative.GenerativeView`."""
