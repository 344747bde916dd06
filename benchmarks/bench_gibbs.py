"""Benchmark LDAGibbs against tomotopy, pyrmallet, lda and scikit-learn's LDA, in one run.

Measures, on the same machine and in the same process (so ratios are meaningful):

1. **Throughput**: tokens/s = training tokens x sweeps / wall time, for 1 and 2
   threads, on BBC (OCTIS, train+validation) and 20NG (AVITM preprocessing,
   train), at K = 50 and K = 1000. Model construction and a few warm-up sweeps
   are excluded (``--warmup 50`` measures the steady state after burn-in, where
   tomotopy is faster than in its first sweeps). The systems are timed in
   alternation, one timing each per round, for ``--repeats`` rounds (default 5); the
   tables give the **median** over the rounds with the min-max range, and a ratio's
   median and range are those of the per-round ratios (two systems' timings of the
   same round). LDAGibbs gets ``n_jobs=threads`` (its torch threads inside ``fit``),
   tomotopy ``workers=threads``; ``lda`` and pyrmallet (RustMallet, Mallet's
   SparseLDA) are single-threaded and have no warm start, so their sweeps are timed as
   the difference of two fresh runs in the same round; scikit-learn's batch VB uses
   ``n_jobs=threads`` and counts tokens x epochs (3 epochs less 1).
2. **Time to perplexity**: BBC, K = 50 (``--ppl-k``), alpha = 0.1, beta = 0.01, no
   hyper-parameter optimisation. Each system trains in increments (pyrmallet, which
   cannot continue a chain, runs afresh to each checkpoint and is charged that run's
   time); after each increment the document-completion perplexity
   (``_completion.py``, the same code for every system) of the OCTIS test split is
   computed (evaluation time excluded). Checkpoints: every 10 sweeps up to 200
   (``--ppl-checkpoints``). The time (and sweep) at which a system first reaches a
   threshold (``--ppl-thresholds``, 900 and 870) is **interpolated linearly** in
   perplexity between the first checkpoint at or below it and the one before; a
   crossing at the first checkpoint is that checkpoint's time, an upper bound.
   ``--ppl-repeats`` runs (seeds 0, 1, ...; default ``--repeats``), the systems in turn
   within a run: medians with min-max ranges, ratios to tomotopy and to pyrmallet per
   seed. The perplexity at equal training time (1, 2 and 4 s, and the latest time every
   run reached) is interpolated linearly in time between a run's checkpoints.
   ``--ppl-samplers`` picks the sktopics samplers (``parallel``, ``mh``, ``sparse``).
3. **Quality at equal sweeps** on 20NG (and NYT with ``--nyt``), one run.
4. **Inference**: ``transform`` against tomotopy's and pyrmallet's ``infer`` on the
   test documents, one thread, the calls alternating over ``--repeats`` rounds
   (median, min-max), with each output's L1 distance to a reference posterior mean
   of theta under that system's own topics and prior: ``LDAGibbs.transform`` run
   longer (400 iterations, the second half averaged, another seed) by a model that
   is given those topics and that prior through its public fitted attributes
   ``components_`` and ``doc_topic_prior_``. A reference of the same method as
   ``transform``, not an independent one.

The machine (CPU model, cores, SIMD), the commit, whether the package differs from
it, the load averages at the start and the end and the cores other processes kept
busy are recorded; the page calls the machine quiet or shared by that measurement.

Usage::

    python benchmarks/bench_gibbs.py --sections throughput --output-name gibbs_throughput
    python benchmarks/bench_gibbs.py --quick --output-dir /tmp/gibbs_trial   # toy run

Writes ``<output-dir>/<output-name>.{json,rst}`` (default ``benchmarks/results/gibbs.*``)
and, with a throughput section, the bar chart ``<output-name>.png``; ``--report-only``
redraws the page and ``--replot`` the chart from the JSON.
"""

import argparse
import json
import os
import sys
import time
import warnings
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
    MachineLoad,
    add_result_arguments,
    commit_text,
    default_data_home,
    doc_words,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)
from _completion import document_completion_perplexity, split_halves  # noqa: E402

from sktopics import LDAGibbs  # noqa: E402
from sktopics.datasets import load_20news_avitm, load_nyt, load_octis  # noqa: E402
from sktopics.utils import EmptyDocumentWarning  # noqa: E402

ALPHA, BETA = 0.1, 0.01


# --------------------------------------------------------------------------- corpora
def load_corpora(data_home, names, max_docs=None):
    """``{label: (train, test)}``; ``max_docs`` keeps the first documents of each split
    (for a trial run of the script)."""
    corpora = _load_corpora(data_home, names)
    if max_docs:
        corpora = {k: (sp.csr_matrix(a)[:max_docs], sp.csr_matrix(b)[:max_docs])
                   for k, (a, b) in corpora.items()}
    return corpora


def _load_corpora(data_home, names):
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


# --------------------------------------------------------------------------- statistics
def _time(fn):
    tic = time.perf_counter()
    fn()
    return time.perf_counter() - tic


def _stats(values):
    """``(median, min, max)`` of the finite values (NaN when there are none); ``inf``
    (a threshold not reached) counts towards the median and the max."""
    v = np.asarray([x for x in values if x is not None and not np.isnan(x)], dtype=float)
    if not v.size:
        return float("nan"), float("nan"), float("nan")
    return float(np.median(v)), float(v.min()), float(v.max())


def _fmt(value, digits=None):
    if value is None or np.isnan(value):
        return ""
    if np.isinf(value):
        return "not reached"
    if digits is not None:
        return f"{value:.{digits}f}"
    return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"


def _cell(median, lo, hi, digits=None):
    """``median (min-max)``, or the median alone when the range is one value."""
    if median is None or np.isnan(median):
        return ""
    if lo == hi or np.isnan(lo):
        return _fmt(median, digits)
    return f"{_fmt(median, digits)} ({_fmt(lo, digits)}-{_fmt(hi, digits)})"


def _ratios(numerators, denominators):
    """Per-round ratios ``a_i / b_i`` (rounds paired by index)."""
    return [a / b for a, b in zip(numerators, denominators)
            if a is not None and b is not None and b > 0 and not np.isnan(a) and not np.isnan(b)]


# --------------------------------------------------------------------------- throughput
class LdaPeer:
    """The ``lda`` package (single-threaded, no warm start): ``n`` sweeps are timed as
    the difference of fresh fits of ``1 + n`` and ``1`` sweeps (removes its set-up)."""

    restarts = True

    def __init__(self, X, K):
        self.Xi, self.K = X.astype(np.int64), K

    def _fit(self, n_iter):
        import lda

        lda.LDA(n_topics=self.K, n_iter=n_iter, alpha=ALPHA, eta=BETA, random_state=0,
                refresh=10**9).fit(self.Xi)

    def time_runs(self, skip, n):
        return _time(lambda: self._fit(1 + n)), _time(lambda: self._fit(1))


class SklearnVB:
    """scikit-learn's batch variational Bayes: 2 epochs timed as fits of 3 less 1."""

    restarts = True

    def __init__(self, X, K, threads):
        self.X, self.K, self.threads = X, K, threads

    def _fit(self, epochs):
        from sklearn.decomposition import LatentDirichletAllocation

        LatentDirichletAllocation(
            n_components=self.K, doc_topic_prior=ALPHA, topic_word_prior=BETA,
            learning_method="batch", max_iter=epochs, n_jobs=self.threads,
            random_state=0).fit(self.X)

    def time_runs(self, skip, n):
        return _time(lambda: self._fit(1 + n)), _time(lambda: self._fit(1))


def throughput(corpora, ks, threads_list, sweeps, warmup, lda_sweeps, with_sklearn,
               samplers=("parallel", "mh"), repeats=5, with_pyrmallet=True):
    """One row per (corpus, K, threads, system): the median M tokens/s over ``repeats``
    alternating rounds, its min and max, and every round's value (``Mtok_s_runs``)."""
    rows = []
    for name, (X, _) in corpora.items():
        n_tokens = int(X.sum())
        for K in ks:
            for threads in threads_list:
                algorithms = ["parallel", "mh"] if K < 200 else ["mh", "parallel"]
                algorithms = [a for a in algorithms + ["sparse"] if a in samplers]
                # (name, model, sweeps per timing, unit); all warmed up first, then timed
                # in alternation, one timing each per round: a burst of noise on the
                # machine then hits one round of a system, and the median ignores it.
                systems = []
                for algorithm in algorithms:
                    n = sweeps if (algorithm != "parallel" or K < 200) else max(1, sweeps // 5)
                    systems.append((f"sktopics {algorithm}", Ours(X, K, algorithm, threads), n,
                                    "sweep"))
                n = sweeps if K < 200 else max(2, sweeps // 2)
                systems.append(("tomotopy", Tomotopy(X, K, threads), n, "sweep"))
                if threads == 1 and with_pyrmallet:
                    systems.append(("pyrmallet", PyrMallet(X, K), sweeps, "sweep"))
                if threads == 1 and lda_sweeps:
                    n = lda_sweeps if K < 200 else max(1, lda_sweeps // 5)
                    systems.append(("lda", LdaPeer(X, K), n, "sweep"))
                if with_sklearn and K < 200:
                    systems.append(("scikit-learn batch VB", SklearnVB(X, K, threads), 2,
                                    "epoch"))
                for _, model, _, _ in systems:
                    if not getattr(model, "restarts", False):
                        model.train(warmup)
                seconds = {system: [] for system, *_ in systems}
                for _ in range(repeats):
                    for system, model, n, _ in systems:
                        if getattr(model, "restarts", False):
                            full, skip = model.time_runs(warmup, n)
                            # Noise can make the difference of two runs meaningless.
                            seconds[system].append(full - skip if full > skip else float("nan"))
                        else:
                            seconds[system].append(_time(lambda: model.train(n)))  # noqa: B023
                for system, _, n, unit in systems:
                    rates = [n_tokens * n / t / 1e6 if t == t else float("nan")
                             for t in seconds[system]]
                    median, lo, hi = _stats(rates)
                    rows.append(dict(corpus=name, K=K, threads=threads, system=system,
                                     tokens=n_tokens, sweeps=n, unit=unit, repeats=repeats,
                                     seconds=_stats(seconds[system])[0], seconds_runs=seconds[system],
                                     Mtok_s=median, Mtok_s_min=lo, Mtok_s_max=hi,
                                     Mtok_s_runs=rates, statistic="median"))
                    print(f"  {name} K={K} thr={threads} {system:22s} {median:7.2f} M tok/s "
                          f"({lo:.2f}-{hi:.2f}, {repeats} rounds)", flush=True)
    return rows


def throughput_table(rows, threads_list):
    """The results page's table: median (min-max) per thread count, and the per-round
    ratios to tomotopy on one thread and on the same number of threads."""
    pivot = {}
    for row in rows:
        pivot.setdefault((row["corpus"], row["K"], row["system"]), {})[row["threads"]] = row
    ratio_cols = [f"{t} thr / tomotopy 1 thr" for t in threads_list]
    ratio_cols += [f"{t} thr / tomotopy {t} thr" for t in threads_list if t != 1]
    table, ratios = [], []
    for (corpus, K, system), by_thr in pivot.items():
        tomo = pivot.get((corpus, K, "tomotopy"), {})
        entry = dict(corpus=corpus, K=K, system=system)
        for t in threads_list:
            r = by_thr.get(t)
            entry[f"{t} thr"] = r and _cell(r["Mtok_s"], r["Mtok_s_min"], r["Mtok_s_max"])
        for t in threads_list:
            for ref_t in {1, t}:
                col = f"{t} thr / tomotopy {ref_t} thr"
                if col not in ratio_cols or by_thr.get(t) is None or tomo.get(ref_t) is None:
                    continue
                per_round = _ratios(by_thr[t]["Mtok_s_runs"], tomo[ref_t]["Mtok_s_runs"])
                if per_round:
                    entry[col] = _cell(*_stats(per_round))
                    ratios.append(dict(corpus=corpus, K=K, system=system, threads=t,
                                       tomotopy_threads=ref_t, per_round=per_round,
                                       median=_stats(per_round)[0]))
        table.append(entry)
    columns = ["corpus", "K", "system"] + [f"{t} thr" for t in threads_list] + ratio_cols
    return markdown_table(table, columns), ratios


def plot_throughput(rows, path):
    """Bars of M tokens/s per system, one panel per (corpus, K), 1 and 2 threads; the
    bars are medians and the whiskers the min-max range where the rows have them."""
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
            found = [next((r for r in mine if r["system"] == s and r["threads"] == threads),
                          None) for s in systems]
            values = [r["Mtok_s"] if r else 0.0 for r in found]
            errors = None
            if all(r is None or "Mtok_s_min" in r for r in found):
                errors = [[r["Mtok_s"] - r["Mtok_s_min"] if r else 0.0 for r in found],
                          [r["Mtok_s_max"] - r["Mtok_s"] if r else 0.0 for r in found]]
            ax.barh([i + offset for i in range(len(systems))], values, height=0.38,
                    xerr=errors, capsize=2, error_kw={"elinewidth": 0.8},
                    label=f"{threads} thread{'s' * (threads > 1)}")
        ax.set_yticks(range(len(systems)), [s.replace("sktopics ", "sktopics\n")
                                            for s in systems], fontsize=8)
        ax.invert_yaxis()
        ax.set_xlabel("M tokens / s")
        ax.set_title(f"{corpus}, K = {K}", fontsize=10)
    axes[0][0].legend(fontsize=8, loc="lower right")
    ranged = all("Mtok_s_min" in r for r in rows)
    fig.suptitle("LDAGibbs and its peers, same process (benchmarks/bench_gibbs.py)"
                 + ("; median, min-max" if ranged else ""), fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


# --------------------------------------------------------------------------- time to perplexity
def parse_checkpoints(text):
    """``"10:200:10"`` (start:stop:step, stop included) and/or comma-separated sweeps."""
    points = set()
    for part in text.split(","):
        if ":" in part:
            start, stop, step = (int(v) for v in part.split(":"))
            points.update(range(start, stop + 1, step))
        elif part.strip():
            points.add(int(part))
    return sorted(points)


def time_to_perplexity(X, X_test, K, checkpoints, systems, label, repeats=1):
    """Rows ``(repeat, system, sweeps, train_seconds, perplexity)``; ``systems`` are
    ``(name, factory(seed))``. Run ``r`` uses seed ``r`` for every system, the systems
    in turn within it."""
    halves = split_halves(X_test, seed=0)
    rows = []
    for repeat in range(repeats):
        for system_name, factory in systems:
            model = factory(repeat)
            elapsed, done = 0.0, 0
            for target in checkpoints:
                seconds = _time(lambda: model.train(target - done))  # noqa: B023
                # A restarting system's run already covers the sweeps before it.
                elapsed = seconds if getattr(model, "restarts", False) else elapsed + seconds
                done = target
                ppl = document_completion_perplexity(X_test, model.topic_word(), ALPHA,
                                                     split=halves)
                rows.append(dict(corpus=label, K=K, system=system_name, repeat=repeat,
                                 seed=repeat, sweeps=done, train_seconds=elapsed,
                                 perplexity=ppl))
                print(f"  {label} run {repeat} {system_name:22s} sweeps={done:4d} "
                      f"t={elapsed:6.1f}s ppl={ppl:7.1f}", flush=True)
    return rows


def crossing(points, threshold):
    """When a run first reaches ``threshold``: ``(seconds, sweeps, how)``.

    ``points`` are one run's ``(sweeps, seconds, perplexity)`` in checkpoint order. The
    time and the sweep are interpolated linearly in perplexity between the first
    checkpoint at or below the threshold and the checkpoint before it; at the first
    checkpoint they are that checkpoint's (an upper bound); ``inf`` if never reached.
    """
    previous = None
    for sweeps, seconds, ppl in points:
        if ppl <= threshold:
            if previous is None:
                return seconds, float(sweeps), "first checkpoint (upper bound)"
            s0, t0, p0 = previous
            f = (p0 - threshold) / (p0 - ppl)
            return t0 + f * (seconds - t0), s0 + f * (sweeps - s0), "interpolated"
        previous = (sweeps, seconds, ppl)
    return float("inf"), float("inf"), "not reached"


def _time_ratios(times, reference_times):
    """Per-seed ratios of times to a threshold: ``inf`` where only the reference reached
    it, left out where the reference did not."""
    return [t / r for t, r in zip(times, reference_times) if np.isfinite(r) and r > 0]


def ppl_summary(rows, thresholds, reference="tomotopy"):
    """Per system and threshold: every run's crossing, their median and range, and the
    per-seed ratio to ``reference``'s time."""
    systems = list(dict.fromkeys(r["system"] for r in rows))
    repeats = sorted({r.get("repeat", 0) for r in rows})
    runs = {(s, k): [(r["sweeps"], r["train_seconds"], r["perplexity"]) for r in rows
                     if r["system"] == s and r.get("repeat", 0) == k]
            for s in systems for k in repeats}
    out = []
    for s in systems:
        entry = dict(system=s, runs=len(repeats), thresholds={})
        for threshold in thresholds:
            cross = [crossing(runs[s, k], threshold) for k in repeats]
            ref = [crossing(runs[reference, k], threshold)[0] for k in repeats] \
                if (reference, repeats[0]) in runs else []
            mallet = [crossing(runs["pyrmallet", k], threshold)[0] for k in repeats] \
                if ("pyrmallet", repeats[0]) in runs else []
            entry["thresholds"][str(threshold)] = dict(
                seconds=[c[0] for c in cross], sweeps=[c[1] for c in cross],
                how=[c[2] for c in cross],
                seconds_stats=_stats([c[0] for c in cross]),
                sweeps_stats=_stats([c[1] for c in cross]),
                ratio_to_reference=_stats(_time_ratios([c[0] for c in cross], ref))
                if ref and s != reference else None,
                ratio_to_pyrmallet=_stats(_time_ratios([c[0] for c in cross], mallet))
                if mallet and s != "pyrmallet" else None)
        last = max(r["sweeps"] for r in rows)
        entry["last_sweeps"] = last
        entry["ppl_last"] = _stats([r["perplexity"] for r in rows
                                    if r["system"] == s and r["sweeps"] == last])
        entry["train_seconds_last"] = _stats([r["train_seconds"] for r in rows
                                              if r["system"] == s and r["sweeps"] == last])
        out.append(entry)
    return out


def _ppl_at(points, seconds):
    """A run's perplexity at ``seconds`` of training, interpolated linearly in time
    between its checkpoints (``points``: ``(seconds, perplexity)`` in order); NaN before
    its first checkpoint or after its last."""
    times = [t for t, _ in points]
    if not points or seconds < times[0] or seconds > times[-1]:
        return float("nan")
    return float(np.interp(seconds, times, [p for _, p in points]))


def ppl_equal_time(rows, times=(1.0, 2.0, 4.0, 8.0)):
    """Every system's perplexity at equal training times: those of ``times`` that every
    run of every system spans (from its first checkpoint to its last), and the latest
    time they all reached (a restarting system's time at a checkpoint is its run to
    that checkpoint). Per time and system: the runs' values, their median and range."""
    systems = list(dict.fromkeys(r["system"] for r in rows))
    repeats = sorted({r.get("repeat", 0) for r in rows})
    runs = {(s, k): [(r["train_seconds"], r["perplexity"]) for r in rows
                     if r["system"] == s and r.get("repeat", 0) == k]
            for s in systems for k in repeats}
    first = max(points[0][0] for points in runs.values() if points)
    common = np.floor(min(points[-1][0] for points in runs.values() if points) * 100) / 100
    times = sorted({t for t in times if first <= t < common} | {float(common)})
    out = []
    for seconds in times:
        entry = dict(seconds=seconds, common_end=seconds == common, systems={})
        for s in systems:
            values = [_ppl_at(runs[s, k], seconds) for k in repeats]
            entry["systems"][s] = dict(perplexity=values, stats=_stats(values))
        out.append(entry)
    return out


def ppl_markdown(rows, summary, thresholds, checkpoints, K, reference="tomotopy",
                 equal_time=None):
    n_runs = summary[0]["runs"]
    md = [f"\n## Time to document-completion perplexity (BBC, K = {K}, 1 thread)\n\n",
          f"Checkpoints at sweeps {_describe_checkpoints(checkpoints)}. The time to a "
          "threshold is interpolated linearly in perplexity between the first checkpoint at "
          "or below it and the checkpoint before (training time only; evaluation "
          "excluded); a crossing at the first checkpoint is that checkpoint's time, an "
          f"upper bound (marked *). Median over {n_runs} run{'s' * (n_runs > 1)} (seeds 0 to "
          f"{n_runs - 1}, the systems in turn within a run), min-max in brackets; "
          f"'x {reference}', 'x pyrmallet': the median and range of the per-seed ratios of "
          "the times.\n\n"]
    table = []
    for entry in summary:
        row = {"system": entry["system"]}
        for threshold in thresholds:
            t = entry["thresholds"][str(threshold)]  # str: as the JSON keys it
            mark = "*" if any(h.startswith("first") for h in t["how"]) else ""
            reached = sum(np.isfinite(t["seconds"]))
            row[f"time to <= {threshold:g} (s)"] = _cell(*t["seconds_stats"]) + mark
            if 0 < reached < len(t["seconds"]):
                row[f"time to <= {threshold:g} (s)"] += f" [{reached} of {len(t['seconds'])} runs]"
            row[f"sweeps ({threshold:g})"] = _cell(*t["sweeps_stats"], digits=1)
            ratio = t["ratio_to_reference"]
            row[f"x {reference} ({threshold:g})"] = _cell(*ratio) if ratio else ""
            if "ratio_to_pyrmallet" in t and any(e["system"] == "pyrmallet" for e in summary):
                ratio = t["ratio_to_pyrmallet"]
                row[f"x pyrmallet ({threshold:g})"] = _cell(*ratio) if ratio else ""
        row[f"ppl at {entry['last_sweeps']} sweeps"] = _cell(*entry["ppl_last"])
        row["train time (s)"] = _cell(*entry["train_seconds_last"])
        table.append(row)
    md.append(markdown_table(table, list(table[0].keys())))
    if equal_time:
        md.append("\nPerplexity at equal training time, interpolated linearly in time between "
                  "a run's checkpoints; the last column is the latest time every run of every "
                  "system reached. Median (min-max) over the runs:\n\n")
        by_system = []
        for s in (e["system"] for e in summary):
            row = {"system": s}
            for entry in equal_time:
                label = f"{entry['seconds']:g} s" + (" (common end)" if entry["common_end"]
                                                     else "")
                values = entry["systems"][s]["perplexity"]
                row[label] = _cell(*entry["systems"][s]["stats"])
                reached = sum(np.isfinite(values))
                if reached < len(values):
                    row[label] += f" [{reached} of {len(values)} runs]"
            by_system.append(row)
        md.append(markdown_table(by_system, list(by_system[0].keys())))
    md.append("\nPerplexity and training seconds by sweep (medians over the runs):\n\n")
    systems = [e["system"] for e in summary]
    by_sweep = []
    for c in checkpoints:
        row = {"sweeps": c}
        for s in systems:
            mine = [r for r in rows if r["system"] == s and r["sweeps"] == c]
            row[f"{s} ppl"] = _fmt(_stats([r["perplexity"] for r in mine])[0])
            row[f"{s} s"] = _fmt(_stats([r["train_seconds"] for r in mine])[0])
        by_sweep.append(row)
    md.append(markdown_table(by_sweep, list(by_sweep[0].keys())))
    return md


def _describe_checkpoints(checkpoints):
    steps = set(np.diff(checkpoints)) if len(checkpoints) > 1 else set()
    if len(steps) == 1 and checkpoints[0] == next(iter(steps)):
        return f"every {checkpoints[0]} up to {checkpoints[-1]}"
    return ", ".join(str(c) for c in checkpoints)


# --------------------------------------------------------------------------- inference
def _one_thread(fn):
    """``(fn(), seconds)`` with torch on one thread."""
    old = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        tic = time.perf_counter()
        result = fn()
        return result, time.perf_counter() - tic
    finally:
        torch.set_num_threads(old)


def _reference_model(X, K, n_iter=400, seed=12345):
    """An LDAGibbs whose ``transform`` (``n_iter`` iterations, the second half averaged,
    its own seed) gives the reference posterior means of theta: fitted one sweep on
    ``X`` for its vocabulary, then handed each system's topics by
    :func:`_posterior_mean_theta`."""
    return LDAGibbs(n_components=K, max_iter=1, burn_in=0, n_kept_samples=1,
                    optimize_interval=None, evaluate_every=10**9, transform_max_iter=n_iter,
                    device="cpu", random_state=seed, n_jobs=1).fit(X)


def _posterior_mean_theta(reference, X, phi, alpha):
    """The posterior mean of theta of ``X`` under the topics ``phi`` and the prior
    ``alpha``: ``reference.transform`` after setting its fitted ``components_`` and
    ``doc_topic_prior_`` (the same method as ``transform``, run longer)."""
    reference.components_ = np.asarray(phi, dtype=np.float64)
    reference.doc_topic_prior_ = np.asarray(alpha, dtype=np.float64)
    with warnings.catch_warnings():  # documents made only of words a peer dropped
        warnings.simplefilter("ignore", EmptyDocumentWarning)
        return reference.transform(X)


def _known_columns(X, known):
    """``X`` with the counts of the columns outside ``known`` set to zero (same shape)."""
    return sp.csr_matrix(X @ sp.diags(known.astype(X.dtype)))


def _l1_error(theta, reference, X):
    """Mean L1 distance between estimated and reference theta over non-empty documents."""
    keep = np.asarray(X.sum(1)).ravel() > 0
    return float(np.abs(theta[keep] - reference[keep]).sum(1).mean())


def inference_speed(X, X_test, K, n_iter, train_sweeps, label, accuracy=True,
                    with_pyrmallet=True, repeats=5):
    """transform (fixed-phi Gibbs, all documents at once) vs tomotopy's and pyrmallet's
    ``infer``, one thread, the calls alternating over ``repeats`` rounds.

    Besides speed, each system's output is compared with a reference posterior mean of
    theta under *its own* model, made by ``LDAGibbs.transform`` run longer (400
    iterations, another seed; :func:`_posterior_mean_theta`): the mean L1 distance per
    document. That reference is of the same method as ``transform``, not an independent
    one. tomotopy drops test words it has not seen in training, so its reference is
    computed on the test matrix without those words (likewise pyrmallet's).
    """
    n_tokens = int(X_test.sum())
    ours = Ours(X, K, "parallel", 1)
    ours.train(train_sweeps)
    tomo = Tomotopy(X, K, 1)
    tomo.train(train_sweeps)
    Xt = sp.csr_matrix(X_test)
    docs = [tomo.model.make_doc([str(w) for w in words]) for words in doc_words(Xt)]
    mallet = PyrMallet(X, K) if with_pyrmallet else None

    def transform(iterations):
        ours.model.set_params(transform_max_iter=iterations)
        return ours.model.transform(X_test)

    # (system, iterations, call); 100 iterations, then fewer: the accuracy/time trade-off.
    calls = [("sktopics transform", it, lambda it=it: transform(it))
             for it in ((n_iter, n_iter // 4, n_iter // 2) if accuracy else (n_iter,))]
    # tomotopy >= 0.13 returns the documents' topic distributions.
    calls.append(("tomotopy infer", n_iter, lambda: np.asarray(
        tomo.model.infer(docs, iterations=n_iter, workers=1)[0])))
    if mallet is not None:
        mallet.train(train_sweeps)
        # Its count-matrix input is a dense list of lists over its own vocabulary
        # (``infer_strings`` would re-tokenise with its default pattern, not ours).
        counts = Xt[:, mallet.vocabulary()].toarray().astype(np.int64).tolist()
        calls.append(("pyrmallet infer", n_iter, lambda: np.asarray(
            mallet.model.infer(counts, n_iter=n_iter, seed=0))))
        # Less the time of a call with no iteration (reading the lists: 2-10 % here).
        calls.append(("pyrmallet overhead", 0, lambda: mallet.model.infer(counts, n_iter=0,
                                                                          seed=0)))
    seconds = {(name, it): [] for name, it, _ in calls}
    thetas = {}
    for _ in range(repeats):
        for name, it, call in calls:
            thetas[name, it], t = _one_thread(call)
            seconds[name, it].append(t)
    if mallet is not None:
        overhead = seconds.pop(("pyrmallet overhead", 0))
        seconds["pyrmallet infer", n_iter] = [
            t - o for t, o in zip(seconds["pyrmallet infer", n_iter], overhead)]
    rows = []
    for (name, it), times in seconds.items():
        rates = [n_tokens * it / t / 1e6 for t in times]
        median, lo, hi = _stats(rates)
        rows.append(dict(corpus=label, K=K, system=name, iterations=it, repeats=repeats,
                         seconds=_stats(times)[0], seconds_runs=times, Mtok_s=median,
                         Mtok_s_min=lo, Mtok_s_max=hi, Mtok_s_runs=rates))
    tomo_rates = next(r["Mtok_s_runs"] for r in rows if r["system"] == "tomotopy infer")
    for r in rows:
        r["per_iteration_vs_tomotopy"] = _stats(_ratios(r["Mtok_s_runs"], tomo_rates))
    if accuracy:
        reference = _reference_model(X, K)
        known = np.zeros(X.shape[1], dtype=bool)
        known[[int(w) for w in tomo.model.used_vocabs]] = True
        Xt_known = _known_columns(Xt, known)
        ref_ours = _posterior_mean_theta(reference, Xt, ours.model.components_,
                                         ours.model.doc_topic_prior_)
        ref_tomo = _posterior_mean_theta(reference, Xt_known, tomo.topic_word(),
                                         np.asarray(tomo.model.alpha, dtype=np.float64))
        for r in rows:
            theta = thetas[r["system"], r["iterations"]]
            if r["system"] == "sktopics transform":
                r["L1_error"] = _l1_error(theta, ref_ours, Xt)
            if r["system"] == "tomotopy infer":
                r["L1_error"] = _l1_error(theta, ref_tomo, Xt_known)
                r["dropped_oov_tokens"] = int(n_tokens - Xt_known.sum())
            if r["system"] == "pyrmallet infer":
                seen = np.zeros(X.shape[1], dtype=bool)
                seen[mallet.vocabulary()] = True
                Xt_seen = _known_columns(Xt, seen)
                ref_mallet = _posterior_mean_theta(
                    reference, Xt_seen, mallet.topic_word(),
                    np.asarray(mallet.model.alpha, dtype=np.float64))
                r["L1_error"] = _l1_error(theta, ref_mallet, Xt_seen)
                r["dropped_oov_tokens"] = int(n_tokens - Xt_seen.sum())
    for r in rows:
        print(f"  {label} {r['system']:22s} {r['iterations']:4d} it {r['Mtok_s']:7.2f} M tok/s "
              f"({r['Mtok_s_min']:.2f}-{r['Mtok_s_max']:.2f})  L1 error "
              f"{r.get('L1_error', float('nan')):.3f}", flush=True)
    return rows


# --------------------------------------------------------------------------- main
def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--corpora", default="bbc,20ng")
    parser.add_argument("--max-docs", type=int, default=None,
                        help="keep the first documents of each split (trial runs)")
    parser.add_argument("--ks", default="50,1000")
    parser.add_argument("--threads", default="1,2")
    # 40: LDAGibbs's warm fit sets its chain up again at every call (about 13 ms on BBC,
    # a tenth of 10 sweeps' time), which a steady state should not count
    parser.add_argument("--sweeps", type=int, default=40, help="timed sweeps (throughput)")
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5,
                        help="alternating rounds (throughput, inference); the median is "
                             "reported with the min-max range")
    parser.add_argument("--lda-sweeps", type=int, default=5, help="0 skips lda")
    parser.add_argument("--no-sklearn", action="store_true")
    parser.add_argument("--no-pyrmallet", action="store_true")
    parser.add_argument("--samplers", default="parallel,mh",
                        help="sktopics samplers timed in the throughput section")
    parser.add_argument("--ppl-checkpoints", default="10:200:10",
                        help="sweeps at which perplexity is read: start:stop:step (stop "
                             "included) and/or a comma-separated list")
    parser.add_argument("--ppl-thresholds", default="900,870")
    parser.add_argument("--ppl-repeats", type=int, default=None,
                        help="runs of the time-to-perplexity section (seeds 0, 1, ...); "
                             "default --repeats")
    parser.add_argument("--ppl-k", type=int, default=50, help="topics of the time-to-perplexity run")
    parser.add_argument("--ppl-samplers", default="parallel,mh",
                        help="sktopics samplers in the time-to-perplexity run (parallel, "
                             "mh, sparse)")
    parser.add_argument("--quality-sweeps", type=int, default=100,
                        help="sweeps for the equal-sweeps quality run on 20NG (0 skips)")
    parser.add_argument("--nyt", action="store_true", help="also run the quality run on NYT")
    parser.add_argument("--sections", default="throughput,ppl,quality,infer",
                        help="comma-separated subset of throughput,ppl,quality,infer")
    parser.add_argument("--infer-train-sweeps", type=int, default=100,
                        help="training sweeps of the models whose inference is timed")
    parser.add_argument("--quick", action="store_true",
                        help="tiny smoke run (BBC, K = 50, a few sweeps, 2 rounds)")
    add_result_arguments(parser, "gibbs")
    parser.add_argument("--no-figure", action="store_true",
                        help="do not draw the throughput chart")
    parser.add_argument("--replot", action="store_true",
                        help="only redraw <output-dir>/<output-name>.png from its .json")
    args = parser.parse_args(argv)
    if args.quick:
        args.corpora, args.ks, args.sweeps, args.warmup = "bbc", "50", 2, 1
        args.ppl_checkpoints, args.quality_sweeps, args.lda_sweeps = "5:20:5", 0, 2
        args.infer_train_sweeps, args.repeats = 5, 2
    output_dir = Path(args.output_dir)
    figure = output_dir / f"{args.output_name}.png"
    if args.replot:
        plot_throughput(json.loads((output_dir / f"{args.output_name}.json").read_text())
                        ["throughput"], figure)
        return
    if args.report_only:
        return report_only([output_dir / f"{args.output_name}.json"], report)

    info = machine()
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
    load = MachineLoad().__enter__()

    names = set(args.corpora.split(",")) | ({"nyt"} if args.nyt else set())
    corpora = load_corpora(args.data_home, names, args.max_docs)
    ks = [int(k) for k in args.ks.split(",")]
    threads_list = [int(t) for t in args.threads.split(",")]
    checkpoints = parse_checkpoints(args.ppl_checkpoints)
    thresholds = [float(t) for t in args.ppl_thresholds.split(",")]
    ppl_repeats = args.ppl_repeats or args.repeats

    sections = set(args.sections.split(","))
    through, ppl_rows, quality_rows, infer_rows = [], [], [], []
    if "throughput" in sections:
        print("== throughput", flush=True)
        through = throughput({k: v for k, v in corpora.items() if k in ("BBC", "20NG")}, ks,
                             threads_list, args.sweeps, args.warmup, args.lda_sweeps,
                             not args.no_sklearn, args.samplers.split(","), args.repeats,
                             not args.no_pyrmallet)

    if "BBC" in corpora and "ppl" in sections:
        K = args.ppl_k
        print(f"== time to perplexity (BBC, K={K})", flush=True)
        X, X_test = corpora["BBC"]
        systems = [(f"sktopics {a}", lambda seed, a=a: Ours(X, K, a, 1, seed=seed))
                   for a in args.ppl_samplers.split(",")]
        systems.append(("tomotopy", lambda seed: Tomotopy(X, K, 1, seed=seed)))
        if not args.no_pyrmallet:
            systems.append(("pyrmallet", lambda seed: PyrMallet(X, K, seed=seed)))
        # 2-thread time to perplexity follows from the throughput ratio: the
        # sktopics chain is bit-identical at any thread count.
        ppl_rows += time_to_perplexity(X, X_test, K, checkpoints, systems, "BBC", ppl_repeats)

    if args.quality_sweeps and "quality" in sections:
        print("== quality at equal sweeps", flush=True)
        for label in ("20NG", "NYT"):
            if label not in corpora:
                continue
            X, X_test = corpora[label]
            systems = [("sktopics parallel", lambda seed: Ours(X, 50, "parallel", 1, seed)),
                       ("tomotopy", lambda seed: Tomotopy(X, 50, 1, seed))]
            if not args.no_pyrmallet:
                systems.append(("pyrmallet", lambda seed: PyrMallet(X, 50, seed)))
            quality_rows += time_to_perplexity(X, X_test, 50, [args.quality_sweeps], systems,
                                               label)

    if "infer" in sections:
        print("== inference speed (transform vs tomotopy infer, 1 thread)", flush=True)
        for label in ("20NG", "BBC"):
            if label in corpora:
                X, X_test = corpora[label]
                infer_rows += inference_speed(X, X_test, 50, 100, args.infer_train_sweeps, label,
                                              with_pyrmallet=not args.no_pyrmallet,
                                              repeats=args.repeats)

    load.__exit__(None, None, None)
    info["load"] = load.summary()
    info["uptime_start"], info["uptime_end"] = load.uptime_start, load.uptime_end
    info["total_seconds"] = time.perf_counter() - tic
    ratios = throughput_table(through, threads_list)[1] if through else []
    payload = dict(machine=info, args=vars(args), throughput=through, throughput_ratios=ratios,
                   time_to_perplexity=ppl_rows,
                   time_to_perplexity_summary=ppl_summary(ppl_rows, thresholds) if ppl_rows
                   else [], time_to_perplexity_equal_time=ppl_equal_time(ppl_rows)
                   if ppl_rows else [], quality=quality_rows, inference=infer_rows)
    write_results(args.output_name, payload, report, directory=output_dir)
    if through and not args.no_figure:
        plot_throughput(through, figure)


def report(payload):
    """The results page of :func:`main`'s JSON."""
    info, args = payload["machine"], payload["args"]
    if info.get("load"):
        load = load_sentence(info["load"])
    else:  # an early results file: the ``uptime`` lines only
        load = (f"Load: start `{info.get('uptime_start')}`; end `{info.get('uptime_end')}`.")
    md = ["# LDAGibbs benchmark\n\n",
          f"Machine: {info['cpu']}" + (f" ({info['simd']})" if info.get("simd") else "")
          + f", {info['cpu_count']} cores, no GPU; commit {commit_text(info)}; torch "
          f"{info['torch']}, "
          + "".join(f"{peer} {info[peer]}, " for peer in ("tomotopy", "pyrmallet", "lda")
                    if info.get(peer))
          + f"scikit-learn {info['scikit-learn']}.\n\n",
          f"{load} Compare ratios within this run; absolute values move with "
          "the machine and its load. OMP_WAIT_POLICY "
          f"{info.get('OMP_WAIT_POLICY') or 'unset (spin, then sleep)'}.\n\n",
          f"Total run time {info['total_seconds']:.0f} s.\n"]
    through = payload["throughput"]
    if through:
        ks = [int(k) for k in args["ks"].split(",")]
        threads_list = [int(t) for t in args["threads"].split(",")]
        sweeps, warmup, lda_sweeps = args["sweeps"], args["warmup"], args["lda_sweeps"]
        md.append("\n## Throughput (M tokens/s; sweeps for Gibbs, epochs for VB)\n\n"
                  f"Median over {args['repeats']} alternating rounds, min-max in brackets. A "
                  f"round times {sweeps} sweeps of each Gibbs system after {warmup} "
                  f"warm-up sweep{'s' * (warmup != 1)}"
                  + (" (K >= 200: a fifth of them for the parallel sampler, half for "
                     "tomotopy)" if max(ks) >= 200 else "")
                  + f", {lda_sweeps} sweeps of lda"
                  + (" (a fifth at K >= 200)" if max(ks) >= 200 else "")
                  + " and 2 epochs of scikit-learn; pyrmallet, lda and scikit-learn are "
                  "timed as the difference of two fresh runs in the round. A ratio is the "
                  "median (min-max) of the per-round ratios.\n\n")
        md.append(throughput_table(through, threads_list)[0])
    ppl_rows = payload["time_to_perplexity"]
    if ppl_rows:
        thresholds = [float(t) for t in args["ppl_thresholds"].split(",")]
        checkpoints = sorted({r["sweeps"] for r in ppl_rows})
        md += ppl_markdown(ppl_rows, payload["time_to_perplexity_summary"], thresholds,
                           checkpoints, args["ppl_k"],
                           equal_time=ppl_equal_time(ppl_rows))
    if payload["quality"]:
        md.append(f"\n## Quality at equal sweeps ({args['quality_sweeps']} sweeps, K = 50, "
                  "1 thread, one run)\n\n")
        md.append(markdown_table(payload["quality"], ["corpus", "system", "sweeps",
                                                      "train_seconds", "perplexity"]))
    infer_rows = payload["inference"]
    if infer_rows:
        md.append("\n## Inference on held-out documents (K = 50, 1 thread, models trained "
                  f"{args['infer_train_sweeps']} sweeps)\n\n"
                  f"Speed: median over {args['repeats']} alternating rounds, min-max in "
                  "brackets (M tokens x iterations / s); 'per iteration / tomotopy': median "
                  "(min-max) of the per-round ratios. `L1_error`: mean L1 distance per "
                  "document to a reference posterior mean of theta under the system's own "
                  "model, made by **sktopics' own fixed-topic sampler** (the kernel of "
                  "`transform`, 400 iterations, another seed): a reference of the same "
                  "method as `transform`, not an independent one.\n\n")
        table = [dict(corpus=r["corpus"], system=r["system"], iterations=r["iterations"],
                      seconds=_fmt(r["seconds"]),
                      Mtok_s=_cell(r["Mtok_s"], r["Mtok_s_min"], r["Mtok_s_max"]),
                      **{"per iteration / tomotopy": _cell(*r["per_iteration_vs_tomotopy"])},
                      L1_error=r.get("L1_error")) for r in infer_rows]
        md.append(markdown_table(table, ["corpus", "system", "iterations", "seconds", "Mtok_s",
                                         "per iteration / tomotopy", "L1_error"]))
    return "".join(md)


if __name__ == "__main__":
    main()
