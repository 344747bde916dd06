"""LDAGibbs: collapsed-Gibbs LDA as a scikit-learn estimator (torch internals)."""

import copy
import time
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
import torch

from .._base import BaseTopicModel
from .._config import get_config
from .._generative import DirichletPrior, GenerativeView, MixtureLikelihood
from .._kernels import FAILED, compiled_path, run_compiled
from .._random import bits, document_keys, stream_key
from ..utils._blocks import document_blocks, evaluation_blocks
from ..utils._devices import device_budget
from ..utils._distributed import current_collective
from ..utils._docstring import N_JOBS, fill_doc
from ..utils._generators import make_generator
from ..utils._interrupt import stop_now
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils._validation import check_doc_topic_prior
from ..utils._warnings import warn
from ._chain import ChainMemory, draw_given_topics
from ._fused import fused_dense_available
from ._hyper import StateHistograms, optimize_alpha, optimize_beta
from ._infer import _CHUNK_ELEMENTS as _INFER_CHUNK_ELEMENTS
from ._infer import CellCorpus, infer_doc_topic
from ._state import GibbsCorpus, GibbsState, default_chunk
from ._sweeps import (
    STREAMS,
    log_joint,
    mh_sweep,
    parallel_sweep,
    random_init,
    sequential_sweep,
    sparse_sweep,
)

__all__ = ["LDAGibbs", "Snapshot"]


class Snapshot(NamedTuple):
    """The model of one sweep of an :class:`LDAGibbs` run (``snapshots_``)."""

    sweep: int
    components: np.ndarray
    doc_topic_prior: np.ndarray

    def _generative_view(self):
        return _lda_view(self.components, self.doc_topic_prior)


def _lda_view(components, doc_topic_prior):
    return GenerativeView(
        prior=DirichletPrior(np.asarray(doc_topic_prior, dtype=np.float64)),
        likelihood=MixtureLikelihood(np.asarray(components, dtype=np.float64)),
        n_features=components.shape[1],
    )

#: ``algorithm="auto"`` switches from the dense parallel sweep to MH at this K where
#: the parallel sweep runs as torch operations (which write a (tokens, K) table): there
#: MH reached a given perplexity about 1.7x sooner at K = 1000 on BBC. The fused GPU
#: kernel and the compiled CPU kernel keep the parallel sweep at every K: at K = 1000
#: it reaches perplexity 900 on BBC in half MH's time on one CPU thread, and ends lower.
_AUTO_MH_FROM = 500

#: ``algorithm="auto"`` takes the sparse sweep from this K on the CPU with the compiled
#: kernels (one process). On BBC, one thread, it reached perplexity 900 and 870 in 0.55x
#: and 0.59x the parallel sweep's time at K = 1000 (3 seeds, recorded) and about as soon
#: at K = 50 (5 seeds, recorded); single unrecorded runs on a loaded machine put the
#: crossing between K = 300 (a tie) and 500 (about 1.5x sooner).
_AUTO_SPARSE_FROM = 500

#: (documents x topics) entries per block of :meth:`LDAGibbs.transform` on the CPU (a
#: block's sampler state is about 16 bytes an entry; GPU: ``device_budget``).
_TRANSFORM_ELEMENTS = 1 << 24

#: Non-zero cells per block of :meth:`LDAGibbs.transform` on the CPU: laying a block's
#: cells out takes about 85 bytes a cell, 45 MB (GPU: ``device_budget``).
_TRANSFORM_CELLS = 1 << 19


def _no_compiled_kernels(device):
    """Why the compiled CPU kernels do not run on ``device``, in words."""
    if device.type != "cpu":
        return f"on {device.type}"
    if get_config()["cpu_kernels"] == "torch":
        return "with cpu_kernels='torch'"
    return "here (numba is missing, or the sparse sweep's kernel failed earlier)"


def _mh_chunk(device):
    """Tokens per MH chunk: O(1) per token, so ``(chunk,)`` temporaries only."""
    return (1 << 16) if device.type == "cpu" else (1 << 22)


class _Run:
    """A planned run of sweeps ``first + 1 .. last`` and its running estimates.

    An interrupted fit keeps its run (:meth:`detach`), so that a warm ``fit`` finishes
    it with the same kept states, seed and sums as if it had never stopped.
    """

    def __init__(self, fingerprint, seed, first, last):
        self.fingerprint = fingerprint
        self.seed = int(seed)
        self.first = int(first)
        self.last = int(last)
        self.n_kept = 0
        self.phi_sum = None
        self.doc_topic = None

    def attach(self, n_components, n_features, n_docs, device):
        """Put the sums on ``device`` (new ones for a new run)."""
        if self.phi_sum is None:
            self.phi_sum = torch.zeros((n_components, n_features), dtype=torch.float64,
                                       device=device)
            self.doc_topic = np.zeros((n_docs, n_components))  # summed in place on the host
        self.phi_sum = self.phi_sum.to(device)

    def keep(self, state, alpha, beta):
        """Add a sampled state to the averages."""
        self.phi_sum += state.topic_word(beta)
        state.add_doc_topic(alpha, self.doc_topic)
        self.n_kept += 1

    def estimates(self, state, alpha, beta):
        """``components_`` and ``doc_topic_``: the kept states' averages (the current
        state's, when the run stopped before its first kept state)."""
        if self.n_kept == 0:
            phi = state.topic_word(beta).cpu().numpy()
            doc_topic = np.zeros_like(self.doc_topic)
            state.add_doc_topic(alpha, doc_topic)
        else:
            phi = (self.phi_sum / self.n_kept).cpu().numpy()
            doc_topic = self.doc_topic / self.n_kept
        return phi / phi.sum(1, keepdims=True), doc_topic

    def detach(self):
        """The run with its sums on the host (picklable, device-neutral)."""
        self.phi_sum = self.phi_sum.cpu()
        return self


@fill_doc(n_jobs=N_JOBS)
class LDAGibbs(BaseTopicModel):
    """Latent Dirichlet allocation fitted by collapsed Gibbs sampling.

    The topic of every token is sampled with the topic proportions and the
    topics integrated out (Griffiths & Steyvers 2004); topics are estimated from
    the counts of one or several post-burn-in states. On the CPU the samplers are
    compiled loops (numba), one pass per token on ``n_jobs`` threads; on a GPU,
    and on the CPU with ``sktopics.set_config(cpu_kernels="torch")``, they are
    torch kernels. Every random number is a counter-based function of
    ``(random_state, sweep, token)``, so a fit is bit-identical for a given seed,
    device and kernels whatever the number of threads.

    Read more in the :ref:`User Guide <gibbs>`.

    Parameters
    ----------
    n_components : int, default=10
        Number of topics ``K``.
    doc_topic_prior : float or array-like of shape (n_components,), default=None
        Dirichlet prior ``alpha`` of the document-topic proportions (the
        starting point when ``optimize_interval`` is set). ``None`` means
        ``5 / n_components``: Mallet's default total mass ``sum(alpha) = 5``,
        which equals tomotopy's and ``lda``'s ``alpha = 0.1`` at ``K = 50`` and
        scales sensibly with ``K`` (a fixed 0.1 becomes a heavy prior at large
        ``K``; scikit-learn's ``1 / K`` is a weak one for long documents).
    topic_word_prior : float, default=None
        Symmetric Dirichlet prior ``beta`` of the topic-word distributions.
        ``None`` means 0.01, the default of Mallet, tomotopy and ``lda`` (the
        value of Griffiths & Steyvers 2004 is 0.1, which gives fewer, broader
        topics on small vocabularies).
    max_iter : int, default=500
        Number of Gibbs sweeps over all tokens. On BBC News (K = 50) held-out
        perplexity levels off after about 300 to 500 sweeps.
    burn_in : int, default=50
        Sweeps before hyper-parameters start to be optimised; states before it
        are never averaged into the estimates (unless the run is shorter).
    n_kept_samples : int, default=5
        Number of sampled states whose topic-word counts are averaged into
        ``components_``: the last ``n_kept_samples`` states spaced
        ``sample_interval`` sweeps apart and after ``burn_in`` (the final state
        is always used).
    sample_interval : int, default=10
        Sweeps between averaged states.
    optimize_interval : int or None, default=10
        Every ``optimize_interval`` sweeps after ``burn_in``, learn an
        asymmetric ``alpha`` and a symmetric ``beta`` that maximise the evidence of
        the current counts (what Minka's fixed point converges to, reached by
        Newton's method; Mallet's ``--optimize-interval``, tomotopy's
        ``optim_interval``; default 10 as in tomotopy). ``None`` keeps the
        priors fixed.
    algorithm : {"auto", "parallel", "mh", "sparse", "sequential"}, default="auto"
        The sampler.

        - ``"parallel"``: every token is drawn from its exact collapsed
          conditional given the counts frozen at the start of the sweep, with
          its own assignment excluded. O(K) per token, fully parallel. This is
          AD-LDA with one worker per token, not an exact Gibbs sampler (see
          Notes).
        - ``"mh"``: the same frozen-count sweep with an O(1) Metropolis-Hastings
          draw per token (word and document proposals, LightLDA/WarpLDA
          style). Independent of ``K``; needs more sweeps.
        - ``"sparse"``: SparseLDA (Yao, Mimno & McCallum 2009), Mallet's
          sampler: exact collapsed Gibbs token by token, the counts updated after
          every token, at a cost per token that follows the topics its word and
          document use rather than ``K``. The documents are split into a number
          of partitions that depends on the corpus only (one per 32,768 tokens,
          at most 64); each is swept on one of ``n_jobs`` threads from the counts
          of the start of the sweep, whose changes are merged after it (AD-LDA).
          With one partition it is an exact Gibbs sampler. Compiled CPU kernel
          only: on a GPU or with ``cpu_kernels="torch"`` the parallel sweep is
          used with a warning (``algorithm_`` says ``"parallel"``); refused
          inside :func:`sktopics.distributed.data_parallel`.
        - ``"sequential"``: exact collapsed Gibbs, token by token, in a Python
          loop. Slow; for correctness checks and tiny corpora.
        - ``"auto"``: ``"sparse"`` for ``n_components >= 500`` on the CPU with
          the compiled kernels (see :func:`sktopics.set_config`), where it reaches
          a given perplexity sooner than the parallel sweep. Otherwise
          ``"parallel"`` where it runs in a kernel of its own: on the CPU with the
          compiled kernels, and on a GPU where Triton is installed (it ships with
          torch's CUDA builds) up to ``n_components = 4096``; it reaches a given
          perplexity sooner than MH there. Elsewhere ``"parallel"`` for
          ``n_components < 500``, else ``"mh"``.
    mh_steps : int, default=2
        Metropolis-Hastings cycles (one word proposal and one document proposal
        each) per token and sweep when ``algorithm="mh"``.
    evaluate_every : int, default=10
        Record the joint log-likelihood ``log p(w, z)`` in
        ``log_likelihood_trace_`` every ``evaluate_every`` sweeps (and after the
        last one); with ``verbose`` a progress line is printed at the same
        times.
    snapshot_interval : int or None, default=None
        If set, keep ``(sweep, components, doc_topic_prior)`` every
        ``snapshot_interval`` sweeps in ``snapshots_`` (each costs K x V
        floats), for iteration-AIS and convergence studies.
    transform_max_iter : int, default=100
        Gibbs iterations of :meth:`transform` (tomotopy's ``infer`` default);
        the first half is burn-in.
    warm_start : bool, default=False
        When True, ``fit`` keeps the chain's assignments, and a later ``fit``
        continues the chain for ``max_iter`` more sweeps (on the same corpus; on
        another corpus the chain starts from a draw given the fitted topics), or
        finishes a fit that Ctrl-C stopped (see Notes). ``partial_fit`` always
        continues, one sweep per call, as one chain over every corpus (shard) it
        is given. The kept assignments (one byte per token up to 256 topics) are
        pickled with the model; without ``warm_start`` or ``partial_fit`` the model
        holds no training data.
    device : {"auto", "cpu", "cuda"} or torch.device, default="auto"
        Where the chain runs. Fitted attributes are numpy arrays either way.
    {n_jobs}
    random_state : int, RandomState instance or None, default=None
        Seed of the sampler and of :meth:`transform`. An int gives identical
        results on a given device whatever the number of torch threads.
    verbose : int, default=0
        Print a progress line (sweep, tokens/s, log-likelihood per token) every
        ``evaluate_every`` sweeps.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Topic-word distributions ``(n_kw + beta) / (n_k + V beta)`` averaged
        over the sampled states; rows sum to 1.
    doc_topic_prior_ : ndarray of shape (n_components,)
        The (learned) ``alpha``.
    topic_word_prior_ : float
        The (learned) ``beta``.
    log_likelihood_trace_ : ndarray of shape (n_evaluations,)
        Joint ``log p(w, z)`` of the training state at the recorded sweeps (under
        ``partial_fit``, of that call's shard given the other shards).
    log_likelihood_n_tokens_ : ndarray of shape (n_evaluations,)
        The tokens behind each entry of ``log_likelihood_trace_``: their ratio is
        the per-token curve.
    n_train_tokens_ : float
        Tokens of the last ``fit`` / ``partial_fit`` data.
    n_train_documents_ : int
        Documents of the last ``fit`` / ``partial_fit`` data.
    log_likelihood_sweeps_ : ndarray of shape (n_evaluations,)
        The sweep number (cumulative, from 1) of each trace entry.
    doc_topic_ : ndarray of shape (n_samples_train, n_components)
        Training-document proportions averaged over the sampled states.
    n_iter_ : int
        Sweeps done so far, cumulative under ``warm_start`` and ``partial_fit``.
        A ``partial_fit`` call is one sweep of the shard it is given, so 100
        passes over a corpus streamed as 4 shards read 400 (divide by the
        number of shards for passes over the corpus). ``burn_in``,
        ``optimize_interval`` and the online chain's memory count in these
        sweeps, which is why resuming relies on this counter.
    algorithm_ : str
        The sampler used.
    snapshots_ : list of Snapshot
        Named tuples ``(sweep, components, doc_topic_prior)`` when
        ``snapshot_interval`` is set; each is a model that
        :func:`~sktopics.model_selection.iteration_ais` (or any evaluator) takes.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.
    device_ : torch.device
        Device the chain ran on.

    See Also
    --------
    sklearn.decomposition.LatentDirichletAllocation : LDA by variational Bayes.
    AVITM : LDA by autoencoding variational inference.

    Notes
    -----
    Count policy: non-integer counts are rounded to the nearest integer with a
    :class:`~sklearn.exceptions.DataConversionWarning` (refused when rounding
    would empty most documents, as for a TF-IDF matrix); documents without
    tokens are allowed.

    Online training: ``partial_fit`` sweeps the shard it is given with the
    word-topic counts of every other shard it has seen in their latest states, so
    that passes over shards make one chain over the whole corpus; a shard seen again
    continues from its own topics. After a ``fit`` that kept no chain, the fitted
    topics stand for the earlier data.

    Interrupts: Ctrl-C during ``fit`` ends the fit after the current sweep; the
    estimator holds the model of the sweeps done (``n_iter_``) and the
    ``KeyboardInterrupt`` is raised again, so that loops around ``fit`` stop too.
    ``fit`` with ``warm_start=True`` on the same corpus then runs the remaining
    sweeps with the interrupted run's seed, kept states and sums: the result is
    bit-identical to the fit that was never stopped, also after a pickle round
    trip. A second Ctrl-C stops at once and leaves the estimator as it was before
    the call.

    ``fit_transform(X)`` is ``fit(X).transform(X)``: proportions inferred with the
    final topics held fixed. ``doc_topic_`` holds the training chain's own
    proportions, averaged over the kept states; the two differ by Monte Carlo error
    and because the topics moved during training.

    The parallel sweep is AD-LDA (Newman et al. 2009) with one worker per
    token: each token is drawn exactly from its conditional given the others'
    assignments *at the start of the sweep*, so tokens of the same document do
    not see each other's moves within a sweep. Its stationary distribution is
    close to, but not exactly, the LDA posterior; in practice its held-out
    perplexity matches sequential collapsed Gibbs (see the user guide). The
    MH sampler targets the same per-token conditional with exact acceptance
    ratios; ``"sequential"`` is the exact sampler, and so is ``"sparse"`` on a
    corpus small enough for one partition (on larger ones it is AD-LDA with a
    few large partitions, each sequential within itself).

    ``transform`` holds the topics fixed and returns the Rao-Blackwellised
    average of ``(n_dk + alpha) / (n_d + sum(alpha))`` over the second half of
    ``transform_max_iter`` iterations of a chain that is exact given the topics
    (documents are independent). Documents without tokens get the prior mean
    ``alpha / sum(alpha)``. The result is deterministic for a fitted model. With
    the compiled CPU kernels the chain is collapsed Gibbs on each document's
    topics, its random numbers keyed by the document's own counts: a document's
    result is the same in any batch, at any row, on any number of threads. With
    the torch kernels (on a GPU) it is blocked Gibbs on ``(theta, z)`` for all
    documents at once, which share their random numbers (common random
    numbers): each document's estimate comes from an exact chain, but the Monte
    Carlo errors of different documents are correlated, and a document's result
    depends on the other rows of ``X``; documents are processed in blocks of
    about 16 million (document, topic) entries on the CPU (more on a GPU).

    ``score`` estimates the held-out log-likelihood per token,
    ``sum_d log p(w_d | components_, doc_topic_prior_) / n_tokens``, with the
    left-to-right sequential Monte Carlo estimator of
    :mod:`sktopics.model_selection` (32 particles, fixed seed; see
    :func:`~sktopics.model_selection.default_score`). For more precise or
    cheaper estimates, and for document completion, use
    :func:`~sktopics.model_selection.ais_log_likelihood`,
    :func:`~sktopics.model_selection.left_to_right_log_likelihood` or
    :func:`~sktopics.model_selection.document_completion_log_likelihood`.

    References
    ----------
    .. [1] T. L. Griffiths and M. Steyvers, "Finding scientific topics", PNAS
       101 (2004).
    .. [2] D. Newman, A. Asuncion, P. Smyth and M. Welling, "Distributed
       algorithms for topic models", JMLR 10 (2009).
    .. [3] H. M. Wallach, D. Mimno and A. McCallum, "Rethinking LDA: why priors
       matter", NIPS 2009.
    .. [4] J. Yuan et al., "LightLDA: big topic models on modest computer
       clusters", WWW 2015; J. Chen et al., "WarpLDA", VLDB 2016.
    .. [5] L. Yao, D. Mimno and A. McCallum, "Efficient methods for topic model
       inference on streaming document collections", KDD 2009.

    Examples
    --------
    >>> from sktopics import LDAGibbs
    >>> from sktopics.datasets import make_lda_corpus
    >>> X, _, _ = make_lda_corpus(n_samples=50, n_features=30, n_components=3,
    ...                           random_state=0)
    >>> model = LDAGibbs(n_components=3, max_iter=50, device="cpu",
    ...                  random_state=0).fit(X)
    >>> model.components_.shape
    (3, 30)
    >>> model.transform(X[:2]).shape
    (2, 3)
    """

    _parameter_constraints = {
        **BaseTopicModel._parameter_constraints,
        "doc_topic_prior": [None, Interval(Real, 0, None, closed="neither"), "array-like"],
        "topic_word_prior": [None, Interval(Real, 0, None, closed="neither")],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "burn_in": [Interval(Integral, 0, None, closed="left")],
        "n_kept_samples": [Interval(Integral, 1, None, closed="left")],
        "sample_interval": [Interval(Integral, 1, None, closed="left")],
        "optimize_interval": [None, Interval(Integral, 1, None, closed="left")],
        "algorithm": [StrOptions({"auto", "parallel", "mh", "sparse", "sequential"})],
        "mh_steps": [Interval(Integral, 1, None, closed="left")],
        "evaluate_every": [Interval(Integral, 1, None, closed="left")],
        "snapshot_interval": [None, Interval(Integral, 1, None, closed="left")],
        "transform_max_iter": [Interval(Integral, 1, None, closed="left")],
        "warm_start": ["boolean"],
    }

    _integer_counts = True

    #: ``partial_fit`` runs one sweep per call.
    _partial_fit_options = {"n_sweeps": 1}
    _fit_step = "sweep"
    _data_parallel = True

    def __init__(
        self,
        n_components=10,
        *,
        doc_topic_prior=None,
        topic_word_prior=None,
        max_iter=500,
        burn_in=50,
        n_kept_samples=5,
        sample_interval=10,
        optimize_interval=10,
        algorithm="auto",
        mh_steps=2,
        evaluate_every=10,
        snapshot_interval=None,
        transform_max_iter=100,
        warm_start=False,
        device="auto",
        n_jobs=None,
        random_state=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.doc_topic_prior = doc_topic_prior
        self.topic_word_prior = topic_word_prior
        self.max_iter = max_iter
        self.burn_in = burn_in
        self.n_kept_samples = n_kept_samples
        self.sample_interval = sample_interval
        self.optimize_interval = optimize_interval
        self.algorithm = algorithm
        self.mh_steps = mh_steps
        self.evaluate_every = evaluate_every
        self.snapshot_interval = snapshot_interval
        self.transform_max_iter = transform_max_iter
        self.warm_start = warm_start
        self.device = device
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.verbose = verbose

    # ----------------------------------------------------------------- helpers
    def _initial_alpha(self):
        K = self.n_components
        return check_doc_topic_prior(5.0 / K if self.doc_topic_prior is None
                                     else self.doc_topic_prior, K)

    def _resolve_algorithm(self, device, collective=None):
        if self.algorithm == "auto":
            if (self.n_components >= _AUTO_SPARSE_FROM and collective is None
                    and compiled_path(device, "sparse sweep")):
                return "sparse"
            dense = self.n_components < _AUTO_MH_FROM or self._fast_dense(device)
            return "parallel" if dense else "mh"
        return self.algorithm

    def _fast_dense(self, device):
        """Whether the parallel sweep runs in a kernel of its own here (fused on a GPU,
        compiled on a CPU) rather than as torch operations."""
        return (fused_dense_available(device, self.n_components)
                or compiled_path(device, "parallel sweep"))

    def _sample_sweeps(self, start, n_sweeps):
        """Sweeps (cumulative numbering) whose states are averaged."""
        last = start + n_sweeps
        sweeps = [last - j * self.sample_interval for j in range(self.n_kept_samples)]
        floor = max(start, self.burn_in) if last > self.burn_in else start
        return {s for s in sweeps if s > floor} | {last}

    # ----------------------------------------------------------------- fitting
    def _fit(self, X, seed, *, warm, n_sweeps=None, stop=None):
        if not compiled_path(self.device_):
            return self._fit_chain(X, seed, warm=warm, n_sweeps=n_sweeps, stop=stop)
        from .._kernels._pool import torch_on_one_thread

        with torch_on_one_thread():
            return self._fit_chain(X, seed, warm=warm, n_sweeps=n_sweeps, stop=stop)

    def _fit_chain(self, X, seed, *, warm, n_sweeps, stop):
        device = self.device_
        # partial_fit passes n_sweeps (one sweep): one online chain over every shard.
        online = n_sweeps is not None
        K = self.n_components
        collective = current_collective()
        corpus = GibbsCorpus(X, device, collective)
        warm = warm and getattr(self, "components_", None) is not None
        run = getattr(self, "_interrupted_run", None) if warm and not online else None
        if run is not None and (run.fingerprint != corpus.fingerprint()
                                or run.last - run.first != self.max_iter):
            run = None  # another corpus or plan: a new run, not the interrupted one's end
        elif run is not None:
            run = copy.deepcopy(run)  # the saved run stays as it was if this fit fails
        if warm:
            alpha = np.asarray(self.doc_topic_prior_, dtype=np.float64)
            beta = float(self.topic_word_prior_)
            start = int(self.n_iter_)
        else:
            alpha = self._initial_alpha()
            beta = 0.01 if self.topic_word_prior is None else float(self.topic_word_prior)
            start = 0
        if run is None:
            planned = self.max_iter if n_sweeps is None else int(n_sweeps)
            run = _Run(corpus.fingerprint(), seed, start, start + planned)
        run.attach(K, X.shape[1], corpus.n_docs, device)
        seed = run.seed

        memory = self._memory_for(online, warm, K, beta)
        z, own = (None, None) if memory is None else memory.resume(corpus)
        if collective is not None and memory is not None:
            # Every rank continues its share's topics, or none does.
            if collective.sum(int(z is not None)) not in (0, collective.world_size):
                collective.agree(None if z is not None else "this rank's documents are new "
                                 "to the model while other ranks' were trained on before: "
                                 "pass every rank the same shard's share each time.")
        # fit models X alone; partial_fit sweeps it given the other shards' counts
        background = memory.background(corpus, z, K, own) if online and memory else None
        if z is None:
            z = (draw_given_topics(corpus, self.components_, alpha, seed) if warm
                 else random_init(corpus, K, seed))
        state = GibbsState(corpus, K, z, background)
        # The tokens the log joint covers: every rank's, data-parallel.
        n_tokens = corpus.n_tokens if collective is None else collective.sum(corpus.n_tokens)

        algorithm = self._resolve_algorithm(device, collective)
        if collective is not None and algorithm in ("sequential", "sparse"):
            raise ValueError(f"algorithm={algorithm!r} runs in one process: use 'parallel' "
                             "or 'mh' inside sktopics.distributed.data_parallel().")
        if collective is not None:
            algorithm = _agreed_algorithm(algorithm, self.algorithm, collective)
        if algorithm == "sparse" and not compiled_path(device, "sparse sweep"):
            warn(f"algorithm='sparse' runs in the compiled CPU kernels only, which do not "
                 f"run {_no_compiled_kernels(device)}: the parallel sweep is used instead "
                 "(algorithm_='parallel').", UserWarning)
            algorithm = "parallel"
        sample_sweeps = self._sample_sweeps(run.first, run.last - run.first)
        trace = list(getattr(self, "log_likelihood_trace_", [])) if warm else []
        trace_tokens = list(self._trace_tokens()) if warm else []
        trace_sweeps = list(getattr(self, "log_likelihood_sweeps_", [])) if warm else []
        snapshots = list(getattr(self, "snapshots_", [])) if warm else []
        tic = time.perf_counter()
        tokens_done = 0

        # alpha on the device, copied when it changes: a copy per sweep would make
        # every sweep wait for the device.
        alpha_device = torch.as_tensor(alpha, dtype=torch.float32, device=device)
        done = start
        for sweep in range(start + 1, run.last + 1):
            if algorithm == "parallel" and self._may_lose_kernel():
                lost = not self._fast_dense(device)
                if collective is not None:  # every rank switches at the same sweep
                    lost = collective.sum(int(lost)) > 0
                if lost:
                    algorithm = "mh"  # "auto" chose a kernel of its own, which has failed
            if algorithm == "parallel":
                parallel_sweep(state, alpha_device, beta, seed, sweep,
                               default_chunk(K, device=device))
            elif algorithm == "sparse":
                if not sparse_sweep(state, alpha, beta, seed, sweep):
                    algorithm = "parallel"  # the compiled kernel failed (warned once)
                    parallel_sweep(state, alpha_device, beta, seed, sweep,
                                   default_chunk(K, device=device))
            elif algorithm == "mh":
                mh_sweep(state, alpha_device, beta, seed, sweep, _mh_chunk(device),
                         self.mh_steps)
            else:
                sequential_sweep(state, alpha, beta, seed, sweep)
            tokens_done += corpus.n_tokens

            histograms = StateHistograms(state)  # shared by a prior update and the joint
            if self.optimize_interval is not None and sweep > self.burn_in \
                    and sweep % self.optimize_interval == 0:
                others = memory.other_documents(corpus) if online and memory else []
                own = (*histograms.documents, *corpus.length_counts)
                alpha = optimize_alpha([own, *others], alpha, collective=collective)
                beta = optimize_beta(histograms.words, state.n_k, corpus.n_features, beta)
                alpha_device = torch.as_tensor(alpha, dtype=torch.float32, device=device)
            if sweep in sample_sweeps:
                run.keep(state, alpha, beta)
            if self.snapshot_interval is not None and sweep % self.snapshot_interval == 0:
                snapshots.append(
                    Snapshot(sweep, state.topic_word(beta).cpu().numpy(), np.array(alpha, copy=True))
                )
            if sweep % self.evaluate_every == 0 or sweep == run.last:
                ll = log_joint(state, alpha, beta, histograms)
                trace.append(ll)
                trace_tokens.append(n_tokens)
                trace_sweeps.append(sweep)
                if self.verbose and (collective is None or collective.rank == 0):
                    elapsed = time.perf_counter() - tic
                    print(
                        f"[LDAGibbs] sweep {sweep:5d}  "
                        f"{tokens_done / max(elapsed, 1e-9) / 1e6:7.2f} M tokens/s  "
                        f"log p(w,z)/token {ll / max(n_tokens, 1):.4f}",
                        flush=True,
                    )
                    tic = time.perf_counter()
                    tokens_done = 0
            done = sweep
            if stop_now(stop, collective):
                break

        self.components_, self.doc_topic_ = run.estimates(state, alpha, beta)
        self.doc_topic_prior_ = np.asarray(alpha, dtype=np.float64).copy()
        self.topic_word_prior_ = float(beta)
        self.log_likelihood_trace_ = np.asarray(trace, dtype=np.float64)
        self.log_likelihood_n_tokens_ = np.asarray(trace_tokens, dtype=np.int64)
        self.log_likelihood_sweeps_ = np.asarray(trace_sweeps, dtype=np.int64)
        self.n_iter_ = done
        self.algorithm_ = algorithm
        if self.snapshot_interval is not None:
            self.snapshots_ = snapshots
        self._transform_seed = int(seed)
        self._topic_tokens = state.n_k.cpu().numpy().astype(np.int64)
        interrupted = done < run.last
        # An interrupted run keeps what finishing it needs (its topics, its sums).
        self._interrupted_run = run.detach() if interrupted else None
        if online or self.warm_start or interrupted:
            if memory is None or not online:
                memory = ChainMemory(np.zeros((X.shape[1], K), dtype=np.int32))
            memory.record(state)
        else:
            memory = None
        self._memory = memory
        return self

    def _memory_for(self, online, warm, n_components, beta):
        """The chain memory a call starts from (``None``: none is kept)."""
        if not warm:
            return None
        memory = getattr(self, "_memory", None)
        if memory is None and online:
            # partial_fit after a fit that kept no chain: its topics stand for the
            # earlier data.
            tokens = getattr(self, "_topic_tokens", None)
            if tokens is None:
                tokens = np.full(n_components, self.n_train_tokens_ / n_components)
            memory = ChainMemory.from_topics(self.components_, tokens, beta)
        return memory

    def _trace_tokens(self):
        """Tokens behind each entry of ``log_likelihood_trace_``."""
        tokens = getattr(self, "log_likelihood_n_tokens_", None)
        if tokens is None:  # a model pickled before the per-entry record
            tokens = np.full(len(self.log_likelihood_trace_), self.n_train_tokens_)
        return tokens

    def _may_lose_kernel(self):
        """Whether ``algorithm="auto"`` chose the parallel sweep for a kernel of its own
        at a K where, without it, it would have chosen MH (so a failed kernel switches
        the fit to MH)."""
        return self.algorithm == "auto" and self.n_components >= _AUTO_MH_FROM

    # --------------------------------------------------------------- inference
    def _transform(self, X):
        device = self.device_
        if compiled_path(device, "transform"):
            from .._kernels._pool import torch_on_one_thread

            with torch_on_one_thread():
                doc_topic = run_compiled("transform", lambda: self._transform_compiled(X))
            if doc_topic is not FAILED:
                return doc_topic
        word_topic = torch.as_tensor(self.components_.T, dtype=torch.float32,
                                     device=device).contiguous()
        alpha = torch.as_tensor(self.doc_topic_prior_, dtype=torch.float64)
        seed = getattr(self, "_transform_seed", 0)
        generator = make_generator(seed, device)
        n_iter = self.transform_max_iter
        # Documents in blocks: the sampler's state is a few (documents, K) tables, and
        # the cells' layout a few arrays per cell.
        rows = max(1, device_budget(device, _TRANSFORM_ELEMENTS) // self.n_components)
        cells_per_block = device_budget(device, _TRANSFORM_CELLS)
        chunk_elements = device_budget(device, _INFER_CHUNK_ELEMENTS)
        doc_topic = np.empty((X.shape[0], self.n_components))
        for start, stop in document_blocks(X.indptr, rows, cells_per_block):
            cells = CellCorpus(X[start:stop], device)
            theta = infer_doc_topic(cells, word_topic, alpha, n_iter, n_iter // 2, generator,
                                    chunk_elements)
            doc_topic[start:stop] = theta.cpu().numpy()
        return doc_topic

    def _transform_compiled(self, X):
        """``transform`` by the compiled CPU kernel: collapsed Gibbs per document, the
        documents shared out over ``n_jobs`` threads, in blocks of documents (memory
        beyond the output stays bounded)."""
        key = stream_key(getattr(self, "_transform_seed", 0), STREAMS["transform"], 0)
        word_topic = np.ascontiguousarray(self.components_.T, dtype=np.float32)
        alpha = np.asarray(self.doc_topic_prior_, dtype=np.float32)
        doc_topic = np.empty((X.shape[0], self.n_components))
        for first, last in evaluation_blocks(X):
            _infer_block(X[first:last], word_topic, alpha, self.transform_max_iter, key,
                         doc_topic[first:last])
        return doc_topic

    def _generative_view(self):
        return _lda_view(self.components_, self.doc_topic_prior_)


def _infer_block(X, word_topic, alpha, n_iter, key, out):
    """``out`` (a view of the output): the compiled transform of the documents of ``X``
    on ``n_jobs`` threads."""
    from .._kernels._infer import infer_documents
    from .._kernels._pool import run_over

    # A document's random numbers are keyed by its counts and drawn for its tokens in
    # column order: one canonical form (sorted, no duplicates, no explicit zeros)
    # whatever the caller's matrix looks like.
    X = sp.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    X.data = np.rint(X.data)
    X.eliminate_zeros()
    doc_keys = bits(torch.from_numpy(document_keys(X)), key).numpy()
    X = sp.csr_matrix((X.data.astype(np.int64), X.indices, X.indptr), shape=X.shape)
    run_over(lambda start, stop: infer_documents(X, word_topic, alpha, n_iter, n_iter // 2,
                                                 doc_keys, out, start, stop),
             offsets=np.cumsum(np.r_[0, X.sum(1).A1]))


def _agreed_algorithm(algorithm, asked, collective):
    """The sampler every rank of a data-parallel fit runs. ``"auto"`` may resolve
    differently where the ranks' hardware differs (a kernel of its own on one rank,
    torch operations on another): the parallel sweep only where every rank has its own
    kernel for it, else MH. An explicit choice must be the same on every rank."""
    if asked == "auto":
        everywhere = collective.sum(int(algorithm == "parallel")) == collective.world_size
        algorithm = "parallel" if everywhere else "mh"
    collective.same_everywhere("The sampler (algorithm)", algorithm)
    return algorithm
