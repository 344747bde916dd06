"""PAMVI diagnostics behind research/results/pam_diagnosis.md.

Usage: ``python research/pam_diagnostics.py {20ng,nips,bbc} EPOCHS CHUNK '{json}' [label]``.
The JSON holds PAMVI parameters plus experimental switches applied by patching the
built module (not estimator options): ``x_mu_norm="none"`` (mean heads without batch
norm), ``x_dec_bias=false`` (decoder without its per-word shift), ``x_dec_gain=true``
(learnable per-word gain on the decoder's batch-normed topic logits), ``x_mu_gain=g``
(learnable gain on the mean heads' batch norm, initial value g), ``x_mu_fix=g|"prior"``
(fixed gain), ``x_log=true`` (log1p input), ``x_kl_warmup=E`` (KL weight 0 -> 1 over E
epochs), ``x_lr="cosine"|"linear"|"onecycle"|"step"`` (learning-rate schedule over the run),
``x_samples=S`` (posterior samples per document), ``x_lv_gain=g`` (learnable gain on the
log-variance heads' batch norm, the paper's eq. 5), ``x_gain_init=g`` (initial decoder gain),
``x_bias_init="logfreq"`` (decoder shift at the log word frequencies; now the estimators'
default ``shift_init="log_frequency"``: pass ``"shift_init": "zeros"`` for the earlier default). Prints the test NPMI trace, per-level KL
and active units, super/sub-topic usage, duplicate topics and extreme sub-topics.
The runs in pam_diagnosis.md predate ``word_gain``: pass ``"word_gain": false`` to
reproduce their "default" rows (``x_dec_gain`` is now the estimators' default).
"""
import json
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

torch.set_num_threads(1)
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common, bench_pam
from _common import load_pam_corpus

from sktopics import PAMVI, MoLDA
from sktopics.metrics import npmi_coherence, topic_diversity

data, epochs, chunk = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
over = json.loads(sys.argv[4]) if len(sys.argv) > 4 else {}
tr, te, X, Xt = load_pam_corpus(data)
vocab = np.asarray(tr.feature_names)
cls = over.pop("cls", "PAMVI")
X_MU = over.pop("x_mu_norm", None); X_BIAS = over.pop("x_dec_bias", True); X_GAIN = over.pop("x_dec_gain", False); X_MUGAIN = over.pop("x_mu_gain", 0); X_MUFIX = over.pop("x_mu_fix", 0); X_LOG = over.pop("x_log", False)
X_LVGAIN = over.pop("x_lv_gain", 0); X_BINIT = over.pop("x_bias_init", None); X_GINIT = over.pop("x_gain_init", None); X_KLW = over.pop("x_kl_warmup", 0); X_LR = over.pop("x_lr", None); X_S = over.pop("x_samples", 1)
from skorch.callbacks import Callback
from torch import nn

import sktopics._neural._pamvi as P

_orig = P.PAMTopicModel._build_module
def _add_gain(bn, value):
    """A learnable gain (initial ``value``) on a shift-only batch norm's output."""
    bn.gain = nn.Parameter(torch.full_like(bn.bias, float(value)))
    f0 = bn.forward
    def fwd(x, bn=bn, f0=f0):
        return (f0(x) - bn.bias) * bn.gain + bn.bias
    bn.forward = fwd


def _patched(self, n_features):
    mod = _orig(self, n_features)
    if X_MU == "none":
        for lev in mod.encoder.levels:
            lev.mu_bn = nn.Identity()
    if X_MUGAIN:
        for lev in mod.encoder.levels:
            _add_gain(lev.mu_bn, X_MUGAIN)
    if X_LVGAIN:  # the paper's eq. 5: a learnable gain on the log-variance head's BN
        for lev in mod.encoder.levels:
            _add_gain(lev.logvar_bn, X_LVGAIN)
    if X_MUFIX:
        for l, lev in enumerate(mod.encoder.levels):
            bn = lev.mu_bn
            if X_MUFIX == "prior":
                g = getattr(mod, f"prior_var_{l}").sqrt().flatten()
            else:
                g = torch.full_like(bn.bias, float(X_MUFIX))
            bn.register_buffer("gain", g.clone())
            f0 = bn.forward
            def fwd(x, bn=bn, f0=f0):
                return (f0(x) - bn.bias) * bn.gain + bn.bias
            bn.forward = fwd
    if X_LOG:
        enc = mod.encoder
        f0 = enc.forward
        enc.forward = lambda x, f0=f0: f0(torch.log1p(x))
    if X_GAIN:
        parts = getattr(mod.decoder, "parts", [mod.decoder])
        for p in parts:
            p.gain = nn.Parameter(torch.ones(n_features))
            def tw(self=p):
                beta = self.beta
                normed = (beta - beta.mean(0)) * torch.rsqrt(beta.var(0, unbiased=False) + self.bn_eps)
                return torch.softmax(self.gain * normed + self.bias, dim=-1)
            p.topic_word = tw
    dec_parts = getattr(mod.decoder, "parts", [mod.decoder])
    if X_BINIT == "logfreq":  # decoder shift starts at the corpus's log unigram frequencies
        freq = np.asarray(X.sum(0)).ravel() + 1.0
        for p in dec_parts:
            b = torch.tensor(np.log(freq / freq.sum()), dtype=torch.float32)
            p.bias.data.copy_(b - b.mean())
    if X_GINIT is not None:
        for p in dec_parts:
            p.gain.data.fill_(float(X_GINIT))
    if not X_BIAS:
        parts = getattr(mod.decoder, "parts", [mod.decoder])
        for p in parts:
            del p.bias
            p.register_buffer("bias", torch.zeros(n_features))
    return mod
P.PAMTopicModel._build_module = _patched

import sktopics._neural._pam_modules as PM

_orig_nelbo = PM.PAMVAE.negative_elbo
def _nelbo(self, x, y_pred):
    log_word_probs, mus, logvars = y_pred
    w = getattr(self, "_kl_weight", 1.0) if self.training else 1.0
    return PM.reconstruction_nll(x, log_word_probs) + w * self.kl(mus, logvars)
PM.PAMVAE.negative_elbo = _nelbo
if X_S > 1:
    def _fwd(self, x, generator=None):
        mus, logvars = self.encoder(x)
        out = 0.0
        for _ in range(X_S):
            hs = [self.sample(mu, lv, generator) for mu, lv in zip(mus, logvars)]
            out = out + self.decoder(self.theta_dropout(self.reach(self.node_probs(hs))[-1]))
        return out / X_S, mus, logvars
    PM.PAMVAE.forward = _fwd


class Schedule(Callback):
    """Per-batch KL weight warm-up and learning-rate schedule over the whole run."""

    def __init__(self, total_epochs, steps_per_epoch, warmup, lr_policy, base_lr):
        self.total, self.spe, self.warmup = total_epochs, steps_per_epoch, warmup
        self.policy, self.base_lr = lr_policy, base_lr

    def on_epoch_begin(self, net, **kw):
        self.b = 0

    def on_batch_begin(self, net, training=False, **kw):
        if not training:
            return
        t = len(net.history) - 1 + min(self.b / self.spe, 1.0)  # epochs done
        self.b += 1
        if self.warmup:
            net.module_._kl_weight = min(1.0, t / self.warmup)
        if self.policy:
            f = t / self.total
            if self.policy == "cosine":
                lr = self.base_lr * 0.5 * (1 + np.cos(np.pi * f))
            elif self.policy == "linear":
                lr = self.base_lr * (1 - f)
            elif self.policy == "onecycle":  # 10 % linear warm-up, cosine decay
                lr = self.base_lr * (f / 0.1 if f < 0.1 else 0.5 * (1 + np.cos(np.pi * (f - 0.1) / 0.9)))
            elif self.policy.startswith("step"):  # step: x0.3 at 2/3 of the run
                lr = self.base_lr * (0.3 if f >= 2 / 3 else 1.0)
            for g in net.optimizer_.param_groups:
                g["lr"] = max(lr, self.base_lr * 0.02)
structure = tuple(over.pop("structure", (2, 50)))
if X_KLW or X_LR:
    spe = X.shape[0] // over.get("batch_size", 64)
    over["callbacks"] = [Schedule(epochs, spe, X_KLW, X_LR, over.get("learning_rate", 5e-3))]
if cls == "MoLDA":
    m = MoLDA(structure, warm_start=True, random_state=over.pop("seed", 0), device="cpu", **over)
else:
    m = PAMVI(structure, warm_start=True, random_state=over.pop("seed", 0), device="cpu", **over)
def coh(tw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return (npmi_coherence(tw, Xt, top_n=10, zero_cooccurrence="epsilon").mean,
                npmi_coherence(tw, Xt, top_n=10, zero_cooccurrence="zero").mean)
done, secs = 0, 0.0
while done < epochs:
    m.max_iter = min(chunk, epochs - done)
    t = time.perf_counter(); m.fit(X); secs += time.perf_counter() - t
    done += m.max_iter
    e, z = coh(m.components_)
    print(f"ep {done:3d} {secs:6.1f}s  NPMI eps {e:.3f} zero {z:.3f} TD {topic_diversity(m.components_, top_n=10):.2f} loss {m.history_[-1]['train_loss']:.1f}", flush=True)
# diagnostics
mod = m._module()
with torch.no_grad():
    xb = torch.tensor(X[:3000].toarray())
    mus, logvars = mod.encoder(xb)
    for l, (mu, lv, (pm, pv), mask) in enumerate(zip(mus, logvars, mod.priors(), mod.masks())):
        kl = 0.5 * (lv.exp() / pv + (mu - pm) ** 2 / pv - 1 + pv.log() - lv)
        kl = (kl * mask).mean(0)
        au = (mu.var(0) > 0.01) & mask
        print(f"level {l}: KL/doc {kl.sum():.1f}; per-dim KL min/med/max {kl[mask].min():.3f}/{kl[mask].median():.3f}/{kl[mask].max():.3f}; active units {int(au.sum())}/{int(mask.sum())}; mean sigma {(0.5*lv).exp()[:, mask].mean():.3f} prior sd {pv[mask].sqrt().mean():.2f}")
lev = m.transform_levels(X)
print("super usage:", np.round(lev[0].mean(0), 3))
use = lev[-1].mean(0)
K = use.size
print(f"sub usage: min {use.min():.4f} max {use.max():.4f}; < 0.1/K: {(use < 0.1 / K).sum()}, < 0.5/K: {(use < 0.5/K).sum()}; docs' max-topic share mean {lev[-1].max(1).mean():.2f}")
print("sub_topic_weights_ rows entropy:", [round(float(-(w[w>0]*np.log(w[w>0])).sum()), 2) for w in m.level_weights_[-1]], "max log K", round(np.log(K), 2))
top = np.argsort(-m.components_, 1)[:, :10]
dup = sum(len(set(top[i]) & set(top[j])) >= 5 for i in range(K) for j in range(i + 1, K))
print("pairs sharing >=5 top words:", dup)
freq = np.asarray(X.sum(0)).ravel(); common = set(np.argsort(-freq)[:20])
print("topics with >=3 of the 20 most frequent words in top 10:", sum(len(set(t) & common) >= 3 for t in top))
order = np.argsort(-use)
for k in list(order[:4]) + list(order[-4:]):
    print(f"  sub {k:2d} use {use[k]:.4f}: " + " ".join(vocab[top[k]]))
if len(sys.argv) > 5:
    np.save(f"pam_topic_word_{sys.argv[5]}.npy", m.components_)
