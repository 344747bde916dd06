"""The scorers of a hyper-parameter search: which K each picks, and at what cost.

Three studies, one per flag, one torch thread by default:

* ``--choosing-k``: K in {5, 20, 40} (LDAGibbs on 20 Newsgroups) ranked by the AIS
  scorer at every budget, by the left-to-right scorer and by a long left-to-right run.
  Results: ``model_selection_choosing_k``.
* ``--prodlda-scorer``: ``Pipeline(CountVectorizer, ProdLDA)`` candidates scored by
  importance sampling from the encoder and by AIS (5,000 short posts). Results:
  ``model_selection_prodlda_scorer``.
* ``--criteria``: a grid search over K with the likelihood, coherence and diversity,
  and their picture. Results: ``model_selection_criteria`` (with the ``.png``).

``--choosing-k`` and ``--prodlda-scorer`` write their rows to the study's JSON as they
come; run again, they refit the models but skip the reference and the AIS or
importance-sampling runs already there, so an interrupted run goes on where it stopped.
Run on a quiet machine, e.g. ``python benchmarks/bench_model_selection_scorers.py
--criteria``. Results: ``benchmarks/results/model_selection_<study>.{json,rst}``;
``--report-only`` with a study's flag redraws its page from its JSON (and
``--criteria``'s picture).
"""

import argparse
import json
import os
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
from sktopics.datasets import load_20news_avitm
from sktopics.model_selection import ais_log_likelihood, left_to_right_log_likelihood


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    study = p.add_mutually_exclusive_group(required=True)
    study.add_argument("--choosing-k", action="store_true",
                       help="the AIS scorer's ranking of K against a long left-to-right run, "
                            "by budget (results: model_selection_choosing_k)")
    study.add_argument("--prodlda-scorer", action="store_true",
                       help="ProdLDA: importance sampling from the encoder against the AIS "
                            "scorer, ranking and cost per fold (results: "
                            "model_selection_prodlda_scorer)")
    study.add_argument("--criteria", action="store_true",
                       help="held-out likelihood, coherence and diversity against K on short "
                            "posts (results: model_selection_criteria, with the picture)")
    p.add_argument("--ck-seeds", default="0", help="--choosing-k: training seeds")
    p.add_argument("--ck-temperatures", default="25,50,100,200,400,800,1600")
    p.add_argument("--ck-gold-particles", type=int, default=400)
    p.add_argument("--ps-docs", type=int, default=5000)
    p.add_argument("--ps-folds", type=int, default=3,
                   help="--prodlda-scorer: how many of the three folds to run")
    p.add_argument("--ps-reference-ks", default="5,10,20,40",
                   help="--prodlda-scorer: the K whose reference (1,024 samples) runs on fold 0")
    p.add_argument("--ps-ais-folds", type=int, default=1,
                   help="--prodlda-scorer: folds also scored by make_ais_scorer (slow)")
    p.add_argument("--ps-ais-ks", default="5,10,20,40",
                   help="--prodlda-scorer: the K scored by make_ais_scorer")
    p.add_argument("--cr-ks", default="5,10,20,40,80,160,320")
    p.add_argument("--threads", type=int, default=1)
    add_result_arguments(p, "model_selection")  # the prefix of every study's results
    return p.parse_args()


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


#: each study (the attribute of its flag): its results file and the function drawing its page
PAGES = {"choosing_k": ("_choosing_k", choosing_k_report),
         "prodlda_scorer": ("_prodlda_scorer", prodlda_scorer_report),
         "criteria": ("_criteria", criteria_report)}


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    mode = next(s for s in PAGES if getattr(args, s))
    if args.report_only:  # redraw the study's page from the stored results
        suffix, report = PAGES[mode]
        path = args.output_dir / f"{args.output_name}{suffix}.json"
        report_only([path], report)
        if mode == "criteria":  # the picture too
            criteria_picture(path)
        return
    args.output_dir.mkdir(parents=True, exist_ok=True)  # rows are written as they come
    {"choosing_k": choosing_k, "prodlda_scorer": prodlda_scorer, "criteria": criteria}[mode](args)


if __name__ == "__main__":
    main()
