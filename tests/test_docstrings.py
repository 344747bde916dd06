"""Docstrings are part of the API: their examples run, their sections are complete.

* Every ``Examples`` section of the package runs as a doctest, and so does the code of
  the front pages (the README's quick start, the documentation's index), with the
  estimators' iterations cut to keep it fast.
* Every public function and class (the ``__all__`` of the public modules) has a
  docstring whose ``Parameters`` section names every parameter of its signature
  (numpydoc's PR01), and functions say what they return (RT01).
"""

import dataclasses
import doctest
import importlib
import inspect
import pkgutil
import re
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import sktopics


def _examples(name):
    module = importlib.import_module(name)
    return [t for t in doctest.DocTestFinder(exclude_empty=True).find(module, name)
            if t.examples and t.name.startswith(name)]


MODULES = [m.name for m in pkgutil.walk_packages(sktopics.__path__, "sktopics.")
           if not m.name.endswith("__main__") and _examples(m.name)]
PUBLIC = ["sktopics", "sktopics.metrics", "sktopics.model_selection", "sktopics.datasets",
          "sktopics.pam", "sktopics.utils", "sktopics.inspection"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples_run(name):
    tests = _examples(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    threads = torch.get_num_threads()
    try:
        for test in tests:
            test.globs.setdefault("np", np)
            runner.run(test)
    finally:
        torch.set_num_threads(threads)
    assert runner.failures == 0, f"{runner.failures} failing example(s) in {name}"


def _public_objects():
    for module_name in PUBLIC:
        module = importlib.import_module(module_name)
        for attr in module.__all__:
            obj = getattr(module, attr)
            if inspect.isfunction(obj) or inspect.isclass(obj):
                yield f"{module_name}.{attr}", obj


def _section(doc, title):
    match = re.search(rf"^\s*{title}\n\s*-{{{len(title)}}}\n(.*?)(?=^\s*\w[\w ]*\n\s*-{{3,}}\n|\Z)",
                      doc, re.M | re.S)
    return None if match is None else match.group(1)


@pytest.mark.parametrize("name, obj", list(_public_objects()), ids=lambda x: x if isinstance(x, str) else "")
def test_public_docstrings_name_every_parameter(name, obj):
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    if inspect.isclass(obj) and issubclass(obj, (Warning, tuple)) or (
            inspect.isclass(obj) and getattr(obj, "_is_protocol", False)):
        return  # warnings, named tuples and protocols document attributes
    target = obj.__init__ if inspect.isclass(obj) else obj
    try:
        params = [p for p in inspect.signature(target).parameters.values()
                  if p.name not in ("self", "cls") and p.kind not in (p.VAR_POSITIONAL,)]
    except (TypeError, ValueError):
        return
    params = [p for p in params if not (inspect.isclass(obj) and p.kind is p.VAR_KEYWORD)]
    if not params:
        return
    # a dataclass's parameters are its fields, documented as Parameters or Attributes
    titles = ("Parameters", "Attributes") if dataclasses.is_dataclass(obj) else ("Parameters",)
    sections = [_section(doc, t) for t in titles]
    assert any(sections), f"{name}: no Parameters section"
    documented = set()
    for line in "\n".join(x for x in sections if x).splitlines():
        head = re.match(r"^(\*{0,2}[\w, *]+?)\s*(:|$)", line)
        if head and not line.startswith(" "):
            documented.update(n.strip().lstrip("*") for n in head.group(1).split(","))
    missing = [p.name for p in params if p.name not in documented]
    assert not missing, f"{name}: parameters not in its docstring: {missing}"
    if inspect.isfunction(obj):
        assert _section(doc, "Returns") is not None, f"{name}: no Returns section"


# --------------------------------------------------------------------------- front pages

ROOT = Path(__file__).resolve().parents[1]

#: The front pages whose code a new user copies first.
FRONT_PAGES = ["README.md", "docs/index.rst"]


def _python_blocks(path):
    """The Python code blocks of a markdown (```python) or reStructuredText
    (``.. code-block:: python``) file, dedented."""
    text = (ROOT / path).read_text()
    if path.endswith(".md"):
        return re.findall(r"^```python\n(.*?)^```", text, re.M | re.S)
    blocks = []
    for match in re.finditer(r"^\.\. code-block:: python\n\n((?:[ \t]+.*\n|\n)+)", text, re.M):
        blocks.append(textwrap.dedent(match.group(1)))
    return blocks


def _fast(code):
    """The code with every estimator trained for 2 iterations (the rest unchanged)."""
    fast, n = re.subn(r"\b(ProdLDA|AVITM|LDAGibbs|PAMVI|MoLDA)\(((?:[^()]|\([^()]*\))*)\)",
                      lambda m: m.group(0) if "max_iter" in m.group(2)
                      else f"{m.group(1)}({m.group(2)}, max_iter=2)", code)
    assert n, "no estimator to speed up: update _fast"
    return fast


@pytest.mark.parametrize("path", FRONT_PAGES)
def test_front_page_code_runs(path, capsys):
    blocks = _python_blocks(path)
    assert blocks, f"{path}: no Python block"
    namespace = {"__name__": "__front_page__"}
    exec(compile(_fast(blocks[0]), path, "exec"), namespace)  # noqa: S102 - the quick start
    printed = capsys.readouterr().out.splitlines()
    words, score = printed[-2], float(printed[-1])
    assert words.startswith("[[") and np.isfinite(score) and score < 0
    doc_topic = namespace["doc_topic"]
    assert doc_topic.shape == (len(namespace["test"].texts), 20)
    np.testing.assert_allclose(doc_topic.sum(axis=1), 1.0, rtol=1e-5)
    for block in blocks[1:]:  # what follows the quick start runs in its namespace
        exec(compile(block, path, "exec"), namespace)  # noqa: S102
