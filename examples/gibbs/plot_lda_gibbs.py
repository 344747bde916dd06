"""
Collapsed-Gibbs LDA on BBC News
===============================

Fit :class:`~sktopics.LDAGibbs` on the BBC News corpus shipped with sktopics, follow
the joint log-likelihood of the chain, learn an asymmetric ``alpha``, look at the
topics and score held-out documents by document completion.
"""

# %%
# Data: the embedded BBC News bag of words (OCTIS preprocessing).
import matplotlib.pyplot as plt
import numpy as np

from sktopics import LDAGibbs, top_words
from sktopics.datasets import load_bbc_news
from sktopics.inspection import TrainingCurveDisplay

train = load_bbc_news(subset="train")
test = load_bbc_news(subset="test")
X_train, X_test = train.data, test.data
print(f"{X_train.shape[0]} documents, {X_train.shape[1]} words, "
      f"{int(X_train.sum())} tokens")

# %%
# Fit 20 topics with the fully parallel sampler. ``optimize_interval=10`` learns an
# asymmetric ``alpha`` (and a symmetric ``beta``) every 10 sweeps after ``burn_in``;
# ``components_`` averages the last ``n_kept_samples`` states.
model = LDAGibbs(
    n_components=20,
    max_iter=100,
    burn_in=20,
    optimize_interval=10,
    n_kept_samples=3,
    sample_interval=10,
    evaluate_every=5,
    device="cpu",
    random_state=0,
).fit(X_train)

# %%
# Left: the joint log-likelihood ``log p(w, z)`` per token rises quickly, then levels
# off (:class:`~sktopics.inspection.TrainingCurveDisplay`). Right: the learned
# ``alpha`` is far from symmetric: a few broad topics appear in many documents, many
# specific ones in few.
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.5))
TrainingCurveDisplay.from_estimator(model, ax=ax1)
ax1.set_title("Gibbs chain")
order = np.argsort(model.doc_topic_prior_)[::-1]
ax2.bar(np.arange(20), model.doc_topic_prior_[order])
ax2.set_xlabel("topic (sorted)")
ax2.set_ylabel("learned alpha_k")
ax2.set_title(f"asymmetric alpha, beta = {model.topic_word_prior_:.3f}")
fig.tight_layout()
plt.show()

# %%
# Top words of the five topics with the largest ``alpha``.
words = top_words(model, top_n=8, feature_names=train.feature_names)
for k in order[:5]:
    print(f"topic {k:2d} (alpha={model.doc_topic_prior_[k]:.2f}): {' '.join(words[k])}")

# %%
# Held-out documents: ``transform`` samples their topic proportions with the topics
# fixed, and ``score`` is the document-completion log-likelihood per token.
theta = model.transform(X_test)
print("held-out proportions:", theta.shape, "rows sum to", theta.sum(1)[:3].round(6))
print(f"document-completion perplexity: {model.perplexity(X_test):.0f}")
