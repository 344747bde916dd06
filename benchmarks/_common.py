"""Helpers shared by the benchmark scripts: machine description and result files."""

import json
import os
import platform
import subprocess
import threading
from pathlib import Path

import numpy as np
import scipy.sparse as sp

RESULTS = Path(__file__).resolve().parent / "results"


def default_data_home():
    """The shared corpora: $SKTOPICS_DATA, else ../shared/data beside the checkout."""
    env = os.environ.get("SKTOPICS_DATA")
    if env:
        return env
    return str(Path(__file__).resolve().parents[2] / "shared" / "data")


def machine():
    """What the numbers were measured on."""
    import numpy
    import sklearn
    import torch

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {
        "cpu": cpu,
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "numpy": numpy.__version__,
        "scikit-learn": sklearn.__version__,
        "load_average_at_start": os.getloadavg(),
    }
    try:
        info["git_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
            cwd=Path(__file__).parent, check=False,
        ).stdout.strip()
    except OSError:
        pass
    return info


def write_results(name, payload, table_markdown):
    """Write ``results/<name>.json``, ``results/<name>.md`` and, for the docs, ``.rst``."""
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"{name}.json").write_text(json.dumps(payload, indent=2, default=str) + "\n")
    (RESULTS / f"{name}.md").write_text(table_markdown)
    (RESULTS / f"{name}.rst").write_text(markdown_to_rst(table_markdown))
    print(table_markdown)


def markdown_to_rst(text):
    """Turn a results page (heading lines, paragraphs and markdown tables, in any order)
    into reStructuredText: headings become bold paragraphs, tables list-tables, in
    place."""
    out, table = [], []

    def flush():
        if table:
            out.extend(["", ".. list-table::", "   :header-rows: 1", ""])
            for row in table:
                out.append("   * - " + (row[0] or ".."))
                out.extend("     - " + (cell or "..") for cell in row[1:])
            out.append("")
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            if not set(line) <= set("|-: "):
                table.append([cell.strip() for cell in line.strip("|").split("|")])
            continue
        flush()
        if line.startswith("#"):
            line = "**" + line.lstrip("#").strip() + "**"
        out.append(line)
    flush()
    return "\n".join(out).strip("\n") + "\n"


def markdown_table(rows, columns):
    """A markdown table of dict rows, with numbers formatted compactly."""

    def fmt(value):
        if isinstance(value, float):
            return f"{value:.3f}" if abs(value) < 100 else f"{value:.1f}"
        return "" if value is None else str(value)

    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(fmt(row.get(c)) for c in columns) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def doc_words(X):
    """Each document's tokens as column indices (its row of counts expanded)."""
    X = sp.csr_matrix(X)
    for d in range(X.shape[0]):
        start, stop = X.indptr[d], X.indptr[d + 1]
        yield np.repeat(X.indices[start:stop], X.data[start:stop].astype(np.int64))


def load_pam_corpus(name, data_home=None):
    """Train and test splits of ``20ng``, ``nips`` or ``bbc`` for the PAM scripts.

    Returns ``(train, test, X, X_test)``: the loaders' bunches, the training counts
    (float32 CSR, empty documents dropped) and the test counts (CSR).
    """
    from sktopics.datasets import load_20news_avitm, load_bbc_news, load_nips

    home = data_home or default_data_home()
    if name == "20ng":
        train, test = load_20news_avitm(home, subset="train"), load_20news_avitm(home, subset="test")
    elif name == "nips":
        train, test = load_nips(home, subset="train"), load_nips(home, subset="test")
    else:
        train, test = load_bbc_news(subset="train"), load_bbc_news(subset="test")
    X = train.data.tocsr().astype(np.float32)
    X = X[np.asarray(X.sum(1)).ravel() > 0]
    return train, test, X, test.data.tocsr()


class PeakRSS:
    """Peak resident memory (bytes) of this process while the context is open, sampled
    every ``interval`` seconds in a thread (and at both ends); ``baseline`` is the
    resident memory on entry."""

    def __init__(self, interval=0.05):
        self.interval = interval

    def __enter__(self):
        self.baseline = self.peak = self._rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self._rss())

    @property
    def rise_mb(self):
        """The peak above the baseline, in MB."""
        return (self.peak - self.baseline) / 2**20

    def _watch(self):
        while not self._stop.wait(self.interval):
            self.peak = max(self.peak, self._rss())

    @staticmethod
    def _rss():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

