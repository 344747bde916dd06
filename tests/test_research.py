"""Every study in research/ still runs at the current code.

Each runs as a user would run it, in a subprocess, at its tiny size
(``SKTOPICS_RESEARCH_TINY=1``: a slice of its corpus, one or two iterations), writing
to a temporary folder; importing a script would miss the private names it calls
inside its functions. The numbers of a tiny run mean nothing, except the parity of
the paper preset's training step with the plain loop, which holds at any size.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RESEARCH = Path(__file__).resolve().parents[1] / "research"

pytestmark = pytest.mark.skipif(not RESEARCH.is_dir(), reason="not a source checkout")


def run_study(script, out, data_home, *args):
    """Run ``research/<script>`` at its tiny size; return its standard output."""
    env = {**os.environ, "SKTOPICS_RESEARCH_TINY": "1", "SKTOPICS_RESEARCH_OUT": str(out),
           "SKTOPICS_DATA": data_home, "OMP_NUM_THREADS": "1"}
    results = RESEARCH / "results"
    before = sorted(p.name for p in results.iterdir())
    done = subprocess.run([sys.executable, str(RESEARCH / script), *args], cwd=RESEARCH.parent,
                          env=env, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    assert sorted(p.name for p in results.iterdir()) == before  # a tiny run writes elsewhere
    return done.stdout


def rows(path):
    return json.loads(path.read_text())["rows"]


def test_neural_defaults(tmp_path, data_home):
    run_study("neural_defaults.py", tmp_path, data_home, "--threads", "1")
    fits = rows(tmp_path / "neural_defaults.json")
    assert {r["candidate"] for r in fits} == {
        "avitm", "diverse", "light", "light_bg", "diverse_free_bits"}
    assert {r["K"] for r in fits} == {5}
    for name in ("neural_defaults.rst", "neural_defaults.png", "neural_defaults_ranks.json"):
        assert (tmp_path / name).stat().st_size > 0


def test_short_texts(tmp_path, data_home):
    run_study("short_texts.py", tmp_path, data_home)
    fits = rows(tmp_path / "short_texts.json")
    # every variant, the subclasses with their own training code included
    assert {"kl_warmup", "learned_prior", "decoder_bn_anneal", "token_batches",
            "free_bits", "LDAGibbs", "sklearn_lda"} <= {r["variant"] for r in fits}
    assert all(0 < r["largest_share"] <= 1 for r in fits)


def test_neural_training_length(tmp_path, data_home):
    run_study("neural_training_length.py", tmp_path, data_home)
    payload = json.loads((tmp_path / "neural_training_length.json").read_text())
    fits = payload["curves"]
    assert {r["model"] for r in fits} == {"ProdLDA", "AVITM"}
    assert {r["validation"] for r in fits} == {False, True}  # early stopping's replay
    for fit in fits:  # each fit scored at increasing step counts
        steps = [p["steps"] for p in fit["points"]]
        assert steps == sorted(steps) and len(set(steps)) == len(steps) > 1
    assert {b["model"] for b in payload["baselines"]} == {"LDAGibbs", "sklearn_lda"}
    assert {"old", "auto", "early_stop", "tokens"} <= {r["rule"] for r in payload["summary"]}
    for name in ("neural_training_length.rst", "neural_training_length.png"):
        assert (tmp_path / name).stat().st_size > 0


def test_pam_objective(tmp_path, data_home):
    pytest.importorskip("tomotopy")
    run_study("pam_objective.py", tmp_path, data_home)
    fits = rows(tmp_path / "pam_objective.json")
    assert len(fits) == 6  # tomotopy and five PAMVI fits
    assert all("paired_ais_vs_default" in r for r in fits[2:])


def test_gibbs_gpu_sweep_split_cpu_check(tmp_path, data_home):
    out = tmp_path / "split.json"
    run_study("gibbs_gpu_sweep_split.py", tmp_path, data_home, data_home, str(out))
    payload = json.loads(out.read_text())
    assert (payload["copies"], payload["repeats"]) == (1, 2)
    (row,) = payload["rows"]
    assert row["K"] == 50 and row["burn_in"] == 2
    for part in ("sweep", "recount", "tables", "uniforms"):
        assert 0 < row[part]["min_ms"] <= row[part]["median_ms"] <= row[part]["max_ms"]
    fits = row["fits"]
    assert len(fits["short_fit_s"]) == len(fits["long_fit_s"]) == 2


def test_the_sweep_timer_counts_a_floor_and_times_what_it_is_given(monkeypatch):
    import scipy.sparse as sp

    monkeypatch.syspath_prepend(str(RESEARCH.parent / "benchmarks"))
    from _sweep_timing import time_calls, traffic_floor_bytes

    # two documents: (3 tokens of word 0, 1 of word 2) and (2 of word 1); K = 4
    X = sp.csr_matrix([[3, 0, 1], [0, 2, 0]])
    floor, table = traffic_floor_bytes(X, 4)
    assert table == 4 * 2 * 4
    assert floor == 4 * (3 * 4 + 3 * 4 + 5 * 6)  # cells' doc rows, word rows, tokens
    calls = []
    times = time_calls(lambda: calls.append(1), "cpu", warm_up=3, per_block=4, repeats=2)
    assert len(calls) == 3 + 4 * 2 and len(times["all_ms"]) == 2
    assert times["min_ms"] <= times["median_ms"] <= times["max_ms"]


def test_prodlda_pictures(tmp_path, data_home):
    run_study("prodlda_pictures.py", tmp_path, data_home)
    for name in ("prodlda_pictures_map.png", "prodlda_pictures_words.png"):
        assert (tmp_path / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_avitm_duplicates(tmp_path, data_home):
    out = run_study("avitm_duplicates.py", tmp_path, data_home)
    assert "| bbc | 5 | counts |" in out and "| bbc | 5 | tf-idf |" in out


def test_raw_posts_transform(tmp_path, data_home):
    out = run_study("raw_posts_transform.py", tmp_path, data_home)
    assert "| defaults |" in out and '| from_preset("avitm") |' in out


def test_paper_preset_parity(tmp_path, data_home):
    run_study("paper_preset_bisect.py", tmp_path, data_home, "parity")
    models = rows(tmp_path / "paper_preset_parity.json")
    assert [m["model"] for m in models] == ["ProdLDA", "AVITM"]
    for m in models:  # the estimator's steps are the plain loop's, to float32 rounding
        assert m["steps"] > 0 and float(m["max_rel_diff_all"]) < 1e-4


def test_paper_preset_quality(tmp_path, data_home):
    run_study("paper_preset_bisect.py", tmp_path, data_home, "quality")
    fits = rows(tmp_path / "paper_preset_quality.json")
    assert {r["code"] for r in fits} == {"plain", "plain_glorot", "sktopics",
                                         "sktopics_torch_init", "sktopics_glorot_init"}
    assert {r["model"] for r in fits} == {"ProdLDA", "AVITM"}


def test_the_gpu_kit_children_import_this_checkout_from_anywhere(tmp_path, monkeypatch):
    """The kit's child processes (the suite, whose tests start processes of their own,
    and the benchmarks) find this checkout's package on PYTHONPATH, installed or not:
    ``-S`` leaves site-packages (and an editable install) out of the child."""
    monkeypatch.syspath_prepend(str(RESEARCH.parent / "benchmarks"))
    from gpu_check import child_environment

    find = [sys.executable, "-S", "-c",
            "import importlib.util; s = importlib.util.find_spec('sktopics'); print(s and s.origin)"]
    found = subprocess.run(find, cwd=tmp_path, env=child_environment(), capture_output=True,
                           text=True, check=True).stdout.strip()
    assert Path(found) == RESEARCH.parent / "sktopics" / "__init__.py"
    alone = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    assert subprocess.run(find, cwd=tmp_path, env=alone, capture_output=True,
                          text=True, check=True).stdout.strip() == "None"
