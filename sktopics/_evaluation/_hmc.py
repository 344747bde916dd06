"""AIS over a continuous latent with Hamiltonian Monte Carlo (ProdLDA and the rest).

The latent h (theta = ``prior.to_theta(h)``, softmax by default) is annealed from
the encoder proposal q(h | w) (or the prior) to p(h) p(w | h); every transition
is HMC with a fixed step per row, so it leaves its intermediate distribution
exactly invariant.
"""

import math

import numpy as np
import torch

from .._random import chain_keys, document_keys, normal, uniform
from ..utils._devices import device_budget
from ._tokens import MAX_ELEMENTS, PerDocument, temperature_schedule

__all__ = ["continuous_ais", "gaussian_prior", "to_theta"]


def gaussian_prior(prior, device):
    """(loc, scale) of a diagonal-Gaussian prior on the unconstrained latent h."""
    if not hasattr(prior, "gaussian"):
        raise ValueError(
            "The continuous engine needs a diagonal Gaussian prior on h "
            f"(prior.gaussian(device, dtype)); got {type(prior).__name__}."
        )
    mean, var = prior.gaussian(device, torch.float64)
    return mean, torch.sqrt(var)


def to_theta(prior, h):
    method = getattr(prior, "to_theta", None)
    return torch.softmax(h, -1) if method is None else method(h)


def gaussian_log_density(h, loc, scale):
    """log N(h; loc, diag(scale^2)) summed over the last axis."""
    return -0.5 * ((((h - loc) / scale) ** 2) + torch.log(2 * math.pi * scale**2)).sum(-1)


class _ContinuousTarget:
    """log f_b(h) = (1 - b) log q(h) + b [log p(h) + log p(x | h)] (or q = prior)."""

    def __init__(self, view, x, loc, scale, use_prior):
        self.view = view
        self.x = x
        self.loc, self.scale = loc, scale
        self.use_prior = use_prior

    def log_q(self, h):
        return gaussian_log_density(h, self.loc, self.scale)

    def log_prior(self, h):
        return self.view.prior.log_prob_h(h)

    def log_lik(self, h):
        return self.view.likelihood.log_prob(self.x, to_theta(self.view.prior, h))

    def log_f(self, b, h):
        if self.use_prior:
            return self.log_prior(h) + b * self.log_lik(h)
        return (1.0 - b) * self.log_q(h) + b * (self.log_prior(h) + self.log_lik(h))

    def increment(self, b0, b1, h):
        with torch.no_grad():
            if self.use_prior:
                return (b1 - b0) * self.log_lik(h)
            return (b1 - b0) * (self.log_prior(h) + self.log_lik(h) - self.log_q(h))


def _grad_log_f(target, b, h):
    with torch.enable_grad():
        h = h.detach().requires_grad_(True)
        value = target.log_f(b, h)
        (grad,) = torch.autograd.grad(value.sum(), h)
    return value.detach(), grad


def _hmc_step(target, b, h, eps, n_leapfrog, keys, counters):
    """One HMC transition with per-row, per-dimension step ``eps`` (fixed: valid)."""
    dims = torch.arange(h.shape[1], device=h.device).view(1, -1)
    p0 = normal(keys.view(-1, 1), *counters, dims)
    logf0, grad = _grad_log_f(target, b, h)
    q = h.clone()
    p = p0 + 0.5 * eps * grad
    for i in range(n_leapfrog):
        q = q + eps * p
        logf, grad = _grad_log_f(target, b, q)
        if i < n_leapfrog - 1:
            p = p + eps * grad
    p = p + 0.5 * eps * grad
    log_accept = logf - logf0 - 0.5 * (p * p).sum(-1) + 0.5 * (p0 * p0).sum(-1)
    u = uniform(keys, *counters, 99)
    accept = torch.log(u) < torch.nan_to_num(log_accept, nan=-math.inf)
    return torch.where(accept.unsqueeze(-1), q, h), accept


def _tune_step_multipliers(target, betas, h, eps, n_leapfrog, keys, n_docs, n_chains, goal):
    """Per-document step multipliers from a pilot run (Robbins-Monro on log step).

    The pilot anneals its own chains (fresh start, its own random numbers) over
    ``betas``; after each HMC transition the log multiplier of a document moves by
    (acceptance rate over its chains - goal) / sqrt(step). Returns the Polyak
    average of the second half. The main run then uses these steps unchanged, so
    each of its transitions is a fixed, exactly invariant kernel.
    """
    log_m = torch.zeros(n_docs, dtype=torch.float64, device=h.device)
    history = []
    n_steps = len(betas) - 1
    for s in range(1, n_steps + 1):
        m = torch.exp(log_m).repeat_interleave(n_chains).unsqueeze(-1)
        h, acc = _hmc_step(target, float(betas[s]), h, eps * m, n_leapfrog, keys, (6, s))
        rate = acc.to(torch.float64).view(n_docs, n_chains).mean(1)
        log_m = log_m + (rate - goal) / math.sqrt(s)
        if s > n_steps // 2:
            history.append(log_m)
    return torch.exp(torch.stack(history).mean(0))


def continuous_ais(view, X, *, n_temperatures, n_chains, schedule_name, device, root,
                   step_size=0.25, n_leapfrog=5, start="proposal", batch_size=256,
                   target_acceptance=None, n_pilot_temperatures=50, progress=None):
    """HMC AIS; returns ``(PerDocument, n_updates, acceptance, tuned multipliers)``."""
    betas = temperature_schedule(schedule_name, n_temperatures)
    n_docs = X.shape[0]
    max_elements = device_budget(device, MAX_ELEMENTS)
    batch_size = max(1, min(batch_size, max_elements // max(n_chains * X.shape[1], 1)))
    lengths = np.asarray(X.sum(1)).ravel()
    out = PerDocument(n_docs, n_chains)
    acc_total = torch.zeros((), dtype=torch.float64, device=device)
    acc_count = 0
    use_prior = start == "prior" or getattr(view, "proposal", None) is None
    prior = view.prior
    if not hasattr(prior, "log_prob_h"):
        raise ValueError("The continuous engine needs a prior with log_prob_h/sample_h.")
    docs = np.flatnonzero(lengths > 0)
    doc_keys = document_keys(X)
    mult_all = []
    pilot_betas = temperature_schedule(schedule_name, min(n_pilot_temperatures, n_temperatures))
    for bstart in range(0, len(docs), batch_size):
        batch = docs[bstart : bstart + batch_size]
        x = torch.as_tensor(X[batch].toarray(), dtype=torch.float64, device=device)
        keys = chain_keys(root, doc_keys[batch], n_chains, 2, device)
        xr = x.repeat_interleave(n_chains, 0)
        prior_loc, prior_scale = gaussian_prior(prior, device)
        if use_prior:
            loc = prior_loc.expand(xr.shape[0], -1)
            scale = prior_scale.expand(xr.shape[0], -1)
        else:
            loc, scale = view.proposal(x)
            loc = loc.to(torch.float64).repeat_interleave(n_chains, 0)
            scale = scale.to(torch.float64).repeat_interleave(n_chains, 0).clamp_min(1e-3)
        target = _ContinuousTarget(view, xr, loc, scale, use_prior)
        dims = torch.arange(loc.shape[1], device=device).view(1, -1)
        h = loc + scale * normal(keys.view(-1, 1), 0, dims)
        # fixed per-row step: proportional to the start's scale, shrunk with length
        n_tok = xr.sum(-1, keepdim=True)
        eps = step_size * torch.minimum(scale, 1.0 / torch.sqrt(1.0 + n_tok).expand_as(scale) * 3.0)
        if target_acceptance is not None:
            h_pilot = loc + scale * normal(keys.view(-1, 1), 5, dims)
            mult = _tune_step_multipliers(target, pilot_betas, h_pilot, eps, n_leapfrog, keys,
                                          len(batch), n_chains, target_acceptance)
            eps = eps * mult.repeat_interleave(n_chains).unsqueeze(-1)
            mult_all.append(mult)
        logw = torch.zeros(h.shape[0], dtype=torch.float64, device=device)
        n_steps = len(betas) - 1
        for s in range(1, n_steps + 1):
            logw += target.increment(float(betas[s - 1]), float(betas[s]), h)
            if s < n_steps:
                h, acc = _hmc_step(target, float(betas[s]), h, eps, n_leapfrog, keys, (3, s))
                acc_total += acc.sum()
                acc_count += acc.numel()
            if progress is not None:
                progress.advance(h.shape[0] * (n_leapfrog + 1))
        out.add_weights(batch, logw, n_chains)
        if progress is not None:
            progress.finish_documents(len(batch))
    n_updates = len(docs) * n_chains * (len(betas) - 1) * (n_leapfrog + 1)
    acceptance = float(acc_total) / acc_count if acc_count else float("nan")
    tuned = None
    if mult_all:
        mult = torch.cat(mult_all).cpu().numpy()
        tuned = (float(mult.min()), float(np.median(mult)), float(mult.max()))
        n_updates += len(docs) * n_chains * (len(pilot_betas) - 1) * (n_leapfrog + 1)
    return out, n_updates, acceptance, tuned
