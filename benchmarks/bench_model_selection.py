"""Reproduce Foulds & Smyth's (UAI 2014) poster experiments at a reduced scale.

Corpora: NIPS (``nips_uci_giuseppedib``) and 20 Newsgroups (``20news_avitm``, in place
of ACL). Models: scikit-learn's variational LDA (the LDAGibbs estimator was not yet
available) with K topics; phi = normalised ``components_``.

* Experiment 1 (learned vs perturbed topics): A = (phi, alpha_sym), B = (phi', alpha_sym)
  with phi' = rownormalise(phi * exp(sigma * eps)). Metric: % of documents where the
  estimated log-ratio favours A; agreement with the gold sign.
* Experiment 2 (asymmetric vs symmetric alpha): A = (phi, alpha_asym), B = (phi, alpha_sym).
  Metric: correlation with a long left-to-right run and with the gold.
* For every method and both budgets: variance over repeated runs of the per-document
  perplexity ratio r_d = exp(-delta_d / N_d) (mean over documents), the corpus-level
  perplexity ratio, token-updates and wall clock.

Gold: bidirectional ratio-AIS with many temperatures (the mean of forward and reverse,
with the forward-reverse bracket reported). Everything runs side by side in one
process, on one thread (2 shared cores), so the timings are comparable.

Run ``python benchmarks/bench_model_selection.py [--quick]``; results go to
``benchmarks/results/model_selection.{json,md}``.
"""

import argparse
import json
import os
import time

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.decomposition import LatentDirichletAllocation

from sktopics.datasets import load_20news_avitm, load_nips
from sktopics.model_selection import (
    ais_log_likelihood,
    iteration_ais,
    left_to_right_log_likelihood,
    ratio_ais,
)

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.environ.get("SKTOPICS_DATA", "/work/shared/data")

POSTER = {  # published % correct (experiment 1) and variance of the perplexity ratio
    "nips_cheap": {"lr": 63.8, "ais": 48.8, "geometric_fwd": 83.8, "geometric_rev": 89.2,
                   "convex_fwd": 84.6, "convex_rev": 87.7},
    "nips_expensive": {"lr": 84.6, "ais": 62.3, "geometric_fwd": 86.9, "geometric_rev": 87.7,
                       "convex_fwd": 87.7, "convex_rev": 87.7},
}


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-topics", type=int, default=20)
    p.add_argument("--lda-iter", type=int, default=8)
    p.add_argument("--nips-docs", type=int, default=12)
    p.add_argument("--ng-docs", type=int, default=60)
    p.add_argument("--ng-train-docs", type=int, default=2000)
    p.add_argument("--sigma", type=float, default=None,
                   help="perturbation; default: picked in {0.05,0.1,0.2,0.3,0.5} by a pilot "
                        "so that ~89 %% of documents prefer the learned topics")
    p.add_argument("--cheap", type=int, default=10, help="temperatures (AIS); LR particles")
    p.add_argument("--expensive", type=int, default=40)
    p.add_argument("--gold", type=int, default=120)
    p.add_argument("--gold-chains", type=int, default=2)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--corpora", default="nips,20ng")
    p.add_argument("--iter-sweeps", type=int, default=100, help="0 skips iteration-AIS")
    p.add_argument("--update", action="store_true",
                   help="start from the existing JSON results (e.g. with --corpora none)")
    p.add_argument("--quick", action="store_true", help="tiny settings (smoke test)")
    p.add_argument("--out", default=os.path.join(HERE, "results", "model_selection"))
    args = p.parse_args()
    if args.quick:
        args.nips_docs, args.ng_docs, args.gold, args.expensive, args.repeats = 4, 15, 40, 20, 2
        args.lda_iter, args.ng_train_docs, args.iter_sweeps = 3, 800, 20
    return args


def fit_lda(X, n_topics, n_iter):
    lda = LatentDirichletAllocation(n_components=n_topics, doc_topic_prior=0.1,
                                    topic_word_prior=0.01, learning_method="batch",
                                    max_iter=n_iter, random_state=0)
    theta = lda.fit_transform(X)
    phi = lda.components_ / lda.components_.sum(1, keepdims=True)
    # asymmetric alpha: moment-matched Dirichlet on the training doc-topic means
    m, v = theta.mean(0), theta.var(0)
    s = np.median(m * (1 - m) / np.maximum(v, 1e-12) - 1)
    alpha_asym = np.clip(m * s, 1e-3, None)
    alpha_asym *= 0.1 * n_topics / alpha_asym.sum()  # same total mass as alpha_sym
    return phi, alpha_asym


def perturb(phi, sigma, seed=1):
    eps = np.random.default_rng(seed).standard_normal(phi.shape)
    out = phi * np.exp(sigma * eps)
    return out / out.sum(1, keepdims=True)


def estimators(model_a, model_b, X, budget, seed, exp_alpha_differs):
    """Per-document log-ratio estimates of every method, with cost and time."""
    out = {}
    kw_common = dict(random_state=seed, device="cpu")

    def timed(name, fn):
        t = time.perf_counter()
        delta, cost = fn()
        out[name] = dict(delta=np.asarray(delta), cost=int(cost), seconds=time.perf_counter() - t)

    def lr():
        a = left_to_right_log_likelihood(model_a, X, n_particles=budget, n_filters=1, **kw_common)
        b = left_to_right_log_likelihood(model_b, X, n_particles=budget, n_filters=1, **kw_common)
        return a.per_document - b.per_document, a.n_token_updates + b.n_token_updates

    def ais():
        kw = dict(n_temperatures=budget, n_chains=1, schedule="linear", kernel="blocked", **kw_common)
        a = ais_log_likelihood(model_a, X, **kw)
        b = ais_log_likelihood(model_b, X, **kw)
        return a.per_document - b.per_document, a.n_token_updates + b.n_token_updates

    timed("lr", lr)
    timed("ais", ais)
    for path in ("geometric", "convex"):
        kernel = "collapsed" if (path == "geometric" and exp_alpha_differs) else "blocked"
        for direction, short in (("forward", "fwd"), ("reverse", "rev")):
            def run(path=path, direction=direction, kernel=kernel):
                r = ratio_ais(model_a, model_b, X, path=path, direction=direction,
                              n_temperatures=budget, n_chains=1, schedule="linear", start="ais",
                              kernel=kernel, align_topics=False, **kw_common)
                return r.per_document, r.n_token_updates
            timed(f"{path}_{short}", run)
    return out


def summarise(runs, n_tokens, gold, long_lr=None):
    """Metrics per method from repeated runs {method: [run, ...]}."""
    res = {}
    n = np.maximum(n_tokens, 1)
    for method, reps in runs.items():
        deltas = np.stack([r["delta"] for r in reps])  # (repeats, docs)
        ratios = np.exp(-deltas / n)
        first = deltas[0]
        entry = dict(
            pct_correct=float(100 * np.mean(first > 0)),
            sign_agreement_with_gold=float(100 * np.mean(np.sign(first) == np.sign(gold))),
            corr_with_gold=float(np.corrcoef(first, gold)[0, 1]) if np.std(first) > 0 else float("nan"),
            ratio_variance=float(np.mean(np.var(ratios, axis=0, ddof=1))) if len(reps) > 1 else float("nan"),
            corpus_ratio=float(np.mean(np.exp(-deltas.sum(1) / n.sum()))),
            token_updates=int(np.mean([r["cost"] for r in reps])),
            seconds=float(np.mean([r["seconds"] for r in reps])),
        )
        if long_lr is not None:
            entry["corr_with_long_lr"] = float(np.corrcoef(first, long_lr)[0, 1])
        res[method] = entry
    return res


def run_corpus(name, X_train, X_test, args, report):
    t0 = time.perf_counter()
    phi, alpha_asym = fit_lda(X_train, args.n_topics, args.lda_iter)
    fit_s = time.perf_counter() - t0
    alpha_sym = np.full(args.n_topics, 0.1)
    n_tokens = np.asarray(X_test.sum(1)).ravel()
    info = dict(n_test_docs=X_test.shape[0], n_test_tokens=int(n_tokens.sum()),
                mean_doc_length=float(n_tokens.mean()), lda_fit_seconds=fit_s)
    sigma, pilot = args.sigma, {}
    if sigma is None:
        for cand in (0.05, 0.1, 0.2, 0.3, 0.5):
            r = ratio_ais((phi, alpha_sym), (perturb(phi, cand), alpha_sym), X_test,
                          direction="both", n_temperatures=2 * args.cheap, n_chains=1,
                          schedule="linear", kernel="blocked", align_topics=False, random_state=500)
            pilot[cand] = float(100 * np.mean(r.per_document > 0))
        sigma = min(pilot, key=lambda c: abs(pilot[c] - 89.0))
    info.update(sigma=sigma, sigma_pilot_pct_A_better=pilot)
    experiments = {
        "perturbed": ((phi, alpha_sym), (perturb(phi, sigma), alpha_sym), False, "geometric"),
        "asymmetric_alpha": ((phi, alpha_asym), (phi, alpha_sym), True, "hybrid"),
    }
    corpus_out = dict(info=info, experiments={})
    for exp, (A, B, alpha_differs, gold_path) in experiments.items():
        t = time.perf_counter()
        g = ratio_ais(A, B, X_test, path=gold_path, direction="both", n_temperatures=args.gold,
                      n_chains=args.gold_chains, n_start_temperatures=args.gold,
                      schedule="linear", kernel="blocked", align_topics=False, random_state=1000)
        gold_s = time.perf_counter() - t
        gold = g.per_document
        gold_info = dict(path=gold_path, seconds=gold_s, token_updates=g.n_token_updates,
                         bracket=g.bracket(), corpus_ratio=g.corpus_perplexity_ratio,
                         max_abs_gap=float(np.max(np.abs(g.per_document_gap))),
                         pct_A_better=float(100 * np.mean(gold > 0)))
        long_lr = None
        if exp == "asymmetric_alpha":
            t = time.perf_counter()
            la = left_to_right_log_likelihood(A, X_test, n_particles=args.gold, n_filters=1, random_state=999)
            lb = left_to_right_log_likelihood(B, X_test, n_particles=args.gold, n_filters=1, random_state=999)
            long_lr = la.per_document - lb.per_document
            gold_info["long_lr_seconds"] = time.perf_counter() - t
            gold_info["long_lr_corr_with_gold"] = float(np.corrcoef(long_lr, gold)[0, 1])
        budgets = {}
        for budget_name, budget, reps in (("cheap", args.cheap, args.repeats),
                                          ("expensive", args.expensive, max(2, args.repeats - 1))):
            runs = {}
            for r in range(reps):
                for method, value in estimators(A, B, X_test, budget, r, alpha_differs).items():
                    runs.setdefault(method, []).append(value)
            budgets[budget_name] = summarise(runs, n_tokens, gold, long_lr)
            budgets[budget_name]["_repeats"] = reps
            budgets[budget_name]["_budget"] = budget
            print(f"[{name}/{exp}/{budget_name}] done at {time.perf_counter() - t0:.0f}s", flush=True)
        corpus_out["experiments"][exp] = dict(gold=gold_info, budgets=budgets)
    report[name] = corpus_out


def iteration_experiment(args, report):
    """Iteration-AIS on an LDAGibbs run (20NG) against equal-cost baselines."""
    from sktopics import LDAGibbs

    train = load_20news_avitm(DATA, subset="train").data.astype(np.float64)
    test = load_20news_avitm(DATA, subset="test").data.astype(np.float64)
    rng = np.random.default_rng(0)
    train = train[np.sort(rng.choice(train.shape[0], args.ng_train_docs, replace=False))]
    test = test[np.sort(np.random.default_rng(1).choice(test.shape[0], args.ng_docs, replace=False))]
    t = time.perf_counter()
    est = LDAGibbs(args.n_topics, doc_topic_prior=0.1, topic_word_prior=0.01, max_iter=args.iter_sweeps,
                   snapshot_interval=args.iter_sweeps // 10, optimize_interval=None, device="cpu",
                   random_state=0).fit(train)
    fit_s = time.perf_counter() - t
    snaps = [(phi, alpha) for _, phi, alpha in est.snapshots_]
    sweeps = [s for s, _, _ in est.snapshots_]
    n_tok = float(test.sum())
    s0, seg, m = 100, 10, 4
    t = time.perf_counter()
    it = iteration_ais(snaps, test, n_start_temperatures=s0, n_segment_temperatures=seg,
                       n_chains=m, random_state=0)
    it_s = time.perf_counter() - t
    total_temps = s0 + (len(snaps) - 1) * (seg + 1)
    per_snap = max(total_temps // len(snaps), 1)  # equal total cost
    rows = []
    base_s = lr_s = gold_s = 0.0
    for k, (snap, res) in enumerate(zip(snaps, it)):
        t = time.perf_counter()
        base = ais_log_likelihood(snap, test, n_temperatures=per_snap, n_chains=m, random_state=0)
        base_s += time.perf_counter() - t
        t = time.perf_counter()
        smc = left_to_right_log_likelihood(snap, test, n_particles=per_snap * m, n_filters=1,
                                           random_state=0)
        lr_s += time.perf_counter() - t
        t = time.perf_counter()
        gold = left_to_right_log_likelihood(snap, test, n_particles=args.gold * 4, n_filters=2,
                                            random_state=7)
        gold_s += time.perf_counter() - t
        rows.append(dict(sweep=int(sweeps[k]), gold_per_token=gold.per_token,
                         iteration_ais_error=(res.total - gold.total) / n_tok,
                         ais_error=(base.total - gold.total) / n_tok,
                         smc_error=(smc.total - gold.total) / n_tok))
    report["iteration_ais_20ng"] = dict(
        fit_seconds=fit_s, n_snapshots=len(snaps), iteration_ais=dict(S0=s0, S_seg=seg, M=m, seconds=it_s),
        baseline_ais=dict(S=per_snap, M=m, seconds=base_s), baseline_smc=dict(R=per_snap * m, seconds=lr_s),
        gold=dict(method="SMC left-to-right", R=args.gold * 4, filters=2, seconds=gold_s),
        errors_nats_per_token=rows)
    print(f"[iteration-ais] done, fit {fit_s:.0f}s", flush=True)


def speed(report):
    """Token-temperature updates per second, both kernels, K = 50."""
    rng = np.random.default_rng(0)
    K, V = 50, 2000
    phi = rng.dirichlet(np.full(V, 0.05), K)
    out = {}
    for D, N, M in ((600, 85, 1), (600, 85, 10), (150, 1250, 1)):
        X = sp.csr_matrix(np.stack([rng.multinomial(N, phi[rng.integers(K)]) for _ in range(D)]))
        for kernel in ("collapsed", "blocked"):
            t = time.perf_counter()
            r = ais_log_likelihood((phi, np.full(K, 0.1)), X, n_temperatures=5, n_chains=M,
                                   kernel=kernel, random_state=0)
            s = time.perf_counter() - t
            out[f"D={D},N={N},M={M},{kernel}"] = dict(
                token_updates_per_s=r.n_token_updates / s, documents_per_s=D / s * 5 / 5, seconds=s)
    report["speed_ais_K50_S5"] = out


def to_markdown(report, args):
    lines = ["# model_selection: poster reproduction (reduced scale)", "",
             f"Settings: {json.dumps({k: v for k, v in vars(args).items() if k != 'out'})}", "",
             "Measured on the shared 2-core CPU, one torch thread. Models: sklearn VB LDA "
             f"(K={args.n_topics}); gold = bidirectional ratio-AIS (S={args.gold}, "
             f"M={args.gold_chains}).", ""]
    methods = ["lr", "ais", "geometric_fwd", "geometric_rev", "convex_fwd", "convex_rev"]
    for corpus, c in report.items():
        if not isinstance(c, dict) or "experiments" not in c:
            continue
        lines += [f"## {corpus}", "", f"{c['info']}", ""]
        for exp, e in c["experiments"].items():
            g = e["gold"]
            lines += [f"### {exp}", "",
                      f"gold: path={g['path']}, corpus ratio={g['corpus_ratio']:.5f}, "
                      f"bracket={g['bracket']}, A better on {g['pct_A_better']:.1f} % of documents, "
                      f"max |fwd-rev| gap={g['max_abs_gap']:.3f}, {g['seconds']:.1f} s", ""]
            for budget, rows in e["budgets"].items():
                cols = ["pct_correct", "sign_agreement_with_gold", "corr_with_gold",
                        "corr_with_long_lr", "ratio_variance", "corpus_ratio", "token_updates",
                        "seconds"]
                lines += [f"**{budget}** (budget {rows['_budget']}, {rows['_repeats']} repeats)", "",
                          "| metric | " + " | ".join(methods) + " |",
                          "|---|" + "---|" * len(methods)]
                for col in cols:
                    vals = []
                    for m in methods:
                        v = rows[m].get(col)
                        vals.append("" if v is None else (f"{v:.3g}" if isinstance(v, float) else str(v)))
                    lines.append(f"| {col} | " + " | ".join(vals) + " |")
                lines.append("")
    if "iteration_ais_20ng" in report:
        it = report["iteration_ais_20ng"]
        lines += ["## Iteration-AIS (20NG, LDAGibbs snapshots)", "",
                  f"iteration-AIS {it['iteration_ais']}, equal-cost AIS per snapshot "
                  f"{it['baseline_ais']}, equal-cost SMC {it['baseline_smc']}, gold {it['gold']}", "",
                  "| sweep | gold nats/token | iteration-AIS error | AIS error | SMC error |",
                  "|---|---|---|---|---|"]
        for r in it["errors_nats_per_token"]:
            lines.append(f"| {r['sweep']} | {r['gold_per_token']:.4f} | {r['iteration_ais_error']:+.4f} | "
                         f"{r['ais_error']:+.4f} | {r['smc_error']:+.4f} |")
        lines.append("")
    if "speed_ais_K50_S5" in report:
        lines += ["## AIS speed (K = 50, S = 5)", "", "| setting | token-updates/s | s |", "|---|---|---|"]
        for k, v in report["speed_ais_K50_S5"].items():
            lines.append(f"| {k} | {v['token_updates_per_s'] / 1e6:.2f} M | {v['seconds']:.2f} |")
    lines += ["", "Poster (NIPS, % correct, experiment 1): " + json.dumps(POSTER)]
    return "\n".join(lines) + "\n"


def main():
    args = parse()
    torch.set_num_threads(1)  # a script: 2 shared cores, intra-op threads spin
    report = {}
    if args.update and os.path.exists(args.out + ".json"):
        with open(args.out + ".json") as f:
            report = json.load(f)
    t0 = time.perf_counter()
    corpora = args.corpora.split(",")
    if "nips" in corpora:
        train = load_nips(DATA, subset="train").data.astype(np.float64)
        test = load_nips(DATA, subset="test").data.astype(np.float64)
        rows = np.sort(np.random.default_rng(0).choice(test.shape[0], args.nips_docs, replace=False))
        run_corpus("nips", train, test[rows], args, report)
    if "20ng" in corpora:
        train = load_20news_avitm(DATA, subset="train").data.astype(np.float64)
        test = load_20news_avitm(DATA, subset="test").data.astype(np.float64)
        rng = np.random.default_rng(0)
        train = train[np.sort(rng.choice(train.shape[0], min(args.ng_train_docs, train.shape[0]), replace=False))]
        rows = np.sort(np.random.default_rng(0).choice(test.shape[0], args.ng_docs, replace=False))
        run_corpus("20ng", train, test[rows], args, report)
    if args.iter_sweeps > 0:
        iteration_experiment(args, report)
    speed(report)
    report["total_seconds" if not args.update else "update_seconds"] = time.perf_counter() - t0
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out + ".json", "w") as f:
        json.dump(report, f, indent=1, default=float)
    with open(args.out + ".md", "w") as f:
        f.write(to_markdown(report, args))
    print(f"total {time.perf_counter() - t0:.0f}s -> {args.out}.json/.md")


if __name__ == "__main__":
    main()
