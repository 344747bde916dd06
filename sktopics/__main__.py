"""Command line: ``sktopics demo`` (or ``python -m sktopics demo``).

Fits a topic model on the BBC News corpus shipped inside the package, offline, and
prints its topics, its held-out score and its NPMI coherence.
"""

import argparse
import sys
import time

import numpy as np

MODELS = ("prodlda", "prodlda-faithful", "avitm")


def _build_model(name, n_topics, epochs, seed):
    from sktopics import AVITM, ProdLDA

    params = dict(n_components=n_topics, max_iter=epochs, device="cpu", random_state=seed)
    if name == "prodlda":
        return ProdLDA(**params)
    if name == "prodlda-faithful":
        return ProdLDA.from_preset("avitm", **params)
    return AVITM(**params)


def demo(model_name="prodlda", n_topics=20, epochs=50, seed=0, n_words=8, out=sys.stdout):
    """Fit ``model_name`` on the embedded BBC News corpus and report on it."""
    from sktopics import top_words
    from sktopics.datasets import load_bbc_news
    from sktopics.metrics import npmi_coherence, topic_diversity

    train = load_bbc_news(subset="train")
    test = load_bbc_news(subset="test")
    model = _build_model(model_name, n_topics, epochs, seed)
    print(f"sktopics demo: {type(model).__name__} ({model_name}), {n_topics} topics, {epochs} epochs on BBC "
          f"News ({train.data.shape[0]} training / {test.data.shape[0]} held-out documents, "
          f"{train.data.shape[1]} words), device {model.device}", file=out)
    start = time.perf_counter()
    model.fit(train.data)
    seconds = time.perf_counter() - start
    print(f"fitted in {seconds:.1f} s\n", file=out)
    for k, words in enumerate(top_words(model, n_words, feature_names=train.feature_names)):
        print(f"topic {k:2d}: {' '.join(words)}", file=out)
    score = model.score(test.data)
    npmi = npmi_coherence(model, test.data, top_n=10, zero_cooccurrence="zero")
    print(f"\nheld-out log-likelihood per token (score): {score:.4f} "
          f"(perplexity {np.exp(-score):.1f})", file=out)
    print(f"NPMI coherence (held-out documents as reference, top 10 words, "
          f"boolean documents, zero convention): {npmi.mean:.3f}", file=out)
    print(f"topic diversity (top 25 words): {topic_diversity(model, 25):.3f}", file=out)
    return model


def main(argv=None):
    parser = argparse.ArgumentParser(prog="sktopics", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run = commands.add_parser("demo", help="fit a topic model on the embedded BBC corpus")
    run.add_argument("--model", choices=MODELS, default="prodlda",
                     help="prodlda: ProdLDA at its defaults (default); prodlda-faithful: "
                          "the original AVITM code's settings (preset 'avitm'); avitm: "
                          "LDA by AEVB")
    run.add_argument("--topics", type=int, default=20)
    run.add_argument("--epochs", type=int, default=50)
    run.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.command == "demo":
        demo(args.model, args.topics, args.epochs, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
