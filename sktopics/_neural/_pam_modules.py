"""torch modules of aviPAM (PAMVI) and MoLDA: the structured encoder and the PAM VAE.

The structured inference network has **one MLP per internal level** of the DAG
(Srivastava & Sutton, aviPAM). The MLP of level ``l`` outputs the logistic-normal
parameters of all that level's node distributions at once, shape
``(batch, parents, children)``. After reparameterised sampling and a per-node
softmax over the node's children (masked edges get probability 0), the mixing
weights are passed down by batched products ``reach (B, 1, P) @ theta (B, P, C)``;
the decoder multiplies the leaf-topic weights by the topic-word matrix.

Each MLP is AVITM's :class:`~._modules.InferenceNetwork` (encoder trunk, Glorot
init, batch-normed heads); :class:`StructuredEncoder` runs all of them as one batched
network. ``logvar_norm`` swaps the normalisation of the heads:

* ``"batchnorm"``: TF-style batch norm on the mean and log-variance heads (AVITM);
* ``"l2"``: the paper's batch-free variant on log sigma^2, ``u -> g * u / ||u||``
  per node (no centring, no shift, learnable gain ``g``); the mean head is
  left unnormalised, so a document's posterior never depends on its batch;
* ``"none"``: no normalisation (prone to component collapse; for comparison).

Maths only: imports torch, never scikit-learn or skorch.
"""

import torch
from torch import nn

from ._losses import gaussian_kl, mixture_nll, topic_word_log_prior
from ._modules import ACTIVATIONS, Dropout, MixtureDecoder, TFBatchNorm, float64_call
from ._sparse import InputLinear, SparseRows

__all__ = [
    "LOGVAR_NORMS",
    "L2Normalization",
    "StructuredEncoder",
    "GainMixtureDecoder",
    "ConcatMixtureDecoder",
    "PAMVAE",
]

LOGVAR_NORMS = ("batchnorm", "l2", "none")


class L2Normalization(nn.Module):
    """``u -> gain * u / ||u||_2`` per node over its children (aviPAM's l2 variant).

    The input has shape ``(B, P * C)``; the norm runs over each node's ``C``
    unmasked coordinates, so each document is normalised on its own. The gain is
    initialised to ``sqrt(C)``, which gives unit root-mean-square outputs like a
    batch norm.
    """

    def __init__(self, mask, eps=1e-6):
        super().__init__()
        self.register_buffer("mask", torch.tensor(mask, dtype=torch.float32))
        n_children = self.mask.sum(-1, keepdim=True).clamp_min(1.0)
        self.gain = nn.Parameter(torch.sqrt(n_children).expand_as(self.mask).clone())
        self.eps = eps

    def forward(self, u):
        u = u.view(u.shape[0], *self.mask.shape) * self.mask
        norm = torch.sqrt((u * u).sum(-1, keepdim=True) + self.eps)
        return (self.gain * u / norm).reshape(u.shape[0], -1)


class _BatchedLinear(nn.Module):
    """``L`` independent linear layers of one shape applied to ``(L, B, n_in)`` at once
    (one batched product), each Glorot-initialised."""

    def __init__(self, n_levels, n_in, n_out):
        super().__init__()
        self.weight = nn.Parameter(torch.zeros(n_levels, n_in, n_out))
        self.bias = nn.Parameter(torch.zeros(n_levels, 1, n_out))
        with torch.no_grad():
            for weight in self.weight:
                nn.init.xavier_uniform_(weight)

    def forward(self, x):
        return torch.baddbmm(self.bias, x, self.weight)


class _LevelHeads(nn.Module):
    """Each level's heads, a linear layer of its own width reading its own level's
    hidden units: ``(L, B, n_in)`` to ``(B, sum n_out)``, the levels side by side.

    One product per level: the levels' widths differ by orders of magnitude (2
    super-topics against 50 x 100 edges), so a single batched product padded to the
    widest would spend most of its arithmetic, and of the optimiser's, on padding.
    """

    def __init__(self, n_in, n_out):
        super().__init__()
        self.weights = nn.ParameterList(nn.Parameter(torch.zeros(n_in, n)) for n in n_out)
        self.biases = nn.ParameterList(nn.Parameter(torch.zeros(n)) for n in n_out)

    def forward(self, x):
        return torch.cat([torch.addmm(bias, x_level, weight)
                          for x_level, weight, bias in zip(x, self.weights, self.biases)], dim=1)


class StructuredEncoder(nn.Module):
    """One MLP per internal level of the DAG, run as one batched network.

    Level ``l``'s MLP is AVITM's :class:`~._modules.InferenceNetwork` with
    ``P_l * C_l`` outputs per head. Instead of one small operation per level and
    layer, the first layers of every level are one sparse product (their weights
    side by side), the later layers one batched product each, the heads one
    product per level, and the heads' normalisations one batch norm over every
    level's outputs (batch norm is per coordinate, so this is the same function).
    ``forward(x)`` returns ``(mus, logvars)``, one ``(B, P_l, C_l)`` tensor per
    level (views of the heads' output, no copies).
    """

    def __init__(self, n_features, masks, hidden_sizes, activation, dropout, logvar_norm,
                 bn_eps, bn_momentum):
        super().__init__()
        if logvar_norm not in LOGVAR_NORMS:
            raise ValueError(f"logvar_norm must be one of {LOGVAR_NORMS}; got {logvar_norm!r}.")
        self.shapes = [tuple(int(n) for n in mask.shape) for mask in masks]
        self.sizes = [n_parents * n_children for n_parents, n_children in self.shapes]
        n_levels, hidden_sizes = len(masks), tuple(hidden_sizes)
        head_sizes = [2 * size for size in self.sizes]  # mean, then log-variance
        # Glorot for each level's own layer (without a hidden layer, the first layer is
        # every level's mean and log-variance heads, two layers each)
        blocks = ([hidden_sizes[0]] * n_levels if hidden_sizes
                  else [size for size in self.sizes for _ in range(2)])
        self.first = InputLinear(n_features, sum(blocks))
        with torch.no_grad():
            for block in torch.split(self.first.weight, blocks, dim=1):
                nn.init.xavier_uniform_(block)
        self.activation = ACTIVATIONS[activation]()
        self.hidden = nn.ModuleList(
            _BatchedLinear(n_levels, n_in, n_out)
            for n_in, n_out in zip(hidden_sizes, hidden_sizes[1:])
        )
        self.dropout = Dropout(dropout)
        self.heads = None
        if hidden_sizes:
            self.heads = _LevelHeads(hidden_sizes[-1], head_sizes)
            with torch.no_grad():
                # Glorot per head (the mean and log-variance heads are two layers). The
                # first draw, over both heads, is overwritten: it keeps the random stream,
                # and so a seed's initial weights, as they were with padded heads.
                for weight in self.heads.weights:
                    nn.init.xavier_uniform_(weight)
                for weight, size in zip(self.heads.weights, self.sizes):
                    nn.init.xavier_uniform_(weight[:, :size])
                    nn.init.xavier_uniform_(weight[:, size:])
        self.norm = TFBatchNorm(sum(head_sizes), bn_eps, bn_momentum) if logvar_norm == "batchnorm" else None
        self.logvar_norms = (
            nn.ModuleList(L2Normalization(mask) for mask in masks) if logvar_norm == "l2" else None
        )

    def _heads(self, x):
        """Every level's mean and log-variance heads, side by side, ``(B, sum 2 P C)``."""
        if self.heads is None:  # no hidden layer: the heads read the (dropped-out) counts
            if self.dropout.training and self.dropout.p > 0:
                x = self.dropout(x.to_dense() if isinstance(x, SparseRows) else x)
            return self.first(x)
        n_levels, width = len(self.sizes), self.first.weight.shape[1] // len(self.sizes)
        hidden = self.activation(self.first(x))
        hidden = hidden.view(-1, n_levels, width).transpose(0, 1)  # (L, B, width)
        for layer in self.hidden:
            hidden = self.activation(layer(hidden))
        return self.heads(self.dropout(hidden))

    def forward(self, x):
        out = self._heads(x)
        if self.norm is not None:
            out = self.norm(out)
        # one split into every level's two heads (its backward is one concatenation)
        parts = torch.split(out, [size for size in self.sizes for _ in range(2)], dim=1)
        mus, logvars = [], []
        for level, shape in enumerate(self.shapes):
            mu, logvar = parts[2 * level], parts[2 * level + 1]
            if self.logvar_norms is not None:
                logvar = self.logvar_norms[level](logvar)
            mus.append(mu.view(-1, *shape))
            logvars.append(logvar.view(-1, *shape))
        return tuple(mus), tuple(logvars)


class GainMixtureDecoder(MixtureDecoder):
    """AVITM's mixture decoder with a learnable per-word gain on the batch-normed logits.

    ``phi = softmax(g * BN(beta) + b)``, ``g`` initialised to 1 (``word_gain=False``
    keeps AVITM's ``softmax(BN(beta) + b)``). The batch norm across topics gives every
    word's logits unit spread over the topics, so generic words must be specific to
    some topic; the gain lets such words spread evenly (``g -> 0``) while keeping the
    normalisation's conditioning.

    ``shift`` (optional, shape ``(n_features,)``) is the initial value of the
    per-word shift ``b`` (AVITM: zeros).
    """

    def __init__(self, n_topics, n_features, bn_eps, word_gain=True, shift=None):
        super().__init__(n_topics, n_features, bn_eps)
        self.gain = nn.Parameter(torch.ones(n_features)) if word_gain else None
        if shift is not None:
            with torch.no_grad():
                self.bias.copy_(torch.as_tensor(shift, dtype=self.bias.dtype))

    def logits(self):
        if self.gain is None:
            return super().logits()
        return self.gain * self.normed_beta() + self.bias


class ConcatMixtureDecoder(nn.Module):
    """Several :class:`GainMixtureDecoder` side by side (MoLDA's components).

    Each component normalises its own topic matrix (batch norm across its topics
    for each word, then a softmax); the leaf weights cover all components' topics.
    """

    def __init__(self, n_topics, n_features, bn_eps, word_gain=True, shift=None):
        super().__init__()
        self.parts = nn.ModuleList(
            GainMixtureDecoder(k, n_features, bn_eps, word_gain, shift) for k in n_topics
        )

    def topic_word(self):
        return torch.cat([part.topic_word() for part in self.parts], dim=0)

    def log_topic_word(self):
        return torch.cat([part.log_topic_word() for part in self.parts], dim=0)

    def forward(self, theta):
        return torch.log(theta @ self.topic_word() + 1e-10)

    def nll(self, theta, x):
        return mixture_nll(theta, self.topic_word(), x)


class PAMVAE(nn.Module):
    """Structured VAE of a layered PAM: encoder, per-node sampling, path products, decoder.

    ``forward(x)`` returns ``(reconstruction, mus, logvars)`` with one
    ``(B, P, C)`` tensor per level in ``mus`` and ``logvars``;
    :meth:`negative_elbo` turns that into the per-document loss (reconstruction
    plus one Gaussian KL per node, masked edges excluded, and the share of the
    topics' log prior when ``topic_word_prior_per_document`` is set). The Laplace priors and
    the masks live in buffers.

    Parameters
    ----------
    encoder : StructuredEncoder
    decoder : GainMixtureDecoder or ConcatMixtureDecoder
    masks : list of bool arrays, one ``(P, C)`` per level
    prior_means, prior_vars : list of arrays, one ``(P, C)`` per level
    theta_dropout : float
        Dropout on the leaf-topic weights, as AVITM applies it to theta.
    """

    def __init__(self, encoder, decoder, masks, prior_means, prior_vars, theta_dropout):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder
        self.theta_dropout = Dropout(theta_dropout)
        # Dirichlet(eta) on the topics, spread over the training documents: eta / n_train.
        self.topic_word_prior_per_document = 0.0
        self.n_levels = len(masks)
        for level, (mask, mean, var) in enumerate(zip(masks, prior_means, prior_vars)):
            self.register_buffer(f"mask_{level}", torch.tensor(mask, dtype=torch.bool))
            self.register_buffer(f"prior_mean_{level}", torch.as_tensor(mean, dtype=torch.float32))
            self.register_buffer(f"prior_var_{level}", torch.as_tensor(var, dtype=torch.float32))
        # Levels whose every edge exists skip the masking (the default dense DAG).
        self.dense_levels = tuple(bool(mask.all()) for mask in self.masks())

    def masks(self):
        return [getattr(self, f"mask_{level}") for level in range(self.n_levels)]

    def priors(self):
        return [(getattr(self, f"prior_mean_{level}"), getattr(self, f"prior_var_{level}"))
                for level in range(self.n_levels)]

    # ---------------------------------------------------------------- pieces
    def node_probs(self, hs):
        """Per-node softmax over unmasked children of each level's ``(B, P, C)`` logits."""
        return [torch.softmax(h if dense else h.masked_fill(~mask, float("-inf")), dim=-1)
                for h, mask, dense in zip(hs, self.masks(), self.dense_levels)]

    @staticmethod
    def reach(node_probs):
        """Marginal probability of each node, level by level (batched products)."""
        reach = node_probs[0][:, 0, :]
        marginals = [reach]
        for probs in node_probs[1:]:
            reach = torch.bmm(reach.unsqueeze(1), probs).squeeze(1)
            marginals.append(reach)
        return marginals

    def sample(self, mu, logvar, generator=None):
        noise = (torch.randn_like(mu) if generator is None else
                 torch.randn(mu.shape, generator=generator, device=mu.device, dtype=mu.dtype))
        return mu + torch.exp(0.5 * logvar) * noise

    # ---------------------------------------------------------------- forward
    def forward(self, x, generator=None):
        mus, logvars = self.encoder(x)
        hs = [self.sample(mu, logvar, generator) for mu, logvar in zip(mus, logvars)]
        leaf = self.reach(self.node_probs(hs))[-1]
        return self.decoder.nll(self.theta_dropout(leaf), x), mus, logvars

    def mean_node_probs(self, x, state=None):
        """Node distributions at the posterior means, ``softmax(mu)`` (inference read-out).

        Computed in float64 (:func:`~._modules.float64_call`, with ``state`` if
        given: the encoder's :func:`~._modules.float64_state`), so that a document's
        proportions do not depend, even at float32 round-off level, on the other
        documents of its batch.
        """
        x = x if isinstance(x, SparseRows) else x.double()
        mus, _ = float64_call(self.encoder, x, state=state)
        return self.node_probs(mus)

    def kl(self, mus, logvars):
        """Sum over every node of KL(q(h_node | x) || Laplace prior), per document."""
        total = 0.0
        for mu, logvar, mask, (mean, var), dense in zip(mus, logvars, self.masks(), self.priors(),
                                                        self.dense_levels):
            mean, var = mean.to(mu.dtype), var.to(mu.dtype)
            if not dense:  # masked edges carry no latent: set them to the prior, where KL is 0
                mu = torch.where(mask, mu, mean)
                logvar = torch.where(mask, logvar, torch.log(var))
            total = total + gaussian_kl(
                mu.flatten(1), logvar.flatten(1), mean.flatten(), var.flatten()
            )
        return total

    def negative_elbo(self, x, y_pred):
        """Per-document negative ELBO: reconstruction NLL plus the nodes' KLs.

        In training, minus the topics' log prior is added to every document's loss
        in the share ``topic_word_prior_per_document`` (MAP topics); validation
        losses stay the plain negative ELBO.
        """
        reconstruction, mus, logvars = y_pred
        loss = reconstruction + self.kl(mus, logvars)
        if self.training and self.topic_word_prior_per_document > 0:
            log_prior = topic_word_log_prior(self.decoder.log_topic_word(),
                                             self.topic_word_prior_per_document)
            loss = loss - log_prior
        return loss
