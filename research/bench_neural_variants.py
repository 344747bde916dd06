"""ProdLDA training variants on one corpus: the exploration behind the "diverse" preset.

Fits ProdLDA (K = 50, 100 epochs, seed 0) once per variant given as keyword
arguments and prints test NPMI (boolean documents, top 10, epsilon / zero
conventions), topic diversity (top 10 / 25) and the held-out ``score``.

Usage::

    python research/bench_neural_variants.py --corpus 20news_avitm \
        '{}' '{"dropout": 0.2}' '{"dropout": 0.2, "batch_size": 64, "batch_sampling": "shuffle"}'

The numbers recorded in ``results/neural_variants.md`` were printed by this script
(before ``score`` became the importance-sampling estimate, when it was the ELBO).
"""

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))  # _common, bench_pam
from _common import default_data_home

from sktopics import ProdLDA
from sktopics.datasets import load_20news_avitm, load_20ng_etm
from sktopics.metrics import npmi_coherence, topic_diversity

LOADERS = {"20news_avitm": load_20news_avitm, "20ng_etm": load_20ng_etm}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("variants", nargs="+", help="JSON dicts of ProdLDA parameters")
    parser.add_argument("--corpus", choices=sorted(LOADERS), default="20news_avitm")
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    load = LOADERS[args.corpus]
    X = load(args.data_home, subset="train").data
    X_test = load(args.data_home, subset="test").data
    warnings.simplefilter("ignore", UserWarning)  # out-of-vocabulary top words
    for text in args.variants:
        params = json.loads(text)
        model = ProdLDA(50, random_state=0, device="cpu", **params)
        start = time.perf_counter()
        model.fit(X)
        seconds = time.perf_counter() - start
        print(params, f"fit {seconds:.1f}",
              f"npmi eps {npmi_coherence(model, X_test).mean:.3f}",
              f"zero {npmi_coherence(model, X_test, zero_cooccurrence='zero').mean:.3f}",
              f"td10 {topic_diversity(model, 10):.3f} td25 {topic_diversity(model, 25):.3f}",
              f"score {model.score(X_test):.3f}", flush=True)


if __name__ == "__main__":
    main()
