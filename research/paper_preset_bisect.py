"""The paper's configuration: where sktopics and a plain faithful loop differ.

Bisects between the plain torch loop of ``benchmarks/_plain_vae.py`` (written from
the AVITM paper and its original code, each model at its own settings,
``_plain_vae.PAPER``) and ``ProdLDA`` / ``AVITM.from_preset("avitm")``.

``parity``: the estimator's module at the start of a fit is copied into the plain
loop, which then trains on the same batches with the same random draws (the global
torch stream, the estimator's dropout class); the two per-step losses are compared.
Equal losses mean that the estimator's training (sparse batches, fused kernels,
skorch's step, the batch sampling) is the plain loop's, and that what is left is the
initialisation.

``quality``: held-out NPMI (boolean documents, epsilon convention, top 10) and TD@10
of four codes per (model, corpus, seed), 50 epochs, K = 50: the plain loop with
PyTorch's initialisation (what a user writes), the plain loop with the original
code's (Glorot-uniform weights, zero biases), the estimator as it is at the commit
run, and the estimator with the other initialisation.

Usage::

    python research/paper_preset_bisect.py parity
    python research/paper_preset_bisect.py quality --corpora 20ng nyt --seeds 0 1 2
    SKTOPICS_RESEARCH_TINY=1 python research/paper_preset_bisect.py parity   # a check

Writes ``research/results/<name>.{json,rst}`` (research/README.md says what the runs
found). The tiny mode (``_tiny.py``) runs one epoch on 600 20 Newsgroups documents
(``parity``) or on 300 BBC News documents with seed 0 (``quality``), and writes
elsewhere.
"""

import argparse
import copy
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import torch
from skorch.callbacks import Callback
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_home, machine, markdown_table, write_results  # noqa: E402
from _plain_vae import PAPER, PlainVAE, topic_word, train_plain  # noqa: E402

from sktopics import AVITM, ProdLDA  # noqa: E402
from sktopics._neural._data import CSRBatchIterator, CSRDataset  # noqa: E402
from sktopics._neural._modules import Dropout  # noqa: E402
from sktopics._neural._sparse import InputLinear  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny import TINY, results_dir  # noqa: E402
from neural_defaults import load  # noqa: E402

ESTIMATORS = {"ProdLDA": ProdLDA, "AVITM": AVITM}


def reinitialise(module, init):
    """Give the encoder's layers ``init``: "torch" (``nn.Linear``'s default) or
    "glorot" (Glorot-uniform weights, zero biases)."""
    for layer in module.encoder.modules():
        if isinstance(layer, (nn.Linear, InputLinear)):
            if init == "glorot":
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
            else:
                fan_in = layer.weight.shape[0 if isinstance(layer, InputLinear) else 1]
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(layer.weight, -bound, bound)
                nn.init.uniform_(layer.bias, -bound, bound)


def estimator(model_name, init=None):
    """The estimator class, its encoder re-initialised with ``init`` if given."""
    base = ESTIMATORS[model_name]
    if init is None:
        return base

    class Reinitialised(base):
        def _build_module(self, n_features):
            module = super()._build_module(n_features)
            reinitialise(module, init)
            return module

    Reinitialised.__name__ = base.__name__
    return Reinitialised


class _Recorder(Callback):
    """The module and torch's random state at the start of training, and each step's loss."""

    def initialize(self):
        self.losses = []
        return self

    def on_train_begin(self, net, **kwargs):
        self.state = copy.deepcopy(net.module_.state_dict())
        self.rng = torch.random.get_rng_state()
        self.seed = net.iterator_train__seed

    def on_batch_end(self, net, training=None, loss=None, **kwargs):
        if training:
            self.losses.append(float(loss))


def parity(model_name, X, epochs=3, seed=0):
    """Per-step losses of the estimator and of the plain loop started from its state."""
    settings = PAPER[model_name]
    model = ESTIMATORS[model_name].from_preset(
        "avitm", n_components=50, max_iter=epochs, random_state=seed, device="cpu", n_jobs=1,
        callbacks=[("recorder", _Recorder())]).fit(X)
    recorder = dict(model.net_.callbacks_)["recorder"]
    s = recorder.state
    plain = PlainVAE(X.shape[1], 50, settings["mixture"], dropout=settings["dropout"],
                     shared_noise=settings["shared_noise"])
    plain.encoder[4] = Dropout(settings["dropout"])  # the same draws from the same stream
    plain.theta_drop = Dropout(settings["dropout"])
    with torch.no_grad():
        plain.encoder[0].weight.copy_(s["encoder.hidden.0.weight"].T)
        plain.encoder[0].bias.copy_(s["encoder.hidden.0.bias"])
        plain.encoder[2].weight.copy_(s["encoder.hidden.2.weight"])
        plain.encoder[2].bias.copy_(s["encoder.hidden.2.bias"])
        for head in ("mu", "logvar"):
            getattr(plain, head).weight.copy_(s[f"encoder.{head}.weight"])
            getattr(plain, head).bias.copy_(s[f"encoder.{head}.bias"])
            getattr(plain, head + "_bn").bias.copy_(s[f"encoder.{head}_bn.bias"])
        plain.beta.copy_(s["decoder.beta"])
        plain.beta_bn.bias.copy_(s["decoder.bias" if settings["mixture"] else "decoder.bn.bias"])
    iterator = CSRBatchIterator(CSRDataset(X), 200, "with_replacement", seed=recorder.seed)
    batches = [rows for _ in range(epochs) for rows in list(iterator._index_batches())]
    torch.random.set_rng_state(recorder.rng)
    optimizer = torch.optim.Adam(plain.parameters(), lr=settings["learning_rate"],
                                 betas=(0.99, 0.999))
    data = torch.from_numpy(X.toarray())
    losses = []
    for rows in batches:
        loss = plain(data[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    ours, theirs = np.array(recorder.losses), np.array(losses)
    relative = np.abs(ours - theirs) / np.abs(theirs)
    apart = np.flatnonzero(relative > 1e-3)
    return {"model": model_name, "steps": len(losses),
            "max_rel_diff_first_10": f"{relative[:10].max():.1e}",
            "first_step_apart_by_1e-3": int(apart[0]) if apart.size else None,
            "max_rel_diff_all": f"{relative.max():.1e}",
            "loss_first": float(theirs[0]), "loss_last_ours": float(ours[-1]),
            "loss_last_plain": float(theirs[-1])}


def fit_code(code, model_name, X, seed, epochs):
    """Fit one code; return what the metrics take (a model or a topic-word matrix)."""
    settings = PAPER[model_name]
    if code.startswith("plain"):
        model, _ = train_plain(X, 50, epochs, seed=seed, init="glorot" if code == "plain_glorot"
                               else "torch", **{k: v for k, v in settings.items()})
        return topic_word(model)
    init = {"sktopics": None, "sktopics_torch_init": "torch",
            "sktopics_glorot_init": "glorot"}[code]
    cls = estimator(model_name, init)
    return cls(50, **{**ESTIMATORS[model_name].PRESETS["avitm"], "max_iter": epochs},
               random_state=seed, device="cpu", n_jobs=1).fit(X)


def summarise(rows):
    cells = {}
    for r in rows:
        cells.setdefault((r["model"], r["corpus"], r["code"]), []).append(r)
    out = []
    for (model, corpus, code), group in sorted(cells.items()):
        npmi = [g["npmi"] for g in group]
        out.append({"model": model, "corpus": corpus, "code": code, "seeds": len(group),
                    "npmi_mean": float(np.mean(npmi)),
                    "npmi_sd": float(np.std(npmi, ddof=1)) if len(npmi) > 1 else float("nan"),
                    "npmi_min": float(np.min(npmi)),
                    "npmi_max": float(np.max(npmi)),
                    "td10_mean": float(np.mean([g["td10"] for g in group])),
                    "fit_s": float(np.mean([g["fit_s"] for g in group]))})
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("part", choices=["parity", "quality", "merge"])
    parser.add_argument("--inputs", nargs="+", default=[],
                        help="merge: names of results/<name>.json to pool into --name")
    parser.add_argument("--data-home", default=default_data_home())
    parser.add_argument("--models", nargs="+", default=["ProdLDA", "AVITM"])
    parser.add_argument("--corpora", nargs="+", default=["20ng", "nyt"])
    parser.add_argument("--codes", nargs="+",
                        default=["plain", "plain_glorot", "sktopics", "sktopics_torch_init"])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--epochs", type=int, default=50)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--name", default=None)
    args = parser.parse_args()
    if TINY:
        args.corpora, args.seeds, args.epochs = ["bbc"], [0], 1
        args.codes = ["plain", "plain_glorot", "sktopics", "sktopics_torch_init",
                      "sktopics_glorot_init"]
    results = results_dir()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore", UserWarning)
    info = machine()
    name = args.name or f"paper_preset_{args.part}"
    if args.part == "parity":
        X = load_20news_avitm(args.data_home, subset="train").data.astype(np.float32)
        rows = [parity(m, X[:600], epochs=1) if TINY else parity(m, X) for m in args.models]
        write_results(name, {"machine": info, "rows": rows},
                      f"Commit {info.get('git_commit')}, 20news_avitm, K = 50, the paper's "
                      "settings, seed 0, 3 epochs: the estimator's per-step training loss "
                      "against the plain loop started from the estimator's module, batches "
                      "and random stream. Float32 rounding differences (summation order) "
                      "grow step by step, faster at AVITM's learning rate of 1e-2.\n\n"
                      + markdown_table(rows, list(rows[0])), directory=results)
        return
    if args.part == "merge":
        rows, runs = [], []
        for source in args.inputs:
            payload = json.loads((results / f"{source}.json").read_text())
            rows += payload["rows"]
            runs.append(f"{source} (commit {payload['machine'].get('git_commit')})")
        write_results(args.name, {"machine": info, "sources": runs, "rows": rows},
                      f"Pooled runs: {', '.join(runs)}; one thread per fit on the 2-core "
                      "AMD EPYC VM, K = 50, the paper's settings per model, 50 epochs; NPMI "
                      "on the held-out split (boolean documents, epsilon convention, top "
                      "10), TD@10; mean, sd, min and max over seeds.\n\n"
                      + markdown_table(summarise(rows), [
                          "model", "corpus", "code", "seeds", "npmi_mean", "npmi_sd",
                          "npmi_min", "npmi_max", "td10_mean"]), directory=results)
        return
    rows = []
    header = (f"Measured on {info['cpu']} ({args.threads} thread per fit), commit "
              f"{info.get('git_commit')}; K = 50, the paper's settings per model "
              f"(`from_preset(\"avitm\")`, `_plain_vae.PAPER`), {args.epochs} epochs; NPMI on "
              "the held-out split (boolean documents, epsilon convention, top 10), TD@10; "
              "mean, min and max over seeds.\n\n")
    corpora = {c: tuple(X[:300] if TINY else X for X in load(c, args.data_home))
               for c in args.corpora}
    for corpus, (X, X_test) in corpora.items():
        kept = X_test[np.asarray(X_test.sum(1)).ravel() > 0]
        for model_name in args.models:
            for seed in args.seeds:
                for code in args.codes:
                    start = time.perf_counter()
                    fitted = fit_code(code, model_name, X, seed, args.epochs)
                    row = {"model": model_name, "corpus": corpus, "code": code, "seed": seed,
                           "fit_s": time.perf_counter() - start,
                           "npmi": float(npmi_coherence(fitted, kept).mean),
                           "td10": float(topic_diversity(fitted, 10))}
                    rows.append(row)
                    print(row, flush=True)
                    write_results(name, {"machine": info, "args": vars(args), "rows": rows},
                                  header + markdown_table(summarise(rows), [
                                      "model", "corpus", "code", "seeds", "npmi_mean",
                                      "npmi_min", "npmi_max", "td10_mean", "fit_s"]),
                                  directory=results)


if __name__ == "__main__":
    main()
