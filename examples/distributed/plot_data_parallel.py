"""
One LDAGibbs model over two processes
=====================================

:func:`sktopics.distributed.data_parallel` fits one model over the documents of
every process of a ``torch.distributed`` group: each process sweeps its own tokens,
and the word-topic counts are summed over the processes after every sweep. Every
token's random numbers are keyed by its place in the whole corpus, so with
``algorithm="parallel"`` two processes give the model that one process gives on the
concatenated corpus.

Here ``torchrun`` starts ``train_torchrun.py`` (beside this example) with two
processes on this machine, each with half of the BBC News training documents; the
same model is then fitted in this one process on all of them.
"""

import os
import pickle
import subprocess
import sys
import tempfile

import matplotlib.pyplot as plt
import numpy as np
from sklearn.feature_extraction.text import CountVectorizer

from sktopics import LDAGibbs
from sktopics.datasets import load_bbc_news

here = os.path.dirname(os.path.abspath(__file__)) if "__file__" in globals() else "."
script = os.path.join(here, "train_torchrun.py")
output = os.path.join(tempfile.mkdtemp(), "lda.pkl")
subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", "2",
                script, "--max-iter", "100", "--output", output],
               check=True, capture_output=True)
with open(output, "rb") as f:
    two = pickle.load(f)

texts = load_bbc_news(subset="train").texts
X = CountVectorizer(token_pattern=r"\S+", min_df=2).fit_transform(texts)
one = LDAGibbs(n_components=20, max_iter=100, algorithm="parallel", device="cpu",
               random_state=0).fit(X)
print(f"largest difference between the topics: "
      f"{np.abs(two.components_ - one.components_).max():.1e}")

fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.6))
left.plot(one.log_likelihood_sweeps_, one.log_likelihood_trace_ / one.n_train_tokens_,
          lw=4, alpha=0.4, label="one process")
left.plot(two.log_likelihood_sweeps_, two.log_likelihood_trace_ / two.n_train_tokens_,
          "k.", label="two processes")
left.set(xlabel="sweep", ylabel="log p(w, z) per token", title="Training")
left.legend()
right.loglog(one.components_.ravel(), two.components_.ravel(), ".", ms=2)
right.set(xlabel="topic-word probability, one process",
          ylabel="two processes", title="The same topics")
fig.tight_layout()
plt.show()
