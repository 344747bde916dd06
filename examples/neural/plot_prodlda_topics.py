"""
ProdLDA in a scikit-learn pipeline
==================================

Fit :class:`~sktopics.ProdLDA` behind a
:class:`~sklearn.feature_extraction.text.CountVectorizer`, look at its topics, score
held-out documents, and compare the defaults with the original AVITM configuration
(the ``"avitm"`` preset) on coherence and diversity.
"""

# %%
# Data: the BBC News corpus shipped with sktopics, as texts.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sktopics import ProdLDA, top_words
from sktopics.datasets import load_bbc_news
from sktopics.inspection import TopicWordsDisplay
from sktopics.metrics import npmi_coherence, topic_diversity

train = load_bbc_news(subset="train")
test = load_bbc_news(subset="test")
print(f"{len(train.texts)} training and {len(test.texts)} held-out documents")

# %%
# A pipeline: counts, then 10 topics with ProdLDA at its defaults.
# ``device="auto"`` (the default) would use a GPU when present.
pipe = make_pipeline(
    CountVectorizer(token_pattern=r"\S+"),
    ProdLDA(n_components=10, random_state=0, device="cpu"),
)
pipe.fit(train.texts)
for k, words in enumerate(top_words(pipe, top_n=8)):
    print(f"topic {k}: {' '.join(words)}")

# %%
# Held-out evaluation. ``score`` estimates the log-likelihood per token of held-out
# documents (importance sampling from the encoder); NPMI uses them as reference.
X_test = pipe[0].transform(test.texts)
model = pipe[-1]
print(f"held-out log-likelihood per token: {pipe.score(test.texts):.3f}")
print(f"NPMI (test reference, zero convention): "
      f"{npmi_coherence(model, X_test, zero_cooccurrence='zero').mean:.3f}")
print(f"topic diversity (top 25): {topic_diversity(model, 25):.3f}")

# %%
# Topic proportions of a few held-out documents, by their true section.
theta = pipe.transform(test.texts)
order = np.argsort(test.target, kind="stable")
fig, ax = plt.subplots(figsize=(8, 3))
ax.imshow(theta[order].T, aspect="auto", interpolation="nearest", cmap="viridis")
ax.set_xlabel("held-out documents, grouped by section: " + ", ".join(test.target_names))
ax.set_ylabel("topic")
ax.set_title("ProdLDA document-topic proportions")
fig.tight_layout()

# %%
# The top words of each topic with their probabilities
# (:class:`~sktopics.inspection.TopicWordsDisplay`; the vocabulary comes from the
# pipeline's vectorizer).
display = TopicWordsDisplay.from_estimator(pipe, top_n=6)
display.figure_.suptitle("ProdLDA topics on BBC News")
display.figure_.tight_layout()

# %%
# The defaults against the original AVITM configuration (dropout 0.6 on theta,
# batches of 200 drawn with replacement), which makes topics near-duplicates.
X_train = pipe[0].transform(train.texts)
faithful = ProdLDA.from_preset("avitm", n_components=10, max_iter=50, random_state=0,
                               device="cpu").fit(X_train)
rows = []
for name, candidate in (("avitm preset", faithful), ("defaults", model)):
    rows.append((name, npmi_coherence(candidate, X_test, zero_cooccurrence="zero").mean,
                 topic_diversity(candidate, 25)))
    print(f"{name:12s} NPMI {rows[-1][1]:.3f}  TD@25 {rows[-1][2]:.3f}")

fig, ax = plt.subplots(figsize=(5, 3))
positions = np.arange(len(rows))
ax.bar(positions - 0.2, [r[1] for r in rows], 0.4, label="NPMI (zero convention)")
ax.bar(positions + 0.2, [r[2] for r in rows], 0.4, label="topic diversity @25")
ax.set_xticks(positions, [r[0] for r in rows])
ax.legend()
fig.tight_layout()
plt.show()
