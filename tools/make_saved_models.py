"""Write the small saved models that every later version of sktopics must still load.

For the current file format version ``N`` (:data:`sktopics.io.FORMAT_VERSION`) this
writes ``tests/data/saved_models/vN/``: one tiny fitted model per estimator (K of 2 to
5 topics, a vocabulary of 30 to 40 words, a few kB each), the LDAGibbs one inside a
Pipeline with a CountVectorizer, each as ``<name>.safetensors`` with
``<name>.json`` beside it: the class, the expected ``components_``, top words and the
``transform`` of a few stored documents. ``tests/test_persistence.py`` loads every
file of every version and compares (components exactly, ``transform`` to
``rtol=1e-5, atol=1e-7``: the float32 rounding of another BLAS or SIMD width; see
``test_saved_models_of_every_format_version_load`` for why).

Regenerate the current version's files (after a change of a sampler's state or of
what a model saves) with one command from the repository root::

    python tools/make_saved_models.py

which fits and writes every file and its expectations, removes the folder's files of
models no longer in :func:`models`, then loads each file back and checks it as the
test does (so that a file that does not load is never left behind).

The files of earlier versions are never rewritten: they are what old files look like.
When ``transform`` changes on purpose, their expected results are recomputed instead,
from the files as they are (after checking that their ``components_`` still load
exactly)::

    python tools/make_saved_models.py --update-expected

which updates the JSON of every version's files, the current one's included.
``--output DIR`` writes the current version's files elsewhere (to look before
replacing). When the format version goes up, the previous folder stays and a new one is
written; the migration from the previous version goes in
``sktopics/io/_migrations.py``.
"""

import argparse
import json
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

import sktopics
from sktopics import AVITM, PAMVI, LDAGibbs, MoLDA, ProdLDA
from sktopics.datasets import make_lda_corpus
from sktopics.io import FORMAT_VERSION

ROOT = Path(__file__).resolve().parents[1]
SAVED_MODELS = ROOT / "tests" / "data" / "saved_models"

#: Short texts with three themes, for the pipeline (stored in its JSON too).
TEXTS = [
    "apple banana cherry apple fruit sweet", "banana cherry banana fruit juice sweet",
    "dog cat mouse dog pet walk", "cat mouse cat pet food walk",
    "apple cherry banana juice fruit", "dog mouse cat pet food",
    "rain wind storm cloud cold", "sun cloud rain warm wind",
    "fruit juice apple sweet", "pet food dog cat walk", "storm cold wind rain cloud",
    "banana apple fruit sweet juice", "mouse cat dog pet", "warm sun cloud wind",
] * 3

_NEURAL = dict(max_iter=3, batch_size=8, hidden_sizes=(8,), device="cpu", random_state=0)


def models():
    """``{name: (model, training data, transform input)}`` of the saved models."""
    X, _, _ = make_lda_corpus(n_samples=40, n_features=30, n_components=3, random_state=0)
    X = sp.csr_matrix(X)
    new = X[:4]
    pipe = make_pipeline(
        CountVectorizer(),
        LDAGibbs(3, max_iter=20, burn_in=5, optimize_interval=5, transform_max_iter=20,
                 snapshot_interval=10, warm_start=True, device="cpu", random_state=0),
    )
    return {
        "lda_gibbs_pipeline": (pipe, TEXTS, TEXTS[:4] + ["apple dog rain", "unknown words"]),
        "avitm": (AVITM(3, **_NEURAL), X, new),
        "prodlda": (ProdLDA(3, **_NEURAL), X, new),
        "pamvi": (PAMVI(structure=(2, 3), **_NEURAL), X, new),
        "molda": (MoLDA(component_sizes=(2, 3), **_NEURAL), X, new),
    }


def write(folder):
    folder.mkdir(parents=True, exist_ok=True)
    planned = models()
    for stale in sorted(folder.glob("*.safetensors")) + sorted(folder.glob("*.json")):
        if stale.stem not in planned:
            stale.unlink()
            print(f"{stale}: removed (no longer a saved model)")
    for name, (model, data, new) in planned.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # tiny fits: convergence and empty-document warnings
            model.fit(data)
            doc_topic = model.transform(new)
        path = sktopics.save(model, folder / f"{name}.safetensors")
        estimator = model[-1] if hasattr(model, "steps") else model
        expected = {
            "class": type(model).__name__,
            "estimator": type(estimator).__name__,
            "format_version": FORMAT_VERSION,
            "sktopics_version": sktopics.__version__,
            "components": estimator.components_.tolist(),
            "top_words": sktopics.top_words(model, 5),
            "transform_input": new if isinstance(new, list) else new.toarray().tolist(),
            "transform": doc_topic.tolist(),
        }
        path.with_suffix(".json").write_text(_json(expected))
        print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: "
              f"{path.stat().st_size:,} bytes")


def check(folder):
    """Load every file of ``folder`` back and compare it with its expectations, as
    ``tests/test_persistence.py`` does."""
    for path in sorted(folder.glob("*.safetensors")):
        expected = json.loads(path.with_suffix(".json").read_text())
        model = sktopics.load(path, device="cpu")
        estimator = model[-1] if hasattr(model, "steps") else model
        data = expected["transform_input"]
        if not hasattr(model, "steps"):
            data = np.array(data, dtype=np.float64)
        if not np.array_equal(estimator.components_, np.array(expected["components"])):
            raise SystemExit(f"{path}: components_ do not load as saved.")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            np.testing.assert_allclose(model.transform(data), expected["transform"],
                                       rtol=1e-5, atol=1e-7, err_msg=str(path))
        print(f"{path.name}: loads and gives its expected results")


def _json(expected):
    lines = [f" {json.dumps(key)}: {json.dumps(value)}" for key, value in expected.items()]
    return "{\n" + ",\n".join(lines) + "\n}\n"


def update_expected(folder):
    """Recompute the expected ``transform`` and top words of every saved file."""
    for path in sorted(folder.glob("v*/*.safetensors")):
        expected_path = path.with_suffix(".json")
        expected = json.loads(expected_path.read_text())
        model = sktopics.load(path, device="cpu")
        estimator = model[-1] if hasattr(model, "steps") else model
        if not np.array_equal(estimator.components_, np.array(expected["components"])):
            raise SystemExit(f"{path}: components_ no longer load as saved; that is a loading "
                             "bug to fix, not an expectation to update.")
        data = expected["transform_input"]
        if not hasattr(model, "steps"):
            data = np.array(data, dtype=np.float64)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            expected["transform"] = model.transform(data).tolist()
        expected["top_words"] = sktopics.top_words(model, 5)
        expected_path.write_text(_json(expected))
        print(f"{expected_path.relative_to(ROOT)}: updated")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--output", type=Path, default=SAVED_MODELS / f"v{FORMAT_VERSION}",
                        help="folder to write (default: the current format version's folder "
                             "under tests/data/saved_models)")
    parser.add_argument("--update-expected", action="store_true",
                        help="only recompute the expected transform and top words of every "
                             "version's files")
    args = parser.parse_args()
    torch.set_num_threads(1)
    if args.update_expected:
        update_expected(SAVED_MODELS)
    else:
        write(args.output)
        check(args.output)


if __name__ == "__main__":
    main()
