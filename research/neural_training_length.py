"""How long should a neural topic model train? Held-out quality against optimiser steps.

ProdLDA and AVITM (their defaults; K = 20, and K = 10 and K = 50 on some corpora) are
fitted on slices of 100 to 2,000 documents of four corpora: news articles, posts,
very long papers and short titles:

* ``bbc``: BBC News (OCTIS), its train and validation splits as the pool (1,890
  documents), its test split (335) as the reference;
* ``20ng``: 20 Newsgroups as AVITM preprocessed it, train / test (7,487);
* ``nips``: the UCI NIPS papers, train (1,350) / test (150);
* ``gnews``: GoogleNews titles (CTM's copy, about 6 tokens each). It has no split:
  a fixed random fifth (2,221 titles, ``default_rng(0)``; 2,219 keep a word) is held
  out as the reference, and the vocabulary is the words in 3 or more titles of the
  rest.

A slice of N documents is N random non-empty documents of the pool
(``default_rng(0)``, the same slice for every model and seed; the whole pool when it
has fewer), and its vocabulary is the words it contains, as a vectorizer fitted on
it would give. Each fit runs 3,000 optimiser steps (at least 50 epochs) in one
``fit`` and a callback records every epoch's top 10 words per topic and the losses;
the held-out NPMI of the top 10 words in both conventions of ``npmi_coherence``
(``epsilon`` and ``zero``; the reference is the corpus's held-out part restricted to
the slice's vocabulary, which changes no document frequency) and TD@10 are computed
on a grid of step counts and at the epochs the rules (``RULES``) pick. A fit stopped
after E epochs equals epoch E of a longer fit: ``warm_check`` records that a warm fit
continued in pieces and one long fit give the same ``components_`` (difference 0.0)
and that the recorded epoch has the top words of a fit stopped there.

The K = 20 fits are repeated with ``validation_fraction=0.1`` and no early stopping,
to replay where early stopping on ``valid_loss`` would have stopped (exactly as the
estimator's monitor decides). Baselines on the same slices and references:
``LDAGibbs`` at its defaults and scikit-learn's
``LatentDirichletAllocation(learning_method="batch")``.

Findings (``research/results/neural_training_length.rst``, three seeds):

* AVITM's NPMI rose with steps in both conventions on every corpus; ``auto``
  (at least 1,000 steps) suits it.
* ProdLDA's epsilon NPMI peaked at 300-700 steps on BBC News and the NIPS papers at
  K = 20 and K = 50 and fell after (at K = 10 on BBC News it peaked near 1,000), while
  its zero-convention NPMI and its diversity kept rising; on 20 Newsgroups and the
  titles it rose to 1,000 steps and more. Today's ``auto`` was 0.02-0.09 below 50
  epochs there (epsilon).
* Early stopping on ``valid_loss`` stopped after 13-120 steps on 100 documents and
  after 2,000-3,000 on the NIPS papers: the ELBO does not follow the coherence.
* The ``tokens_k`` rule (ProdLDA: at least 50 epochs and
  ``clip(2,000,000 / (K * L), 300, 1000)`` steps, L the mean tokens per training
  document; AVITM: ``auto``) was within 0.01 of the better of 50 epochs and ``auto``
  in both conventions on 55 of 58 slices, 0.0101 and 0.0112 below on two (zero
  convention), and 0.089 (epsilon) below on 20 Newsgroups, 700 documents, K = 50,
  where 50 epochs stop ProdLDA half-way out of a phase of near-duplicate topics.

Usage (the run times are this study's, one thread on a shared machine)::

    python research/neural_training_length.py run --phase main        # 37 minutes
    python research/neural_training_length.py run --phase validation  # 32 minutes
    python research/neural_training_length.py run --phase k10         # 11 minutes
    python research/neural_training_length.py run --phase large_short # 2 minutes
    python research/neural_training_length.py run --phase k50 --models ProdLDA  # 13 minutes
    python research/neural_training_length.py report                  # table and picture
    SKTOPICS_RESEARCH_TINY=1 python research/neural_training_length.py   # a check, seconds

``run`` adds each fit to ``research/results/neural_training_length.json`` as it
finishes and skips fits already there, so an interrupted run resumes; the per-epoch
records go to ``--cache`` (default ``~/.cache/sktopics-research``), from which
``report`` scores the epochs a new rule picks (and adds those points to the JSON).
``report`` writes the summary and targets into the JSON, the ``.rst`` tables and
``neural_training_length.png``.
"""

import argparse
import json
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from skorch.callbacks import Callback

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common
from _common import default_data_home, machine, markdown_table, markdown_to_rst  # noqa: E402
from sklearn.decomposition import LatentDirichletAllocation  # noqa: E402

from sktopics import AVITM, LDAGibbs, ProdLDA  # noqa: E402
from sktopics._neural._data import natural_batches  # noqa: E402
from sktopics.datasets import (  # noqa: E402
    load_20news_avitm,
    load_googlenews,
    load_nips,
    load_octis,
)
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny import TINY, results_dir  # noqa: E402

MODELS = {"ProdLDA": ProdLDA, "AVITM": AVITM}
CORPORA = ["bbc", "20ng", "nips", "gnews"]
SIZES = [100, 300, 700, 2000]
#: Step counts at which every fit is scored (rounded to whole epochs).
GRID = [25, 50, 75, 100, 150, 200, 250, 300, 400, 500, 600, 700, 850, 1000, 1250, 1500,
        1750, 2000, 2500, 3000]
MAX_STEPS = 3000
BATCH = 64
OLD_EPOCHS = 50  # the rule before max_iter="auto"
MIN_STEPS = 1000  # today's "auto": max(50 epochs, 1,000 steps)
VALIDATION = 0.1
PATIENCES = [5, 10, 20]  # early stopping's n_iter_no_change (tol 1e-4) replayed
PHASES = {  # (corpora, sizes, K, validation)
    "main": (CORPORA, SIZES, 20, False),
    "validation": (CORPORA, SIZES, 20, True),
    "k10": (["bbc", "gnews"], SIZES, 10, False),
    "large_short": (["gnews"], [5000], 20, False),  # 50 epochs are 3,900 steps there
    "k50": (CORPORA, [300, 700], 50, False),  # run with --models ProdLDA
}
SEEDS = [0, 1, 2]


# ---------------------------------------------------------------------- corpora
def load_pool(name, data_home):
    """``(pool, reference)`` count matrices of a corpus over one vocabulary."""
    if name == "bbc":
        parts = [load_octis("BBC_News", data_home, subset=s).data for s in ("train", "validation")]
        return sp.vstack(parts).tocsr(), load_octis("BBC_News", data_home, subset="test").data
    if name == "20ng":
        return (load_20news_avitm(data_home, subset="train").data,
                load_20news_avitm(data_home, subset="test").data)
    if name == "nips":
        return (load_nips(data_home, subset="train").data,
                load_nips(data_home, subset="test").data)
    if name == "gnews":
        X = load_googlenews(data_home).data.tocsr()
        order = np.random.default_rng(0).permutation(X.shape[0])
        n_ref = X.shape[0] // 5
        pool, ref = X[np.sort(order[n_ref:])], X[np.sort(order[:n_ref])]
        keep = np.flatnonzero(np.asarray((pool > 0).sum(0)).ravel() >= 3)
        return pool[:, keep], ref[:, keep]
    raise ValueError(name)


def draw(pool, ref, n):
    """A slice of ``n`` non-empty pool documents over the words it contains, and the
    non-empty reference documents (of the corpus's vocabulary) over those words."""
    pool = pool[np.flatnonzero(np.asarray(pool.sum(1)).ravel() > 0)]
    ref = ref[np.flatnonzero(np.asarray(ref.sum(1)).ravel() > 0)]
    if n < pool.shape[0]:
        pool = pool[np.sort(np.random.default_rng(0).choice(pool.shape[0], n, replace=False))]
    words = np.flatnonzero(np.asarray(pool.sum(0)).ravel() > 0)
    return pool[:, words].astype(np.float64).tocsr(), ref[:, words].tocsr()


# ------------------------------------------------------------------------- fits
class TopWords(Callback):
    """Records, after every epoch, each topic's 10 top words and the epoch's losses
    (reads the decoder only: the fit is the same with or without it)."""

    def __init__(self, scores):
        self.scores = scores  # net -> (K, V) tensor ranking each topic's words

    def initialize(self):
        self.top_, self.train_loss_, self.valid_loss_ = [], [], []
        return self

    def on_epoch_end(self, net, **kwargs):
        with torch.no_grad():
            top = torch.topk(self.scores(net).float(), 10, dim=1).indices
        self.top_.append(top.cpu().numpy().astype(np.int32))
        row = net.history[-1]
        self.train_loss_.append(row["train_loss"])
        self.valid_loss_.append(row.get("valid_loss", np.nan))


def _scores(model_name):
    if model_name == "ProdLDA":
        return lambda net: net.module_.decoder.beta  # components_ = softmax(beta)
    return lambda net: net.module_.decoder.logits()  # components_ = softmax(logits)


def steps_per_epoch(n_train):
    return natural_batches(n_train, BATCH, "shuffle")


def n_train_of(n, validation):
    return n - int(round(VALIDATION * n)) if validation else n


def auto_epochs(per_epoch):
    return max(OLD_EPOCHS, -(-MIN_STEPS // per_epoch))


def fit_curve(model_name, K, X, seed, validation, max_steps):
    """One fit of ``max_steps`` steps; per epoch: top words and losses."""
    per_epoch = steps_per_epoch(n_train_of(X.shape[0], validation))
    epochs = -(-max_steps // per_epoch)
    recorder = TopWords(_scores(model_name))
    params = dict(validation_fraction=VALIDATION, n_iter_no_change=10 ** 6) if validation else {}
    model = MODELS[model_name](K, max_iter=epochs, random_state=seed, device="cpu", n_jobs=1,
                               callbacks=[("top_words", recorder)], **params)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model.fit(X)
    seconds = time.perf_counter() - start
    top = np.stack(recorder.top_)
    assert top.shape[0] == epochs == model.n_iter_
    # the last record is the fitted model's topics
    final = np.argsort(-model.components_, axis=1, kind="stable")[:, :10]
    agree = float(np.mean(np.sort(final, 1) == np.sort(top[-1], 1)))
    return {"top": top, "train_loss": np.asarray(recorder.train_loss_),
            "valid_loss": np.asarray(recorder.valid_loss_), "per_epoch": per_epoch,
            "seconds": seconds, "final_agreement": agree}


def as_matrix(top, n_words):
    """A topic-word matrix whose rows rank ``top`` first, in order."""
    matrix = np.zeros((top.shape[0], n_words))
    rows = np.repeat(np.arange(top.shape[0]), top.shape[1])
    matrix[rows, top.ravel()] = np.tile(np.arange(top.shape[1], 0, -1), top.shape[0])
    return matrix


def score(topic_word, X_ref):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # top words absent from the reference
        eps = npmi_coherence(topic_word, X_ref, 10).mean
        zero = npmi_coherence(topic_word, X_ref, 10, zero_cooccurrence="zero").mean
    return {"npmi_epsilon": float(eps), "npmi_zero": float(zero),
            "td10": float(topic_diversity(topic_word, 10))}


def stop_epoch(valid_loss, patience, tol=1e-4):
    """The epoch (1-based) at which early stopping ends training, as the estimator's
    monitor decides, or None when it would not stop."""
    best, waited = np.inf, 0
    for epoch, loss in enumerate(valid_loss, 1):
        if loss < best - tol:
            best, waited = loss, 0
        else:
            waited += 1
        if waited >= patience:
            return epoch
    return None


def _float(value):
    return None if not np.isfinite(value) else float(value)


def grid_epochs(per_epoch, n_epochs, grid):
    marks = {max(1, round(s / per_epoch)) for s in grid}
    marks |= {OLD_EPOCHS, auto_epochs(per_epoch)}
    return sorted(e for e in marks if e <= n_epochs)


# ---------------------------------------------------------------------- storage
def _key(row):
    return "|".join(str(row[k]) for k in ("kind", "model", "corpus", "n_documents", "K",
                                           "seed", "validation"))


def load_results(path):
    if path.exists():
        return json.loads(path.read_text())
    return {"runs": [], "curves": [], "baselines": [], "warm_check": []}


def save_results(path, results):
    """One line per run, fit, baseline and summary row (the file stays diffable)."""
    parts = []
    for key, value in results.items():
        if isinstance(value, list):
            rows = ",\n  ".join(json.dumps(_rounded(v), separators=(",", ":")) for v in value)
            parts.append(f"{json.dumps(key)}: [\n  {rows}\n ]" if value else f"{json.dumps(key)}: []")
        else:
            parts.append(f"{json.dumps(key)}: {json.dumps(_rounded(value))}")
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text("{\n " + ",\n ".join(parts) + "\n}\n")
    os.replace(tmp, path)


def _rounded(value):
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def cache_path(cache, row):
    return Path(cache) / ("ntl_" + _key(row).replace("|", "_") + ".npz")


def warm_check(X, X_ref, seed=0):
    """A warm fit continued in three pieces, one long fit and the callback's record of
    the long fit's epochs give the same topics (max difference of components_)."""
    out = []
    for name, cls in MODELS.items():
        per = steps_per_epoch(X.shape[0])
        pieces = [max(1, round(s / per)) for s in (100, 200, 300)]
        common = dict(random_state=seed, device="cpu", n_jobs=1)
        warm = cls(20, warm_start=True, **common)
        for a, b in zip([0] + pieces[:-1], pieces):
            warm.set_params(max_iter=b - a)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                warm.fit(X)
        recorder = TopWords(_scores(name))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            long = cls(20, max_iter=pieces[-1], callbacks=[("top_words", recorder)],
                       **common).fit(X)
            short = cls(20, max_iter=pieces[0], **common).fit(X)
        top_short = np.argsort(-short.components_, 1, kind="stable")[:, :10]
        out.append({
            "model": name, "n_documents": int(X.shape[0]), "epochs": pieces,
            "warm_vs_long_max_abs": float(np.abs(warm.components_ - long.components_).max()),
            "first_piece_top10_equal_record": bool(
                np.array_equal(np.sort(top_short, 1), np.sort(recorder.top_[pieces[0] - 1], 1))),
            "npmi_long": score(long.components_, X_ref)["npmi_epsilon"],
            "npmi_record": score(as_matrix(recorder.top_[-1], X.shape[1]), X_ref)["npmi_epsilon"],
        })
        print(out[-1], flush=True)
    return out


def run(args):
    path = results_dir() / "neural_training_length.json"
    results = load_results(path)
    done = {_key(r) for r in results["curves"] + results["baselines"]}
    Path(args.cache).mkdir(parents=True, exist_ok=True)
    started = time.time()
    if TINY:
        plan = [("20ng", [100], 5, False), ("20ng", [100], 5, True)]
        seeds, max_steps, grid = [0], 6, [2, 4, 6]
    else:
        corpora, sizes, K, validation = PHASES[args.phase]
        corpora = args.corpora or corpora
        plan = [(c, args.sizes or sizes, args.topics or K, validation) for c in corpora]
        seeds, max_steps, grid = args.seeds, MAX_STEPS, GRID
    for corpus, sizes, K, validation in plan:
        pool, ref = load_pool(corpus, args.data_home)
        if TINY:
            ref = ref[:200]
        for n in sizes:
            X, X_ref = draw(pool, ref, n)
            base = {"corpus": corpus, "n_documents": int(X.shape[0]), "K": K,
                    "n_words": int(X.shape[1]),
                    "tokens_per_document": float(X.sum() / X.shape[0]),
                    "n_reference": int(X_ref.shape[0])}
            if not results["warm_check"] and not validation and not TINY and corpus == "bbc":
                results["warm_check"] = warm_check(draw(pool, ref, 300)[0],
                                                   draw(pool, ref, 300)[1])
                save_results(path, results)
            for seed in seeds:
                baselines = [] if validation else ["LDAGibbs", "sklearn_lda"]
                for name in baselines:
                    row = {"kind": "baseline", "model": name, **base, "seed": seed,
                           "validation": False}
                    if _key(row) in done:
                        continue
                    start = time.perf_counter()
                    model = (LDAGibbs(K, random_state=seed, n_jobs=1, device="cpu")
                             if name == "LDAGibbs" else
                             LatentDirichletAllocation(K, learning_method="batch",
                                                       random_state=seed, n_jobs=1))
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model.fit(X)
                    row["seconds"] = time.perf_counter() - start
                    row.update(score(model.components_, X_ref))
                    results["baselines"].append(row)
                    save_results(path, results)
                    print(row, flush=True)
                for model_name in args.models:
                    row = {"kind": "curve", "model": model_name, **base, "seed": seed,
                           "validation": validation}
                    if _key(row) in done:
                        continue
                    per = steps_per_epoch(n_train_of(X.shape[0], validation))
                    curve = fit_curve(model_name, K, X, seed, validation,
                                      max(max_steps, OLD_EPOCHS * per))
                    np.savez_compressed(cache_path(args.cache, row), top=curve["top"],
                                        train_loss=curve["train_loss"],
                                        valid_loss=curve["valid_loss"])
                    per = curve["per_epoch"]
                    n_epochs = curve["top"].shape[0]
                    epochs = grid_epochs(per, n_epochs, grid)
                    stops = {}
                    if validation:
                        for patience in PATIENCES:
                            stops[str(patience)] = stop_epoch(curve["valid_loss"], patience)
                        epochs = sorted(set(epochs) | {e for e in stops.values() if e})
                    points = []
                    for e in epochs:
                        point = {"epoch": e, "steps": e * per,
                                 "train_loss": float(curve["train_loss"][e - 1]),
                                 "valid_loss": _float(curve["valid_loss"][e - 1])}
                        point.update(score(as_matrix(curve["top"][e - 1], X.shape[1]), X_ref))
                        points.append(point)
                    row.update({"steps_per_epoch": per, "epochs": n_epochs,
                                "seconds": curve["seconds"],
                                "final_top10_agreement": curve["final_agreement"],
                                "early_stop_epoch": stops, "points": points})
                    results["curves"].append(row)
                    save_results(path, results)
                    print({k: v for k, v in row.items() if k != "points"},
                          f"npmi@{points[-1]['steps']}={points[-1]['npmi_epsilon']:.3f}",
                          flush=True)
    results["runs"].append({"machine": machine(), "command": sys.argv[1:],
                            "total_seconds": time.time() - started})
    save_results(path, results)
    if TINY:
        report(args)


# ------------------------------------------------------------------------ rules
# A rule sees what a fit sees: the training documents' number and mean length, the
# batches an epoch makes, and the losses recorded so far; never the held-out NPMI.
def rule_old(fit):
    return OLD_EPOCHS


def rule_auto(fit):
    return auto_epochs(fit["per_epoch"])


def rule_early_stop(fit):
    """validation_fraction=0.1, n_iter_no_change=10, tol=1e-4; cap: the fit's epochs."""
    if fit["valid_loss"] is None:  # no cache: the stop the run recorded
        return fit["recorded_stops"].get("10") or fit["n_epochs"]
    return stop_epoch(fit["valid_loss"], 10) or fit["n_epochs"]


def rule_epoch_cap(fit):
    """today's auto, but at most 150 epochs: max(50, min(ceil(1000 / b), 150))."""
    return max(OLD_EPOCHS, min(-(-MIN_STEPS // fit["per_epoch"]), 150))


#: Tokens a ProdLDA fit should see: 1,000 batches of 64 documents of 100 tokens.
TOKEN_BUDGET = MIN_STEPS * BATCH * 100


def token_steps(model, tokens_per_document):
    """The steps of the ``tokens`` rule: ProdLDA, TOKEN_BUDGET tokens' worth of
    batches, between 300 and 1,000; AVITM, 1,000 (today's)."""
    if model != "ProdLDA":
        return MIN_STEPS
    steps = TOKEN_BUDGET / (BATCH * tokens_per_document)
    return int(round(min(MIN_STEPS, max(300, steps))))


def rule_tokens(fit):
    """max(50 epochs, the epochs of token_steps)."""
    steps = token_steps(fit["model"], fit["tokens_per_document"])
    return max(OLD_EPOCHS, -(-steps // fit["per_epoch"]))


def topic_steps(model, tokens_per_document, n_components):
    """The steps of the ``tokens_k`` rule: ProdLDA, clip(2,000,000 / (K L), 300,
    1,000), which is ``token_steps`` at K = 20; AVITM, 1,000."""
    if model != "ProdLDA":
        return MIN_STEPS
    steps = 20 * TOKEN_BUDGET / (BATCH * tokens_per_document * n_components)
    return int(round(min(MIN_STEPS, max(300, steps))))


def rule_tokens_k(fit):
    """max(50 epochs, the epochs of topic_steps)."""
    steps = topic_steps(fit["model"], fit["tokens_per_document"], fit["K"])
    return max(OLD_EPOCHS, -(-steps // fit["per_epoch"]))


def rule_length_sqrt(fit):
    """As ``tokens``, with 1,000 * sqrt(100 / L) steps for ProdLDA (same bounds)."""
    if fit["model"] != "ProdLDA":
        return rule_auto(fit)
    steps = min(MIN_STEPS, max(300, MIN_STEPS * (100 / fit["tokens_per_document"]) ** 0.5))
    return max(OLD_EPOCHS, -(-int(round(steps)) // fit["per_epoch"]))


#: name -> (function, runs it is read from: "plain" or "validation", description)
RULES = {
    "old": (rule_old, "plain", "50 epochs (the rule before max_iter='auto')"),
    "auto": (rule_auto, "plain", "today's max_iter='auto': max(50 epochs, 1,000 steps)"),
    "early_stop": (rule_early_stop, "validation",
                   "validation_fraction=0.1, n_iter_no_change=10, tol=1e-4, up to 3,000 "
                   "steps (scored on the fit that trained on the other 90%)"),
    "epoch_cap": (rule_epoch_cap, "plain", "max(50, min(ceil(1000 / b), 150)) epochs, "
                  "b batches an epoch"),
    "length_sqrt": (rule_length_sqrt, "plain",
                    "ProdLDA: max(50 epochs, S steps), S = clip(1000 * sqrt(100 / L), 300, "
                    "1000), L the mean tokens per training document; AVITM: auto"),
    "tokens": (rule_tokens, "plain",
               "ProdLDA: max(50 epochs, S steps), S = clip(100,000 / L, 300, 1000), the "
               "steps in which batches of 64 see 6.4 million tokens; AVITM: auto"),
    "tokens_k": (rule_tokens_k, "plain",
                 "ProdLDA: max(50 epochs, S steps), S = clip(2,000,000 / (K L), 300, "
                 "1000), `tokens` at K = 20; AVITM: auto"),
}
RECOMMENDED = "tokens_k"


# ----------------------------------------------------------------------- report
class Scorer:
    """Scores a recorded fit at any epoch: from its points, or from the cache."""

    def __init__(self, data_home, cache):
        self.data_home, self.cache, self.pools, self.slices = data_home, cache, {}, {}

    def slice(self, corpus, n):
        if (corpus, n) not in self.slices:
            if corpus not in self.pools:
                self.pools[corpus] = load_pool(corpus, self.data_home)
            pool, ref = self.pools[corpus]
            if TINY:
                ref = ref[:200]
            self.slices[corpus, n] = draw(pool, ref, n)
        return self.slices[corpus, n]

    def losses(self, curve):
        """The per-epoch losses from the cache, or ``(None, None)`` without it."""
        path = cache_path(self.cache, curve)
        if not path.exists():
            return None, None
        z = np.load(path)
        return z["train_loss"], z["valid_loss"]

    def at(self, curve, epoch):
        epoch = min(max(1, int(epoch)), curve["epochs"])
        for point in curve["points"]:
            if point["epoch"] == epoch:
                return point
        z = np.load(cache_path(self.cache, curve))
        X, X_ref = self.slice(curve["corpus"], curve["n_documents"])
        point = {"epoch": epoch, "steps": epoch * curve["steps_per_epoch"],
                 "train_loss": float(z["train_loss"][epoch - 1]),
                 "valid_loss": _float(z["valid_loss"][epoch - 1])}
        point.update(score(as_matrix(z["top"][epoch - 1], X.shape[1]), X_ref))
        curve["points"] = sorted(curve["points"] + [point], key=lambda p: p["epoch"])
        return point


def fit_view(curve, scorer):
    """What the fit saw."""
    train_loss, valid_loss = scorer.losses(curve)
    return {"model": curve["model"], "K": curve["K"], "n_documents": curve["n_documents"],
            "per_epoch": curve["steps_per_epoch"],
            "tokens_per_document": curve["tokens_per_document"], "n_epochs": curve["epochs"],
            "train_loss": train_loss, "valid_loss": valid_loss,
            "recorded_stops": curve.get("early_stop_epoch", {})}


METRICS = ("npmi_epsilon", "npmi_zero", "td10")


def _stats(values):
    values = np.asarray(values, dtype=float)
    return float(values.mean()), float(values.std(ddof=1)) if values.size > 1 else 0.0


def summarise(results, scorer):
    """Per corpus slice, K and model: each rule's picks and scores over the seeds."""
    groups = {}
    for curve in results["curves"]:
        key = (curve["corpus"], curve["n_documents"], curve["K"], curve["model"])
        groups.setdefault(key, {"plain": [], "validation": []})[
            "validation" if curve["validation"] else "plain"].append(curve)
    rows = []
    for (corpus, n, K, model), runs in sorted(groups.items(), key=_order):
        for name, (rule, source, _) in RULES.items():
            curves = sorted(runs[source], key=lambda c: c["seed"])
            if not curves:
                continue
            points = [scorer.at(c, rule(fit_view(c, scorer))) for c in curves]
            row = {"corpus": corpus, "n_documents": n, "K": K, "model": model, "rule": name,
                   "tokens_per_document": curves[0]["tokens_per_document"],
                   "seeds": [c["seed"] for c in curves],
                   "steps": [p["steps"] for p in points]}
            for metric in METRICS:
                row[metric] = [p[metric] for p in points]
                row[metric + "_mean"], row[metric + "_sd"] = _stats(row[metric])
            rows.append(row)
    base = {}
    for b in results["baselines"]:
        base.setdefault((b["corpus"], b["n_documents"], b["K"], b["model"]), []).append(b)
    for (corpus, n, K, model), fits in sorted(base.items(), key=_order):
        row = {"corpus": corpus, "n_documents": n, "K": K, "model": model, "rule": "baseline",
               "tokens_per_document": fits[0]["tokens_per_document"],
               "seeds": [b["seed"] for b in fits], "steps": None}
        for metric in METRICS:
            row[metric] = [b[metric] for b in fits]
            row[metric + "_mean"], row[metric + "_sd"] = _stats(row[metric])
        rows.append(row)
    return rows


def _order(item):
    corpus, n, K, model = item[0]
    return (-K, CORPORA.index(corpus) if corpus in CORPORA else 9, n, model)


def _lookup(summary):
    return {(r["corpus"], r["n_documents"], r["K"], r["model"], r["rule"]): r for r in summary}


def targets(results, summary, scorer, rule=None):
    """The three targets for ``rule`` (default: the recommended one)."""
    rule = rule or RECOMMENDED
    table = _lookup(summary)
    first = []  # never more than 0.01 below the better of old and auto
    for (corpus, n, K, model, name), row in table.items():
        if name != rule:
            continue
        old, auto = table[corpus, n, K, model, "old"], table[corpus, n, K, model, "auto"]
        entry = {"corpus": corpus, "n_documents": n, "K": K, "model": model}
        for metric in ("npmi_epsilon", "npmi_zero"):
            best = max(old[metric + "_mean"], auto[metric + "_mean"])
            entry[metric + "_margin"] = row[metric + "_mean"] - best
        first.append(entry)
    # the warning's advice: from a fit of fewer steps than the rule picks to the rule
    advice = []
    for curve in results["curves"]:
        if curve["validation"]:
            continue
        pick = scorer.at(curve, RULES[rule][0](fit_view(curve, scorer)))
        for point in curve["points"]:
            if point["steps"] < pick["steps"]:
                advice.append({"corpus": curve["corpus"], "n_documents": curve["n_documents"],
                               "K": curve["K"], "model": curve["model"], "seed": curve["seed"],
                               "steps": point["steps"], "advised_steps": pick["steps"],
                               **{m: pick[m] - point[m] for m in ("npmi_epsilon", "npmi_zero")}})
    short = []  # ProdLDA on short texts against scikit-learn's LDA
    for (corpus, n, K, model, name), row in table.items():
        if corpus == "gnews" and model == "ProdLDA" and name == rule:
            sk = table.get((corpus, n, K, "sklearn_lda", "baseline"))
            if sk:
                short.append({"n_documents": n, "K": K, **{
                    m + "_vs_sklearn": row[m + "_mean"] - sk[m + "_mean"]
                    for m in ("npmi_epsilon", "npmi_zero")}})
    return {"rule": rule, "vs_old_and_auto": first, "advice_points": advice,
            "short_texts_vs_sklearn": short}


def warning_threshold(results, scorer, rule=None,
                      fractions=(1, 0.75, 0.5, 0.4, 0.3, 0.25, 0.2)):
    """For a warning that fires below ``fraction`` of the rule's steps and advises the
    rule: per model, the worst mean change of NPMI (over seeds, per grid point) that
    following it brings, per convention."""
    rule = rule or RECOMMENDED
    out = []
    groups = {}
    for curve in results["curves"]:
        if not curve["validation"]:
            groups.setdefault((curve["corpus"], curve["n_documents"], curve["K"],
                               curve["model"]), []).append(curve)
    for model in MODELS:
        for fraction in fractions:
            worst = {"npmi_epsilon": (np.inf, None), "npmi_zero": (np.inf, None)}
            for key, curves in groups.items():
                if key[3] != model:
                    continue
                picks = [scorer.at(c, RULES[rule][0](fit_view(c, scorer))) for c in curves]
                limit = fraction * np.mean([p["steps"] for p in picks])
                epochs = [p["epoch"] for p in curves[0]["points"] if p["steps"] < limit]
                for epoch in epochs:
                    here = [next((p for p in c["points"] if p["epoch"] == epoch), None)
                            for c in curves]
                    if any(h is None for h in here):
                        continue
                    for metric in worst:
                        change = np.mean([p[metric] - h[metric] for p, h in zip(picks, here)])
                        if change < worst[metric][0]:
                            worst[metric] = (float(change), {"slice": list(key),
                                                             "steps": here[0]["steps"]})
            out.append({"model": model, "fraction": fraction, **{
                m + "_worst": (None if not np.isfinite(worst[m][0]) else worst[m][0])
                for m in worst}, **{m + "_where": worst[m][1] for m in worst}})
    return out


def best_checkpoints(results):
    """Per slice and model: the grid checkpoint of highest mean NPMI, per convention
    (an oracle that reads the held-out NPMI, for reference only)."""
    groups, out = {}, []
    for curve in results["curves"]:
        if not curve["validation"]:
            groups.setdefault((curve["corpus"], curve["n_documents"], curve["K"],
                               curve["model"]), []).append(curve)
    for key, curves in sorted(groups.items(), key=_order):
        epochs = [e for e in grid_epochs(curves[0]["steps_per_epoch"], curves[0]["epochs"],
                                         GRID)
                  if all(any(p["epoch"] == e for p in c["points"]) for c in curves)]
        entry = dict(zip(("corpus", "n_documents", "K", "model"), key))
        for metric in ("npmi_epsilon", "npmi_zero"):
            means = [np.mean([next(p[metric] for p in c["points"] if p["epoch"] == e)
                              for c in curves]) for e in epochs]
            best = int(np.argmax(means))
            entry[metric + "_best"] = float(means[best])
            entry[metric + "_best_steps"] = epochs[best] * curves[0]["steps_per_epoch"]
        out.append(entry)
    return out


def versus_baselines(summary, rule=None):
    """Per slice and model, the recommended rule's mean NPMI less each baseline's."""
    rule = rule or RECOMMENDED
    table, out = _lookup(summary), []
    for (corpus, n, K, model, name), row in table.items():
        if name != rule:
            continue
        entry = {"corpus": corpus, "n_documents": n, "K": K, "model": model,
                 "tokens_per_document": row["tokens_per_document"]}
        for base in ("LDAGibbs", "sklearn_lda"):
            other = table.get((corpus, n, K, base, "baseline"))
            for metric in ("npmi_epsilon", "npmi_zero"):
                entry[f"{metric}_vs_{base}"] = (None if other is None else
                                                row[metric + "_mean"] - other[metric + "_mean"])
        out.append(entry)
    return out


def _fmt(mean, sd):
    return f"{mean:.3f} ± {sd:.3f}"


def page(payload):
    summary = payload["summary"]
    table = _lookup(summary)
    lines = ["# Neural models: how long to train, on held-out NPMI", "",
             "Mean ± standard deviation over three seeds of the held-out NPMI of the top 10 "
             "words (`eps`: the epsilon convention, `zero`: the zero convention) and TD@10, "
             "at the epochs each rule picks (`steps`: mean optimiser steps). Rules: "
             + "; ".join(f"`{k}`: {v[2]}" for k, v in RULES.items())
             + ". Baselines: `LDAGibbs` at its defaults, `sklearn_lda`: scikit-learn's "
             "`LatentDirichletAllocation(learning_method='batch')`. The corpora, slices and "
             "references are described in `research/neural_training_length.py`.", ""]
    for K in sorted({r["K"] for r in summary}, reverse=True):
        lines += [f"## K = {K}", ""]
        rows = []
        for (corpus, n, k, model, name), row in table.items():
            if k != K:
                continue
            rows.append({"corpus": corpus, "N": n, "L": f"{row['tokens_per_document']:.0f}",
                         "model": model, "rule": name,
                         "steps": "" if row["steps"] is None else f"{np.mean(row['steps']):.0f}",
                         "eps": _fmt(row["npmi_epsilon_mean"], row["npmi_epsilon_sd"]),
                         "zero": _fmt(row["npmi_zero_mean"], row["npmi_zero_sd"]),
                         "TD@10": f"{row['td10_mean']:.2f}"})
        rows.sort(key=lambda r: (CORPORA.index(r["corpus"]) if r["corpus"] in CORPORA else 9,
                                 r["N"], r["rule"] == "baseline", r["model"],
                                 list(RULES).index(r["rule"]) if r["rule"] in RULES else 9))
        lines += [_md_table(rows, ["corpus", "N", "L", "model", "rule", "steps", "eps",
                                   "zero", "TD@10"]), ""]
    t = payload["targets"]
    lines += [f"## Targets for `{t['rule']}`", "",
              "Margin of the mean NPMI over the better of `old` and `auto` (target: at "
              "least -0.01):", ""]
    lines += [_md_table([{**e, **{k: f"{e[k]:+.3f}" for k in e if k.endswith("margin")}}
                         for e in t["vs_old_and_auto"]],
                        ["corpus", "n_documents", "K", "model", "npmi_epsilon_margin",
                         "npmi_zero_margin"]), ""]
    lines += ["A warning that fires below a fraction of the rule's steps and advises the "
              "rule: the worst change of mean NPMI that following it brings (target: at "
              "least -0.01):", ""]
    lines += [_md_table([{"model": w["model"], "fraction": w["fraction"],
                          "eps worst": _signed(w["npmi_epsilon_worst"]),
                          "at": _where(w["npmi_epsilon_where"]),
                          "zero worst": _signed(w["npmi_zero_worst"]),
                          "at ": _where(w["npmi_zero_where"])} for w in payload["warning"]],
                        ["model", "fraction", "eps worst", "at", "zero worst", "at "]), ""]
    lines += ["Today's warning (below 1,000 steps, advising `auto`) on the same fits:", ""]
    lines += [_md_table([{"model": w["model"],
                          "eps worst": _signed(w["npmi_epsilon_worst"]),
                          "at": _where(w["npmi_epsilon_where"]),
                          "zero worst": _signed(w["npmi_zero_worst"]),
                          "at ": _where(w["npmi_zero_where"])}
                         for w in payload.get("warning_today", [])],
                        ["model", "eps worst", "at", "zero worst", "at "]), ""]
    lines += ["The best grid checkpoint of each slice (an oracle that reads the held-out "
              "NPMI; for reference):", ""]
    lines += [_md_table([{**e, **{k: (f"{e[k]:.3f}" if isinstance(e[k], float) else e[k])
                                  for k in e}} for e in payload["best"]],
                        ["corpus", "n_documents", "K", "model", "npmi_epsilon_best",
                         "npmi_epsilon_best_steps", "npmi_zero_best",
                         "npmi_zero_best_steps"]), ""]
    lines += [f"Mean NPMI of each model at `{t['rule']}` less the baselines' (negative: the "
              "baseline is ahead):", ""]
    lines += [_md_table([{**e, "L": f"{e['tokens_per_document']:.0f}",
                          **{k: _signed(e[k]) for k in e if "_vs_" in k}}
                         for e in payload["versus_baselines"]],
                        ["corpus", "n_documents", "L", "K", "model",
                         "npmi_epsilon_vs_LDAGibbs", "npmi_zero_vs_LDAGibbs",
                         "npmi_epsilon_vs_sklearn_lda", "npmi_zero_vs_sklearn_lda"]), ""]
    lines += ["ProdLDA on short texts (GoogleNews titles) against scikit-learn's LDA:", ""]
    lines += [_md_table([{**e, **{k: f"{e[k]:+.3f}" for k in e if k.endswith("sklearn")}}
                         for e in t["short_texts_vs_sklearn"]],
                        ["n_documents", "K", "npmi_epsilon_vs_sklearn",
                         "npmi_zero_vs_sklearn"]), ""]
    checks = payload.get("warm_check") or []
    if checks:
        lines += ["## Warm continuation", "",
                  "A warm fit continued in pieces against one long fit, and the recorded "
                  "epoch against a fit stopped there (BBC News, 300 documents):", "",
                  _md_table(checks, list(checks[0])), ""]
    runs = payload["runs"]
    lines += [f"Run time: {sum(r['total_seconds'] for r in runs) / 3600:.2f} hours over "
              f"{len(runs)} runs, one thread (`{runs[0]['machine'].get('cpu', '')}`)."
              if runs else ""]
    return "\n".join(lines) + "\n"


def _signed(value):
    return "" if value is None else f"{value:+.3f}"


def _where(where):
    if not where:
        return ""
    corpus, n, K, model = where["slice"]
    return f"{model} {corpus}-{n} K={K} at {where['steps']} steps"


def _md_table(rows, columns):
    return markdown_table(rows, columns)


def picture(payload, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    curves = [c for c in payload["curves"] if c["K"] == 20]
    corpora = [c for c in CORPORA if any(k["corpus"] == c for k in curves)]
    if TINY:
        curves = [c for c in payload["curves"]]
        corpora = sorted({c["corpus"] for c in curves})
    sizes = {c: sorted({k["n_documents"] for k in curves if k["corpus"] == c}) for c in corpora}
    n_cols = max(len(v) for v in sizes.values())
    fig, axes = plt.subplots(2 * len(corpora), n_cols, figsize=(4.2 * n_cols,
                                                                 2.7 * 2 * len(corpora)),
                             squeeze=False, sharex=True)
    table = _lookup(payload["summary"])
    colours = {"ProdLDA": "C0", "AVITM": "C1"}
    marks = {"old": ("o", "50 epochs"), "auto": ("s", "auto"),
             RECOMMENDED: ("*", f"{RECOMMENDED} (recommended)"),
             "early_stop": ("X", "early stopping (90% fit)")}
    for i, corpus in enumerate(corpora):
        for j in range(len(sizes[corpus]), n_cols):
            axes[2 * i, j].axis("off")
            axes[2 * i + 1, j].axis("off")
        for j, n in enumerate(sizes[corpus]):
            for r, metric in enumerate(("npmi_epsilon", "npmi_zero")):
                ax = axes[2 * i + r, j]
                K = curves[0]["K"]
                for model, colour in colours.items():
                    runs = [c for c in curves if c["corpus"] == corpus and c["n_documents"] == n
                            and c["model"] == model and not c["validation"]]
                    if not runs:
                        continue
                    epochs = [p["epoch"] for p in runs[0]["points"]]
                    epochs = [e for e in epochs if all(any(p["epoch"] == e for p in c["points"])
                                                       for c in runs)]
                    values = np.array([[next(p[metric] for p in c["points"] if p["epoch"] == e)
                                        for e in epochs] for c in runs])
                    steps = np.array(epochs) * runs[0]["steps_per_epoch"]
                    ax.plot(steps, values.mean(0), color=colour, lw=1.4, label=model)
                    ax.fill_between(steps, values.min(0), values.max(0), color=colour,
                                    alpha=0.15, lw=0)
                    for rule, (marker, label) in marks.items():
                        row = table.get((corpus, n, K, model, rule))
                        if row is None:
                            continue
                        ax.plot(np.mean(row["steps"]), row[metric + "_mean"], marker=marker,
                                color=colour, mec="k", mew=0.6,
                                ms=11 if marker == "*" else 7, ls="none",
                                label=label if model == "ProdLDA" else None)
                for base, style in (("LDAGibbs", ("C2", "--")), ("sklearn_lda", ("0.4", ":"))):
                    row = table.get((corpus, n, K, base, "baseline"))
                    if row:
                        ax.axhline(row[metric + "_mean"], color=style[0], ls=style[1], lw=1.2,
                                   label=base)
                ax.set_xscale("log")
                ax.set_xticks([30, 100, 300, 1000, 3000])
                ax.set_xticklabels(["30", "100", "300", "1000", "3000"])
                ax.minorticks_off()
                tpd = next(c["tokens_per_document"] for c in curves
                           if c["corpus"] == corpus and c["n_documents"] == n)
                ax.set_title(f"{corpus}, {n} docs ({tpd:.0f} tokens/doc)", fontsize=9)
                ax.set_ylabel(f"NPMI ({metric.split('_')[1]})", fontsize=8)
                ax.tick_params(labelsize=7)
                ax.grid(alpha=0.3, lw=0.5)
                if 2 * i + r == 2 * len(corpora) - 1:
                    ax.set_xlabel("optimiser steps", fontsize=8)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.suptitle("Held-out NPMI against optimiser steps, K = 20 (mean of 3 seeds, band: "
                 "min-max); markers: the rules' picks", y=0.997, fontsize=11)
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0.988), ncol=8,
               fontsize=9, frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.978))
    fig.savefig(path, dpi=72)
    plt.close(fig)


def report(args):
    directory = results_dir()
    path = directory / "neural_training_length.json"
    results = load_results(path)
    scorer = Scorer(args.data_home, args.cache)
    results["summary"] = summarise(results, scorer)
    results["targets"] = targets(results, results["summary"], scorer)
    results["warning"] = warning_threshold(results, scorer)
    results["warning_today"] = warning_threshold(results, scorer, "auto", fractions=(1,))
    results["best"] = best_checkpoints(results)
    results["versus_baselines"] = versus_baselines(results["summary"])
    save_results(path, results)  # with the points the rules added
    text = page(results)
    (directory / "neural_training_length.rst").write_text(markdown_to_rst(text))
    picture(results, directory / "neural_training_length.png")
    print(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", nargs="?", default="run", choices=["run", "report"])
    parser.add_argument("--phase", default="main", choices=list(PHASES))
    parser.add_argument("--data-home", default=str(default_data_home()))
    parser.add_argument("--cache", default=str(Path.home() / ".cache" / "sktopics-research"))
    parser.add_argument("--corpora", nargs="+")
    parser.add_argument("--sizes", nargs="+", type=int)
    parser.add_argument("--topics", type=int)
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--seeds", nargs="+", type=int, default=SEEDS)
    args = parser.parse_args()
    torch.set_num_threads(1)
    if TINY:
        args.cache = str(results_dir() / "cache")
    run(args) if args.action == "run" else report(args)


if __name__ == "__main__":
    main()
