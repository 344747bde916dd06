"""model_selection estimators against exact enumeration of every topic assignment.

The sharpest test is unbiasedness *in probability*: exp(estimate - exact) has mean 1.
Each document is copied many times with one chain, so the sample mean of
exp(estimate - exact) has a standard error we can compute. A document's random numbers
are keyed by its counts, so the copies are written with synonyms (``repeated``): each
word of the model is split into synonyms of equal probability (``split``), which
leaves the law of every estimator unchanged up to a known shift.
"""

import itertools

import numpy as np
import pytest
import torch
from scipy.special import gammaln, logsumexp

from sktopics._random import document_keys
from sktopics.model_selection import (
    PathMixture,
    ais_log_likelihood,
    iteration_ais,
    left_to_right_log_likelihood,
    ratio_ais,
)

from .test_model_selection_api import N_SYNONYMS, split_topics, synonym_copies

# --------------------------------------------------------------------------- exact answers


def exact_log_likelihood(phi, alpha, words):
    """log p(w | phi, alpha), token sequence, theta collapsed, by enumerating K^N."""
    phi, alpha = np.asarray(phi, float), np.asarray(alpha, float)
    words = np.asarray(words, dtype=np.int64)
    n_topics, n = phi.shape[0], len(words)
    if n == 0:
        return 0.0
    zs = np.array(list(itertools.product(range(n_topics), repeat=n)), dtype=np.int64)
    counts = np.stack([(zs == k).sum(1) for k in range(n_topics)], 1)
    a = alpha.sum()
    lp = (gammaln(a) - gammaln(n + a) + (gammaln(counts + alpha) - gammaln(alpha)).sum(1)
          + np.log(phi[zs, words]).sum(1))
    return float(logsumexp(lp))


def dp_log_likelihood(phi, alpha, words):
    """log p(w) by dynamic programming over the topic-count vectors (exact, tiny K and N)."""
    phi, alpha = np.asarray(phi, float), np.asarray(alpha, float)
    n_topics, a = phi.shape[0], alpha.sum()
    states = {tuple([0] * n_topics): 1.0}
    for n, w in enumerate(words):
        new = {}
        for c, f in states.items():
            for k in range(n_topics):
                p = f * (c[k] + alpha[k]) / (n + a) * phi[k, w]
                key = tuple(c[i] + (i == k) for i in range(n_topics))
                new[key] = new.get(key, 0.0) + p
        states = new
    return float(np.log(sum(states.values())))


def words_of(x):
    return np.repeat(np.arange(len(x)), np.asarray(x, dtype=np.int64))


def exact_per_doc(phi, alpha, X):
    return np.array([exact_log_likelihood(phi, alpha, words_of(x)) for x in X])


def make_problem(seed=0, n_topics=3, n_words=4, n_docs=4, max_count=2):
    rng = np.random.default_rng(seed)
    phi = rng.dirichlet(np.full(n_words, 0.5), n_topics)
    alpha = rng.uniform(0.2, 1.0, n_topics)
    X = rng.integers(0, max_count + 1, (n_docs, n_words))
    X[X.sum(1) < 2, 0] = 2
    return phi, alpha, X


def assert_unbiased_in_probability(log_est, exact, n_se=4.5):
    ratio = np.exp(np.asarray(log_est) - exact)
    mean, se = ratio.mean(), ratio.std(ddof=1) / np.sqrt(ratio.size)
    assert abs(mean - 1.0) < n_se * se + 1e-12, (mean, se)
    return mean, se


# one 5-token document copied; K = 3, V = 4
PHI = np.array([[0.7, 0.1, 0.1, 0.1], [0.1, 0.6, 0.2, 0.1], [0.05, 0.05, 0.3, 0.6]])
ALPHA = np.array([0.3, 0.6, 0.9])
DOC = np.array([2, 1, 1, 1])
N_REP = 3000


def repeated(doc=DOC, n=N_REP):
    """``n`` distinct copies of ``doc`` written with synonyms, for a ``split`` model."""
    return synonym_copies(doc, n)


def split(phi):
    """The topics over the synonyms of :func:`repeated`'s copies."""
    return split_topics(phi)


def exact_copy(log_likelihood, doc=DOC):
    """The exact log-likelihood of a copy of ``doc``, given ``doc``'s own."""
    return log_likelihood - words_of(doc).size * np.log(N_SYNONYMS)


# --------------------------------------------------------------------------- exact helpers


def test_enumeration_matches_dp_and_monte_carlo_theta():
    phi, alpha, X = make_problem(1, n_topics=3, n_words=5, n_docs=3, max_count=2)
    for x in X:
        w = words_of(x)
        expected = dp_log_likelihood(phi, alpha, w)
        assert exact_log_likelihood(phi, alpha, w) == pytest.approx(expected, abs=1e-9)
    # Polya / Dirichlet-multinomial against a Monte Carlo theta integral
    rng = np.random.default_rng(0)
    theta = rng.dirichlet(ALPHA, 400_000)
    lik = np.prod((theta @ PHI)[:, words_of(DOC)], axis=1)
    mc = np.log(lik.mean())
    se = lik.std() / lik.mean() / np.sqrt(theta.shape[0])
    assert abs(mc - exact_log_likelihood(PHI, ALPHA, words_of(DOC))) < 5 * se


def test_dirichlet_sampler_moments():
    from sktopics._random import counter_log_dirichlet as _log_dirichlet

    conc = torch.tensor([[0.05, 0.7, 3.0]], dtype=torch.float64).expand(40_000, 3).contiguous()
    keys = torch.arange(40_000).view(-1, 1)
    theta = torch.exp(_log_dirichlet(conc, keys, 5)).numpy()
    a = conc[0].numpy()
    mean = a / a.sum()
    var = mean * (1 - mean) / (a.sum() + 1)
    assert np.allclose(theta.mean(0), mean, atol=5 * np.sqrt(var / 40_000).max())
    assert np.allclose(theta.var(0), var, rtol=0.06)


# --------------------------------------------------------------------------- AIS


@pytest.mark.parametrize("kernel", ["collapsed", "blocked"])
def test_ais_unbiased_in_probability(kernel):
    exact = exact_copy(exact_log_likelihood(PHI, ALPHA, words_of(DOC)))
    res = ais_log_likelihood((split(PHI), ALPHA), repeated(), n_temperatures=4, n_chains=1,
                             schedule="linear", kernel=kernel, random_state=0)
    assert_unbiased_in_probability(res.per_document, exact)
    # ... while the log is biased low (Jensen): a stochastic lower bound
    gap = res.per_document.mean() - exact
    assert gap < -4 * res.per_document.std() / np.sqrt(N_REP)


@pytest.mark.parametrize("kernel", ["collapsed", "blocked"])
def test_ais_converges_to_exact(kernel):
    phi, alpha, X = make_problem(2, n_topics=3, n_words=4, n_docs=4)
    exact = exact_per_doc(phi, alpha, X)
    res = ais_log_likelihood((phi, alpha), X, n_temperatures=200, n_chains=200,
                             kernel=kernel, random_state=1)
    err = np.abs(res.per_document - exact)
    assert np.all(err < np.maximum(0.03, 6 * res.per_document_stderr)), (err, res.per_document_stderr)
    assert res.n_tokens.sum() == X.sum()
    assert res.per_token == pytest.approx(res.total / X.sum())
    assert res.perplexity() == pytest.approx(np.exp(-res.per_token))


@pytest.mark.parametrize("kernel", ["collapsed", "blocked"])
def test_ais_with_ess_resampling_stays_unbiased(monkeypatch, kernel):
    import sktopics._evaluation._zspace as zspace_mod

    exact = exact_copy(exact_log_likelihood(PHI, ALPHA, words_of(DOC)))
    kw = dict(n_temperatures=3, n_chains=4, schedule="linear", kernel=kernel, random_state=0)
    X = repeated(n=N_REP // 4)
    res = ais_log_likelihood((split(PHI), ALPHA), X, resample_threshold=0.9, **kw)
    assert res.settings["n_resampling_events"] > X.shape[0] // 4  # it did resample
    assert_unbiased_in_probability(res.per_document, exact)
    plain = ais_log_likelihood((split(PHI), ALPHA), X, **kw)
    assert plain.settings["n_resampling_events"] == 0
    assert not np.allclose(plain.per_document, res.per_document)
    # negative control: resetting the weights without resampling the states is biased
    # (low, by 7.6-20 standard errors at 2 N_REP documents over 12 seeds and both
    # kernels; at N_REP / 4 documents the collapsed kernel's bias was only 2-5 of them)
    resample = zspace_mod.resample_chains

    def weights_only(logw, z, c, *args):  # the weights reset, the states left alone
        return resample(logw, z.clone(), c.clone(), *args)[0], 1

    monkeypatch.setattr(zspace_mod, "resample_chains", weights_only)
    bad = ais_log_likelihood((split(PHI), ALPHA), repeated(n=2 * N_REP), resample_threshold=0.9,
                             **kw)
    with pytest.raises(AssertionError):
        assert_unbiased_in_probability(bad.per_document, exact)


def test_ais_bias_shrinks_with_temperatures():
    exact = exact_copy(exact_log_likelihood(PHI, ALPHA, words_of(DOC)))
    gaps, sds = [], []
    for s in (1, 10, 100):
        res = ais_log_likelihood((split(PHI), ALPHA), repeated(n=600), n_temperatures=s,
                                 n_chains=1,
                                 schedule="linear", random_state=3)
        gaps.append(res.per_document.mean() - exact)
        sds.append(res.per_document.std())
    assert gaps[0] < gaps[1] < gaps[2] <= 0.01
    assert sds[0] > sds[1] > sds[2]


@pytest.mark.parametrize("kernel", ["collapsed", "blocked"])
def test_ais_reproducible_and_batch_independent(monkeypatch, kernel):
    import sktopics._evaluation._tokens as tokens_mod

    phi, alpha, X = make_problem(4, n_docs=6)
    kw = dict(n_temperatures=20, n_chains=3, random_state=7, kernel=kernel)
    a = ais_log_likelihood((phi, alpha), X, **kw)
    b = ais_log_likelihood((phi, alpha), X, **kw)
    np.testing.assert_array_equal(a.per_document, b.per_document)
    monkeypatch.setattr(tokens_mod, "MAX_ELEMENTS", 1)  # one document per batch
    c = ais_log_likelihood((phi, alpha), X, **kw)
    np.testing.assert_allclose(a.per_document, c.per_document, rtol=0, atol=1e-12)
    d = ais_log_likelihood((phi, alpha), X, **dict(kw, random_state=8))
    assert not np.allclose(a.per_document, d.per_document)
    # a document's estimate does not depend on the other documents in X
    e = ais_log_likelihood((phi, alpha), X[[0, 0, 2, 3, 4, 5]], **kw)
    np.testing.assert_allclose(e.per_document[2:], a.per_document[2:], rtol=0, atol=1e-12)


@pytest.mark.filterwarnings("ignore:The forward and reverse runs disagree")
def test_left_to_right_and_ratio_batch_independent(monkeypatch):
    import sktopics._evaluation._tokens as tokens_mod

    phi, alpha, X = make_problem(4, n_docs=5)
    l1 = left_to_right_log_likelihood((phi, alpha), X, n_particles=7, random_state=3)
    r1 = ratio_ais((phi, alpha), (PHI_B[:, :4], ALPHA_B), X, direction="both", n_temperatures=5,
                   n_chains=3, random_state=3)
    monkeypatch.setattr(tokens_mod, "MAX_ELEMENTS", 1)
    l2 = left_to_right_log_likelihood((phi, alpha), X, n_particles=7, random_state=3)
    r2 = ratio_ais((phi, alpha), (PHI_B[:, :4], ALPHA_B), X, direction="both", n_temperatures=5,
                   n_chains=3, random_state=3)
    np.testing.assert_allclose(l1.per_document, l2.per_document, rtol=0, atol=1e-12)
    np.testing.assert_allclose(r1.per_document, r2.per_document, rtol=0, atol=1e-12)


def test_ais_token_order_invariance_and_empty_documents():
    phi, alpha, X = make_problem(5, n_docs=3)
    X = np.vstack([X, np.zeros((1, X.shape[1]), dtype=X.dtype)])
    res = ais_log_likelihood((phi, alpha), X, n_temperatures=100, n_chains=100, random_state=0)
    assert res.per_document[-1] == 0.0
    exact = exact_per_doc(phi, alpha, X)
    assert np.all(np.abs(res.per_document - exact) < np.maximum(0.03, 6 * res.per_document_stderr))


# --------------------------------------------------------------------------- left-to-right


def test_left_to_right_unbiased_in_probability():
    exact = exact_copy(exact_log_likelihood(PHI, ALPHA, words_of(DOC)))
    res = left_to_right_log_likelihood((split(PHI), ALPHA), repeated(), n_particles=3, n_filters=1,
                                       random_state=0)
    assert_unbiased_in_probability(res.per_document, exact)
    assert res.per_document.mean() < exact  # log biased low


def test_left_to_right_converges_with_and_without_rejuvenation():
    phi, alpha, X = make_problem(6, n_docs=4)
    exact = exact_per_doc(phi, alpha, X)
    for rejuvenate in (False, True):
        res = left_to_right_log_likelihood((phi, alpha), X, n_particles=2000, n_filters=4,
                                           rejuvenate=rejuvenate, random_state=2)
        err = np.abs(res.per_document - exact)
        assert np.all(err < np.maximum(0.03, 6 * res.per_document_stderr)), err


def _mallet_left_to_right(phi, alpha, words, n_particles, rng):
    """The original estimator (product over positions of particle means): biased high."""
    n_topics, a = phi.shape[0], alpha.sum()
    c = np.zeros((n_particles, n_topics))
    total = 0.0
    for n, w in enumerate(words):
        pred = (c + alpha) / (n + a) * phi[:, w]
        total += np.log(pred.sum(1).mean())
        p = pred / pred.sum(1, keepdims=True)
        k = (p.cumsum(1) < rng.random((n_particles, 1))).sum(1).clip(max=n_topics - 1)
        c[np.arange(n_particles), k] += 1
    return total


def test_negative_control_mallet_formula_is_biased_high():
    # the test machinery detects a wrong estimator: Mallet's formula over-estimates
    phi = np.array([[0.9, 0.1], [0.1, 0.9]])
    alpha = np.array([0.1, 0.1])
    words = np.array([0, 1, 0, 1, 0, 1])
    exact = exact_log_likelihood(phi, alpha, words)
    rng = np.random.default_rng(0)
    est = np.array([_mallet_left_to_right(phi, alpha, words, 5, rng) for _ in range(2000)])
    ratio = np.exp(est - exact)
    assert ratio.mean() - 1 > 6 * ratio.std() / np.sqrt(ratio.size)
    ours = left_to_right_log_likelihood((split(phi), alpha), repeated(np.array([3, 3]), 2000),
                                        n_particles=5, n_filters=1, random_state=0)
    assert_unbiased_in_probability(ours.per_document, exact_copy(exact, np.array([3, 3])))


# --------------------------------------------------------------------------- ratio-AIS

PHI_B = np.array([[0.5, 0.2, 0.2, 0.1], [0.2, 0.4, 0.2, 0.2], [0.1, 0.1, 0.4, 0.4]])
ALPHA_B = np.array([0.5, 0.5, 0.5])


@pytest.mark.parametrize("path", ["geometric", "convex", "hybrid"])
@pytest.mark.parametrize("direction", ["forward", "reverse"])
def test_ratio_ais_unbiased_with_exact_starts(path, direction):
    words = words_of(DOC)
    exact = exact_log_likelihood(PHI, ALPHA, words) - exact_log_likelihood(PHI_B, ALPHA_B, words)
    res = ratio_ais((split(PHI), ALPHA), (split(PHI_B), ALPHA_B), repeated(n=2000), path=path,
                    direction=direction, n_temperatures=3, n_chains=1, start="exact",
                    align_topics=False, random_state=0)
    if direction == "forward":
        assert_unbiased_in_probability(res.forward, exact)
    else:  # the reverse run estimates p_B / p_A unbiasedly
        assert_unbiased_in_probability(-res.reverse, -exact)


@pytest.mark.parametrize("path", ["geometric", "convex"])
def test_ratio_ais_sandwich_and_both_directions(path):
    words = words_of(DOC)
    exact = exact_log_likelihood(PHI, ALPHA, words) - exact_log_likelihood(PHI_B, ALPHA_B, words)
    res = ratio_ais((split(PHI), ALPHA), (split(PHI_B), ALPHA_B), repeated(n=1500), path=path,
                    direction="both", n_temperatures=2, n_chains=1, start="exact",
                    align_topics=False, random_state=1)
    se_f = res.forward.std() / np.sqrt(1500)
    se_r = res.reverse.std() / np.sqrt(1500)
    # E[log v_fwd] <= exact <= -E[log v_rev]  (3 s.e. slack)
    assert res.forward.mean() <= exact + 3 * se_f
    assert res.reverse.mean() >= exact - 3 * se_r
    assert np.all(res.per_document_gap == res.reverse - res.forward)
    bracket = res.bracket()  # perplexity ratios: the reverse run's is the smaller
    assert bracket.reverse <= bracket.forward + 1e-3


@pytest.mark.parametrize("path", ["geometric", "convex", "hybrid"])
@pytest.mark.parametrize("start", ["ais", "sequential", "exact"])
def test_ratio_ais_recovers_exact_log_ratio(path, start):
    phi_a, alpha_a, X = make_problem(7, n_docs=3)
    rng = np.random.default_rng(8)
    phi_b = rng.dirichlet(np.full(4, 0.5), 3)
    alpha_b = np.full(3, 0.5)
    exact = exact_per_doc(phi_a, alpha_a, X) - exact_per_doc(phi_b, alpha_b, X)
    res = ratio_ais((phi_a, alpha_a), (phi_b, alpha_b), X, path=path, direction="both",
                    start=start, n_temperatures=100, n_chains=200, random_state=2)
    for est, se in ((res.forward, res.forward_stderr), (res.reverse, res.reverse_stderr)):
        assert np.all(np.abs(est - exact) < np.maximum(0.03, 6 * se)), (est - exact, se)
    # forward and reverse agree within their standard errors
    gap_se = np.sqrt(res.forward_stderr**2 + res.reverse_stderr**2)
    assert np.all(np.abs(res.per_document_gap) < np.maximum(0.03, 6 * gap_se))
    assert res.corpus_perplexity_ratio == pytest.approx(np.exp(-exact.sum() / X.sum()), rel=0.02)


def _sequential_start(n_burnin, n=N_REP, seed=0):
    import scipy.sparse as sp

    from sktopics._evaluation._ratio import start_state
    from sktopics._evaluation._tokens import token_batches
    from sktopics._evaluation._zspace import log_phi_rows, topic_word_tensor
    from sktopics._random import root_key

    X = sp.csr_matrix(repeated(n=n))
    cpu = torch.device("cpu")
    (batch,) = token_batches(X, n_chains=1, n_topics=3, device=cpu, root=root_key(seed),
                             stream=20)
    L = log_phi_rows(topic_word_tensor(split(PHI_B), cpu), batch)
    z, c, u = start_state(split(PHI_B), ALPHA_B, L, batch, "sequential", None, n_burnin,
                          "collapsed", 20)
    return z.numpy(), c.numpy(), u.numpy()


def test_sequential_start_is_a_valid_importance_sampler():
    # one left-to-right particle: exp(u) is unbiased for p(w | B) ...
    words = words_of(DOC)
    _, c0, u0 = _sequential_start(0)
    assert_unbiased_in_probability(u0, exact_copy(exact_log_likelihood(PHI_B, ALPHA_B, words)))
    # ... and B-invariant sweeps after it keep the weights valid: the weighted mean of
    # the topic counts matches the exact posterior mean (enumeration)
    zs = np.array(list(itertools.product(range(3), repeat=len(words))))
    counts = np.stack([(zs == k).sum(1) for k in range(3)], 1)
    lp = ((gammaln(counts + ALPHA_B) - gammaln(ALPHA_B)).sum(1)
          + np.log(PHI_B[zs, words]).sum(1))
    post = np.exp(lp - logsumexp(lp))
    exact_mean = post @ counts
    for n_burnin in (0, 2):
        _, c, u = _sequential_start(n_burnin, seed=1)
        w = np.exp(u - u.max())
        w /= w.sum()
        est = w @ c
        se = np.sqrt(((w[:, None] * (c - est)) ** 2).sum(0))
        assert np.all(np.abs(est - exact_mean) < 4.5 * se + 1e-9), (est, exact_mean, se)
    # without the weights the sequential draw is off the posterior (the check has power)
    assert np.any(np.abs(c0.mean(0) - exact_mean) > 5 * c0.std(0) / np.sqrt(len(c0)))


def test_ratio_ais_topic_alignment_is_a_permutation_invariance():
    phi_a, alpha_a, X = make_problem(9, n_docs=2)
    perm = np.array([2, 0, 1])
    res = ratio_ais((phi_a, alpha_a), (phi_a[perm], alpha_a[perm]), X, n_temperatures=10,
                    n_chains=5, random_state=0)
    np.testing.assert_array_equal(phi_a[perm][res.topic_permutation], phi_a)
    assert np.all(np.abs(res.per_document) < 1e-9)


def test_ratio_ais_blocked_kernel_rules():
    X = np.tile(DOC, (3, 1))
    with pytest.raises(ValueError, match="blocked"):
        ratio_ais((PHI, ALPHA), (PHI_B, ALPHA_B), X, path="geometric", kernel="blocked")
    res = ratio_ais((PHI, ALPHA), (PHI_B, ALPHA_B), X, path="hybrid", kernel="blocked",
                    n_temperatures=5, n_chains=2, random_state=0)
    assert np.all(np.isfinite(res.per_document))


# --------------------------------------------------------------------------- iteration-AIS


def test_iteration_ais_every_stage_unbiased():
    snaps = [(PHI_B, ALPHA_B), (0.5 * (PHI + PHI_B), 0.5 * (ALPHA + ALPHA_B)), (PHI, ALPHA)]
    words = words_of(DOC)
    results = iteration_ais([(split(phi), alpha) for phi, alpha in snaps], repeated(n=2000),
                            n_start_temperatures=4, n_segment_temperatures=2, n_chains=1,
                            random_state=0)
    assert len(results) == 3
    for (phi, alpha), res in zip(snaps, results):
        assert_unbiased_in_probability(res.per_document,
                                       exact_copy(exact_log_likelihood(phi, alpha, words)))


def test_iteration_ais_converges():
    phi_a, alpha_a, X = make_problem(10, n_docs=3)
    snaps = []
    for t in np.linspace(0, 1, 4):
        phi = (1 - t) * np.full_like(phi_a, 0.25) + t * phi_a
        snaps.append((phi, (1 - t) * np.ones(3) + t * alpha_a))
    results = iteration_ais(snaps, X, n_start_temperatures=100, n_segment_temperatures=30,
                            n_chains=200, random_state=0)
    for (phi, alpha), res in zip(snaps, results):
        exact = exact_per_doc(phi, alpha, X)
        assert np.all(np.abs(res.per_document - exact) < np.maximum(0.03, 6 * res.per_document_stderr))


def test_negative_control_jacobi_kernel_is_detected(monkeypatch):
    # a fully parallel update of all tokens from stale counts is not a valid kernel:
    # the unbiasedness test must catch it
    import sktopics._evaluation._zspace as zspace_mod

    def jacobi(path, b, z, c, counters):
        batch = path.batch
        u = batch.uniforms(*counters).double()
        stale = c[batch.row].clone()  # every token's row counts, before the sweep
        stale[torch.arange(batch.n_tokens), z] -= 1
        cum = torch.cumsum(torch.exp(path.cond_logits(b, stale, path.LA.tok)), -1)
        z.copy_(torch.searchsorted(cum, u.view(-1, 1) * cum[:, -1:]).view(-1))
        c.copy_(batch.counts(z, c.shape[1]))

    monkeypatch.setattr(zspace_mod, "sweep_collapsed", jacobi)
    exact = exact_copy(exact_log_likelihood(PHI, ALPHA, words_of(DOC)))
    res = ais_log_likelihood((split(PHI), ALPHA), repeated(), n_temperatures=20, n_chains=1,
                             schedule="linear", kernel="collapsed", random_state=0)
    with pytest.raises(AssertionError):
        assert_unbiased_in_probability(res.per_document, exact)


def test_ratio_ais_different_numbers_of_topics_is_exact():
    from sktopics.model_selection._ratio_ais import embed_smaller_model

    phi3, alpha3, X = make_problem(11, n_topics=3, n_docs=3)
    rng = np.random.default_rng(12)
    phi2, alpha2 = rng.dirichlet(np.full(4, 0.5), 2), np.array([0.4, 0.9])
    # the embedding leaves p(w) unchanged
    phi_e, alpha_e = embed_smaller_model(phi2, alpha2, phi3)
    assert phi_e.shape == (3, 4) and alpha_e.sum() == pytest.approx(alpha2.sum())
    np.testing.assert_allclose(exact_per_doc(phi_e, alpha_e, X), exact_per_doc(phi2, alpha2, X))
    exact = exact_per_doc(phi3, alpha3, X) - exact_per_doc(phi2, alpha2, X)
    for a, b, sign in (((phi3, alpha3), (phi2, alpha2), 1), ((phi2, alpha2), (phi3, alpha3), -1)):
        res = ratio_ais(a, b, X, path="convex", direction="both", n_temperatures=100,
                        n_chains=100, random_state=0)
        assert res.method == "ratio-ais" and "embedded" in res.settings
        se = np.sqrt(res.forward_stderr**2 + res.reverse_stderr**2)
        assert np.all(np.abs(res.per_document - sign * exact) < np.maximum(0.03, 6 * se))


# --------------------------------------------------------------------------- PAM paths


def exact_pam_log_likelihood(phi, alpha_root, alpha_sub, words):
    """log p(w) for 4-PAM by enumerating the (s, t) paths of every token."""
    def polya(c, a):
        return gammaln(a.sum()) - gammaln(c.sum() + a.sum()) + (gammaln(c + a) - gammaln(a)).sum()

    paths = [(s, t) for s, t in zip(*np.nonzero(alpha_sub > 0))]
    out = []
    for zs in itertools.product(range(len(paths)), repeat=len(words)):
        counts = np.zeros(alpha_sub.shape)
        for z in zs:
            counts[paths[z]] += 1
        lp = polya(counts.sum(1), alpha_root)
        for s in range(alpha_sub.shape[0]):
            keep = alpha_sub[s] > 0
            lp += polya(counts[s][keep], alpha_sub[s][keep])
        lp += sum(np.log(phi[paths[z][1], w]) for z, w in zip(zs, words))
        out.append(lp)
    return float(logsumexp(out))


class _PAMView:
    """A two-level PAM with exact Dirichlet priors, as a user's own generative model."""

    def __init__(self, phi, alpha_root, alpha_sub):
        self.prior = self.likelihood = self.proposal = None
        self.n_features = phi.shape[1]
        self._mix = PathMixture(phi, alpha_root, alpha_sub)

    def token_mixture(self, approximate=True):
        return None

    def path_mixture(self, approximate=True):
        return self._mix


def test_pam_path_ais_unbiased_and_convergent():
    phi, alpha_root, alpha_sub = _pam_problem()
    doc = np.array([2, 1, 0, 1])
    exact = exact_pam_log_likelihood(phi, alpha_root, alpha_sub, words_of(doc))
    res = ais_log_likelihood(_PAMView(split(phi), alpha_root, alpha_sub), repeated(doc, 3000),
                             n_temperatures=4, n_chains=1, schedule="linear", random_state=0)
    assert res.method == "ais-z-pam"
    assert_unbiased_in_probability(res.per_document, exact_copy(exact, doc))
    view = _PAMView(phi, alpha_root, alpha_sub)
    res = ais_log_likelihood(view, doc[None], n_temperatures=200, n_chains=400, random_state=0)
    assert abs(res.per_document[0] - exact) < max(0.03, 6 * res.per_document_stderr[0])


def _pam_problem():
    rng = np.random.default_rng(0)
    phi = rng.dirichlet(np.full(4, 0.5), 3)
    alpha_root = np.array([0.5, 1.2])
    alpha_sub = np.array([[0.4, 0.8, 0.0], [0.0, 0.5, 0.9]])  # masked edges (MoLDA-like)
    return phi, alpha_root, alpha_sub


def test_pam_left_to_right_unbiased_and_convergent():
    phi, alpha_root, alpha_sub = _pam_problem()
    view = _PAMView(split(phi), alpha_root, alpha_sub)
    doc = np.array([2, 1, 0, 1])
    exact = exact_pam_log_likelihood(phi, alpha_root, alpha_sub, words_of(doc))
    res = left_to_right_log_likelihood(view, repeated(doc, 3000), n_particles=2, n_filters=1,
                                       random_state=0)
    assert_unbiased_in_probability(res.per_document, exact_copy(exact, doc))
    X = np.array([[1, 0, 2, 1], [0, 3, 1, 0], [2, 1, 0, 1]])
    full = np.array([[0.4, 0.8, 0.3], [0.6, 0.5, 0.9]])  # every super-topic to every sub-topic
    for rejuvenate, sub in ((False, alpha_sub), (True, alpha_sub), (False, full)):
        exact = np.array([exact_pam_log_likelihood(phi, alpha_root, sub, words_of(x)) for x in X])
        res = left_to_right_log_likelihood(_PAMView(phi, alpha_root, sub), X, n_particles=2000,
                                           n_filters=4, rejuvenate=rejuvenate, random_state=1)
        err = np.abs(res.per_document - exact)
        assert np.all(err < np.maximum(0.03, 6 * res.per_document_stderr)), err


def test_pam_with_one_super_topic_is_lda():
    # a 4-PAM with one super-topic is LDA: the path predictive reduces to the topic urn
    phi, alpha, X = make_problem(7, n_docs=3)
    lda = left_to_right_log_likelihood((phi, alpha), X, n_particles=50, random_state=0)
    pam = left_to_right_log_likelihood(_PAMView(phi, np.array([2.0]), alpha[None]), X,
                                       n_particles=50, random_state=0)
    np.testing.assert_allclose(pam.per_document, lda.per_document, rtol=0, atol=1e-9)


def test_document_completion_matches_exact_conditional():
    from sktopics._evaluation._smc import _shuffle_tokens
    from sktopics._evaluation._tokens import expand_tokens as _expand_tokens
    from sktopics._random import root_key as _root_key
    from sktopics.model_selection import document_completion_log_likelihood

    phi, alpha, X = make_problem(13, n_docs=3)
    res = document_completion_log_likelihood((phi, alpha), X, n_particles=3000, n_filters=2,
                                             random_state=0)
    # the exact answer for the same seeded token order: log p(w) - log p(w_seen)
    import scipy.sparse as sp

    Xc = sp.csr_matrix(X.astype(float))
    for d in range(X.shape[0]):
        tokens, mask, lengths = _expand_tokens(Xc, np.array([d]))
        tok, msk = _shuffle_tokens(torch.as_tensor(tokens), torch.as_tensor(mask),
                                   document_keys(Xc[[d]]), _root_key(0))
        words = tok[0][msk[0]].numpy()
        n_seen = int(np.floor(0.5 * len(words)))
        exact = exact_log_likelihood(phi, alpha, words) - exact_log_likelihood(phi, alpha, words[:n_seen])
        assert abs(res.per_document[d] - exact) < max(0.03, 6 * res.per_document_stderr[d])
        assert res.n_tokens[d] == len(words) - n_seen


def test_iteration_ais_with_resampling_stays_unbiased():
    snaps = [(PHI_B, ALPHA_B), (0.5 * (PHI + PHI_B), 0.5 * (ALPHA + ALPHA_B)), (PHI, ALPHA)]
    words = words_of(DOC)
    results = iteration_ais([(split(phi), alpha) for phi, alpha in snaps], repeated(n=600),
                            n_start_temperatures=3, n_segment_temperatures=2, n_chains=4,
                            resample_threshold=1.0, random_state=0)
    assert results[-1].settings["n_resampling_events"] > 0
    for (phi, alpha), res in zip(snaps, results):
        assert_unbiased_in_probability(res.per_document,
                                       exact_copy(exact_log_likelihood(phi, alpha, words)))


def _eager_sweep(conditional):
    """A sequential collapsed sweep written plainly in float64, position by position.

    ``conditional(path, b, c, sl)`` gives the unnormalised conditional (rows, K) of the
    tokens ``sl`` of one position given the other tokens' counts ``c`` of their rows.
    """

    def sweep(path, b, z, c, counters):
        batch = path.batch
        u = batch.uniforms(*counters)
        for n, o in zip(batch.n_active, batch.offsets):
            sl = slice(o, o + n)
            c[torch.arange(n), z[sl]] -= 1
            cum = torch.cumsum(conditional(path, b, c[:n], sl), -1)
            z[sl] = torch.searchsorted(cum, u[sl].double().view(-1, 1) * cum[:, -1:]).view(-1)
            c[torch.arange(n), z[sl]] += 1

    return sweep


@pytest.mark.parametrize("path", ["geometric", "convex"])
def test_compiled_lockstep_loops_match_the_eager_sweep(monkeypatch, path):
    # the lock-step loops (compiled or not) are an optimisation of a plain sequential
    # sweep over the conditional: same random numbers, same draws
    import sktopics._evaluation._zspace as zspace_mod

    phi, alpha, X = make_problem(4, n_docs=5)
    kw = dict(path=path, direction="both", n_temperatures=6, n_chains=3, random_state=3,
              kernel="collapsed")
    compiled = ratio_ais((phi, alpha), (PHI_B[:, :4], ALPHA_B), X, **kw)
    monkeypatch.setattr(zspace_mod, "scripted", lambda fn: fn)  # the same loops, uncompiled
    plain = ratio_ais((phi, alpha), (PHI_B[:, :4], ALPHA_B), X, **kw)
    monkeypatch.setattr(zspace_mod, "sweep_collapsed", _eager_sweep(
        lambda path, b, c, sl: torch.exp(path.cond_logits(b, c, path.LA.tok[sl]))))
    eager = ratio_ais((phi, alpha), (PHI_B[:, :4], ALPHA_B), X, **kw)
    for other in (plain, eager):
        np.testing.assert_allclose(compiled.forward, other.forward, rtol=0, atol=1e-9)
        np.testing.assert_allclose(compiled.reverse, other.reverse, rtol=0, atol=1e-9)


@pytest.mark.parametrize("full_dag", [False, True])
def test_compiled_pam_loop_matches_the_eager_sweep(monkeypatch, full_dag):
    import sktopics._evaluation._zspace as zspace_mod

    phi, alpha_root, alpha_sub = _pam_problem()
    if full_dag:
        alpha_sub = np.array([[0.4, 0.8, 0.3], [0.6, 0.5, 0.9]])
    view = _PAMView(phi, alpha_root, alpha_sub)
    X = np.array([[1, 0, 2, 1], [0, 3, 1, 0], [2, 1, 0, 1], [0, 0, 1, 0]])
    kw = dict(n_temperatures=8, n_chains=3, random_state=3)
    compiled = ais_log_likelihood(view, X, **kw)
    monkeypatch.setattr(zspace_mod, "sweep_collapsed", _eager_sweep(
        lambda path, b, c, sl: path.urn.weights(c)
        * torch.exp(b * path.LA.table[path.LA.tok[sl]][:, path.path_leaf])))
    eager = ais_log_likelihood(view, X, **kw)
    np.testing.assert_allclose(compiled.per_document, eager.per_document, rtol=0, atol=1e-9)
