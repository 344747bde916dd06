"""The ELBO of the logistic-normal topic VAEs, as pure functions."""

import torch

__all__ = ["reconstruction_nll", "gaussian_kl", "negative_elbo", "topic_word_log_prior"]


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


def topic_word_log_prior(log_topic_word, eta):
    """Symmetric Dirichlet(``eta``) log density of point-estimated topics, softmax basis.

    In the softmax basis ``phi = softmax(h)`` a Dirichlet's density is proportional
    to ``prod_w phi_w ** eta`` (MacKay 1998: the Jacobian turns ``eta - 1`` into
    ``eta``), so its mode is the exact MAP: adding this term to the topics'
    log-likelihood makes them ``(n_kw + eta) / (n_k + V eta)``, ``eta`` pseudo-counts
    per word and topic as in collapsed Gibbs. Up to a constant.
    """
    return eta * log_topic_word.sum()
