"""
=====================================================
Off-domain documents: per-document log-likelihoods
=====================================================

``transform`` gives every document topic proportions that sum to 1, however badly
the topics explain it: a sports report gets proportions over the topics of a model of
business news as a business article does. ``score_samples`` says how well the model
explains each document: its held-out log-likelihood estimate, in nats, one value per
document (``score`` is their sum per token). Divided by the documents' lengths, the
values can be compared across documents, and documents far below those of held-out
documents of the training domain are the ones the model does not explain.

Here :class:`~sktopics.LDAGibbs` is fitted on the business articles of the BBC News
corpus shipped with sktopics, and scores held-out business articles (in-domain) and
sports articles (off-domain).
"""

# %%
# Data: the business articles of the training split train the model; the business
# articles of the validation split set a threshold; the test split's business and
# sport articles are scored.
import matplotlib.pyplot as plt
import numpy as np

from sktopics import LDAGibbs
from sktopics.datasets import load_bbc_news

train = load_bbc_news(subset="train")
validation = load_bbc_news(subset="validation")
test = load_bbc_news(subset="test")
business = train.target_names.index("business")
sport = train.target_names.index("sport")

X_train = train.data[train.target == business]
X_validation = validation.data[validation.target == business]
X_in = test.data[test.target == business]
X_off = test.data[test.target == sport]
print(f"{X_train.shape[0]} business articles for training, "
      f"{X_in.shape[0]} held-out business and {X_off.shape[0]} sport articles to score")

model = LDAGibbs(n_components=10, max_iter=100, device="cpu", random_state=0).fit(X_train)

# %%
# Per-token log-likelihoods: ``score_samples`` over the documents' lengths. A
# threshold at the 5th percentile of the validation articles' values flags 5 % of
# them by construction; on other in-domain articles the rate varies around it (the
# percentile of some 80 articles is itself uncertain). The question is how many
# sports articles it flags.

def per_token(X):
    return model.score_samples(X) / np.asarray(X.sum(axis=1)).ravel()


threshold = np.percentile(per_token(X_validation), 5)
in_domain, off_domain = per_token(X_in), per_token(X_off)
print(f"threshold: {threshold:.2f} nats per token")
print(f"flagged: {np.mean(in_domain < threshold):.0%} of the held-out business articles, "
      f"{np.mean(off_domain < threshold):.0%} of the sport articles")

# %%
# Left: the two distributions and the threshold. They overlap little: nearly all
# sports articles fall below the threshold, and so do a few held-out business
# articles. The words of sports articles are in the vocabulary (one vectorizer for
# the whole corpus), but the business topics give them little probability. Right: the
# same values against the documents' lengths, from short to long articles: the gap
# between the two groups is not an effect of length. A low value says that the model
# explains a document poorly, which a text from another domain is one reason for,
# not that the document belongs to another domain.
bins = np.linspace(min(in_domain.min(), off_domain.min()),
                   max(in_domain.max(), off_domain.max()), 30)
fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.8))
n_in, _, _ = ax1.hist(in_domain, bins=bins, alpha=0.6, label="business (held out)")
n_off, _, _ = ax1.hist(off_domain, bins=bins, alpha=0.6, label="sport (off-domain)")
ax1.set_ylim(0, 1.4 * max(n_in.max(), n_off.max()))  # room for the legend
ax1.axvline(threshold, color="k", linestyle="--", label="5th percentile (validation)")
ax1.set_xlabel("log-likelihood per token (nats)")
ax1.set_ylabel("documents")
ax1.set_title("A model of business news")
ax1.legend(fontsize="small", loc="upper left")
ax2.scatter(np.asarray(X_in.sum(axis=1)).ravel(), in_domain, s=10, alpha=0.7,
            label="business (held out)")
ax2.scatter(np.asarray(X_off.sum(axis=1)).ravel(), off_domain, s=10, alpha=0.7,
            label="sport (off-domain)")
ax2.axhline(threshold, color="k", linestyle="--")
ax2.set_xlabel("document length (tokens)")
ax2.set_ylabel("log-likelihood per token (nats)")
ax2.set_title("Against the document length")
fig.tight_layout()
plt.show()
