"""Command line: ``sktopics demo`` (or ``python -m sktopics demo``)."""

import argparse
import os
import sys

from ._demo import MODELS, default_max_iter, model_key, run_demo

# The help is plain text: no reStructuredText markup reaches a terminal.
_TOP = "The sktopics command line (also 'python -m sktopics')."

_DEMO = """\
Fit a topic model on the BBC News corpus shipped with sktopics (offline, under two
minutes on a 2-core CPU), as README's quick start does: CountVectorizer, then the
model at its defaults, fitted on the 1,556 training articles. Prints the top words
of each topic, the fit's wall time, the held-out log-likelihood per token (the
model's score on the 335 test articles; higher is better), the mean NPMI coherence
of the topics in the test articles (the default of sktopics.metrics.npmi_coherence,
gensim's c_npmi convention) and their diversity."""


def _models_text():
    lines = ["models (--model), each at its defaults:"]
    for key, (name, what) in MODELS.items():
        n, unit = default_max_iter(key)
        lines.append(f"  {key:<10} {name}: {what}; {n} {unit}")
    return "\n".join(lines)


def _parsers():
    parser = argparse.ArgumentParser(
        prog="sktopics", description=_TOP,
        epilog="Run 'sktopics demo --help' for the demo's options and models.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo = commands.add_parser(
        "demo", help="fit a topic model on the BBC News corpus shipped with sktopics",
        description=_DEMO, epilog=_models_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    demo.add_argument("--model", type=model_key, choices=list(MODELS), default="lda-gibbs",
                      help="the model to fit (default lda-gibbs, the quick start's); class "
                           "names such as LDAGibbs work too, in any case")
    demo.add_argument("-k", "--n-components", type=int, default=20, metavar="K",
                      help="number of topics (default 20); for pamvi its sub-topics, for "
                           "molda the topics of its two LDAs together")
    demo.add_argument("--max-iter", type=int, default=None, metavar="N",
                      help="Gibbs sweeps (lda-gibbs) or training epochs (the others) "
                           "instead of the model's default: fewer for a quicker, rougher look")
    demo.add_argument("--random-state", type=int, default=0, metavar="SEED",
                      help="seed of the fit (default 0)")
    demo.add_argument("--top-words", type=int, default=8, metavar="N",
                      help="words printed per topic (default 8)")
    demo.add_argument("--device", default="auto",
                      help="'cpu', 'cuda' or 'auto' (default: a GPU when there is one)")
    return parser, demo


def main(argv=None):
    parser, demo = _parsers()
    args = parser.parse_args(argv)
    smallest = {"--n-components": 2 if args.model == "molda" else 1, "--max-iter": 1,
                "--top-words": 1}
    for option, least in smallest.items():
        value = getattr(args, option[2:].replace("-", "_"))
        if value is not None and value < least:
            demo.error(f"argument {option}: must be at least {least}"
                       + (" for molda, a mixture of two LDAs" if least == 2 else ""))
    try:
        run_demo(args.model, n_components=args.n_components, max_iter=args.max_iter,
                 random_state=args.random_state, device=args.device, top_n=args.top_words)
    except BrokenPipeError:  # the reader stopped early (``| head``): end quietly
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
