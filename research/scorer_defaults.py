"""Which held-out scorer picks the right number of topics, and at what cost.

A new user's grid search: 1,500 raw 20 Newsgroups training posts,
``Pipeline(CountVectorizer(stop_words="english", min_df=2), LDAGibbs(max_iter=100))``,
3-fold cross-validation (``KFold(3)``, as ``GridSearchCV(cv=3)``), K in {5, 10, 20, 40}.
Every (fold, K) model is fitted once (timed) and scored by every scorer (timed), with
``--seeds`` seeds for the scorers that take one; the "gold" ranking is left-to-right
with 1,000 particles (consistent: its bias vanishes with the particles).

Reports, per scorer: the K it picks (per seed), how often that is the gold's pick,
the spread of its fold-mean differences, and its scoring time per fold next to the
fitting time. Writes ``research/results/scorer_defaults.{json,md}``.

Run at the commit named in the output, on one thread (``torch.set_num_threads(1)``).
"""

import argparse
import json
import os
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import numpy as np
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import KFold
from sklearn.pipeline import make_pipeline

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import markdown_to_rst  # noqa: E402

from sktopics import LDAGibbs
from sktopics.model_selection import (
    make_ais_scorer,
    make_left_to_right_scorer,
)


def load_posts(n_docs, data_home):
    path = Path(data_home) / "20news_bydate" / "20news-bydate.tar.gz"
    with tarfile.open(path) as tf:
        texts = [tf.extractfile(m).read().decode("latin-1") for m in tf.getmembers()
                 if m.isfile() and "-train/" in m.name]
    rows = np.random.default_rng(0).permutation(len(texts))[:n_docs]
    return [texts[i] for i in rows]


def scorers(seed):
    return {
        "score (default: left-to-right R=32)": lambda est, X: est.score(X),
        "AIS S=30 M=4": make_ais_scorer(n_temperatures=30, n_chains=4, random_state=seed),
        "AIS S=100 M=4": make_ais_scorer(n_temperatures=100, n_chains=4, random_state=seed),
        "AIS S=300 M=4": make_ais_scorer(n_temperatures=300, n_chains=4, random_state=seed),
        "left-to-right R=20": make_left_to_right_scorer(n_particles=20, random_state=seed),
        "left-to-right R=100": make_left_to_right_scorer(n_particles=100, random_state=seed),
    }


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--docs", type=int, default=1500)
    p.add_argument("--seeds", type=int, default=3)
    p.add_argument("--gold-particles", type=int, default=1000)
    p.add_argument("--data-home", default=os.environ.get("SKTOPICS_DATA", "../shared/data"))
    args = p.parse_args()
    torch.set_num_threads(1)
    texts = np.array(load_posts(args.docs, args.data_home), dtype=object)
    grid = [5, 10, 20, 40]
    rows = []
    gold_scorer = make_left_to_right_scorer(n_particles=args.gold_particles, n_filters=1,
                                            random_state=12345)
    for fold, (train, test) in enumerate(KFold(3).split(texts)):
        for k in grid:
            pipe = make_pipeline(CountVectorizer(stop_words="english", min_df=2),
                                 LDAGibbs(k, max_iter=100, random_state=0))
            tic = time.perf_counter()
            pipe.fit(texts[train])
            fit_s = time.perf_counter() - tic
            row = {"fold": fold, "K": k, "fit_s": fit_s, "scores": {}, "seconds": {}}
            tic = time.perf_counter()
            row["gold"] = gold_scorer(pipe, texts[test])
            row["gold_s"] = time.perf_counter() - tic
            for seed in range(args.seeds):
                for name, scorer in scorers(seed).items():
                    if name.startswith("score") and seed:
                        continue  # deterministic
                    tic = time.perf_counter()
                    value = scorer(pipe, texts[test])
                    row["scores"].setdefault(name, []).append(float(value))
                    row["seconds"].setdefault(name, []).append(time.perf_counter() - tic)
            rows.append(row)
            print(json.dumps({k_: v for k_, v in row.items() if k_ != "seconds"}), flush=True)
    report = summarise(rows, grid)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    out = Path(__file__).parent / "results"
    out.mkdir(exist_ok=True)
    (out / "scorer_defaults.json").write_text(json.dumps({"commit": commit, "rows": rows,
                                                          "summary": report}, indent=1))
    lines = [f"# Scorer defaults on a new user's grid search (commit {commit})", "",
             f"{args.docs} raw 20NG training posts, KFold(3), K in {grid}, LDAGibbs "
             "max_iter=100, one thread. Gold: left-to-right with "
             f"{args.gold_particles} particles. Mean fit time per (fold, K): "
             f"{np.mean([r['fit_s'] for r in rows]):.2f} s.", "",
             "| scorer | K picked (per seed) | agrees with gold | scoring s per (fold, K) | "
             "fold-mean per-token score by K |", "|---|---|---|---|---|"]
    for name, s in report["scorers"].items():
        lines.append(f"| {name} | {s['picked']} | {s['agree']} | {s['seconds']:.2f} | "
                     f"{', '.join(f'{v:.4f}' for v in s['means'])} |")
    lines.append(f"| gold | {report['gold_pick']} | - | {report['gold_seconds']:.2f} | "
                 f"{', '.join(f'{v:.4f}' for v in report['gold_means'])} |")
    (out / "scorer_defaults.md").write_text("\n".join(lines) + "\n")
    (out / "scorer_defaults.rst").write_text(markdown_to_rst("\n".join(lines) + "\n"))
    print("\n".join(lines))


def summarise(rows, grid):
    gold_means = [np.mean([r["gold"] for r in rows if r["K"] == k]) for k in grid]
    gold_pick = grid[int(np.argmax(gold_means))]
    out = {"gold_pick": gold_pick, "gold_means": gold_means,
           "gold_seconds": float(np.mean([r["gold_s"] for r in rows])), "scorers": {}}
    for name in rows[0]["scores"]:
        n_seeds = len(rows[0]["scores"][name])
        means = np.array([[np.mean([r["scores"][name][s] for r in rows if r["K"] == k])
                           for k in grid] for s in range(n_seeds)])
        picked = [grid[int(np.argmax(m))] for m in means]
        out["scorers"][name] = {
            "picked": picked, "agree": f"{sum(p == gold_pick for p in picked)}/{n_seeds}",
            "means": means.mean(0).tolist(),
            "seconds": float(np.mean([np.mean(r["seconds"][name]) for r in rows]))}
    return out


if __name__ == "__main__":
    main()
