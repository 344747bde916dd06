"""torch modules of the neural topic models: encoder, decoders, TF-style batch norm.

Maths only: imports torch, never scikit-learn or skorch.
"""

import torch
import torch.nn.functional as F
from torch import nn

from ._losses import gaussian_kl, mixture_nll, product_of_experts_nll, reconstruction_nll
from ._sparse import InputLinear, SparseRows

__all__ = [
    "float64_call",
    "float64_state",
    "Dropout",
    "TFBatchNorm",
    "InferenceNetwork",
    "ProductOfExpertsDecoder",
    "MixtureDecoder",
    "TopicVAE",
    "ACTIVATIONS",
]

ACTIVATIONS = {
    "softplus": nn.Softplus,
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "elu": nn.ELU,
    "selu": nn.SELU,
}


def float64_state(module):
    """A float64 copy of ``module``'s floating-point parameters and buffers, by name."""
    return {name: value.double() if value.is_floating_point() else value
            for name, value in module.state_dict(keep_vars=True).items()}


def float64_call(module, *args, state=None):
    """``module(*args)`` in float64: with :func:`float64_state` (``state`` if given,
    made once for the batches of a call), the module itself unchanged.

    Inference reads documents in batches, and float32 products of a batch differ in
    their last bits with its shape (BLAS blocks them by the number of rows): in
    float64 a document's result no longer depends, within 1e-7 relative and far
    below, on the batch it was computed in.
    """
    state = float64_state(module) if state is None else state
    return torch.func.functional_call(module, state, args)


class Dropout(nn.Dropout):
    """``nn.Dropout`` with the mask drawn by ``rand`` (torch's CPU ``bernoulli_`` is
    four times slower on the small tensors of a VAE step)."""

    def forward(self, x):
        if not self.training or self.p == 0:
            return x
        return x * torch.rand_like(x).ge_(self.p).mul_(1.0 / (1.0 - self.p))


class TFBatchNorm(nn.Module):
    """Batch norm with TensorFlow-1 ``batch_norm`` defaults as AVITM used them.

    A learnable shift and no scale (``center=True, scale=False``), ``eps=1e-3`` and a
    running-average momentum of ``1e-3`` (TF's ``decay=0.999``).

    Normalisation uses the batch statistics while ``use_running_stats`` is False
    (during fit, in training and validation alike, like the original graph) and the
    stored statistics once the estimator has frozen them at the end of fit, so that
    single documents are handled correctly at inference.

    In a data-parallel fit the estimator sets ``collective``: training batches are
    then normalised with the statistics of every rank's batch together (the global
    batch), as ``SyncBatchNorm`` does; validation batches with those of every rank's
    validation documents (set up by :mod:`._norm_statistics` before each validation).
    """

    #: The process group of a data-parallel fit, or None.
    collective = None

    def __init__(self, num_features, eps=1e-3, momentum=1e-3):
        super().__init__()
        self.eps = eps
        self.momentum = momentum
        self.bias = nn.Parameter(torch.zeros(num_features))
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.use_running_stats = False
        self._accumulator = None

    def batch_statistics(self):
        """Whether a forward pass normalises with this process's batch's own statistics
        and only updates the running averages (training, no accumulation under way, and
        not synchronised with other ranks): what a fused kernel may compute itself."""
        return (self.training and self._accumulator is None
                and (self.collective is None or self.collective.world_size == 1))

    def forward(self, x):
        frozen = self.use_running_stats and not self.training
        if self._accumulator is not None:
            self._accumulate(x)
            frozen = False
        # The fused native kernel normalises with the batch statistics (training=True)
        # or the stored ones, and updates the running averages with ``momentum``. The
        # shift is added outside it: with ``weight=None`` the CUDA kernel's backward
        # returns an empty gradient for ``bias``, which autograd rejects.
        update = self.training and self.momentum > 0 and self._accumulator is None
        if (self.training and self._accumulator is None and self.collective is not None
                and self.collective.world_size > 1):
            return self._synchronised(x)
        return F.batch_norm(
            x,
            self.running_mean if (frozen or update) else None,
            self.running_var if (frozen or update) else None,
            training=not frozen,
            momentum=self.momentum,
            eps=self.eps,
        ) + self.bias

    def _synchronised(self, x):
        """Normalise with the global batch's statistics; the gradient flows through
        the sums to every rank's documents."""
        n_features = x.shape[1]
        local = torch.cat([x.sum(0, dtype=torch.float64), (x * x).sum(0, dtype=torch.float64),
                           x.new_full((1,), x.shape[0], dtype=torch.float64)])
        total = self.collective.sum_autograd(local)
        count = total[-1]
        mean = total[:n_features] / count
        var = (total[n_features:2 * n_features] / count - mean * mean).clamp_min(0.0)
        if self.momentum > 0:
            with torch.no_grad():  # running averages as F.batch_norm keeps them
                unbiased = var * count / (count - 1).clamp_min(1.0)
                self.running_mean.lerp_(mean.to(self.running_mean.dtype), self.momentum)
                self.running_var.lerp_(unbiased.to(self.running_var.dtype), self.momentum)
        scale = torch.rsqrt(var + self.eps)
        return ((x - mean.to(x.dtype)) * scale.to(x.dtype)) + self.bias

    # Exact statistics over a whole data set, accumulated batch by batch.
    def start_accumulating(self):
        self._accumulator = [0.0, 0.0, 0]

    def _accumulate(self, x):
        x = x.detach()  # summed in float64 without a float64 copy of the batch
        self._accumulator[0] = self._accumulator[0] + x.sum(0, dtype=torch.float64)
        self._accumulator[1] = self._accumulator[1] + (x * x).sum(0, dtype=torch.float64)
        self._accumulator[2] += x.shape[0]

    def stop_accumulating(self):
        total, total_sq, count = self._accumulator
        self._accumulator = None
        if count == 0:
            return
        mean = total / count
        var = (total_sq / count - mean * mean).clamp_min(0.0)
        self.running_mean.copy_(mean.to(self.running_mean.dtype))
        self.running_var.copy_(var.to(self.running_var.dtype))
        self.use_running_stats = True


def _glorot_linear(n_in, n_out):
    layer = nn.Linear(n_in, n_out)
    nn.init.xavier_uniform_(layer.weight)
    nn.init.zeros_(layer.bias)
    return layer


class InferenceNetwork(nn.Module):
    """q(h | x) = N(mu(x), diag exp(logvar(x))): an MLP with batch-normed heads.

    ``x`` is a dense ``(batch, words)`` tensor or a :class:`~._sparse.SparseRows`;
    the first layer is an :class:`~._sparse.InputLinear`.
    """

    def __init__(self, n_features, n_topics, hidden_sizes, activation, dropout, bn_eps,
                 bn_momentum):
        super().__init__()
        layers, n_in = [], n_features
        for size in hidden_sizes:
            linear = _glorot_linear if layers else InputLinear
            layers += [linear(n_in, size), ACTIVATIONS[activation]()]
            n_in = size
        layers.append(Dropout(dropout))
        self.hidden = nn.Sequential(*layers)
        self.mu = _glorot_linear(n_in, n_topics)
        self.logvar = _glorot_linear(n_in, n_topics)
        self.mu_bn = TFBatchNorm(n_topics, bn_eps, bn_momentum)
        self.logvar_bn = TFBatchNorm(n_topics, bn_eps, bn_momentum)

    def forward(self, x):
        if isinstance(x, SparseRows) and not isinstance(self.hidden[0], InputLinear):
            x = x.to_dense()  # no hidden layer: the heads read the counts
        hidden = self.hidden(x)
        return self.mu_bn(self.mu(hidden)), self.logvar_bn(self.logvar(hidden))


class ProductOfExpertsDecoder(nn.Module):
    """ProdLDA: log softmax(BN(theta @ beta) + background)."""

    def __init__(self, n_topics, n_features, bn_eps, bn_momentum, background=None):
        super().__init__()
        self.beta = nn.Parameter(nn.init.xavier_uniform_(torch.empty(n_topics, n_features)))
        self.bn = TFBatchNorm(n_features, bn_eps, bn_momentum)
        self.register_buffer(
            "background",
            torch.zeros(n_features) if background is None
            else torch.as_tensor(background, dtype=torch.float32),
        )

    def forward(self, theta):
        return torch.log_softmax(self.bn(theta @ self.beta) + self.background, dim=-1)

    def nll(self, theta, x):
        """Per-document ``-sum_w x_w log p_w``; in training, on non-zeros, in one fused pass."""
        if isinstance(x, SparseRows) and self.bn.batch_statistics():
            return product_of_experts_nll(theta @ self.beta, self.bn, self.background, x)
        return reconstruction_nll(x, self(theta))


class MixtureDecoder(nn.Module):
    """AVITM (NVLDA): log(theta @ softmax(BN(beta))), BN across topics for each word.

    The batch norm normalises the parameter ``beta`` itself, so it always uses
    ``beta``'s own per-word statistics and keeps no running averages.
    """

    def __init__(self, n_topics, n_features, bn_eps):
        super().__init__()
        self.beta = nn.Parameter(nn.init.xavier_uniform_(torch.empty(n_topics, n_features)))
        self.bias = nn.Parameter(torch.zeros(n_features))
        self.bn_eps = bn_eps

    def normed_beta(self):
        """The topic matrix batch-normed across topics, word by word (no affine)."""
        centred = self.beta - self.beta.mean(0)
        # not ``var(0)``: torch's CPU reduction across rows is ten times slower
        return centred * torch.rsqrt(centred.square().mean(0) + self.bn_eps)

    def logits(self):
        """Topic-word logits, ``(n_topics, n_features)``."""
        return self.normed_beta() + self.bias

    def topic_word(self):
        return torch.softmax(self.logits(), dim=-1)

    def log_topic_word(self):
        return torch.log_softmax(self.logits(), dim=-1)

    def forward(self, theta):
        return torch.log(theta @ self.topic_word() + 1e-10)

    def nll(self, theta, x):
        """Per-document ``-sum_w x_w log p_w`` (only at the non-zeros of a sparse ``x``)."""
        return mixture_nll(theta, self.topic_word(), x)


class TopicVAE(nn.Module):
    """Encoder, reparameterised logistic-normal sample, theta dropout, decoder.

    ``forward(x)`` returns ``(reconstruction, mu, logvar)``, the reconstruction term
    ``-sum_w x_w log p_w`` per document; :meth:`negative_elbo` adds the KL term. The
    fixed Laplace prior lives in buffers. In training the KL term leaves
    ``free_bits`` nats per latent dimension free (set by the estimator before each
    fit; see :func:`~._losses.gaussian_kl`); in evaluation it is the ELBO's own.
    """

    #: Nats of KL per latent dimension left free in training (0: the ELBO itself).
    free_bits = 0.0
    #: The process group of a data-parallel fit (the free-bits floor reads every
    #: rank's batch), or None.
    collective = None

    def __init__(self, encoder, decoder, prior_mean, prior_var, theta_dropout,
                 shared_noise=False):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.theta_dropout = Dropout(theta_dropout)
        self.shared_noise = shared_noise
        self.register_buffer("prior_mean", torch.as_tensor(prior_mean, dtype=torch.float32))
        self.register_buffer("prior_var", torch.as_tensor(prior_var, dtype=torch.float32))

    def negative_elbo(self, x, y_pred):
        """Per-document negative ELBO (with free bits in training)."""
        reconstruction, mu, logvar = y_pred
        free = self.free_bits if self.training else 0.0
        return reconstruction + gaussian_kl(mu, logvar, self.prior_mean, self.prior_var, free,
                                            self.collective)

    def sample_h(self, mu, logvar, generator=None):
        if generator is None and not (self.shared_noise and self.training):
            noise = torch.randn_like(mu)  # the same draws, and traceable for torch.compile
        else:
            shape = (1, mu.shape[1]) if self.shared_noise and self.training else mu.shape
            noise = torch.randn(shape, generator=generator, device=mu.device, dtype=mu.dtype)
        return mu + torch.exp(0.5 * logvar) * noise

    def forward(self, x, generator=None):
        mu, logvar = self.encoder(x)
        theta = torch.softmax(self.sample_h(mu, logvar, generator), dim=-1)
        return self.decoder.nll(self.theta_dropout(theta), x), mu, logvar
