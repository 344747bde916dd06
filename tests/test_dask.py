"""Grid search on a Dask cluster gives the results of one process.

``GridSearchCV(Pipeline(CountVectorizer, estimator), scoring={AIS, NPMI})`` under
``joblib.parallel_config(backend="dask")`` on a ``LocalCluster`` of two process
workers: the same ``cv_results_`` as ``n_jobs=1`` for a fixed ``random_state``.
"""

import joblib
import numpy as np
import pytest
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline

from sktopics import LDAGibbs, ProdLDA
from sktopics.datasets import load_bbc_news
from sktopics.model_selection import make_ais_scorer, make_coherence_scorer

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    # Two torch threads by default in each worker (Dask's nanny would set one), so that
    # the threads a task uses show what sktopics chose.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                       dashboard_address=None, env=dict.fromkeys(
                                           ("OMP_NUM_THREADS", "MKL_NUM_THREADS"), "2"))
    with cluster, distributed.Client(cluster) as client:
        assert set(client.run(torch.get_num_threads).values()) == {2}
        yield client


def _threads_during_fit(estimator, X, y=None):
    """A scorer reporting the torch threads the pipeline's model used while it fitted."""
    return float(estimator[-1].threads_during_fit_)


def _recording(estimator):
    """``estimator`` as an instance of a subclass recording its threads during fit."""

    class Recording(type(estimator)):
        def _fit(self, *args, **kwargs):
            self.threads_during_fit_ = torch.get_num_threads()
            return super()._fit(*args, **kwargs)

    Recording.__name__ = type(estimator).__name__
    return Recording(**estimator.get_params())


@pytest.mark.parametrize("estimator", [
    LDAGibbs(max_iter=20, device="cpu", random_state=0),
    ProdLDA(max_iter=3, batch_size=50, hidden_sizes=(16,), device="cpu", random_state=0),
], ids=["LDAGibbs", "ProdLDA"])
def test_grid_search_on_a_local_dask_cluster_matches_one_process(client, estimator):
    texts = load_bbc_news(subset="train").texts[:200]
    name = type(estimator).__name__.lower()
    pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+", min_df=2), _recording(estimator))
    kw = dict(param_grid={f"{name}__n_components": [2, 4]}, cv=2, refit="ais",
              scoring={"ais": make_ais_scorer(n_temperatures=10, n_chains=2),
                       "npmi": make_coherence_scorer(top_n=5),
                       "threads": _threads_during_fit})
    serial = GridSearchCV(pipe, n_jobs=1, **kw).fit(texts)
    with joblib.parallel_config(backend="dask"):
        remote = GridSearchCV(pipe, n_jobs=-1, **kw).fit(texts)
    for key in ("mean_test_ais", "mean_test_npmi", "split0_test_ais", "split1_test_ais"):
        np.testing.assert_allclose(remote.cv_results_[key], serial.cv_results_[key],
                                   rtol=0, atol=1e-9)
    assert remote.best_params_ == serial.best_params_
    # Each task ran on one torch thread (workers x threads does not oversubscribe), and
    # the threads that ran them are back at the workers' setting.
    for split in (0, 1):
        np.testing.assert_array_equal(remote.cv_results_[f"split{split}_test_threads"], 1.0)
    for worker in client.scheduler_info()["workers"]:
        task = client.submit(torch.get_num_threads, pure=False, workers=[worker])
        assert task.result() == 2
