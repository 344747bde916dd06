"""Why PAMVI's super-to-sub weights look near-uniform, where tomotopy's look sharp.

BBC News (the shipped corpus, training split; ran at commit b51da54 on the 2-core VM),
PAM with 5 super- and 30 sub-topics:
PAMVI at its defaults (subtopic_prior 1.0) and with a sparser symmetric prior (0.1),
against tomotopy's PAModel (Gibbs, its Dirichlet priors learned) at the same sizes.
For each, the corpus-level super->sub weights (PAMVI: ``level_weights_``, the
token-weighted mean of the documents' node distributions; tomotopy: the normalised
learned ``subalpha``), and the documents' own super->sub distributions (PAMVI:
``transform_nodes``; tomotopy: each document's sub-topic counts under each
super-topic), summarised as the largest weight relative to uniform (x 1/30) and the
entropy in nats (uniform: log 30 = 3.40). Prints a table; the findings are in the
PAM user guide.
"""

import sys

import numpy as np
import torch
from sklearn.feature_extraction.text import CountVectorizer

from sktopics import PAMVI
from sktopics.datasets import load_bbc_news


def entropy(p):
    p = np.clip(p, 1e-12, None)
    return float(-(p * np.log(p)).sum(-1).mean())


def summary(name, corpus_level, per_doc):
    n_sub = corpus_level.shape[-1]
    print(f"| {name} | {corpus_level.max(-1).mean() * n_sub:.2f} | {entropy(corpus_level):.2f} "
          f"| {per_doc.max(-1).mean() * n_sub:.2f} | {entropy(per_doc):.2f} |", flush=True)


def main():
    torch.set_num_threads(1)
    texts = load_bbc_news(subset="train").texts
    vectorizer = CountVectorizer(token_pattern=r"\S+", min_df=3, max_df=0.5)
    X = vectorizer.fit_transform(texts)
    print("| model | corpus: largest x uniform | corpus: entropy | documents: largest x "
          "uniform | documents: entropy |\n|---|---|---|---|---|")
    for prior in (1.0, 0.1):
        pam = PAMVI(structure=(5, 30), subtopic_prior=prior, max_iter=100, device="cpu",
                    random_state=0).fit(X)
        root, nodes = pam.transform_nodes(X)  # (docs, 1, 5), (docs, 5, 30)
        reach = root[:, 0, :]
        used = reach > 0.1  # a document's distribution under a super-topic it uses
        summary(f"PAMVI, subtopic_prior={prior}", pam.level_weights_[1], nodes[used])
    try:
        import tomotopy as tp
    except ImportError:
        sys.exit("tomotopy is not installed: pip install tomotopy")
    model = tp.PAModel(k1=5, k2=30, seed=0)
    vocabulary = vectorizer.get_feature_names_out()
    for row in X:
        words = np.repeat(vocabulary[row.indices], row.data.astype(int)).tolist()
        if words:
            model.add_doc(words)
    model.train(200, workers=1)
    subalpha = np.array(model.subalpha)
    per_doc = []
    for doc in model.docs:
        counts = np.zeros((5, 30))
        np.add.at(counts, (doc.topics, doc.subtopics), 1)
        per_doc.extend(c / c.sum() for c in counts if c.sum() >= 5)
    summary("tomotopy PAModel (learned priors)", subalpha / subalpha.sum(1, keepdims=True),
            np.array(per_doc))


if __name__ == "__main__":
    main()
