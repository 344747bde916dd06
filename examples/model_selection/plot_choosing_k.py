"""
=======================================================
Choosing the number of topics: scores with their errors
=======================================================

A grid search ranks candidates by a Monte Carlo estimate of their held-out
likelihood, so every score has an error: the Monte Carlo noise of the estimate,
and a *budget bias* (the logs of these estimators are biased low, and AIS with
few temperatures is biased more for larger models). The scorers are right or
loud about it. This example

1. runs :class:`~sklearn.model_selection.GridSearchCV` over the number of topics
   with the left-to-right scorer, asking it for its standard errors
   (``return_stderr=True``) and refitting with
   :func:`~sktopics.model_selection.refit_best`, which warns when the best
   candidate's lead is within the errors;
2. shows the budget bias: AIS with too few temperatures ranks the candidates
   differently, and its scorer says so while it scores;
3. prints the progress lines of a longer evaluation (``verbose=1``).

The corpus is synthetic (6 true topics), so that the example runs in seconds.
"""

# %%
import warnings

import matplotlib.pyplot as plt
from sklearn.model_selection import GridSearchCV

from sktopics import LDAGibbs
from sktopics.datasets import make_lda_corpus
from sktopics.model_selection import (
    RankingWarning,
    ais_log_likelihood,
    check_ranking,
    left_to_right_log_likelihood,
    make_ais_scorer,
    make_left_to_right_scorer,
    refit_best,
)

X, _, _ = make_lda_corpus(n_samples=400, n_features=120, n_components=6, doc_length=60,
                          random_state=0)
X_train, X_test = X[:300], X[300:]

# %%
# A grid search that reports its errors
# -------------------------------------
# With ``return_stderr=True`` the scorer returns several metrics, all per token: the
# score, its Monte Carlo standard error and its budget checks (how much the score
# rose from half the particles, and from a quarter to half: when each rise is about
# half the one before, what is left of the bias is about as much as the last rise).
# ``refit=refit_best`` refits the best candidate and issues a ``RankingWarning``
# when its lead is within the errors; ``check_ranking`` gives the numbers.
Ks = [2, 4, 6, 8, 12]
search = GridSearchCV(
    LDAGibbs(max_iter=150, device="cpu", random_state=0),
    {"n_components": Ks},
    scoring=make_left_to_right_scorer(n_particles=20, return_stderr=True),
    refit=refit_best,
    cv=3,
)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", RankingWarning)
    search.fit(X_train)
    report = check_ranking(search.cv_results_)
print("best:", search.best_params_)
print(f"lead over the runner-up {report['lead']:.4f} nats/token, error {report['error']:.4f}:",
      "settled" if report["settled"] else "not settled")
for w in caught:
    print("warning:", w.message)

# %%
# The same search scored by AIS with only 10 temperatures: its score rises a lot
# from 5 to 10 temperatures, more for the larger models. The scorer checks its
# budget at every call and warns while scoring (once per fold and candidate; with
# ``n_jobs > 1`` in the worker processes); ``refit_best`` repeats the check on the
# recorded biases in this process and refuses to call the ranking settled.
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", RankingWarning)
    cheap = GridSearchCV(
        LDAGibbs(max_iter=150, device="cpu", random_state=0),
        {"n_components": Ks},
        scoring=make_ais_scorer(n_temperatures=10, n_chains=2, return_stderr=True),
        refit=refit_best,
        cv=3,
    ).fit(X_train)
print("AIS with 10 temperatures picks", cheap.best_params_)
while_scoring = [w for w in caught if str(w.message).startswith("make_ais_scorer")]
if while_scoring:
    print(f"{len(while_scoring)} warnings while scoring, the first:", while_scoring[0].message)
for w in caught:
    if w not in while_scoring:
        print("refit_best:", w.message)

# %%
# The same candidates scored by AIS with 10 and with 300 temperatures (four chains)
# on the test documents, against left-to-right with 1,000 particles. With few
# temperatures AIS is biased low, by more for the larger models, and ranks them
# differently; doubling its budget would show it still rising.
models = {k: LDAGibbs(k, max_iter=150, device="cpu", random_state=0).fit(X_train) for k in Ks}
fig, ax = plt.subplots(figsize=(6, 4))
reference = [left_to_right_log_likelihood(models[k], X_test, n_particles=1000, n_filters=1,
                                          random_state=0).per_token for k in Ks]
ax.plot(Ks, reference, "k--", marker="o", label="left-to-right, 1,000 particles")
for s in (10, 300):
    runs = [ais_log_likelihood(models[k], X_test, n_temperatures=s, n_chains=4, random_state=0)
            for k in Ks]
    ax.plot(Ks, [r.per_token for r in runs], marker="s", label=f"AIS, {s} temperatures")
ax.set_xlabel("number of topics K")
ax.set_ylabel("held-out log-likelihood (nats/token)")
ax.set_title("AIS's budget bias grows with K")
ax.legend(fontsize=8)
fig.tight_layout()

# %%
# Progress of a longer evaluation
# -------------------------------
# ``verbose=1`` prints a line every ten seconds and a last one; ``verbose=2`` every
# second.
result = ais_log_likelihood(models[6], X_test, n_temperatures=1000, n_chains=4,
                            random_state=0, verbose=1)
print(result)
plt.show()
