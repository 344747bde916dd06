"""ProdLDA on a new user's raw text: the defaults against the paper's configuration.

The call the README suggests, on 4,000 raw 20 Newsgroups posts through
``CountVectorizer(stop_words="english", min_df=5, max_df=0.5)``, K = 20: held-out NPMI,
topic diversity, and how spread the held-out documents' topic proportions are (how
many distinct most-likely topics among the 2,000 held-out posts, and the median share
of a post's top topic; an encoder that ignores its input puts every post near the
prior, K = 20 giving shares about 0.05).

Prints a table (research/README.md says what it found).

Usage::

    python research/raw_posts_transform.py
    SKTOPICS_RESEARCH_TINY=1 python research/raw_posts_transform.py  # 300 / 200 posts, one epoch
"""

import sys
import warnings
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from _common import default_data_home  # noqa: E402
from _tiny import TINY  # noqa: E402  (research/, beside this script)
from neural_defaults import raw_posts  # noqa: E402

from sktopics import ProdLDA  # noqa: E402
from sktopics.metrics import npmi_coherence, topic_diversity  # noqa: E402


def main():
    warnings.simplefilter("ignore", UserWarning)
    torch.set_num_threads(1)
    X, X_test = raw_posts(default_data_home(), *((300, 200) if TINY else ()))
    epochs = {"max_iter": 1} if TINY else {}
    X_test = X_test[np.asarray(X_test.sum(1)).ravel() > 0]
    print(f"{X.shape[0]} training posts, {X.shape[1]} words; {X_test.shape[0]} held-out posts")
    print("| configuration | NPMI | TD@10 | distinct most-likely topics | median top share |")
    print("|---|---|---|---|---|")
    for name, model in [
        ("defaults", ProdLDA(n_components=20, random_state=0, device="cpu", n_jobs=1,
                             **epochs)),
        ('from_preset("avitm")', ProdLDA.from_preset("avitm", n_components=20, random_state=0,
                                                     device="cpu", n_jobs=1, **epochs)),
    ]:
        theta = model.fit(X).transform(X_test)
        print(f"| {name} | {npmi_coherence(model, X_test).mean:.3f} | "
              f"{topic_diversity(model, 10):.2f} | {np.unique(theta.argmax(1)).size} | "
              f"{np.median(theta.max(1)):.3f} |", flush=True)


if __name__ == "__main__":
    main()
