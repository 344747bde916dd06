"""
==========================================
Looking at topics: words, report, pyLDAvis
==========================================

A fitted topic model is read by looking at it. :mod:`sktopics.inspection` gives

1. :class:`~sktopics.inspection.TopicWordsDisplay`: each topic's top words with their
   probabilities, one bar panel per topic;
2. :func:`~sktopics.inspection.topic_report`: one row per topic with its top words,
   its share of a corpus's tokens, its NPMI coherence and how distinct its words are;
3. :func:`~sktopics.inspection.to_pyldavis`: the arguments of ``pyLDAvis.prepare``,
   for the interactive pyLDAvis view (pyLDAvis itself is not needed here).

The model is an LDAGibbs pipeline on the BBC News corpus shipped with sktopics.
"""

# %%
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

from sktopics import LDAGibbs
from sktopics.datasets import load_bbc_news
from sktopics.inspection import TopicWordsDisplay, to_pyldavis, topic_report

train, test = load_bbc_news(subset="train"), load_bbc_news(subset="test")
pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+", min_df=3),
                     LDAGibbs(n_components=10, max_iter=150, device="cpu", random_state=0))
pipe.fit(train.texts)

# %%
# Top words and their weights
# ---------------------------
# The vocabulary comes from the pipeline's vectorizer.
display = TopicWordsDisplay.from_estimator(pipe, top_n=8)

# %%
# A report of the topics
# ----------------------
# ``prevalence`` is the share of the test documents' tokens in each topic, ``npmi``
# the coherence of the top words in the test documents, ``distinct`` the share of
# the top words that no other topic has among its top words. The report is a pandas
# DataFrame indexed by topic (``pip install "sktopics[report]"``); here sorted by
# prevalence.
report = topic_report(pipe, test.texts, top_n=8, X_ref=test.texts)
print(report.sort_values("prevalence", ascending=False)[
    ["top_words", "prevalence", "npmi", "distinct"]].round(3).to_string())

# %%
# For pyLDAvis
# ------------
# ``pyLDAvis.prepare(**to_pyldavis(pipe, train.texts))`` opens the model in pyLDAvis.
kwargs = to_pyldavis(pipe, train.texts)
print({name: getattr(value, "shape", len(value)) for name, value in kwargs.items()})
