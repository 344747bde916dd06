"""Peak memory of streaming training and evaluation against corpus size.

A synthetic LDA corpus (K = 20 topics, 2,000 words, 50 tokens per document) is
generated chunk by chunk (50,000 documents each, a fresh seed per chunk) and never
held whole: ProdLDA (K = 20) trains by ``partial_fit`` on each chunk (one epoch),
then ``transform`` runs chunk by chunk, then ``score`` runs on a fixed 5,000-document
held-out chunk. Each corpus size runs in a fresh process; its peak resident memory
(``ru_maxrss``) is read after each phase. Writes ``benchmarks/results/streaming.{json,md}``.
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import machine, write_results

CHILD = r'''
import json, resource, sys, time
from sktopics import ProdLDA
from sktopics.datasets import make_lda_corpus
n_docs, chunk = int(sys.argv[1]), 50_000
def peak_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
def chunks():
    for i in range(n_docs // chunk):
        yield make_lda_corpus(n_samples=chunk, n_features=2000, n_components=20, doc_length=50,
                              random_state=1000 + i)[0]
out = {"n_docs": n_docs}
model = ProdLDA(20, batch_size=500, device="cpu", random_state=0)
out["start_mb"] = peak_mb()
t = time.perf_counter()
for X in chunks():
    model.partial_fit(X)
out["fit_s"], out["fit_peak_mb"] = time.perf_counter() - t, peak_mb()
t = time.perf_counter()
for X in chunks():
    model.transform(X)
out["transform_s"], out["transform_peak_mb"] = time.perf_counter() - t, peak_mb()
held_out = make_lda_corpus(n_samples=5000, n_features=2000, n_components=20, doc_length=50,
                           random_state=1)[0]
t = time.perf_counter()
out["score"] = model.score(held_out)
out["score_s"], out["score_peak_mb"] = time.perf_counter() - t, peak_mb()
print("RESULT " + json.dumps(out))
'''


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--sizes", default="1000000,2000000,5000000")
    args = p.parse_args()
    rows = []
    for n in (int(s) for s in args.sizes.split(",")):
        out = subprocess.run([sys.executable, "-c", CHILD, str(n)], capture_output=True,
                             text=True, check=True).stdout
        rows.append(json.loads(out.split("RESULT ", 1)[1]))
        print(rows[-1], flush=True)
    lines = ["# Streaming ProdLDA: peak memory against corpus size", "",
             (f"Machine: {machine()['cpu']}, one torch thread. Synthetic LDA corpus (K = 20, "
              "2,000 words, 50 tokens per document) generated in chunks of 50,000 documents, "
              "never whole; ProdLDA(20) partial_fit per chunk (one epoch), transform per "
              "chunk, score of a 5,000-document held-out chunk. Peak resident memory of the "
              "process after each phase."), "",
             "| documents | fit s | peak MB after fit | transform s | peak MB after transform "
             "| peak MB after score |", "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['n_docs']:,} | {r['fit_s']:.0f} | {r['fit_peak_mb']:.0f} | "
                     f"{r['transform_s']:.0f} | {r['transform_peak_mb']:.0f} | "
                     f"{r['score_peak_mb']:.0f} |")
    write_results("streaming", {"machine": machine(), "rows": rows}, "\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
