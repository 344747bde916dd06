"""The GPU kit: what a session lent a GPU runs first (one command, under 10 minutes).

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
     times, 15 M tokens) at K = 50 and K = 1024 (dense and Metropolis-Hastings);
     goals: >= 1 G tokens/s at K = 50, >= 700 M at K = 1024 (one H100);
   * ProdLDA, 100 epochs of 20 Newsgroups, K = 50, batch 200; goal <= 5 s;
   * PAMVI 50 super- / 100 sub-topics on 20 Newsgroups, 20 epochs (5 timed); goal
     <= 2 minutes;
   * AIS, 1,000 temperatures over the whole 20 Newsgroups test set (K = 50, one
     chain, ``kernel="auto"``); goal <= 10 s.

Results: ``benchmarks/results/gpu_check.json`` and ``.md`` (and a copy in ``--out``),
rewritten after every step, so that a run cut short still leaves what it measured.

Usage on a machine with a GPU (the corpora from ``../shared/data`` or ``--data-home``)::

    python benchmarks/gpu_check.py

``--smoke`` runs the same steps on the CPU at toy sizes, to check the kit itself on a
machine without a GPU (its numbers mean nothing).

In this workplace, through the device tool, see ``benchmarks/README.md`` (the wheel
of skorch and the 20 Newsgroups files travel with the command).
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
from _common import RESULTS, default_data_home, machine, markdown_table  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

#: (name, seconds allowed, goal as text)
#: The suite's limit plus these stay under the device tool's 600 s per command.
BENCHMARKS = [
    ("gibbs", 90, ">= 1 G tokens/s at K = 50, >= 700 M at K = 1024"),
    ("prodlda", 60, "100 epochs <= 5 s"),
    ("pamvi", 80, "20 epochs of 50 / 100 <= 120 s"),
    ("ais", 90, "1,000 temperatures <= 10 s"),
]


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
    """Steady-state sweeps: (fit of burn-in + M sweeps) minus (fit of burn-in sweeps)."""
    import scipy.sparse as sp

    from sktopics import LDAGibbs

    train = _20news(data_home, "train")
    X = train[:500] if smoke else sp.vstack([train] * 16).tocsr()
    n_tokens = int(X.sum())
    rows = []
    settings = ((50, "parallel", 20, 100), (1024, "parallel", 5, 20), (1024, "mh", 10, 50))
    for K, algorithm, burn, more in settings:
        if smoke:
            burn, more = 1, 2

        def fit(n):
            # One kept sample (the last state) in both fits: the difference is sweeps only.
            return LDAGibbs(K, algorithm=algorithm, max_iter=n, optimize_interval=None,
                            n_kept_samples=1, evaluate_every=10**6, device=device,
                            random_state=0).fit(X)

        fit(2)  # warm-up
        _, short = _timed(lambda: fit(burn))
        model, long = _timed(lambda: fit(burn + more))
        steady = (long - short) / more
        rows.append({"K": K, "algorithm": algorithm, "tokens": n_tokens,
                     "sweeps_timed": more, "s_per_sweep": steady,
                     "tokens_per_s": n_tokens / steady,
                     "fit_s": long, "log_lik_per_token": float(
                         model.log_likelihood_trace_[-1] / n_tokens)})
        save({"rows": rows})  # a row at a time: a time-out keeps the rows measured
    return {"rows": rows}


def bench_prodlda(data_home, device, smoke, save):
    from sktopics import ProdLDA
    from sktopics.metrics import npmi_coherence, topic_diversity

    train, test = _20news(data_home, "train"), _20news(data_home, "test")
    epochs = 2 if smoke else 100
    ProdLDA(50, max_iter=1, device=device, random_state=0).fit(train)  # warm-up
    model, seconds = _timed(lambda: ProdLDA(50, max_iter=epochs, batch_size=200, device=device,
                                            random_state=0).fit(train))
    return {"seconds": seconds, "s_per_epoch": seconds / epochs,
            "npmi": float(npmi_coherence(model, test).mean),
            "topic_diversity": float(topic_diversity(model))}


def bench_pamvi(data_home, device, smoke, save):
    """5 epochs timed; the goal is for 20 (the epochs of the CPU benchmark), so the 20-epoch
    time is reported as 4 times the 5-epoch one (an epoch's cost does not change)."""
    from sktopics import PAMVI
    from sktopics.metrics import npmi_coherence, topic_diversity

    train, test = _20news(data_home, "train"), _20news(data_home, "test")
    if smoke:
        train = train[:500]
    epochs = 1 if smoke else 5
    PAMVI(structure=(50, 100), max_iter=1, device=device, random_state=0).fit(train[:500])
    model, seconds = _timed(lambda: PAMVI(structure=(50, 100), max_iter=epochs, device=device,
                                          random_state=0).fit(train))
    return {"seconds": 20 * seconds / epochs, "epochs_timed": epochs,
            "s_per_epoch": seconds / epochs,
            "npmi": float(npmi_coherence(model, test).mean),
            "topic_diversity": float(topic_diversity(model))}


def bench_ais(data_home, device, smoke, save):
    from sktopics import LDAGibbs
    from sktopics.model_selection import ais_log_likelihood

    train, test = _20news(data_home, "train"), _20news(data_home, "test")
    if smoke:
        test = test[:100]
    model = LDAGibbs(50, doc_topic_prior=0.1, optimize_interval=None, max_iter=100,
                     device=device, random_state=0).fit(train)
    kw = dict(n_chains=1, device=device, random_state=0)
    ais_log_likelihood(model, test[:50], n_temperatures=2, **kw)  # warm-up
    temperatures = 5 if smoke else 1000
    result, seconds = _timed(lambda: ais_log_likelihood(model, test, n_temperatures=temperatures,
                                                        **kw))
    return {"seconds": seconds, "n_docs": test.shape[0], "n_tokens": int(test.sum()),
            "kernel": result.settings["kernel"],
            "token_updates_per_s": result.n_token_updates / seconds,
            "log_lik_per_token": float(result.per_token)}


def run_child(name, data_home, out, smoke):
    fn = {"gibbs": bench_gibbs, "prodlda": bench_prodlda, "pamvi": bench_pamvi,
          "ais": bench_ais}[name]
    def save(partial):
        Path(out).write_text(json.dumps(partial, default=float))

    save(fn(data_home, "cpu" if smoke else "cuda", smoke, save))


# --------------------------------------------------------------------------- the kit (parent)


def environment():
    import torch

    info = machine()
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        info.update(cuda=torch.version.cuda, gpu_memory_gib=props.total_memory / 2**30,
                    gpu_capability=f"{props.major}.{props.minor}",
                    gpu_multiprocessors=props.multi_processor_count)
    # The device tool sends a working tree whose git metadata may be stale: the
    # commit named by the caller wins.
    info["git_commit"] = (os.environ.get("SKTOPICS_COMMIT") or info.get("git_commit")
                          or "unknown")
    return info


def run_suite(timeout, out_dir, data_home):
    """The whole suite with the estimators on CUDA; a summary parsed from JUnit XML."""
    xml = out_dir / "gpu_suite.xml"
    env = {**os.environ, "SKTOPICS_TEST_DEVICE": "auto", "SKTOPICS_DATA": str(data_home),
           "PYTHONUNBUFFERED": "1"}
    cmd = [sys.executable, "-m", "pytest", "-q", "-rfE", "-p", "no:cacheprovider",
           f"--junitxml={xml}", "-o", "junit_family=xunit1", "--durations=10"]
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
    tail = log[-3000:]
    summary = {"seconds": time.perf_counter() - tic, "output_tail": tail}
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
        proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=limit)
        status = "ok" if proc.returncode == 0 else f"failed: {proc.stderr[-1500:]}"
    except subprocess.TimeoutExpired:
        status = f"timed out after {limit} s"
    result = json.loads(out.read_text()) if out.exists() else {}
    return {"status": status, "wall_s": time.perf_counter() - tic, **result}


def report(results):
    env = results["environment"]
    lines = ["# GPU kit (`benchmarks/gpu_check.py`)", ""]
    if results.get("smoke"):
        lines += ["**Smoke run on the CPU at toy sizes: a check of the kit, not a measurement.**",
                  ""]
    lines += [f"Device: {env.get('gpu')} ({env.get('gpu_memory_gib', 0):.0f} GiB, CUDA "
             f"{env.get('cuda')}), torch {env.get('torch')}, {env.get('cpu_count')} CPU cores; "
             f"commit {env.get('git_commit')}.", ""]
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
    if bench:
        lines += ["## Benchmarks", ""]
        goals = {name: goal for name, _, goal in BENCHMARKS}
        gibbs = bench.get("gibbs", {})
        rows = [{"K": r["K"], "sampler": r["algorithm"], "tokens": r["tokens"],
                 "s/sweep": r["s_per_sweep"], "M tokens/s": r["tokens_per_s"] / 1e6}
                for r in gibbs.get("rows", [])]
        lines += [f"LDAGibbs, steady state ({gibbs.get('status', 'not run')}; goal "
                  f"{goals['gibbs']}):", ""]
        if rows:
            lines += [markdown_table(rows, list(rows[0]))]
        for name, label in (("prodlda", "ProdLDA, 20NG K = 50, 100 epochs"),
                            ("pamvi", "PAMVI (50, 100), 20NG, 20 epochs (4 x 5 timed)"),
                            ("ais", "AIS, 1,000 temperatures, 20NG test set")):
            row = bench.get(name, {})
            measured = (f"{row['seconds']:.2f} s" if "seconds" in row else "no time")
            extra = ", ".join(f"{k} {v:.3f}" if isinstance(v, float) else f"{k} {v}"
                              for k, v in row.items()
                              if k not in ("seconds", "status", "wall_s"))
            lines.append(f"- {label}: {measured} ({row.get('status', 'not run')}; goal "
                         f"{goals[name]}){'; ' + extra if extra else ''}")
    return "\n".join(lines) + "\n"


def write(results, folders, final=False):
    text = report(results)
    payload = json.dumps(results, indent=2, default=str) + "\n"
    for folder in set(folders):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "gpu_check.json").write_text(payload)
        (folder / "gpu_check.md").write_text(text)
    done = ["suite"] * ("suite" in results) + list(results["benchmarks"])
    print(text if final else f"[gpu_check] done: {', '.join(done) or 'environment'}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data-home", default=default_data_home())
    p.add_argument("--out", default=os.environ.get("OUT", str(RESULTS)),
                   help="a second folder for the result files and the suite's JUnit XML "
                        "(default: $OUT, else benchmarks/results)")
    p.add_argument("--suite-timeout", type=int, default=240)
    p.add_argument("--skip-suite", action="store_true")
    p.add_argument("--only", default=None, help="comma-separated benchmarks to run")
    p.add_argument("--smoke", action="store_true",
                   help="check the kit itself: CPU, toy sizes, results not written to results/")
    p.add_argument("--child", default=None, help=argparse.SUPPRESS)
    p.add_argument("--child-out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        run_child(args.child, args.data_home, args.child_out, args.smoke)
        return
    import torch

    if not (torch.cuda.is_available() or args.smoke):
        sys.exit("gpu_check.py needs a CUDA device (torch.cuda.is_available() is False); "
                 "--smoke checks the kit on the CPU.")
    out_dir = Path(args.out)
    folders = [out_dir] if args.smoke else [RESULTS, out_dir]
    results = {"environment": environment(), "smoke": args.smoke, "benchmarks": {}}
    write(results, folders)
    if not args.skip_suite:
        results["suite"] = run_suite(args.suite_timeout, out_dir, args.data_home)
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
