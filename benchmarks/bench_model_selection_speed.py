"""Speed of the held-out likelihood evaluators, against an older commit in the same run.

Three studies, one per flag, K = 50 LDAGibbs models, one torch thread by default:

* ``--speed``: throughput (token-updates per second) of each evaluator at small
  budgets on the test sets of Foulds & Smyth's reproduction (``bench_model_selection.py``;
  the documents and the cached models of ``_model_selection_data.py``), the median of
  ``--repeats`` runs. Results: ``model_selection_speed``.
* ``--target``: AIS with ``--target-temperatures`` (1,000) over the whole 20 Newsgroups
  test set on ``--device`` (``cuda`` for the GPU goal). Results:
  ``model_selection_target_<device>``.
* ``--folds``: every evaluator at a grid search's budgets on 600-document folds of the
  20 Newsgroups test set (``--fold-seeds``). Results: ``model_selection_folds``.

With ``--baseline PATH`` (a checkout of an older commit, e.g. ``git worktree add
/tmp/base <commit>``) each study also times that commit's sktopics, every measurement
in a fresh process, the two trees alternating: the old/new comparison in one run.

Run on a quiet machine, e.g. ``python benchmarks/bench_model_selection_speed.py --speed
--baseline PATH``. Results: ``benchmarks/results/model_selection_<study>.{json,rst}``;
``--report-only`` with a study's flag redraws its page from its JSON.
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
from _model_selection_data import add_data_arguments, fit_models, load, perturb, quick

from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm
from sktopics.model_selection import ais_log_likelihood, left_to_right_log_likelihood, ratio_ais

#: the studies, by the attribute of their flag
STUDIES = ("speed", "target", "folds")


def parse():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    study = p.add_mutually_exclusive_group()
    study.add_argument("--speed", action="store_true",
                       help="throughput of each evaluator on the reproduction's test sets "
                            "(results: model_selection_speed)")
    study.add_argument("--target", action="store_true",
                       help="the speed goal: AIS with --target-temperatures over the whole "
                            "20NG test set on --device (goal: <= 10 s with 1,000 on one H100; "
                            "results: model_selection_target_<device>)")
    study.add_argument("--folds", action="store_true",
                       help="throughput of every evaluator on 600-document folds of the 20NG "
                            "test set (results: model_selection_folds)")
    p.add_argument("--baseline", default=None,
                   help="a checkout of an older commit: also time its sktopics, in fresh "
                        "processes alternating with this one")
    p.add_argument("--repeats", type=int, default=3, help="--speed: runs per tree")
    p.add_argument("--target-temperatures", type=int, default=1000)
    p.add_argument("--target-fit-sweeps", type=int, default=100)
    p.add_argument("--device", default="cpu", help="device of the --target run")
    p.add_argument("--fold-seeds", default="0,1,2,3,4")
    p.add_argument("--threads", type=int, default=1)
    add_data_arguments(p)
    # the timed runs, each in a fresh process with one tree's sktopics
    p.add_argument("--speed-cases", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--target-case", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--fold-case", default=None, help=argparse.SUPPRESS)
    add_result_arguments(p, "model_selection")  # the prefix of every study's results
    args = p.parse_args()
    child = args.speed_cases or args.target_case or args.fold_case is not None
    if not child and not any(getattr(args, s) for s in STUDIES):
        p.error("choose a study: --speed, --target or --folds")
    if args.quick:
        quick(args)
    return args


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


# ------------------------------------------------------------------------- folds


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


# ------------------------------------------------------------------------- target


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


#: ``--report-only``: each study's results files and the function drawing their page.
PAGES = {"speed": (["_speed"], speed_report),
         "target": (["_target_cpu", "_target_cuda"], target_report),
         "folds": (["_folds"], folds_report)}


def main():
    args = parse()
    torch.set_num_threads(args.threads)
    if args.fold_case is not None:
        fold_case(args)
        return
    if args.speed_cases:
        speed_cases(args)
        return
    if args.target_case:
        target_case(args)
        return
    mode = next(s for s in STUDIES if getattr(args, s))
    if args.report_only:  # redraw the study's page(s) from the stored results
        suffixes, report = PAGES[mode]
        report_only([args.output_dir / f"{args.output_name}{suffix}.json"
                     for suffix in suffixes], report)
        return
    {"speed": speed, "target": speed_target, "folds": folds}[mode](args)


if __name__ == "__main__":
    main()
