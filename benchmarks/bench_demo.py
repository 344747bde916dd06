"""``sktopics demo`` for each model: is it under two minutes at its defaults?

Runs the console command ``sktopics demo --model M`` (the public entry point, each run
a fresh process, so the import of torch and sktopics is timed too) for each model,
``--repeats`` rounds (default 3) with the models in turn within a round. Reports the
median command wall time with its min-max, the fit time, held-out score and NPMI
that the demo printed, and whether every run of a model finished within
``--limit`` seconds (default 120). Records the machine, the commit and the load
(``_common.MachineLoad``). Writes ``<output-dir>/<output-name>.{json,rst}``, by
default ``benchmarks/results/demo.*`` (``--report-only`` redraws the page from the JSON).

Trial run (one model, one round, elsewhere)::

    python benchmarks/bench_demo.py --models lda-gibbs --repeats 1 --output-dir /tmp/demo_trial
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    MachineLoad,
    add_result_arguments,
    commit_text,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)

MODELS = ("lda-gibbs", "avitm", "prodlda", "pamvi", "molda")

#: What the demo prints, read back from its output.
_PRINTED = {
    "fit_seconds": r"^fit time: (\S+) s \(wall clock, on (\S+)\)",
    "score": r"^held-out log-likelihood per token: (\S+) nats",
    "npmi": r"^held-out NPMI: (\S+) ",
}


def demo_command():
    """The installed ``sktopics`` console script beside this Python, else ``-m``."""
    script = Path(sys.executable).with_name("sktopics")
    if script.exists():
        return [str(script)]
    found = shutil.which("sktopics")
    return [found] if found else [sys.executable, "-m", "sktopics"]


def run_demo(command, model):
    """One ``sktopics demo --model model`` run: its wall time and what it printed."""
    tic = time.perf_counter()
    result = subprocess.run([*command, "demo", "--model", model], capture_output=True,
                            text=True, check=False)
    seconds = time.perf_counter() - tic
    if result.returncode != 0:
        raise SystemExit(f"sktopics demo --model {model} failed ({result.returncode}):\n"
                         f"{result.stderr}")
    run = {"wall_seconds": seconds}
    for name, pattern in _PRINTED.items():
        match = re.search(pattern, result.stdout, re.MULTILINE)
        if match is None:
            raise SystemExit(f"the demo's output lacks {name!r}:\n{result.stdout}")
        run[name] = float(match.group(1))
        if name == "fit_seconds":
            run["device"] = match.group(2)
    run["header"] = result.stdout.splitlines()[:2]  # the model and its call
    return run


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS),
                   help="the demo's models to time (default: all five)")
    p.add_argument("--repeats", type=int, default=3, help="rounds (default 3)")
    p.add_argument("--limit", type=float, default=120.0,
                   help="seconds a run must stay under (default 120)")
    add_result_arguments(p, "demo")
    args = p.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    command = demo_command()
    info = machine()
    runs = {model: [] for model in args.models}
    with MachineLoad() as load:
        for round_ in range(args.repeats):
            for model in args.models:
                runs[model].append(run_demo(command, model))
                print(f"round {round_}, {model}: {runs[model][-1]['wall_seconds']:.1f} s",
                      flush=True)
    out = {"machine": info, "load": load.summary(), "args": vars(args),
           "command": " ".join([Path(command[0]).name, *command[1:], "demo", "--model", "M"]),
           "runs": runs}
    write_results(args.output_name, out, report, directory=args.output_dir)


def _spread(values, digits=1):
    """Median (min-max); "to" between negative numbers."""
    between = " to " if min(values) < 0 else "-"
    return (f"{np.median(values):.{digits}f} ({min(values):.{digits}f}{between}"
            f"{max(values):.{digits}f})")


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, args = out["machine"], out["args"]
    limit, repeats = args["limit"], args["repeats"]
    rows = []
    for model, runs in out["runs"].items():
        wall = [r["wall_seconds"] for r in runs]
        rows.append({
            "model": model,
            "command s": _spread(wall),
            "fit s": _spread([r["fit_seconds"] for r in runs]),
            "held-out log-lik. / token": _spread([r["score"] for r in runs], 3),
            "held-out NPMI": _spread([r["npmi"] for r in runs], 3),
            "device": ", ".join(sorted({r["device"] for r in runs})),
            f"under {limit:g} s": "yes" if max(wall) < limit else "**no**",
        })
    lines = ["# `sktopics demo` for each model", "",
             (f"Machine: {info['cpu']} ({info['simd']}), {info['cpu_count']} cores, torch "
              f"{info['torch']}; commit {commit_text(info)}. {load_sentence(out['load'])}"), "",
             (f"`{out['command']}` at its defaults (BBC News shipped with sktopics, K = 20, "
              "random_state 0), each run a fresh process. Median (min-max) over "
              f"{repeats} round{'s' * (repeats > 1)}, the models in turn within a round. "
              "'command s': the whole command's wall time (imports, fit, score, NPMI); "
              "'fit s', the score and NPMI: as the demo printed them. "
              f"'under {limit:g} s': every run of the model took less."), "",
             markdown_table(rows, list(rows[0]))]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
