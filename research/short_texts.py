"""ProdLDA and AVITM on short texts: the collapse, and the remedies measured against it.

Short-text corpora as a new user brings them (titles, post subjects), each fitted by
a list of variants and scored on its held-out documents: NPMI of the top 10 words
(held-out documents as reference, boolean documents, epsilon convention), topic
diversity (TD@10), the mean largest topic share of ``transform`` on the held-out
documents (uniform is 1 / K) and the number of topics that are some held-out
document's largest. scikit-learn's ``LatentDirichletAllocation`` and ``LDAGibbs`` at
their defaults are the references.

Corpora (``load``):

* ``gnews``: 11,108 GoogleNews titles (CTM's copy), a random 80/20 split, through
  ``CountVectorizer(stop_words="english", min_df=3, max_df=0.5)``;
* ``subjects``: the subject lines of the raw 20 Newsgroups posts (by-date split,
  ``Re:`` kept as a user would, same vectorizer);
* ``m10``, ``dblp``: OCTIS's CiteSeer-M10 and DBLP paper titles, their own splits.

Each variant is a function of K and the seed returning an unfitted estimator; the
remedies that need training code the estimators did not have when they were first
screened are written here as subclasses (see each one's docstring).

Usage::

    python research/short_texts.py --corpora gnews m10 --topics 20 --seeds 0 \
        --variants default alpha_1_over_k kl_warmup
    SKTOPICS_RESEARCH_TINY=1 python research/short_texts.py   # a check, seconds

Writes ``research/results/<name>.{json,rst}`` after every fit (research/README.md
says what the screens found). The tiny mode (``_tiny.py``) fits every variant for one
iteration on 300 M10 titles, K = 5, and writes elsewhere.
"""

import argparse
import re
import sys
import tarfile
import time
import types
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer
from skorch.callbacks import Callback

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_home, machine, markdown_table, write_results  # noqa: E402

from sktopics import AVITM, LDAGibbs, ProdLDA  # noqa: E402
from sktopics._neural._losses import gaussian_kl, reconstruction_nll  # noqa: E402
from sktopics.datasets import load_octis  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny import TINY, results_dir  # noqa: E402

VECTORIZER = {"stop_words": "english", "min_df": 3, "max_df": 0.5}


def _vectorise(train, test):
    vectorizer = CountVectorizer(**VECTORIZER)
    return vectorizer.fit_transform(train), vectorizer.transform(test)


def load(name, data_home):
    """``(X_train, X_test)`` of a short-text corpus (or, for a check on long documents,
    ``20ng``: AVITM's 20 Newsgroups)."""
    data_home = Path(data_home)
    if name == "20ng":
        from sktopics.datasets import load_20news_avitm

        return (load_20news_avitm(data_home, subset="train").data,
                load_20news_avitm(data_home, subset="test").data)
    if name == "gnews":
        docs = (data_home / "gnews_ctm" / "GoogleNews.txt").read_text(
            encoding="utf-8").splitlines()
        order = np.random.default_rng(0).permutation(len(docs))
        n_test = len(docs) // 5
        return _vectorise([docs[i] for i in order[n_test:]], [docs[i] for i in order[:n_test]])
    if name == "subjects":
        split = {"train": [], "test": []}
        with tarfile.open(data_home / "20news_bydate" / "20news-bydate.tar.gz") as archive:
            for member in archive.getmembers():
                if not member.isfile():
                    continue
                text = archive.extractfile(member).read().decode("latin-1")
                match = re.search(r"^Subject:(.*)$", text, flags=re.MULTILINE)
                part = "train" if "-train/" in member.name else "test"
                split[part].append(match.group(1) if match else "")
        return _vectorise(split["train"], split["test"])
    octis = {"m10": "M10", "dblp": "DBLP"}[name]
    return (load_octis(octis, data_home, subset="train").data,
            load_octis(octis, data_home, subset="test").data)


# ------------------------------------------------------------------ variants
def _neural(cls, **params):
    """A variant: ``cls`` with ``params``, without free bits unless they set them (the
    screens ran before free bits became the default)."""
    return lambda k, seed, threads: cls(k, random_state=seed, device="cpu", n_jobs=threads,
                                        **{"free_bits": 0.0, **params})


VARIANTS = {  # "default", "AVITM": the defaults before free bits
    "default": _neural(ProdLDA, free_bits=0.0),
    "avitm_preset": lambda k, seed, threads: ProdLDA.from_preset(
        "avitm", n_components=k, max_iter=50, random_state=seed, device="cpu", n_jobs=threads),
    "AVITM": _neural(AVITM, free_bits=0.0),
    "sklearn_lda": lambda k, seed, threads: LatentDirichletAllocation(k, random_state=seed),
    "LDAGibbs": lambda k, seed, threads: LDAGibbs(k, random_state=seed, n_jobs=threads),
}


class _LinearSchedule(Callback):
    """Sets ``value(t)`` on the module before each training step, ``t`` going from 0 to
    1 over the first ``fraction`` of training (and staying at 1)."""

    def __init__(self, fraction):
        self.fraction = fraction

    def on_train_begin(self, net, X=None, **kwargs):
        self.step_ = 0
        self.total_ = max(1, int(self.fraction * net.max_epochs * len(
            net.get_iterator(net.get_dataset(X), training=True))))

    def on_batch_begin(self, net, training=None, **kwargs):
        if training:
            self.apply(net.module_, min(1.0, self.step_ / self.total_))
            self.step_ += 1


class _KLWarmup(_LinearSchedule):
    """Scales the KL term by ``min(1, step / warmup_steps)`` during training."""

    def __init__(self, fraction=0.5):
        super().__init__(fraction)

    def apply(self, module, t):
        module.kl_weight = t

    def on_train_end(self, net, **kwargs):
        net.module_.kl_weight = 1.0


def _weighted_negative_elbo(module, x, y_pred):
    reconstruction, mu, logvar = y_pred
    return reconstruction + module.kl_weight * gaussian_kl(mu, logvar, module.prior_mean,
                                                           module.prior_var)


class KLWarmupProdLDA(ProdLDA):
    """ProdLDA whose KL term is warmed up linearly over the first half of training."""

    def _build_module(self, n_features):
        module = super()._build_module(n_features)
        module.kl_weight = 1.0
        module.negative_elbo = types.MethodType(_weighted_negative_elbo, module)
        return module


class LearnedPriorProdLDA(ProdLDA):
    """ProdLDA whose logistic-normal prior (mean and variance per topic) is learned,
    started at the Laplace approximation (as the CTM and OCTIS ports do)."""

    def _build_module(self, n_features):
        module = super()._build_module(n_features)
        module.learned_mean = torch.nn.Parameter(module.prior_mean.clone())
        module.learned_logvar = torch.nn.Parameter(module.prior_var.log().clone())

        def negative_elbo(self, x, y_pred):
            reconstruction, mu, logvar = y_pred
            return reconstruction + gaussian_kl(mu, logvar, self.learned_mean,
                                                self.learned_logvar.exp())

        module.negative_elbo = types.MethodType(negative_elbo, module)
        return module


class _DecoderNormAnneal(_LinearSchedule):
    """Moves the decoder from batch-normed logits to plain ones: its weight on the
    batch norm goes linearly from 1 to 0 over the first ``fraction`` of training."""

    def __init__(self, fraction=0.75):
        super().__init__(fraction)

    def apply(self, module, t):
        module.decoder.bn_weight = 1.0 - t


def _annealed_nll(decoder, theta, x):
    z = theta @ decoder.beta
    weight = decoder.bn_weight
    logits = (weight * decoder.bn(z) + (1.0 - weight) * (z + decoder.bn.bias)
              + decoder.background)
    return reconstruction_nll(x, torch.log_softmax(logits, dim=-1))


class DecoderNormAnnealedProdLDA(ProdLDA):
    """ProdLDA whose decoder batch norm is annealed away (Scholar's ``eta_bn_prop``):
    the trained model is ``softmax(theta @ beta + shift)``. Research only: ``score``
    and the generative view still assume the batch norm."""

    def _build_module(self, n_features):
        module = super()._build_module(n_features)
        module.decoder.bn_weight = 1.0
        module.decoder.nll = types.MethodType(_annealed_nll, module.decoder)
        return module


#: ``token_batches``: batches of about this many tokens (64 documents of 100 tokens).
BATCH_TOKENS = 6400


VARIANTS.update({
    "alpha_1_over_k": lambda k, seed, threads: ProdLDA(
        k, doc_topic_prior=1.0 / k, random_state=seed, device="cpu", n_jobs=threads,
        free_bits=0.0),
    "kl_warmup": lambda k, seed, threads: KLWarmupProdLDA(
        k, callbacks=[("warmup", _KLWarmup())], random_state=seed, device="cpu",
        n_jobs=threads, free_bits=0.0),
    "learned_prior": _neural(LearnedPriorProdLDA),
    "small_encoder": _neural(ProdLDA, hidden_sizes=(50,)),
    "word_background": _neural(ProdLDA, word_background=True),
    "alpha_1_over_k_kl_warmup": lambda k, seed, threads: KLWarmupProdLDA(
        k, doc_topic_prior=1.0 / k, callbacks=[("warmup", _KLWarmup())], random_state=seed,
        device="cpu", n_jobs=threads, free_bits=0.0),
    # the screens ran this floor as a subclass, before the estimators had the parameter
    "free_bits": _neural(ProdLDA, free_bits=0.25),
    "AVITM_free_bits": _neural(AVITM, free_bits=0.25),
    "decoder_bn_anneal": lambda k, seed, threads: DecoderNormAnnealedProdLDA(
        k, callbacks=[("anneal", _DecoderNormAnneal())], random_state=seed, device="cpu",
        n_jobs=threads, free_bits=0.0),
})


def mean_length(X):
    return float(X.sum()) / max(X.shape[0], 1)


def largest_share(model, X):
    kept = X[np.asarray(X.sum(1)).ravel() > 0]
    theta = model.transform(kept)
    return float(theta.max(1).mean()), int(np.unique(theta.argmax(1)).size)


def evaluate(model, X_test):
    kept = X_test[np.asarray(X_test.sum(1)).ravel() > 0]
    share, used = largest_share(model, kept)
    return {"npmi": float(npmi_coherence(model, kept, 10).mean),
            "td10": float(topic_diversity(model, 10)), "largest_share": share,
            "topics_used": used}


def summarise(rows):
    cells = {}
    for r in rows:
        cells.setdefault((r["corpus"], r["K"], r["variant"]), []).append(r)
    out = []
    for (corpus, k, variant), group in sorted(cells.items()):
        npmi = [g["npmi"] for g in group]
        out.append({"corpus": corpus, "K": k, "variant": variant, "seeds": len(group),
                    "npmi": float(np.mean(npmi)), "npmi_sd": float(np.std(npmi)),
                    **{m: float(np.mean([g[m] for g in group]))
                       for m in ("td10", "largest_share", "topics_used", "fit_s")}})
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--corpora", nargs="+", default=["gnews", "subjects", "m10", "dblp"])
    parser.add_argument("--topics", type=int, nargs="+", default=[20])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--variants", nargs="+", default=["default"])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default="short_texts")
    args = parser.parse_args(argv)
    if TINY:
        args.corpora, args.topics, args.seeds = ["m10"], [5], [0]
        args.variants = ["token_batches", *VARIANTS]
    results = results_dir()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore")
    info = machine()
    header = (f"Measured on {info['cpu']} ({args.threads} thread per fit), commit "
              f"{info.get('git_commit')} (plus the working tree's changes); NPMI on the "
              "held-out documents (boolean documents, epsilon convention, top 10), TD@10, "
              "largest_share: mean over held-out documents of the largest topic share of "
              "`transform` (uniform: 1 / K), topics_used: topics that are some held-out "
              "document's largest; means over seeds (npmi_sd: standard deviation).\n\n")
    rows = []
    for corpus in args.corpora:
        X, X_test = (X[:300] if TINY else X for X in load(corpus, args.data_home))
        print(corpus, X.shape, "tokens/doc", round(mean_length(X), 2), flush=True)
        for k in args.topics:
            for seed in args.seeds:
                for variant in args.variants:
                    if variant == "token_batches":  # the batch size follows the corpus
                        size = max(64, int(round(BATCH_TOKENS / mean_length(X))))
                        model = ProdLDA(k, batch_size=size, random_state=seed, device="cpu",
                                        n_jobs=args.threads, free_bits=0.0)
                    else:
                        model = VARIANTS[variant](k, seed, args.threads)
                    if TINY:
                        model.set_params(max_iter=1)
                    start = time.perf_counter()
                    model.fit(X)
                    row = {"corpus": corpus, "K": k, "variant": variant, "seed": seed,
                           "fit_s": time.perf_counter() - start, "n_docs": X.shape[0],
                           "n_words": X.shape[1], "tokens_per_doc": mean_length(X),
                           **evaluate(model, X_test)}
                    rows.append(row)
                    print(row, flush=True)
                    write_results(args.name, {"machine": info, "args": vars(args),
                                              "rows": rows},
                                  header + markdown_table(summarise(rows), [
                                      "corpus", "K", "variant", "seeds", "npmi", "npmi_sd",
                                      "td10", "largest_share", "topics_used", "fit_s"]),
                                  directory=results)
    return rows


if __name__ == "__main__":
    main()
