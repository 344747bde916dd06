"""The model card: a short markdown description written into every model file, and
as ``README.md`` (with the Hugging Face Hub's front matter) by the hub helpers."""

import re

import numpy as np
from sklearn.pipeline import Pipeline

from .._topwords import top_words
from ..utils._pipeline import final_estimator

__all__ = ["hub_readme", "model_card"]

#: Words per topic in the card.
TOP_N = 10

#: Topics listed in the card (a model with more says how many are left out).
MAX_TOPICS = 50


def _escape(text):
    return text.replace("|", "\\|").replace("\n", " ")


#: A memory address in a repr (``<object at 0x7f...>``): differs between runs.
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def _value(value):
    """A parameter's value in the card, the same in every process that saves the model."""
    if isinstance(value, np.random.RandomState):
        text = "RandomState(MT19937)"
    elif isinstance(value, np.random.Generator):
        text = f"Generator({type(value.bit_generator).__name__})"
    else:
        text = _ADDRESS.sub("", repr(value))
    return _escape(text if len(text) <= 60 else text[:57] + "...")


def model_card(obj, versions, format_version):
    """The card of a topic model or of a Pipeline ending in one."""
    model = final_estimator(obj)
    name = type(model).__name__
    fitted = hasattr(model, "components_")
    lines = [f"# {name} topic model", ""]
    if type(obj) is Pipeline:
        chain = " -> ".join(type(step).__name__ for _, step in obj.steps)
        lines.append(f"A scikit-learn Pipeline ({chain}) made with sktopics: it takes raw "
                     "texts.")
        for name, step in obj.steps[:-1]:
            defaults = type(step)().get_params(deep=False)
            changed = {k: v for k, v in step.get_params(deep=False).items()
                       if _value(v) != _value(defaults.get(k))}
            settings = ", ".join(f"{k}={_value(v)}" for k, v in sorted(changed.items()))
            lines.append(f"Step `{name}`: {type(step).__name__}({settings}).")
    else:
        lines.append(f"A {name} made with sktopics: it takes document-term count matrices.")
    lines += ["", "## Use", "", "```python", "import sktopics", "",
              'model = sktopics.load("model.safetensors")  # or sktopics.from_pretrained(...)',
              "doc_topic = model.transform(documents)", "print(sktopics.top_words(model))",
              "```", "",
              "Loading runs no code from the file: it holds arrays and JSON only.", ""]
    if fitted:
        lines += _topics(obj, model) + _training(obj, model)
    else:
        lines += ["Not fitted: the file holds the model's parameters only.", ""]
    lines += ["## Parameters", "", "| parameter | value |", "|---|---|"]
    lines += [f"| {key} | {_value(value)} |"
              for key, value in sorted(model.get_params(deep=False).items())]
    lines += ["", "## Versions", "",
              ", ".join(f"{package} {version}" for package, version in versions.items())
              + f"; sktopics file format {format_version}.", ""]
    return "\n".join(lines)


def _topics(obj, model):
    words = top_words(obj, top_n=min(TOP_N, model.components_.shape[1]))
    lines = [f"## Topics (top {len(words[0])} words)", "", "| topic | top words |", "|---|---|"]
    lines += [f"| {k} | {_escape(', '.join(map(str, topic)))} |"
              for k, topic in enumerate(words[:MAX_TOPICS])]
    if len(words) > MAX_TOPICS:
        lines.append(f"| ... | {len(words) - MAX_TOPICS} more topics |")
    return lines + [""]


def _training(obj, model):
    lines = ["## Training data", ""]
    documents = getattr(model, "n_train_documents_", None)
    tokens = getattr(model, "n_train_tokens_", None)
    vocabulary = f"a vocabulary of {model.components_.shape[1]:,} words"
    if documents is not None and tokens is not None:
        lines.append(f"The last `fit` or `partial_fit` call saw {documents:,} documents and "
                     f"{tokens:,.0f} tokens, with {vocabulary}.")
    else:
        lines.append(f"{vocabulary[0].upper()}{vocabulary[1:]}.")
    return lines + [""]


def hub_readme(card, model_name):
    """``README.md`` of a Hugging Face Hub model repository: the card with the Hub's
    metadata (library, tags) as YAML front matter."""
    front = ["---", "library_name: sktopics", "tags:", "- topic-modeling", "- sktopics",
             f"- {model_name.lower()}", "---", ""]
    return "\n".join(front) + card
