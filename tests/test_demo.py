"""The ``sktopics demo`` command, run as a user runs it: a separate process."""

import re
import subprocess
import sys

import pytest

from sktopics._demo import MODELS, model_key

from ._instances import TEST_DEVICE

_NUMBER = r"(-?\d+(?:\.\d+)?)"


def _demo(*args):
    return subprocess.run([sys.executable, "-m", "sktopics", "demo", *args],
                          capture_output=True, text=True, check=False, timeout=120)


# The class names and the demo's names both reach every model.
@pytest.mark.parametrize("given, class_name", [
    ("lda-gibbs", "LDAGibbs"), ("AVITM", "AVITM"), ("prodlda", "ProdLDA"),
    ("pamvi", "PAMVI"), ("MoLDA", "MoLDA"),
])
def test_demo_reports_every_promised_part(given, class_name):
    n_topics, n_words = 3, 4
    result = _demo("--model", given, "--n-components", str(n_topics), "--max-iter", "2",
                   "--top-words", str(n_words), "--device", TEST_DEVICE)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    title, call = text.splitlines()[:2]
    assert title.startswith(f"sktopics demo: {class_name}, ")
    assert call.startswith(f"{class_name}(") and "max_iter=2" in call
    assert call.endswith(f"): {n_topics} topics, 2 {'sweeps' if given == 'lda-gibbs' else 'epochs'}")

    topics = re.findall(r"^topic +(\d+)[^:]*: (.+)$", text, flags=re.MULTILINE)
    assert [int(k) for k, _ in topics] == list(range(n_topics))
    assert all(len(words.split()) == n_words for _, words in topics)

    seconds = float(re.search(rf"^fit time: {_NUMBER} s", text, re.MULTILINE).group(1))
    score = float(re.search(rf"^held-out log-likelihood per token: {_NUMBER} nats", text,
                            re.MULTILINE).group(1))
    npmi = float(re.search(rf"^held-out NPMI: {_NUMBER} ", text, re.MULTILINE).group(1))
    assert seconds >= 0
    # Below log(1 / vocabulary size) would be worse than uniform guessing by far,
    # above 0 impossible for a probability.
    assert -20 < score < 0
    assert -1 <= npmi <= 1


def test_plain_demo_fits_the_quick_starts_model():
    # No --model: the quick start's LDAGibbs, at tiny size here.
    result = _demo("--n-components", "2", "--max-iter", "2", "--top-words", "3",
                   "--device", TEST_DEVICE)
    assert result.returncode == 0, result.stderr
    title, call = result.stdout.splitlines()[:2]
    assert title.startswith("sktopics demo: LDAGibbs, ")
    assert call.startswith("LDAGibbs(n_components=2, max_iter=2")
    assert call.endswith("): 2 topics, 2 sweeps")


@pytest.mark.parametrize("given", ["nope", "lda"])
def test_unknown_model_is_an_argparse_error(given):
    result = _demo("--model", given)
    assert result.returncode == 2
    assert result.stdout == ""
    assert f"argument --model: invalid choice: '{given}'" in result.stderr
    assert all(key in result.stderr for key in MODELS)


def test_molda_needs_two_topics():
    result = _demo("--model", "molda", "--n-components", "1")
    assert result.returncode == 2
    assert "--n-components: must be at least 2 for molda" in result.stderr


def test_help_names_the_models_and_options():
    result = _demo("--help")
    assert result.returncode == 0
    for word in ("--model", "--n-components", "--max-iter", "--random-state", *MODELS,
                 *(name for name, _ in MODELS.values())):
        assert word in result.stdout


@pytest.mark.parametrize("args", [["--help"], ["demo", "--help"]])
def test_help_is_plain_text(args):
    result = subprocess.run([sys.executable, "-m", "sktopics", *args], capture_output=True,
                            text=True, check=False, timeout=120)
    assert result.returncode == 0 and "usage: sktopics" in result.stdout
    # no reStructuredText reaches a terminal: literals, roles, emphasis
    assert not re.search(r"``|:(class|func|meth|ref):|\*\*", result.stdout), result.stdout


def test_demo_npmi_is_what_the_default_npmi_coherence_gives():
    import io

    from sktopics._demo import run_demo
    from sktopics.datasets import load_bbc_news
    from sktopics.metrics import npmi_coherence

    out = io.StringIO()
    report = run_demo("lda-gibbs", n_components=20, max_iter=5, device=TEST_DEVICE, top_n=3,
                      out=out)
    test = load_bbc_news(subset="test")
    # the call the report names, at the metric's defaults
    again = npmi_coherence(report["pipeline"], test.texts, top_n=10).mean
    assert report["npmi"] == again
    printed = float(re.search(rf"^held-out NPMI: {_NUMBER} ", out.getvalue(),
                              re.MULTILINE).group(1))
    assert printed == pytest.approx(again, abs=5e-4)
    assert ("npmi_coherence(pipeline, load_bbc_news(subset='test').texts, top_n=10).mean"
            in out.getvalue())
    # the other convention gives another number here (with 20 topics of 10 words some
    # pairs never meet in the 335 test articles), so the test tells them apart
    zero = npmi_coherence(report["pipeline"], test.texts, top_n=10,
                          zero_cooccurrence="zero").mean
    assert abs(zero - again) > 1e-3


@pytest.mark.parametrize("given, key", [
    ("LDAGibbs", "lda-gibbs"), ("ldagibbs", "lda-gibbs"), (" ProdLDA ", "prodlda"),
    ("Lda-Gibbs", "lda-gibbs"), ("molda", "molda"), ("gibbs", "gibbs"),
])
def test_model_key_accepts_class_names_in_any_case(given, key):
    assert model_key(given) == key
