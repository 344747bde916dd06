"""AVITM on counts and on tf-idf: how near-duplicate its topics get, and what to warn on.

Fits ``AVITM()`` at its defaults on several corpora, once on the counts and once on
the same documents' tf-idf weights (``TfidfTransformer`` on the counts), and prints
per fit: TD@10, the number of topics that share at least 6, 7 or 8 of their top 10
words with another topic, the mean largest share of ``transform`` and the warnings
raised. Used to set the near-duplicate warning's threshold on the counts/tf-idf
contrast rather than on one corpus (research/README.md says what it found).

Usage: ``python research/avitm_duplicates.py``; ``SKTOPICS_RESEARCH_TINY=1``
(``_tiny.py``): 300 BBC News documents, K = 5, one epoch, a check that it runs.
"""

import sys
import tarfile
import warnings
from pathlib import Path

import numpy as np
import torch
from sklearn.feature_extraction.text import CountVectorizer, TfidfTransformer

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import default_data_home, machine  # noqa: E402
from _tiny import TINY  # noqa: E402
from short_texts import load as load_short  # noqa: E402

from sktopics import AVITM  # noqa: E402
from sktopics._neural._collapse import _near_duplicates  # noqa: E402
from sktopics.datasets import load_20news_avitm, load_octis  # noqa: E402
from sktopics.metrics import topic_diversity  # noqa: E402


def raw_posts(data_home, n=4000):
    path = Path(data_home) / "20news_bydate" / "20news-bydate.tar.gz"
    with tarfile.open(path) as archive:
        members = [m for m in archive.getmembers() if m.isfile() and "-train/" in m.name]
        members = [members[i] for i in np.random.default_rng(0).permutation(len(members))[:n]]
        texts = [archive.extractfile(m).read().decode("latin-1") for m in members]
    return CountVectorizer(stop_words="english", min_df=5, max_df=0.5).fit_transform(texts)


def main():
    torch.set_num_threads(1)
    data = default_data_home()
    corpora = {  # each corpus's documents and numbers of topics, loaded when its turn comes
        "20ng": (lambda: load_20news_avitm(data, subset="train").data, (20,)),
        "raw_posts": (lambda: raw_posts(data), (20,)),
        "bbc": (lambda: load_octis("BBC_News", data, subset="train").data, (10, 50)),
        "gnews": (lambda: load_short("gnews", data)[0], (20,)),
    }
    if TINY:
        corpora = {"bbc": (lambda: load_octis("BBC_News", data, subset="train").data[:300],
                           (5,))}
    print(f"Commit {machine().get('git_commit')}, {machine()['cpu']}, one thread; AVITM() at "
          "its defaults, seed 0; the training documents' counts and their tf-idf weights "
          "(TfidfTransformer); largest share: the mean largest topic share of `transform` "
          "on the training documents (uniform: 1 / K); warnings raised by `fit`.\n")
    print("| corpus | K | input | TD@10 | topics sharing >=6 / >=7 / >=8 of 10 | largest share "
          "| warnings |\n|---|---|---|---|---|---|---|")
    for name, (loader, ks) in corpora.items():
        X = loader()
        weights = {"counts": X, "tf-idf": TfidfTransformer().fit_transform(X)}
        for k in ks:
            for kind, M in weights.items():
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    model = AVITM(k, random_state=0, device="cpu", n_jobs=1,
                                  **({"max_iter": 1} if TINY else {})).fit(M)
                counts = [_near_duplicates(model.components_, 10, n) for n in (6, 7, 8)]
                share = model.transform(M).max(1).mean()
                said = "; ".join(str(w.message)[:70] for w in caught
                                 if issubclass(w.category, UserWarning)) or "-"
                print(f"| {name} | {k} | {kind} | {topic_diversity(model, 10):.2f} | "
                      f"{counts[0]} / {counts[1]} / {counts[2]} "
                      f"| {share:.2f} | {said} |", flush=True)


if __name__ == "__main__":
    main()
