"""
Comparing topic models by coherence and diversity
=================================================

Fit four topic models with the same number of topics on the BBC News corpus shipped
with sktopics, then compare them the way topic-model papers do: NPMI coherence of each
topic's top words, with the **held-out** documents as the reference corpus, under both
conventions for word pairs that never co-occur, and topic diversity.

NPMI per topic is a distribution, not a number: a model whose mean is good can still
have a few junk topics, which the per-topic plot shows at once.
"""

# %%
# Data: the embedded BBC News bag of words, and its held-out split as reference.
import matplotlib.pyplot as plt
import numpy as np
from sklearn.decomposition import LatentDirichletAllocation

from sktopics import AVITM, LDAGibbs, ProdLDA, top_words
from sktopics.datasets import load_bbc_news
from sktopics.metrics import npmi_coherence, topic_diversity

train = load_bbc_news(subset="train")
test = load_bbc_news(subset="test")
X_train, X_test = train.data, test.data
vocabulary = np.asarray(train.feature_names)
n_topics = 15

# %%
# Four models, 15 topics each. Every sktopics estimator takes the same
# ``(n_documents, n_words)`` counts as scikit-learn's LDA.
models = {
    "LDAGibbs": LDAGibbs(n_components=n_topics, max_iter=150, random_state=0),
    "ProdLDA": ProdLDA(n_components=n_topics, max_iter=40, random_state=0, device="cpu"),
    "AVITM": AVITM(n_components=n_topics, max_iter=40, random_state=0, device="cpu"),
    "sklearn LDA (VB)": LatentDirichletAllocation(
        n_components=n_topics, max_iter=20, learning_method="batch", random_state=0),
}
for model in models.values():
    model.fit(X_train)

# %%
# Scores. ``npmi_coherence`` returns the mean and the per-topic values; the
# ``"epsilon"`` convention (gensim's ``c_npmi``) scores a never co-occurring pair
# about -1, the ``"zero"`` convention (Lau et al., AVITM, Scholar) scores it 0.
scores = {}
for name, model in models.items():
    eps = npmi_coherence(model, X_test, top_n=10)
    zero = npmi_coherence(model, X_test, top_n=10, zero_cooccurrence="zero")
    scores[name] = (eps, zero, topic_diversity(model, top_n=25))
    print(f"{name:18s} NPMI eps {eps.mean:6.3f}  zero {zero.mean:6.3f}  "
          f"TD@25 {scores[name][2]:.3f}")

# %%
# Per-topic NPMI (epsilon convention): each dot is a topic, the bar the mean.
fig, ax = plt.subplots(figsize=(7, 3.5))
rng = np.random.default_rng(0)
for i, (eps, _, _) in enumerate(scores.values()):
    jitter = rng.uniform(-0.15, 0.15, size=eps.per_topic.size)
    ax.scatter(i + jitter, eps.per_topic, s=14, alpha=0.7)
    ax.hlines(eps.mean, i - 0.3, i + 0.3, color="black")
ax.set_xticks(range(len(scores)), list(scores), fontsize=9)
ax.set_ylabel("NPMI per topic (held-out reference)")
ax.set_title(f"{n_topics} topics on BBC News")
fig.tight_layout()

# %%
# Coherence against diversity. A model can buy coherence by repeating the same
# frequent words in many topics; the two axes together show the trade-off.
fig, ax = plt.subplots(figsize=(5, 3.5))
for name, (eps, _, diversity) in scores.items():
    ax.scatter(diversity, eps.mean, s=40)
    ax.annotate(name, (diversity, eps.mean), textcoords="offset points",
                xytext=(5, 4), fontsize=8)
ax.set_xlabel("topic diversity (top 25)")
ax.set_ylabel("mean NPMI (epsilon convention)")
fig.tight_layout()

# %%
# The best and the worst topic of each model, by NPMI.
for name, model in models.items():
    eps = scores[name][0]
    words = top_words(model, top_n=8, feature_names=vocabulary)
    best, worst = np.nanargmax(eps.per_topic), np.nanargmin(eps.per_topic)
    print(f"{name}\n  best  ({eps.per_topic[best]:.2f}): {' '.join(words[best])}"
          f"\n  worst ({eps.per_topic[worst]:.2f}): {' '.join(words[worst])}")
plt.show()
