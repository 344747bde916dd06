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


@pytest.mark.parametrize("given, key", [
    ("LDAGibbs", "lda-gibbs"), ("ldagibbs", "lda-gibbs"), (" ProdLDA ", "prodlda"),
    ("Lda-Gibbs", "lda-gibbs"), ("molda", "molda"), ("gibbs", "gibbs"),
])
def test_model_key_accepts_class_names_in_any_case(given, key):
    assert model_key(given) == key
