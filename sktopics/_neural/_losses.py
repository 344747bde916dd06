"""The ELBO of the logistic-normal topic VAEs, as pure functions."""

import torch
import torch.nn.functional as F

from ._sparse import SparseRows, row_sums

__all__ = [
    "reconstruction_nll",
    "mixture_nll",
    "product_of_experts_nll",
    "gaussian_kl",
    "topic_word_log_prior",
]


def reconstruction_nll(x, log_word_probs):
    """``-sum_w x_w log p_w`` per document (token sequence, no multinomial coefficient).

    ``x`` is a dense ``(batch, words)`` tensor or a :class:`~._sparse.SparseRows`.
    """
    if isinstance(x, SparseRows):
        return -row_sums(x, x.values * x.at(log_word_probs))
    return -(x * log_word_probs).sum(-1)


class _MixtureNLL(torch.autograd.Function):
    """:func:`reconstruction_nll` of ``p = theta @ topic_word`` at a sparse batch's
    non-zeros (``nnz * K`` products instead of ``batch * words * K``).

    Both gradients are sparse-dense products by the weights ``-x / p``, so
    they are ``embedding_bag`` calls, one per order of the non-zeros.
    """

    @staticmethod
    def forward(ctx, theta, topic_word, x):
        table = topic_word.t().contiguous()  # word-major, (words, topics)
        probs = (F.embedding(x.rows, theta) * F.embedding(x.columns, table)).sum(1) + 1e-10
        ctx.save_for_backward(theta, table, x.values / probs)
        ctx.x = x
        return -row_sums(x, x.values * torch.log(probs))

    @staticmethod
    def backward(ctx, grad_nll):
        theta, table, ratio = ctx.saved_tensors
        x = ctx.x
        weights = -grad_nll.index_select(0, x.rows) * ratio
        return x.matmul(table, weights), x.transpose_matmul(theta, weights).t(), None


def mixture_nll(theta, topic_word, x):
    """:func:`reconstruction_nll` of the mixture ``p = theta @ topic_word``, per document."""
    if isinstance(x, SparseRows):
        return _MixtureNLL.apply(theta, topic_word, x)
    return reconstruction_nll(x, torch.log(theta @ topic_word + 1e-10))


class _ProductOfExpertsNLL(torch.autograd.Function):
    """Batch norm (batch statistics, shift only), softmax and the reconstruction term
    of a sparse batch, with the gradient written out: one softmax, shared by the
    value and the gradient, and no dense copy of the counts."""

    @staticmethod
    def forward(ctx, z, shift, x, norm):
        n = z.shape[0]
        mean = z.mean(0)
        centred = z - mean
        var = centred.square().mean(0)
        inv_std = torch.rsqrt(var + norm.eps)
        normed = centred.mul_(inv_std)
        logits = normed + shift
        probs = torch.softmax(logits, dim=1)
        # log p = logit - log-normaliser, the normaliser read where p is largest
        top = logits.amax(1)
        log_norm = top - torch.log(probs.amax(1))
        if norm.momentum > 0:  # as F.batch_norm: the unbiased variance
            norm.running_mean.lerp_(mean, norm.momentum)
            norm.running_var.lerp_(var * (n / max(n - 1, 1)), norm.momentum)
        ctx.save_for_backward(normed, probs, inv_std)
        ctx.x = x
        log_probs = x.at(logits) - log_norm.index_select(0, x.rows)
        return -row_sums(x, x.values * log_probs)

    @staticmethod
    def backward(ctx, grad_nll):
        normed, probs, inv_std = ctx.saved_tensors
        x, n = ctx.x, normed.shape[0]
        # d nll_d / d logit_dw = n_d p_dw - x_dw
        grad = probs * (grad_nll * x.totals()).unsqueeze(1)
        flat = x.rows * grad.shape[1] + x.columns
        grad.view(-1).index_add_(0, flat, -(grad_nll.index_select(0, x.rows) * x.values))
        grad_shift = grad.sum(0)
        spread = (grad * normed).sum(0)
        grad_z = grad.sub_(grad_shift / n).addcmul_(normed, spread / n, value=-1).mul_(inv_std)
        return grad_z, grad_shift, None, None


def product_of_experts_nll(z, norm, background, x):
    """:func:`reconstruction_nll` of ``log_softmax(norm(z) + background)`` in training.

    ``norm`` is the decoder's :class:`~._modules.TFBatchNorm`, normalising with the
    batch's statistics; its running averages are updated as
    ``torch.nn.functional.batch_norm`` would.
    """
    return _ProductOfExpertsNLL.apply(z, norm.bias + background, x, norm)


def gaussian_kl(mu, logvar, prior_mean, prior_var, free_nats=0.0, collective=None):
    """KL(N(mu, diag exp(logvar)) || N(prior_mean, diag prior_var)) per document.

    With ``free_nats > 0`` ("free bits", Kingma et al. 2016), a latent dimension
    whose KL averaged over the batch is below ``free_nats`` counts ``free_nats`` for
    every document, a constant with no gradient: averaged over the batch, the term
    is ``sum_k max(free_nats, mean_batch KL_k)``. When no dimension is below the
    floor the value is the KL itself, bit for bit. With a ``collective`` (a
    data-parallel fit) the batch is every rank's batch together.
    """
    var_ratio = torch.exp(logvar) / prior_var
    mean_term = (prior_mean - mu) ** 2 / prior_var
    twice = var_ratio + mean_term - 1.0 - logvar + torch.log(prior_var)  # (batch, K)
    if free_nats > 0:
        floor = 2.0 * float(free_nats)
        if collective is not None and collective.world_size > 1:
            local = torch.cat([twice.detach().sum(0), twice.new_full((1,), twice.shape[0])])
            total = collective.sum_(local.double())
            batch_mean = (total[:-1] / total[-1]).to(twice.dtype)
        else:
            batch_mean = twice.mean(0)
        twice = torch.where(batch_mean < floor, floor, twice)  # no host copy: graph-safe
    return 0.5 * twice.sum(-1)


def topic_word_log_prior(log_topic_word, eta):
    """Symmetric Dirichlet(``eta``) log density of point-estimated topics, softmax basis.

    In the softmax basis ``phi = softmax(h)`` a Dirichlet's density is proportional
    to ``prod_w phi_w ** eta`` (MacKay 1998: the Jacobian turns ``eta - 1`` into
    ``eta``), so its mode is the exact MAP: adding this term to the topics'
    log-likelihood makes them ``(n_kw + eta) / (n_k + V eta)``, ``eta`` pseudo-counts
    per word and topic as in collapsed Gibbs. Up to a constant.
    """
    return eta * log_topic_word.sum()
