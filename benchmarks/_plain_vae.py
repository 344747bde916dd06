"""The baseline a user writes in an afternoon: ProdLDA / AVITM as a plain torch loop.

Written from the AVITM paper and its original code (Srivastava & Sutton 2017): a
softplus 100-100 encoder, dropout on the encoder's output and on theta, batch norm
with a shift and no scale (eps 1e-3, momentum 1e-3) on mu, log sigma^2 and the
decoder, the Laplace prior of Dirichlet(1), Adam with beta1 = 0.99, batches of 200
drawn with replacement, the loss averaged over the batch. Each model's own settings
are :data:`PAPER`: ProdLDA drops 60 % at learning rate 2e-3 with one noise draw per
document; NVLDA (AVITM) drops 25 % at learning rate 1e-2 with one noise draw per
batch, and its batch norm of the topic matrix learns a per-word shift (TensorFlow's
``center=True``), so its topics are ``softmax(BN(beta) + shift)``.

It is written the way the PyTorch ports are: a dense float32 copy of the corpus,
``nn.Linear`` and ``nn.BatchNorm1d``, PyTorch's default initialisation of the encoder
(``init="glorot"`` gives the original code's Glorot-uniform weights and zero biases
instead), Xavier for the topics. Used by ``bench_neural_speed.py`` and ``gpu_check.py``
as the peer and by ``research/paper_preset_bisect.py`` as the reference.
"""

import time

import numpy as np
import torch
from torch import nn

#: The original code's settings per model (``run.py -p`` and ``-n``); epochs aside.
PAPER = {
    "ProdLDA": {"mixture": False, "dropout": 0.6, "learning_rate": 2e-3,
                "shared_noise": False},
    "AVITM": {"mixture": True, "dropout": 0.25, "learning_rate": 1e-2,
              "shared_noise": True},
}


def _batch_norm(size):
    norm = nn.BatchNorm1d(size, eps=1e-3, momentum=1e-3)
    norm.weight.data.fill_(1.0)
    norm.weight.requires_grad_(False)  # shift only, as in the original graph
    return norm


class PlainVAE(nn.Module):
    def __init__(self, n_words, n_topics, mixture, hidden=100, dropout=0.6, alpha=1.0,
                 shared_noise=False, init="torch"):
        super().__init__()
        self.mixture = mixture
        self.shared_noise = shared_noise
        self.encoder = nn.Sequential(
            nn.Linear(n_words, hidden), nn.Softplus(), nn.Linear(hidden, hidden), nn.Softplus(),
            nn.Dropout(dropout),
        )
        self.mu, self.logvar = nn.Linear(hidden, n_topics), nn.Linear(hidden, n_topics)
        if init == "glorot":  # the original code: tf.get_variable's default, zero biases
            for layer in (self.encoder[0], self.encoder[2], self.mu, self.logvar):
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
        self.mu_bn, self.logvar_bn = _batch_norm(n_topics), _batch_norm(n_topics)
        self.theta_drop = nn.Dropout(dropout)
        self.beta = nn.Parameter(nn.init.xavier_uniform_(torch.empty(n_topics, n_words)))
        self.beta_bn = _batch_norm(n_words)  # ProdLDA: the logits; NVLDA: the shift only
        a = torch.full((n_topics,), float(alpha))
        self.register_buffer("prior_mean", a.log() - a.log().mean())
        self.register_buffer("prior_var", (1 - 2 / n_topics) / a + (1 / a).sum() / n_topics**2)

    def topic_logits(self):
        """NVLDA's topics before the softmax: beta batch-normed across topics, word by
        word (its own statistics, as the original graph), plus the learned shift."""
        beta = self.beta
        normed = (beta - beta.mean(0)) / torch.sqrt(beta.var(0, unbiased=False) + 1e-3)
        return normed + self.beta_bn.bias

    def forward(self, x):
        hidden = self.encoder(x)
        mu, logvar = self.mu_bn(self.mu(hidden)), self.logvar_bn(self.logvar(hidden))
        noise = torch.randn(mu.shape[1]) if self.shared_noise else torch.randn_like(mu)
        h = mu + torch.exp(0.5 * logvar) * noise
        theta = self.theta_drop(torch.softmax(h, dim=1))
        if self.mixture:  # AVITM (NVLDA): a mixture of batch-normed topics
            log_probs = torch.log(theta @ torch.softmax(self.topic_logits(), dim=1) + 1e-10)
        else:  # ProdLDA: a product of experts
            log_probs = torch.log_softmax(self.beta_bn(theta @ self.beta), dim=1)
        nll = -(x * log_probs).sum(1)
        var_ratio = torch.exp(logvar) / self.prior_var
        kl = 0.5 * (var_ratio + (mu - self.prior_mean) ** 2 / self.prior_var - 1
                    - logvar + self.prior_var.log()).sum(1)
        return (nll + kl).mean()


def train_plain(X, n_topics, epochs, *, mixture=False, batch_size=200, seed=0, dropout=0.6,
                learning_rate=2e-3, shared_noise=False, init="torch"):
    """Train on the CSR matrix ``X``; return ``(model, seconds per epoch)``.

    The defaults are the original ProdLDA code's settings (also used for AVITM by the
    speed benchmark, so that both codes train the same way); ``**PAPER[name]`` gives
    each model's own.
    """
    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    data = torch.from_numpy(X.toarray().astype(np.float32))
    model = PlainVAE(X.shape[1], n_topics, mixture, dropout=dropout, shared_noise=shared_noise,
                     init=init)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate, betas=(0.99, 0.999))
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
    """Topic-word weights in the shape the metrics take: ProdLDA's ``softmax(beta)``
    (the original code's read-out ranks words by ``beta``), NVLDA's topics."""
    with torch.no_grad():
        if model.mixture:
            return torch.softmax(model.topic_logits(), dim=1).numpy()
        return torch.softmax(model.beta, dim=1).numpy()
