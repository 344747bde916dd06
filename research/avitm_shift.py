"""AVITM's low topic diversity: the batch norm's learnable per-word shift.

Fits AVITM at its defaults (20 Newsgroups, K = 50, seed 0, 2 threads) with the
decoder's per-word shift learned (TF's ``center=True``, the original code) and frozen
at zero, and prints held-out NPMI, TD@10 and ``score``. Ran at commit 8772413; output
in ``research/results/avitm_shift.md``.
"""

import sys
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_home  # noqa: E402

from sktopics import AVITM  # noqa: E402
from sktopics.datasets import load_20news_avitm  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402

warnings.simplefilter("ignore")
DATA = default_data_home()
torch.set_num_threads(2)
X = load_20news_avitm(DATA, subset="train").data
Xt = load_20news_avitm(DATA, subset="test").data


class NoShift(AVITM):
    def _build_module(self, n_features):
        m = super()._build_module(n_features)
        m.decoder.bias.requires_grad_(False)
        return m


for cls in (AVITM, NoShift):
    m = cls(50, random_state=0, device="cpu", n_jobs=2).fit(X)
    print(cls.__name__, round(npmi_coherence(m, Xt).mean, 3), topic_diversity(m, 10),
          round(m.score(Xt[:2000]), 3), flush=True)
