"""
========================================================
Held-out likelihood: AIS, grid search and ratio-AIS
========================================================

The held-out likelihood ``log p(w | model)`` of a topic model is an intractable sum
over topic assignments. :mod:`sktopics.model_selection` estimates it by annealed
importance sampling (AIS, Wallach et al. 2009), by the left-to-right algorithm in its
unbiased sequential Monte Carlo form, and compares two models directly by ratio-AIS
(Foulds & Smyth 2014).

This example

1. selects the number of topics with :class:`~sklearn.model_selection.GridSearchCV`
   scored by AIS;
2. plots the AIS estimate against the number of temperatures (it rises towards
   the true value: the log of an AIS estimate is a stochastic *lower* bound);
3. compares two models with ratio-AIS, forward and reverse.

The corpus is synthetic (4 true topics), so that the example runs in seconds; any
sktopics estimator (``LDAGibbs``, ``AVITM``, ``ProdLDA``, ...) or a ``Pipeline`` ending
in one works the same way.
"""

# %%
import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV

from sktopics import LDAGibbs
from sktopics.datasets import make_lda_corpus
from sktopics.inspection import AISConvergenceDisplay, ComparisonDisplay
from sktopics.model_selection import (
    left_to_right_log_likelihood,
    make_ais_scorer,
    ratio_ais,
)

X, true_phi, _ = make_lda_corpus(
    n_samples=240, n_features=60, n_components=4, doc_length=30, random_state=0
)
X_train, X_test = X[:160], X[160:]


# %%
# Grid search over the number of topics, scored by AIS
# ----------------------------------------------------
# The scorer returns the per-token log-likelihood (greater is better). Its fixed
# ``random_state`` gives every candidate the same random numbers.
grid = GridSearchCV(
    LDAGibbs(max_iter=100, device="cpu", random_state=0),
    {"n_components": [2, 4, 6]},
    scoring=make_ais_scorer(n_temperatures=300, n_chains=2),
    cv=3,
).fit(X_train)
for k, score in zip(grid.cv_results_["param_n_components"], grid.cv_results_["mean_test_score"]):
    print(f"K = {k}: held-out log-likelihood {score:.4f} nats/token")
print("best:", grid.best_params_)

# %%
# The AIS estimate against the number of temperatures
# ---------------------------------------------------
# Each point is the corpus per-token estimate with its Monte Carlo standard error.
# The left-to-right estimate (many particles) is the reference line.
model = grid.best_estimator_
reference = left_to_right_log_likelihood(model, X_test, n_particles=200, random_state=0)
AISConvergenceDisplay.from_estimator(model, X_test, temperatures=[1, 3, 10, 30, 100, 300],
                                     n_chains=8, reference=reference)

# %%
# Comparing two models with ratio-AIS
# -----------------------------------
# Ratio-AIS anneals from model B's posterior to model A's and estimates
# ``log p(w | A) - log p(w | B)`` per document with one set of topic assignments,
# which has a far lower variance than the difference of two AIS runs. The reverse
# run (A to B) is the convergence check: the two should agree. The models have
# different numbers of topics: the smaller one is embedded exactly in the larger
# (a topic duplicated, its Dirichlet mass split in halves).
model_a = grid.best_estimator_
model_b = LDAGibbs(n_components=2, max_iter=100, device="cpu", random_state=0).fit(X_train)
cmp = ratio_ais(model_a, model_b, X_test, path="geometric", direction="both",
                n_temperatures=300, n_chains=4, random_state=0)
print(cmp)
print("perplexity ratio A/B from the forward and the reverse run:", cmp.bracket())

# %%
# Document by document (:class:`~sktopics.inspection.ComparisonDisplay`): each
# point is a test document's log-ratio per token, a grey segment joins its forward
# and reverse estimates.
ComparisonDisplay.from_comparison(cmp)
plt.show()
