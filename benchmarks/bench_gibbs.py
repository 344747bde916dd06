"""Benchmark LDAGibbs against tomotopy, pyrmallet, lda and scikit-learn's LDA, in one run.

Measures, on the same machine and in the same process (so ratios are meaningful):

1. **Throughput**: tokens/s = training tokens x sweeps / wall time, for 1 and 2
   threads, on BBC (OCTIS, train+validation) and 20NG (AVITM preprocessing,
   train), at K = 50 and K = 1000. Model construction and a few warm-up sweeps
   are excluded (``--warmup 50`` measures the steady state after burn-in, where
   tomotopy is faster than in its first sweeps). The systems are timed in
   alternation, ``--repeats`` times each, and the best timing of each is kept.
   LDAGibbs gets ``n_jobs=threads`` (its torch threads inside ``fit``),
   tomotopy ``workers=threads``; ``lda`` and pyrmallet (RustMallet,
   Mallet's SparseLDA) are single-threaded and have no warm start, so their sweeps
   are timed as the difference of two fresh runs;
   scikit-learn's batch VB uses ``n_jobs=threads`` and counts tokens x epochs.
2. **Time to perplexity**: BBC, K = 50 (``--ppl-k``), alpha = 0.1, beta = 0.01, no
   hyper-parameter optimisation. Each system trains in increments (pyrmallet, which
   cannot continue a chain, runs afresh to each checkpoint and is charged that run's
   time); after each increment the document-completion perplexity
   (``_completion.py``, the same code for every system) of the OCTIS test split is computed
   (evaluation time excluded). Reports the time to reach perplexity 900 and 870.
3. **Quality at equal sweeps** on 20NG (and NYT with ``--nyt``).

Usage::

    python benchmarks/bench_gibbs.py                    # default, about 10 minutes
    python benchmarks/bench_gibbs.py --quick            # smoke run, about 1 minute

Writes ``benchmarks/results/gibbs.json`` and ``benchmarks/results/gibbs.md``.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

# torch's threads wait for work as a user's do: GNU OpenMP's default (spin, then
# sleep). On a quiet machine that is the fast choice (2 threads, K = 50: 20 M tokens/s
# against 12-14 M with OMP_WAIT_POLICY=PASSIVE, which puts a thread to sleep after
# every operation). On a shared, oversubscribed one spinning threads wait for a
# time slice (10x slower at 2 threads, measured): export OMP_WAIT_POLICY=PASSIVE
# there, before this script starts. The results record the policy.
import numpy as np
import scipy.sparse as sp
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS,
    default_data_home,
    doc_words,
    machine,
    markdown_table,
    write_results,
)
from _completion import document_completion_perplexity, split_halves  # noqa: E402

from sktopics import LDAGibbs  # noqa: E402
from sktopics._gibbs._infer import CellCorpus, infer_doc_topic  # noqa: E402
from sktopics.datasets import load_20news_avitm, load_nyt, load_octis  # noqa: E402

ALPHA, BETA = 0.1, 0.01


# --------------------------------------------------------------------------- corpora
def load_corpora(data_home, names):
    corpora = {}
    if "bbc" in names:
        bbc = load_octis("BBC_News", data_home, subset="all")
        train = bbc.data[bbc.split != "test"]
        corpora["BBC"] = (sp.csr_matrix(train), sp.csr_matrix(bbc.data[bbc.split == "test"]))
    if "20ng" in names:
        corpora["20NG"] = (load_20news_avitm(data_home, subset="train").data,
                           load_20news_avitm(data_home, subset="test").data)
    if "nyt" in names:
        corpora["NYT"] = (load_nyt(data_home, subset="train").data,
                          load_nyt(data_home, subset="test").data)
    return corpora


# --------------------------------------------------------------------------- systems
class Ours:
    """LDAGibbs trained in increments with warm_start (the chain continues)."""

    def __init__(self, X, K, algorithm, threads, seed=0):
        self.X = X
        self.model = LDAGibbs(
            n_components=K, doc_topic_prior=ALPHA, topic_word_prior=BETA,
            optimize_interval=None, algorithm=algorithm, n_kept_samples=1, burn_in=0,
            evaluate_every=10**9, warm_start=True, device="cpu", random_state=seed,
            # torch's threads inside fit (the caller's are restored); n_jobs=None would
            # leave a core free: 1 thread on 2 cores
            n_jobs=threads,
        )

    def train(self, sweeps):
        self.model.set_params(max_iter=sweeps).fit(self.X)

    def topic_word(self):
        return self.model.components_


class Tomotopy:
    def __init__(self, X, K, threads, seed=0):
        import tomotopy as tp

        self.threads = threads
        self.model = tp.LDAModel(k=K, alpha=ALPHA, eta=BETA, seed=seed)
        for words in doc_words(X):
            if len(words):
                self.model.add_doc([str(w) for w in words])
        self.n_features = X.shape[1]
        self.model.train(0, workers=threads)

    def train(self, sweeps):
        self.model.train(sweeps, workers=self.threads)

    def topic_word(self):
        vocab = np.array([int(w) for w in self.model.used_vocabs])
        phi = np.full((self.model.k, self.n_features), 1e-12)
        for k in range(self.model.k):
            phi[k, vocab] = self.model.get_topic_word_dist(k)
        return phi


def _token_strings(X):
    """One string per document, its tokens written ``w<column>``, for text-only peers."""
    return [" ".join(f"w{w}" for w in words) for words in doc_words(X)]


class PyrMallet:
    """pyrmallet: RustMallet, a Rust port of Mallet's SparseLDA (single-threaded).

    It has no warm start, so ``train`` runs a fresh chain of the cumulative number
    of sweeps (``restarts`` tells the timing code); ``n`` sweeps are timed as the
    difference of fresh runs of ``warmup + n`` and ``warmup`` sweeps, as for ``lda``.
    """

    restarts = True

    def __init__(self, X, K, seed=0):
        from pyrmallet import _rust_mallet as rm

        self.rm, self.K, self.seed, self.n_features = rm, K, seed, X.shape[1]
        self.corpus = rm.Corpus.from_strings(_token_strings(X), token_regex=r"\S+")
        self.done, self.model = 0, None

    def _run(self, sweeps):
        # One final sample: num_samples * sample_interval sweeps follow `iterations`.
        self.model = self.rm.train(
            self.corpus, num_topics=self.K, iterations=max(0, sweeps - 1), burn_in=0,
            optimize_interval=0, num_samples=1, sample_interval=1, alpha_sum=ALPHA * self.K,
            beta=BETA, seed=self.seed)

    def train(self, sweeps):
        self.done += sweeps
        self._run(self.done)

    def time_runs(self, skip, n):
        """Seconds of fresh runs of ``skip + n`` and of ``skip`` sweeps."""
        return _time(lambda: self._run(skip + n)), _time(lambda: self._run(skip))

    def vocabulary(self):
        return np.array([int(w[1:]) for w in self.model.vocabulary])

    def topic_word(self):
        phi = np.full((self.K, self.n_features), 1e-12)
        phi[:, self.vocabulary()] = np.asarray(self.model.topic_word_matrix())
        return phi


# --------------------------------------------------------------------------- throughput
def _time(fn):
    tic = time.perf_counter()
    fn()
    return time.perf_counter() - tic


def throughput(corpora, ks, threads_list, sweeps, warmup, lda_sweeps, with_sklearn,
               samplers=("parallel", "mh"), repeats=2, with_pyrmallet=True):
    rows = []
    for name, (X, _) in corpora.items():
        n_tokens = int(X.sum())
        for K in ks:
            for threads in threads_list:
                def record(system, seconds, n_sweeps, unit="sweep"):
                    rows.append(dict(corpus=name, K=K, threads=threads, system=system,
                                     tokens=n_tokens, sweeps=n_sweeps, seconds=seconds,
                                     Mtok_s=n_tokens * n_sweeps / seconds / 1e6, unit=unit))
                    print(f"  {name} K={K} thr={threads} {system:22s} "
                          f"{rows[-1]['Mtok_s']:7.2f} M tok/s", flush=True)

                algorithms = ["parallel", "mh"] if K < 200 else ["mh", "parallel"]
                algorithms = [a for a in algorithms if a in samplers]
                # (name, model, sweeps per timing); all warmed up first, then timed in
                # alternation, best of `repeats` each: a burst of noise on the shared
                # machine then hits one timing of a system, not its only one.
                systems = []
                for algorithm in algorithms:
                    n = sweeps if (algorithm == "mh" or K < 200) else max(1, sweeps // 5)
                    systems.append((f"sktopics {algorithm}", Ours(X, K, algorithm, threads), n))
                n = sweeps if K < 200 else max(2, sweeps // 2)
                systems.append(("tomotopy", Tomotopy(X, K, threads), n))
                if threads == 1 and with_pyrmallet:
                    systems.append(("pyrmallet", PyrMallet(X, K), sweeps))
                best = {}
                for _, model, _ in systems:
                    if not getattr(model, "restarts", False):
                        model.train(warmup)
                for _ in range(repeats):
                    for system, model, n in systems:
                        if getattr(model, "restarts", False):
                            seconds = model.time_runs(warmup, n)
                        else:
                            seconds = (_time(lambda: model.train(n)),)  # noqa: B023
                        best[system] = np.minimum(best.get(system, np.inf), seconds)
                for system, _, n in systems:
                    # Restarting systems: best full run minus best warm-up run.
                    record(system, float(best[system][0] - best[system][1:].sum()), n)
                if threads == 1 and lda_sweeps:
                    import lda

                    n = lda_sweeps if K < 200 else max(1, lda_sweeps // 5)
                    Xi = X.astype(np.int64)

                    def lda_fit(n_iter):
                        lda.LDA(n_topics=K, n_iter=n_iter, alpha=ALPHA, eta=BETA,
                                random_state=0, refresh=10**9).fit(Xi)

                    # Difference of two fits removes lda's set-up time.
                    record("lda", _time(lambda: lda_fit(1 + n)) - _time(lambda: lda_fit(1)), n)
                if with_sklearn and K < 200:
                    from sklearn.decomposition import LatentDirichletAllocation

                    def vb_fit(epochs):
                        LatentDirichletAllocation(
                            n_components=K, doc_topic_prior=ALPHA, topic_word_prior=BETA,
                            learning_method="batch", max_iter=epochs, n_jobs=threads,
                            random_state=0).fit(X)

                    record("scikit-learn batch VB",
                           _time(lambda: vb_fit(3)) - _time(lambda: vb_fit(1)), 2, unit="epoch")
    return rows


def plot_throughput(rows, path):
    """Bars of M tokens/s per system, one panel per (corpus, K), 1 and 2 threads."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys((r["corpus"], r["K"]) for r in rows))
    fig, axes = plt.subplots(1, len(panels), figsize=(3.6 * len(panels), 3.4), squeeze=False)
    for ax, (corpus, K) in zip(axes[0], panels):
        mine = [r for r in rows if (r["corpus"], r["K"]) == (corpus, K)
                and r["unit"] == "sweep"]
        systems = list(dict.fromkeys(r["system"] for r in mine))
        for offset, threads in ((-0.2, 1), (0.2, 2)):
            values = [next((r["Mtok_s"] for r in mine if r["system"] == s
                            and r["threads"] == threads), 0.0) for s in systems]
            ax.barh([i + offset for i in range(len(systems))], values, height=0.38,
                    label=f"{threads} thread{'s' * (threads > 1)}")
        ax.set_yticks(range(len(systems)), [s.replace("sktopics ", "sktopics\n")
                                            for s in systems], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("M tokens / s")
        ax.set_title(f"{corpus}, K = {K}", fontsize=10)
    axes[0][0].legend(fontsize=8, loc="lower right")
    fig.suptitle("LDAGibbs and its peers, same process (benchmarks/bench_gibbs.py)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# --------------------------------------------------------------------------- time to perplexity
def time_to_perplexity(X, X_test, K, checkpoints, systems, label):
    halves = split_halves(X_test, seed=0)
    rows = []
    for system_name, factory in systems:
        model = factory()
        elapsed, done = 0.0, 0
        for target in checkpoints:
            seconds = _time(lambda: model.train(target - done))
            # A restarting system's run already covers the sweeps before it.
            elapsed = seconds if getattr(model, "restarts", False) else elapsed + seconds
            done = target
            ppl = document_completion_perplexity(X_test, model.topic_word(), ALPHA,
                                                 split=halves)
            rows.append(dict(corpus=label, K=K, system=system_name, sweeps=done,
                             train_seconds=elapsed, perplexity=ppl))
            print(f"  {label} {system_name:22s} sweeps={done:4d} t={elapsed:6.1f}s "
                  f"ppl={ppl:7.1f}", flush=True)
    return rows


def first_time_below(rows, system, threshold):
    for row in rows:
        if row["system"] == system and row["perplexity"] <= threshold:
            return row["train_seconds"], row["sweeps"]
    return None, None


# --------------------------------------------------------------------------- inference
def _timed_one_thread(fn, repeats=2):
    """``(fn(), seconds)`` with torch on one thread, the best of ``repeats`` runs."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        best = float("inf")
        for _ in range(repeats):
            tic = time.perf_counter()
            result = fn()
            best = min(best, time.perf_counter() - tic)
        return result, best
    finally:
        torch.set_num_threads(old)


def _posterior_mean_theta(X, phi, alpha, n_iter=400, n_burn=50):
    """A long run of the exact fixed-topic sampler: the reference for accuracy."""
    cells = CellCorpus(X, "cpu")
    return infer_doc_topic(cells, torch.as_tensor(phi.T, dtype=torch.float32).contiguous(),
                           torch.as_tensor(alpha, dtype=torch.float64), n_iter, n_burn,
                           torch.Generator().manual_seed(12345)).numpy()


def _l1_error(theta, reference, X):
    """Mean L1 distance between estimated and reference theta over non-empty documents."""
    keep = np.asarray(X.sum(1)).ravel() > 0
    return float(np.abs(theta[keep] - reference[keep]).sum(1).mean())


def inference_speed(X, X_test, K, n_iter, train_sweeps, label, accuracy=True,
                    with_pyrmallet=True):
    """transform (fixed-phi Gibbs, all documents at once) vs tomotopy ``infer``.

    Besides speed, the accuracy of each system's output is measured against the
    posterior mean of theta under *its own* model (a 400-iteration run of the
    exact fixed-topic sampler): the mean L1 distance per document. tomotopy drops
    test words it has not seen in training, so its reference is computed on the
    test matrix without those columns.
    """
    n_tokens = int(X_test.sum())

    def row(system, iterations, seconds, theta):
        return dict(corpus=label, K=K, system=system, iterations=iterations, seconds=seconds,
                    Mtok_s=n_tokens * iterations / seconds / 1e6, theta=theta)

    ours = Ours(X, K, "parallel", 1)
    ours.train(train_sweeps)
    rows = []
    # 100 iterations, then fewer: the accuracy/time trade-off of our estimator.
    for iterations in (n_iter, n_iter // 4, n_iter // 2) if accuracy else (n_iter,):
        ours.model.set_params(transform_max_iter=iterations)
        theta, seconds = _timed_one_thread(lambda: ours.model.transform(X_test))
        rows.append(row("sktopics transform", iterations, seconds, theta))
    tomo = Tomotopy(X, K, 1)
    tomo.train(train_sweeps)
    Xt = sp.csr_matrix(X_test)
    docs = [tomo.model.make_doc([str(w) for w in words]) for words in doc_words(Xt)]
    # tomotopy >= 0.13 returns the documents' topic distributions.
    theta_tomo, seconds = _timed_one_thread(
        lambda: np.asarray(tomo.model.infer(docs, iterations=n_iter, workers=1)[0]))
    rows.append(row("tomotopy infer", n_iter, seconds, theta_tomo))
    mallet = PyrMallet(X, K) if with_pyrmallet else None
    if mallet is not None:
        mallet.train(train_sweeps)
        # Its count-matrix input is a dense list of lists over its own vocabulary
        # (``infer_strings`` would re-tokenise with its default pattern, not ours).
        counts = Xt[:, mallet.vocabulary()].toarray().astype(np.int64).tolist()
        theta_mallet, seconds = _timed_one_thread(
            lambda: np.asarray(mallet.model.infer(counts, n_iter=n_iter, seed=0)))
        # Less the time of a call with no iteration (reading the lists: 2-10 % here).
        _, overhead = _timed_one_thread(lambda: mallet.model.infer(counts, n_iter=0, seed=0))
        rows.append(row("pyrmallet infer", n_iter, seconds - overhead, theta_mallet))
    if accuracy:
        known = np.zeros(X.shape[1], dtype=bool)
        known[[int(w) for w in tomo.model.used_vocabs]] = True
        Xt_known = Xt[:, known]
        ref_ours = _posterior_mean_theta(Xt, ours.model.components_, ours.model.doc_topic_prior_)
        ref_tomo = _posterior_mean_theta(Xt_known, tomo.topic_word()[:, known],
                                         np.asarray(tomo.model.alpha, dtype=np.float64))
        for r in rows:
            if r["system"] == "sktopics transform":
                r["L1_error"] = _l1_error(r["theta"], ref_ours, Xt)
            if r["system"] == "tomotopy infer":
                r["L1_error"] = _l1_error(theta_tomo, ref_tomo, Xt_known)
                r["dropped_oov_tokens"] = int(n_tokens - Xt_known.sum())
        if mallet is not None:
            seen = np.zeros(X.shape[1], dtype=bool)
            seen[mallet.vocabulary()] = True
            ref_mallet = _posterior_mean_theta(Xt[:, seen], mallet.topic_word()[:, seen],
                                               np.asarray(mallet.model.alpha, dtype=np.float64))
            rows[-1]["L1_error"] = _l1_error(theta_mallet, ref_mallet, Xt[:, seen])
            rows[-1]["dropped_oov_tokens"] = int(n_tokens - Xt[:, seen].sum())
    for r in rows:
        del r["theta"]
    for r in rows:
        print(f"  {label} {r['system']:22s} {r['Mtok_s']:7.2f} M tok/s"
              f"  L1 error {r.get('L1_error', float('nan')):.3f}", flush=True)
    return rows


# --------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--corpora", default="bbc,20ng")
    parser.add_argument("--ks", default="50,1000")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--sweeps", type=int, default=10, help="timed sweeps (throughput)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=2,
                        help="timings per system (throughput), alternating; the best is kept")
    parser.add_argument("--lda-sweeps", type=int, default=5, help="0 skips lda")
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--no-pyrmallet", action="store_true")
    parser.add_argument("--samplers", default="parallel,mh",
                        help="sktopics samplers timed in the throughput section")
    parser.add_argument("--ppl-checkpoints", default="25,50,100,200")
    parser.add_argument("--ppl-k", type=int, default=50, help="topics of the time-to-perplexity run")
    parser.add_argument("--ppl-samplers", default="parallel,mh",
                        help="sktopics samplers in the time-to-perplexity run")
    parser.add_argument("--quality-sweeps", type=int, default=100,
                        help="sweeps for the equal-sweeps quality run on 20NG (0 skips)")
    parser.add_argument("--nyt", action="store_true", help="also run the quality run on NYT")
    parser.add_argument("--sections", default="throughput,ppl,quality,infer",
                        help="comma-separated subset of throughput,ppl,quality,infer")
    parser.add_argument("--infer-train-sweeps", type=int, default=100,
                        help="training sweeps of the models whose inference is timed")
    parser.add_argument("--quick", action="store_true", help="tiny smoke run")
    parser.add_argument("--output-name", default="gibbs")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw results/<output-name>.png from its .json")
    args = parser.parse_args(argv)
    if args.quick:
        args.corpora, args.ks, args.sweeps, args.warmup = "bbc", "50", 2, 1
        args.ppl_checkpoints, args.quality_sweeps, args.lda_sweeps = "10,20", 0, 2
        args.infer_train_sweeps = 5
    figure = RESULTS / f"{args.output_name}.png"
    if args.replot:
        plot_throughput(json.loads((RESULTS / f"{args.output_name}.json").read_text())
                        ["throughput"], figure)
        return

    info = machine()
    info["uptime_start"] = os.popen("uptime").read().strip()
    info["OMP_WAIT_POLICY"] = os.environ.get("OMP_WAIT_POLICY")
    try:
        import tomotopy

        info["tomotopy"] = f"{tomotopy.__version__} ({tomotopy.isa})"
    except ImportError:
        pass
    try:
        import lda

        info["lda"] = getattr(lda, "__version__", "?")
    except ImportError:
        pass
    try:
        from importlib.metadata import version

        info["pyrmallet"] = version("pyrmallet")
    except ImportError:
        pass
    print(info, flush=True)
    tic = time.perf_counter()

    names = set(args.corpora.split(",")) | ({"nyt"} if args.nyt else set())
    corpora = load_corpora(args.data_home, names)
    ks = [int(k) for k in args.ks.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]

    sections = set(args.sections.split(","))
    through, ppl_rows, quality_rows, infer_rows = [], [], [], []
    if "throughput" in sections:
        print("== throughput", flush=True)
        through = throughput({k: v for k, v in corpora.items() if k in ("BBC", "20NG")}, ks,
                             threads_list, args.sweeps, args.warmup, args.lda_sweeps,
                             not args.no_sklearn, args.samplers.split(","), args.repeats,
                             not args.no_pyrmallet)

    checkpoints = [int(c) for c in args.ppl_checkpoints.split(",")]
    if "BBC" in corpora and "ppl" in sections:
        K = args.ppl_k
        print(f"== time to perplexity (BBC, K={K})", flush=True)
        X, X_test = corpora["BBC"]
        systems = [(f"sktopics {a}", lambda a=a: Ours(X, K, a, 1))
                   for a in args.ppl_samplers.split(",")]
        systems.append(("tomotopy", lambda: Tomotopy(X, K, 1)))
        if not args.no_pyrmallet:
            systems.append(("pyrmallet", lambda: PyrMallet(X, K)))
        # 2-thread time to perplexity follows from the throughput ratio: the
        # sktopics chain is bit-identical at any thread count.
        ppl_rows += time_to_perplexity(X, X_test, K, checkpoints, systems, "BBC")

    if args.quality_sweeps and "quality" in sections:
        print("== quality at equal sweeps", flush=True)
        for label in ("20NG", "NYT"):
            if label not in corpora:
                continue
            X, X_test = corpora[label]
            systems = [("sktopics parallel", lambda: Ours(X, 50, "parallel", 1)),
                       ("tomotopy", lambda: Tomotopy(X, 50, 1)),
                       ("pyrmallet", lambda: PyrMallet(X, 50))]
            quality_rows += time_to_perplexity(X, X_test, 50, [args.quality_sweeps], systems,
                                               label)

    if "infer" in sections:
        print("== inference speed (transform vs tomotopy infer, 1 thread)", flush=True)
        for label in ("20NG", "BBC"):
            if label in corpora:
                X, X_test = corpora[label]
                infer_rows += inference_speed(X, X_test, 50, 100, args.infer_train_sweeps, label,
                                              with_pyrmallet=not args.no_pyrmallet)

    info["uptime_end"] = os.popen("uptime").read().strip()
    info["total_seconds"] = time.perf_counter() - tic

    # ---------------------------------------------------------------- tables
    md = ["# LDAGibbs benchmark\n",
          f"Machine: {info['cpu']}, {info['cpu_count']} cores, no GPU; torch "
          f"{info['torch']}, tomotopy {info.get('tomotopy')}, pyrmallet {info.get('pyrmallet')}, "
          f"lda {info.get('lda')}, "
          f"scikit-learn {info['scikit-learn']}.\n",
          f"Load: start `{info['uptime_start']}`; end `{info['uptime_end']}` "
          "(the machine is shared; compare ratios within this run, not absolute values); "
          f"OMP_WAIT_POLICY {info['OMP_WAIT_POLICY'] or 'unset (spin, then sleep)'}.\n",
          f"Total run time {info['total_seconds']:.0f} s.\n",
          "\n## Throughput (M tokens/s; sweeps for Gibbs, epochs for VB)\n"]
    pivot = {}
    for row in through:
        key = (row["corpus"], row["K"], row["system"])
        pivot.setdefault(key, {})[row["threads"]] = row["Mtok_s"]
    table = []
    ratio_cols = []
    for (corpus, K, system), by_thr in pivot.items():
        tomo = pivot.get((corpus, K, "tomotopy"), {})
        entry = dict(corpus=corpus, K=K, system=system)
        for t in threads_list:
            entry[f"{t} thr"] = by_thr.get(t)
        for t in threads_list:
            col = f"{t} thr / tomotopy 1 thr"
            if col not in ratio_cols:
                ratio_cols.append(col)
            if by_thr.get(t) is not None and tomo.get(1):
                entry[col] = by_thr[t] / tomo[1]
        table.append(entry)
    md.append(markdown_table(table, ["corpus", "K", "system"] + [f"{t} thr" for t in threads_list]
                             + ratio_cols))
    if not through:
        del md[-2:]  # no throughput section in this run
    if ppl_rows:
        md.append(f"\n## Time to document-completion perplexity (BBC, K = {args.ppl_k}, 1 thread "
                  "unless noted)\n")
        summary = []
        for system in dict.fromkeys(r["system"] for r in ppl_rows):
            t900, s900 = first_time_below(ppl_rows, system, 900)
            t870, s870 = first_time_below(ppl_rows, system, 870)
            last = [r for r in ppl_rows if r["system"] == system][-1]
            summary.append({"system": system, "time to <= 900 (s)": t900,
                            "sweeps (900)": s900, "time to <= 870 (s)": t870,
                            "sweeps (870)": s870,
                            f"ppl at {last['sweeps']} sweeps": last["perplexity"],
                            "train time (s)": last["train_seconds"]})
        md.append(markdown_table(summary, list(summary[0].keys())))
        md.append("\nPerplexity by sweep:\n\n")
        by_sweep = {}
        for r in ppl_rows:
            by_sweep.setdefault(r["system"], {})[r["sweeps"]] = r["perplexity"]
        md.append(markdown_table(
            [{"system": s, **{str(k): v for k, v in d.items()}} for s, d in by_sweep.items()],
            ["system"] + [str(c) for c in checkpoints]))
    if quality_rows:
        md.append(f"\n## Quality at equal sweeps ({args.quality_sweeps} sweeps, K = 50, "
                  "1 thread)\n")
        md.append(markdown_table(quality_rows, ["corpus", "system", "sweeps", "train_seconds",
                                                "perplexity"]))
    if infer_rows:
        md.append("\n## Inference on held-out documents (K = 50, 100 iterations, 1 thread, "
                  f"models trained {args.infer_train_sweeps} sweeps)\n\n"
                  "`L1_error`: mean L1 distance per document to the posterior mean of theta "
                  "under the system's own model (400 iterations of the exact fixed-topic "
                  "sampler).\n\n")
        md.append(markdown_table(infer_rows, ["corpus", "system", "iterations", "seconds",
                                              "Mtok_s", "L1_error"]))
    payload = dict(machine=info, args=vars(args), throughput=through,
                   time_to_perplexity=ppl_rows, quality=quality_rows, inference=infer_rows)
    write_results(args.output_name, payload, "".join(md))
    if through:
        plot_throughput(through, figure)


if __name__ == "__main__":
    main()
