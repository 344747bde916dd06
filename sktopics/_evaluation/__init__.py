"""The evaluation engines behind :mod:`sktopics.model_selection` and ``score``.

Private. Maths and batching only: the public functions, their validation and their
result objects live in :mod:`sktopics.model_selection`, which imports from here;
nothing here imports from there, nor from the estimators. Modules, each one job,
arrows pointing down the list:

* ``_views``: the generative view of a model, its topics as distributions and the
  counts to score;
* ``_tail``: the few long rows' end of a collapsed sweep, solved by fixed-point
  iteration (the same draws as the sequential sweep, without a step per position);
* ``_tokens``: documents as (document, chain) token rows, batching, schedules,
  per-document results;
* ``_resampling``: systematic resampling of chains and particles;
* ``_zspace``: AIS over topic assignments (paths, kernels, the annealing loop);
* ``_pam_paths``: the same over the paths of a two-level PAM;
* ``_smc``: the left-to-right (sequential Monte Carlo) filter;
* ``_hmc``: AIS over a continuous latent with Hamiltonian Monte Carlo;
* ``_importance``: importance sampling of the topic proportions;
* ``_default_score``: what every estimator's ``score`` computes.

Random numbers come from :mod:`sktopics._random`, shared with the Gibbs samplers.
"""
