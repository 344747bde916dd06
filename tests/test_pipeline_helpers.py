"""utils._pipeline: the model behind a Pipeline, its input and its vocabulary."""

import numpy as np
import pytest
from sklearn.decomposition import LatentDirichletAllocation
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from sktopics.utils._pipeline import final_estimator, split_pipeline, vocabulary_of

DOCS = ["red green blue", "green blue", "cat dog", "dog cat mouse"] * 3


@pytest.fixture(scope="module")
def pipe():
    return make_pipeline(CountVectorizer(), LatentDirichletAllocation(2, random_state=0)).fit(DOCS)


def test_final_estimator_is_the_last_step_or_the_object(pipe):
    assert final_estimator(pipe) is pipe[-1]
    assert final_estimator(pipe[-1]) is pipe[-1]
    array = np.ones((2, 3))
    assert final_estimator(array) is array


def test_split_pipeline_runs_the_leading_steps_once(pipe):
    model, X = split_pipeline(pipe, DOCS)
    assert model is pipe[-1]
    assert (X != pipe[0].transform(DOCS)).nnz == 0
    assert split_pipeline(pipe, None) == (pipe[-1], None)
    alone = make_pipeline(pipe[-1])
    assert split_pipeline(alone, "X") == (pipe[-1], "X")
    assert split_pipeline(pipe[-1], "X") == (pipe[-1], "X")


def test_vocabulary_of_reads_the_vectorizer_then_the_model(pipe):
    np.testing.assert_array_equal(vocabulary_of(pipe), pipe[0].get_feature_names_out())
    assert vocabulary_of(pipe[-1]) is None
    assert vocabulary_of(np.ones((2, 3))) is None
    # a step without feature names: the model's own, from a DataFrame
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(pipe[0].transform(DOCS).toarray(), columns=pipe[0].get_feature_names_out())
    unnamed = make_pipeline(FunctionTransformer(), LatentDirichletAllocation(2, random_state=0))
    unnamed.fit(frame)
    np.testing.assert_array_equal(vocabulary_of(unnamed), frame.columns)
    np.testing.assert_array_equal(vocabulary_of(make_pipeline(unnamed[-1])), frame.columns)
