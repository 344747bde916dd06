"""Peak memory of streaming training and of evaluation, against corpus size.

Two sections, each case in a fresh process, peak resident memory sampled by
``_common.PeakRSS`` (every 5 ms) above the resident memory on entry:

``stream``
    A synthetic LDA corpus (K = 20 topics, 2,000 words, 50 tokens per document) is
    generated chunk by chunk (50,000 documents each, a fresh seed per chunk) and never
    held whole; ProdLDA (K = 20) trains by ``partial_fit`` on each chunk (one epoch).
    The goal: the peak stays flat, within 10 % from 4 to 40 chunks. Run twice: with
    glibc's default allocator, whose mmap threshold grows with the largest block
    freed (large temporaries then come from the heap, which fragments), and with
    ``MALLOC_MMAP_THRESHOLD_=131072``, which keeps it fixed.
``evaluation``
    ``transform``, ``score`` and ``score_samples`` of 100,000 such documents (80
    tokens each) by each estimator fitted on 5,000 of them (LDAGibbs, ProdLDA and
    AVITM with K = 20, PAMVI with 5 / 20, MoLDA with two components of 10), after a
    call on 100 of them (so that compiling or loading a kernel is not counted). The
    goal: the rise of the peak is at most 1.5 times the CSR matrix plus the output.

Writes ``benchmarks/results/streaming.{json,rst}``; a section not run keeps its rows
from the previous results file, each section with the commit and machine load it
ran at (``--report-only`` redraws the page from the JSON)::

    python benchmarks/bench_streaming.py [--chunks 4,40] [--sections stream,evaluation]
"""

import argparse
import json
import os
import subprocess
import sys

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

CHILD = r'''
import gc, json, sys, time
sys.path.insert(0, sys.argv[1])
import torch
from _common import PeakRSS
from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA
from sktopics.datasets import make_lda_corpus
torch.set_num_threads(1)
section, args = sys.argv[2], sys.argv[3:]
out = {"section": section}
if section == "stream":
    n_chunks = int(args[0])
    def chunks():
        for i in range(n_chunks):
            yield make_lda_corpus(n_samples=50_000, n_features=2000, n_components=20,
                                  doc_length=50, random_state=1000 + i)[0]
    model = ProdLDA(20, batch_size=500, device="cpu", random_state=0)
    gc.collect()
    with PeakRSS(interval=0.005) as rss:
        tic = time.perf_counter()
        for X in chunks():
            model.partial_fit(X)
        out["seconds"] = time.perf_counter() - tic
    out.update(n_chunks=n_chunks, n_docs=50_000 * n_chunks, peak_rise_mb=rss.rise_mb)
else:
    name, what = args
    X = make_lda_corpus(n_samples=100_000, n_features=2000, n_components=20, doc_length=80,
                        random_state=1)[0]
    neural = dict(max_iter=2, batch_size=200, device="cpu", random_state=0)
    model = {"LDAGibbs": lambda: LDAGibbs(20, max_iter=20, device="cpu", random_state=0),
             "ProdLDA": lambda: ProdLDA(20, **neural), "AVITM": lambda: AVITM(20, **neural),
             "PAMVI": lambda: PAMVI(structure=(5, 20), **neural),
             "MoLDA": lambda: MoLDA(component_sizes=(10, 10), **neural)}[name]()
    model.fit(X[:5000])
    getattr(model, what)(X[:100])  # compiled kernels loaded (or compiled) outside the peak
    gc.collect()
    with PeakRSS(interval=0.005) as rss:
        tic = time.perf_counter()
        result = getattr(model, what)(X)
        out["seconds"] = time.perf_counter() - tic
    csr_mb = (X.data.nbytes + X.indices.nbytes + X.indptr.nbytes) / 2**20
    output_mb = getattr(result, "nbytes", 0) / 2**20
    out.update(model=name, call=what, n_docs=X.shape[0], csr_mb=csr_mb, output_mb=output_mb,
               peak_rise_mb=rss.rise_mb, ratio=rss.rise_mb / (csr_mb + output_mb))
print("RESULT " + json.dumps(out))
'''


#: The stream runs under glibc's default allocator and with a fixed mmap threshold.
ALLOCATORS = {"glibc default": {}, "MALLOC_MMAP_THRESHOLD_=131072":
              {"MALLOC_MMAP_THRESHOLD_": "131072"}}


def _run(*args, env=None):
    here = os.path.dirname(os.path.abspath(__file__))
    done = subprocess.run([sys.executable, "-c", CHILD, here, *map(str, args)],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, **(env or {})})
    row = json.loads(done.stdout.split("RESULT ", 1)[1])
    print(row, flush=True)
    return row


def _previous(path):
    """The previous results, so that a section not run now keeps its rows."""
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {}


def _ran_at(section):
    """Where a section's rows come from: its commit and the machine's load."""
    load = (load_sentence(section["load"]) if "load" in section
            else "The machine's load was not recorded.")
    return f"Commit {commit_text(section['machine'])}. {load}"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--chunks", default="4,40", help="numbers of 50,000-document chunks")
    p.add_argument("--sections", default="stream,evaluation")
    add_result_arguments(p, "streaming")
    args = p.parse_args()
    path = args.output_dir / f"{args.output_name}.json"
    if args.report_only:
        return report_only([path], report)
    sections = args.sections.split(",")
    info = machine()
    payload = {"machine": info}
    previous = _previous(path)
    for name in ("stream", "evaluation"):
        if name not in sections:
            old = previous.get(name)
            if isinstance(old, dict):
                payload[name] = old
            elif old:  # an older file: rows only, at the file's commit
                payload[name] = {"rows": old, "machine": previous["machine"]}
                if name == "stream":
                    payload[name]["growth"] = previous.get("stream_growth", {})
            continue
        with MachineLoad() as load:
            if name == "stream":
                rows, growth = [], {}
                for allocator, env in ALLOCATORS.items():
                    runs = [{"allocator": allocator, **_run("stream", n, env=env)}
                            for n in map(int, args.chunks.split(","))]
                    growth[allocator] = runs[-1]["peak_rise_mb"] / runs[0]["peak_rise_mb"] - 1
                    rows += runs
                result = {"rows": rows, "growth": growth}
            else:
                result = {"rows": [_run("evaluation", model, call)
                                   for model in ("LDAGibbs", "ProdLDA", "AVITM", "PAMVI",
                                                 "MoLDA")
                                   for call in ("transform", "score", "score_samples")]}
        payload[name] = {**result, "machine": info, "load": load.summary()}
    write_results(args.output_name, payload, report, directory=args.output_dir)


def report(payload):
    """The results page of :func:`main`'s JSON."""
    info = payload["machine"]

    lines = ["# Peak memory of streaming training and of evaluation", "",
             f"Machine: {info['cpu']}, one torch thread; each case in a fresh "
             "process; the rise of the peak resident memory above the start, sampled every "
             "5 ms. Synthetic LDA corpora (K = 20, 2,000 words).", ""]
    stream = payload.get("stream")
    if stream:
        rows = stream["rows"]
        lines += ["## ProdLDA partial_fit, one epoch per 50,000-document chunk (50 tokens each)",
                  "", _ran_at(stream), "",
                  markdown_table(rows, ["allocator", "n_chunks", "n_docs", "seconds",
                                        "peak_rise_mb"]),
                  f"Growth of the peak from {rows[0]['n_chunks']} to {rows[-1]['n_chunks']} "
                  "chunks (goal: within 10 %): "
                  + ", ".join(f"{a} {100 * g:+.1f} %" for a, g in stream["growth"].items())
                  + ".", ""]
    evaluation = payload.get("evaluation")
    if evaluation:
        lines += ["## transform, score and score_samples of 100,000 documents (80 tokens each)",
                  "",
                  _ran_at(evaluation), "",
                  "`ratio`: the rise of the peak over the CSR matrix plus the output "
                  "(goal: at most 1.5).", "",
                  markdown_table(evaluation["rows"], ["model", "call", "seconds", "csr_mb",
                                                      "output_mb", "peak_rise_mb", "ratio"])]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
