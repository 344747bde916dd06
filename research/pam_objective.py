"""Why PAMVI's coherence stays below tomotopy's: does its objective want their topics?

tomotopy's Gibbs PAModel finds more coherent topics on 20 Newsgroups 2 / 50 than PAMVI
(NPMI 0.239 against 0.19). This script asks whether that is an optimisation shortfall of
PAMVI or a property of what it optimises. It trains tomotopy, then fits PAMVI four ways:

* ``default``: from scratch;
* ``started at tomotopy``: the decoder starts exactly at tomotopy's topics
  (``g * BN(beta) + b = log phi``), then everything trains as usual;
* ``frozen at tomotopy``: the decoder stays at tomotopy's topics, only the encoder
  trains (symmetric priors 1, PAMVI's default);
* ``frozen at tomotopy, tomotopy's priors``: the same with tomotopy's learned ``alpha`` and
  ``subalpha`` as PAMVI's ``doc_topic_prior`` / ``subtopic_prior``, i.e. tomotopy's own
  PAM with its topics as point estimates;
* ``with tomotopy's priors``: from scratch, with those priors fixed.

For each: test NPMI (eps / zero), topic diversity, the final training loss (negative ELBO
per document, the quantity PAMVI minimises), ``score`` (importance sampling from the
encoder, 1,000 test documents) and AIS over topic assignments under the exact Dirichlet
priors (independent of the encoder, ``--n-docs`` random test documents); and the paired
AIS difference of each variant against ``default`` on the same documents.

Usage: ``python research/pam_objective.py [--data 20ng] [--seed 0] [--epochs 20]
[--n-docs 300]``. Writes ``research/results/pam_objective.{json,rst}``
(``pam_objective_nips`` for ``--data nips``). Quality and likelihood only: the seconds
are not timings. Needs tomotopy. ``SKTOPICS_RESEARCH_TINY=1`` (``_tiny.py``): 500
training and 300 test documents, 2 tomotopy iterations, one epoch, AIS on 20 documents
at 5 temperatures, written elsewhere: a check that the study runs, in seconds.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common, bench_pam
from _common import load_pam_corpus, machine, markdown_table, write_results
from bench_pam import quality, tomotopy_add_docs, tomotopy_topic_word

import sktopics._neural._pam_modules as pam_modules
from sktopics import PAMVI
from sktopics.metrics import topic_diversity
from sktopics.model_selection import ais_log_likelihood, ratio_ais

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny import TINY, results_dir  # noqa: E402

_decoder_init = pam_modules.GainMixtureDecoder.__init__


def coherence(topic_word, X_test):
    """NPMI of the top 10 words on the test split, epsilon and zero conventions."""
    found = quality(topic_word, X_test)
    return found["npmi_eps"], found["npmi_zero"]


def load(name):
    """Training counts, test counts and the vocabulary of ``name``."""
    train, _, X, X_test = load_pam_corpus(name)
    return X, X_test, list(train.feature_names)


def decoder_at(topic_word, frozen):
    """Patch PAMVI's decoder to start at ``topic_word`` (and optionally never move)."""
    log_phi = torch.log(torch.as_tensor(topic_word, dtype=torch.float32) + 1e-7)

    def init(self, n_topics, n_features, bn_eps, word_gain=True, shift=None):
        _decoder_init(self, n_topics, n_features, bn_eps, word_gain, shift)
        with torch.no_grad():
            self.beta.copy_(log_phi)
            self.bias.copy_(log_phi.mean(0))
            self.gain.copy_(torch.sqrt(log_phi.var(0, unbiased=False) + bn_eps))
        for parameter in self.parameters():
            parameter.requires_grad_(not frozen)

    return init


def evaluate(label, model, X_test, X_ais, seconds, args):
    eps, zero = coherence(model.components_, X_test)
    ais = ais_log_likelihood(model, X_ais, n_temperatures=args.temperatures, n_chains=10,
                             random_state=args.seed)
    row = {"model": label, "npmi_eps": eps, "npmi_zero": zero,
           "td": topic_diversity(model.components_, top_n=10),
           "train_neg_elbo": model.history_[-1]["train_loss"],
           "score_is": model.score(X_test[:1000]), "ais_per_token": ais.per_token,
           "ais_total": ais.total, "ais_stderr": ais.stderr, "fit_s": seconds}
    print({k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()}, flush=True)
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--iterations", type=int, default=200, help="tomotopy iterations")
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--n-docs", type=int, default=300, help="test documents for AIS")
    parser.add_argument("--temperatures", type=int, default=500)
    parser.add_argument("--data", choices=["20ng", "nips"], default="20ng")
    parser.add_argument("--batch-size", type=int, default=None,
                        help="PAMVI's batch size (default: 64 on 20ng, 50 on nips)")
    parser.add_argument("--name", default=None, help="results name (default: pam_objective"
                        "[_nips])")
    args = parser.parse_args()
    if TINY:
        args.iterations, args.epochs, args.n_docs, args.temperatures = 2, 1, 20, 5
    torch.set_num_threads(1)
    warnings.simplefilter("ignore")
    import tomotopy as tp

    batch_size = args.batch_size or (64 if args.data == "20ng" else 50)
    name = args.name or ("pam_objective" if args.data == "20ng" else f"pam_objective_{args.data}")
    X, X_test, vocab = load(args.data)
    if TINY:
        X, X_test = X[:500], X_test[:300]
    X = X[np.asarray(X.sum(1)).ravel() > 0].astype(np.float32)
    rng = np.random.default_rng(args.seed)
    docs = rng.choice(X_test.shape[0], min(args.n_docs, X_test.shape[0]), replace=False)
    X_ais = X_test[docs][np.asarray(X_test[docs].sum(1)).ravel() > 0]

    gibbs = tp.PAModel(k1=2, k2=50, seed=args.seed)
    tomotopy_add_docs(gibbs, X, vocab)
    gibbs.train(args.iterations, workers=1)
    phi = tomotopy_topic_word(gibbs, vocab, 50)
    alpha = np.asarray(gibbs.alpha, dtype=float)
    subalpha = np.array([gibbs.subalpha[s] for s in range(2)], dtype=float)
    eps, zero = coherence(phi, X_test)
    rows = [{"model": f"tomotopy PAModel(2, 50), {args.iterations} it", "npmi_eps": eps,
             "npmi_zero": zero, "td": topic_diversity(phi, top_n=10)}]

    variants = [
        ("PAMVI default", None, False, {}),
        ("PAMVI started at tomotopy's topics", phi, False, {}),
        ("PAMVI frozen at tomotopy's topics", phi, True, {}),
        ("PAMVI frozen at tomotopy's topics and priors", phi, True,
         {"doc_topic_prior": alpha, "subtopic_prior": subalpha}),
        ("PAMVI with tomotopy's priors", None, False,
         {"doc_topic_prior": alpha, "subtopic_prior": subalpha}),
    ]
    models = {}
    for label, topics, frozen, priors in variants:
        pam_modules.GainMixtureDecoder.__init__ = (
            _decoder_init if topics is None else decoder_at(topics, frozen))
        try:
            model = PAMVI((2, 50), max_iter=args.epochs, batch_size=batch_size,
                          random_state=args.seed, device="cpu", **priors)
            start = time.perf_counter()
            model.fit(X)
            seconds = time.perf_counter() - start
        finally:
            pam_modules.GainMixtureDecoder.__init__ = _decoder_init
        models[label] = model
        rows.append(evaluate(label, model, X_test, X_ais, seconds, args))

    reference = models["PAMVI default"]
    for label, *_ in variants[1:]:
        comparison = ratio_ais(models[label], reference, X_ais, n_temperatures=args.temperatures,
                               n_chains=10, random_state=args.seed)
        row = next(r for r in rows if r["model"] == label)
        row["paired_ais_vs_default"] = comparison.total
        row["paired_ais_stderr"] = comparison.stderr
        print(label, "minus default:", comparison, flush=True)

    columns = ["model", "npmi_eps", "npmi_zero", "td", "train_neg_elbo", "score_is",
               "ais_per_token", "paired_ais_vs_default", "paired_ais_stderr"]
    info = machine()
    header = (
        f"Measured on {info['cpu']} ({info['cpu_count']} cores, torch {info['torch']}, "
        f"{info['torch_threads']} thread, GPU: {info['gpu']}), {time.strftime('%Y-%m-%d')}; "
        f"{args.data}, PAMVI((2, 50)), batch {batch_size}, {args.epochs} epochs, seed "
        f"{args.seed}. train_neg_elbo: final training loss per document (what PAMVI "
        f"minimises); score_is: `score` on {min(1000, X_test.shape[0]):,} test documents "
        f"(importance sampling from the encoder); ais_per_token: AIS over topic assignments "
        f"under the exact Dirichlet priors, {X_ais.shape[0]} random test documents, "
        f"{args.temperatures} temperatures, 10 chains; paired_ais_vs_default: "
        f"log p(test | model) - log p(test | PAMVI default) in nats over those documents "
        f"(paired AIS, common random numbers), with its standard error.\n\n"
    )
    payload = {"args": vars(args), "machine": info, "rows": rows,
               "tomotopy_alpha": alpha.tolist(), "tomotopy_subalpha": subalpha.tolist()}
    write_results(name, payload, header + markdown_table(rows, columns),
                  directory=results_dir())


if __name__ == "__main__":
    main()
