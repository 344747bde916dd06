"""Model files: ``sktopics.save`` / ``sktopics.load`` against pickle, on 20 Newsgroups.

Fits LDAGibbs (at its defaults, and with ``warm_start=True``, which keeps the chain's
topic assignments: one byte a token) and ProdLDA (at its defaults) with K = 50 on the
20 Newsgroups training set (AVITM's preprocessing, read from ``--data-home``), then for
each model: the size of the file ``sktopics.save`` writes and of ``pickle.dumps``
(highest protocol), and the time to write and to read each, the median of
``--repeats`` (default 5) with its min-max. Reading is ``sktopics.load(path,
device="cpu")`` against ``pickle.load`` of an open file; both read from the page cache
(the file was just written), so the times are the decoding's, not the disk's. Every
loaded model's ``transform`` is checked against the original's. Records the machine,
the commit and the load (``_common.MachineLoad``). Writes
``<output-dir>/<output-name>.{json,rst}``, by default
``benchmarks/results/persistence.*`` (``--report-only`` redraws the page from the JSON).

Trial run (toy size, elsewhere)::

    python benchmarks/bench_persistence.py --max-docs 300 --gibbs-iter 5 --epochs 2 \\
        --repeats 2 --output-dir /tmp/persistence_trial
"""

import argparse
import os
import pickle
import sys
import tempfile
import time
import warnings
from pathlib import Path

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

import sktopics  # noqa: E402
from sktopics import LDAGibbs, ProdLDA  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402


def models(args):
    """``{name: unfitted model}`` of the run."""
    gibbs = dict(n_components=args.topics, device="cpu", random_state=args.seed)
    if args.gibbs_iter is not None:
        gibbs["max_iter"] = args.gibbs_iter
    neural = dict(n_components=args.topics, device="cpu", random_state=args.seed)
    if args.epochs is not None:
        neural["max_iter"] = args.epochs
    return {
        "LDAGibbs": LDAGibbs(**gibbs),
        "LDAGibbs, warm_start=True": LDAGibbs(warm_start=True, **gibbs),
        "ProdLDA": ProdLDA(**neural),
    }


def _timed(function, repeats):
    times = []
    for _ in range(repeats):
        tic = time.perf_counter()
        result = function()
        times.append(time.perf_counter() - tic)
    return result, times


def measure(name, model, X, folder, repeats):
    """Sizes and times of both formats for one fitted model."""
    stem = folder / name.split(",")[0].lower()
    st_path, pk_path = stem.with_suffix(".safetensors"), stem.with_suffix(".pkl")

    def pickle_save():
        with open(pk_path, "wb") as handle:
            pickle.dump(model, handle, protocol=pickle.HIGHEST_PROTOCOL)

    def pickle_load():
        with open(pk_path, "rb") as handle:
            return pickle.load(handle)

    _, st_save = _timed(lambda: sktopics.save(model, st_path), repeats)
    _, pk_save = _timed(pickle_save, repeats)
    st_model, st_load = _timed(lambda: sktopics.load(st_path, device="cpu"), repeats)
    pk_model, pk_load = _timed(pickle_load, repeats)
    probe = X[:200]
    expected = model.transform(probe)
    same = {"safetensors": bool(np.array_equal(st_model.transform(probe), expected)),
            "pickle": bool(np.array_equal(pk_model.transform(probe), expected))}
    return {
        "model": name, "params": {k: repr(v) for k, v in model.get_params().items()},
        "n_iter": int(model.n_iter_),
        "safetensors": {"bytes": st_path.stat().st_size, "save_seconds": st_save,
                        "load_seconds": st_load},
        "pickle": {"bytes": pk_path.stat().st_size, "save_seconds": pk_save,
                   "load_seconds": pk_load},
        "same_transform": same,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data-home", default=default_data_home())
    p.add_argument("--topics", type=int, default=50, help="K (default 50)")
    p.add_argument("--repeats", type=int, default=5, help="timed saves and loads (default 5)")
    p.add_argument("--max-docs", type=int, default=None,
                   help="train on the first documents only (a trial run)")
    p.add_argument("--gibbs-iter", type=int, default=None,
                   help="LDAGibbs sweeps (default: its max_iter, 500)")
    p.add_argument("--epochs", type=int, default=None,
                   help="ProdLDA epochs (default: its max_iter, 'auto')")
    p.add_argument("--seed", type=int, default=0)
    add_result_arguments(p, "persistence")
    args = p.parse_args()
    if args.report_only:
        return report_only([args.output_dir / f"{args.output_name}.json"], report)
    X = load_20news_avitm(args.data_home, subset="train").data.tocsr()
    if args.max_docs is not None:
        X = X[:args.max_docs]
    info = machine()
    rows = []
    with MachineLoad() as load, tempfile.TemporaryDirectory() as folder:
        for name, model in models(args).items():
            tic = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                model.fit(X)
            fit_seconds = time.perf_counter() - tic
            row = measure(name, model, X, Path(folder), args.repeats)
            row["fit_seconds"] = fit_seconds
            rows.append(row)
            print(f"{name}: {row['safetensors']['bytes'] / 1e6:.2f} MB "
                  f"(pickle {row['pickle']['bytes'] / 1e6:.2f} MB), load "
                  f"{np.median(row['safetensors']['load_seconds']) * 1e3:.1f} ms "
                  f"(pickle {np.median(row['pickle']['load_seconds']) * 1e3:.1f} ms)", flush=True)
    data = {"corpus": "20 Newsgroups (AVITM), training set", "n_documents": int(X.shape[0]),
            "n_features": int(X.shape[1]), "n_tokens": float(X.sum())}
    out = {"machine": info, "load": load.summary(), "args": vars(args), "data": data,
           "versions": {"safetensors": _version("safetensors"), "skorch": _version("skorch")},
           "rows": rows}
    write_results(args.output_name, out, report, directory=args.output_dir)


def _version(package):
    import importlib.metadata

    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _ms(values):
    """Median (min-max) in milliseconds."""
    values = np.asarray(values) * 1e3
    return f"{np.median(values):.1f} ({values.min():.1f}-{values.max():.1f})"


def report(out):
    """The results page of :func:`main`'s JSON."""
    info, args, data = out["machine"], out["args"], out["data"]
    rows = []
    for row in out["rows"]:
        st, pk = row["safetensors"], row["pickle"]
        rows.append({
            "model": row["model"],
            "file MB": f"{st['bytes'] / 1e6:.2f}",
            "pickle MB": f"{pk['bytes'] / 1e6:.2f}",
            "load ms": _ms(st["load_seconds"]),
            "pickle load ms": _ms(pk["load_seconds"]),
            "save ms": _ms(st["save_seconds"]),
            "pickle save ms": _ms(pk["save_seconds"]),
            "same transform": "yes" if all(row["same_transform"].values()) else "**no**",
        })
    repeats = args["repeats"]
    lines = ["# Model files against pickle", "",
             (f"Machine: {info['cpu']} ({info['simd']}), {info['cpu_count']} cores, torch "
              f"{info['torch']}, safetensors {out['versions']['safetensors']}; commit "
              f"{commit_text(info)}. {load_sentence(out['load'])}"), "",
             (f"{data['corpus']}: {data['n_documents']:,} documents, {data['n_features']:,} "
              f"words, {data['n_tokens']:,.0f} tokens; K = {args['topics']}, on the CPU. "
              "'file': `sktopics.save` (one safetensors file), 'pickle': `pickle.dump` at the "
              "highest protocol. Times: median (min-max) of "
              f"{repeats} saves and {repeats} loads, read from the page cache; loading is "
              "`sktopics.load(path, device='cpu')` (which rebuilds ProdLDA's network and "
              "checks every shape) and `pickle.load`. 'same transform': both loaded models "
              "give the original's `transform` bit for bit. LDAGibbs with "
              "`warm_start=True` keeps the chain's topic assignments (one byte a token) "
              "so that a later `fit` or `partial_fit` continues it."), "",
             markdown_table(rows, list(rows[0]))]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
