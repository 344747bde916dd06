"""log p(w) by importance sampling of a document's topic proportions."""

import math

import numpy as np
import torch

from .._random import chain_keys, counter_log_dirichlet, document_keys, normal, uniform
from ..utils._devices import device_budget
from ._hmc import gaussian_log_density, gaussian_prior, to_theta
from ._tokens import PerDocument, logmeanexp_stats

__all__ = ["importance_sampling"]

#: (documents x samples) x words per batch on the CPU (GPU: ``device_budget``). A batch
#: holds a dozen float64 tables of this size (the counts repeated per sample, logits,
#: their log-softmax, products): 4 MB each, which also keeps them in cache.
_BATCH_ELEMENTS = 1 << 19


def importance_sampling(view, X, n_samples, root, device):
    """Per-document log p(w) estimates (a :class:`~._tokens.PerDocument`), in batches."""
    n_docs, n_words = X.shape
    size = max(1, device_budget(device, _BATCH_ELEMENTS) // max(n_samples * n_words, 1))
    out = PerDocument(n_docs, n_samples)
    doc_keys = document_keys(X)
    for start in range(0, n_docs, size):
        rows = np.arange(start, min(start + size, n_docs))
        out.add(rows, _importance_sampling_batch(view, X[rows], doc_keys[rows], n_samples, root,
                                                 device))
    return out


def _importance_sampling_batch(view, X, doc_keys, n_samples, root, device):
    n_docs = X.shape[0]
    x = torch.as_tensor(X.toarray(), dtype=torch.float64, device=device)
    keys = chain_keys(root, doc_keys, n_samples, 4, device)
    xr = x.repeat_interleave(n_samples, 0)
    prior = view.prior
    if hasattr(prior, "log_prob_h"):
        mean, sd = gaussian_prior(prior, device)
        dims = torch.arange(mean.shape[0], device=device).view(1, -1)
        if getattr(view, "proposal", None) is not None:
            loc, scale = view.proposal(x)
            loc = loc.to(torch.float64).repeat_interleave(n_samples, 0)
            scale = scale.to(torch.float64).repeat_interleave(n_samples, 0).clamp_min(1e-3)
            # defensive mixture 0.5 q(h | x) + 0.5 p(h): bounded weights (Hesterberg 1995).
            # Even samples from q, odd ones from p (stratified: unbiased for pairs); the
            # last of an odd number picks its half by a coin, so every count is unbiased
            sample = torch.arange(xr.shape[0], device=device) % n_samples
            from_q = sample % 2 == 0
            if n_samples % 2:
                coin = uniform(keys, 9) < 0.5
                from_q = torch.where(sample == n_samples - 1, coin, from_q)
            from_q = from_q.view(-1, 1)
            noise = normal(keys.view(-1, 1), 0, dims)
            h = torch.where(from_q, loc + scale * noise, mean + sd * noise)
            log_q = gaussian_log_density(h, loc, scale)
            log_p = prior.log_prob_h(h)
            log_mix = torch.logaddexp(log_q, log_p) - math.log(2.0)
            logw = log_p - log_mix
        else:
            h = mean + sd * normal(keys.view(-1, 1), 0, dims)
            logw = torch.zeros(h.shape[0], dtype=torch.float64, device=device)
        theta = to_theta(prior, h)
    else:
        alpha = torch.as_tensor(prior.dirichlet(), dtype=torch.float64, device=device)
        log_theta = counter_log_dirichlet(alpha.expand(xr.shape[0], -1).contiguous(),
                                          keys.view(-1, 1), 0)
        theta = torch.exp(log_theta)
        logw = torch.zeros(theta.shape[0], dtype=torch.float64, device=device)
    with torch.no_grad():
        logw = logw + view.likelihood.log_prob(xr, theta)
    return logmeanexp_stats(logw.view(n_docs, n_samples))
