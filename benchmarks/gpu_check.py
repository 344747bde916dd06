"""The GPU kit: the test suite and the GPU benchmarks on a machine with a CUDA GPU.

One command, about 10 minutes at most::

    python benchmarks/gpu_check.py --output DIR

1. **The whole test suite on the GPU machine** with ``SKTOPICS_TEST_DEVICE=auto``: every
   estimator the tests fit runs on CUDA, every evaluation that is not given a device
   picks CUDA (``device="auto"``, ``kernel="auto"``), and the CUDA-only tests of
   ``tests/test_gpu.py`` run (CPU and CUDA random numbers bit-identical, two CUDA fits
   identical, fit / score / transform / partial_fit on CUDA, evaluation across devices
   both ways, AIS / ratio-AIS / iteration-AIS / left-to-right / PAM AIS / HMC on CUDA
   against exact enumeration, a CUDA pickle loaded where CUDA is hidden, the global
   random state of every device, deterministic mode, host syncs per step of the hot
   loops).
2. **The GPU benchmarks**, each in its own process with a time limit, so that a slow
   one is reported rather than eating the others' time:

   * LDAGibbs steady-state tokens/s on 20 Newsgroups (AVITM's training set tiled 16
     times, 15.9 M tokens) at K = 50 (parallel sweep) and K = 1024 (parallel sweep,
     which ``algorithm="auto"`` uses on a GPU, and Metropolis-Hastings for
     comparison); goals: >= 2 G tokens/s at K = 50, >= 1.5 G at K = 1024. Timed on
     the sampler's own state after 50 sweeps: five blocks of 50 sweeps, each
     bracketed by CUDA events (median and range), checked against the same sweeps
     inside pairs of fits, the profiler's kernel time and the memory-traffic floor
     over the copy bandwidth measured in the run (``_sweep_timing.py``);
   * ProdLDA, 100 epochs of 20 Newsgroups, K = 50, batch 200, with the settings of
     the plain torch loop of ``_plain_vae.py`` (the original ProdLDA code's), and
     that plain loop with the same settings on the same device in the same run;
     goal: <= 5 s;
   * PAMVI 50 super- / 100 sub-topics on 20 Newsgroups, a fit with the default
     settings (100 epochs), against the 11 minutes the aviPAM paper reports; goal:
     <= 20 s;
   * AIS, 1,000 temperatures over the whole 20 Newsgroups test set (K = 50, one
     chain, ``kernel="auto"``); goal: <= 10 s.

   The report says, for each benchmark, whether its step ran (``ran``, ``failed``,
   ``timed out``) and, separately, whether each goal is met or missed, computed from
   the measured numbers.

Every process the kit starts (the suite, whose tests start processes of their own,
and each benchmark) finds the package of this checkout on ``PYTHONPATH``, installed
or not. The commit measured is ``$SKTOPICS_COMMIT`` when set (a copy of the tree
without its own git metadata should set it), else git's ``HEAD``.

Results: ``gpu_check.json``, ``gpu_check.md`` (the whole report) and ``gpu_check.rst``
(the benchmarks against their goals, the table the documentation includes; both
drawn from the JSON) in ``benchmarks/results/`` and in ``--output`` (with the suite's
JUnit XML and log), rewritten after every step, so that a run cut short still leaves
what it measured. The corpora are read from
``--data-home`` (default: ``$SKTOPICS_DATA``, else ``../shared/data`` beside the
checkout). Where ``pytest-xdist`` is installed the suite runs in up to 8 processes.

``--smoke`` runs the same steps on the CPU at toy sizes, to check the kit itself on a
machine without a GPU (its numbers mean nothing; its suite step runs only
``tests/test_gpu.py``, which skips without CUDA); it writes only to ``--output`` (a new
temporary folder when not given), never to ``benchmarks/results/``.
``--report-from PATH`` redraws the report and the table beside a ``gpu_check.json``
without measuring anything; ``--report-only`` does so for ``benchmarks/results/``.
"""

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (  # noqa: E402
    RESULTS,
    default_data_home,
    machine,
    markdown_table,
    markdown_to_rst,
    write_report,
)
from _sweep_timing import (  # noqa: E402
    copy_bandwidth,
    fit_pairs,
    profile_sweeps,
    sweeper,
    time_sweeps,
    traffic_floor_bytes,
)

ROOT = Path(__file__).resolve().parents[1]

#: (name, seconds allowed, goal as text). Each step runs in a process with this limit,
#: so that a slow step is reported rather than holding up the others; with the
#: suite's limit the whole kit stays near 10 minutes.
BENCHMARKS = [
    ("gibbs", 240, ">= 2 G tokens/s at K = 50, >= 1.5 G at K = 1024"),
    ("prodlda", 120, "100 epochs <= 5 s"),
    ("pamvi", 120, "default fit of 50 / 100 <= 20 s"),
    ("ais", 90, "1,000 temperatures <= 10 s"),
    ("distributed", 90, "data_parallel with NCCL (world size 1) gives the one-process fit"),
]

#: The plain loop's settings (``_plain_vae.py``, the original ProdLDA code's), given to
#: ProdLDA too so that both codes train the same model the same way (as in
#: ``bench_neural_speed.py``).
SAME_AS_PLAIN = {"dropout": 0.6, "learning_rate": 2e-3, "batch_size": 200,
                 "batch_sampling": "with_replacement"}


# --------------------------------------------------------------------------- benchmarks (child)


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _timed(fn):
    _sync()
    tic = time.perf_counter()
    out = fn()
    _sync()
    return out, time.perf_counter() - tic


def _20news(data_home, subset):
    from sktopics.datasets import load_20news_avitm

    X = load_20news_avitm(data_home, subset=subset).data.astype(np.float64)
    return X[np.asarray(X.sum(1)).ravel() > 0]


def bench_gibbs(data_home, device, smoke, save):
    """Steady-state sweeps on the sampler's own state: a burn-in, then blocks of sweeps
    timed by CUDA events, repeated (median and range); the same sweeps inside pairs of
    fits (both fits' times and their difference); the profiler's device time; the
    memory-traffic floor over the measured copy bandwidth (``_sweep_timing``)."""
    import scipy.sparse as sp
    import torch

    from sktopics import LDAGibbs

    train = _20news(data_home, "train")
    X = train[:500] if smoke else sp.vstack([train] * 16).tocsr()
    n_tokens = int(X.sum())
    plan = (dict(burn_in=2, timed=2, repeats=2) if smoke
            else dict(burn_in=50, timed=50, repeats=5))
    result = {"rows": [], "plan": plan}
    on_gpu = torch.device(device).type == "cuda"
    if on_gpu:  # the floor and the profiler's kernel times are a GPU's
        props = torch.cuda.get_device_properties(device)
        result.update(copy_bandwidth_bytes_per_s=copy_bandwidth(device),
                      l2_cache_bytes=getattr(props, "L2_cache_size", None))
    for K, algorithm, with_fits in ((50, "parallel", True), (1024, "parallel", True),
                                    (1024, "mh", False)):
        state, sweep = sweeper(X, K, algorithm, device)
        sweeps = time_sweeps(sweep, device, **plan)
        profile = profile_sweeps(sweep) if on_gpu else None
        del state, sweep
        if on_gpu:
            torch.cuda.empty_cache()
        median_s, fastest_s, slowest_s = (sweeps[f"{k}_ms"] / 1e3 for k in ("median", "min", "max"))
        row = {"K": K, "algorithm": algorithm, "tokens": n_tokens, "sweep": sweeps,
               "s_per_sweep": median_s, "tokens_per_s": n_tokens / median_s,
               "tokens_per_s_range": [n_tokens / slowest_s, n_tokens / fastest_s],
               "profile": profile}
        if algorithm == "parallel" and on_gpu:
            floor, table_bytes = traffic_floor_bytes(X, K)
            floor_ms = 1e3 * floor / result["copy_bandwidth_bytes_per_s"]
            l2 = result["l2_cache_bytes"]
            binding = l2 is not None and table_bytes > 4 * l2  # else cache serves the rows
            row.update(floor_ms=floor_ms, document_table_bytes=table_bytes,
                       floor_binding=binding,
                       below_floor=binding and sweeps["min_ms"] < floor_ms)
        if with_fits:
            def fit(n):
                # One kept sample (the last state), no evaluations, no prior updates:
                # the two fits differ by their sweeps only.
                return LDAGibbs(K, algorithm=algorithm, max_iter=n, optimize_interval=None,
                                n_kept_samples=1, evaluate_every=10**6, device=device,
                                random_state=0).fit(X)

            row["fits"] = fit_pairs(fit, device, **plan)
        result["rows"].append(row)
        save(result)  # a row at a time: a time-out keeps the rows measured
    from sktopics._gibbs import _fused

    # A fused kernel that failed would have left the sweeps to the eager kernels.
    result["fused_kernel_failures"] = [f"{device} at BLOCK_K={block_k}: {cause}" for (
        device, block_k), cause in _fused._failures.items()]
    return result


def _plain_loop_seconds(X, n_topics, epochs, device, seed=0):
    """Seconds of ``epochs`` epochs of the plain torch loop of ``_plain_vae.py`` on ``device``.

    The loop of ``_plain_vae.train_plain`` (which runs on the CPU only) with the model
    and the dense copy of the corpus on ``device``: the same batches of 200 drawn with
    replacement, the same Adam settings.
    """
    import torch
    from _plain_vae import PlainVAE

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    data = torch.from_numpy(X.toarray().astype(np.float32)).to(device)
    model = PlainVAE(X.shape[1], n_topics, mixture=False).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=SAME_AS_PLAIN["learning_rate"],
                                 betas=(0.99, 0.999))
    batch_size = SAME_AS_PLAIN["batch_size"]
    n_batches = X.shape[0] // batch_size

    def train():
        model.train()
        for _ in range(epochs):
            for _ in range(n_batches):
                rows = torch.from_numpy(rng.integers(0, X.shape[0], batch_size)).to(device)
                loss = model(data[rows])
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()

    _, seconds = _timed(train)
    return seconds


def bench_prodlda(data_home, device, smoke, save):
    from sktopics import ProdLDA
    from sktopics.metrics import npmi_coherence, topic_diversity

    train, test = _20news(data_home, "train"), _20news(data_home, "test")
    if smoke:
        train = train[:1000]
    epochs = 2 if smoke else 100
    params = dict(SAME_AS_PLAIN, device=device, random_state=0)
    ProdLDA(50, max_iter=1, **params).fit(train)  # warm-up
    model, seconds = _timed(lambda: ProdLDA(50, max_iter=epochs, **params).fit(train))
    result = {"seconds": seconds, "epochs": epochs, "s_per_epoch": seconds / epochs,
              "settings": SAME_AS_PLAIN,
              "npmi": float(npmi_coherence(model, test).mean),
              "topic_diversity": float(topic_diversity(model))}
    save(result)  # kept if the rest does not finish in time
    os.environ["SKTOPICS_CUDA_GRAPHS"] = "0"  # the same fit with eager steps
    try:
        _, result["eager_seconds"] = _timed(
            lambda: ProdLDA(50, max_iter=epochs, **params).fit(train))
    finally:
        del os.environ["SKTOPICS_CUDA_GRAPHS"]
    save(result)
    _plain_loop_seconds(train, 50, 1, device)  # warm-up
    plain = _plain_loop_seconds(train, 50, epochs, device)
    result.update(plain_seconds=plain, plain_s_per_epoch=plain / epochs,
                  ratio_to_plain=seconds / plain)
    return result


def bench_pamvi(data_home, device, smoke, save):
    """A fit with the default settings, timed whole."""
    from sktopics import PAMVI
    from sktopics.metrics import npmi_coherence, topic_diversity

    train, test = _20news(data_home, "train"), _20news(data_home, "test")
    params = dict(structure=(50, 100), device=device, random_state=0)
    if smoke:
        train, params["max_iter"] = train[:500], 1
    PAMVI(**dict(params, max_iter=1)).fit(train[:500])  # warm-up
    model, seconds = _timed(lambda: PAMVI(**params).fit(train))
    return {"seconds": seconds, "epochs": int(model.n_iter_), "s_per_epoch": seconds / model.n_iter_,
            "npmi": float(npmi_coherence(model, test).mean),
            "topic_diversity": float(topic_diversity(model))}


def bench_ais(data_home, device, smoke, save):
    from sktopics import LDAGibbs
    from sktopics.model_selection import ais_log_likelihood

    train, test = _20news(data_home, "train"), _20news(data_home, "test")
    if smoke:
        train, test = train[:1000], test[:100]
    model = LDAGibbs(50, doc_topic_prior=0.1, optimize_interval=None,
                     max_iter=5 if smoke else 100, device=device, random_state=0).fit(train)
    kw = dict(n_chains=1, device=device, random_state=0)
    ais_log_likelihood(model, test[:50], n_temperatures=2, **kw)  # warm-up
    temperatures = 5 if smoke else 1000
    result, seconds = _timed(lambda: ais_log_likelihood(model, test, n_temperatures=temperatures,
                                                        **kw))
    return {"seconds": seconds, "n_temperatures": temperatures, "n_docs": test.shape[0],
            "n_tokens": int(test.sum()), "kernel": result.settings["kernel"],
            "token_updates_per_s": result.n_token_updates / seconds,
            "log_lik_per_token": float(result.per_token)}


def bench_distributed(data_home, device, smoke, save):
    """LDAGibbs inside ``data_parallel()`` over a one-process group (NCCL on a GPU, gloo
    on the CPU): the data-parallel code path runs on the device and gives the
    one-process fit. At world size 1 the exchanges themselves are skipped, so NCCL's
    collectives are not exercised here; that needs two GPUs."""
    import tempfile

    import torch.distributed as dist

    from sktopics import LDAGibbs
    from sktopics.distributed import data_parallel

    train = _20news(data_home, "train")
    if smoke:
        train = train[:500]
    backend = "nccl" if device == "cuda" else "gloo"
    dist.init_process_group(backend, init_method=f"file://{tempfile.mktemp()}", rank=0,
                            world_size=1)
    params = dict(n_components=50, algorithm="parallel", max_iter=3 if smoke else 50,
                  device=device, random_state=0)
    try:
        # Warm both paths first (CUDA context, kernels, the process group's first
        # collective), so that neither timing includes start-up costs the other skips.
        warm = dict(params, max_iter=2)
        LDAGibbs(**warm).fit(train)
        with data_parallel():
            LDAGibbs(**warm).fit(train)
        alone, alone_s = _timed(lambda: LDAGibbs(**params).fit(train))
        with data_parallel():
            parallel, parallel_s = _timed(lambda: LDAGibbs(**params).fit(train))
    finally:
        dist.destroy_process_group()
    return {"backend": backend, "seconds_alone": alone_s, "seconds_data_parallel": parallel_s,
            "max_abs_difference": float(np.abs(parallel.components_ - alone.components_).max())}


def run_child(name, data_home, out, smoke):
    fn = {"gibbs": bench_gibbs, "prodlda": bench_prodlda, "pamvi": bench_pamvi,
          "ais": bench_ais, "distributed": bench_distributed}[name]

    def save(partial):
        Path(out).write_text(json.dumps(partial, default=float))

    save(fn(data_home, "cpu" if smoke else "cuda", smoke, save))


# --------------------------------------------------------------------------- goals


def goals(name, result):
    """The goals of one benchmark against its measured numbers.

    Returns a list of ``(what, measured, goal, met)``; ``met`` is None when the number
    the goal needs was not measured (the step failed or timed out before it).
    """
    if name == "gibbs":
        rows = {(r["K"], r["algorithm"]): r["tokens_per_s"] for r in result.get("rows", [])}
        checks = []
        for K, threshold, text in ((50, 2e9, ">= 2 G tokens/s"), (1024, 1.5e9, ">= 1.5 G tokens/s")):
            rate = rows.get((K, "parallel"))
            checks.append((f"K = {K}, parallel sweep",
                           "not measured" if rate is None else f"{rate / 1e6:,.0f} M tokens/s",
                           text, None if rate is None else rate >= threshold))
        return checks
    if name == "prodlda":
        seconds = result.get("seconds")
        return [(f"{result.get('epochs', 100)} epochs",
                 "not measured" if seconds is None else f"{seconds:.2f} s",
                 "<= 5 s", None if seconds is None else seconds <= 5)]
    if name == "pamvi":
        seconds = result.get("seconds")
        return [(f"default fit ({result.get('epochs', '?')} epochs)",
                 "not measured" if seconds is None else f"{seconds:.2f} s",
                 "<= 20 s", None if seconds is None else seconds <= 20)]
    if name == "ais":
        seconds = result.get("seconds")
        return [("1,000 temperatures", "not measured" if seconds is None else f"{seconds:.2f} s",
                 "<= 10 s", None if seconds is None else seconds <= 10)]
    if name == "distributed":
        gap = result.get("max_abs_difference")
        return [(f"LDAGibbs in data_parallel() ({result.get('backend', '?')}, world size 1)",
                 "not measured" if gap is None else f"largest difference {gap:.1e}",
                 "<= 1e-6 from the one-process fit", None if gap is None else gap <= 1e-6)]
    return []


def _verdict(met):
    return "not measured" if met is None else "**met**" if met else "**missed**"


# --------------------------------------------------------------------------- the kit (parent)


def environment():
    import torch

    info = machine()
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(cuda=torch.version.cuda, gpu_memory_gib=props.total_memory / 2**30,
                    gpu_capability=f"{props.major}.{props.minor}",
                    gpu_multiprocessors=props.multi_processor_count)
    # A copy of the tree without its git metadata (or with stale metadata) can name
    # its commit in SKTOPICS_COMMIT.
    info["commit_from"] = "SKTOPICS_COMMIT" if os.environ.get("SKTOPICS_COMMIT") else "git"
    info["git_commit"] = (os.environ.get("SKTOPICS_COMMIT") or info.get("git_commit")
                          or "unknown")
    return info


def child_environment(**extra):
    """The environment of the kit's child processes: this checkout's package first on
    ``PYTHONPATH``, so that it imports from any working directory, installed or not."""
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **extra}


def run_suite(timeout, out_dir, data_home, paths=()):
    """The whole suite (or ``paths``) with the estimators on CUDA; a summary parsed from
    JUnit XML."""
    xml = out_dir / "gpu_suite.xml"
    env = child_environment(SKTOPICS_TEST_DEVICE="auto", SKTOPICS_DATA=str(data_home),
                            PYTHONUNBUFFERED="1")
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
           f"--junitxml={xml}", "-o", "junit_family=xunit1", "--durations=10", *paths]
    if importlib.util.find_spec("xdist") is not None:
        # Small fits on a GPU are launch-bound: one process runs the suite 3x slower
        # than the CPU does, and workers share the device well.
        cmd += ["-n", str(min(8, os.cpu_count() or 1))]
    tic = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=timeout)
        log = proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        log = f"timed out after {timeout} s\n" + (exc.stdout or b"").decode(errors="replace")
    (out_dir / "gpu_suite.log").write_text(log)
    summary = {"seconds": time.perf_counter() - tic, "output_tail": log[-3000:],
               "log": str(out_dir / "gpu_suite.log")}
    if not xml.exists():
        return summary
    suite = ET.parse(xml).getroot()
    suite = suite if suite.tag == "testsuite" else suite.find("testsuite")
    cases = suite.findall("testcase")
    failures, gpu, properties = [], {"passed": 0, "failed": 0, "skipped": 0}, {}
    for case in cases:
        name = f"{case.get('classname')}::{case.get('name')}"
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        skipped = case.find("skipped") is not None
        if problem is not None:
            failures.append({"test": name, "message": (problem.get("message") or "")[:400]})
        if "test_gpu" in name:
            gpu["failed" if problem is not None else "skipped" if skipped else "passed"] += 1
        for prop in case.iter("property"):
            properties[f"{case.get('name')}:{prop.get('name')}"] = prop.get("value")
    summary.update(tests=len(cases), failed=len(failures), failures=failures,
                   skipped=sum(c.find("skipped") is not None for c in cases),
                   gpu_tests=gpu, properties=properties)
    return summary


def run_benchmark(name, limit, data_home, work_dir, smoke):
    out = Path(work_dir) / f"{name}.json"
    cmd = [sys.executable, __file__, "--child", name, "--data-home", str(data_home),
           "--child-out", str(out)] + (["--smoke"] if smoke else [])
    tic = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=ROOT, env=child_environment(), capture_output=True,
                              text=True, timeout=limit)
        status = "ran" if proc.returncode == 0 else f"failed: {proc.stderr[-1500:]}"
    except subprocess.TimeoutExpired:
        status = f"timed out after {limit} s"
    result = json.loads(out.read_text()) if out.exists() else {}
    result = {"status": status, "wall_s": time.perf_counter() - tic, **result}
    result["goals"] = [{"what": what, "measured": measured, "goal": goal, "met": met}
                       for what, measured, goal, met in goals(name, result)]
    return result


def _step(row):
    """Whether the step ran: ``ran``, ``failed``, ``timed out`` or ``not run``."""
    status = row.get("status", "not run")
    if status == "ok":  # the word of the kit's earlier result files
        return "ran"
    return status.split(":")[0]


def report(results):
    env = results["environment"]
    lines = ["# GPU kit (`benchmarks/gpu_check.py`)", ""]
    if results.get("smoke"):
        lines += ["**Smoke run on the CPU at toy sizes: a check of the kit, not a measurement.**",
                  ""]
    device = (f"{env.get('gpu')} ({env.get('gpu_memory_gib', 0):.0f} GiB, CUDA {env.get('cuda')})"
              if env.get("gpu") else f"CPU ({env.get('cpu')})")
    lines += [f"Device: {device}, torch {env.get('torch')}, {env.get('cpu_count')} CPU cores; "
              f"commit {env.get('git_commit')}.", ""]
    if env.get("note"):
        lines += [env["note"], ""]
    suite = results.get("suite")
    if suite:
        lines += ["## Test suite on the GPU machine (`SKTOPICS_TEST_DEVICE=auto`)", "",
                  f"{suite.get('tests', '?')} tests, {suite.get('failed', '?')} failed, "
                  f"{suite.get('skipped', '?')} skipped in {suite['seconds']:.0f} s; "
                  f"GPU-only tests: {suite.get('gpu_tests')}.", ""]
        for failure in suite.get("failures", []):
            lines.append(f"- FAILED `{failure['test']}`: {failure['message'][:200]}")
        if suite.get("properties"):
            lines += ["", "Host synchronisations per step of the hot loops: "
                      + ", ".join(f"{k} = {v}" for k, v in suite["properties"].items())]
        lines.append("")
    bench = results.get("benchmarks", {})
    if not bench:
        return "\n".join(lines) + "\n"
    lines += ["## Goals", "",
              "Whether each goal is met is computed from the measured numbers; whether "
              "the step ran is in the last column.", ""]
    table = []
    for name, _, _ in BENCHMARKS:
        row = bench.get(name)
        if row is None:
            continue
        for what, measured, goal, met in goals(name, row):
            table.append({"benchmark": name, "what": what, "measured": measured,
                          "goal": goal, "goal met": _verdict(met), "step": _step(row)})
    lines += [markdown_table(table, ["benchmark", "what", "measured", "goal", "goal met",
                                     "step"]), "## Measurements", ""]
    gibbs = bench.get("gibbs", {})
    if gibbs:
        lines += [f"LDAGibbs, steady state (step: {_step(gibbs)}):", ""] + gibbs_lines(gibbs)
    prodlda = bench.get("prodlda")
    if prodlda:
        text = (f"- ProdLDA, 20NG K = 50, batch 200, {prodlda.get('epochs', 100)} epochs "
                f"(step: {_step(prodlda)}"
                + (f", commit {prodlda['git_commit']}" if "git_commit" in prodlda else "") + ")")
        if "seconds" in prodlda:
            text += (f": {prodlda['seconds']:.2f} s ({prodlda['s_per_epoch']:.3f} s an epoch), "
                     f"NPMI {prodlda['npmi']:.3f}, topic diversity "
                     f"{prodlda['topic_diversity']:.3f}")
        if "settings" in prodlda:
            text += ("; settings of the plain loop (dropout 0.6, learning rate 2e-3, batches "
                     "drawn with replacement)")
        if "eager_seconds" in prodlda:
            text += (f"; without CUDA graphs (SKTOPICS_CUDA_GRAPHS=0) "
                     f"{prodlda['eager_seconds']:.2f} s")
        if "plain_seconds" in prodlda:
            text += (f"; the plain torch loop of `_plain_vae.py`, same settings, same device: "
                     f"{prodlda['plain_seconds']:.2f} s (sktopics / plain = "
                     f"{prodlda['ratio_to_plain']:.2f})")
        elif "seconds" in prodlda:
            text += "; the plain torch loop was not timed in this run"
        lines.append(text)
    pamvi = bench.get("pamvi")
    if pamvi:
        text = f"- PAMVI (50, 100), 20NG, default settings (step: {_step(pamvi)})"
        if "seconds" in pamvi:
            text += (f": {pamvi['epochs']} epochs in {pamvi['seconds']:.2f} s "
                     f"({pamvi['s_per_epoch']:.3f} s an epoch); NPMI {pamvi['npmi']:.3f}, "
                     f"topic diversity {pamvi['topic_diversity']:.3f}")
        lines.append(text)
    ais = bench.get("ais")
    if ais:
        text = f"- AIS, 1,000 temperatures, 20NG test set, one chain (step: {_step(ais)})"
        if "seconds" in ais:
            text += (f": {ais['seconds']:.2f} s, {ais['n_docs']} documents, {ais['n_tokens']} "
                     f"tokens, kernel {ais['kernel']}, {ais['token_updates_per_s'] / 1e6:.1f} M "
                     f"token-updates/s, log-likelihood per token {ais['log_lik_per_token']:.3f}")
        lines.append(text)
    distributed = bench.get("distributed")
    if distributed and "seconds_alone" in distributed:
        lines.append(f"- LDAGibbs K = 50, 50 sweeps of 20NG inside `data_parallel()` over a "
                     f"one-process {distributed['backend']} group: "
                     f"{distributed['seconds_data_parallel']:.2f} s against "
                     f"{distributed['seconds_alone']:.2f} s outside it, components within "
                     f"{distributed['max_abs_difference']:.1e} (step: {_step(distributed)})")
    if gibbs.get("fused_kernel_failures"):
        lines.append(f"- The fused Gibbs kernel failed: {gibbs['fused_kernel_failures']}")
    failed = [f"- `{name}`: {bench[name]['status']}" for name, _, _ in BENCHMARKS
              if name in bench and _step(bench[name]) not in ("ran", "not run")]
    if failed:
        lines += ["", "Steps that did not finish:", ""] + failed
    return "\n".join(lines) + "\n"


def gibbs_lines(gibbs):
    """The Gibbs measurements in words and a table: each sweep's median and range, and
    the checks that come with it (fits, profiler, memory-traffic floor)."""
    rows, notes = [], []
    for r in gibbs.get("rows", []):
        sweep = r.get("sweep")
        if sweep is None:  # a result of the kit before sweeps were timed on their own
            rows.append({"K": r["K"], "sampler": r["algorithm"], "ms/sweep": r["s_per_sweep"] * 1e3,
                         "M tokens/s": r["tokens_per_s"] / 1e6})
            continue
        slow, fast = r["tokens_per_s_range"]
        rows.append({
            "K": r["K"], "sampler": r["algorithm"],
            "ms/sweep (median, range)": f"{sweep['median_ms']:.2f} ({sweep['min_ms']:.2f}-"
                                        f"{sweep['max_ms']:.2f})",
            "M tokens/s": f"{r['tokens_per_s'] / 1e6:,.0f} ({slow / 1e6:,.0f}-{fast / 1e6:,.0f})",
            "profiler ms/sweep": (f"{r['profile']['kernel_ms_per_sweep']:.2f}"
                                  if r.get("profile") else ""),
            "floor ms": (f"{r['floor_ms']:.2f}" + ("" if r["floor_binding"] else " (cached)")
                         if "floor_ms" in r else ""),
            "fits' difference ms/sweep": (f"{r['fits']['median_ms']:.2f} ({r['fits']['min_ms']:.2f}-"
                                          f"{r['fits']['max_ms']:.2f})" if "fits" in r else ""),
        })
        if r.get("below_floor"):
            notes.append(f"- K = {r['K']} ({r['algorithm']}): a block of sweeps took less than "
                         "the memory-traffic floor: not a measurement.")
        if "fits" in r:
            fits = r["fits"]
            notes.append(f"- K = {r['K']} ({r['algorithm']}) fits of {fits['burn_in']} and "
                         f"{fits['burn_in'] + fits['sweeps_timed']} sweeps: "
                         + ", ".join(f"{a:.2f} s / {b:.2f} s"
                                     for a, b in zip(fits["short_fit_s"], fits["long_fit_s"])))
    if not rows:
        return []
    first = gibbs["rows"][0].get("sweep")
    head = []
    if first:
        head = [f"Sweeps timed on the sampler's own state after {first['burn_in']} sweeps: "
                f"{first['repeats']} blocks of {first['sweeps_timed']} sweeps, each bracketed "
                "by CUDA events on a GPU (median and range over the blocks). The fits' "
                "difference is (fit of burn-in + timed sweeps - fit of burn-in sweeps) / "
                "timed sweeps, each pair timed whole."]
        if "copy_bandwidth_bytes_per_s" in gibbs:
            head[0] += (" The profiler's column is the device time of a sweep's kernels; the "
                        "floor is the bytes a sweep's draws move when no document row stays "
                        "in cache, over the copy bandwidth measured in the same run ("
                        f"{gibbs['copy_bandwidth_bytes_per_s'] / 1e12:.2f} TB/s), marked "
                        "'cached' where the document-topic table is under four times the L2 "
                        "cache (then it is no floor).")
        head.append("")
    return head + [markdown_table(rows, list(rows[0])), ""] + notes + ([""] if notes else [])


def _rate(tokens_per_s):
    return (f"{tokens_per_s / 1e9:.2f} G" if tokens_per_s >= 1e9
            else f"{tokens_per_s / 1e6:.0f} M") + " tokens/s"


def table(results):
    """The GPU benchmarks against their goals, one row a measurement (the page the
    documentation includes as ``gpu_check.rst``), drawn from a ``gpu_check.json``."""
    env = results["environment"]
    bench = results.get("benchmarks", {})
    commit = env.get("git_commit")
    others = {name: row["git_commit"] for name, row in bench.items()
              if row.get("git_commit") not in (None, commit)}
    device = (f"{env.get('gpu')} ({env.get('gpu_memory_gib', 0):.0f} GiB, CUDA {env.get('cuda')})"
              if env.get("gpu") else f"CPU ({env.get('cpu')})")
    lines = ["# The GPU benchmarks against their goals", ""]
    if results.get("smoke"):
        lines += ["**Smoke run on the CPU at toy sizes: a check of the kit, not a measurement.**",
                  ""]
    repeated = any("sweep" in row for row in bench.get("gibbs", {}).get("rows", []))
    lines += [f"Device: {device}, torch {env.get('torch')}; commit {commit}"
              + "".join(f", {name} at {c}" for name, c in others.items())
              + (". From one run of `benchmarks/gpu_check.py`: LDAGibbs the median (and range) "
                 "of repeated blocks of sweeps after a burn-in, the others one timing each "
                 "after a warm-up." if repeated else
                 ". One timing from one run of `benchmarks/gpu_check.py` each, after a "
                 "warm-up."),
              ""]
    rows = []

    def add(what, measured, goal="", met=None, has_goal=False):
        rows.append({"benchmark": what, "measured": measured, "goal": goal,
                     "goal met": _verdict(met) if has_goal else ""})

    def checked(name):
        """``(measured, goal, met)`` of each goal of ``name``, by its text."""
        return {what: (measured, goal, met) for what, measured, goal, met
                in goals(name, bench.get(name, {}))}

    def not_run(name):
        return f"not measured (step: {_step(bench[name])})"

    gibbs = bench.get("gibbs")
    if gibbs is not None:
        gibbs_goals = checked("gibbs")
        measured_rows = {(r["K"], r["algorithm"]): r for r in gibbs.get("rows", [])}
        for K, algorithm in ((50, "parallel"), (1024, "parallel"), (1024, "mh")):
            r = measured_rows.get((K, algorithm))
            sweep = "parallel sweep" if algorithm == "parallel" else "Metropolis-Hastings"
            what = f"LDAGibbs, K = {K}, {sweep}" + (
                f", {r['tokens'] / 1e6:.1f} M tokens" if r else "")
            measured = not_run("gibbs")
            if r and "tokens_per_s_range" in r:
                slow, fast = r["tokens_per_s_range"]
                measured = (f"{_rate(r['tokens_per_s'])}, median of {r['sweep']['repeats']} "
                            f"({_rate(slow)} to {_rate(fast)}; "
                            f"{r['s_per_sweep'] * 1e3:.1f} ms a sweep)")
                if r.get("below_floor"):
                    measured += "; below the memory-traffic floor: not a measurement"
            elif r:
                measured = f"{_rate(r['tokens_per_s'])} ({r['s_per_sweep'] * 1e3:.1f} ms a sweep)"
            goal = gibbs_goals.get(f"K = {K}, {sweep}")
            if goal:
                add(what, measured, goal[1], goal[2], True)
            else:
                add(what + " (for comparison)", measured)
    prodlda = bench.get("prodlda")
    if prodlda is not None:
        (_, goal, met), = checked("prodlda").values()
        measured = (f"{prodlda['seconds']:.2f} s (NPMI {prodlda['npmi']:.3f}, topic diversity "
                    f"{prodlda['topic_diversity']:.3f})" if "seconds" in prodlda
                    else not_run("prodlda"))
        add(f"ProdLDA, K = 50, {prodlda.get('epochs', 100)} epochs of 20 Newsgroups, batch "
            "200, the plain loop's settings (dropout 0.6, learning rate 2e-3, batches drawn "
            "with replacement)", measured, goal, met, True)
        if "eager_seconds" in prodlda:
            add("the same, steps run eagerly (`SKTOPICS_CUDA_GRAPHS=0`)",
                f"{prodlda['eager_seconds']:.2f} s")
        if "plain_seconds" in prodlda:
            add("the plain torch loop of `benchmarks/_plain_vae.py`, same settings, same GPU",
                f"{prodlda['plain_seconds']:.2f} s: ProdLDA takes "
                f"{prodlda['ratio_to_plain']:.2f} times its time")
    pamvi = bench.get("pamvi")
    if pamvi is not None:
        (_, goal, met), = checked("pamvi").values()
        measured = (f"{pamvi['seconds']:.2f} s (NPMI {pamvi['npmi']:.3f}, topic diversity "
                    f"{pamvi['topic_diversity']:.3f})" if "seconds" in pamvi else not_run("pamvi"))
        add(f"PAMVI, 50 super- / 100 sub-topics, a default fit ({pamvi.get('epochs', 100)} "
            "epochs) of 20 Newsgroups", measured, goal, met, True)
    ais = bench.get("ais")
    if ais is not None:
        (_, goal, met), = checked("ais").values()
        if "seconds" in ais:
            what = (f"AIS, {ais['n_temperatures']:,} temperatures, the 20 Newsgroups test set "
                    f"({ais['n_docs']:,} documents, {ais['n_tokens']:,} tokens), K = 50, one "
                    f"chain, {ais['kernel']} kernel")
            measured = (f"{ais['seconds']:.2f} s ({ais['token_updates_per_s'] / 1e6:.0f} M "
                        "token-updates/s)")
        else:
            what, measured = "AIS, 1,000 temperatures, the 20 Newsgroups test set", not_run("ais")
        add(what, measured, goal, met, True)
    distributed = bench.get("distributed")
    if distributed is not None:
        (_, goal, met), = checked("distributed").values()
        measured = (f"largest difference {distributed['max_abs_difference']:.1e} "
                    f"({distributed['seconds_data_parallel']:.2f} s against "
                    f"{distributed['seconds_alone']:.2f} s)"
                    if "seconds_alone" in distributed else not_run("distributed"))
        backend = f" {distributed['backend']}" if "backend" in distributed else ""
        add("LDAGibbs, K = 50, 50 sweeps inside `data_parallel()` over a one-process"
            f"{backend} group", measured, goal, met, True)
    if rows:
        lines.append(markdown_table(rows, ["benchmark", "measured", "goal", "goal met"]))
    return "\n".join(lines) + "\n"


def write(results, folders, final=False):
    text = report(results)
    payload = json.dumps(results, indent=2, default=str) + "\n"
    page = markdown_to_rst(table(json.loads(payload)))
    for folder in dict.fromkeys(folders):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "gpu_check.json").write_text(payload)
        (folder / "gpu_check.md").write_text(text)
        (folder / "gpu_check.rst").write_text(page)
    done = ["suite"] * ("suite" in results) + list(results["benchmarks"])
    print(text if final else f"[gpu_check] done: {', '.join(done) or 'environment'}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-home", default=default_data_home())
    p.add_argument("--output", "--out", dest="output", default=None, metavar="DIR",
                   help="a folder for gpu_check.json, .md and .rst and the suite's JUnit XML "
                        "and log (the json, md and rst are also written to benchmarks/results/, "
                        "except with --smoke; default: benchmarks/results/, or a new "
                        "temporary folder with --smoke)")
    p.add_argument("--suite-timeout", type=int, default=240)
    p.add_argument("--skip-suite", action="store_true")
    p.add_argument("--only", default=None,
                   help="comma-separated benchmarks to run: " + ",".join(b[0] for b in BENCHMARKS))
    p.add_argument("--smoke", action="store_true",
                   help="check the kit itself: CPU, toy sizes, results not written to "
                        "benchmarks/results/")
    p.add_argument("--report-from", default=None, metavar="JSON",
                   help="only redraw the report (.md) and the table (.rst) beside this "
                        "gpu_check.json; measure nothing")
    p.add_argument("--report-only", action="store_true",
                   help="--report-from benchmarks/results/gpu_check.json")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_child(args.child, args.data_home, args.child_out, args.smoke)
        return
    if args.report_only and not args.report_from:
        args.report_from = RESULTS / "gpu_check.json"
    if args.report_from:
        path = Path(args.report_from)
        path.with_suffix(".md").write_text(report(json.loads(path.read_text())))
        write_report(path, table)
        print(f"[gpu_check] wrote {path.with_suffix('.md')} and {path.with_suffix('.rst')}")
        return
    import torch

    if not (torch.cuda.is_available() or args.smoke):
        sys.exit("gpu_check.py needs a CUDA device (torch.cuda.is_available() is False); "
                 "--smoke checks the kit on the CPU.")
    if args.output:
        out_dir = Path(args.output)
    elif args.smoke:
        out_dir = Path(tempfile.mkdtemp(prefix="gpu_check_smoke_"))
    else:
        out_dir = RESULTS
    out_dir.mkdir(parents=True, exist_ok=True)
    print(f"[gpu_check] results in {out_dir}" + ("" if args.smoke else f" and {RESULTS}"),
          flush=True)
    folders = [out_dir] if args.smoke else [RESULTS, out_dir]
    # The suite's JUnit XML and log go to --output; without it, to a temporary folder
    # (named in gpu_check.json) rather than among the result files.
    suite_dir = out_dir if out_dir != RESULTS else Path(tempfile.mkdtemp(prefix="gpu_check_"))
    results = {"environment": environment(), "smoke": args.smoke, "benchmarks": {}}
    write(results, folders)
    if not args.skip_suite:
        # The smoke run checks the kit, not the package: its suite step runs the GPU
        # tests only (skipped without CUDA), enough to exercise the JUnit summary.
        paths = ["tests/test_gpu.py"] if args.smoke else []
        results["suite"] = run_suite(args.suite_timeout, suite_dir, args.data_home, paths)
        write(results, folders)
    only = set(args.only.split(",")) if args.only else None
    with tempfile.TemporaryDirectory() as work_dir:
        for name, limit, _ in BENCHMARKS:
            if only is None or name in only:
                results["benchmarks"][name] = run_benchmark(name, limit, args.data_home,
                                                            work_dir, args.smoke)
                write(results, folders)
    write(results, folders, final=True)


if __name__ == "__main__":
    main()
