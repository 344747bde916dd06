"""Data-parallel training on torch.distributed: two CPU processes with gloo.

Each test starts two processes (``torch.multiprocessing``, spawned), which join a
process group through a file, run one scenario each, and write what they found to a
file the test reads. Every scenario also runs in this process on the concatenated
corpus (ranks in order), which the data-parallel result must equal.
"""

import contextlib
import os
import pickle
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import scipy.sparse as sp
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from scipy.stats import chi2
from skorch.callbacks import Callback

from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA
from sktopics.datasets import make_lda_corpus
from sktopics.distributed import data_parallel

from ._ranks import gloo_rank, run_ranks

pytestmark = pytest.mark.skipif(not dist.is_available() or not dist.is_gloo_available(),
                                reason="needs torch.distributed with gloo")

X, _, _ = make_lda_corpus(n_samples=120, n_features=40, n_components=4, doc_length=40,
                          random_state=7)
#: The ranks' shares: 70 and 50 documents.
SHARES = [X[:70], X[70:]]
GIBBS = dict(n_components=4, max_iter=30, burn_in=5, n_kept_samples=3, sample_interval=3,
             optimize_interval=5, evaluate_every=5, algorithm="parallel", device="cpu",
             random_state=0)


@pytest.fixture(scope="module")
def core(tmp_path_factory):
    return run_ranks(_core, tmp_path_factory.mktemp("core"))




# --------------------------------------------------------------------------- scenarios


def _fit(rank):
    with data_parallel() as collective:
        model = LDAGibbs(**GIBBS).fit(SHARES[rank])
        mh = LDAGibbs(**{**GIBBS, "algorithm": "mh"}).fit(SHARES[rank])
    return {"world": (collective.rank, collective.world_size), "model": model,
            "mh_components": mh.components_}


def _partial_fit(rank):
    halves = [share[: share.shape[0] // 2] for share in SHARES], \
             [share[share.shape[0] // 2:] for share in SHARES]
    model = LDAGibbs(**GIBBS)
    with data_parallel():
        for _ in range(3):
            for shard in halves:
                model.partial_fit(shard[rank])
    return model


def _misuse(rank):
    found = {}
    fitted = LDAGibbs(**{**GIBBS, "max_iter": 2, "warm_start": True})
    if rank == 0:  # a model fitted before (in this process alone) on rank 0 only
        fitted.fit(SHARES[0])
    cases = {
        "vocabulary": SHARES[rank][:, :40 - rank],
        "no documents": SHARES[rank][: 10 * (1 - rank)],
    }
    with data_parallel():
        for name, share in cases.items():
            try:
                LDAGibbs(**GIBBS).fit(share)
            except ValueError as exc:
                found[name] = str(exc)
        try:
            LDAGibbs(**{**GIBBS, "algorithm": "sequential"}).fit(SHARES[rank])
        except ValueError as exc:
            found["sequential"] = str(exc)
        try:  # ranks that would build different models
            LDAGibbs(**{**GIBBS, "n_components": 4 + rank, "n_jobs": 1 + rank}).fit(SHARES[rank])
        except ValueError as exc:
            found["parameters"] = str(exc)
        try:  # an invalid value on one rank
            LDAGibbs(**{**GIBBS, "max_iter": 2 - 3 * rank}).fit(SHARES[rank])
        except ValueError as exc:
            found["invalid"] = str(exc)
        try:
            fitted.fit(SHARES[rank])
        except ValueError as exc:
            found["warm"] = str(exc)
        # the group still works after the refusals
        found["after"] = LDAGibbs(**{**GIBBS, "max_iter": 2}).fit(SHARES[rank]).n_iter_
    return found


def _rank_dies(rank):
    if rank == 1:
        time.sleep(1)
        os._exit(0)  # a rank that dies without a word
    tic = time.perf_counter()
    try:
        with data_parallel(timeout=20):
            LDAGibbs(**{**GIBBS, "max_iter": 1000}).fit(SHARES[rank])
    except RuntimeError as exc:
        return {"error": str(exc), "seconds": time.perf_counter() - tic}
    return {"error": None}


def _score(rank, gibbs):
    """``score`` of one model over the ranks' shares; then ranks holding other models."""
    prodlda = ProdLDA(n_components=4, max_iter=3, device="cpu", random_state=0).fit(X)
    other = gibbs if rank == 0 else LDAGibbs(**{**GIBBS, "max_iter": 2}).fit(X)
    found = {"prodlda": prodlda}
    with data_parallel():
        found["gibbs_score"] = gibbs.score(SHARES[rank])
        found["gibbs_perplexity"] = gibbs.perplexity(SHARES[rank])
        found["prodlda_score"] = prodlda.score(SHARES[rank])
        try:
            other.score(SHARES[rank])
        except ValueError as exc:
            found["other_models"] = str(exc)
    return found


#: A corpus a neural model learns something from: 600 training documents in two
#: shares of 300, and 200 held out.
NEURAL_X, _, _ = make_lda_corpus(n_samples=800, n_features=60, n_components=4, doc_length=50,
                                 random_state=3)
NEURAL_TRAIN, NEURAL_TEST = NEURAL_X[:600], NEURAL_X[600:]
NEURAL_SHARES = [NEURAL_TRAIN[:300], NEURAL_TRAIN[300:]]
#: The global batch: 100 documents, 50 from each of the two ranks.
PRODLDA = dict(n_components=4, max_iter=30, batch_size=100, device="cpu", random_state=0)
PAM = dict(structure=(2, 4), max_iter=5, batch_size=100, device="cpu", random_state=0)
MOLDA = dict(component_sizes=(2, 4), max_iter=5, batch_size=100, device="cpu", random_state=0)


#: A batch of 12 rows, 5 on rank 0 and 7 on rank 1, and the weights of a loss on it.
NORM_X = torch.randn(12, 3, generator=torch.Generator().manual_seed(0)) * 3 + 1
NORM_W = torch.randn(12, 3, generator=torch.Generator().manual_seed(1))


def _normalise(x, collective=None):
    from sktopics._neural._modules import TFBatchNorm

    norm = TFBatchNorm(3, momentum=0.1).train()
    norm.bias.data = torch.tensor([0.5, -1.0, 2.0])
    norm.collective = collective
    x = x.clone().requires_grad_(True)
    y = norm(x)
    return norm, x, y


def _batch_norm(rank):
    rows = slice(0, 5) if rank == 0 else slice(5, 12)
    with data_parallel() as collective:
        norm, x, y = _normalise(NORM_X[rows], collective)
        (y * NORM_W[rows]).sum().backward()
    return {"y": y.detach(), "x_grad": x.grad, "bias_grad": norm.bias.grad,
            "running": (norm.running_mean, norm.running_var)}


def _neural(rank):
    """Neural models trained over the two ranks' shares, half the batch on each."""
    with data_parallel():
        prodlda = ProdLDA(**{**PRODLDA, "batch_size": 50}).fit(NEURAL_SHARES[rank])
        background = ProdLDA(**{**PRODLDA, "batch_size": 50, "max_iter": 2,
                                "word_background": True}).fit(NEURAL_SHARES[rank])
        pam = PAMVI(**{**PAM, "batch_size": 50}).fit(NEURAL_SHARES[rank])
        avitm = AVITM(**{**PRODLDA, "max_iter": 5, "batch_size": 50}).fit(NEURAL_SHARES[rank])
        molda = MoLDA(**{**MOLDA, "batch_size": 50}).fit(NEURAL_SHARES[rank])
    return {"prodlda": prodlda, "background": background, "pam": pam, "avitm": avitm,
            "molda": molda}


class _CtrlCOnRank1(Callback):
    """A skorch callback: Ctrl-C on rank 1 only, at the end of its second epoch."""

    def __init__(self, rank):
        self.rank = rank

    def on_epoch_end(self, net, **kwargs):
        if self.rank == 1 and len(net.history) == 2:
            os.kill(os.getpid(), signal.SIGINT)


def _neural_faults(rank):
    """One rank's problems reach every rank: clear errors and a common stop."""
    found = {}
    empty = sp.csr_matrix((2, NEURAL_X.shape[1]))
    cases = {
        "tokens": sp.vstack([NEURAL_SHARES[0][:1], empty]).tocsr() if rank else NEURAL_SHARES[0],
        "validation": NEURAL_SHARES[rank][: 40 if rank == 0 else 10],
    }
    with data_parallel(timeout=60):
        for name, share in cases.items():
            params = {**PRODLDA, "max_iter": 2, "batch_size": 4}
            if name == "validation":
                params["validation_fraction"] = 0.1
            try:
                ProdLDA(**params).fit(share)
            except ValueError as exc:
                found[name] = str(exc)
        model = ProdLDA(**{**PRODLDA, "max_iter": 6, "batch_size": 50,
                           "callbacks": [("ctrl_c", _CtrlCOnRank1(rank))]})
        try:
            model.fit(NEURAL_SHARES[rank])
        except KeyboardInterrupt:
            found["interrupted_after"] = model.n_iter_
        # per-rank pickles resume the interrupted run on every rank
        model = pickle.loads(pickle.dumps(model)).set_params(warm_start=True, callbacks=None)
        found["resumed"] = model.fit(NEURAL_SHARES[rank]).n_iter_
    return found


#: Two shares unlike each other (the second's documents three times as long), of 350
#: and 250 documents: each rank's batch is its whole share, the global batch the corpus.
UNEVEN_SHARES = [NEURAL_TRAIN[:350], NEURAL_TRAIN[350:] * 3]
UNEVEN = sp.vstack(UNEVEN_SHARES).tocsr()
#: ProdLDA without dropout, with a free-bits floor that some dimensions of the first
#: step fall below (in the global batch and, differently, in a rank's).
NOISELESS = dict(n_components=4, dropout=0.0, free_bits=1.0, device="cpu", random_state=0)


@contextlib.contextmanager
def _noiseless():
    """ProdLDA's reparameterised sample replaced by its mean: runs that differ only in
    their random draws then compute the same numbers."""
    from sktopics._neural._modules import TopicVAE

    sample = TopicVAE.sample_h
    TopicVAE.sample_h = lambda self, mu, logvar, generator=None: mu
    try:
        yield
    finally:
        TopicVAE.sample_h = sample


class _FirstGradients(Callback):
    """A skorch callback keeping the gradients of the first step, as the optimiser
    gets them."""

    def initialize(self):
        self.gradients = None
        return self

    def on_grad_computed(self, net, named_parameters, **kwargs):
        if self.gradients is None:
            self.gradients = {name: p.grad.detach().clone() for name, p in named_parameters
                              if p.grad is not None}


def _uneven_step(rank):
    gradients = _FirstGradients()
    with _noiseless(), data_parallel():
        ProdLDA(**NOISELESS, max_iter=1, batch_size=UNEVEN_SHARES[rank].shape[0],
                callbacks=[("gradients", gradients)]).fit(UNEVEN_SHARES[rank])
    return gradients.gradients


def _validation(rank):
    from sktopics.utils._generators import draw_seed

    share = UNEVEN_SHARES[rank]
    with _noiseless(), data_parallel():
        model = ProdLDA(**NOISELESS, max_iter=2, batch_size=50,
                        validation_fraction=0.2).fit(share)
    _, valid = model._split_validation(share.astype(np.float32), draw_seed(0))
    return {"model": model, "valid": valid}


class _ExtraOnRankZero(Callback):
    """A parameter every rank's module gets and only rank 0's forward pass uses."""

    def __init__(self, rank):
        self.rank = rank

    def on_train_begin(self, net, **kwargs):
        module = net.module_
        module.extra = torch.nn.Parameter(torch.ones(3))
        net.optimizer_.add_param_group({"params": [module.extra]})
        if self.rank == 0:
            forward = module.forward

            def forward_with_extra(x, generator=None):
                reconstruction, mu, logvar = forward(x, generator)
                return reconstruction + (module.extra ** 2).sum(), mu, logvar

            module.forward = forward_with_extra


def _unused_parameter(rank):
    with data_parallel(timeout=60):
        model = ProdLDA(**{**PRODLDA, "max_iter": 2, "batch_size": 50,
                           "callbacks": [("extra", _ExtraOnRankZero(rank))]})
        model.fit(NEURAL_SHARES[rank])
    return {"extra": model.net_.module_.extra.detach().clone(),
            "components": model.components_}


#: The one-process MH test's corpus (3 documents, 6 words), 2 documents on rank 0 and
#: 1 on rank 1; 5 topics.
MH_X = sp.csr_matrix(np.random.default_rng(0).poisson(1.5, size=(3, 6)))
MH_SHARES = [MH_X[:2], MH_X[2:]]
MH_ALPHA, MH_BETA, MH_K = np.array([0.3, 0.1, 0.5, 0.2, 0.05]), 0.2, 5


def _mh_conditional(rank, n=30000):
    """Each rank's MH draws of a few of its tokens, started from exact draws of their
    conditional given every rank's tokens (computed here from the gathered tokens, not
    from the sampler's tables), with that conditional."""
    from sktopics._gibbs._state import GibbsCorpus, GibbsState
    from sktopics._gibbs._sweeps import mh_chunk
    from sktopics._random import counter_uniform, stream_key

    rng = np.random.default_rng(10 + rank)
    with data_parallel() as collective:
        corpus = GibbsCorpus(MH_SHARES[rank], "cpu", collective)
        z0 = torch.as_tensor(rng.integers(0, MH_K, corpus.n_tokens), dtype=torch.int32)
        state = GibbsState(corpus, MH_K, z0)
        # the tables MH reads: every rank's word-topic counts, this rank's own apart
        own = state.own_word_topic()
        wiring = {"own_apart": own is not state.n_wk,
                  "total_is_sum": bool(torch.equal(collective.sum_(own.clone()), state.n_wk))}
        offset = 0 if rank == 0 else MH_SHARES[0].shape[0]
        tokens = collective.gather_objects(np.stack([corpus.doc.numpy() + offset,
                                                     corpus.word.numpy(), state.z.numpy()]))
    doc, word, z = np.concatenate(tokens, axis=1).astype(np.int64)
    first = sum(t.shape[1] for t in tokens[:rank])  # this rank's tokens among all
    alpha = torch.tensor(MH_ALPHA, dtype=torch.float32)
    frozen = (state.z, corpus.word_start, corpus.word_length, state.z[corpus.doc_perm],
              corpus.doc_start, corpus.doc_length)
    found = []
    for i in range(0, corpus.n_tokens, 3):
        others = np.arange(doc.size) != first + i
        n_dk = np.zeros((MH_X.shape[0], MH_K))
        n_wk = np.zeros((MH_X.shape[1], MH_K))
        np.add.at(n_dk, (doc[others], z[others]), 1)
        np.add.at(n_wk, (word[others], z[others]), 1)
        target = ((n_dk[doc[first + i]] + MH_ALPHA) * (n_wk[word[first + i]] + MH_BETA)
                  / (n_wk.sum(0) + MH_X.shape[1] * MH_BETA))
        target /= target.sum()
        replicas = torch.full((n,), i, dtype=torch.int64)
        start = torch.as_tensor(rng.choice(MH_K, size=n, p=target))
        index = torch.arange(n)
        uniforms = [[counter_uniform(stream_key(5 + rank, s, i), index) for s in range(4)]]
        draws = mh_chunk(corpus.doc[replicas], corpus.word[replicas], state.z[replicas], start,
                         frozen, (state.n_dk, state.n_wk, state.n_k), alpha,
                         torch.cumsum(alpha, 0), MH_BETA, uniforms,
                         word_proposal=state.own_word_topic()).numpy()
        found.append((np.bincount(draws, minlength=MH_K), target))
    return {"wiring": wiring, "draws": found}


def _core(rank):
    """The scenarios that succeed, in one group (starting processes takes seconds)."""
    fit = _fit(rank)
    return {"fit": fit, "partial_fit": _partial_fit(rank), "misuse": _misuse(rank),
            "score": _score(rank, fit["model"]), "neural": _neural(rank),
            "batch_norm": _batch_norm(rank), "neural_faults": _neural_faults(rank),
            "uneven_step": _uneven_step(rank), "validation": _validation(rank),
            "unused_parameter": _unused_parameter(rank), "mh": _mh_conditional(rank)}




# --------------------------------------------------------------------------- tests


def test_lda_gibbs_equals_one_process_on_the_concatenated_corpus(core):
    results = [r["fit"] for r in core]
    single = LDAGibbs(**GIBBS).fit(X)
    assert [r["world"] for r in results] == [(0, 2), (1, 2)]
    for r in results:
        model = r["model"]
        np.testing.assert_allclose(model.components_, single.components_, rtol=0, atol=1e-6)
        np.testing.assert_allclose(model.doc_topic_prior_, single.doc_topic_prior_, rtol=1e-9)
        assert model.topic_word_prior_ == pytest.approx(single.topic_word_prior_, rel=1e-9)
        np.testing.assert_allclose(model.log_likelihood_trace_, single.log_likelihood_trace_,
                                   rtol=1e-9)
        assert model.n_train_tokens_ == single.n_train_tokens_
        assert model.n_train_documents_ == single.n_train_documents_
    # each rank holds its own documents' proportions
    np.testing.assert_allclose(np.vstack([r["model"].doc_topic_ for r in results]),
                               single.doc_topic_, atol=1e-9)
    # MH proposes from each rank's own tokens: a valid chain, the same on every rank
    np.testing.assert_array_equal(results[0]["mh_components"], results[1]["mh_components"])


def test_partial_fit_over_shards_equals_one_process(core):
    results = [r["partial_fit"] for r in core]
    halves = [sp.vstack([s[: s.shape[0] // 2] for s in SHARES]).tocsr(),
              sp.vstack([s[s.shape[0] // 2:] for s in SHARES]).tocsr()]
    single = LDAGibbs(**GIBBS)
    for _ in range(3):
        for shard in halves:
            single.partial_fit(shard)
    for model in results:
        assert model.n_iter_ == 6
        np.testing.assert_allclose(model.components_, single.components_, rtol=0, atol=1e-6)


def test_misuse_gets_the_same_clear_error_on_every_rank(core):
    results = [r["misuse"] for r in core]
    for found in results:
        # different models are refused, naming what differs where; threads may differ
        assert "n_components on rank 1" in found["parameters"]
        assert "n_jobs on" not in found["parameters"]
        assert "rank 1" in found["invalid"] and "max_iter" in found["invalid"]
        assert "rank 1" in found["warm"] and "fitted" in found["warm"]
        assert "rank 1" in found["vocabulary"] and "vocabulary" in found["vocabulary"]
        assert "rank 1" in found["no documents"] and "sample" in found["no documents"]
        assert "sequential" in found["sequential"]
        assert found["after"] == 2
    assert results[0]["vocabulary"] == results[1]["vocabulary"]
    for case in ("parameters", "invalid", "warm"):
        assert results[0][case] == results[1][case]


def test_score_is_the_one_process_score_of_the_concatenated_documents(core):
    results = [r["score"] for r in core]
    gibbs = core[0]["fit"]["model"]
    expected = gibbs.score(X)
    for found in results:
        assert found["gibbs_score"] == pytest.approx(expected, rel=1e-9)
        assert found["gibbs_perplexity"] == pytest.approx(gibbs.perplexity(X), rel=1e-9)
        # the encoder-proposal importance sampler of a neural model, too
        assert found["prodlda_score"] == pytest.approx(found["prodlda"].score(X), rel=1e-6)
        assert "rank 1" in found["other_models"] and "model" in found["other_models"]
    # a document's random numbers are keyed by its counts, not its row: each share
    # scored on its own in one process, the sums over its documents add up to the
    # whole's (no numbering of the ranks' documents is needed); the encoder of the
    # neural model's sampler runs in float32 on batches shaped by the documents
    tokens = [float(share.sum()) for share in SHARES]
    for model, rtol in ((gibbs, 1e-9), (results[0]["prodlda"], 1e-6)):
        combined = sum(model.score(share) * n for share, n in zip(SHARES, tokens)) / sum(tokens)
        assert combined == pytest.approx(model.score(X), rel=rtol)
        np.testing.assert_allclose(np.concatenate([model.score_samples(s) for s in SHARES]),
                                   model.score_samples(X), rtol=rtol)


def test_batch_norm_uses_the_statistics_of_the_global_batch(core):
    """Two ranks holding 5 and 7 rows of a batch: outputs, input gradients, running
    averages as one batch norm over the 12 rows; the shift's gradient summed."""
    results = [r["batch_norm"] for r in core]
    norm, x, y = _normalise(NORM_X)
    (y * NORM_W).sum().backward()
    atol = 1e-5
    torch.testing.assert_close(torch.cat([r["y"] for r in results]), y.detach(), atol=atol,
                               rtol=1e-5)
    torch.testing.assert_close(torch.cat([r["x_grad"] for r in results]), x.grad, atol=atol,
                               rtol=1e-5)
    torch.testing.assert_close(results[0]["bias_grad"] + results[1]["bias_grad"],
                               norm.bias.grad, atol=atol, rtol=1e-5)
    for r in results:
        torch.testing.assert_close(r["running"][0], norm.running_mean, atol=atol, rtol=1e-5)
        torch.testing.assert_close(r["running"][1], norm.running_var, atol=atol, rtol=1e-5)
    # the ranks' own statistics would normalise differently
    _, _, alone = _normalise(NORM_X[:5])
    assert not torch.allclose(alone.detach(), y.detach()[:5], atol=1e-3)


def test_neural_models_train_one_model_over_the_ranks(core):
    results = [r["neural"] for r in core]
    # every rank holds the same model: the same initial weights, the global batch's gradients
    # and synchronised batch-norm statistics
    for name in ("prodlda", "background", "pam", "avitm", "molda"):
        np.testing.assert_array_equal(results[0][name].components_,
                                      results[1][name].components_)
        assert results[0][name].n_train_documents_ == 600
    # the word background counts every rank's documents
    single = ProdLDA(**{**PRODLDA, "max_iter": 2, "word_background": True}).fit(NEURAL_TRAIN)
    np.testing.assert_allclose(results[0]["background"]._background, single._background,
                               rtol=1e-12)
    # as good as one process with the same global batch on held-out documents
    parallel = results[0]["prodlda"].score(NEURAL_TEST)
    alone = ProdLDA(**PRODLDA).fit(NEURAL_TRAIN).score(NEURAL_TEST)
    untrained = np.log(1 / NEURAL_X.shape[1])  # uniform words
    assert parallel > untrained + 0.1
    assert abs(parallel - alone) <= 0.02 * abs(alone)


def test_a_step_follows_the_gradient_of_the_global_batch(core):
    """Ranks holding 350 and 250 documents unlike each other, each its whole share as
    its batch: the first step's gradient, on both ranks, is one process's on the 600
    documents (noise replaced by its mean). A plain average of the ranks' gradients
    would weigh the 250 documents as much as the 350, and a decoder batch norm with
    each rank's own statistics would give another gradient."""
    results = [r["uneven_step"] for r in core]
    gradients = _FirstGradients()
    with _noiseless():
        ProdLDA(**NOISELESS, max_iter=1, batch_size=UNEVEN.shape[0],
                callbacks=[("gradients", gradients)]).fit(UNEVEN)
    expected = gradients.gradients
    scale = max(float(g.abs().max()) for g in expected.values())
    for found in results:
        assert set(found) == set(expected)
        for name, gradient in expected.items():  # float32 sums in another order
            torch.testing.assert_close(found[name], gradient, rtol=1e-4, atol=1e-5 * scale)


def test_validation_normalises_with_every_ranks_validation_documents(core):
    """The recorded valid_loss is one process's loss on the ranks' validation documents
    together (one batch, its own statistics), the same on both ranks; each rank's own
    statistics give another number."""
    from sktopics._neural._data import CSRBatchIterator, CSRDataset
    from sktopics._neural._modules import TFBatchNorm

    results = [r["validation"] for r in core]
    recorded = [r["model"].net_.history[-1, "valid_loss"] for r in results]
    assert recorded[0] == recorded[1]
    module = results[0]["model"].net_.module_.eval()
    for norm in module.modules():
        if isinstance(norm, TFBatchNorm):
            norm.use_running_stats = False

    def loss(X):
        batch, _ = next(iter(CSRBatchIterator(CSRDataset(X), X.shape[0], sampling="sequential")))
        with _noiseless(), torch.no_grad():
            return float(module.negative_elbo(batch, module(batch)).mean())

    valid = [r["valid"] for r in results]
    together = loss(sp.vstack(valid).tocsr())
    assert recorded[0] == pytest.approx(together, rel=1e-5)
    apart = sum(loss(v) * v.shape[0] for v in valid) / sum(v.shape[0] for v in valid)
    assert abs(apart - together) > 1e-3 * abs(together)


def test_a_parameter_unused_on_one_rank_still_moves_together(core):
    """A parameter only rank 0's loss uses: no gradient on rank 1, the global one on
    both after the exchange, so the ranks hold the same, moved, value."""
    results = [r["unused_parameter"] for r in core]
    torch.testing.assert_close(results[0]["extra"], results[1]["extra"], rtol=0, atol=0)
    assert (results[0]["extra"] < 1).all()  # moved down the gradient of its square
    np.testing.assert_array_equal(results[0]["components"], results[1]["components"])


def test_mh_draws_keep_the_one_process_conditional(core):
    """A data-parallel state holds every rank's word-topic counts with this rank's own
    apart (the sweep's word proposal draws from the latter): MH cycles on those tables,
    started from exact draws of a token's conditional given all the ranks' tokens
    (computed from the gathered tokens, not from the tables), keep that law
    (chi-square, 30,000 replicas a token)."""
    for rank, found in enumerate(r["mh"] for r in core):
        assert found["wiring"] == {"own_apart": True, "total_is_sum": True}
        assert found["draws"]
        for observed, target in found["draws"]:
            n = observed.sum()
            stat = ((observed - n * target) ** 2 / (n * target)).sum()
            assert stat < chi2.ppf(0.9999, MH_K - 1), (rank, observed / n, target)


def test_one_ranks_problems_reach_every_rank(core):
    results = [r["neural_faults"] for r in core]
    for found in results:
        assert "rank 1" in found["tokens"] and "2 documents with tokens" in found["tokens"]
        assert "rank 1" in found["validation"] and "validation_fraction" in found["validation"]
        assert found["resumed"] == 6
    assert results[0]["tokens"] == results[1]["tokens"]
    # Ctrl-C on rank 1 stops both ranks after the same epoch, and both raise
    stopped = [found["interrupted_after"] for found in results]
    assert stopped[0] == stopped[1] < 6


def test_a_rank_that_dies_does_not_hang_the_others(tmp_path):
    context = mp.start_processes(gloo_rank, args=(2, str(tmp_path), _rank_dies), nprocs=2,
                                 start_method="spawn", join=False)
    deadline = time.monotonic() + 120
    while not context.join(timeout=5) and time.monotonic() < deadline:
        pass  # join returns as each process ends
    with open(tmp_path / "rank0.pkl", "rb") as f:
        result = pickle.load(f)
    assert result["error"] is not None and "another rank" in result["error"].lower()
    # seen at once from the closed connection, not at the 20 s timeout
    assert "timed out" not in result["error"].lower()
    assert result["seconds"] < 15


def test_a_model_on_another_gpu_than_nccls_is_refused():
    from sktopics.utils._distributed import nccl_device_problem

    cuda = torch.device("cuda", 1)
    problem = nccl_device_problem("nccl", cuda, current_index=0)
    assert "cuda:1" in problem and "set_device" in problem
    assert nccl_device_problem("nccl", cuda, current_index=1) is None
    assert nccl_device_problem("gloo", cuda, current_index=0) is None
    assert nccl_device_problem("nccl", torch.device("cpu"), current_index=0) is None


def test_data_parallel_needs_a_process_group():
    if dist.is_initialized():
        pytest.skip("a process group is already initialised here")
    with pytest.raises(RuntimeError, match="init_process_group"):
        with data_parallel():
            pass


def test_the_torchrun_example_runs(tmp_path):
    """The user guide's script, started as a user would, with two processes. Each
    rank's output is also kept in a file (``--tee``), so that a failure shows the
    failing rank's own traceback rather than only torchrun's summary."""
    script = os.path.join(os.path.dirname(__file__), "..", "examples", "distributed",
                          "train_torchrun.py")
    logs = tmp_path / "logs"
    done = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
         "--log-dir", str(logs), "--tee", "3", script, "--max-iter", "5",
         "--output", str(tmp_path / "m.pkl")],
        capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        ranks = [f"--- {path.relative_to(logs)}:\n{path.read_text()[-3000:]}"
                 for path in sorted(logs.rglob("*.log")) if path.stat().st_size]
        pytest.fail(f"torchrun exited with {done.returncode}\n" + "\n".join(ranks)
                    + f"\n--- torchrun:\n{done.stderr[-1500:]}")
    assert "rank 1: 778 documents" in done.stdout and "topic 19:" in done.stdout
    with open(tmp_path / "m.pkl", "rb") as f:
        model = pickle.load(f)
    assert model.n_train_documents_ == 1556 and model.doc_topic_.shape == (778, 20)
