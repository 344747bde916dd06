"""Reproduce Foulds & Smyth's (UAI 2014) poster experiments with LDAGibbs models.

Corpora: NIPS (``nips_uci_giuseppedib``; the first ``--nips-docs`` test documents of a
seeded permutation) and 20 Newsgroups (``20news_avitm``, in place of ACL; a 600-document
test subset drawn with a fixed seed among the documents of at most
``--ng-max-length`` tokens). Models: :class:`sktopics.LDAGibbs`, K = 50,
beta = 0.01, ``--fit-sweeps`` sweeps, ``random_state=0``; symmetric alpha = 0.1, and an
asymmetric alpha learned by Minka's fixed point (every 20 sweeps after sweep 100), its
topics aligned to the symmetric model's. (Test sets and models: ``_model_selection_data.py``,
shared with ``bench_model_selection_speed.py``.)

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

Run ``python benchmarks/bench_model_selection.py`` on a quiet machine. Results:
``benchmarks/results/model_selection.{json,rst}``; ``--report-only`` redraws the page
from the JSON. The evaluators' speed is measured by ``bench_model_selection_speed.py``,
the scorers of a hyper-parameter search by ``bench_model_selection_scorers.py``.
"""

import argparse
import json
import os
import sys
import time

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import add_result_arguments, machine, report_only, write_results
from _model_selection_data import add_data_arguments, fit_models, load, perturb, quick

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
    add_data_arguments(p)
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
    p.add_argument("--threads", type=int, default=1)
    add_result_arguments(p, "model_selection")
    p.add_argument("--update", action="store_true",
                   help="add to the existing results file (one corpus per invocation)")
    args = p.parse_args()
    if args.quick:
        quick(args)
        args.gold_S, args.gold_S0, args.expensive, args.long_lr = 40, 10, 20, 20
        args.gold_S_asym, args.gold_S0_asym = 40, 10
        args.cheap_repeats = 2
    return args


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
                        if k not in ("model_cache", "update", "quick", "corpora")}
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



def main():
    args = parse()
    torch.set_num_threads(args.threads)
    if args.report_only:  # redraw the page from the stored results
        report_only([args.output_dir / f"{args.output_name}.json"], to_rst)
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
