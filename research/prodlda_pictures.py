"""What a ProdLDA's pictures show: pyLDAvis' topic map and the top-word bars.

ProdLDA (defaults) and LDAGibbs (defaults), K = 20, on the BBC News corpus shipped
with sktopics (``CountVectorizer(token_pattern=r"\\S+")``), seed 0. The map is the one
pyLDAvis draws (``pyLDAvis.prepare``'s default ``js_PCoA``): classical
multidimensional scaling of the topics' pairwise Jensen-Shannon distances, circles
sized by each topic's share of the corpus's tokens. Three maps: LDAGibbs'
``components_``; ProdLDA's ``components_ = softmax(beta_)``; the distributions
``to_pyldavis`` exports for ProdLDA (each topic's words in a document made of it
alone). Prints the mean pairwise Jensen-Shannon divergence and the maps' extent.
Then ``TopicWordsDisplay`` of the ProdLDA (its bars are ``beta_`` over each topic's
mean logit).

Writes ``research/results/prodlda_pictures_map.png`` and
``prodlda_pictures_words.png``, the neural guide's figures. ``SKTOPICS_RESEARCH_TINY=1``
(``_tiny.py``): 200 documents, two Gibbs sweeps and one epoch, the pictures written
elsewhere: a check that the study runs, in seconds.
"""

import sys
from pathlib import Path

import matplotlib
import numpy as np
import torch
from scipy.spatial.distance import jensenshannon
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import machine  # noqa: E402

from sktopics import LDAGibbs, ProdLDA  # noqa: E402
from sktopics.datasets import load_bbc_news  # noqa: E402
from sktopics.inspection import TopicWordsDisplay, to_pyldavis  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _tiny import TINY, results_dir  # noqa: E402


def js_pcoa(topic_word):
    """pyLDAvis' default map: classical MDS of the pairwise Jensen-Shannon distances."""
    k = len(topic_word)
    distance = np.array([[jensenshannon(topic_word[i], topic_word[j]) for j in range(k)]
                         for i in range(k)])
    centring = np.eye(k) - 1.0 / k
    inner = -0.5 * centring @ (distance ** 2) @ centring
    values, vectors = np.linalg.eigh(inner)
    order = np.argsort(values)[::-1][:2]
    return vectors[:, order] * np.sqrt(np.maximum(values[order], 0)), distance


def main():
    torch.set_num_threads(1)
    info = machine()
    print(f"Commit {info.get('git_commit')}, {info['cpu']}, one thread; BBC News (shipped), "
          "K = 20, seed 0, each model at its defaults.\n")
    texts = load_bbc_news(subset="train").texts
    results = results_dir()
    gibbs, prodlda = {}, {}
    if TINY:
        texts = texts[:200]
        gibbs, prodlda = {"max_iter": 2, "burn_in": 0, "n_kept_samples": 1}, {"max_iter": 1}
    maps = []
    pipes = {}
    for name, model in (("LDAGibbs", LDAGibbs(20, device="cpu", random_state=0, **gibbs)),
                        ("ProdLDA", ProdLDA(20, device="cpu", random_state=0, **prodlda))):
        pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+"), model).fit(texts)
        pipes[name] = pipe
        exported = to_pyldavis(pipe, texts)
        sizes = exported["doc_topic_dists"].T @ exported["doc_lengths"]
        if name == "ProdLDA":
            print(f"- ProdLDA's components_: largest entry of a topic {model.components_.max(1).mean():.5f} "
                  f"(mean over topics), uniform {1 / model.components_.shape[1]:.5f}")
            maps.append(("ProdLDA: components_ = softmax(beta_)", model.components_, sizes))
            maps.append(("ProdLDA: to_pyldavis (a document of one topic)",
                         exported["topic_term_dists"], sizes))
        else:
            maps.append(("LDAGibbs: components_", exported["topic_term_dists"], sizes))
    fig, axes = plt.subplots(1, 3, figsize=(13, 4.6), sharex=True, sharey=True)  # one scale
    for ax, (title, topic_word, sizes) in zip(axes, maps):
        coordinates, distance = js_pcoa(topic_word)
        spread = np.ptp(coordinates, axis=0).max()
        mean_js = np.mean((distance ** 2)[np.triu_indices(len(distance), 1)])
        print(f"- {title}: mean pairwise JS divergence {mean_js:.4f}, map extent "
              f"{spread:.4f}")
        ax.scatter(coordinates[:, 0], coordinates[:, 1], s=3000 * sizes / sizes.sum(),
                   alpha=0.5, edgecolor="k")
        for k, (x, y) in enumerate(coordinates):
            ax.annotate(str(k), (x, y), ha="center", va="center", fontsize=7)
        ax.set_title(f"{title}\nmean JS {mean_js:.3f}, extent {spread:.3f}", fontsize=9)
        ax.set_xlabel("PC1 (JS distance, classical MDS)")
        ax.set_ylabel("PC2")
    axes[0].set_xlim(-0.45, 0.45)
    axes[0].set_ylim(-0.4, 0.4)
    fig.suptitle("pyLDAvis' topic map (js_PCoA) of BBC News, K = 20, on one scale; circle "
                 "area: share of the tokens", fontsize=10)
    fig.tight_layout()
    fig.savefig(results / "prodlda_pictures_map.png", dpi=90)
    display = TopicWordsDisplay.from_estimator(pipes["ProdLDA"], top_n=8, topics=range(10))
    display.figure_.suptitle("ProdLDA, BBC News: top words by beta_ (over the topic's mean "
                             "logit)", fontsize=10)
    display.figure_.tight_layout()
    display.figure_.savefig(results / "prodlda_pictures_words.png", dpi=80)


if __name__ == "__main__":
    sys.exit(main())
