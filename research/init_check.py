"""Does the encoder's initialisation explain the paper configuration's gap to a plain loop?

The plain torch loop of ``benchmarks/_plain_vae.py`` initialises its encoder with
PyTorch's ``nn.Linear`` default (uniform in +-1/sqrt(fan_in), weights and biases);
sktopics follows the original TensorFlow code (Glorot-uniform weights, zero biases).
This fits ``ProdLDA.from_preset("avitm")`` (50 epochs, 20 Newsgroups, K = 50) with
each initialisation for seeds 0-2 and prints held-out NPMI and TD@10.

Ran at commit eb88d00; output in ``research/results/init_check.md``.
"""

import math
import sys
import warnings
from pathlib import Path

import torch
from torch import nn

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_home  # noqa: E402

from sktopics import ProdLDA  # noqa: E402
from sktopics._neural._sparse import InputLinear  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402


class TorchDefaultInit(ProdLDA):
    """ProdLDA whose encoder layers get PyTorch's default initialisation."""

    def _build_module(self, n_features):
        module = super()._build_module(n_features)
        for layer in module.encoder.modules():
            if isinstance(layer, (nn.Linear, InputLinear)):
                fan_in = layer.weight.shape[1 if isinstance(layer, nn.Linear) else 0]
                bound = 1 / math.sqrt(fan_in)
                nn.init.uniform_(layer.weight, -bound, bound)
                nn.init.uniform_(layer.bias, -bound, bound)
        return module


def main():
    warnings.simplefilter("ignore", UserWarning)
    torch.set_num_threads(1)
    X = load_20news_avitm(default_data_home(), subset="train").data
    X_test = load_20news_avitm(default_data_home(), subset="test").data
    print("| encoder init | seed | NPMI | TD@10 |\n|---|---|---|---|")
    for name, cls in (("Glorot (sktopics)", ProdLDA), ("PyTorch default", TorchDefaultInit)):
        for seed in (0, 1, 2):
            model = cls(50, random_state=seed, device="cpu", n_jobs=1,
                        **{**ProdLDA.PRESETS["avitm"], "max_iter": 50}).fit(X)
            print(f"| {name} | {seed} | {npmi_coherence(model, X_test).mean:.3f} | "
                  f"{topic_diversity(model, 10):.2f} |", flush=True)


if __name__ == "__main__":
    main()
