"""ShardedCorpus: a corpus on disk streamed one shard at a time."""

import numpy as np
import pytest
import scipy.sparse as sp

from sktopics import LDAGibbs, ProdLDA
from sktopics.datasets import ShardedCorpus, make_lda_corpus

X, _, _ = make_lda_corpus(n_samples=80, n_features=30, n_components=3, random_state=0)


@pytest.fixture
def corpus(tmp_path):
    return ShardedCorpus.write((X[i:i + 20] for i in range(0, 80, 20)), str(tmp_path))


def test_shards_round_trip_and_load_one_at_a_time(corpus, monkeypatch, tmp_path):
    assert len(corpus) == 4 and corpus.n_features == 30
    np.testing.assert_array_equal(sp.vstack(list(corpus)).toarray(), X.toarray())
    assert ShardedCorpus(str(tmp_path / "shard-*.npz")).paths == corpus.paths  # a glob
    loads = []
    original = sp.load_npz
    monkeypatch.setattr(sp, "load_npz", lambda path: loads.append(path) or original(path))
    next(iter(corpus))
    assert len(loads) == 1  # lazily, one shard at a time
    with pytest.raises(ValueError, match="at least one shard"):
        ShardedCorpus([])
    sp.save_npz(str(tmp_path / "shard-99999.npz"), sp.csr_matrix((2, 7)))
    with pytest.raises(ValueError, match="columns"):
        list(ShardedCorpus(str(tmp_path / "shard-*.npz")))


def test_stream_training_transform_and_score(corpus):
    model = corpus.partial_fit(ProdLDA(n_components=3, batch_size=10, hidden_sizes=(8,),
                                       device="cpu", random_state=0), n_passes=2)
    assert model.n_iter_ == 8  # one epoch per shard and pass
    theta = np.vstack(list(corpus.transform(model)))
    np.testing.assert_allclose(theta, model.transform(X))
    gibbs = LDAGibbs(3, max_iter=20, device="cpu", random_state=0).fit(X)
    shards = [X[i:i + 20] for i in range(0, 80, 20)]
    tokens = np.array([s.sum() for s in shards])
    expected = np.dot([gibbs.score(s) for s in shards], tokens) / tokens.sum()
    assert corpus.score(gibbs) == pytest.approx(expected)
    # the same quantity with the same random numbers (keyed by each document's counts)
    assert corpus.score(gibbs) == pytest.approx(gibbs.score(X), rel=1e-9)
    online = corpus.partial_fit(LDAGibbs(3, device="cpu", random_state=0))
    assert online.n_iter_ == 4 and np.isfinite(corpus.score(online))
