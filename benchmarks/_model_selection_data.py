"""The test sets and the K = 50 models shared by two model-selection benchmarks.

``bench_model_selection.py`` (Foulds & Smyth reproduced) measures its estimators on
them, and ``bench_model_selection_speed.py --speed`` times every evaluator on the same
documents and models. NIPS (``nips_uci_giuseppedib``): the first ``--nips-docs`` test
documents of a seeded permutation. 20 Newsgroups (``20news_avitm``): ``--ng-docs``
test documents drawn with a fixed seed among those of at most ``--ng-max-length``
tokens. Models: :class:`sktopics.LDAGibbs`, K = 50, beta = 0.01, ``--fit-sweeps``
sweeps, ``random_state=0``; symmetric alpha = 0.1, and an asymmetric alpha learned
from the counts (every 20 sweeps after sweep 100), cached in ``--model-cache``.
"""

import os
import time

import numpy as np
from _common import default_data_home

from sktopics import LDAGibbs
from sktopics.datasets import load_20news_avitm, load_nips


def add_data_arguments(parser):
    """The options of the test sets and the models, and ``--quick`` (see :func:`quick`)."""
    parser.add_argument("--nips-docs", type=int, default=150)
    parser.add_argument("--ng-docs", type=int, default=600)
    parser.add_argument("--ng-max-length", type=int, default=400,
                        help="20NG test documents longer than this are left out (2 %% of "
                             "them): a lock-step sweep costs one step per position of the "
                             "longest one")
    parser.add_argument("--fit-sweeps", type=int, default=400)
    parser.add_argument("--model-cache", default=os.path.join(os.path.expanduser("~"), ".cache",
                                                               "sktopics_bench"))
    parser.add_argument("--quick", action="store_true", help="tiny settings (smoke test)")


def quick(args):
    """``--quick``: a few documents, short fits, results named ``model_selection_quick``."""
    args.nips_docs, args.ng_docs, args.fit_sweeps = 5, 30, 20
    args.output_name = "model_selection_quick"


def load(corpus, args):
    """``(train, test)`` counts of ``corpus`` (``"nips"`` or ``"20ng"``), the test set
    cut to the benchmark's documents."""
    data = default_data_home()
    if corpus == "nips":
        train = load_nips(data, subset="train").data.astype(np.float64)
        test = load_nips(data, subset="test").data.astype(np.float64)
        rows = np.sort(np.random.default_rng(0).permutation(test.shape[0])[: args.nips_docs])
    else:
        train = load_20news_avitm(data, subset="train").data.astype(np.float64)
        test = load_20news_avitm(data, subset="test").data.astype(np.float64)
        lengths = np.asarray(test.sum(1)).ravel()
        nonempty = np.flatnonzero((lengths > 0) & (lengths <= args.ng_max_length))
        rows = nonempty[np.sort(np.random.default_rng(0).choice(len(nonempty), args.ng_docs,
                                                                replace=False))]
    return train, test[rows]


def fit_models(corpus, train, args):
    """Symmetric- and asymmetric-alpha LDAGibbs models (cached on disk)."""
    path = os.path.join(args.model_cache, f"{corpus}_k50_{args.fit_sweeps}.npz")
    if os.path.exists(path):
        cached = dict(np.load(path))
        return {k: (v.item() if v.ndim == 0 else v) for k, v in cached.items()}
    if train is None:
        raise SystemExit(f"{path} not found: the timed runs reuse the models of a run with "
                         "the training set and the same --fit-sweeps; run one first.")
    out = {}
    for kind in ("sym", "asym"):
        t = time.perf_counter()
        kw = {"optimize_interval": None} if kind == "sym" else {"optimize_interval": 20, "burn_in": 100}
        m = LDAGibbs(50, doc_topic_prior=0.1, topic_word_prior=0.01, max_iter=args.fit_sweeps,
                     device="cpu", random_state=0, **kw).fit(train)
        out[f"phi_{kind}"], out[f"alpha_{kind}"] = m.components_, m.doc_topic_prior_
        out[f"seconds_{kind}"] = time.perf_counter() - t
    os.makedirs(args.model_cache, exist_ok=True)
    np.savez(path, **out)
    return out


def perturb(phi, sigma, seed=1):
    """``phi * exp(sigma * eps)``, each topic renormalised (``eps`` standard normal)."""
    eps = np.random.default_rng(seed).standard_normal(phi.shape)
    out = phi * np.exp(sigma * eps)
    return out / out.sum(1, keepdims=True)
