"""Screen PAMVI training variants in one fit (rounds 2 and 4 of pam_diagnosis.md).

Usage: ``python research/pam_screen.py {20ng,nips,bbc} EPOCHS '{json}'``. The JSON holds
PAMVI/MoLDA parameters (``"cls": "MoLDA"`` for MoLDA, ``"seed"``) plus experimental switches
applied by patching (not estimator options): ``x_kl_warmup`` (epochs of a linear 0 -> 1 KL
weight, per batch), ``x_klw`` (a fixed KL weight), ``x_lr`` (``"cosine"`` or ``"linear"``
decay over the run) with ``x_lr_min`` (final fraction), ``x_mc`` (posterior samples per
document in training), ``x_l2_mu_bn`` (with ``logvar_norm="l2"``: keep batch norm on the mean
head), ``x_mu_l2`` (per-document centred l2 normalisation of the mean head, RMS = value),
``x_product`` (fourth round of pam_diagnosis.md: ProdLDA's product-of-experts decoder on the leaf
weights, ``log softmax(BN(theta_leaf @ beta) + b)``, ``b`` initialised by ``shift_init``;
``word_gain`` is ignored), ``x_prod_gain`` (with it: a learnable per-word gain on the
batch-normed logits), ``x_plain`` (mixture decoder without the batch norm across topics,
``phi = softmax(beta + b)``; the gain is unused), ``x_fixed_shift`` (the mixture decoder's
shift ``b`` frozen at its ``shift_init`` value), ``x_topic_entropy`` (add this weight times
the sum of the sub-topics' entropies to each document's loss: a sharpening penalty, not an
ELBO), ``x_background`` (fifth round of pam_diagnosis.md: the initial weight ``lam`` of a background
word distribution mixed into the decoder, ``p(w | d) = lam * bg_w + (1 - lam) * theta_d @ phi``
with ``bg`` the training split's empirical unigram distribution (fixed) and ``lam =
sigmoid(a)`` one global learnable scalar; the topics read out stay ``phi``; 0 = off),
``x_bg_fixed`` (with it: ``lam`` frozen at its initial value; a diagnostic).
Seventh round: ``x_dirichlet`` (``"exp"`` or ``"softplus"``: exact Dirichlet node posteriors
with concentrations ``exp(x_dir_scale * m)`` or ``softplus(m)`` of the batch-normed mean head
``m``, sampled by torch's implicit reparameterisation, analytic Dirichlet KL; the log-variance
head is unused), ``x_dir_alpha`` / ``x_dir_subalpha`` (the Dirichlet priors of the root and of
the other nodes; ``x_dir_priors``: a JSON file with per-edge ``alpha`` and ``subalpha``
lists for a 4-PAM instead; ``x_dir_anneal``: epochs over which the priors move
geometrically from 1 to their target), ``x_dir_learn`` (``"sub"`` or ``"all"``: learn those
priors, one concentration per edge, by the ELBO), ``x_dir_nobn`` (no batch norm on the mean head),
``x_svi`` (semi-amortised training, Krishnan et al. 2018: refine each document's means and
log-variances by this many Adam steps of size ``x_svi_lr`` on its ELBO with the decoder
frozen; the decoder learns from the refined posteriors, the encoder from its own ELBO with
the decoder frozen, or with ``x_svi_enc="regress"`` by regression onto the refined values;
the printed loss is then the sum of the two terms), ``x_eb`` (``"laplace"`` or ``"means"``:
tomotopy's learned ``subalpha``, Minka's fixed point on the rounded expected sub-level counts
after each epoch from ``x_eb_start`` (default 2), setting the sub level's Laplace prior, or
only its means). Eighth round: ``x_iwae`` (train on the importance-weighted bound of Burda et
al. 2016 with this many samples per document instead of the ELBO), ``x_init_topics`` (path of
a ``.npy`` topic-word matrix, e.g. tomotopy's or PLSA's: the decoder starts exactly at those
topics), ``x_freeze_decoder`` (epochs at the start during which the decoder is frozen and
only the encoder learns), ``x_save`` (pickle the fitted estimator to this path).
Prints one ``RESULT`` line: test NPMI (eps / zero), TD, rarely used sub-topics, topics with
>= 3 of the corpus's 20 most frequent training words in their top 10 (``freq3``), per-level KL
and active units, final loss and fit seconds (not a timing benchmark); with ``x_background``
the learned ``lam``; with
``x_product`` also the NPMI / TD of two other read-outs of the topics than
``softmax(beta)``: ``std`` (``beta`` standardised per word with the frozen batch-norm
statistics) and ``pure`` (``p(w | theta = e_k)``, the standardised logits plus the shift).
"""

import json
import math
import pickle
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common, bench_pam
from _common import load_pam_corpus
from pam_objective import decoder_at
from skorch.callbacks import Callback
from torch import nn

import sktopics._neural._pam_modules as PM
from sktopics import PAMVI, MoLDA
from sktopics._neural._modules import ProductOfExpertsDecoder, TFBatchNorm
from sktopics.metrics import npmi_coherence, topic_diversity

torch.set_num_threads(1)
data, epochs = sys.argv[1], int(sys.argv[2])
over = json.loads(sys.argv[3]) if len(sys.argv) > 3 else {}
tr, te, X, Xt = load_pam_corpus(data)
WARM = over.pop("x_kl_warmup", 0)
KLW = over.pop("x_klw", 1.0)
LR = over.pop("x_lr", None)
LRMIN = over.pop("x_lr_min", 0.0)
MC = over.pop("x_mc", 1)
L2MU = over.pop("x_l2_mu_bn", False)
MUL2 = over.pop("x_mu_l2", 0)
PRODUCT = over.pop("x_product", False)
PLAIN = over.pop("x_plain", False)
FIXED_SHIFT = over.pop("x_fixed_shift", False)
ENT = over.pop("x_topic_entropy", 0.0)
PGAIN = over.pop("x_prod_gain", False)
BG = float(over.pop("x_background", 0.0))
BG_FIXED = over.pop("x_bg_fixed", False)
cls = over.pop("cls", "PAMVI")
LEARN_PRIOR = over.pop("x_learn_prior", "")
FREE_BITS = float(over.pop("x_free_bits", 0.0))
SHARED_TRUNK = over.pop("x_shared_trunk", False)
DIRICHLET = over.pop("x_dirichlet", "")
DIR_ALPHA = float(over.pop("x_dir_alpha", 1.0))
DIR_SUBALPHA = float(over.pop("x_dir_subalpha", 1.0))
DIR_SCALE = float(over.pop("x_dir_scale", 1.0))
DIR_NOBN = over.pop("x_dir_nobn", False)
DIR_LEARN = over.pop("x_dir_learn", "")
DIR_PRIORS = over.pop("x_dir_priors", "")
DIR_ANNEAL = float(over.pop("x_dir_anneal", 0))
if DIR_PRIORS:  # {"alpha": [k1], "subalpha": [[k2] * k1]}, e.g. tomotopy's learned priors
    with open(DIR_PRIORS) as f:
        _p = json.load(f)
    DIR_PRIORS = [torch.tensor([_p["alpha"]]), torch.tensor(_p["subalpha"])]
EB = over.pop("x_eb", "")
EB_START = int(over.pop("x_eb_start", 2))
SVI = int(over.pop("x_svi", 0))
SVI_LR = float(over.pop("x_svi_lr", 0.1))
SVI_ENC = over.pop("x_svi_enc", "elbo")
IWAE = int(over.pop("x_iwae", 0))
INIT_TOPICS = over.pop("x_init_topics", "")
FREEZE_DEC = int(over.pop("x_freeze_decoder", 0))
SAVE = over.pop("x_save", "")


def free_bits_kl(self, mus, logvars):
    """Kingma et al. (2016) free bits: each node's batch-mean KL counts as at least FREE_BITS."""
    total = 0.0
    for mu, logvar, mask, (mean, var) in zip(mus, logvars, self.masks(), self.priors()):
        kl = 0.5 * (logvar.exp() / var + (mean - mu) ** 2 / var - 1.0 - logvar + var.log())
        per_node = (kl * mask).sum(-1)  # (B, P)
        total = total + per_node.mean(0).clamp_min(FREE_BITS).sum()
    return total


def neg_elbo(self, x, y_pred):
    lw, mus, logvars = y_pred
    kl = free_bits_kl(self, mus, logvars) if FREE_BITS else self.kl(mus, logvars)
    loss = PM.reconstruction_nll(x, lw) + KLW * getattr(self, "kl_weight", 1.0) * kl
    if self.training and self.topic_word_prior_per_document > 0:  # topic_word_prior
        loss = loss - PM.topic_word_log_prior(self.decoder.log_topic_word(),
                                              self.topic_word_prior_per_document)
    if ENT:  # penalty on the sub-topics' entropies (not an ELBO)
        phi = self.decoder.topic_word()
        loss = loss - ENT * (phi * torch.log(phi + 1e-12)).sum()
    return loss


def forward(self, x, generator=None):
    mus, logvars = self.encoder(x)
    n = MC if self.training else 1
    out = 0
    for _ in range(n):
        hs = [self.sample(mu, lv, generator) for mu, lv in zip(mus, logvars)]
        out = out + self.decoder(self.theta_dropout(self.reach(self.node_probs(hs))[-1]))
    return out / n, mus, logvars


PM.PAMVAE.negative_elbo = neg_elbo
PM.PAMVAE.forward = forward


def iwae_forward(self, x, generator=None):
    """Importance-weighted bound (Burda et al. 2016) with IWAE samples, kept in ``_iwae``."""
    mus, logvars = self.encoder(x)
    if not self.training:
        return forward(self, x, generator)
    log_weights = []
    for _ in range(IWAE):
        hs = [self.sample(mu, lv, generator) for mu, lv in zip(mus, logvars)]
        lw = self.decoder(self.theta_dropout(self.reach(self.node_probs(hs))[-1]))
        log_w = (x * lw).sum(-1)
        for h, mu, lv, mask, (mean, var) in zip(hs, mus, logvars, self.masks(), self.priors()):
            log_prior = -0.5 * ((h - mean) ** 2 / var + var.log())
            log_q = -0.5 * ((h - mu) ** 2 / lv.exp() + lv)
            log_w = log_w + ((log_prior - log_q) * mask).flatten(1).sum(-1)
        log_weights.append(log_w)
    self._iwae = torch.logsumexp(torch.stack(log_weights), 0) - math.log(IWAE)
    return lw, mus, logvars


def iwae_neg_elbo(self, x, y_pred):
    if not self.training:
        return neg_elbo(self, x, y_pred)
    loss = -self._iwae
    if self.topic_word_prior_per_document > 0:
        loss = loss - PM.topic_word_log_prior(self.decoder.log_topic_word(),
                                              self.topic_word_prior_per_document)
    return loss


if INIT_TOPICS:
    PM.GainMixtureDecoder.__init__ = decoder_at(np.load(INIT_TOPICS), frozen=False)

if IWAE:
    PM.PAMVAE.forward = iwae_forward
    PM.PAMVAE.negative_elbo = iwae_neg_elbo

_vinit = PM.PAMVAE.__init__


def learned_prior_init(self, *args, **kwargs):
    """Empirical-Bayes priors: the Laplace means (and log-variances) become parameters."""
    _vinit(self, *args, **kwargs)
    first = 0 if LEARN_PRIOR.startswith("all") else 1
    for level in range(first, self.n_levels):
        mean = getattr(self, f"prior_mean_{level}")
        var = getattr(self, f"prior_var_{level}")
        delattr(self, f"prior_mean_{level}")
        self.register_parameter(f"prior_mean_{level}", nn.Parameter(mean.clone()))
        if LEARN_PRIOR.endswith("var"):
            delattr(self, f"prior_var_{level}")
            self.register_parameter(f"prior_logvar_{level}", nn.Parameter(var.log().clone()))


def learned_priors(self):
    out = []
    for level in range(self.n_levels):
        mean = getattr(self, f"prior_mean_{level}")
        if hasattr(self, f"prior_logvar_{level}"):
            var = getattr(self, f"prior_logvar_{level}").exp()
        else:
            var = getattr(self, f"prior_var_{level}")
        out.append((mean, var))
    return out


if LEARN_PRIOR:
    PM.PAMVAE.__init__ = learned_prior_init
    PM.PAMVAE.priors = learned_priors


class MuL2(nn.Module):
    """Centre each node's mean logits over its children and fix their RMS (per document)."""

    def __init__(self, mask, rms):
        super().__init__()
        self.register_buffer("mask", torch.tensor(mask, dtype=torch.float32))
        self.rms = rms

    def forward(self, u):
        m = self.mask
        n = m.sum(-1, keepdim=True).clamp_min(1.0)
        u = u.view(u.shape[0], *m.shape)
        c = (u - (u * m).sum(-1, keepdim=True) / n) * m
        norm = torch.sqrt((c * c).sum(-1, keepdim=True) + 1e-6)
        return (self.rms * torch.sqrt(n) * c / norm).reshape(u.shape[0], -1)


_init = PM.LevelEncoder.__init__


def level_init(self, n_features, mask, hidden_sizes, activation, dropout, logvar_norm, bn_eps,
               bn_momentum):
    _init(self, n_features, mask, hidden_sizes, activation, dropout, logvar_norm, bn_eps, bn_momentum)
    if L2MU:
        self.mu_bn = TFBatchNorm(self.mu.out_features, bn_eps, bn_momentum)
    if MUL2:
        self.mu_bn = MuL2(mask, float(MUL2))
    if DIR_NOBN:
        self.mu_bn = nn.Identity()


PM.LevelEncoder.__init__ = level_init

_sinit = PM.StructuredEncoder.__init__


def shared_trunk_init(self, *args, **kwargs):
    """One hidden MLP for all levels, a pair of heads per level."""
    _sinit(self, *args, **kwargs)
    for level in self.levels[1:]:
        level.hidden = self.levels[0].hidden


def tied_mean_node_probs(self, x):
    """``softmax(mu)`` per node in float32 (functional_call refuses tied weights)."""
    mus, _ = self.encoder(x.float())
    return [p.double() for p in self.node_probs(mus)]


if SHARED_TRUNK:
    PM.StructuredEncoder.__init__ = shared_trunk_init
    PM.PAMVAE.mean_node_probs = tied_mean_node_probs


class ProductDecoder(ProductOfExpertsDecoder):
    """ProdLDA's decoder on the leaf weights, ``log softmax(g * BN(theta @ beta) + b)``.

    ``b`` (the batch norm's shift) starts at ``shift`` (``shift_init``); the per-word
    gain ``g`` exists only with ``x_prod_gain``. Topics are read out as ``softmax(beta)``.
    """

    def __init__(self, n_topics, n_features, bn_eps, bn_momentum, shift=None, gain=False):
        super().__init__(n_topics, n_features, bn_eps, bn_momentum)
        if shift is not None:
            with torch.no_grad():
                self.bn.bias.copy_(torch.as_tensor(shift, dtype=torch.float32))
        self.gain = nn.Parameter(torch.ones(n_features)) if gain else None

    def topic_word(self):
        return torch.softmax(self.beta, dim=-1)

    def forward(self, theta):
        out = self.bn(theta @ self.beta)
        if self.gain is not None:
            out = self.gain * (out - self.bn.bias) + self.bn.bias
        return torch.log_softmax(out, dim=-1)


def product_decoder(self, n_features):
    return ProductDecoder(self.structure_.n_leaf_topics, n_features, self.bn_eps,
                          self.bn_momentum, self._initial_shift, PGAIN)


if PRODUCT:
    PAMVI._build_decoder = product_decoder


def plain_topic_word(self):
    """Mixture decoder without the batch norm across topics: ``softmax(beta + b)``."""
    return torch.softmax(self.beta + self.bias, dim=-1)


if PLAIN:
    PM.GainMixtureDecoder.topic_word = plain_topic_word

_ginit = PM.GainMixtureDecoder.__init__


def fixed_shift_init(self, *args, **kwargs):
    _ginit(self, *args, **kwargs)
    self.bias.requires_grad_(False)


if FIXED_SHIFT:
    PM.GainMixtureDecoder.__init__ = fixed_shift_init

COUNTS = np.asarray(X.sum(axis=0), dtype=np.float64).ravel()
_binit = PM.GainMixtureDecoder.__init__


def background_init(self, *args, **kwargs):
    _binit(self, *args, **kwargs)
    log_bg = np.log(np.maximum(COUNTS / COUNTS.sum(), 1e-12))
    self.register_buffer("log_bg", torch.tensor(log_bg, dtype=self.bias.dtype))
    self.lam_logit = nn.Parameter(torch.tensor(math.log(BG / (1.0 - BG)), dtype=self.bias.dtype),
                                  requires_grad=not BG_FIXED)


def background_forward(self, theta):
    """``log(lam * bg + (1 - lam) * theta @ phi)``, computed with ``logaddexp``."""
    log_mix = torch.log(theta @ self.topic_word() + 1e-10)
    return torch.logaddexp(nn.functional.logsigmoid(self.lam_logit) + self.log_bg,
                           nn.functional.logsigmoid(-self.lam_logit) + log_mix)


if BG:
    PM.GainMixtureDecoder.__init__ = background_init
    PM.GainMixtureDecoder.forward = background_forward


def concentration(mu):
    """Dirichlet posterior concentrations from the (batch-normed) mean head."""
    if DIRICHLET == "softplus":
        return nn.functional.softplus(mu).clamp_min(1e-3)
    return torch.exp((DIR_SCALE * mu).clamp(-10.0, 10.0))


def dirichlet_forward(self, x, generator=None):
    """Exact Dirichlet node distributions, sampled with torch's implicit reparameterisation."""
    mus, logvars = self.encoder(x)
    probs = [torch.distributions.Dirichlet(concentration(mu)).rsample().clamp_min(1e-30)
             for mu in mus]
    leaf = self.reach(probs)[-1]
    return self.decoder(self.theta_dropout(leaf)), mus, logvars


def dirichlet_prior_init(self, *args, **kwargs):
    """Learned (empirical-Bayes) Dirichlet priors: one log-alpha per edge of the chosen levels."""
    _vinit(self, *args, **kwargs)
    first = 0 if DIR_LEARN == "all" else 1
    for level in range(first, self.n_levels):
        shape = getattr(self, f"mask_{level}").shape
        value = math.log(DIR_ALPHA if level == 0 else DIR_SUBALPHA)
        self.register_parameter(f"dir_log_alpha_{level}", nn.Parameter(torch.full(shape, value)))


def dirichlet_kl(self, mus, logvars):
    total = 0.0
    for level, mu in enumerate(mus):
        prior = torch.full_like(mu, DIR_ALPHA if level == 0 else DIR_SUBALPHA)
        if DIR_PRIORS:
            prior = DIR_PRIORS[level].to(mu).expand_as(mu)
        if DIR_ANNEAL:  # geometric path from priors 1 to the target priors
            prior = prior ** getattr(self, "prior_t", 1.0)
        if hasattr(self, f"dir_log_alpha_{level}"):
            prior = getattr(self, f"dir_log_alpha_{level}").exp().expand_as(mu)
        kl = torch.distributions.kl_divergence(torch.distributions.Dirichlet(concentration(mu)),
                                               torch.distributions.Dirichlet(prior))
        total = total + kl.sum(-1)
    return total


def dirichlet_mean_node_probs(self, x):
    mus, _ = self.encoder(x.float())
    return [(c / c.sum(-1, keepdim=True)).double() for c in map(concentration, mus)]


if DIRICHLET:
    PM.PAMVAE.forward = dirichlet_forward
    PM.PAMVAE.kl = dirichlet_kl
    PM.PAMVAE.mean_node_probs = dirichlet_mean_node_probs
    if DIR_LEARN:
        PM.PAMVAE.__init__ = dirichlet_prior_init


def _elbo_terms(self, x, mus, logvars, decoder_params=None, generator=None):
    hs = [self.sample(mu, lv, generator) for mu, lv in zip(mus, logvars)]
    leaf = self.theta_dropout(self.reach(self.node_probs(hs))[-1])
    if decoder_params is None:
        lw = self.decoder(leaf)
    else:
        lw = torch.func.functional_call(self.decoder, decoder_params, (leaf,))
    return PM.reconstruction_nll(x, lw) + self.kl(mus, logvars)


def svi_forward(self, x, generator=None):
    """Semi-amortised training (Krishnan et al. 2018): refine each document's variational
    parameters by SVI_LR-Adam steps on its ELBO before the decoder's update."""
    mus, logvars = self.encoder(x)
    if not self.training:
        self._svi_enc = (mus, logvars, None)
        hs = [self.sample(mu, lv, generator) for mu, lv in zip(mus, logvars)]
        return self.decoder(self.reach(self.node_probs(hs))[-1]), mus, logvars
    frozen = {k: v.detach() for k, v in self.decoder.named_parameters()}
    frozen.update({k: v for k, v in self.decoder.named_buffers()})
    params = [t.detach().clone().requires_grad_() for t in (*mus, *logvars)]
    n = len(mus)
    m1 = [torch.zeros_like(p) for p in params]
    m2 = [torch.zeros_like(p) for p in params]
    with torch.enable_grad():
        for step in range(1, SVI + 1):
            loss = _elbo_terms(self, x, params[:n], params[n:], frozen).sum()
            grads = torch.autograd.grad(loss, params)
            with torch.no_grad():
                for p, g, a, b in zip(params, grads, m1, m2):
                    a.mul_(0.9).add_(g, alpha=0.1)
                    b.mul_(0.999).addcmul_(g, g, value=0.001)
                    ah = a / (1 - 0.9 ** step)
                    bh = b / (1 - 0.999 ** step)
                    p.sub_(SVI_LR * ah / (bh.sqrt() + 1e-8))
    refined = [p.detach() for p in params]
    self._svi_refined = refined
    self._svi_enc = (mus, logvars, frozen)
    return None, mus, logvars


def svi_neg_elbo(self, x, y_pred):
    mus, logvars, frozen = self._svi_enc
    n = len(mus)
    if y_pred[0] is not None:  # evaluation
        return PM.reconstruction_nll(x, y_pred[0]) + self.kl(mus, logvars)
    decoder_loss = _elbo_terms(self, x, self._svi_refined[:n], self._svi_refined[n:])
    if SVI_ENC == "regress":
        enc = sum(((a - b) ** 2).sum((1, 2)) for a, b in zip((*mus, *logvars), self._svi_refined))
    else:
        enc = _elbo_terms(self, x, mus, logvars, frozen)
    return decoder_loss + enc


if SVI:
    PM.PAMVAE.forward = svi_forward
    PM.PAMVAE.negative_elbo = svi_neg_elbo


class EmpiricalBayesSubalpha(Callback):
    """tomotopy's learned ``subalpha`` for the VAE: after each epoch from ``x_eb_start`` on,
    Minka's fixed point on the rounded expected sub-level counts ``N_d r_d[s] theta_ds[k]``
    of the training documents (posterior means), then the sub level's Laplace prior from the
    new asymmetric alphas (``x_eb="laplace"``) or only its means (``x_eb="means"``)."""

    def __init__(self):
        self.alpha = None

    def on_epoch_end(self, net, **kw):
        if len(net.history) < EB_START:
            return
        from sktopics._generative import laplace_logistic_normal
        from sktopics._gibbs._hyper import optimize_alpha

        module = net.module_
        module.eval()
        reach, nodes = [], []
        with torch.no_grad():
            for start in range(0, X.shape[0], 2000):
                xb = torch.tensor(X[start:start + 2000].toarray())
                probs = module.mean_node_probs(xb)
                reach.append(probs[0][:, 0, :])
                nodes.append(probs[1])
        module.train()
        reach, nodes = torch.cat(reach), torch.cat(nodes)
        lengths = torch.tensor(np.asarray(X.sum(1)).ravel(), dtype=torch.float64)
        n_super, n_sub = nodes.shape[1:]
        if self.alpha is None:
            self.alpha = [torch.ones(n_sub, dtype=torch.float64) for _ in range(n_super)]
        means, variances = module.prior_mean_1.clone(), module.prior_var_1.clone()
        for s in range(n_super):
            counts = torch.round(lengths[:, None] * reach[:, s, None] * nodes[:, s, :])
            self.alpha[s] = optimize_alpha(counts.to(torch.int64), self.alpha[s])
            m, v = laplace_logistic_normal(self.alpha[s].numpy())
            means[s] = torch.as_tensor(m, dtype=means.dtype)
            if EB == "laplace":
                variances[s] = torch.as_tensor(v, dtype=variances.dtype)
        module.prior_mean_1.copy_(means)
        module.prior_var_1.copy_(variances)
        a = torch.stack(self.alpha)
        print(f"  epoch {len(net.history)}: subalpha {float(a.min()):.4f}-{float(a.max()):.4f}, "
              f"sums {[round(float(x), 2) for x in a.sum(1)]}", flush=True)


class Schedule(Callback):
    """Per-batch KL warm-up and learning-rate decay over the whole fit."""

    def __init__(self, total):
        self.total = total

    def on_train_begin(self, net, X=None, **kw):
        self.n_batches = math.ceil(len(X) / net.batch_size)
        self.step = 0
        self.lr0 = net.optimizer__lr

    def on_batch_begin(self, net, batch=None, training=False, **kw):
        if not training:
            return
        if FREEZE_DEC:
            frozen = self.step < self.n_batches * FREEZE_DEC
            for p in net.module_.decoder.parameters():
                p.requires_grad_(not frozen)
        p = min(1.0, self.step / (self.n_batches * self.total))
        if DIR_ANNEAL:
            net.module_.prior_t = min(1.0, self.step / (self.n_batches * DIR_ANNEAL))
        if WARM:
            net.module_.kl_weight = min(1.0, self.step / (self.n_batches * WARM))
        f = 1.0
        if LR == "cosine":
            f = LRMIN + (1 - LRMIN) * 0.5 * (1 + math.cos(math.pi * p))
        elif LR == "linear":
            f = 1 - (1 - LRMIN) * p
        for group in net.optimizer_.param_groups:
            group["lr"] = self.lr0 * f
        self.step += 1


structure = tuple(over.pop("structure", (2, 50) if cls == "PAMVI" else (10, 50)))
seed = over.pop("seed", 0)
Cls = MoLDA if cls == "MoLDA" else PAMVI
callbacks = [("schedule", Schedule(epochs))]
if EB:
    callbacks.append(("empirical_bayes", EmpiricalBayesSubalpha()))
m = Cls(structure, max_iter=epochs, random_state=seed, device="cpu", callbacks=callbacks, **over)
t = time.perf_counter()
m.fit(X)
secs = time.perf_counter() - t
if SAVE:
    with open(SAVE, "wb") as f:
        pickle.dump(m, f)
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    e = npmi_coherence(m.components_, Xt, top_n=10, zero_cooccurrence="epsilon").mean
    z = npmi_coherence(m.components_, Xt, top_n=10, zero_cooccurrence="zero").mean
use = m.transform_levels(X)[-1]
K = use.shape[1]
mod = m._module()
kls, aus = [], []
with torch.no_grad():
    mus, logvars = mod.encoder(torch.tensor(X[:3000].toarray()))
    for mu, lv, (pm, pv), mask in zip(mus, logvars, mod.priors(), mod.masks()):
        kl = (0.5 * (lv.exp() / pv + (mu - pm) ** 2 / pv - 1 + pv.log() - lv) * mask).mean(0)
        kls.append(round(float(kl.sum()), 1))
        aus.append(int(((mu.var(0) > 0.01) & mask).sum()))
td = topic_diversity(m.components_, top_n=10)
rare = int((use.mean(0) < 0.5 / K).sum())
top20 = set(np.argsort(-COUNTS)[:20].tolist())
freq3 = int(sum(len(top20 & set(np.argsort(-row)[:10].tolist())) >= 3 for row in m.components_))
readouts = ""
dec = mod.decoder
if BG:
    readouts += f" lam {torch.sigmoid(dec.lam_logit).item():.3f}"
if hasattr(dec, "bn"):  # product decoder: NPMI of other read-outs of the same fit
    with torch.no_grad():
        std = (dec.beta - dec.bn.running_mean) * torch.rsqrt(dec.bn.running_var + dec.bn.eps)
        std = std * (1.0 if dec.gain is None else dec.gain)
        for name, logits in (("std", std), ("pure", std + dec.bn.bias)):
            tw = torch.softmax(logits.double(), -1).numpy()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                re_ = npmi_coherence(tw, Xt, top_n=10, zero_cooccurrence="epsilon").mean
                rz = npmi_coherence(tw, Xt, top_n=10, zero_cooccurrence="zero").mean
            readouts += f" [{name}: {re_:.3f} / {rz:.3f} TD {topic_diversity(tw, top_n=10):.2f}]"
print(f"RESULT {data} ep{epochs} {sys.argv[3] if len(sys.argv) > 3 else ''} seed{seed}: "
      f"NPMI eps {e:.3f} zero {z:.3f} TD {td:.2f} rare(<0.5/K) {rare} freq3 {freq3} "
      f"maxshare {use.max(1).mean():.2f} KL {kls} AU {aus} "
      f"loss {m.history_[-1]['train_loss']:.1f} {secs:.0f}s{readouts}", flush=True)
