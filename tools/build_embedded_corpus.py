"""Build the BBC News corpus embedded in ``sktopics/datasets/data``.

This script is *not* part of the installed package; it documents, and lets anyone
reproduce, how ``sktopics/datasets/data/bbc_news.npz`` was made from the OCTIS
files in the shared data folder (see ``/work/shared/data/README.md``)::

    python tools/build_embedded_corpus.py [DATA_HOME] [--out sktopics/datasets/data]

``DATA_HOME`` defaults to ``$SKTOPICS_DATA`` and must contain ``octis_BBC_News/``
with ``corpus.tsv``, ``vocabulary.txt`` and ``metadata.json`` (originals from
``MIND-Lab/OCTIS`` @ 8f9a0ac5a12e3b72ecd77dcba4f181c77e4595f1,
``preprocessed_datasets/BBC_News/``).

What is stored (one ``np.savez_compressed`` file, no pickled objects):

* ``indptr`` (int32, n_docs + 1), ``indices`` (uint16), ``counts`` (uint8): the CSR
  document-term count matrix of all 2,225 documents in ``corpus.tsv`` order, columns in
  ``vocabulary.txt`` order, column indices sorted within each row;
* ``shape`` (int64, 2);
* ``target`` (uint8): label id, an index into ``target_names``;
* ``target_names`` (unicode): the label names of ``metadata.json["labels"]``;
* ``split`` (uint8): 0 = train, 1 = validation (OCTIS ``val``), 2 = test;
* ``feature_names`` (unicode): the vocabulary.

The build is deterministic: re-running it on the same inputs gives arrays that are
equal element for element (the zip container itself carries timestamps).
"""

import argparse
import hashlib
import json
import os
import sys
from pathlib import Path

import numpy as np

SPLIT_CODES = {"train": 0, "val": 1, "test": 2}
SOURCE_FILES = ("corpus.tsv", "vocabulary.txt", "metadata.json")


def _sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def build_arrays(folder):
    """Return the dict of arrays stored in ``bbc_news.npz``."""
    folder = Path(folder)
    vocab = (folder / "vocabulary.txt").read_text(encoding="utf-8").split()
    index = {w: i for i, w in enumerate(vocab)}
    if len(index) != len(vocab):
        raise ValueError("duplicate words in vocabulary.txt")
    meta = json.loads((folder / "metadata.json").read_text(encoding="utf-8"))
    target_names = list(meta["labels"])
    label_index = {name: i for i, name in enumerate(target_names)}

    indptr = [0]
    indices, counts, target, split = [], [], [], []
    with open(folder / "corpus.tsv", encoding="utf-8") as fh:
        for line in fh:
            text, part, label = line.rstrip("\n").split("\t")
            ids = np.fromiter((index[t] for t in text.split()), dtype=np.int64)
            cols, cnt = np.unique(ids, return_counts=True)
            indices.append(cols)
            counts.append(cnt)
            indptr.append(indptr[-1] + cols.size)
            target.append(label_index[label])
            split.append(SPLIT_CODES[part])

    indices = np.concatenate(indices)
    counts = np.concatenate(counts)
    if indices.max() > np.iinfo(np.uint16).max or counts.max() > np.iinfo(np.uint8).max:
        raise ValueError("corpus does not fit the uint16 / uint8 storage dtypes")
    return {
        "indptr": np.asarray(indptr, dtype=np.int32),
        "indices": indices.astype(np.uint16),
        "counts": counts.astype(np.uint8),
        "shape": np.array([len(target), len(vocab)], dtype=np.int64),
        "target": np.asarray(target, dtype=np.uint8),
        "target_names": np.array(target_names, dtype=str),
        "split": np.asarray(split, dtype=np.uint8),
        "feature_names": np.array(vocab, dtype=str),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data_home", nargs="?", default=os.environ.get("SKTOPICS_DATA"))
    parser.add_argument(
        "--out",
        default=str(Path(__file__).resolve().parents[1] / "sktopics" / "datasets" / "data"),
    )
    args = parser.parse_args(argv)
    if not args.data_home:
        parser.error("pass DATA_HOME or set SKTOPICS_DATA")
    folder = Path(args.data_home) / "octis_BBC_News"
    arrays = build_arrays(folder)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "bbc_news.npz"
    np.savez_compressed(target, **arrays)

    n_docs, n_words = arrays["shape"]
    split = arrays["split"]
    print(f"wrote {target} ({target.stat().st_size:,} bytes)")
    print(
        f"  {n_docs} docs x {n_words} words, nnz {arrays['indices'].size:,}, "
        f"tokens {int(arrays['counts'].sum(dtype=np.int64)):,}, "
        f"splits train/validation/test {np.bincount(split, minlength=3).tolist()}"
    )
    for name in SOURCE_FILES:
        print(f"  sha256 {name}: {_sha256(folder / name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
