"""
=============================
Saving and sharing a model
=============================

:func:`sktopics.save` writes a fitted model, here a Pipeline of a ``CountVectorizer``
and an LDAGibbs model, to one ``.safetensors`` file: the arrays and the vocabulary as
tensors, the parameters and a short model card as JSON. :func:`sktopics.load` reads
it back without running any code from the file, on any machine. To show that nothing
of this process is needed, the model is loaded here in a fresh Python process, which
prints its topics.
"""

# %%
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

import sktopics
from sktopics import LDAGibbs, top_words
from sktopics.datasets import load_bbc_news

train = load_bbc_news(subset="train")
pipe = make_pipeline(CountVectorizer(token_pattern=r"\S+", min_df=3),
                     LDAGibbs(n_components=8, max_iter=100, device="cpu", random_state=0))
pipe.fit(train.texts)

folder = Path(tempfile.mkdtemp())
path = sktopics.save(pipe, folder / "bbc_lda.safetensors")
print(f"{path.name}: {path.stat().st_size / 1e6:.1f} MB")

# %%
# The file
# --------
# Any safetensors reader lists the tensors and the metadata; the model card is one of
# the metadata entries (``sktopics.io.save_pretrained`` also writes it as
# ``README.md``, and :func:`sktopics.push_to_hub` uploads both to the Hugging Face Hub).
from safetensors import safe_open  # noqa: E402

with safe_open(str(path), framework="numpy") as handle:
    metadata = handle.metadata()
    print(sorted(metadata))
    print(len(list(handle.keys())), "tensors, e.g.", sorted(handle.keys())[:3])
print(metadata["model_card"].split("## Parameters")[0])

# %%
# Loading it in a fresh process
# -----------------------------
# Another Python process (another machine would do as well) loads the file and prints
# the topics' top words. ``device="cpu"`` is the default: a file may come from any
# machine, and every machine has a CPU.
child = """
import json, sys
import sktopics

model = sktopics.load(sys.argv[1], device="cpu")
print(json.dumps(sktopics.top_words(model, top_n=6)))
"""
result = subprocess.run([sys.executable, "-c", child, str(path)], capture_output=True,
                        text=True, check=True)
loaded_topics = json.loads(result.stdout)
for k, words in enumerate(loaded_topics):
    print(k, " ".join(words))

# %%
# The same topics as the model that was saved, word for word:
print(loaded_topics == top_words(pipe, top_n=6))
shutil.rmtree(folder)
