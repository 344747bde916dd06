"""The baseline a user writes in an afternoon: ProdLDA / AVITM as a plain torch loop.

Faithful to the AVITM settings (softplus 100-100 encoder, dropout 0.6 on the hidden
layer and on theta, batch norm with a shift and no scale, eps 1e-3, momentum 1e-3,
the Laplace prior of Dirichlet(1), Adam 2e-3 / beta1 0.99, batches of 200 drawn
with replacement), written the way the PyTorch ports are: a dense float32 copy of
the corpus, ``nn.Linear`` and ``nn.BatchNorm1d`` with PyTorch's default
initialisation, Xavier for the topics. Used by ``bench_neural_speed.py`` as the peer.
"""

import time

import numpy as np
import torch
from torch import nn


def _batch_norm(size):
    norm = nn.BatchNorm1d(size, eps=1e-3, momentum=1e-3)
    norm.weight.data.fill_(1.0)
    norm.weight.requires_grad_(False)  # shift only, as in the original graph
    return norm


class PlainVAE(nn.Module):
    def __init__(self, n_words, n_topics, mixture, hidden=100, dropout=0.6, alpha=1.0):
        super().__init__()
        self.mixture = mixture
        self.encoder = nn.Sequential(
            nn.Linear(n_words, hidden), nn.Softplus(), nn.Linear(hidden, hidden), nn.Softplus(),
            nn.Dropout(dropout),
        )
        self.mu, self.logvar = nn.Linear(hidden, n_topics), nn.Linear(hidden, n_topics)
        self.mu_bn, self.logvar_bn = _batch_norm(n_topics), _batch_norm(n_topics)
        self.theta_drop = nn.Dropout(dropout)
        self.beta = nn.Parameter(nn.init.xavier_uniform_(torch.empty(n_topics, n_words)))
        self.beta_bn = _batch_norm(n_words)
        a = torch.full((n_topics,), float(alpha))
        self.register_buffer("prior_mean", a.log() - a.log().mean())
        self.register_buffer("prior_var", (1 - 2 / n_topics) / a + (1 / a).sum() / n_topics**2)

    def forward(self, x):
        hidden = self.encoder(x)
        mu, logvar = self.mu_bn(self.mu(hidden)), self.logvar_bn(self.logvar(hidden))
        h = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        theta = self.theta_drop(torch.softmax(h, dim=1))
        if self.mixture:  # AVITM (NVLDA): a mixture of batch-normed topics
            beta = self.beta
            normed = (beta - beta.mean(0)) / torch.sqrt(beta.var(0, unbiased=False) + 1e-3)
            log_probs = torch.log(theta @ torch.softmax(normed, dim=1) + 1e-10)
        else:  # ProdLDA: a product of experts
            log_probs = torch.log_softmax(self.beta_bn(theta @ self.beta), dim=1)
        nll = -(x * log_probs).sum(1)
        var_ratio = torch.exp(logvar) / self.prior_var
        kl = 0.5 * (var_ratio + (mu - self.prior_mean) ** 2 / self.prior_var - 1
                    - logvar + self.prior_var.log()).sum(1)
        return (nll + kl).mean()


def train_plain(X, n_topics, epochs, *, mixture=False, batch_size=200, seed=0):
    """Train on the CSR matrix ``X``; return ``(model, seconds per epoch)``."""
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    data = torch.from_numpy(X.toarray().astype(np.float32))
    model = PlainVAE(X.shape[1], n_topics, mixture)
    optimizer = torch.optim.Adam(model.parameters(), lr=2e-3, betas=(0.99, 0.999))
    n_batches = X.shape[0] // batch_size
    durations = []
    for _ in range(epochs):
        start = time.perf_counter()
        model.train()
        for _ in range(n_batches):
            x = data[rng.integers(0, X.shape[0], batch_size)]
            loss = model(x)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        durations.append(time.perf_counter() - start)
    return model, durations


def topic_word(model):
    """Topic-word weights in the shape the metrics take."""
    with torch.no_grad():
        if model.mixture:
            beta = model.beta
            normed = (beta - beta.mean(0)) / torch.sqrt(beta.var(0, unbiased=False) + 1e-3)
            return torch.softmax(normed, dim=1).numpy()
        return torch.softmax(model.beta, dim=1).numpy()
