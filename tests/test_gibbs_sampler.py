"""Statistical tests of the Gibbs kernels against exact enumeration.

The tiny problem: 2 documents, 5 tokens, V = 3, K = 2, an asymmetric alpha. Its
posterior over the 2**5 topic configurations is computed exactly from the
collapsed joint p(w, z).
"""

import functools
import itertools
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
import torch
from scipy.special import gammaln
from scipy.stats import chi2

from sktopics import LDAGibbs, config_context
from sktopics._gibbs import _fused as fused
from sktopics._gibbs import _hyper as hyper
from sktopics._gibbs import _sweeps as sweeps
from sktopics._gibbs._fused import fused_dense_available, fused_dense_chunk
from sktopics._gibbs._hyper import (
    count_histogram,
    document_statistics,
    optimize_alpha,
    optimize_beta,
)
from sktopics._gibbs._state import GibbsCorpus, GibbsState
from sktopics._gibbs._sweeps import (
    _frozen_tables,
    dense_chunk,
    log_joint,
    mh_chunk,
    parallel_sweep,
    random_init,
    sequential_sweep,
)
from sktopics._kernels._gibbs import parallel_draws
from sktopics._random import counter_uniform, stream_key

ALPHA = np.array([0.4, 0.9])
BETA = 0.3
K = 2
# doc 0: words 0, 1, 0 ; doc 1: words 1, 2
X_TINY = sp.csr_matrix(np.array([[2, 1, 0], [0, 1, 1]]))


def _tiny_state(z=None):
    corpus = GibbsCorpus(X_TINY, "cpu")
    if z is None:
        z = torch.zeros(corpus.n_tokens, dtype=torch.int32)
    return GibbsState(corpus, K, torch.as_tensor(z, dtype=torch.int32))


def _log_joint_np(doc, word, z, n_docs, n_features):
    """Collapsed log p(w, z) computed independently with numpy/scipy."""
    n_dk = np.zeros((n_docs, K))
    n_wk = np.zeros((n_features, K))
    np.add.at(n_dk, (doc, z), 1)
    np.add.at(n_wk, (word, z), 1)
    a0 = ALPHA.sum()
    value = (gammaln(a0) - gammaln(n_dk.sum(1) + a0)).sum()
    value += (gammaln(n_dk + ALPHA) - gammaln(ALPHA)).sum()
    V = n_features
    value += (gammaln(V * BETA) - gammaln(n_wk.sum(0) + V * BETA)).sum()
    value += (gammaln(n_wk + BETA) - gammaln(BETA)).sum()
    return value


def _exact_posterior():
    state = _tiny_state()
    corpus = state.corpus
    doc, word = corpus.doc.numpy(), corpus.word.numpy()
    configs = np.array(list(itertools.product(range(K), repeat=corpus.n_tokens)))
    logp = np.array([_log_joint_np(doc, word, c, corpus.n_docs, corpus.n_features)
                     for c in configs])
    p = np.exp(logp - logp.max())
    return configs, p / p.sum()


def _config_index(z):
    index = 0
    for value in z:
        index = index * K + int(value)
    return index


def _conditional(doc, word, z, i, n_docs, n_features):
    """Exact collapsed full conditional of token ``i`` given the others."""
    n_dk = np.zeros((n_docs, K))
    n_wk = np.zeros((n_features, K))
    mask = np.arange(len(z)) != i
    np.add.at(n_dk, (doc[mask], z[mask]), 1)
    np.add.at(n_wk, (word[mask], z[mask]), 1)
    p = (n_dk[doc[i]] + ALPHA) * (n_wk[word[i]] + BETA) / (n_wk.sum(0) + n_features * BETA)
    return p / p.sum()


def _run_chain(sweep_fn, n_sweeps, seed):
    state = _tiny_state()
    state.z = random_init(state.corpus, K, seed)
    state.rebuild_counts()
    return _chain(state, sweep_fn, n_sweeps)


def _chain(state, sweep_fn, n_sweeps):
    """Configuration counts and the per-token indicator trace of ``z == 0``."""
    counts = np.zeros(K ** state.corpus.n_tokens)
    marginal_trace = []
    for sweep in range(1, n_sweeps + 1):
        sweep_fn(state, sweep)
        z = state.z.numpy()
        counts[_config_index(z)] += 1
        marginal_trace.append(z == 0)
    return counts, np.array(marginal_trace, dtype=np.float64)


def _batch_means_se(trace, n_batches=20):
    """Standard error of the mean of each column by batch means (autocorrelation-safe)."""
    n = (trace.shape[0] // n_batches) * n_batches
    batches = trace[:n].reshape(n_batches, -1, trace.shape[1]).mean(1)
    return batches.std(0, ddof=1) / np.sqrt(n_batches)


def test_log_joint_matches_independent_formula():
    configs, _ = _exact_posterior()
    state = _tiny_state()
    corpus = state.corpus
    for c in configs[::5]:
        state.z = torch.as_tensor(c, dtype=torch.int32)
        state.rebuild_counts()
        expected = _log_joint_np(corpus.doc.numpy(), corpus.word.numpy(), c,
                                 corpus.n_docs, corpus.n_features)
        assert log_joint(state, ALPHA, BETA) == pytest.approx(expected, rel=1e-10)


def test_log_joint_with_mostly_zero_counts_matches_dense_formula(monkeypatch):
    """K = 200 on 300 tokens: most counts are zero, which log_joint skips."""
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(0.3, size=(40, 25)))
    corpus = GibbsCorpus(X, "cpu")
    n_topics, beta = 200, 0.05
    alpha = rng.uniform(0.01, 0.5, n_topics)
    z = rng.integers(0, n_topics, corpus.n_tokens)
    state = GibbsState(corpus, n_topics, torch.as_tensor(z, dtype=torch.int32))
    n_dk = np.zeros((corpus.n_docs, n_topics))
    n_wk = np.zeros((corpus.n_features, n_topics))
    np.add.at(n_dk, (corpus.doc.numpy(), z), 1)
    np.add.at(n_wk, (corpus.word.numpy(), z), 1)
    assert (n_dk == 0).mean() > 0.9
    V = corpus.n_features
    expected = ((gammaln(alpha.sum()) - gammaln(n_dk.sum(1) + alpha.sum())).sum()
                + (gammaln(n_dk + alpha) - gammaln(alpha)).sum()
                + (gammaln(V * beta) - gammaln(n_wk.sum(0) + V * beta)).sum()
                + (gammaln(n_wk + beta) - gammaln(beta)).sum())
    assert log_joint(state, alpha, beta) == pytest.approx(expected, rel=1e-12)
    # Histograms counted a few rows at a time, counts above 1 gathered one by one: the
    # same joint.
    monkeypatch.setattr(hyper, "_CHUNK_CELLS", 3 * n_topics)
    monkeypatch.setattr(hyper, "_DENSE_VALUES", 1)
    assert log_joint(state, alpha, beta) == pytest.approx(expected, rel=1e-12)


def test_sequential_sampler_stationary_distribution_is_the_posterior():
    """Exact collapsed Gibbs: configuration frequencies match the exact posterior."""
    configs, posterior = _exact_posterior()
    n_sweeps = 6000

    def sweep_fn(state, sweep):
        sequential_sweep(state, ALPHA, BETA, 7, sweep)

    counts, trace = _run_chain(sweep_fn, n_sweeps, seed=7)
    freq = counts / counts.sum()
    # Per-token marginals: within 4.5 batch-means standard errors (plus a floor).
    exact_marginal = (posterior[:, None] * (configs == 0)).sum(0)
    se = _batch_means_se(trace)
    assert np.all(np.abs(trace.mean(0) - exact_marginal) <= 4.5 * se + 5e-3)
    # Whole configuration: total variation distance small (32 states, 6000
    # correlated draws; the sampling TV is about 0.03).
    tv = 0.5 * np.abs(freq - posterior).sum()
    assert tv < 0.06, tv


def _jacobi_stationary():
    """Exact stationary law of the fully parallel (frozen-count) chain."""
    configs, _ = _exact_posterior()
    corpus = _tiny_state().corpus
    doc, word = corpus.doc.numpy(), corpus.word.numpy()
    n = len(configs)
    T = np.ones((n, n))
    for a, za in enumerate(configs):
        conds = [_conditional(doc, word, za, i, corpus.n_docs, corpus.n_features)
                 for i in range(len(za))]
        for b, zb in enumerate(configs):
            T[a, b] = np.prod([conds[i][zb[i]] for i in range(len(zb))])
    values, vectors = np.linalg.eig(T.T)
    pi = np.real(vectors[:, np.argmin(np.abs(values - 1))])
    return pi / pi.sum()


@pytest.mark.parametrize("cpu_kernels", ["compiled", "torch"])
def test_parallel_sweep_stationary_distribution(cpu_kernels):
    """The parallel sweep converges to its own (AD-LDA) stationary law.

    Every token is drawn from its exact conditional given the frozen state, so the
    chain's transition matrix is the product of the per-token conditionals; its
    stationary law is computed exactly here. It is NOT the posterior (a parallel
    sweep from frozen counts is AD-LDA's approximation): on this 5-token problem, where one token moves the
    counts a lot, the total-variation gap is about 0.39. (On real corpora a token
    moves the counts by 1/n and held-out quality matches sequential Gibbs; see the
    benchmark.) The sampler must reproduce this stationary law exactly.
    """
    configs, posterior = _exact_posterior()
    jacobi = _jacobi_stationary()
    gap = 0.5 * np.abs(jacobi - posterior).sum()
    assert gap > 0.05, gap  # AD-LDA with one worker per token is not exact

    def sweep_fn(state, sweep):
        parallel_sweep(state, ALPHA, BETA, 3, sweep, chunk=4)

    with config_context(cpu_kernels=cpu_kernels):
        counts, trace = _run_chain(sweep_fn, 10000, seed=3)
    freq = counts / counts.sum()
    tv_jacobi = 0.5 * np.abs(freq - jacobi).sum()
    assert tv_jacobi < 0.06, tv_jacobi
    assert 0.5 * np.abs(freq - posterior).sum() > 0.2
    exact_marginal = (jacobi[:, None] * (configs == 0)).sum(0)
    se = _batch_means_se(trace)
    assert np.all(np.abs(trace.mean(0) - exact_marginal) <= 4.5 * se + 5e-3)


def _replicated(state, i, n):
    corpus = state.corpus
    rep = torch.full((n,), i, dtype=torch.int64)
    return corpus.doc[rep], corpus.word[rep], state.z[rep]


def _fused_device():
    """Where the fused Triton kernel runs: CUDA, or Triton's interpreter on the CPU
    (``SKTOPICS_TRITON_INTERPRET=1`` and ``TRITON_INTERPRET=1`` set before Triton is
    imported, as :func:`test_fused_kernel_interpreted` runs these tests)."""
    if torch.cuda.is_available() and fused_dense_available("cuda", K):
        return "cuda"
    if fused_dense_available("cpu", K):
        return "cpu"
    pytest.skip("needs Triton with CUDA, or its interpreter (see test_fused_kernel_interpreted)")


def _compiled_draw(doc, word, z, theta_tab, phi_tab, n_dk, n_wk, n_k, alpha, beta, u, key):
    """The compiled kernel's draws of these tokens, the i-th with counter i (the
    uniforms ``u`` of the other kernels, from the same key)."""
    out = np.empty(doc.shape[0], np.int32)
    arrays = [a.numpy() for a in (doc, word, z, n_dk, n_wk, n_k, alpha)]
    parallel_draws(*arrays, beta, key, np.zeros(0, np.int64), out, 0, doc.shape[0])
    return torch.from_numpy(out)


@pytest.mark.parametrize("kernel", ["eager", "fused", "compiled"])
def test_dense_draw_is_the_exact_conditional(kernel):
    """Each token of a parallel sweep is drawn from its exact full conditional."""
    draw, device = dense_chunk, "cpu"
    if kernel == "fused":
        draw, device = fused_dense_chunk, _fused_device()
    z0 = np.array([0, 1, 1, 0, 1], dtype=np.int32)
    state = _tiny_state(z0)
    corpus = state.corpus
    alpha = torch.tensor(ALPHA, dtype=torch.float32)
    theta_tab = state.n_dk.float() + alpha
    phi_tab = (state.n_wk.float() + BETA) / (state.n_k.float() + corpus.n_features * BETA)
    n = 40000
    for i in range(corpus.n_tokens):
        doc, word, z = _replicated(state, i, n)
        u = counter_uniform(stream_key(11, 1, i), torch.arange(n))
        args = (doc, word, z, theta_tab, phi_tab, state.n_dk, state.n_wk, state.n_k, alpha)
        if kernel == "compiled":
            draw = functools.partial(_compiled_draw, key=stream_key(11, 1, i))
        draws = draw(*(a.to(device) for a in args), BETA, u.to(device)).cpu().numpy()
        expected = _conditional(corpus.doc.numpy(), corpus.word.numpy(),
                                state.z.numpy().astype(np.int64), i,
                                corpus.n_docs, corpus.n_features)
        observed = np.bincount(draws, minlength=K)
        stat = ((observed - n * expected) ** 2 / (n * expected)).sum()
        assert stat < chi2.ppf(0.999, K - 1), (i, observed / n, expected)


def test_fused_kernel_agrees_with_eager():
    """Same uniforms, same topics: the scan may add in another order, so a token can
    differ only where its uniform falls within rounding of a boundary, and then by one
    topic."""
    device = _fused_device()
    rng = np.random.default_rng(0)
    n_topics = 50
    X = sp.random(200, 300, density=0.05, random_state=rng, format="csr")
    X.data = rng.integers(1, 6, X.nnz).astype(np.float64)
    corpus = GibbsCorpus(X, "cpu")
    state = GibbsState(corpus, n_topics, random_init(corpus, n_topics, 0))
    alpha = torch.full((n_topics,), 0.1)
    theta_tab, phi_tab = _frozen_tables(state, alpha, 0.01)
    u = counter_uniform(stream_key(5, 1, 0), torch.arange(corpus.n_tokens))
    args = (corpus.doc, corpus.word, state.z, theta_tab, phi_tab, state.n_dk, state.n_wk,
            state.n_k, alpha)
    eager = dense_chunk(*args, 0.01, u)
    fused = fused_dense_chunk(*(a.to(device) for a in args), 0.01, u.to(device)).cpu()
    differ = eager != fused
    assert fused.dtype == torch.int32 and fused.min() >= 0 and fused.max() < n_topics
    assert differ.float().mean() < 1e-3
    assert torch.all((eager[differ] - fused[differ]).abs() == 1)


def test_parallel_sweep_fused_matches_eager(monkeypatch):
    """The sweep takes the fused kernel where it can (chunked by its own rule, writing
    into the new assignments) and gives the eager sweep's topics."""
    device = _fused_device()
    rng = np.random.default_rng(1)
    X = sp.random(300, 150, density=0.1, random_state=rng, format="csr")
    X.data = rng.integers(1, 4, X.nnz).astype(np.float64)
    alpha = np.full(20, 0.2)

    def state(where):
        corpus = GibbsCorpus(X, where)
        return GibbsState(corpus, 20, random_init(corpus, 20, 0))

    eager, fused = state("cpu"), state(device)
    monkeypatch.setattr(sweeps, "_FUSED_CHUNK", 1000)  # several chunks
    with monkeypatch.context() as eager_only, config_context(cpu_kernels="torch"):
        eager_only.setattr(sweeps, "fused_dense_available", lambda *a: False)
        parallel_sweep(eager, alpha, 0.05, 7, 1, chunk=512)
    parallel_sweep(fused, alpha, 0.05, 7, 1, chunk=512)
    assert (eager.z != fused.z.cpu()).float().mean() < 1e-3
    fused_wk = fused.n_wk.cpu()
    assert int(fused_wk.sum()) == fused.corpus.n_tokens
    assert (eager.n_wk - fused_wk).abs().sum() <= 2 * (eager.z != fused.z.cpu()).sum()


def test_corpus_fingerprint_identifies_the_tokens():
    """Equal tokens give equal fingerprints whatever the matrix's layout; moving tokens
    between two documents of equal length (which keeps every sum over the tokens) or
    changing one count gives another."""
    X = sp.random(40, 30, density=0.3, random_state=4, format="csr")
    X.data = np.ceil(X.data * 4)
    fingerprint = GibbsCorpus(X, "cpu").fingerprint()
    coo = X.tocoo()
    doubled = sp.coo_matrix((np.r_[coo.data - 1, np.ones(coo.nnz)],
                             (np.r_[coo.row, coo.row], np.r_[coo.col, coo.col])), shape=X.shape)
    explicit = X.copy()
    explicit.data = np.r_[explicit.data, 0.0]
    explicit.indices = np.r_[explicit.indices, 0]
    explicit.indptr[-1] += 1
    for same in (X.tocsc(), doubled, X.astype(np.float32), explicit):
        assert GibbsCorpus(same, "cpu").fingerprint() == fingerprint
    # Two documents of the same length with their words exchanged.
    docs = sp.csr_matrix(np.array([[2, 0, 1], [0, 3, 0], [1, 1, 0]]))
    swapped = sp.csr_matrix(np.array([[0, 3, 0], [2, 0, 1], [1, 1, 0]]))
    assert GibbsCorpus(docs, "cpu").fingerprint() != GibbsCorpus(swapped, "cpu").fingerprint()
    other = X.copy()
    other.data[0] += 1
    assert GibbsCorpus(other, "cpu").fingerprint() != fingerprint


def test_parallel_sweep_falls_back_when_the_fused_kernel_fails(monkeypatch):
    """A Triton that cannot build the kernel costs speed, with one warning, not a crash."""
    X = sp.random(50, 40, density=0.2, random_state=3, format="csr")
    X.data[:] = 2.0

    def fresh():
        corpus = GibbsCorpus(X, "cpu")
        return GibbsState(corpus, 5, random_init(corpus, 5, 0))

    expected = fresh()
    parallel_sweep(expected, np.full(5, 0.3), 0.1, 4, 1, chunk=64)

    def broken(interpreted):
        raise RuntimeError("no such instruction")

    monkeypatch.setattr(fused, "_have_triton", lambda: True)
    monkeypatch.setattr(fused, "_interpreting", lambda: True)
    monkeypatch.setattr(fused, "_dense_kernel", broken)
    state = fresh()
    with pytest.warns(RuntimeWarning, match="fused Gibbs kernel failed"):
        parallel_sweep(state, np.full(5, 0.3), 0.1, 4, 1, chunk=64)
    torch.testing.assert_close(state.z, expected.z, rtol=0, atol=0)
    assert not fused.fused_dense_available("cpu", 5)  # and no second warning


def test_fused_kernel_interpreted():
    """The fused kernel's tests, run by Triton's interpreter on the CPU (where Triton is
    installed): the CPU suite checks the GPU kernel's logic."""
    pytest.importorskip("triton")
    if os.environ.get("SKTOPICS_TRITON_INTERPRET") == "1" or torch.cuda.is_available():
        pytest.skip("the fused tests run in this process")
    selection = "fused and not falls_back"
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
         "-k", selection, "-W", "ignore::pytest.PytestUnraisableExceptionWarning"],
        env={**os.environ, "TRITON_INTERPRET": "1", "SKTOPICS_TRITON_INTERPRET": "1"},
        capture_output=True, text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    # The fused tests; the launcher skips itself there.
    summary = proc.stdout.strip().splitlines()[-1]
    assert summary.startswith("3 passed, 1 skipped"), summary


def _mh_frozen(state):
    corpus = state.corpus
    z_by_doc = state.z[corpus.doc_perm]
    return (state.z, corpus.word_start, corpus.word_length, z_by_doc, corpus.doc_start,
            corpus.doc_length)


@pytest.mark.parametrize("background", [False, True])
@pytest.mark.parametrize("start", ["posterior", "frozen"])
def test_mh_cycle_leaves_the_conditional_invariant(start, background):
    """MH word/doc proposals with exact acceptance target the per-token conditional.

    ``posterior``: starting from exact draws of the conditional, one cycle keeps
    them distributed as the conditional (invariance). ``frozen``: starting from the
    frozen assignment, 40 cycles converge to it. With a background (other shards'
    word-topic counts, in the target but not in the tokens the word proposal picks
    from), the acceptance must use the counts the proposal really drew from.
    """
    K5 = 5
    rng = np.random.default_rng(0)
    X = sp.csr_matrix(rng.poisson(1.5, size=(3, 6)))
    corpus = GibbsCorpus(X, "cpu")
    z0 = torch.as_tensor(rng.integers(0, K5, corpus.n_tokens), dtype=torch.int32)
    bg = rng.integers(0, 6, size=(corpus.n_features, K5)) if background else None
    state = GibbsState(corpus, K5, z0, bg)
    if bg is None:
        bg = np.zeros((corpus.n_features, K5))
    alpha_np = np.array([0.3, 0.1, 0.5, 0.2, 0.05])
    beta = 0.2
    alpha = torch.tensor(alpha_np, dtype=torch.float32)
    n = 30000
    n_cycles = 1 if start == "posterior" else 40
    doc, word, z = corpus.doc.numpy(), corpus.word.numpy(), state.z.numpy().astype(np.int64)
    for i in range(0, corpus.n_tokens, 3):
        n_dk = np.zeros((corpus.n_docs, K5))
        n_wk = np.zeros((corpus.n_features, K5))
        mask = np.arange(len(z)) != i
        np.add.at(n_dk, (doc[mask], z[mask]), 1)
        np.add.at(n_wk, (word[mask], z[mask]), 1)
        n_wk += bg
        target = (n_dk[doc[i]] + alpha_np) * (n_wk[word[i]] + beta) / (
            n_wk.sum(0) + corpus.n_features * beta)
        target /= target.sum()
        rep_doc, rep_word, rep_z = _replicated(state, i, n)
        if start == "posterior":
            z_cur = torch.as_tensor(rng.choice(K5, size=n, p=target))
        else:
            z_cur = rep_z
        index = torch.arange(n)
        uniforms = [[counter_uniform(stream_key(5, s, c * 100 + i), index) for s in range(4)]
                    for c in range(n_cycles)]
        draws = mh_chunk(rep_doc, rep_word, rep_z, z_cur, _mh_frozen(state),
                         (state.n_dk, state.n_wk, state.n_k), alpha, torch.cumsum(alpha, 0),
                         beta, uniforms, word_proposal=state.own_word_topic()).numpy()
        observed = np.bincount(draws, minlength=K5)
        stat = ((observed - n * target) ** 2 / (n * target)).sum()
        assert stat < chi2.ppf(0.999, K5 - 1), (i, observed / n, target)


def test_counter_uniform_is_splitmix64_of_the_counter():
    # Reference: the SplitMix64 finaliser in plain Python integers (mod 2**64),
    # applied to index * golden + key; the top 24 bits make the uniform.
    mask = (1 << 64) - 1

    def splitmix64(x):
        x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & mask
        x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & mask
        return x ^ (x >> 31)

    key = stream_key(7, 1, 3)
    index = [0, 1, 2, 12345, 2**40 + 17, 2**62 - 1]
    expected = [splitmix64((i * 0x9E3779B97F4A7C15 + key) & mask) >> 40 for i in index]
    u = counter_uniform(key, torch.tensor(index, dtype=torch.int64))
    assert (u.double().numpy() * 2**24).astype(np.int64).tolist() == expected


def test_counter_uniform_properties():
    index = torch.arange(200000)
    u = counter_uniform(stream_key(1, 2, 3), index)
    assert u.dtype == torch.float32
    assert float(u.min()) >= 0.0 and float(u.max()) < 1.0
    # Uniform: deciles within 4 sigma.
    counts = np.bincount((u.numpy() * 10).astype(int), minlength=10)
    assert np.all(np.abs(counts - 20000) < 4 * np.sqrt(20000 * 0.09))
    # Pure function of the counter: chunking does not matter.
    key = stream_key(1, 2, 3)
    parts = torch.cat([counter_uniform(key, index[:777]), counter_uniform(key, index[777:])])
    assert torch.equal(parts, u)
    # Different streams / steps / seeds give different numbers.
    assert not torch.equal(u, counter_uniform(stream_key(1, 2, 4), index))
    assert not torch.equal(u, counter_uniform(stream_key(2, 2, 3), index))
    # Neighbouring counters are not correlated.
    a, b = u[:-1].numpy(), u[1:].numpy()
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.02


def test_optimize_alpha_recovers_dirichlet_multinomial_alpha():
    rng = np.random.default_rng(0)
    alpha_true = np.array([1.0, 0.5, 0.2, 0.1, 0.05])
    theta = rng.dirichlet(alpha_true, size=3000)
    n_dk = np.stack([rng.multinomial(100, t) for t in theta])
    statistics = document_statistics(torch.as_tensor(n_dk, dtype=torch.int32))
    alpha = optimize_alpha([statistics], np.ones(5), n_iter=500)
    np.testing.assert_allclose(alpha, alpha_true, rtol=0.12)


def test_optimize_beta_recovers_symmetric_beta():
    rng = np.random.default_rng(1)
    beta_true, V = 0.05, 400
    phi = rng.dirichlet(np.full(V, beta_true), size=20)
    n_kw = np.stack([rng.multinomial(5000, p) for p in phi])  # (K, V)
    n_wk = torch.as_tensor(n_kw.T.copy(), dtype=torch.int32)
    beta = optimize_beta(hyper.count_histogram(n_wk, pooled=True)[1:],
                         n_wk.sum(0, dtype=torch.int64), V, 1.0, n_iter=500)
    assert beta == pytest.approx(beta_true, rel=0.1)


def _reference_alpha(n_dk, alpha, n_iter):
    """Minka's fixed point as written, over every document and every non-zero count."""
    from scipy.special import digamma

    alpha = np.array(alpha, dtype=np.float64)
    n_d = n_dk.sum(1)
    for _ in range(n_iter):
        numer = np.array([sum(digamma(c + alpha[k]) - digamma(alpha[k])
                              for c in n_dk[:, k] if c > 0) for k in range(len(alpha))])
        denom = sum(digamma(n + alpha.sum()) - digamma(alpha.sum()) for n in n_d if n > 0)
        alpha = np.maximum(alpha * numer / denom, 1e-6)
    return alpha


def _reference_beta(n_wk, beta, n_iter):
    from scipy.special import digamma

    V = n_wk.shape[0]
    for _ in range(n_iter):
        numer = sum(digamma(c + beta) - digamma(beta) for c in n_wk.ravel() if c > 0)
        denom = V * sum(digamma(n + V * beta) - digamma(V * beta) for n in n_wk.sum(0) if n > 0)
        beta = max(beta * numer / denom, 1e-6)
    return beta


def _counts(rng):
    n_dk = rng.poisson(rng.gamma(0.3, 6.0, size=(120, 7)))
    n_dk[5] = 0  # an empty document
    n_dk[7, 2] = 300  # a long document's large count
    n_wk = rng.poisson(rng.gamma(0.2, 20.0, size=(200, 7)))
    n_wk[3, 1] = 5000  # a frequent word
    return n_dk, n_wk


@pytest.mark.parametrize("small_tables", [False, True])
def test_the_histogram_sums_are_the_sums_over_every_count(monkeypatch, small_tables):
    """The histograms change how the evidence's gradient and curvature are summed,
    not what they are: ``sum_d psi(n_dk + a) - psi(a)`` and its ``psi'`` over every
    document, to float64 rounding, also when the counts are read in small chunks and
    large values gathered one by one (what a big corpus or a long document meets)."""
    from scipy.special import digamma, polygamma

    if small_tables:
        monkeypatch.setattr(hyper, "_CHUNK_CELLS", 64)
        monkeypatch.setattr(hyper, "_DENSE_VALUES", 4)
        monkeypatch.setattr(hyper, "_DENSE_TABLE", 70)
    n_dk, _ = _counts(np.random.default_rng(3))
    topic, count, weight, _, _ = document_statistics(torch.as_tensor(n_dk, dtype=torch.int32))
    a = np.random.default_rng(4).uniform(0.05, 1.0, 7)
    value, slope = hyper._PsiSums(topic, count, weight, 7)(a)
    cells = [(c, a[k]) for row in n_dk for k, c in enumerate(row) if c > 0]
    expected_value = np.zeros(7)
    expected_slope = np.zeros(7)
    for row in n_dk:
        for k, c in enumerate(row):
            if c > 0:
                expected_value[k] += digamma(c + a[k]) - digamma(a[k])
                expected_slope[k] += polygamma(1, c + a[k]) - polygamma(1, a[k])
    assert cells
    np.testing.assert_allclose(value, expected_value, rtol=1e-12)
    np.testing.assert_allclose(slope, expected_slope, rtol=1e-11)


def test_learned_priors_are_the_maximum_of_the_evidence():
    """Newton's steps (and the fixed point's where they would not be safe) reach the
    maximum Minka's fixed point converges to, over every document and count; the
    documents split between two shards (an online fit's others) give the same alpha."""
    n_dk, n_wk = _counts(np.random.default_rng(3))
    start = np.random.default_rng(5).uniform(0.05, 1.0, 7)
    got = optimize_alpha([document_statistics(torch.as_tensor(n_dk, dtype=torch.int32))],
                         start, tol=1e-10)
    np.testing.assert_allclose(got, _reference_alpha(n_dk, start, 2000), rtol=1e-6)
    halves = [document_statistics(torch.as_tensor(part, dtype=torch.int32))
              for part in (n_dk[:50], n_dk[50:])]
    np.testing.assert_allclose(optimize_alpha(halves, start, tol=1e-10), got, rtol=1e-9)
    counts = hyper.count_histogram(torch.as_tensor(n_wk, dtype=torch.int32), pooled=True)[1:]
    got = optimize_beta(counts, torch.as_tensor(n_wk.sum(0)), n_wk.shape[0], 0.3, tol=1e-10)
    assert got == pytest.approx(_reference_beta(n_wk, 0.3, 2000), rel=1e-6)


def test_a_topic_no_document_uses_goes_to_the_floor_and_newton_still_steps():
    """A topic without documents has no maximum (the fixed point sends its alpha to 0):
    it goes to the floor while Newton's steps still converge the others in a few
    iterations, where the fixed point's would need dozens. With K = 1 a document's
    evidence does not depend on alpha: it keeps its value."""
    n_dk, _ = _counts(np.random.default_rng(3))
    n_dk[:, 4] = 0  # topic 4: no document
    statistics = [document_statistics(torch.as_tensor(n_dk, dtype=torch.int32))]
    reference = _reference_alpha(n_dk, np.full(7, 0.3), 2000)
    used = np.arange(7) != 4
    start = np.where(used, reference * 1.1, 0.3)
    got = optimize_alpha(statistics, start, n_iter=6, tol=0)
    np.testing.assert_allclose(got[used], reference[used], rtol=1e-8)
    assert got[4] == 1e-6
    slow = _reference_alpha(n_dk, start, 6)  # the fixed point's 6 steps: far behind
    assert np.max(np.abs(slow[used] / reference[used] - 1)) > 1e-4
    one = optimize_alpha([document_statistics(torch.as_tensor(n_dk.sum(1, keepdims=True),
                                                              dtype=torch.int32))], [0.5])
    assert one.shape == (1,) and one[0] == pytest.approx(0.5, rel=1e-12)


def test_priors_whose_evidence_grows_without_bound_stop_at_a_finite_value():
    """Every document in one topic, and that topic's word counts more even than a
    multinomial's: the evidence grows without bound in that topic's alpha and in beta.
    The 50 updates of a default fit stop at a finite ceiling instead of doubling to
    overflow, and a default fit of a corpus that small has finite topics and score."""
    n_dk = np.zeros((20, 3), np.int32)
    n_dk[:, 0] = 10
    statistics = [document_statistics(torch.as_tensor(n_dk))]
    alpha, beta = np.full(3, 0.1), 0.01
    n_wk = torch.tensor([[0, 0, 15], [0, 0, 15], [0, 0, 15]])  # (V, K): topic 2 only
    words = count_histogram(n_wk, pooled=True)[1:]
    for _ in range(50):
        alpha = optimize_alpha(statistics, alpha)
        beta = optimize_beta(words, n_wk.sum(0), 3, beta)
    assert np.all(np.isfinite(alpha)) and alpha[0] > 1e3 and alpha.max() <= 1e6
    assert np.isfinite(beta) and 1e3 < beta <= 1e6

    X = np.random.RandomState(0).uniform(size=(30, 3))  # 45 tokens once rounded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = LDAGibbs(device="cpu", random_state=0).fit(X)
    assert np.all(np.isfinite(model.components_))
    assert np.all(np.isfinite(model.doc_topic_prior_))
    assert np.isfinite(model.topic_word_prior_) and np.isfinite(model.score(X))


def test_a_value_held_at_the_ceiling_leaves_newton_to_the_others():
    """A topic at the ceiling whose gradient still rises stays there, and Newton's step
    for the others is the step of the evidence restricted to them (the Hessian keeps
    its diagonal-plus-constant form), not the fixed point's slow one."""
    alpha = np.array([1e6, 0.5, 0.3])
    gradient, curvature = np.array([2.0, 0.4, -0.3]), np.array([-1e-9, -3.0, -5.0])
    new = hyper._newton_alpha(alpha, gradient, curvature, 0.5)
    assert new is not None and new[0] == 1e6
    np.testing.assert_array_equal(
        new[1:], hyper._newton_alpha(alpha[1:], gradient[1:], curvature[1:], 0.5))
    assert np.all(new[1:] != alpha[1:])


def test_benchmark_document_completion_split_and_ordering():
    # the Gibbs benchmark's scoring protocol (benchmarks/_completion.py)
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
    from _completion import document_completion_perplexity, split_halves

    from sktopics.datasets import make_lda_corpus

    X, phi, _ = make_lda_corpus(n_samples=200, n_features=50, n_components=4,
                                doc_length=40, random_state=0)
    first, second = split_halves(X, seed=0)
    np.testing.assert_array_equal((first + second).toarray(), X.toarray())
    lengths = np.asarray(X.sum(1)).ravel()
    np.testing.assert_array_equal(np.asarray(first.sum(1)).ravel(), lengths // 2)
    true = document_completion_perplexity(X, phi, 0.1)
    uniform = document_completion_perplexity(X, np.full_like(phi, 1.0 / phi.shape[1]), 0.1)
    assert true < uniform
    assert uniform == pytest.approx(phi.shape[1], rel=1e-6)
