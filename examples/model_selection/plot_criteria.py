"""
===========================================================
Choosing the number of topics: what each criterion rewards
===========================================================

There is no single "right" number of topics: each criterion rewards something
else, and they part ways as K grows.

* **Held-out likelihood** (here the left-to-right estimator, with its Monte Carlo
  errors and budget check) rewards predicting the words of unseen documents. It
  usually keeps rising with K long after the topics stop being readable.
* **Coherence** (NPMI of each topic's top words, on the held-out fold) rewards
  topics whose top words co-occur in documents. It need not follow the likelihood:
  on 5,000 short news posts (the user guide's "Choosing the number of topics") it
  peaked at K = 80 while the likelihood was still rising at K = 320.
* **Diversity** (the share of distinct words among the topics' top words) rewards
  topics that do not repeat one another.

One :class:`~sklearn.model_selection.GridSearchCV` scores all three with
:func:`~sktopics.model_selection.make_criteria_scorer`; ``refit=``
:func:`~sktopics.model_selection.refit_best` refits the best candidate by
likelihood and warns if its lead is within the errors; and
:class:`~sktopics.inspection.CriteriaDisplay` draws the three criteria against K,
which is the view a choice needs. The corpus is BBC News (shipped with sktopics),
600 articles, so that the example runs in well under a minute.
"""

# %%
import warnings

import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV, KFold

from sktopics import LDAGibbs
from sktopics.datasets import load_bbc_news
from sktopics.inspection import CriteriaDisplay
from sktopics.model_selection import (
    RankingWarning,
    make_coherence_scorer,
    make_criteria_scorer,
    make_diversity_scorer,
    make_left_to_right_scorer,
    refit_best,
)

X = load_bbc_news(subset="train").data[:600]

# %%
# One search, three criteria
# --------------------------
# The likelihood scorer returns its score with its Monte Carlo standard error and
# its budget bias (how much the score rose from half the particles); the criteria
# scorer adds coherence and diversity to the same ``cv_results_``.
scoring = make_criteria_scorer(make_left_to_right_scorer(return_stderr=True),
                               coherence=make_coherence_scorer(),
                               diversity=make_diversity_scorer())
search = GridSearchCV(LDAGibbs(max_iter=60, device="cpu", random_state=0),
                      {"n_components": [2, 5, 10, 20, 40]}, scoring=scoring,
                      refit=refit_best, cv=KFold(3, shuffle=True, random_state=0))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", RankingWarning)
    search.fit(X)
print("refitted:", search.best_params_)
for w in caught:
    print("warning:", w.message)

# %%
# The picture a choice needs
# --------------------------
# Each panel is one criterion against K with two standard errors (Monte Carlo for
# the likelihood, over the folds for the others); the star marks each criterion's
# best K, and the thin red bars the likelihood's budget bias.
display = CriteriaDisplay.from_estimator(search)
print("best K per criterion:", display.best_)
plt.show()
