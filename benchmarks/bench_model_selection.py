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
whole 20NG test set (``--device cuda`` for the GPU goal); with ``--baseline PATH`` (a
checkout of an older commit, e.g. ``git worktree add /tmp/base <commit>``) both also time
that commit's sktopics, in fresh processes, alternating: the old/new comparison in one
run.
Results: ``benchmarks/results/model_selection.{json,md}`` and
``benchmarks/results/model_selection_speed.{json,md}``.
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
from _common import RESULTS, default_data_home, machine, write_results

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
    p.add_argument("--out", default="model_selection")
    p.add_argument("--report-only", action="store_true",
                   help="rewrite the .md/.rst files from the .json results")
    p.add_argument("--update", action="store_true",
                   help="add to the existing results file (one corpus per invocation)")
    args = p.parse_args()
    if args.quick:
        args.nips_docs, args.ng_docs, args.fit_sweeps = 5, 30, 20
        args.gold_S, args.gold_S0, args.expensive, args.long_lr = 40, 10, 20, 20
        args.gold_S_asym, args.gold_S0_asym = 40, 10
        args.cheap_repeats, args.out = 2, "model_selection_quick"
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
        _write(report, args)  # partial results survive an interruption


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
    head = "| corpus | method | docs | tokens | s | token-updates/s |"
    if args.baseline:
        head += " old s | old token-updates/s | speed-up |"
    lines = ["# model_selection speed (K = 50, real test sets)", "",
             (f"Machine: {out['machine']['cpu']}, {args.threads} torch thread(s), load at start "
              f"{out['machine']['load_average_at_start']}; median of {args.repeats} runs, each "
              "in a fresh process" + (f", alternating with the baseline commit "
                                      f"{out['commits']['old']}" if args.baseline else "")
              + f" (this commit: {out['commits']['new']}). Token-updates = K-way draws "
              "(temperatures x chains x tokens, start sweeps included; particles x tokens)."),
             "", head, "|" + "---|" * (head.count("|") - 1)]
    for i, r in enumerate(median["new"]):
        line = (f"| {r['corpus']} | {r['method']} | {r['n_docs']} | {int(r['n_tokens'])} | "
                f"{r['seconds']:.2f} | {r['token_updates_per_s'] / 1e6:.2f} M |")
        if args.baseline:
            o = median["old"][i]
            line += (f" {o['seconds']:.2f} | {o['token_updates_per_s'] / 1e6:.2f} M | "
                     f"{o['seconds'] / r['seconds']:.1f}x |")
        lines.append(line)
    write_results(f"{args.out}_speed", out, "\n".join(lines) + "\n")


# ------------------------------------------------------------------------- report


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        if np.isnan(v):
            return "nan"
        return f"{v:.2e}" if (abs(v) < 1e-3 and v != 0) else f"{v:.4g}"
    return str(v)


def to_markdown(report, args):
    lines = ["# model_selection: Foulds & Smyth poster reproduction", "",
             ("LDAGibbs models (K = 50, beta = 0.01); estimators at equal cost per budget "
              "(see the script's docstring). Measured on the shared 2-core CPU, one torch "
              "thread (quality numbers are load-independent; seconds are not)."), "",
             "Settings per corpus: the `settings` entry of its info block.", ""]
    for corpus in ("nips", "20ng"):
        if corpus not in report:
            continue
        c = report[corpus]
        poster = "nips" if corpus == "nips" else "acl"
        lines += [f"## {corpus}", "", "```", json.dumps(c["info"]), "```", ""]
        for exp, e in c["experiments"].items():
            g = e["gold"]
            lines += [f"### {exp}", "",
                      f"Gold (two independent bidirectional ratio-AIS runs): `{json.dumps(g)}`", ""]
            for budget, rows in e["budgets"].items():
                cols = ["pct_correct", "sign_agreement_with_gold", "sign_agreement_settled_docs",
                        "corr_with_gold", "corr_with_long_lr", "ratio_variance",
                        "ratio_variance_2runs", "corpus_ratio", "token_updates", "seconds"]
                st = rows["_settings"]
                lines += [f"**{budget}** (B = {st['budget']}, {st['repeats']} repeats)", "",
                          "| metric | " + " | ".join(METHODS) + " |",
                          "|---|" + "---|" * len(METHODS)]
                for col in cols:
                    if exp == "perturbed" and col == "corr_with_long_lr":
                        continue
                    lines.append(f"| {col} | " + " | ".join(_fmt(rows[m].get(col)) for m in METHODS) + " |")
                key = f"{poster}_{budget}"
                for metric in ("pct_correct", "corr_with_long_lr", "ratio_variance", "corpus_ratio"):
                    if exp == "perturbed" and metric == "corr_with_long_lr":
                        continue
                    if exp != "perturbed" and metric == "pct_correct":
                        continue
                    lines.append(f"| poster {poster.upper()} {metric} | "
                                 + " | ".join(_fmt(v) for v in POSTER[metric][key]) + " |")
                lines.append("")
    lines += ["## Tried and not adopted", "",
              ("Rao-Blackwellised (theta-space) weights on the convex path, measured at equal "
               "token-updates against the rows above: `model_selection_rb_theta.md`."), ""]
    return "\n".join(lines) + "\n"


LABELS = {"lr": "left-to-right (SMC)", "ais": "standard AIS", "geometric_fwd": "ratio geometric",
          "geometric_rev": "ratio geometric (rev.)", "convex_fwd": "ratio convex",
          "convex_rev": "ratio convex (rev.)", "geometric_both": "ratio geometric (both, mean)",
          "convex_both": "ratio convex (both, mean)"}


def to_rst(report):
    """Compact tables for the user guide: ours beside the poster's, per corpus."""
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


def _write(report, args):
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{args.out}.json").write_text(json.dumps(report, indent=1, default=float) + "\n")
    (RESULTS / f"{args.out}.md").write_text(to_markdown(report, args))
    (RESULTS / f"{args.out}.rst").write_text(to_rst(report))


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
    row = rows["new"]
    out = {"machine": machine(), "row": row, "rows": rows,
           "commits": {label: _git_commit(tree) for label, tree in trees}}
    head = ("| code | documents | tokens | temperatures | kernel | seconds | token-updates/s | "
            "log-likelihood per token |")
    lines = [f"# AIS over the whole 20NG test set: {args.target_temperatures} temperatures", "",
             (f"Goals: <= 130 s on one CPU thread, <= 10 s on one H100. Device: "
              f"{row['device_name']} ({row['device']}, {row['threads']} CPU thread(s)); load at "
              f"start {out['machine']['load_average_at_start']}. K = 50 LDAGibbs "
              f"({args.target_fit_sweeps} sweeps), one chain, kernel='auto', sigmoid "
              "schedule; each code in a fresh process."), "", head,
             "|" + "---|" * (head.count("|") - 1)]
    for label, r in rows.items():
        lines.append(f"| {label} ({out['commits'][label]}) | {r['n_docs']} | {r['n_tokens']} | "
                     f"{r['n_temperatures']} | {r['kernel']} | {r['seconds']:.1f} | "
                     f"{r['token_updates_per_s'] / 1e6:.2f} M | {r['log_likelihood_per_token']:.4f} |")
    write_results(f"{args.out}_target_{device.type}", out, "\n".join(lines) + "\n")


def main():
    args = parse()
    torch.set_num_threads(args.threads)
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
    if args.report_only:
        _write(json.loads((RESULTS / f"{args.out}.json").read_text()), args)
        return
    report = {}
    if args.update and (RESULTS / f"{args.out}.json").exists():
        report = json.loads((RESULTS / f"{args.out}.json").read_text())
    report.setdefault("machine", {})[args.corpora] = machine()
    t0 = time.perf_counter()
    for corpus in args.corpora.split(","):
        run_corpus(corpus, args, report)
    report.setdefault("seconds", {})[args.corpora] = time.perf_counter() - t0
    _write(report, args)
    print(f"total {time.perf_counter() - t0:.0f}s -> {RESULTS / args.out}.json/.md")


if __name__ == "__main__":
    main()
