"""Shared plumbing of the neural topic models (AVITM and ProdLDA, and through
:class:`~._pam_base.PAMTopicModel` PAMVI and MoLDA): the skorch net, batch-norm
freezing, device placement, transform, score and the generative view."""

import copy
from numbers import Integral, Real

import numpy as np
import torch
from sklearn.exceptions import ConvergenceWarning
from skorch.helper import predefined_split

from .._base import BaseTopicModel
from .._generative import GenerativeView, LogisticNormalPrior, laplace_logistic_normal
from ..utils._distributed import current_collective, on_rank_zero
from ..utils._fingerprint import count_fingerprint
from ..utils._generators import make_generator, rng_scope, seed_generators
from ..utils._modules import FrozenModule, evaluation_mode
from ..utils._sklearn_compat import Interval, StrOptions
from ..utils._validation import check_doc_topic_prior
from ..utils._warnings import warn
from ._convergence import auto_steps, undertrained
from ._data import CSRBatchIterator, CSRDataset, natural_batches
from ._modules import (
    ACTIVATIONS,
    InferenceNetwork,
    TFBatchNorm,
    TopicVAE,
    float64_call,
    float64_state,
)
from ._net import EpochMonitor, TopicNet
from ._norm_statistics import measure_batch_norms

__all__ = ["NeuralTopicModel"]

#: Documents per batch at inference (transform, score, statistics).
_INFERENCE_BATCH = 2048

#: The fused Adam kernel (CPU support since torch 2.4) halves the optimiser's cost.
_FUSED_ADAM = (
    {"optimizer__fused": True}
    if tuple(int(p) for p in torch.__version__.split(".")[:2]) >= (2, 4)
    else {}
)


class NeuralTopicModel(BaseTopicModel):
    """Base class of the logistic-normal VAE topic models: AVITM, ProdLDA and
    :class:`~._pam_base.PAMTopicModel` (PAMVI, MoLDA).

    Subclasses define ``_build_decoder(n_features)`` and ``_likelihood()`` (for the
    generative view); ``_topic_word()`` reads the decoder's ``topic_word()`` (mixture
    decoders) unless overridden (ProdLDA).
    """

    _parameter_constraints = {
        **BaseTopicModel._parameter_constraints,
        "doc_topic_prior": [Interval(Real, 0, None, closed="neither"), "array-like"],
        "hidden_sizes": ["array-like"],
        "activation": [StrOptions(set(ACTIVATIONS))],
        "dropout": [Interval(Real, 0, 1, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "adam_betas": [tuple, list],
        "batch_size": [Interval(Integral, 2, None, closed="left")],
        "max_iter": [Interval(Integral, 0, None, closed="left"), StrOptions({"auto"})],
        "batch_sampling": [StrOptions({"with_replacement", "shuffle"})],
        "bn_momentum": [Interval(Real, 0, 1, closed="both")],
        "bn_eps": [Interval(Real, 0, None, closed="neither")],
        "bn_statistics": [StrOptions({"recompute", "running"})],
        "shared_noise": ["boolean"],
        "free_bits": [Interval(Real, 0, None, closed="left")],
        "clip_grad_norm": [None, Interval(Real, 0, None, closed="neither")],
        "validation_fraction": [None, Interval(Real, 0, 1, closed="neither")],
        "n_iter_no_change": [Interval(Integral, 1, None, closed="left")],
        "tol": [Interval(Real, 0, None, closed="left")],
        "warm_start": ["boolean"],
        "callbacks": [None, list],
    }

    _partial_fit_options = {"epochs": 1}
    _data_parallel = True
    _fit_step = "epoch"

    #: Epochs of ``max_iter="auto"`` on a corpus large enough for its steps.
    _auto_epochs = 50
    #: Whether ``max_iter="auto"``'s steps follow the documents' length and K
    #: (:func:`~._convergence.auto_steps`).
    _steps_by_length = False

    #: Named parameter sets of :meth:`from_preset` (subclasses fill it in).
    PRESETS = {}

    @classmethod
    def from_preset(cls, name, **params):
        """An estimator configured by a named preset, with ``params`` overriding it.

        A preset only sets ordinary constructor parameters, so the result clones,
        pickles and grid-searches like any other instance. ``PRESETS`` lists
        them; the class docstring describes each.

        Parameters
        ----------
        name : str
            A key of the class's ``PRESETS``.
        **params
            Any constructor parameter, applied on top of the preset.

        Returns
        -------
        model : estimator
            An unfitted estimator of this class.
        """
        if name == "diverse":  # the name the defaults had while they were a preset
            raise ValueError(f"The 'diverse' preset became {cls.__name__}'s defaults: use "
                             f"{cls.__name__}(...) without a preset.")
        if name not in cls.PRESETS:
            raise ValueError(f"Unknown preset {name!r} for {cls.__name__}; choose one of "
                             f"{sorted(cls.PRESETS)}.")
        return cls(**{**cls.PRESETS[name], **params})

    # ----------------------------------------------------------------- fitting
    def _fit(self, X, seed, *, warm, epochs=None, stop=None):
        X = X.astype(np.float32)
        X = X[np.flatnonzero(np.asarray(X.sum(axis=1)).ravel() > 0)]
        collective = current_collective()
        warm = warm and hasattr(self, "net_")
        # A warm fit after an interrupted one, on the same data with the same plan,
        # finishes that run, with its seed.
        fingerprint = count_fingerprint(X)
        run = getattr(self, "_interrupted_run", None) if warm and epochs is None else None
        if run is not None and (run["fingerprint"] != fingerprint
                                or run["max_iter"] != self.max_iter):
            run = None
        if collective is not None:  # resumed on every rank, or on none
            resumed = collective.sum(int(run is not None)) == collective.world_size
            run = run if resumed else None
        if run is not None:
            seed = run["seed"]
        try:  # data-parallel, a problem on one rank is raised on every rank
            if X.shape[0] < 2:
                raise ValueError(
                    f"{type(self).__name__} needs at least 2 documents with tokens to fit; "
                    f"got {X.shape[0]}."
                )
            train, valid = self._split_validation(X, seed)
            problem = None
        except ValueError as exc:
            if collective is None:
                raise
            problem = str(exc)
        if collective is not None:
            collective.agree(problem)
        self.doc_topic_prior_ = self._resolve_doc_topic_prior()
        # The noise (dropout, reparameterisation) continues one random stream across
        # warm fits and partial_fit calls instead of replaying the first call's.
        saved = getattr(self, "_rng_state", None) if warm else None
        with rng_scope(seed, self.device_, state=saved) as rng_state:
            if not warm:
                self.net_ = self._build_net(X.shape[1])
                self.net_.initialize()
            else:
                self._relocate(self.device_)  # the device parameter may have changed
            net = self.net_
            norms = [(m, m.use_running_stats) for m in net.module_.modules()
                     if isinstance(m, TFBatchNorm)]
            _set_frozen_batch_norm(net.module_, False)
            n_train = train.shape[0] if collective is None else collective.sum(train.shape[0])
            self._configure_module(net.module_, n_train_documents=n_train)
            if collective is not None:
                # The same initial weights on every rank (above, or from a warm
                # model), then each rank's own dropout and reparameterisation noise,
                # a new stream for each call.
                seed_generators(seed * 1_000_003 + collective.rank
                                + 7_919 * len(net.history), self.device_)
            n_batches = (None if collective is None else
                         _steps_per_epoch(train.shape[0], self, collective))
            first = len(net.history)
            if run is not None:
                last = run["last"]
            else:
                last = first + (self._epochs(train, collective) if epochs is None
                                else epochs)
            # Set after the collectives above: a failed one leaves no process group in
            # the model (it would not pickle). Reset when training ends, below.
            net.collective = collective
            net.module_.collective = collective  # the free-bits floor's global batch
            for norm, _ in norms:  # batch statistics over the global batch
                norm.collective = collective
            net.iterator_train__n_batches = n_batches
            # Plain attributes: skorch's set_params would re-initialise the net. A warm
            # fit takes the estimator's current batch size and sampling too.
            net.max_epochs = last - first
            net.batch_size = self.batch_size
            net.iterator_train__sampling = self.batch_sampling
            net.iterator_train__seed = seed
            net.iterator_train__first_epoch = first
            net.train_split = None if valid is None else predefined_split(CSRDataset(valid))
            monitor = dict(net.callbacks_)["monitor"]
            monitor.prepare(stop, train, valid, None if run is None else run["monitor"])
            before = _TrainingState(net, norms) if warm else None
            try:
                try:
                    net.partial_fit(CSRDataset(train))
                finally:
                    net.train_split = None  # keeps validation data out of pickles
                    net.collective = None
                    net.module_.collective = None
                    for norm, _ in norms:
                        norm.collective = None
                    monitor.prepare(None, None, None, None)
                if stop is not None and stop.presses > 1:
                    # skorch swallowed the second Ctrl-C half-way through an epoch.
                    raise KeyboardInterrupt("stopped at once by a second Ctrl-C")
                self._rng_state = rng_state()
                done = len(net.history)
                interrupted = stop is not None and stop.requested and done < last
                self._interrupted_run = (
                    {"seed": seed, "last": last, "max_iter": self.max_iter,
                     "fingerprint": fingerprint, "monitor": monitor.progress()}
                    if interrupted else None
                )
                self._freeze_batch_norm(train, seed)
                self.components_ = self._topic_word()
            except BaseException:
                if before is not None:  # the estimator's attributes are restored too
                    before.restore(net)
                raise
        self.n_iter_ = len(net.history)
        self.topic_word_prior_ = None
        if epochs is None or not warm:  # once per fit: fit and the first partial_fit
            self._warn_if_collapsed(train)  # on every rank: it reads every rank's documents
        if collective is None or collective.rank == 0:  # warnings on one rank
            if epochs is None and not interrupted:  # fit only: partial_fit is an epoch
                stopped_early = (monitor.n_iter_no_change is not None and monitor
                                 .epochs_without_improvement_ >= monitor.n_iter_no_change)
                problem = undertrained(self, net.history, first, last - first, stopped_early)
                if problem:
                    warn(problem, ConvergenceWarning)
        return self

    def _epochs(self, train, collective):
        """The epochs a ``fit`` on the documents ``train`` runs: ``max_iter``, or for
        ``"auto"`` enough of them for :func:`~._convergence.auto_steps` optimiser
        steps, and at least ``_auto_epochs``."""
        if self.max_iter != "auto":
            return self.max_iter
        n_train, tokens = train.shape[0], float(train.sum())
        if collective is None:
            per_epoch = natural_batches(n_train, self.batch_size, self.batch_sampling)
        else:  # every rank's documents
            per_epoch = _steps_per_epoch(n_train, self, collective)
            n_train, tokens = collective.sum(n_train), collective.sum(tokens)
        steps = auto_steps(self, tokens / max(n_train, 1))
        return max(self._auto_epochs, -(-steps // per_epoch))

    def _model_arrays(self):
        yield from super()._model_arrays()
        for tensor in self.net_.module_.state_dict().values():
            yield tensor.detach().cpu().numpy()

    def _configure_module(self, module, n_train_documents):
        """Hook run before each fit's training, once the module exists (no-op here)."""

    def _topic_word(self):
        with torch.no_grad():
            topic_word = self.net_.module_.decoder.topic_word().double().cpu().numpy()
        return topic_word / topic_word.sum(axis=1, keepdims=True)

    def _resolve_doc_topic_prior(self):
        return check_doc_topic_prior(self.doc_topic_prior, self.n_components)

    def _split_validation(self, X, seed):
        if self.validation_fraction is None:
            return X, None
        n_valid = int(round(self.validation_fraction * X.shape[0]))
        if n_valid < 2 or X.shape[0] - n_valid < 2:
            raise ValueError(
                f"validation_fraction={self.validation_fraction} leaves fewer than 2 "
                f"documents on one side of the split of {X.shape[0]} documents."
            )
        order = np.random.default_rng(seed).permutation(X.shape[0])
        return X[np.sort(order[n_valid:])], X[np.sort(order[:n_valid])]

    def _build_module(self, n_features):
        """The torch module: ``forward(x, generator=None)`` returns the ``y_pred`` of
        the loss, ``negative_elbo(x, y_pred)`` the loss per document."""
        prior_mean, prior_var = laplace_logistic_normal(self.doc_topic_prior_)
        encoder = InferenceNetwork(
            n_features, self.n_components, tuple(self.hidden_sizes), self.activation,
            self.dropout, self.bn_eps, self.bn_momentum,
        )
        return TopicVAE(
            encoder, self._build_decoder(n_features), prior_mean, prior_var,
            theta_dropout=self.dropout, shared_noise=self.shared_noise,
        )

    def _build_net(self, n_features):
        module = self._build_module(n_features)
        monitor = EpochMonitor(
            verbose=self.verbose,
            n_iter_no_change=self.n_iter_no_change if self.validation_fraction else None,
            tol=self.tol,
            estimator_name=type(self).__name__,
        )
        callbacks = [("monitor", monitor)]
        if self.clip_grad_norm is not None:
            from skorch.callbacks import GradientNormClipping

            callbacks.append(("clip", GradientNormClipping(self.clip_grad_norm)))
        callbacks += list(self.callbacks or [])
        return TopicNet(
            module=module,
            criterion=torch.nn.Identity,
            optimizer=torch.optim.Adam,
            optimizer__lr=self.learning_rate,
            optimizer__betas=tuple(self.adam_betas),
            **_FUSED_ADAM,
            batch_size=self.batch_size,
            max_epochs=self.max_iter,
            train_split=None,
            iterator_train=CSRBatchIterator,
            iterator_train__sampling=self.batch_sampling,
            iterator_train__device=self.device_,
            iterator_valid=CSRBatchIterator,
            iterator_valid__sampling="sequential",
            iterator_valid__batch_size=_INFERENCE_BATCH,
            iterator_valid__device=self.device_,
            callbacks=callbacks,
            warm_start=True,
            device=self.device_,
            verbose=0,
        )

    def _freeze_batch_norm(self, X, seed):
        """Replace the half-converged running averages by exact training-set statistics.

        The encoder's batch norms are measured first (dropout off); the decoder's
        then sees theta sampled from the now-frozen encoder, as in training.
        """
        module = self.net_.module_
        module.eval()
        if self.bn_statistics == "running":
            _set_frozen_batch_norm(module, True)
            return
        measure_batch_norms(module, lambda: self._batches(X),
                            make_generator(seed, self.device_), current_collective())

    def _relocate(self, device):
        """Move the net (module, optimiser state, iterators) to ``device``.

        The parameters keep their identity (``Module.to`` moves them in place), so
        the optimiser still holds them; reloading its own state dict casts the
        state to the parameters' device following torch's policy (fused Adam keeps
        its step counters there too).
        """
        net = getattr(self, "net_", None)
        if net is None:
            return
        net.module_.to(device)
        optimizer = getattr(net, "optimizer_", None)
        if optimizer is not None:
            optimizer.load_state_dict(optimizer.state_dict())
        net.device = device
        net.iterator_train__device = device
        net.iterator_valid__device = device

    # --------------------------------------------------------------- inference
    def _batches(self, X):
        iterator = CSRBatchIterator(
            CSRDataset(X), _INFERENCE_BATCH, sampling="sequential", device=self._device()
        )
        for batch, _ in iterator:
            yield batch

    def _device(self):
        return getattr(self, "device_", torch.device("cpu"))

    def _transform(self, X):
        doc_topic = np.empty((X.shape[0], self.n_components))
        start = 0
        with torch.no_grad(), evaluation_mode(self.net_.module_) as module:
            state = float64_state(module.encoder)  # float64: the same in any batch
            for batch in self._batches(X):
                mu, _ = float64_call(module.encoder, batch, state=state)
                stop = start + mu.shape[0]
                doc_topic[start:stop] = torch.softmax(mu.double(), dim=-1).cpu().numpy()
                start = stop
        empty = np.asarray(X.sum(axis=1)).ravel() <= 0
        doc_topic[empty] = self.doc_topic_prior_ / self.doc_topic_prior_.sum()
        doc_topic /= doc_topic.sum(axis=1, keepdims=True)
        return doc_topic

    def _generative_view(self):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "components_")
        mean, var = laplace_logistic_normal(self.doc_topic_prior_)
        return GenerativeView(
            prior=LogisticNormalPrior(mean, var, approximates=self.doc_topic_prior_.copy()),
            likelihood=self._likelihood(),
            n_features=self.n_features_in_,
            proposal=EncoderProposal(self.net_.module_.encoder),
        )

    # ------------------------------------------------------------- reporting
    @property
    def history_(self):
        """Training history (a :class:`skorch.history.History`), read-only."""
        return self.net_.history

    def _warn_if_collapsed(self, X=None):
        """Warn when the fitted topics look collapsed (``X``: the training counts, for
        checks that read documents). Data-parallel, every rank calls it (the checks
        read every rank's documents) and rank 0 warns."""
        n_topics, n_words = self.components_.shape
        if n_topics < 4 or n_words < 10 * n_topics or not on_rank_zero():
            return
        top = np.argsort(-self.components_, axis=1, kind="stable")[:, :10]
        diversity = np.unique(top).size / top.size
        if diversity < 0.25:
            warn(
                f"{type(self).__name__}: the topics look collapsed (only {diversity:.0%} "
                f"of the top-10 words are distinct across topics). {self._collapse_advice()}",
                UserWarning)

    def _collapse_advice(self):
        return ("Train longer, raise learning_rate or keep batch norm and dropout on (see the "
                "user guide).")


class EncoderProposal:
    """The amortised posterior q(h | x) of a fitted encoder, as ``x -> (loc, scale)``.

    Holds a frozen copy of the encoder (:class:`~sktopics.utils._modules.FrozenModule`),
    so that evaluating on any device never moves or switches the estimator's own.
    """

    def __init__(self, encoder):
        self.encoder = FrozenModule(encoder)

    def __call__(self, x):
        with torch.no_grad():  # in float64: a document's result is the same in any batch
            mu, logvar = self.encoder.on(x.device, torch.float64)(x.to(torch.float64))
        loc, scale = self._flat(mu, logvar)
        return loc.to(x.dtype), scale.to(x.dtype)

    def _flat(self, mu, logvar):
        """The encoder's output as the view's flat ``(loc, scale)``."""
        return mu, torch.exp(0.5 * logvar)


def _steps_per_epoch(n_documents, estimator, collective):
    """The steps of a data-parallel epoch: as many on every rank, the fewest any rank's
    documents give (the global batch is every rank's batch together)."""
    local = natural_batches(n_documents, estimator.batch_size, estimator.batch_sampling)
    return -int(collective.max_(torch.tensor([-local]))[0])


class _TrainingState:
    """A copy of what training changes in a net (weights, buffers, optimiser state,
    history, which statistics the batch norms use), to put back when a warm fit fails
    half-way."""

    def __init__(self, net, frozen_norms):
        self.module = copy.deepcopy(net.module_.state_dict())
        self.optimizer = copy.deepcopy(net.optimizer_.state_dict())
        self.n_epochs = len(net.history)
        self.frozen_norms = frozen_norms

    def restore(self, net):
        net.module_.load_state_dict(self.module)
        net.optimizer_.load_state_dict(self.optimizer)
        del net.history[self.n_epochs:]
        for norm, frozen in self.frozen_norms:
            norm.use_running_stats = frozen


def _set_frozen_batch_norm(module, frozen):
    for norm in module.modules():
        if isinstance(norm, TFBatchNorm):
            norm.use_running_stats = frozen
