"""Parameter and attribute descriptions shared by the AVITM and ProdLDA docstrings
(and, through :mod:`._pam_docs`, by PAMVI's and MoLDA's)."""

from ..utils._docstring import N_JOBS

ENCODER_AND_TRAINING = """
hidden_sizes : tuple of int, default=(100, 100)
    Widths of the inference network's hidden layers (AVITM: 100-100).
activation : {"softplus", "relu", "tanh", "elu", "selu"}, default="softplus"
    Hidden-layer non-linearity (AVITM: softplus).
learning_rate : float
    Adam step size.
adam_betas : tuple of float, default=(0.99, 0.999)
    Adam's (beta1, beta2). The high momentum beta1 = 0.99 is one of the
    paper's measures against component collapse.
max_iter : int or "auto", default="auto"
    Number of epochs. ``"auto"`` trains 50 epochs (PAMVI, MoLDA: 100), or more on a
    small corpus: enough for 1,000 optimiser steps (batches), since the topics form
    over steps, not epochs (140 documents in batches of 64 give 2 steps an epoch);
    ProdLDA's steps fall with the documents' mean length ``L`` and ``K``:
    ``2,000,000 / (K L)`` within [300, 1,000]. A ``fit`` that ends after fewer than a
    quarter of those steps (cumulated over warm fits) issues a
    :class:`~sklearn.exceptions.ConvergenceWarning`. Under ``warm_start`` each
    ``fit`` adds ``max_iter`` epochs, each ``partial_fit`` one epoch, and
    ``n_iter_`` accumulates.
bn_momentum : float, default=1e-3
    Running-average momentum of the batch norms (TF ``decay=0.999``).
bn_eps : float, default=1e-3
    Batch-norm epsilon (TF default).
bn_statistics : {"recompute", "running"}, default="recompute"
    How inference normalises. ``"recompute"`` measures the batch-norm
    statistics exactly over the training documents at the end of fit (the
    running averages converge far too slowly at momentum 1e-3);
    ``"running"`` uses the running averages, as the PyTorch ports do.
clip_grad_norm : float or None, default=None
    Clip the gradient's global norm to this value.
validation_fraction : float or None, default=None
    Hold out this fraction of the documents to report ``valid_loss`` per
    epoch and stop early when it has not improved by ``tol`` for
    ``n_iter_no_change`` epochs. None trains on everything for ``max_iter``
    epochs.
n_iter_no_change : int, default=10
    Patience of early stopping (only with ``validation_fraction``).
tol : float, default=1e-4
    Minimum improvement of ``valid_loss`` for early stopping.
warm_start : bool, default=False
    Continue from the previous fit's parameters instead of re-initialising:
    ``fit`` trains ``max_iter`` more epochs. After an interrupted fit (Ctrl-C,
    see Notes), a warm ``fit`` on the same data with the same ``max_iter``
    finishes the interrupted run instead: the remaining epochs, with its seed,
    which give the fit an uninterrupted run with the same data, ``max_iter``
    and other parameters would have given (identical at a given number of
    threads). On other data or with another ``max_iter`` it starts a new run;
    only those two are compared, so changing other parameters in between still
    continues the old run, which then need not match any uninterrupted run.
callbacks : list of skorch callbacks or None, default=None
    Extra ``(name, callback)`` pairs or callbacks forwarded to the private
    skorch net (``history_`` holds what they record).
device : {"auto", "cpu", "cuda"}, str or torch.device, default="auto"
    Where to train. ``"auto"`` uses CUDA when available. Fitted attributes
    are numpy arrays and the model pickles to a CPU-only machine.
{N_JOBS}random_state : int, RandomState instance or None, default=None
    Seeds initialisation, batch order, dropout and the reparameterisation
    noise. An int gives bit-identical fits on the CPU for a given number of
    threads (``n_jobs``); another number of threads changes the order of
    floating-point sums, so the results differ in the last digits and then
    drift apart over training. torch's global RNG is left untouched.
verbose : int, default=0
    ``1`` prints one line per epoch (loss, seconds).
"""

ENCODER_AND_TRAINING = ENCODER_AND_TRAINING.replace("{N_JOBS}", N_JOBS.lstrip("\n"))

FITTED_ATTRIBUTES = """
components_ : ndarray of shape (n_components, n_features)
    Topic-word distributions, rows sum to 1.
doc_topic_prior_ : ndarray of shape (n_components,)
    The Dirichlet parameter whose Laplace approximation is the prior.
topic_word_prior_ : None
    The topic-word matrix is a point estimate without prior.
n_iter_ : int
    Epochs run, cumulated under ``warm_start`` and ``partial_fit``. A
    ``partial_fit`` call is one epoch of the shard it is given, so 100 passes
    over a corpus streamed as 4 shards read 400.
net_ : skorch.NeuralNet
    The private skorch net owning the torch module and optimiser.
history_ : skorch.history.History
    One row per epoch: ``train_loss`` (the training objective per document,
    the negative ELBO), ``valid_loss`` (with ``validation_fraction``), ``dur``
    (seconds), and ``train_tokens_per_document`` (``valid_tokens_per_document``):
    the mean number of tokens of the training (validation) documents of the
    ``fit`` or ``partial_fit`` call that ran the epoch, by which the per-document
    losses divide into per-token ones.
device_ : torch.device
    The device the model was trained on.
n_features_in_ : int
    Number of words seen during fit.
feature_names_in_ : ndarray of shape (`n_features_in_`,)
    Names of the words seen during fit, when ``X`` had string column names.
n_train_tokens_ : float
    Tokens of the last ``fit`` / ``partial_fit`` data (for per-token curves).
n_train_documents_ : int
    Documents of the last ``fit`` / ``partial_fit`` data.
"""

COUNT_POLICY = """
Input is a non-negative document-term count matrix, sparse or dense. Fractional
entries are used as weights (for example tf-idf-like re-weightings), which the
likelihood treats as counts; ``fit`` says so once with a
:class:`~sktopics.utils.FractionalCountsWarning`, since tf-idf is usually a
mistake for a count model (filter the warning when it is meant). Documents
without tokens are ignored by ``fit`` and get the prior mean in ``transform``.
Training and inference read the matrix's non-zeros only, one mini-batch at a
time; it is never densified.
"""



def batch_parameters(batch_size, batch_sampling):
    """The ``batch_size`` and ``batch_sampling`` entries, with a class's defaults."""
    return f"""
batch_size : int, default={batch_size}
    Documents per mini-batch (the original AVITM code: 200).
batch_sampling : {{"with_replacement", "shuffle"}}, default="{batch_sampling}"
    ``"with_replacement"`` (the original code) draws ``n // batch_size``
    batches of ``batch_size`` documents with replacement per epoch;
    ``"shuffle"`` visits a fresh permutation of the documents per epoch.
"""


FREE_BITS = """
free_bits : float, default=0.25
    Nats of the KL term per latent dimension left free in training ("free
    bits", Kingma et al. 2016): a dimension whose KL, averaged over the
    mini-batch, is below ``free_bits`` counts ``free_bits`` instead and is
    not pulled towards the prior. On short documents (titles, posts) at 20
    topics or more the KL term otherwise draws every document to the prior:
    nearly uniform proportions and the same rare words in every topic. On
    longer documents, with the default ``doc_topic_prior``, no dimension comes
    near the floor and training is the same as with ``0``, the ELBO itself,
    which the original code trains on (``from_preset("avitm")``).
    ``train_loss`` in ``history_`` is the objective trained on; ``valid_loss``,
    ``score`` and the evaluation use the ELBO.
"""


INTERRUPTS = """
**Interrupts.** The first Ctrl-C during ``fit`` or ``partial_fit`` ends
training after the current epoch: the estimator keeps the model of the epochs
done (``n_iter_`` counts them), and the ``KeyboardInterrupt`` is raised again
once the model is consistent, so that a loop around ``fit`` stops too. A warm
``fit`` then finishes the run (``warm_start``). A second Ctrl-C stops at once
and leaves the estimator as it was before the call: the half epoch of updates
is undone with the rest of the call (weights, optimiser state and history are
put back).
"""

