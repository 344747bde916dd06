"""Data-parallel LDAGibbs: one process against several, on the same corpus.

The AVITM 20 Newsgroups training set (991 k tokens), tiled ``--tile`` times, is cut
into as many shares as processes; each process (one torch thread, gloo over the
loopback) fits ``LDAGibbs(K, algorithm="parallel")`` on its share inside
``sktopics.distributed.data_parallel()``. Recorded per world size: the wall time of
the fit's sweeps (median of ``--repeats`` fits after a warm-up), the seconds spent
in the collectives, and whether every rank ended with the components of the
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
import json, sys, time
import numpy as np, scipy.sparse as sp, torch
import torch.distributed as dist
from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm
from sktopics.distributed import data_parallel

rank, world, store, data_home, K, tile, repeats, sweeps = sys.argv[1:9]
rank, world, K, tile, repeats, sweeps = map(int, (rank, world, K, tile, repeats, sweeps))
torch.set_num_threads(1)
dist.init_process_group("gloo", init_method=f"file://{store}", rank=rank, world_size=world)
X = sp.vstack([load_20news_avitm(data_home, subset="train").data] * tile).tocsr()
bounds = np.linspace(0, X.shape[0], world + 1).astype(int)
share = X[bounds[rank]:bounds[rank + 1]]
spent = [0.0]
all_reduce = dist.all_reduce
def timed(*args, **kwargs):
    tic = time.perf_counter()
    out = all_reduce(*args, **kwargs)
    spent[0] += time.perf_counter() - tic
    return out
dist.all_reduce = timed
params = dict(n_components=K, max_iter=sweeps, algorithm="parallel", optimize_interval=None,
              evaluate_every=1000, device="cpu", random_state=0)
runs = []
with data_parallel():
    LDAGibbs(**{**params, "max_iter": 2}).fit(share)  # warm-up
    for _ in range(repeats):
        spent[0] = 0.0
        dist.barrier()
        tic = time.perf_counter()
        model = LDAGibbs(**params).fit(share)
        runs.append({"seconds": time.perf_counter() - tic, "collective_s": spent[0]})
np.save(f"{store}.rank{rank}.npy", model.components_)
print("RESULT " + json.dumps({"rank": rank, "tokens": float(X.sum()), "runs": runs}))
dist.destroy_process_group()
'''


def _world(world, args, K):
    store = tempfile.mktemp()
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(rank), str(world), store,
                               args.data_home, str(K), str(args.tile), str(args.repeats),
                               str(args.sweeps)], stdout=subprocess.PIPE, text=True)
             for rank in range(world)]
    outs = [json.loads(p.communicate()[0].split("RESULT ", 1)[1]) for p in procs]
    components = [np.load(f"{store}.rank{rank}.npy") for rank in range(world)]
    return outs, components


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--worlds", default="1,2")
    p.add_argument("--components", default="50,1024")
    p.add_argument("--tile", type=int, default=2)
    p.add_argument("--sweeps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--data-home", default=default_data_home())
    add_result_arguments(p, "distributed")
    args = p.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    rows, reference = [], {}
    load = MachineLoad().__enter__()
    for K in map(int, args.components.split(",")):
        for world in map(int, args.worlds.split(",")):
            outs, components = _world(world, args, K)
            reference.setdefault(K, components[0])
            seconds = [max(o["runs"][i]["seconds"] for o in outs) for i in range(args.repeats)]
            collective = [max(o["runs"][i]["collective_s"] for o in outs)
                          for i in range(args.repeats)]
            same = all(np.allclose(c, reference[K], rtol=0, atol=1e-6) for c in components)
            median = statistics.median(seconds)
            rows.append({"K": K, "processes": world, "s_per_sweep": median / args.sweeps,
                         "spread_s": f"{min(seconds):.2f}-{max(seconds):.2f}",
                         "collective_share": statistics.median(collective) / median,
                         "M_tokens_per_s": outs[0]["tokens"] * args.sweeps / median / 1e6,
                         "same_as_one_process": same})
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
             f"{args['tile']}, {args['sweeps']} sweeps, algorithm='parallel'; median of "
             f"{args['repeats']} fits (spread: min-max of the fit's seconds). "
             "`collective_share`: the fit's time in the per-sweep sum of the counts.", "",
             markdown_table(out["rows"], ["K", "processes", "s_per_sweep", "spread_s",
                                          "M_tokens_per_s", "collective_share",
                                          "same_as_one_process"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
