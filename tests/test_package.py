"""Package-level promises: layering, public names, top_words."""

import ast
import importlib
import importlib.util
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from sklearn.feature_extraction.text import CountVectorizer
from sklearn.pipeline import make_pipeline

import sktopics
from sktopics import top_words

from ._instances import TEST_DEVICE

PACKAGE = Path(sktopics.__file__).resolve().parent

#: Maths modules: torch, numpy and scipy only.
MATHS_MODULES = [
    "_generative.py",
    "_neural/_modules.py",
    "_neural/_losses.py",
    "_neural/_pam_modules.py",
    "_generative_pam.py",
    "pam.py",
    "_random.py",
]


def _imported_modules(path):
    tree = ast.parse(path.read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            names.add(("." * node.level) + (node.module or ""))
    return names


@pytest.mark.parametrize("module", MATHS_MODULES + [
    str(p.relative_to(PACKAGE)) for p in PACKAGE.glob("_gibbs/_sweeps*.py")
])
def test_maths_modules_import_neither_sklearn_nor_skorch(module):
    imported = _imported_modules(PACKAGE / module)
    assert not any(name.split(".")[0] in {"sklearn", "skorch"} for name in imported), imported


def test_model_selection_never_imports_estimator_modules():
    folder = PACKAGE / "model_selection"
    if not folder.is_dir():
        pytest.skip("model_selection not present")
    for path in folder.glob("*.py"):
        imported = _imported_modules(path)
        assert not any("_gibbs" in name or "_neural" in name for name in imported), (path, imported)


def _module_name(path):
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph():
    """{module: modules of the package it imports, anywhere in its code}."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base + ([node.module] if node.module else []))
                targets = [f"{base}.{a.name}" for a in node.names]
                edges.update(t if t in modules else base for t in targets)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                absolute = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                edges.update(m for m in absolute if m in modules)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def test_no_import_cycles_inside_the_package():
    # arrows point one way: no module imports, even lazily, one that imports it back
    graph = _import_graph()
    state, stack, cycles = {}, [], []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append(stack[stack.index(nxt):] + [nxt])
            elif nxt not in state:
                visit(nxt)
        stack.pop()
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node)
    assert not cycles, cycles


def test_the_cycle_check_sees_a_cycle(tmp_path, monkeypatch):
    # the check above has power: a package whose two modules import each other fails it
    package = tmp_path / "fake"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from .b import x\n")
    (package / "b.py").write_text("def f():\n    from .a import y\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", package)
    graph = _import_graph()
    assert graph["fake.a"] == {"fake.b"} and graph["fake.b"] == {"fake.a"}
    with pytest.raises(AssertionError):
        test_no_import_cycles_inside_the_package()


def test_evaluation_engines_import_neither_model_selection_nor_estimators():
    graph = _import_graph()
    for name, edges in graph.items():
        if name.startswith("sktopics._evaluation"):
            assert not any(e.startswith(("sktopics.model_selection", "sktopics._gibbs",
                                         "sktopics._neural", "sktopics._base")) for e in edges), (
                name, edges)


def test_utils_import_only_utils_and_leaf_modules():
    # utils is the bottom layer: the estimators, the evaluation engines, model_selection,
    # metrics and inspection all import it (e.g. utils._pipeline to unwrap a Pipeline)
    graph = _import_graph()
    for name, edges in graph.items():
        if name.startswith("sktopics.utils"):
            outside = {e for e in edges if not e.startswith("sktopics.utils")}
            assert not any(graph[e] for e in outside), (name, outside)


#: Public subpackages: the rest of the package imports them by their public names only.
PUBLIC_SUBPACKAGES = ("sktopics.model_selection", "sktopics.inspection", "sktopics.metrics",
                      "sktopics.datasets")


def _private_imports(graph):
    """``(importer, module)`` pairs where a module reaches into another subpackage's
    private modules."""
    return sorted((name, edge) for name, edges in graph.items() for edge in edges
                  for package in PUBLIC_SUBPACKAGES
                  if edge.startswith(package + ".") and not (
                      name == package or name.startswith(package + ".")))


def test_public_subpackages_are_imported_by_their_public_names():
    # what two subpackages share lives below both (e.g. utils._cv_results, read by
    # model_selection's ranking and inspection's CriteriaDisplay)
    assert _private_imports(_import_graph()) == []
    reaching_in = {"sktopics.inspection._selection": {"sktopics.model_selection._scorers"},
                   "sktopics.model_selection._ranking": {"sktopics.model_selection._results"}}
    assert _private_imports(reaching_in) == [("sktopics.inspection._selection",
                                              "sktopics.model_selection._scorers")]


def test_private_sklearn_names_only_in_compat_layer():
    offenders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "_sklearn_compat.py":
            continue
        text = path.read_text()
        if "sklearn.utils._" in text or "from sklearn.base import _" in text:
            offenders.append(str(path.relative_to(PACKAGE)))
    assert not offenders


def test_public_names_and_lazy_submodules():
    for name in sktopics.__all__:
        assert getattr(sktopics, name) is not None
    assert importlib.import_module("sktopics.metrics") is sktopics.metrics
    with pytest.raises(AttributeError):
        sktopics.not_a_module  # noqa: B018


def test_top_words_from_array_pipeline_and_names():
    topic_word = np.array([[0.1, 0.5, 0.4], [0.6, 0.2, 0.2]])
    assert top_words(topic_word, 2) == [[1, 2], [0, 1]]  # ties go to the lower index
    assert top_words(topic_word, 1, feature_names=["a", "b", "c"]) == [["b"], ["a"]]
    with pytest.raises(ValueError, match="feature_names"):
        top_words(topic_word, 1, feature_names=["a"])
    with pytest.raises(ValueError, match="top_n"):
        top_words(topic_word, 0)
    words, weights = top_words(3 * topic_word, 2, return_weights=True)  # normalised
    assert words == [[1, 2], [0, 1]]
    np.testing.assert_allclose(weights, [[0.5, 0.4], [0.6, 0.2]])

    docs = ["red green blue", "green blue", "cat dog", "dog cat mouse"] * 5
    pipe = make_pipeline(
        CountVectorizer(),
        sktopics.ProdLDA(n_components=2, max_iter=2, batch_size=5, hidden_sizes=(4, 4),
                         device=TEST_DEVICE, random_state=0),
    ).fit(docs)
    words = top_words(pipe, 3)
    assert {w for topic in words for w in topic} <= {"red", "green", "blue", "cat", "dog", "mouse"}


# --------------------------------------------------------------------------- the house

ROOT = PACKAGE.parent

#: Text files of the project (the repository without its build outputs).
_TEXT = (".py", ".md", ".rst", ".inc", ".toml", ".txt", ".cfg")
_NOT_SOURCE = {"build", "dist", "_build", "auto_examples", "generated", "data"}


def _project_files():
    for path in sorted(ROOT.rglob("*")):
        parts = path.relative_to(ROOT).parts
        if (path.suffix in _TEXT and path.is_file() and not set(parts) & _NOT_SOURCE
                and not any(p.startswith(".") or p.endswith(".egg-info") for p in parts)):
            yield path


def test_extras_cover_what_the_tests_and_the_gpu_need():
    tomllib = pytest.importorskip("tomllib")
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.exists():
        pytest.skip("not a source checkout")
    extras = tomllib.loads(pyproject.read_text())["project"]["optional-dependencies"]
    assert set(extras["report"]) <= set(extras["test"])  # the report tests run in CI
    assert {"pandas", "pyLDAvis"} == {r.split(">")[0].split("=")[0] for r in extras["report"]}
    triton = [r for r in extras["gpu"] if r.startswith("triton")]
    assert triton and set(triton) <= set(extras["test"])  # one marker for both


def test_the_project_speaks_of_itself_not_of_its_issue_tracker():
    # A reader has no issue tracker: say what changed and why, not which issue asked.
    pattern = re.compile(r"\b[Ii]ssues? ?#?\d+\b|(?<![\w&#])#\d{1,3}\b(?![\w-])")
    offenders = set()
    for path in _project_files():
        text = path.read_text(errors="replace")
        if path.suffix == ".py":  # comments and strings both count; colours do not
            text = re.sub(r"#[0-9a-fA-F]{6}\b", "", text)
        if pattern.search(text):
            offenders.add(str(path.relative_to(ROOT)))
    assert not offenders, sorted(offenders)


def test_every_cited_result_file_exists():
    # The docs, the READMEs and the package's docstrings quote result files by path; each
    # must be there (scripts name the files they will write, and git's history is cited
    # as ``git show COMMIT:PATH``: neither counts).
    cited = re.compile(r"((?:\.\./)*(?:benchmarks|research)/results/[\w.*-]+\.(?:md|rst|json|png|txt))")
    missing = set()
    for path in _project_files():
        where = path.relative_to(ROOT).parts
        if where[0] in ("benchmarks", "research", "tests", "tools") and path.suffix == ".py":
            continue
        text = re.sub(r"git show [0-9a-f]+:\S+", "", path.read_text(errors="replace"))
        for match in cited.finditer(text):
            ref = match.group(1)
            target = (path.parent / ref) if ref.startswith("..") else ROOT / ref
            if not list(target.parent.glob(target.name)):
                missing.add((str(path.relative_to(ROOT)), ref))
    assert not missing, sorted(missing)


@pytest.mark.parametrize("module", ["sktopics", "sktopics.model_selection", "sktopics.metrics",
                                    "sktopics.inspection", "sktopics.datasets",
                                    "sktopics.distributed", "sktopics.utils", "sktopics.pam"])
def test_every_public_name_is_in_the_api_reference(module):
    listed = set(re.findall(r"^   (\w+)$", (PACKAGE.parent / "docs" / "api.rst").read_text(),
                            flags=re.M))
    public = importlib.import_module(module).__all__
    missing = sorted(name for name in public if name not in listed and not name.startswith("__")
                     and not importlib.util.find_spec(f"{module}.{name}"))
    assert not missing, f"{module}: {missing} not in docs/api.rst"
