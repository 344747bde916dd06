"""ProdLDA and AVITM against the plain torch loop a user would write, in one run.

Speed: seconds per epoch on AVITM's 20 Newsgroups (K = 50, batch 200), the plain
loop of ``_plain_vae.py`` and the estimator with the same settings (the original
ProdLDA code's: dropout 0.6, learning rate 2e-3, 200 documents drawn with
replacement) alternating round by round, the first epoch of each fit left out
(warm-up). Quality: one full fit per seed of each, NPMI
(test set as reference, boolean documents, top 10 words, epsilon convention) and
topic diversity (top 10), so that the speed is compared at equal results.

Usage::

    python benchmarks/bench_neural_speed.py                    # about 10 min on 2 cores
    python benchmarks/bench_neural_speed.py --rounds 2 --seeds 0 --quality-epochs 10

Writes ``benchmarks/results/neural_speed_vs_plain.json`` (every round and fit), and
from it two pages: ``neural_speed_vs_plain.rst`` (speed and memory) and
``neural_speed_vs_plain_quality.rst`` (quality); ``--report-only`` redraws them.
"""

import argparse
import json
import multiprocessing
import time
import warnings

import numpy as np
import torch
from _common import (
    MachineLoad,
    PeakRSS,
    add_result_arguments,
    default_data_home,
    load_sentence,
    machine,
    markdown_table,
    write_report,
    write_results,
)
from _plain_vae import topic_word, train_plain

from sktopics import AVITM, ProdLDA
from sktopics.datasets import load_20news_avitm
from sktopics.metrics import npmi_coherence, topic_diversity

ESTIMATORS = {"ProdLDA": ProdLDA, "AVITM": AVITM}

#: The plain loop's settings (those of the original ProdLDA code, ``_plain_vae.py``),
#: so that both codes train the same model the same way.
SAME_AS_PLAIN = {"dropout": 0.6, "learning_rate": 2e-3, "batch_size": 200,
                 "batch_sampling": "with_replacement"}


def fit_ours(name, X, n_topics, epochs, seed, threads):
    params = dict(SAME_AS_PLAIN, **({"shared_noise": False} if name == "AVITM" else {}))
    model = ESTIMATORS[name](n_topics, max_iter=epochs, random_state=seed, device="cpu",
                             n_jobs=threads, **params)
    start = time.perf_counter()
    model.fit(X)
    seconds = time.perf_counter() - start
    return model, [row["dur"] for row in model.history_], seconds


def fit_plain(name, X, n_topics, epochs, seed):
    start = time.perf_counter()
    model, durations = train_plain(X, n_topics, epochs, mixture=name == "AVITM", seed=seed)
    return model, durations, time.perf_counter() - start


def _peak_memory_child(name, data_home, n_topics, plain, queue):
    torch.set_num_threads(1)
    X = load_20news_avitm(data_home, subset="train").data
    fit = (lambda X: train_plain(X, n_topics, 1, mixture=name == "AVITM")) if plain else (
        lambda X: fit_ours(name, X, n_topics, 1, 0, 1))
    fit(X[:400])  # torch's kernels and thread pools are loaded before measuring
    with PeakRSS(interval=0.002) as rss:  # the resident set every 2 ms while the fit runs
        fit(X)
    queue.put((rss.rise_mb, X.data.nbytes + X.indices.nbytes + X.indptr.nbytes))


def peak_memory(name, data_home, n_topics, plain):
    """Rise of the resident memory during a one-epoch fit over what the process held
    before it (sampled every 2 ms, in a fresh process; MB), and the CSR matrix's size
    (bytes)."""
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=_peak_memory_child,
                            args=(name, data_home, n_topics, plain, queue))
    child.start()
    result = queue.get()
    child.join()
    return result


def quality(topic_word_or_model, X_test):
    return {"npmi": npmi_coherence(topic_word_or_model, X_test, 10).mean,
            "td10": topic_diversity(topic_word_or_model, 10)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--models", nargs="+", default=list(ESTIMATORS), choices=list(ESTIMATORS))
    parser.add_argument("--topics", type=int, default=50)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=5, help="alternating speed rounds")
    parser.add_argument("--speed-epochs", type=int, default=6)
    parser.add_argument("--seeds", type=int, nargs="*", default=[0, 1, 2])
    parser.add_argument("--quality-epochs", type=int, default=50)
    add_result_arguments(parser, "neural_speed_vs_plain")
    args = parser.parse_args()
    if args.report_only:
        return write_pages(args.output_dir / f"{args.output_name}.json")
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore", UserWarning)

    X = load_20news_avitm(args.data_home, subset="train").data
    X_test = load_20news_avitm(args.data_home, subset="test").data
    info = machine()
    speed_rows, quality_rows = [], []
    load = MachineLoad().__enter__()
    for name in args.models:
        plain_rounds, our_rounds = [], []  # each round's median seconds per epoch
        for round_ in range(args.rounds):
            _, durations, _ = fit_plain(name, X, args.topics, args.speed_epochs, round_)
            plain_rounds.append(float(np.median(durations[1:])))
            _, durations, _ = fit_ours(name, X, args.topics, args.speed_epochs, round_,
                                       args.threads)
            our_rounds.append(float(np.median(durations[1:])))
            print(name, round_, plain_rounds[-1], our_rounds[-1], flush=True)
        plain, ours = float(np.median(plain_rounds)), float(np.median(our_rounds))
        ratios = np.array(our_rounds) / np.array(plain_rounds)  # within each round
        plain_mb, csr_bytes = peak_memory(name, args.data_home, args.topics, plain=True)
        our_mb, _ = peak_memory(name, args.data_home, args.topics, plain=False)
        speed_rows.append({"model": name, "plain_s_per_epoch": plain,
                           "plain_range": f"{min(plain_rounds):.3f}-{max(plain_rounds):.3f}",
                           "sktopics_s_per_epoch": ours,
                           "sktopics_range": f"{min(our_rounds):.3f}-{max(our_rounds):.3f}",
                           "ratio": float(np.median(ratios)),
                           "ratio_range": f"{ratios.min():.2f}-{ratios.max():.2f}",
                           "rounds": args.rounds, "csr_mb": csr_bytes / 2**20,
                           "plain_peak_rise_mb": plain_mb, "sktopics_peak_rise_mb": our_mb,
                           "plain_rounds": plain_rounds, "sktopics_rounds": our_rounds})
        for seed in args.seeds:
            model, _, seconds = fit_plain(name, X, args.topics, args.quality_epochs, seed)
            quality_rows.append({"model": name, "code": "plain loop", "seed": seed,
                                 "fit_s": seconds, **quality(topic_word(model), X_test)})
            model, _, seconds = fit_ours(name, X, args.topics, args.quality_epochs, seed,
                                         args.threads)
            quality_rows.append({"model": name, "code": "sktopics", "seed": seed,
                                 "fit_s": seconds, **quality(model, X_test)})
            print(quality_rows[-2:], flush=True)

    load.__exit__(None, None, None)
    payload = {"machine": info, "load": load.summary(), "args": vars(args),
               "data": {"corpus": "20news_avitm", "n_train": X.shape[0],
                        "n_features": X.shape[1]},
               "speed": speed_rows, "quality": quality_rows}
    path = write_results(args.output_name, payload, speed_report, directory=args.output_dir)
    if quality_rows:
        write_report(path, quality_report, page=f"{path.stem}_quality")


def write_pages(path):
    """``--report-only``: the speed page and, when the run fitted for quality, the
    quality page."""
    write_report(path, speed_report)
    if json.loads(path.read_text())["quality"]:
        write_report(path, quality_report, page=f"{path.stem}_quality")


def _header(out):
    info, args, data = out["machine"], out["args"], out["data"]
    return (
        f"Measured on {info['cpu']} ({info['cpu_count']} cores, torch {info['torch']}, "
        f"{args['threads']} threads), commit {info.get('git_commit')}. "
        f"{load_sentence(out['load'])}\n\n"
        f"{data['corpus']} {data['n_train']} documents, V = {data['n_features']}, K = "
        f"{args['topics']}, batch 200. Speed: {args['rounds']} alternating rounds of "
        f"{args['speed_epochs']}-epoch fits, "
        "each round's median seconds per epoch (first epoch of each fit left out); the "
        "table gives the median over rounds and the min-max range, and the ratio is "
        "the median of the rounds' ratios. Memory: rise of "
        "the resident set during a one-epoch fit (sampled every 2 ms) over what the process "
        "held before it (after a warm-up fit on 400 documents), next to the CSR "
        "matrix's size. Quality: "
        f"{args['quality_epochs']} epochs, NPMI (test reference, epsilon convention, top 10) "
        "and TD@10, mean over seeds.\n\n"
    )


def speed_report(out):
    """The speed and memory page of :func:`main`'s JSON."""
    return _header(out) + markdown_table(
        out["speed"], ["model", "plain_s_per_epoch", "plain_range", "sktopics_s_per_epoch",
                       "sktopics_range", "ratio", "ratio_range", "csr_mb",
                       "plain_peak_rise_mb", "sktopics_peak_rise_mb"])


def quality_report(out):
    """The quality page of :func:`main`'s JSON: means over the seeds."""
    rows, means = out["quality"], []
    for name in dict.fromkeys(r["model"] for r in rows):
        for code in ("plain loop", "sktopics"):
            mine = [r for r in rows if r["model"] == name and r["code"] == code]
            if mine:
                means.append({"model": name, "code": code, "seeds": len(mine),
                              **{k: float(np.mean([r[k] for r in mine]))
                                 for k in ("fit_s", "npmi", "td10")}})
    return _header(out) + markdown_table(means, ["model", "code", "seeds", "fit_s", "npmi",
                                                 "td10"])


if __name__ == "__main__":
    main()
