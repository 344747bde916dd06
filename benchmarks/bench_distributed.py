"""Data-parallel LDAGibbs: one process against several, on the same corpus.

The AVITM 20 Newsgroups training set (991 k tokens), tiled ``--tile`` times, is cut
into as many shares as processes; each process (one torch thread, gloo over the
loopback) fits ``LDAGibbs(K, algorithm=...)`` (``"parallel"``, and what ``"auto"``
picks) on its share inside ``sktopics.distributed.data_parallel()``. Recorded per
world size: the seconds per sweep without the fit's setup (fits of ``--sweeps`` and
twice as many sweeps, their difference), the seconds spent in the collectives by the
slowest and the fastest rank, and whether every rank ended with the components of the
one-process fit. The collectives are timed through torch's public API: each process
wraps ``torch.distributed.all_reduce`` (the per-sweep sum of the word-topic counts
and the fit's other global sums) in a timer before fitting; sktopics itself is used
through its public API only.

On a machine with fewer cores than processes plus one the processes share cores:
the numbers then show the cost of the exchange, not the speed-up.

Writes ``benchmarks/results/distributed.{json,rst}`` (``--report-only`` redraws the
page from the JSON; ``--output-dir`` writes elsewhere)::

    python benchmarks/bench_distributed.py [--worlds 1,2] [--components 50,1024]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (  # noqa: E402
    MachineLoad,
    add_result_arguments,
    commit_text,
    default_data_home,
    load_sentence,
    machine,
    markdown_table,
    report_only,
    write_results,
)

CHILD = r'''
import contextlib, json, sys, time
import numpy as np, scipy.sparse as sp, torch
import torch.distributed as dist
from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm
from sktopics.distributed import data_parallel

rank, world, store, data_home, K, tile, repeats, sweeps, algorithm = sys.argv[1:10]
rank, world, K, tile, repeats, sweeps = map(int, (rank, world, K, tile, repeats, sweeps))
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
X = sp.vstack([load_20news_avitm(data_home, subset="train").data] * tile).tocsr()
# shares of about equal tokens (documents in order): a sweep waits for the slowest rank
tokens = np.cumsum(np.asarray(X.sum(axis=1)).ravel())
bounds = np.searchsorted(tokens, tokens[-1] * np.arange(world + 1) / world, side="right")
bounds[0], bounds[-1] = 0, X.shape[0]
share = X[bounds[rank]:bounds[rank + 1]]
spent = [0.0]
all_reduce = dist.all_reduce
def timed(*args, **kwargs):
    tic = time.perf_counter()
    out = all_reduce(*args, **kwargs)
    spent[0] += time.perf_counter() - tic
    return out
dist.all_reduce = timed
params = dict(n_components=K, algorithm=algorithm, optimize_interval=None,
              evaluate_every=1000, device="cpu", random_state=0)
runs = []
# one process fits as a user would, outside data_parallel() ("auto" may pick a sampler
# of its own there)
with data_parallel() if world > 1 else contextlib.nullcontext():
    LDAGibbs(**{**params, "max_iter": 2}).fit(share)  # warm-up
    for _ in range(repeats):
        for n in (sweeps, 2 * sweeps):  # the difference is the cost of `sweeps` sweeps
            spent[0] = 0.0
            dist.barrier()
            tic = time.perf_counter()
            model = LDAGibbs(**params, max_iter=n).fit(share)
            runs.append({"sweeps": n, "seconds": time.perf_counter() - tic,
                         "collective_s": spent[0], "algorithm": model.algorithm_})
np.save(f"{store}.rank{rank}.npy", model.components_)
print("RESULT " + json.dumps({"rank": rank, "tokens": float(X.sum()),
                              "share_tokens": float(share.sum()), "runs": runs}))
dist.destroy_process_group()
'''


def _world(world, args, K, algorithm):
    store = tempfile.mktemp()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(rank), str(world), store,
                               args.data_home, str(K), str(args.tile), str(args.repeats),
                               str(args.sweeps), algorithm], stdout=subprocess.PIPE, text=True)
             for rank in range(world)]
    outs = [json.loads(p.communicate()[0].split("RESULT ", 1)[1]) for p in procs]
    components = [np.load(f"{store}.rank{rank}.npy") for rank in range(world)]
    return outs, components


def _marginal(outs, key, combine):
    """Per repeat, the cost of the second fit's extra sweeps: ``combine`` over the
    ranks of (longer fit - shorter fit)."""
    repeats = len(outs[0]["runs"]) // 2
    return [combine(o["runs"][2 * i + 1][key] - o["runs"][2 * i][key] for o in outs)
            for i in range(repeats)]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worlds", default="1,2")
    p.add_argument("--components", default="50,1024")
    p.add_argument("--algorithms", default="parallel,auto")
    p.add_argument("--tile", type=int, default=2)
    p.add_argument("--sweeps", type=int, default=10,
                   help="fits of this many sweeps and twice as many; their difference is timed")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data-home", default=default_data_home())
    add_result_arguments(p, "distributed")
    args = p.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    rows, reference, single = [], {}, {}
    load = MachineLoad().__enter__()
    for K in map(int, args.components.split(",")):
        for algorithm in args.algorithms.split(","):
            for world in map(int, args.worlds.split(",")):
                outs, components = _world(world, args, K, algorithm)
                ran = outs[0]["runs"][-1]["algorithm"]
                if ran == "parallel":
                    reference.setdefault(K, components[0])
                seconds = _marginal(outs, "seconds", max)
                waits = _marginal(outs, "collective_s", max)  # the fastest rank's wait
                exchange = _marginal(outs, "collective_s", min)  # the slowest rank's
                median = statistics.median(seconds)
                per_sweep = median / args.sweeps
                if world == 1:
                    single[K, algorithm] = per_sweep
                shares = [o["share_tokens"] for o in outs]
                rows.append({
                    "K": K, "asked": algorithm, "ran": ran, "processes": world,
                    "s_per_sweep": per_sweep,
                    "range_s": f"{min(seconds) / args.sweeps:.3f}-{max(seconds) / args.sweeps:.3f}",
                    "speed_up": single.get((K, algorithm), float("nan")) / per_sweep,
                    "exchange_share": statistics.median(exchange) / median,
                    "wait_share": statistics.median(waits) / median,
                    "token_imbalance": max(shares) / (sum(shares) / len(shares)),
                    "same_as_one_process": (ran == "parallel" and all(
                        np.allclose(c, reference[K], rtol=0, atol=1e-6) for c in components)),
                })
                print(rows[-1], flush=True)
    load.__exit__(None, None, None)
    write_results(args.output_name, {"machine": machine(), "load": load.summary(),
                                     "args": vars(args), "rows": rows}, report,
                  directory=args.output_dir)


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, args = out["machine"], out["args"]
    ran = f"Commit {commit_text(info)}."
    if "load" in out:
        ran += " " + load_sentence(out["load"])
    lines = ["# Data-parallel LDAGibbs: processes against one", "", ran, "",
             f"Machine: {info['cpu']}, {info['cpu_count']} cores; one torch thread per "
             f"process, gloo over the loopback. AVITM 20 Newsgroups training set x "
             f"{args['tile']}, cut into shares of about equal tokens. Each repeat fits "
             f"{args['sweeps']} and {2 * args['sweeps']} sweeps; `s_per_sweep` is the "
             f"median over {args['repeats']} repeats of the difference (the slowest "
             "rank's) per sweep, so setup is left out; `range_s` its min-max. "
             "`speed_up`: one process's seconds per sweep (same `asked`) over these. "
             "`exchange_share`: the slowest rank's time in the collectives (the "
             "exchange itself), `wait_share`: the fastest rank's (exchange and waiting "
             "for the others), both of the sweeps' time. `ran`: the sampler `asked` "
             "resolved to.", "",
             markdown_table(out["rows"], ["K", "asked", "ran", "processes", "s_per_sweep",
                                          "range_s", "speed_up", "exchange_share",
                                          "wait_share", "token_imbalance",
                                          "same_as_one_process"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
