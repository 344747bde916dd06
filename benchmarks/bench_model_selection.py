"""Reproduce Foulds & Smyth's (UAI 2014) poster experiments with LDAGibbs models.

Corpora: NIPS (``nips_uci_giuseppedib``; the first ``--nips-docs`` test documents of a
seeded permutation) and 20 Newsgroups (``20news_avitm``, in place of ACL; a 600-document
test subset drawn with a fixed seed among the documents of at most
``--ng-max-length`` tokens). Models: :class:`sktopics.LDAGibbs`, K = 50,
beta = 0.01, ``--fit-sweeps`` sweeps, ``random_state=0``; symmetric alpha = 0.1, and an
asymmetric alpha learned by Minka's fixed point (every 20 sweeps after sweep 100), its
topics aligned to the symmetric model's.

* Experiment 1 (learned vs perturbed topics): A = (phi, alpha_sym), B = (phi', alpha_sym),
  phi' = rownormalise(phi * exp(sigma * eps)), sigma picked by a pilot so that the
  learned topics win on about 89 % of documents. Metric: % of documents where the
  estimate favours A ("% correct"), and agreement with the gold's sign.
* Experiment 2 (asymmetric vs symmetric alpha): A = (phi_asym, alpha_asym),
  B = (phi_sym, alpha_sym), two separately trained models. Metric: correlation with a
  long left-to-right run and with the gold.
* Experiment 2b (``alpha_only``, one reading of the poster, which does not say how its
  models were trained): A = (phi_asym, alpha_asym), B = (phi_asym, alpha_sym), the same
  topics with only alpha differing. Same metrics.
* For every experiment and both budgets: variance over repeated runs of the per-document
  perplexity ratio r_d = exp(-delta_d / N_d), averaged over documents; the corpus-level
  perplexity ratio; token-updates and seconds.

Methods at **equal cost** (2B token-updates per token, per document and pair of models,
budget B): left-to-right (SMC, R = B particles per model), standard AIS (S = B
temperatures per model, one chain), ratio-AIS geometric and convex, forward, reverse
(one run of 2B) and both (the mean of a forward and a reverse run of B each; the two
path biases have opposite signs). A ratio-AIS run of C sweeps per token starts with one
left-to-right draw from the source posterior (``start="sequential"``), then max(2, C/10)
Gibbs sweeps under the source model, then C - 1 - burn-in temperatures on the path. One
chain, linear schedules, the collapsed (lock-step sequential) kernel.

Gold: bidirectional ratio-AIS (geometric in experiment 1, hybrid in experiment 2) with
``--gold-S`` temperatures (``--gold-S-asym`` in experiment 2, whose posteriors are far
apart; half of ``--gold-S`` in 2b), an AIS start, one chain, run twice with independent
seeds; gold = mean of the four estimates. Reported: the agreement of the two runs and the
forward/reverse bracket. ``--gold-cache`` reuses stored experiment-2 gold runs.

Run ``python benchmarks/bench_model_selection.py`` on a quiet machine.
``--speed`` instead measures throughput, ``--target`` AIS with 1,000 temperatures over the
whole 20NG test set (``--device cuda`` for the GPU goal), ``--folds`` every evaluator on
600-document folds of the 20NG test set (a grid search's budgets); with ``--baseline
PATH`` (a checkout of an older commit, e.g. ``git worktree add /tmp/base <commit>``) they
also time that commit's sktopics, in fresh processes, alternating: the old/new
comparison in one run.

Choosing hyper-parameters: ``--choosing-k`` ranks K in {5, 20, 40} by the AIS scorer at
every budget, by the left-to-right scorer and by a long left-to-right run (20NG);
``--prodlda-scorer`` scores ``Pipeline(CountVectorizer, ProdLDA)`` candidates by
importance sampling from the encoder and by AIS (5,000 short posts); ``--criteria`` runs
a grid search over K with the likelihood, coherence and diversity and draws them.
Results: ``benchmarks/results/model_selection*.{json,rst}`` (and ``.png``);
``--report-only`` with a mode's flag redraws that mode's page from its JSON.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (
    MachineLoad,
    add_result_arguments,
    default_data_home,
    load_sentence,
    machine,
    report_only,
    write_results,
)

from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm, load_nips
from sktopics.model_selection import (
    ais_log_likelihood,
    align_topics,
    left_to_right_log_likelihood,
    ratio_ais,
)

METHODS = ["lr", "ais", "geometric_fwd", "geometric_rev", "convex_fwd", "convex_rev",
           "geometric_both", "convex_both"]
EXPERIMENTS = ("perturbed", "asymmetric_alpha", "alpha_only")
POSTER = {  # Foulds & Smyth poster; ACL where we use 20NG
    "pct_correct": {
        "nips_cheap": [63.8, 48.8, 83.8, 89.2, 84.6, 87.7, None, None],
        "nips_expensive": [84.6, 62.3, 86.9, 87.7, 87.7, 87.7, None, None],
        "acl_cheap": [80.2, 50.8, 88.3, 92.0, 88.3, 92.3, None, None],
        "acl_expensive": [90.7, 75.2, 90.3, 90.3, 90.3, 90.3, None, None],
    },
    "corr_with_long_lr": {
        "nips_cheap": [0.947, 0.619, 0.973, 0.975, 0.976, 0.981, None, None],
        "nips_expensive": [0.993, 0.852, 0.981, 0.982, 0.981, 0.982, None, None],
        "acl_cheap": [0.965, 0.578, 0.984, 0.983, 0.987, 0.986, None, None],
        "acl_expensive": [0.995, 0.892, 0.989, 0.989, 0.990, 0.989, None, None],
    },
    "ratio_variance": {
        "nips_cheap": [2.6e-4, 2.6e-3, 2.0e-5, 1.5e-5, 8.2e-6, 9.8e-6, None, None],
        "nips_expensive": [1.7e-5, 6.0e-4, 1.4e-6, 1.2e-6, 6.9e-7, 5.8e-7, None, None],
        "acl_cheap": [1.7e-4, 3.6e-3, 1.6e-5, 1.3e-5, 7.7e-6, 6.6e-6, None, None],
        "acl_expensive": [1.4e-5, 5.6e-4, 1.1e-6, 9.4e-7, 7.4e-7, 5.1e-7, None, None],
    },
    "corpus_ratio": {
        "nips_cheap": [0.984, 0.975, 1.01, 0.992, 1.01, 0.994, None, None],
        "nips_expensive": [0.989, 0.990, 1.00, 0.999, 1.00, 0.998, None, None],
        "acl_cheap": [0.984, 0.980, 1.00, 0.985, 1.00, 0.988, None, None],
        "acl_expensive": [0.987, 0.989, 0.994, 0.992, 0.996, 0.992, None, None],
    },
}


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--corpora", default="20ng,nips")
    p.add_argument("--nips-docs", type=int, default=150)
    p.add_argument("--ng-docs", type=int, default=600)
    p.add_argument("--ng-max-length", type=int, default=400,
                   help="20NG test documents longer than this are left out (2 %% of them): "
                        "a lock-step sweep costs one step per position of the longest one")
    p.add_argument("--fit-sweeps", type=int, default=400)
    p.add_argument("--model-cache", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                          "sktopics_bench"))
    p.add_argument("--sigma", type=float, default=None)
    p.add_argument("--cheap", type=int, default=10)
    p.add_argument("--expensive", type=int, default=50)
    p.add_argument("--cheap-repeats", type=int, default=5)
    p.add_argument("--expensive-repeats", type=int, default=2)
    p.add_argument("--gold-S", type=int, default=200)
    p.add_argument("--gold-S0", type=int, default=50)
    p.add_argument("--gold-chains", type=int, default=1)
    p.add_argument("--gold-S-asym", type=int, default=2000,
                   help="temperatures of the asymmetric-alpha gold (its posteriors are far apart)")
    p.add_argument("--gold-S0-asym", type=int, default=200)
    p.add_argument("--gold-cache", default=None,
                   help="folder of gold_<corpus>_asym_S<S>.npz files (per-document forward and "
                        "reverse estimates of the two asymmetric-alpha gold runs) to reuse")
    p.add_argument("--experiments", default=",".join(EXPERIMENTS))
    p.add_argument("--pilot-S", type=int, default=30,
                   help="temperatures of the sigma pilot (each direction and its start)")
    p.add_argument("--long-lr", type=int, default=200, help="particles of the long LR run")
    p.add_argument("--speed", action="store_true", help="throughput only (run it on a quiet machine)")
    p.add_argument("--baseline", default=None,
                   help="a checkout of an older commit: --speed and --target also time its "
                        "sktopics, in fresh processes alternating with this one")
    p.add_argument("--repeats", type=int, default=3, help="--speed: runs per tree")
    p.add_argument("--speed-cases", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--target-case", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--target", action="store_true",
                   help="the speed goal: AIS with --target-temperatures over the whole "
                        "20NG test set on --device (goal: <= 10 s with 1,000 on one H100)")
    p.add_argument("--target-temperatures", type=int, default=1000)
    p.add_argument("--target-fit-sweeps", type=int, default=100)
    p.add_argument("--device", default="cpu", help="device of the --target run")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--quick", action="store_true", help="tiny settings (smoke test)")
    p.add_argument("--choosing-k", action="store_true",
                   help="the AIS scorer's ranking of K against a long left-to-right run, by "
                        "budget (results: model_selection_choosing_k)")
    p.add_argument("--ck-seeds", default="0", help="--choosing-k: training seeds")
    p.add_argument("--ck-temperatures", default="25,50,100,200,400,800,1600")
    p.add_argument("--ck-gold-particles", type=int, default=400)
    p.add_argument("--prodlda-scorer", action="store_true",
                   help="ProdLDA: importance sampling from the encoder against the AIS scorer, "
                        "ranking and cost per fold (results: model_selection_prodlda_scorer)")
    p.add_argument("--ps-docs", type=int, default=5000)
    p.add_argument("--ps-folds", type=int, default=3,
                   help="--prodlda-scorer: how many of the three folds to run")
    p.add_argument("--ps-reference-ks", default="5,10,20,40",
                   help="--prodlda-scorer: the K whose reference (1,024 samples) runs on fold 0")
    p.add_argument("--ps-ais-folds", type=int, default=1,
                   help="--prodlda-scorer: folds also scored by make_ais_scorer (slow)")
    p.add_argument("--ps-ais-ks", default="5,10,20,40",
                   help="--prodlda-scorer: the K scored by make_ais_scorer")
    p.add_argument("--criteria", action="store_true",
                   help="held-out likelihood, coherence and diversity against K on short posts "
                        "(results: model_selection_criteria, with the picture)")
    p.add_argument("--cr-ks", default="5,10,20,40,80,160,320")
    p.add_argument("--folds", action="store_true",
                   help="throughput of every evaluator on 600-document folds of the 20NG test "
                        "set, this tree and --baseline's (results: model_selection_folds)")
    p.add_argument("--fold-seeds", default="0,1,2,3,4")
    p.add_argument("--fold-case", default=None, help=argparse.SUPPRESS)
    add_result_arguments(p, "model_selection")  # the prefix of every mode's results
    p.add_argument("--update", action="store_true",
                   help="add to the existing results file (one corpus per invocation)")
    args = p.parse_args()
    if args.quick:
        args.nips_docs, args.ng_docs, args.fit_sweeps = 5, 30, 20
        args.gold_S, args.gold_S0, args.expensive, args.long_lr = 40, 10, 20, 20
        args.gold_S_asym, args.gold_S0_asym = 40, 10
        args.cheap_repeats, args.output_name = 2, "model_selection_quick"
    return args


# ------------------------------------------------------------------------- data, models


def load(corpus, args):
    data = default_data_home()
    if corpus == "nips":
        train = load_nips(data, subset="train").data.astype(np.float64)
        test = load_nips(data, subset="test").data.astype(np.float64)
        rows = np.sort(np.random.default_rng(0).permutation(test.shape[0])[: args.nips_docs])
    else:
        train = load_20news_avitm(data, subset="train").data.astype(np.float64)
        test = load_20news_avitm(data, subset="test").data.astype(np.float64)
        lengths = np.asarray(test.sum(1)).ravel()
        nonempty = np.flatnonzero((lengths > 0) & (lengths <= args.ng_max_length))
        rows = nonempty[np.sort(np.random.default_rng(0).choice(len(nonempty), args.ng_docs,
                                                                replace=False))]
    return train, test[rows]


def fit_models(corpus, train, args):
    """Symmetric- and asymmetric-alpha LDAGibbs models (cached on disk)."""
    path = os.path.join(args.model_cache, f"{corpus}_k50_{args.fit_sweeps}.npz")
    if os.path.exists(path):
        cached = dict(np.load(path))
        return {k: (v.item() if v.ndim == 0 else v) for k, v in cached.items()}
    if train is None:
        raise SystemExit(f"{path} not found: --speed reuses the models of an experiment run "
                         "with the same --fit-sweeps; run one first.")
    out = {}
    for kind in ("sym", "asym"):
        t = time.perf_counter()
        kw = {"optimize_interval": None} if kind == "sym" else {"optimize_interval": 20, "burn_in": 100}
        m = LDAGibbs(50, doc_topic_prior=0.1, topic_word_prior=0.01, max_iter=args.fit_sweeps,
                     device="cpu", random_state=0, **kw).fit(train)
        out[f"phi_{kind}"], out[f"alpha_{kind}"] = m.components_, m.doc_topic_prior_
        out[f"seconds_{kind}"] = time.perf_counter() - t
    os.makedirs(args.model_cache, exist_ok=True)
    np.savez(path, **out)
    return out


def perturb(phi, sigma, seed=1):
    eps = np.random.default_rng(seed).standard_normal(phi.shape)
    out = phi * np.exp(sigma * eps)
    return out / out.sum(1, keepdims=True)


# ------------------------------------------------------------------------- estimators


def estimators(A, B, X, budget, seed):
    """Per-document log-ratio estimates (A over B) of every method, with cost and time."""
    out = {}
    kw = {"random_state": seed, "device": "cpu"}

    def timed(name, fn):
        t = time.perf_counter()
        delta, cost = fn()
        out[name] = {"delta": np.asarray(delta), "cost": int(cost),
                     "seconds": time.perf_counter() - t}

    def lr():
        a = left_to_right_log_likelihood(A, X, n_particles=budget, n_filters=1, **kw)
        b = left_to_right_log_likelihood(B, X, n_particles=budget, n_filters=1, **kw)
        return a.per_document - b.per_document, a.n_token_updates + b.n_token_updates

    def ais():
        akw = dict(n_temperatures=budget, n_chains=1, schedule="linear", kernel="collapsed", **kw)
        a = ais_log_likelihood(A, X, **akw)
        b = ais_log_likelihood(B, X, **akw)
        return a.per_document - b.per_document, a.n_token_updates + b.n_token_updates

    timed("lr", lr)
    timed("ais", ais)
    for path in ("geometric", "convex"):
        for direction, short in (("forward", "fwd"), ("reverse", "rev"), ("both", "both")):
            def run(path=path, direction=direction):
                # each run of a direction gets its share of the 2B token-updates per token
                sweeps = 2 * budget if direction != "both" else budget
                burnin, temps = ratio_budget(sweeps)
                r = ratio_ais(A, B, X, path=path, direction=direction, n_temperatures=temps,
                              n_chains=1, schedule="linear", start="sequential",
                              n_burnin_sweeps=burnin, kernel="collapsed", align_topics=False,
                              **kw)
                return r.per_document, r.n_token_updates
            timed(f"{path}_{short}", run)
    return out


def ratio_budget(sweeps):
    """(burn-in sweeps, temperatures) of a ratio-AIS run costing ``sweeps`` per token.

    One left-to-right draw of the source posterior, a tenth of the budget (at least 2)
    in Gibbs sweeps under the source model, the rest on the path.
    """
    burnin = max(2, sweeps // 10)
    return burnin, sweeps - 1 - burnin


class _CachedRun:
    """The per-document forward/reverse estimates of a gold run stored on disk."""

    def __init__(self, fwd, rev, n_tokens, cost):
        self.forward, self.reverse, self.n_tokens = fwd, rev, n_tokens
        self.per_document = 0.5 * (fwd + rev)
        self.per_document_gap = rev - fwd
        self.n_token_updates = cost

    def bracket(self):
        from sktopics.model_selection import PerplexityBracket

        n = self.n_tokens.sum()
        return PerplexityBracket(forward=float(np.exp(-self.forward.sum() / n)),
                                 reverse=float(np.exp(-self.reverse.sum() / n)))


def gold_standard(A, B, X, path, args, S, S0, seeds=(1000, 2000), cache=None):
    """Two independent bidirectional ratio-AIS runs and their agreement."""
    runs = []
    if cache is not None and os.path.exists(cache):
        c = np.load(cache)
        n_tok = np.asarray(X.sum(1)).ravel()
        if int(c["S"]) != S or int(c["S0"]) != S0 or not np.array_equal(c["n_tokens"], n_tok):
            raise ValueError(f"{cache} was made with other settings or documents")
        cost = int(n_tok.sum() * (S + S0) * 2)
        runs = [(_CachedRun(c[f"fwd_{seed}"], c[f"rev_{seed}"], n_tok, cost),
                 float(c[f"seconds_{seed}"])) for seed in seeds]
    for seed in seeds[len(runs):]:
        t = time.perf_counter()
        r = ratio_ais(A, B, X, path=path, direction="both", n_temperatures=S,
                      n_start_temperatures=S0, n_chains=args.gold_chains,
                      schedule="linear", start="ais", kernel="collapsed", align_topics=False,
                      random_state=seed, device="cpu")
        runs.append((r, time.perf_counter() - t))
    (r1, t1), (r2, t2) = runs
    gold = 0.5 * (r1.per_document + r2.per_document)
    n = np.maximum(r1.n_tokens, 1)
    # each run's s.e.: half its forward-reverse gap (the spread of its two halves)
    # when the chains give no s.e. (M = 1)
    diff = r1.per_document - r2.per_document
    gap1, gap2 = np.abs(r1.per_document_gap), np.abs(r2.per_document_gap)
    fr = np.concatenate([r1.forward, r2.forward]).reshape(2, -1)
    rv = np.concatenate([r1.reverse, r2.reverse]).reshape(2, -1)
    info = {
        "path": path, "S": S, "S0": S0, "M": args.gold_chains,
        "cached": bool(cache is not None and os.path.exists(cache)),
        "seconds": t1 + t2, "token_updates": r1.n_token_updates + r2.n_token_updates,
        "corpus_ratio": float(np.exp(-gold.sum() / n.sum())),
        "bracket_run1": r1.bracket()._asdict(), "bracket_run2": r2.bracket()._asdict(),
        "pct_A_better": float(100 * np.mean(gold > 0)),
        # convergence: two independent runs, per document (nats) and per token
        "runs_max_abs_diff_nats": float(np.max(np.abs(diff))),
        "runs_median_abs_diff_nats": float(np.median(np.abs(diff))),
        "runs_corpus_diff_nats_per_token": float(diff.sum() / n.sum()),
        "runs_sign_agreement_pct": float(100 * np.mean(np.sign(r1.per_document) == np.sign(r2.per_document))),
        "fwd_rev_median_gap_nats": float(np.median(np.concatenate([gap1, gap2]))),
        "fwd_rev_max_gap_nats": float(np.max(np.concatenate([gap1, gap2]))),
        "fwd_rev_corpus_gap_nats_per_token": float((rv.sum() - fr.sum()) / 2 / n.sum()),
        # a document's sign is settled when all four estimates agree on it
        "pct_docs_sign_settled": float(100 * np.mean(np.all(np.sign(np.vstack([fr, rv]))
                                                           == np.sign(gold), axis=0))),
    }
    settled = np.all(np.sign(np.vstack([fr, rv])) == np.sign(gold), axis=0)
    return gold, settled, info


def summarise(runs, n_tokens, gold, settled, long_lr=None):
    """Metrics per method from repeated runs {method: [run, ...]}."""
    res = {}
    n = np.maximum(n_tokens, 1)
    for method, reps in runs.items():
        deltas = np.stack([r["delta"] for r in reps])  # (repeats, docs)
        ratios = np.exp(-deltas / n)
        first = deltas[0]
        entry = {
            "pct_correct": float(100 * np.mean(deltas > 0)),  # mean over repeats
            "pct_correct_first_run": float(100 * np.mean(first > 0)),
            "sign_agreement_with_gold": float(100 * np.mean(np.sign(deltas) == np.sign(gold))),
            "sign_agreement_settled_docs": float(100 * np.mean((np.sign(deltas) == np.sign(gold))[:, settled]))
            if settled.any() else float("nan"),
            "corr_with_gold": float(np.mean([np.corrcoef(d, gold)[0, 1] for d in deltas])),
            "ratio_variance": float(np.mean(np.var(ratios, axis=0, ddof=1))),
            "ratio_variance_2runs": float(np.mean(np.var(ratios[:2], axis=0, ddof=1))),
            "corpus_ratio": float(np.mean(np.exp(-deltas.sum(1) / n.sum()))),
            "corpus_ratio_sd": float(np.std(np.exp(-deltas.sum(1) / n.sum()), ddof=1)),
            "token_updates": int(np.mean([r["cost"] for r in reps])),
            "seconds": float(np.mean([r["seconds"] for r in reps])),
        }
        if long_lr is not None:
            entry["corr_with_long_lr"] = float(np.mean([np.corrcoef(d, long_lr)[0, 1] for d in deltas]))
        res[method] = entry
    return res


def pick_sigma(A_phi, alpha, X, args):
    """Pilot: sigma in {0.05, ..., 0.5} whose learned topics win on ~89 % of documents."""
    pilot = {}
    for cand in (0.05, 0.1, 0.2, 0.3, 0.4, 0.5):
        r = ratio_ais((A_phi, alpha), (perturb(A_phi, cand), alpha), X, path="geometric",
                      direction="both", n_temperatures=args.pilot_S,
                      n_start_temperatures=args.pilot_S, n_chains=1,
                      schedule="linear", kernel="collapsed", align_topics=False,
                      random_state=500, device="cpu")
        pilot[cand] = float(100 * np.mean(r.per_document > 0))
    return min(pilot, key=lambda c: (abs(pilot[c] - 89.0), c)), pilot


def run_corpus(name, args, report):
    t0 = time.perf_counter()
    train, X = load(name, args)
    models = fit_models(name, train, args)
    phi_sym, alpha_sym = models["phi_sym"], models["alpha_sym"]
    perm = align_topics(phi_sym, models["phi_asym"])
    phi_asym, alpha_asym = models["phi_asym"][perm], models["alpha_asym"][perm]
    n_tokens = np.asarray(X.sum(1)).ravel()
    info = {"n_test_docs": int(X.shape[0]), "n_test_tokens": int(n_tokens.sum()),
            "mean_doc_length": float(n_tokens.mean()), "max_doc_length": int(n_tokens.max()),
            "fit_sweeps": args.fit_sweeps,
            "fit_seconds": {k: float(models[f"seconds_{k}"]) for k in ("sym", "asym")},
            "alpha_asym_range": [float(alpha_asym.min()), float(alpha_asym.max())],
            "alpha_asym_sum": float(alpha_asym.sum())}
    info["settings"] = {k: v for k, v in vars(args).items()
                        if k not in ("out", "model_cache", "update", "speed", "quick", "corpora")}
    sigma, pilot = (args.sigma, {}) if args.sigma is not None else pick_sigma(phi_sym, alpha_sym, X, args)
    info.update(sigma=sigma, sigma_pilot_pct_A_better=pilot)
    print(f"[{name}] {info}", flush=True)
    gold_cache = None
    if args.gold_cache:
        gold_cache = os.path.join(args.gold_cache, f"gold_{name}_asym_S{args.gold_S_asym}.npz")
    experiments = {
        "perturbed": ((phi_sym, alpha_sym), (perturb(phi_sym, sigma), alpha_sym), "geometric",
                      args.gold_S, args.gold_S0, None),
        "asymmetric_alpha": ((phi_asym, alpha_asym), (phi_sym, alpha_sym), "hybrid",
                             args.gold_S_asym, args.gold_S0_asym, gold_cache),
        # one reading of the poster: the same topics, only alpha differs
        "alpha_only": ((phi_asym, alpha_asym), (phi_asym, alpha_sym), "hybrid",
                       args.gold_S // 2, args.gold_S0 // 2, None),
    }
    wanted = args.experiments.split(",")
    out = report.get(name) if args.update and name in report else None
    if out is None or out.get("info", {}).get("sigma") != sigma:
        out = {"info": info, "experiments": {}}
    out["info"] = info
    report[name] = out
    for exp, (A, B, gold_path, gold_S, gold_S0, cache) in experiments.items():
        if exp not in wanted:
            continue
        gold, settled, gold_info = gold_standard(A, B, X, gold_path, args, gold_S, gold_S0,
                                                 cache=cache)
        print(f"[{name}/{exp}] gold {gold_info}", flush=True)
        long_lr = None
        if exp != "perturbed":
            t = time.perf_counter()
            la = left_to_right_log_likelihood(A, X, n_particles=args.long_lr, n_filters=1, random_state=999)
            lb = left_to_right_log_likelihood(B, X, n_particles=args.long_lr, n_filters=1, random_state=999)
            long_lr = la.per_document - lb.per_document
            gold_info["long_lr"] = {"R": args.long_lr, "seconds": time.perf_counter() - t,
                                    "corr_with_gold": float(np.corrcoef(long_lr, gold)[0, 1]),
                                    "corpus_ratio": float(np.exp(-long_lr.sum() / n_tokens.sum()))}
        budgets = {}
        for bname, budget, reps in (("cheap", args.cheap, args.cheap_repeats),
                                    ("expensive", args.expensive, args.expensive_repeats)):
            runs = {}
            for r in range(reps):
                for method, value in estimators(A, B, X, budget, r).items():
                    runs.setdefault(method, []).append(value)
            budgets[bname] = summarise(runs, n_tokens, gold, settled, long_lr)
            budgets[bname]["_settings"] = {"budget": budget, "repeats": reps}
            print(f"[{name}/{exp}/{bname}] done at {time.perf_counter() - t0:.0f}s", flush=True)
        out["experiments"][exp] = {"gold": gold_info, "budgets": budgets}
        out["experiments"] = {k: out["experiments"][k] for k in EXPERIMENTS
                              if k in out["experiments"]}
        # partial results survive an interruption
        write_results(args.output_name, report, to_rst, directory=args.output_dir)


# ------------------------------------------------------------------------- speed


SPEED_CASES = [  # (label, function, models, keyword arguments)
    ("AIS default kernel S=20 M=1", "ais", "A", dict(n_temperatures=20, n_chains=1)),
    ("AIS collapsed S=10 M=10", "ais", "A", dict(n_temperatures=10, n_chains=10,
                                                 kernel="collapsed")),
    ("AIS blocked S=20 M=1", "ais", "A", dict(n_temperatures=20, n_chains=1, kernel="blocked")),
    ("ratio-AIS geometric S0=10 S=10 M=1", "ratio", "AB",
     dict(n_temperatures=10, n_start_temperatures=10, n_chains=1, align_topics=False)),
    ("ratio-AIS geometric, alphas differ, S=10 M=1", "ratio", "AC",
     dict(n_temperatures=10, n_chains=1)),
    ("left-to-right SMC R=20", "lr", "A", dict(n_particles=20, n_filters=1)),
    ("left-to-right SMC R=100", "lr", "A", dict(n_particles=100, n_filters=1)),
]


def speed_cases(args):
    """Time :data:`SPEED_CASES` with the sktopics on ``sys.path``; print JSON rows."""
    functions = {"ais": ais_log_likelihood, "ratio": ratio_ais, "lr": left_to_right_log_likelihood}
    rows = []
    warm = True
    for name in ("20ng", "nips"):
        train, X = load(name, args)
        models = fit_models(name, train, args)
        pairs = {"A": (models["phi_sym"], models["alpha_sym"]),
                 "B": (perturb(models["phi_sym"], 0.1), models["alpha_sym"]),
                 "C": (models["phi_asym"], models["alpha_asym"])}
        if warm:  # compile the TorchScript loops first
            for kernel in ("collapsed", "blocked"):
                ais_log_likelihood(pairs["A"], X[:5], n_temperatures=2, kernel=kernel,
                                   random_state=0)
            ratio_ais(pairs["A"], pairs["C"], X[:5], n_temperatures=2, random_state=0)
            warm = False
        n_docs, n_tok = X.shape[0], float(X.sum())
        for label, fn, which, kw in SPEED_CASES:
            t = time.perf_counter()
            r = functions[fn](*[pairs[m] for m in which], X, random_state=0, **kw)
            seconds = time.perf_counter() - t
            rows.append({"corpus": name, "method": label, "n_docs": n_docs, "n_tokens": n_tok,
                         "seconds": seconds, "token_updates": r.n_token_updates,
                         "token_updates_per_s": r.n_token_updates / seconds,
                         "documents_per_s": n_docs / seconds, "per_token": r.per_token})
    print("ROWS " + json.dumps(rows), flush=True)
    return rows


def _in_tree(tree, mode_args):
    """Run this script's ``mode_args`` with the sktopics of ``tree``; its JSON rows."""
    env = {**os.environ, "PYTHONPATH": os.path.abspath(tree), "SKTOPICS_DATA": default_data_home()}
    out = subprocess.run([sys.executable, os.path.abspath(__file__), *mode_args], env=env,
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out.split("ROWS ", 1)[1].splitlines()[0])


def _forwarded(args):
    return ["--fit-sweeps", str(args.fit_sweeps), "--model-cache", args.model_cache,
            "--threads", str(args.threads), "--ng-docs", str(args.ng_docs),
            "--nips-docs", str(args.nips_docs), "--ng-max-length", str(args.ng_max_length)]


def _git_commit(tree):
    return subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"],
                          capture_output=True, text=True).stdout.strip()


def speed(args):
    """Token-updates/s on the real test sets (K = 50): this tree, and ``--baseline``'s.

    Every measurement runs in a fresh process, trees alternating, ``--repeats`` times;
    the table gives the median over the repeats.
    """
    here = str(Path(__file__).resolve().parents[1])
    trees = [("new", here)] + ([("old", args.baseline)] if args.baseline else [])
    fit_models("20ng", load("20ng", args)[0], args)  # cache the models once
    fit_models("nips", load("nips", args)[0], args)
    runs = {label: [] for label, _ in trees}
    for _ in range(args.repeats):
        for label, tree in (trees if _ % 2 == 0 else trees[::-1]):
            runs[label].append(_in_tree(tree, ["--speed-cases", *_forwarded(args)]))
            print(label, "done", flush=True)
    out = {"machine": machine(), "threads": args.threads, "repeats": args.repeats,
           "commits": {label: _git_commit(tree) for label, tree in trees}, "runs": runs}
    median = {label: [{**rows[0][i], "seconds": float(np.median([r[i]["seconds"] for r in rows])),
                       "token_updates_per_s": float(np.median([r[i]["token_updates_per_s"]
                                                               for r in rows]))}
                      for i in range(len(rows[0]))] for label, rows in runs.items()}
    out["median"] = median
    write_results(f"{args.output_name}_speed", out, speed_report, directory=args.output_dir)


def speed_report(out):
    """The page of :func:`speed`'s JSON."""
    median, baseline = out["median"], "old" in out["commits"]
    head = "| corpus | method | docs | tokens | s | token-updates/s |"
    if baseline:
        head += " old s | old token-updates/s | speed-up |"
    lines = ["# model_selection speed (K = 50, real test sets)", "",
             (f"Machine: {out['machine']['cpu']}, {out['threads']} torch thread(s), load at "
              f"start {tuple(out['machine']['load_average_at_start'])}; median of "
              f"{out['repeats']} runs, each in a fresh process"
              + (f", alternating with the baseline commit {out['commits']['old']}"
                 if baseline else "")
              + f" (this commit: {out['commits']['new']}). Token-updates = K-way draws "
              "(temperatures x chains x tokens, start sweeps included; particles x tokens)."),
             "", head, "|" + "---|" * (head.count("|") - 1)]
    for i, r in enumerate(median["new"]):
        line = (f"| {r['corpus']} | {r['method']} | {r['n_docs']} | {int(r['n_tokens'])} | "
                f"{r['seconds']:.2f} | {r['token_updates_per_s'] / 1e6:.2f} M |")
        if baseline:
            o = median["old"][i]
            line += (f" {o['seconds']:.2f} | {o['token_updates_per_s'] / 1e6:.2f} M | "
                     f"{o['seconds'] / r['seconds']:.1f}x |")
        lines.append(line)
    return "\n".join(lines) + "\n"


FOLD_CASES = [  # (label, function, models, keyword arguments): a grid search's budgets
    ("AIS S=50 M=2", "ais", "A", dict(n_temperatures=50, n_chains=2)),
    ("ratio-AIS, alphas differ, S=50 M=2", "ratio", "AC", dict(n_temperatures=50, n_chains=2)),
    ("left-to-right R=50 x 2 filters", "lr", "A", dict(n_particles=50, n_filters=2)),
    ("iteration-AIS S0=30 + S=20, M=2", "iter", "CA",
     dict(n_start_temperatures=30, n_segment_temperatures=20, n_chains=2)),
]


def fold_rows(seed):
    """A 600-document fold of the 20NG test set (seeded draw among the non-empty documents)."""
    test = load_20news_avitm(default_data_home(), subset="test").data.astype(np.float64)
    nonempty = np.flatnonzero(np.asarray(test.sum(1)).ravel() > 0)
    return test[np.sort(np.random.default_rng(seed).choice(nonempty, 600, replace=False))]


def fold_case(args):
    """Time :data:`FOLD_CASES` on one fold with the sktopics on ``sys.path``; JSON rows."""
    from sktopics.model_selection import iteration_ais

    X = fold_rows(int(args.fold_case))
    models = fit_models("20ng", None, args)
    pairs = {"A": (models["phi_sym"], models["alpha_sym"]),
             "C": (models["phi_asym"], models["alpha_asym"])}
    functions = {"ais": ais_log_likelihood, "ratio": ratio_ais,
                 "lr": left_to_right_log_likelihood,
                 "iter": lambda *m, **kw: iteration_ais(list(m[:-1]), m[-1], **kw)[-1]}
    kw = dict(device="cpu", random_state=0)
    for _, fn, which, case in FOLD_CASES:  # compile the TorchScript loops first
        small = {k: (2 if isinstance(v, int) and k != "n_chains" else v) for k, v in case.items()}
        functions[fn](*[pairs[m] for m in which], X[:5], **small, **kw)
    rows = []
    lengths = np.asarray(X.sum(1)).ravel()
    for label, fn, which, case in FOLD_CASES:
        wall, cpu = time.perf_counter(), time.process_time()
        r = functions[fn](*[pairs[m] for m in which], X, **case, **kw)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        rows.append({"fold": int(args.fold_case), "method": label, "n_tokens": float(X.sum()),
                     "longest": int(lengths.max()), "seconds": wall, "cpu_seconds": cpu,
                     "token_updates": r.n_token_updates, "per_token": float(r.per_token),
                     "token_updates_per_s": r.n_token_updates / wall,
                     "token_updates_per_cpu_s": r.n_token_updates / cpu})
    print("ROWS " + json.dumps(rows), flush=True)


def folds(args):
    """Throughput per evaluator on 600-document folds, this tree and ``--baseline``'s.

    Every (tree, fold) runs in a fresh process, trees alternating. The table gives
    the median over the folds with its range; per-fold rows are in the JSON, with
    wall-clock and CPU seconds (on a shared machine the CPU time is the steadier).
    """
    here = str(Path(__file__).resolve().parents[1])
    trees = [("new", here)] + ([("old", args.baseline)] if args.baseline else [])
    fit_models("20ng", load("20ng", args)[0], args)  # cache the models once
    seeds = [int(x) for x in args.fold_seeds.split(",")]
    runs = {label: [] for label, _ in trees}
    with MachineLoad() as machine_load:
        for i, seed in enumerate(seeds):
            for label, tree in (trees if i % 2 == 0 else trees[::-1]):
                runs[label] += _in_tree(tree, ["--fold-case", str(seed), *_forwarded(args)])
                print(label, "fold", seed, "done", flush=True)
    out = {"machine": machine(), "load": machine_load.summary(), "threads": args.threads,
           "fit_sweeps": args.fit_sweeps, "seeds": seeds,
           "commits": {label: _git_commit(tree) for label, tree in trees}, "runs": runs}
    if args.baseline:
        out["same_estimates"] = {
            label: all(abs(o["per_token"] - n["per_token"]) < 1e-9 for o, n in zip(
                [r for r in runs["old"] if r["method"] == label],
                [r for r in runs["new"] if r["method"] == label]))
            for label, *_ in FOLD_CASES}
    write_results(f"{args.output_name}_folds", out, folds_report, directory=args.output_dir)


def folds_report(out):
    """The page of :func:`folds`'s JSON."""
    runs, baseline = out["runs"], "old" in out["commits"]
    head = "| method | token-updates/s (median, range) | CPU-time rate (median, range) |"
    if baseline:
        head += " old token-updates/s | old CPU-time rate | speed-up (median) |"
    longest = sorted({r["longest"] for r in runs["new"]})
    sweeps = f" ({out['fit_sweeps']} sweeps)" if "fit_sweeps" in out else ""
    lines = ["# model_selection on 600-document folds (K = 50)", "",
             (f"{len(out['seeds'])} folds of 600 documents of the 20NG test set (seeded draws; "
              f"longest documents {longest} tokens), K = 50 LDAGibbs models{sweeps}, "
              f"{out['threads']} torch thread(s), each (code, fold) in a fresh process, "
              f"alternating. Machine: {out['machine']['cpu']}"
              + (f"; old = {out['commits']['old']}" if baseline else "")
              + f", new = {out['commits']['new']} plus the working tree. Token-updates = "
              "K-way draws; the CPU-time rate divides them by the process's CPU seconds, "
              "which a shared machine disturbs less than the wall clock. Medians over the "
              "folds, with their range; the speed-up is the median over the folds of the "
              "paired CPU-time ratio."), "", load_sentence(out["load"]), "", head,
             "|" + "---|" * (head.count("|") - 1)]

    def stat(rows, key):
        v = np.array([r[key] for r in rows]) / 1e6
        return np.median(v), v.min(), v.max()

    for label in dict.fromkeys(r["method"] for r in runs["new"]):
        new = [r for r in runs["new"] if r["method"] == label]
        w, c = stat(new, "token_updates_per_s"), stat(new, "token_updates_per_cpu_s")
        line = (f"| {label} | {w[0]:.2f} M ({w[1]:.2f}-{w[2]:.2f}) | "
                f"{c[0]:.2f} M ({c[1]:.2f}-{c[2]:.2f}) |")
        if baseline:
            old = [r for r in runs["old"] if r["method"] == label]
            ow, oc = stat(old, "token_updates_per_s"), stat(old, "token_updates_per_cpu_s")
            ratio = np.median([o["cpu_seconds"] / n["cpu_seconds"] for o, n in zip(old, new)])
            line += (f" {ow[0]:.2f} M ({ow[1]:.2f}-{ow[2]:.2f}) | "
                     f"{oc[0]:.2f} M ({oc[1]:.2f}-{oc[2]:.2f}) | {ratio:.2f}x |")
        lines.append(line)
    if baseline:
        lines += ["", "Same per-token estimates as the old code on every fold: "
                  + ", ".join(f"{k}: {'yes' if v else 'no'}"
                              for k, v in out["same_estimates"].items())]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- report


LABELS = {"lr": "left-to-right (SMC)", "ais": "standard AIS", "geometric_fwd": "ratio geometric",
          "geometric_rev": "ratio geometric (rev.)", "convex_fwd": "ratio convex",
          "convex_rev": "ratio convex (rev.)", "geometric_both": "ratio geometric (both, mean)",
          "convex_both": "ratio convex (both, mean)"}


def to_rst(report):
    """The page of the reproduction's JSON: ours beside the poster's, per corpus and
    experiment (everything else, the gold runs' diagnostics included, is in the JSON)."""
    out = []
    for corpus in ("nips", "20ng"):
        if corpus not in report:
            continue
        poster = "nips" if corpus == "nips" else "acl"
        info = report[corpus]["info"]
        for exp, e in report[corpus]["experiments"].items():
            g = e["gold"]
            if exp == "perturbed":
                title = (f"{corpus.upper()}, learned vs perturbed topics (sigma = {info['sigma']}; "
                         f"the gold prefers the learned topics on {g['pct_A_better']:.1f} % of "
                         f"{info['n_test_docs']} documents; gold corpus ratio "
                         f"{g['corpus_ratio']:.4f})")
                cols = [("% favouring A", "pct_correct", "pct_correct", "{:.1f}"),
                        ("% sign = gold", "sign_agreement_with_gold", None, "{:.1f}"),
                        ("var r_d", "ratio_variance", "ratio_variance", "{:.1e}"),
                        ("corpus ratio", "corpus_ratio", "corpus_ratio", "{:.4f}")]
            else:
                what = ("asymmetric vs symmetric alpha, separately trained" if exp == "asymmetric_alpha"
                        else "asymmetric vs symmetric alpha, same topics")
                title = (f"{corpus.upper()}, {what} (gold corpus ratio "
                         f"{g['corpus_ratio']:.4f}; long LR: R = {g['long_lr']['R']})")
                cols = [("corr. long LR", "corr_with_long_lr", "corr_with_long_lr", "{:.3f}"),
                        ("corr. gold", "corr_with_gold", None, "{:.3f}"),
                        ("% sign = gold", "sign_agreement_with_gold", None, "{:.1f}"),
                        ("var r_d", "ratio_variance", "ratio_variance", "{:.1e}"),
                        ("corpus ratio", "corpus_ratio", "corpus_ratio", "{:.4f}")]
            out += [f"**{title}**", "", ".. list-table::", "   :header-rows: 1", "",
                    "   * - budget", "     - method"]
            for head, _, pk, _ in cols:
                out.append(f"     - {head}" + (f" (poster {poster.upper()})" if pk else ""))
            for budget, rows in e["budgets"].items():
                for i, m in enumerate(METHODS):
                    st = rows["_settings"]
                    out.append(f"   * - {budget} (B = {st['budget']})" if i == 0 else "   * - ..")
                    out.append(f"     - {LABELS[m]}")
                    for _, key, pk, fmt in cols:
                        cell = fmt.format(rows[m][key])
                        ref = POSTER[pk][f"{poster}_{budget}"][i] if pk else None
                        if ref is not None:
                            cell += " (" + fmt.format(ref) + ")"
                        out.append(f"     - {cell}")
            out.append("")
    return "\n".join(out) + "\n"


def _synchronize(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def target_case(args):
    """The timed run of :func:`speed_target`, with the sktopics on ``sys.path``."""
    device = torch.device(args.device)
    data = default_data_home()
    train = load_20news_avitm(data, subset="train").data
    test = load_20news_avitm(data, subset="test").data
    test = test[np.asarray(test.sum(1)).ravel() > 0]
    path = os.path.join(args.model_cache, f"20ng_target_k50_{args.target_fit_sweeps}.npz")
    tic = time.perf_counter()
    if os.path.exists(path):
        cached = np.load(path)
        model, fit_seconds = (cached["phi"], cached["alpha"]), float(cached["seconds"])
    else:
        est = LDAGibbs(50, doc_topic_prior=0.1, topic_word_prior=0.01, optimize_interval=None,
                       max_iter=args.target_fit_sweeps, device=device, random_state=0).fit(train)
        model, fit_seconds = (est.components_, est.doc_topic_prior_), time.perf_counter() - tic
        os.makedirs(args.model_cache, exist_ok=True)
        np.savez(path, phi=model[0], alpha=model[1], seconds=fit_seconds)
    kw = dict(n_chains=1, device=device, random_state=0)
    ais_log_likelihood(model, test[:50], n_temperatures=2, **kw)
    _synchronize(device)
    tic = time.perf_counter()
    result = ais_log_likelihood(model, test, n_temperatures=args.target_temperatures, **kw)
    _synchronize(device)
    seconds = time.perf_counter() - tic
    row = {"device": str(device), "device_name": (torch.cuda.get_device_name(device)
                                                   if device.type == "cuda" else machine()["cpu"]),
           "threads": torch.get_num_threads(), "n_docs": test.shape[0],
           "n_tokens": int(test.sum()), "n_temperatures": args.target_temperatures,
           "n_chains": 1, "kernel": result.settings["kernel"], "seconds": seconds,
           "fit_seconds": fit_seconds, "token_updates_per_s": result.n_token_updates / seconds,
           "log_likelihood_per_token": float(result.per_token)}
    print("ROWS " + json.dumps([row]), flush=True)
    return row


def speed_target(args):
    """AIS over the whole 20NG test set (7.5 k documents, 0.6 M tokens), one chain, K = 50.

    The model is an LDAGibbs fit of ``--target-fit-sweeps`` sweeps (cached; its
    quality does not change the cost). A 2-temperature run on 50 documents first
    compiles the TorchScript loops; the timed run is synchronised on CUDA. With
    ``--baseline``, the same run with the sktopics of that checkout follows, in a fresh
    process.
    """
    device = torch.device(args.device)
    here = str(Path(__file__).resolve().parents[1])
    trees = [("new", here)] + ([("old", args.baseline)] if args.baseline else [])
    child = ["--target-case", "--device", args.device, "--target-temperatures",
             str(args.target_temperatures), "--target-fit-sweeps", str(args.target_fit_sweeps),
             "--model-cache", args.model_cache, "--threads", str(args.threads)]
    rows = {label: _in_tree(tree, child)[0] for label, tree in trees}
    out = {"machine": machine(), "row": rows["new"], "rows": rows,
           "fit_sweeps": args.target_fit_sweeps,
           "commits": {label: _git_commit(tree) for label, tree in trees}}
    write_results(f"{args.output_name}_target_{device.type}", out, target_report,
                  directory=args.output_dir)


def target_report(out):
    """The page of :func:`speed_target`'s JSON."""
    row = out["row"]
    sweeps = f" ({out['fit_sweeps']} sweeps)" if "fit_sweeps" in out else ""
    head = ("| code | documents | tokens | temperatures | kernel | seconds | token-updates/s | "
            "log-likelihood per token |")
    lines = [f"# AIS over the whole 20NG test set: {row['n_temperatures']} temperatures", "",
             (f"Goals: <= 130 s on one CPU thread, <= 10 s on one H100. Device: "
              f"{row['device_name']} ({row['device']}, {row['threads']} CPU thread(s)); load at "
              f"start {tuple(out['machine']['load_average_at_start'])}. K = 50 LDAGibbs"
              f"{sweeps}, one chain, kernel='auto', sigmoid schedule; each code in a fresh "
              "process."), "", head, "|" + "---|" * (head.count("|") - 1)]
    for label, r in out["rows"].items():
        lines.append(f"| {label} ({out['commits'][label]}) | {r['n_docs']} | {r['n_tokens']} | "
                     f"{r['n_temperatures']} | {r['kernel']} | {r['seconds']:.1f} | "
                     f"{r['token_updates_per_s'] / 1e6:.2f} M | {r['log_likelihood_per_token']:.4f} |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- choosing K


class Timer:
    """Wall-clock and CPU seconds of a block (``seconds``, ``cpu_seconds``).

    The experiments below run one thread, so their CPU seconds are what a quiet
    machine's wall clock would show; a shared machine stretches the wall clock of
    both the fit and the scoring, unevenly. Costs are ratios of CPU seconds.
    """

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.wall
        self.cpu_seconds = time.process_time() - self.cpu

    def record(self):
        return {"seconds": self.seconds, "cpu_seconds": self.cpu_seconds}


CK_KS = (5, 20, 40)


def choosing_k_data(seed=0):
    """2,000 training and 1,000 test documents of 20 Newsgroups (non-empty, seeded draws)."""
    data = default_data_home()
    train = load_20news_avitm(data, subset="train").data.astype(np.float64)
    test = load_20news_avitm(data, subset="test").data.astype(np.float64)
    rng = np.random.default_rng(seed)

    def pick(X, n):
        nonempty = np.flatnonzero(np.asarray(X.sum(1)).ravel() > 0)
        return X[np.sort(rng.choice(nonempty, n, replace=False))]

    return pick(train, 2000), pick(test, 1000)


def choosing_k(args):
    """K in {5, 20, 40} (LDAGibbs, 100 sweeps) ranked by AIS at each budget and by the scorers.

    Per training seed and K: the fit's seconds; the gold (left-to-right SMC with
    ``--ck-gold-particles`` particles in each of two filters); the left-to-right
    scorer's default; AIS with 4 chains at every budget of ``--ck-temperatures``
    (sigmoid schedule, the scorer's seed), each run timed. The budget rules
    (fixed budgets, and doubling the temperatures until the rise from half the
    budget is below a tolerance) are evaluated from these runs in the report.
    Rows are cached in ``model_selection_choosing_k.json`` as they come.
    """
    from sktopics.model_selection import make_left_to_right_scorer

    path = args.output_dir / f"{args.output_name}_choosing_k.json"
    report = json.loads(path.read_text()) if path.exists() else {"rows": {}}
    report["machine"] = machine()
    X_train, X_test = choosing_k_data()
    report["data"] = {"n_train": X_train.shape[0], "n_test": X_test.shape[0],
                      "test_tokens": int(X_test.sum())}
    temps = [int(t) for t in args.ck_temperatures.split(",")]
    for seed in [int(s) for s in args.ck_seeds.split(",")]:
        for k in CK_KS:
            key = f"seed{seed}_K{k}"
            row = report["rows"].setdefault(key, {"seed": seed, "K": k, "ais": {}})
            model = LDAGibbs(k, max_iter=100, device="cpu", random_state=seed)
            with Timer() as t:
                model.fit(X_train)
            row["fit"] = t.record()
            if "gold" not in row:
                with Timer() as t:
                    g = left_to_right_log_likelihood(model, X_test, device="cpu", random_state=1,
                                                     n_particles=args.ck_gold_particles,
                                                     n_filters=2)
                row["gold"] = {"score": g.per_token, "stderr": g.per_token_stderr, **t.record()}
            with Timer() as t:
                make_left_to_right_scorer(device="cpu")(model, X_test)
            lr = make_left_to_right_scorer(return_stderr=True, device="cpu")(model, X_test)
            row["lr_scorer"] = {**lr, **t.record()}
            for s in temps:
                if str(s) in row["ais"]:
                    continue
                with Timer() as t:
                    r = ais_log_likelihood(model, X_test, n_temperatures=s, n_chains=4,
                                           device="cpu", random_state=0)
                row["ais"][str(s)] = {"score": r.per_token, "stderr": r.per_token_stderr,
                                      **t.record()}
                path.write_text(json.dumps(report, indent=1, default=float) + "\n")
                print(key, s, row["ais"][str(s)], flush=True)
            path.write_text(json.dumps(report, indent=1, default=float) + "\n")
    write_results(path.stem, report, choosing_k_report, directory=args.output_dir)


def _ranking(scores):
    return " > ".join(str(k) for k in sorted(scores, key=lambda k: -scores[k]))


def adaptive_ais(runs, tolerance, first, cap):
    """The doubling rule on recorded runs: (temperatures, score, bias, seconds, capped).

    Start at ``first`` temperatures (plus a run at half of it); double while the
    score's rise from half the temperatures exceeds ``tolerance`` and the next
    budget is within ``cap``; the seconds add up every run made.
    """
    s = first
    seconds = runs[str(s // 2)]["cpu_seconds"] + runs[str(s)]["cpu_seconds"]
    while True:
        bias = runs[str(s)]["score"] - runs[str(s // 2)]["score"]
        if bias <= tolerance or 2 * s > cap or str(2 * s) not in runs:
            return s, runs[str(s)]["score"], bias, seconds, bias > tolerance
        s *= 2
        seconds += runs[str(s)]["cpu_seconds"]


def choosing_k_report(report):
    """The page of :func:`choosing_k`'s JSON: rankings, biases and costs per rule,
    relative to the fits' time."""
    lines = ["# Choosing K with the held-out likelihood scorers", "",
             (f"{report['data']['n_train']} training and {report['data']['n_test']} test "
              f"documents of 20 Newsgroups ({report['data']['test_tokens']} test tokens), "
              "LDAGibbs(max_iter=100), K in {5, 20, 40}; gold: left-to-right SMC, "
              "2 filters of 400 particles. AIS: 4 chains, sigmoid schedule, the scorer's "
              "seed. Cost = scoring CPU seconds / fitting CPU seconds of the same model "
              "(one thread; the wall clock of a shared machine is in the JSON). Machine: "
              f"{report['machine']['cpu']}, one thread, load at start "
              f"{report['machine']['load_average_at_start']} (shared)."), ""]
    seeds = sorted({r["seed"] for r in report["rows"].values()})
    head = "| seed | rule | ranking | agrees with gold | score - gold (K=5, 20, 40) | cost / fit |"
    lines += [head, "|---|---|---|---|---|---|"]
    for seed in seeds:
        rows = {r["K"]: r for r in report["rows"].values() if r["seed"] == seed and "gold" in r}
        if len(rows) < len(CK_KS):
            continue
        gold = {k: rows[k]["gold"]["score"] for k in CK_KS}
        fit = {k: rows[k]["fit"]["cpu_seconds"] for k in CK_KS}
        rules = {"gold (left-to-right, 2 x 400 particles)":
                 (gold, {k: rows[k]["gold"]["cpu_seconds"] for k in CK_KS}),
                 "make_left_to_right_scorer() (20 particles x 2 filters)":
                     ({k: rows[k]["lr_scorer"]["score"] for k in CK_KS},
                      {k: rows[k]["lr_scorer"]["cpu_seconds"] for k in CK_KS})}
        for s in sorted({int(t) for k in CK_KS for t in rows[k]["ais"]}):
            if all(str(s) in rows[k]["ais"] and str(s // 2) in rows[k]["ais"] for k in CK_KS):
                rules[f"AIS, {s} temperatures"] = (
                    {k: rows[k]["ais"][str(s)]["score"] for k in CK_KS},
                    {k: rows[k]["ais"][str(s)]["cpu_seconds"] for k in CK_KS})
        most = min(max(int(t) for t in rows[k]["ais"]) for k in CK_KS)
        for tol in (0.01, 0.005, 0.002):
            for cap in sorted({min(400, most), most}):
                try:
                    got = {k: adaptive_ais(rows[k]["ais"], tol, 50, cap) for k in CK_KS}
                except KeyError:
                    continue
                label = (f"AIS doubling from 50 temperatures until the rise < {tol} (cap {cap}): "
                         + ", ".join(f"K={k}: {got[k][0]}{' (capped)' if got[k][4] else ''}"
                                     for k in CK_KS))
                rules[label] = ({k: got[k][1] for k in CK_KS}, {k: got[k][3] for k in CK_KS})
        for label, (scores, seconds) in rules.items():
            ratio = [seconds[k] / fit[k] for k in CK_KS]
            lines.append(
                f"| {seed} | {label} | {_ranking(scores)} | "
                f"{'yes' if _ranking(scores) == _ranking(gold) else 'no'} | "
                + ", ".join(f"{scores[k] - gold[k]:+.4f}" for k in CK_KS)
                + f" | {min(ratio):.1f}-{max(ratio):.1f}x |")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- ProdLDA scorer


PS_KS = (5, 10, 20, 40)
PS_SAMPLES = (16, 64, 256)
#: the reference's samples (fold 0, the K of ``--ps-reference-ks``; elsewhere the
#: reference is the largest of PS_SAMPLES)
PS_REFERENCE = 1024


def short_posts(n_docs, seed=0):
    """``n_docs`` lines of the GoogleNews short-text corpus (seeded draw), as raw strings."""
    lines = (Path(default_data_home()) / "gnews_ctm" / "GoogleNews.txt").read_text(
        encoding="utf-8").splitlines()
    rows = np.sort(np.random.default_rng(seed).choice(len(lines), n_docs, replace=False))
    return [lines[i] for i in rows]


def prodlda_scorer(args):
    """Pipeline(CountVectorizer, ProdLDA) over K, KFold(3): what each scorer costs and picks.

    Per fold and K: the pipeline's fit seconds; importance sampling of the latent
    from the defensive mixture of the encoder's q(h | w) and the prior with each of
    ``PS_SAMPLES`` samples (seed 0; the largest is the reference), timed; on the
    first ``--ps-ais-folds`` folds also ``make_ais_scorer(return_stderr=True)``,
    the former recommendation. Rows are cached as they come.
    """
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import KFold
    from sklearn.pipeline import Pipeline

    from sktopics import ProdLDA
    from sktopics.model_selection import importance_sampling_log_likelihood, make_ais_scorer

    path = args.output_dir / f"{args.output_name}_prodlda_scorer.json"
    report = json.loads(path.read_text()) if path.exists() else {"rows": {}}
    report["machine"] = machine()
    texts = np.asarray(short_posts(args.ps_docs), dtype=object)
    folds = list(KFold(3, shuffle=True, random_state=0).split(texts))
    report["data"] = {"corpus": "gnews_ctm (GoogleNews short texts)", "n_docs": len(texts)}
    machine_load = MachineLoad().__enter__()
    for f, (tr, te) in enumerate(folds[: args.ps_folds]):
        for k in PS_KS:
            key = f"fold{f}_K{k}"
            row = report["rows"].setdefault(key, {"fold": f, "K": k, "is": {}})
            pipe = Pipeline([("vec", CountVectorizer()),
                             ("prodlda", ProdLDA(k, device="cpu", random_state=0))])
            with Timer() as t:
                pipe.fit(texts[tr])
            row["fit"] = t.record()
            Xt = pipe[:-1].transform(texts[te])
            row["n_vocabulary"], row["n_test_tokens"] = Xt.shape[1], float(Xt.sum())
            reference_ks = [int(x) for x in args.ps_reference_ks.split(",") if x]
            for n in PS_SAMPLES + ((PS_REFERENCE,) if f == 0 and k in reference_ks else ()):
                if str(n) in row["is"]:
                    continue
                with Timer() as t:
                    res = importance_sampling_log_likelihood(pipe, texts[te], n_samples=n,
                                                             device="cpu", random_state=0)
                row["is"][str(n)] = {"score": res.per_token, "stderr": res.per_token_stderr,
                                     **t.record()}
            ais_ks = [int(x) for x in args.ps_ais_ks.split(",")]
            if f < args.ps_ais_folds and k in ais_ks and "ais_scorer" not in row:
                with Timer() as t:
                    got = make_ais_scorer(return_stderr=True, device="cpu")(pipe, texts[te])
                row["ais_scorer"] = {**got, **t.record()}
            path.write_text(json.dumps(report, indent=1, default=float) + "\n")
            print(key, {n: round(v["score"], 4) for n, v in row["is"].items()},
                  row.get("ais_scorer"), row["fit"], flush=True)
    machine_load.__exit__(None, None, None)
    report["load"] = machine_load.summary()
    write_results(path.stem, report, prodlda_scorer_report, directory=args.output_dir)


def prodlda_scorer_report(report):
    """The page of :func:`prodlda_scorer`'s JSON."""
    lines = ["# ProdLDA: which held-out likelihood scorer, at what cost", "",
             (f"{report['data']['n_docs']} documents of {report['data']['corpus']}, "
              "Pipeline(CountVectorizer(), ProdLDA(K)) with the estimator's defaults, "
              "KFold(3, shuffle=True, random_state=0). Importance sampling (IS): the "
              "defensive mixture 0.5 q(h | w) + 0.5 p(h) of the encoder's proposal and the "
              "prior, seed 0; the reference of each K is its largest IS run (samples in the "
              "table). Cost = scoring CPU seconds / the "
              "pipeline's fitting CPU seconds (one thread; wall clocks in the JSON). Machine: "
              f"{report['machine']['cpu']}, one thread, commit "
              f"{report['machine']['git_commit']}"
              + (" plus the working tree" if report['machine'].get('package_modified') else "")
              + "."), "", load_sentence(report["load"]) if "load" in report else "", "",
             "| fold | scorer | ranking of K | agrees with reference | score - reference (per K) | cost / fit |",
             "|---|---|---|---|---|---|"]
    for f in sorted({r["fold"] for r in report["rows"].values()}):
        rows = {r["K"]: r for r in report["rows"].values() if r["fold"] == f}
        if len(rows) < len(PS_KS):
            continue
        n_ref = {k: max(int(n) for n in rows[k]["is"]) for k in PS_KS}
        ref = {k: rows[k]["is"][str(n_ref[k])]["score"] for k in PS_KS}
        rules = {f"IS, {n} samples": ({k: rows[k]["is"][str(n)]["score"] for k in PS_KS},
                                      {k: rows[k]["is"][str(n)]["cpu_seconds"] for k in PS_KS})
                 for n in PS_SAMPLES if all(str(n) in rows[k]["is"] for k in PS_KS)}
        rules["reference: IS with " + ", ".join(f"{n_ref[k]} (K={k})" for k in PS_KS)
              + " samples"] = (ref, {k: rows[k]["is"][str(n_ref[k])]["cpu_seconds"]
                                     for k in PS_KS})
        if all("ais_scorer" in rows[k] for k in PS_KS):
            rules["make_ais_scorer(return_stderr=True)"] = (
                {k: rows[k]["ais_scorer"]["score"] for k in PS_KS},
                {k: rows[k]["ais_scorer"]["cpu_seconds"] for k in PS_KS})
        for k in PS_KS:
            if "ais_scorer" in rows[k] and not all("ais_scorer" in rows[j] for j in PS_KS):
                a = rows[k]["ais_scorer"]
                lines.append(f"| {f} | make_ais_scorer(return_stderr=True), K = {k} only | | | "
                             f"{a['score'] - ref[k]:+.4f} (budget check {a['bias']:.4f}) | "
                             f"{a['cpu_seconds'] / rows[k]['fit']['cpu_seconds']:.1f}x |")
        for label, (scores, seconds) in rules.items():
            ratio = [seconds[k] / rows[k]["fit"]["cpu_seconds"] for k in PS_KS]
            lines.append(f"| {f} | {label} | {_ranking(scores)} | "
                         f"{'yes' if _ranking(scores) == _ranking(ref) else 'no'} | "
                         + ", ".join(f"{scores[k] - ref[k]:+.4f}" for k in PS_KS)
                         + f" | {min(ratio):.2f}-{max(ratio):.2f}x |")
    earlier = report.get("earlier")
    if earlier:
        e = earlier["row"]
        lines += ["", (f"An earlier run of fold {e['fold']}, K = {e['K']} only "
                       f"({earlier['note']}): fit {e['fit']['cpu_seconds']:.1f} CPU s; "
                       + ", ".join(f"IS with {n} samples {v['score']:.4f} "
                                   f"({v['cpu_seconds'] / e['fit']['cpu_seconds']:.2f}x the fit)"
                                   for n, v in e["is"].items())
                       + (f"; make_ais_scorer(return_stderr=True) {e['ais_scorer']['score']:.4f} "
                          f"(budget check {e['ais_scorer']['bias']:.4f}) at "
                          f"{e['ais_scorer']['cpu_seconds'] / e['fit']['cpu_seconds']:.1f}x the "
                          "fit" if "ais_scorer" in e else "") + ".")]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------- criteria


def criteria(args):
    """GridSearchCV over K of Pipeline(CountVectorizer, LDAGibbs) on 5,000 short posts.

    Scored by one criteria scorer: the left-to-right likelihood with its errors
    (``return_stderr=True``), NPMI coherence on the held-out fold and topic
    diversity; refit by :func:`refit_best`. Writes the search's ``cv_results_``,
    a table and the :class:`~sktopics.inspection.CriteriaDisplay` picture.
    """
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.model_selection import GridSearchCV, KFold
    from sklearn.pipeline import Pipeline

    from sktopics.model_selection import (
        make_coherence_scorer,
        make_criteria_scorer,
        make_diversity_scorer,
        make_left_to_right_scorer,
        refit_best,
    )

    texts = short_posts(5000)
    ks = [int(k) for k in args.cr_ks.split(",")]
    pipe = Pipeline([("vec", CountVectorizer()),
                     ("lda", LDAGibbs(max_iter=200, device="cpu", random_state=0))])
    scoring = make_criteria_scorer(make_left_to_right_scorer(return_stderr=True),
                                   coherence=make_coherence_scorer(),
                                   diversity=make_diversity_scorer())
    search = GridSearchCV(pipe, {"lda__n_components": ks}, scoring=scoring, refit=refit_best,
                          cv=KFold(3, shuffle=True, random_state=0))
    tic = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search.fit(texts)
    seconds = time.perf_counter() - tic
    res = search.cv_results_
    keep = [k for k in res if k.startswith(("mean_", "std_", "split", "param_", "rank_"))]
    out = {"machine": machine(), "corpus": "gnews_ctm, 5,000 posts", "seconds": seconds,
           "best_params": search.best_params_,
           "warnings": [f"{w.category.__name__}: {w.message}" for w in caught],
           "cv_results": {k: np.asarray(res[k]).tolist() for k in keep}}
    out["cv_results"]["params"] = res["params"]
    path = write_results(f"{args.output_name}_criteria", out, criteria_report,
                         directory=args.output_dir)
    criteria_picture(path)


def criteria_picture(path):
    """Draw the :class:`~sktopics.inspection.CriteriaDisplay` of :func:`criteria`'s JSON
    (``path``) beside it, from the stored ``cv_results_``."""
    import matplotlib

    matplotlib.use("Agg")
    from sktopics.inspection import CriteriaDisplay

    res = json.loads(Path(path).read_text())["cv_results"]
    res = {k: (v if k == "params" else np.asarray(v)) for k, v in res.items()}
    display = CriteriaDisplay.from_cv_results(res)
    display.figure_.savefig(Path(path).with_suffix(".png"), dpi=110)


def criteria_report(out):
    """The page of :func:`criteria`'s JSON."""
    res = out["cv_results"]
    ks = res["param_lda__n_components"]
    n_folds = len([k for k in res if k.startswith("split") and k.endswith("_test_score")])
    # each criterion's best K, as CriteriaDisplay.best_ picks it: the highest mean
    best = {m: ks[int(np.nanargmax(np.asarray(res[f"mean_test_{m}"], dtype=float)))]
            for m in ("score", "coherence", "diversity")}
    head = ("| K | log-likelihood / token | MC s.e. | budget bias | coherence (NPMI) | "
            "diversity | fit s | score s |")
    lines = ["# Choosing K on short posts: what each criterion picks", "",
             ("5,000 GoogleNews posts (gnews_ctm, 5.5 tokens each), Pipeline(CountVectorizer(), "
              "LDAGibbs(max_iter=200)), KFold(3, shuffle=True, random_state=0), one thread; "
              "scored by make_criteria_scorer(make_left_to_right_scorer(return_stderr=True), "
              "coherence=make_coherence_scorer(), diversity=make_diversity_scorer()), "
              f"refit=refit_best. Best by likelihood: {out['best_params']}; total "
              f"{out['seconds']:.0f} s (machine shared, load at start "
              f"{tuple(out['machine']['load_average_at_start'])})."), "", head,
             "|" + "---|" * (head.count("|") - 1)]
    for i, k in enumerate(ks):
        stderr = np.sqrt(np.sum([res[f"split{f}_test_stderr"][i] ** 2
                                 for f in range(n_folds)])) / n_folds
        lines.append(
            f"| {k} | {res['mean_test_score'][i]:.4f} | {stderr:.4f} | "
            f"{res['mean_test_bias'][i]:.4f} | {res['mean_test_coherence'][i]:.4f} | "
            f"{res['mean_test_diversity'][i]:.3f} | {res['mean_fit_time'][i]:.1f} | "
            f"{res['mean_score_time'][i]:.1f} |")
    lines += ["", "Best per criterion: " + ", ".join(f"{m}: K = {v}" for m, v in best.items()),
              "", "Warnings during the search: " + ("; ".join(out["warnings"]) or "none")]
    return "\n".join(lines) + "\n"


#: ``--report-only``: each mode's results files and the function drawing their page.
PAGES = {"folds": (["_folds"], folds_report),
         "criteria": (["_criteria"], criteria_report),
         "prodlda_scorer": (["_prodlda_scorer"], prodlda_scorer_report),
         "choosing_k": (["_choosing_k"], choosing_k_report),
         "speed": (["_speed"], speed_report),
         "target": (["_target_cpu", "_target_cuda"], target_report)}


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    if args.fold_case is not None:
        fold_case(args)
        return
    if args.report_only:  # redraw the mode's page(s) from the stored results
        suffixes, report = next((PAGES[mode] for mode in PAGES if getattr(args, mode)),
                                ([""], to_rst))
        report_only([args.output_dir / f"{args.output_name}{suffix}.json"
                     for suffix in suffixes], report)
        if args.criteria:  # the picture too
            criteria_picture(args.output_dir / f"{args.output_name}_criteria.json")
        return
    if args.folds:
        folds(args)
        return
    if args.criteria:
        criteria(args)
        return
    if args.prodlda_scorer:
        prodlda_scorer(args)
        return
    if args.choosing_k:
        choosing_k(args)
        return
    if args.speed_cases:
        speed_cases(args)
        return
    if args.target_case:
        target_case(args)
        return
    if args.speed:
        speed(args)
        return
    if args.target:
        speed_target(args)
        return
    report = {}
    path = args.output_dir / f"{args.output_name}.json"
    if args.update and path.exists():
        report = json.loads(path.read_text())
    report.setdefault("machine", {})[args.corpora] = machine()
    t0 = time.perf_counter()
    for corpus in args.corpora.split(","):
        run_corpus(corpus, args, report)
    report.setdefault("seconds", {})[args.corpora] = time.perf_counter() - t0
    write_results(args.output_name, report, to_rst, directory=args.output_dir)
    print(f"total {time.perf_counter() - t0:.0f}s -> {path} and its .rst")


if __name__ == "__main__":
    main()
