"""The evaluators' fast layouts compute the same estimators as their plain definitions.

* The long rows' tail of a collapsed sweep, solved by fixed-point iteration
  (``sktopics._evaluation._tail``), gives the same draws as the sequential sweep
  with the same uniforms, whatever the split between the lock-step loop and the
  solver, for every path (standard AIS, ratio-AIS's three paths, two-Polya
  geometric path, PAM paths).
* The left-to-right filter gives the same estimates whatever the batching of its
  documents and the chunks of a step.

Inputs are built so that the tail holds rows of different lengths, blocks of one
row and blocks of several, and documents long enough for several iterations.
"""

import warnings

import numpy as np
import pytest
import torch

import sktopics._evaluation._smc as smc_mod
import sktopics._evaluation._tail as tail_mod
from sktopics._evaluation._tail import TailLayout, fixed_point_sweep
from sktopics.model_selection import (
    ais_log_likelihood,
    document_completion_log_likelihood,
    iteration_ais,
    left_to_right_log_likelihood,
    ratio_ais,
)

from .test_model_selection_exact import _eager_sweep, _PAMView


def problem(seed=0, n_topics=4, n_words=25, n_docs=9):
    rng = np.random.default_rng(seed)
    phi_a = rng.dirichlet(np.full(n_words, 0.3), n_topics)
    phi_b = rng.dirichlet(np.full(n_words, 0.3), n_topics)
    alpha_a = rng.uniform(0.1, 1.0, n_topics)
    alpha_b = rng.uniform(0.1, 1.0, n_topics)
    # lengths from 0 to about 150 tokens: a ragged tail
    X = rng.poisson(rng.uniform(0.0, 6.0, (n_docs, 1)) * np.ones((1, n_words)))
    X[0] = 0
    return (phi_a, alpha_a), (phi_b, alpha_b), X


def reference_sweep(counts, z, u, tok, table, weights, places):
    """The plain sequential sweep of each row's tokens ``places[row]``, in order."""
    counts, z = counts.clone(), z.clone()
    for r, row_places in enumerate(places):
        for i in row_places:
            c = counts[r]
            c[z[i]] -= 1
            cum = torch.cumsum(weights(c) * table[tok[i]], -1)
            z[i] = torch.searchsorted(cum, u[i : i + 1] * cum[-1:])[0]
            c[z[i]] += 1
    return counts, z


@pytest.mark.parametrize("kind", ["linear", "callable"])
@pytest.mark.parametrize("block_elements", [64, 1 << 16])
def test_fixed_point_sweep_is_the_sequential_sweep(monkeypatch, kind, block_elements):
    monkeypatch.setattr(tail_mod, "_BLOCK_ELEMENTS", block_elements)
    rng = np.random.default_rng(1)
    n_topics, n_words = 5, 12
    lengths = np.array([130, 90, 90, 40, 7, 1])  # rows sorted by decreasing length
    n_active = [(lengths > j).sum() for j in range(lengths.max())]
    offsets = np.concatenate([[0], np.cumsum(n_active)[:-1]]).tolist()
    n_tokens = int(lengths.sum())
    tok = torch.as_tensor(rng.integers(0, n_words, n_tokens))
    z = torch.as_tensor(rng.integers(0, n_topics, n_tokens))
    u = torch.as_tensor(rng.uniform(0.001, 0.999, n_tokens), dtype=torch.float32)
    table = torch.as_tensor(rng.dirichlet(np.full(n_topics, 0.5), n_words), dtype=torch.float32)
    alpha = torch.as_tensor(rng.uniform(0.05, 1.0, n_topics), dtype=torch.float32)
    counts = torch.zeros(len(lengths), n_topics)
    positions = [[offsets[j] + r for j in range(lengths[r])] for r in range(len(lengths))]
    for r, places in enumerate(positions):
        for i in places:
            counts[r, z[i]] += 1
    # the solver's part of a sweep: positions 3 onwards of every row
    start = 3
    layout = TailLayout(offsets, n_active, start, n_topics, "cpu")
    assert len(layout.blocks) > 1 or block_elements > 64
    weights = alpha if kind == "linear" else (lambda C: torch.sqrt(C + 1.0) * (C + alpha))
    plain = weights if kind == "callable" else (lambda C: C + alpha)
    ref_counts, ref_z = reference_sweep(counts, z, u, tok, table, plain,
                                        [p[start:] for p in positions])
    got_counts, got_z = counts.clone(), z.clone()
    n_iter = fixed_point_sweep(layout, got_counts, got_z, u, tok, table, weights)
    assert torch.equal(got_z, ref_z)
    torch.testing.assert_close(got_counts, ref_counts, rtol=0, atol=0)
    assert n_iter >= len(layout.blocks)
    # the head's tokens are untouched
    head = [i for p in positions for i in p[:start]]
    assert torch.equal(got_z[head], z[head])


def _assert_same_weights(got, want):
    """The same draws and states give the same weights: bit for bit on the CPU; on a
    GPU the float64 sums of the weights may associate differently, a few units in
    the last place (a different state anywhere would move them by far more)."""
    if torch.cuda.is_available():
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=0)
    else:
        np.testing.assert_array_equal(got, want)


def _split_everywhere(monkeypatch, tail_rows):
    """0: the lock-step loop alone (no row is ever 'few'); huge: the solver alone."""
    monkeypatch.setattr(tail_mod, "TAIL_ROWS", tail_rows)


@pytest.mark.parametrize("path", ["geometric", "convex", "hybrid"])
def test_ratio_ais_is_the_same_whoever_solves_the_tail(monkeypatch, path):
    A, B, X = problem(2)
    kw = dict(path=path, direction="both", n_temperatures=4, n_chains=3, random_state=5,
              kernel="collapsed", n_burnin_sweeps=2)
    runs = []
    for tail_rows in (0, 10**9, 40):  # none, all, and a split
        _split_everywhere(monkeypatch, tail_rows)
        with warnings.catch_warnings():  # short paths: the directions may disagree
            warnings.simplefilter("ignore")
            runs.append(ratio_ais(A, B, X, **kw))
    for other in runs[1:]:
        _assert_same_weights(other.forward, runs[0].forward)
        _assert_same_weights(other.reverse, runs[0].reverse)


def test_ais_and_iteration_ais_are_the_same_whoever_solves_the_tail(monkeypatch):
    A, B, X = problem(3)
    runs = []
    for tail_rows in (0, 10**9, 40):
        _split_everywhere(monkeypatch, tail_rows)
        ais = ais_log_likelihood(A, X, n_temperatures=5, n_chains=2, random_state=0,
                                 kernel="collapsed")
        it = iteration_ais([B, A], X, n_start_temperatures=3, n_segment_temperatures=3,
                           n_chains=2, random_state=0, kernel="collapsed")
        runs.append([ais.per_document] + [r.per_document for r in it])
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            _assert_same_weights(a, b)


def test_the_tail_solver_is_the_sequential_sweep_of_the_definition(monkeypatch):
    # the whole sweep by the solver against the plain float64 sweep of the conditional
    # (the check the lock-step loops pass in test_model_selection_exact)
    import sktopics._evaluation._zspace as zspace_mod

    A, B, X = problem(4, n_docs=5)
    kw = dict(path="geometric", direction="forward", n_temperatures=4, n_chains=2,
              random_state=1, kernel="collapsed")
    _split_everywhere(monkeypatch, 10**9)
    solved = ratio_ais(A, B, X, **kw)
    monkeypatch.setattr(zspace_mod, "sweep_collapsed", _eager_sweep(
        lambda path, b, c, sl: torch.exp(path.cond_logits(b, c, path.LA.tok[sl]))))
    eager = ratio_ais(A, B, X, **kw)
    np.testing.assert_allclose(solved.forward, eager.forward, rtol=0, atol=1e-9)


def test_pam_path_ais_is_the_same_whoever_solves_the_tail(monkeypatch):
    rng = np.random.default_rng(5)
    phi = rng.dirichlet(np.full(15, 0.4), 3)
    view = _PAMView(phi, np.array([0.5, 0.8]), np.array([[0.4, 0.8, 0.3], [0.6, 0.5, 0.9]]))
    X = rng.poisson(rng.uniform(0.2, 5.0, (6, 1)) * np.ones((1, 15)))
    runs = []
    for tail_rows in (0, 10**9):
        _split_everywhere(monkeypatch, tail_rows)
        runs.append(ais_log_likelihood(view, X, n_temperatures=4, n_chains=2,
                                       random_state=0).per_document)
    _assert_same_weights(runs[1], runs[0])


@pytest.mark.parametrize("kw", [dict(n_particles=6, n_filters=2),
                                dict(n_particles=5, resample_threshold=1.0),
                                dict(n_particles=3, rejuvenate=True)])
def test_left_to_right_does_not_depend_on_batches_or_chunks(monkeypatch, kw):
    A, _, X = problem(6)
    first = left_to_right_log_likelihood(A, X, random_state=2, **kw)
    monkeypatch.setattr(smc_mod, "_CACHE_ELEMENTS", 1)  # one document per piece
    monkeypatch.setattr(smc_mod, "_STATE_ELEMENTS", 50)  # a document per batch
    monkeypatch.setattr(smc_mod, "_CHUNK_ELEMENTS", 50)  # few positions per chunk of uniforms
    second = left_to_right_log_likelihood(A, X, random_state=2, **kw)
    np.testing.assert_allclose(first.per_document, second.per_document, rtol=0, atol=1e-12)
    np.testing.assert_allclose(first.per_document_stderr, second.per_document_stderr,
                               rtol=0, atol=1e-12)


def test_document_completion_does_not_depend_on_chunks(monkeypatch):
    A, _, X = problem(7)
    first = document_completion_log_likelihood(A, X, n_particles=5, random_state=0)
    monkeypatch.setattr(smc_mod, "_CACHE_ELEMENTS", 1)
    second = document_completion_log_likelihood(A, X, n_particles=5, random_state=0)
    np.testing.assert_allclose(first.per_document, second.per_document, rtol=0, atol=1e-12)


def test_the_tail_is_solved_on_the_cpu_only():
    # one Jacobi iteration per host round trip: off the CPU the lock-step loop runs
    # every position (no per-iteration synchronisation)
    n_active = [200] * 10 + [30] * 50 + [3] * 400
    on_cpu = tail_mod.tail_start(n_active, 20)
    assert 0 < on_cpu < len(n_active)
    assert tail_mod.tail_start(n_active, 20, device=torch.device("cpu")) == on_cpu
    for device in ("cuda", "cuda:0", "mps", torch.device("meta")):
        assert tail_mod.tail_start(n_active, 20, device=device) == len(n_active)
