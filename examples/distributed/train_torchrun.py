"""
A torchrun script: one LDAGibbs model over several processes
============================================================

Train one LDAGibbs model over several processes, launched by ``torchrun``.

Each process (rank) reads its own share of the corpus; inside ``data_parallel()`` the
model is fitted over the union of the shares, and every rank ends with the same
topics. Run it on one machine with two processes::

    torchrun --standalone --nproc-per-node 2 examples/distributed/train_torchrun.py

or on two machines, one process each (``--node-rank 1`` on the second)::

    torchrun --nnodes 2 --nproc-per-node 1 --node-rank 0 \\
        --master-addr HOST0 --master-port 29500 examples/distributed/train_torchrun.py

Rank 0 prints the topics and writes the model to ``lda.pkl``; ``--output`` changes
the path, ``--n-components`` and ``--max-iter`` the model.
"""

import argparse
import pickle

import numpy as np
import torch
import torch.distributed as dist
from sklearn.feature_extraction.text import CountVectorizer
from torch.distributed.elastic.multiprocessing.errors import record

from sktopics import LDAGibbs, top_words
from sktopics.datasets import load_bbc_news
from sktopics.distributed import data_parallel


@record  # a failing rank's traceback goes into torchrun's summary, not only "exitcode 1"
def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--n-components", type=int, default=20)
    p.add_argument("--max-iter", type=int, default=200)
    p.add_argument("--output", default="lda.pkl")
    args = p.parse_args()

    # gloo runs on CPUs. With one GPU per process use "nccl" and device="cuda", and
    # first torch.cuda.set_device(int(os.environ["LOCAL_RANK"])) so that each process
    # uses its own GPU.
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(1)

    # One vocabulary for every rank: here each fits the same vectorizer on the whole
    # (small) corpus; for a large one, fit it once and share it, or hash the words.
    texts = load_bbc_news(subset="train").texts
    vectorizer = CountVectorizer(token_pattern=r"\S+", min_df=2).fit(texts)
    mine = np.array_split(np.arange(len(texts)), world)[rank]
    X_local = vectorizer.transform([texts[i] for i in mine])

    with data_parallel():
        model = LDAGibbs(n_components=args.n_components, max_iter=args.max_iter,
                         algorithm="parallel", device="cpu", random_state=0).fit(X_local)

    print(f"rank {rank}: {X_local.shape[0]} documents, doc_topic_ {model.doc_topic_.shape}, "
          f"corpus of {model.n_train_documents_} documents", flush=True)
    if rank == 0:
        for k, words in enumerate(top_words(model, top_n=8,
                                            feature_names=vectorizer.get_feature_names_out())):
            print(f"topic {k:2d}: {' '.join(words)}")
        with open(args.output, "wb") as f:
            pickle.dump(model, f)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
