"""The ELBO of the logistic-normal topic VAEs, as pure functions."""

import torch

__all__ = ["reconstruction_nll", "gaussian_kl", "negative_elbo"]


def reconstruction_nll(x, log_word_probs):
    """``-sum_w x_w log p_w`` per document (token sequence, no multinomial coefficient)."""
    return -(x * log_word_probs).sum(-1)


def gaussian_kl(mu, logvar, prior_mean, prior_var):
    """KL(N(mu, diag exp(logvar)) || N(prior_mean, diag prior_var)) per document."""
    var_ratio = torch.exp(logvar) / prior_var
    mean_term = (prior_mean - mu) ** 2 / prior_var
    return 0.5 * (var_ratio + mean_term - 1.0 - logvar + torch.log(prior_var)).sum(-1)


def negative_elbo(x, log_word_probs, mu, logvar, prior_mean, prior_var):
    """Per-document negative ELBO: reconstruction NLL plus KL to the Laplace prior."""
    return reconstruction_nll(x, log_word_probs) + gaussian_kl(mu, logvar, prior_mean, prior_var)
