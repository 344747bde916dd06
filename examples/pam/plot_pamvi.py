"""
A topic hierarchy with PAMVI (Pachinko Allocation, aviPAM)
==========================================================

Fit a 4-PAM, root -> super-topics -> sub-topics -> words, with
:class:`~sktopics.PAMVI` on the BBC News corpus shipped with sktopics, then draw the
learned hierarchy: each super-topic linked to the sub-topics it leads to most, each
sub-topic labelled with its top words. A mixture of LDAs (:class:`~sktopics.MoLDA`)
is fitted on the same data for comparison.
"""

# %%
# Data: the embedded BBC News bag of words (five sections).
import matplotlib.pyplot as plt
import numpy as np

from sktopics import PAMVI, MoLDA
from sktopics.datasets import load_bbc_news
from sktopics.inspection import PAMHierarchyDisplay
from sktopics.metrics import npmi_coherence, topic_diversity

train = load_bbc_news(subset="train")
test = load_bbc_news(subset="test")
vocabulary = np.asarray(train.feature_names)
print(f"{train.data.shape[0]} training documents, {train.data.shape[1]} words")

# %%
# 4-PAM with 3 super-topics and 12 sub-topics. ``device="auto"`` would use a GPU.
pam = PAMVI(structure=(3, 12), max_iter=30, random_state=0,
            device="cpu")
pam.fit(train.data)
print(f"NPMI (test reference, zero convention): "
      f"{npmi_coherence(pam, test.data, zero_cooccurrence='zero').mean:.3f}, "
      f"topic diversity (top 10): {topic_diversity(pam, 10):.2f}")

sub_words = [" ".join(vocabulary[np.argsort(-row)[:4]]) for row in pam.components_]
for s in range(3):
    print(f"super-topic {s}:")
    for k, weight in pam.get_sub_topics(s, top_n=4):
        print(f"    {weight:.2f}  sub-topic {k:2d}: {sub_words[k]}")

# %%
# The learned hierarchy (:class:`~sktopics.inspection.PAMHierarchyDisplay`). Edge
# width is ``sub_topic_weights_[s, k]``, the share of the training tokens routed
# through super-topic ``s`` that continue to sub-topic ``k``; only edges above 1/12
# (uniform) are drawn. Super-topic labels are the words their sub-topics put most
# weight on.
display = PAMHierarchyDisplay.from_estimator(pam, feature_names=vocabulary)
display.ax_.set_title("PAMVI on BBC News: super-topics and their sub-topics")
display.figure_.tight_layout()

# %%
# Super-topic proportions of held-out documents, by section
# (:meth:`~sktopics.PAMVI.transform_levels`).
super_props, sub_props = pam.transform_levels(test.data)
fig, ax = plt.subplots(figsize=(8, 2.5))
order = np.argsort(test.target, kind="stable")
image = ax.imshow(super_props[order].T, aspect="auto", interpolation="nearest")
ax.set_yticks(range(super_props.shape[1]))
# the sections' boundaries, so each block of documents can be read against its label
sections = np.sort(test.target)
for boundary in np.flatnonzero(np.diff(sections)) + 0.5:
    ax.axvline(boundary, color="white", linewidth=1)
ax.set_xlabel("held-out documents by section: " + ", ".join(test.target_names))
ax.set_ylabel("super-topic")
fig.colorbar(image, ax=ax, label="proportion")
fig.tight_layout()

# %%
# MoLDA(3:12): a coarse 3-topic LDA and a fine 12-topic LDA mixed word by word.
molda = MoLDA(component_sizes=(3, 12), max_iter=20, random_state=0,
              device="cpu").fit(train.data)
for name, topics in zip(("coarse", "fine"), molda.components_per_model_):
    npmi = npmi_coherence(topics, test.data, zero_cooccurrence="zero").mean
    print(f"{name} component: NPMI {npmi:.3f}")
    for row in topics[:3]:
        print("    " + " ".join(vocabulary[np.argsort(-row)[:6]]))
print("mean component weights on held-out documents:",
      np.round(molda.transform_root(test.data).mean(0), 2))
