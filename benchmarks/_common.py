"""Helpers shared by the benchmark scripts: machine description and result files.

A benchmark's result is two files: ``<name>.json``, everything measured with the
machine, the versions and the commit, and ``<name>.rst``, the page the docs include.
The page is always drawn from the JSON alone (:func:`write_results`), so that
``--report-only`` redraws it from a stored result without measuring anything.
"""

import json
import os
import platform
import re
import subprocess
import threading
import time
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

    cpu = machine_cpu()
    info = {
        "cpu": cpu["cpu"],
        "cpu_count": os.cpu_count(),
        "simd": cpu["simd"],
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
        # Whether the package's tracked files differ from that commit.
        info["package_modified"] = bool(subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no", "--", "../sktopics"],
            capture_output=True, text=True, cwd=Path(__file__).parent, check=False,
        ).stdout.strip())
    except OSError:
        pass
    return info


def write_results(name, payload, report, directory=None):
    """Write ``<name>.json`` (``payload``) to ``directory`` (default ``RESULTS``; a
    trial run passes another folder), then its page ``<name>.rst``: drawn from that
    file by ``report`` (see :func:`write_report`), or ``report`` itself when it is the
    page's text (a study whose page is not drawn from its JSON). Returns the JSON's
    path."""
    directory = RESULTS if directory is None else Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2, default=_jsonable) + "\n")
    write_report(path, report if callable(report) else lambda _: report)
    return path


def _jsonable(value):
    """numpy scalars and arrays as numbers and lists; anything else as its string."""
    return value.tolist() if hasattr(value, "tolist") else str(value)


def write_report(path, report, page=None):
    """Draw a results page from the JSON file ``path`` alone and write it beside it.

    ``report(payload)`` returns the page in light markdown (``#`` headings, paragraphs,
    pipe tables; see :func:`markdown_to_rst`); it is written as ``<page>.rst``
    (default: the JSON's name) and printed.
    """
    path = Path(path)
    text = report(json.loads(path.read_text()))
    (path.parent / f"{page or path.stem}.rst").write_text(markdown_to_rst(text))
    print(text)


def add_result_arguments(parser, name):
    """The options every script shares: ``--output-name`` (default ``name``; ``None``:
    the script names its results), ``--output-dir`` and ``--report-only``."""
    parser.add_argument("--output-name", default=name,
                        help="name of the results files, without suffix" + (
                            f" (default {name})" if name else ""))
    parser.add_argument("--output-dir", type=Path, default=RESULTS,
                        help="folder of the results (default benchmarks/results; a trial run "
                             "should write elsewhere)")
    parser.add_argument("--report-only", action="store_true",
                        help="only redraw the .rst page from the existing .json; measure "
                             "nothing")


def report_only(paths, report):
    """``--report-only``: redraw the page of every existing JSON in ``paths``."""
    found = [Path(p) for p in paths if Path(p).exists()]
    if not found:
        raise SystemExit("no results file to draw a page from: " + ", ".join(map(str, paths)))
    for path in found:
        write_report(path, report)


def commit_text(info):
    """The commit a run measured, from :func:`machine`'s record of it."""
    commit = info.get("git_commit") or info.get("commit") or "unknown"
    if info.get("package_modified"):
        commit += " with uncommitted changes to the package"
    return commit


def load_sentence(summary):
    """A stored :meth:`MachineLoad.summary` in words, for a results page."""

    def fmt(triple):
        return ", ".join(f"{v:.2f}" for v in triple)

    interval = summary.get("interval", 5.0)
    quiet_cores = summary.get("quiet_cores", 0.1)
    text = (f"Load average (1, 5, 15 min): {fmt(summary['load_average_start'])} at the start, "
            f"{fmt(summary['load_average_end'])} at the end, 1-minute peak "
            f"{summary['load_1min_max_sampled']:.2f} (sampled every {interval:g} s)")
    if summary.get("other_processes_cores") is not None:
        text += (f"; other processes kept {summary['other_processes_cores']:.2f} of "
                 f"{summary['cpu_count']} cores busy on average, "
                 f"{summary['steal_cores']:.2f} stolen by the hypervisor")
    return text + (f". Machine: **{summary['verdict']}** during this run (quiet: other "
                   f"processes under {quiet_cores:g} core on average and a 1-minute load "
                   "average under 0.5 at the start).")


def _cpu_jiffies():
    """``(busy, steal)`` clock ticks of the whole machine since boot (``/proc/stat``)."""
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal [guest guest_nice: inside user]
    busy = fields[0] + fields[1] + fields[2] + fields[5] + fields[6]
    return busy, (fields[7] if len(fields) > 7 else 0)


class _Sampling:
    """A thread that calls ``_sample()`` every ``interval`` seconds between
    ``_start_sampling()`` and ``_stop_sampling()``."""

    def _start_sampling(self):
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _stop_sampling(self):
        self._stop.set()
        self._thread.join()

    def _watch(self):
        while not self._stop.wait(self.interval):
            self._sample()


class MachineLoad(_Sampling):
    """What else ran on the machine while a benchmark did.

    Records the load averages at the start and the end, samples the 1-minute load
    average every ``interval`` seconds, and, from ``/proc/stat`` and this process's own
    CPU time, the cores that **other** processes kept busy on average (and the time the
    hypervisor stole, on a VM). ``summary()`` returns a dict for the JSON; ``verdict``
    is ``"quiet"`` when other processes averaged under ``quiet_cores`` cores and the
    1-minute load average at the start was under 0.5, else ``"shared"``;
    :func:`load_sentence` says the summary in words for the results page.
    """

    def __init__(self, interval=5.0, quiet_cores=0.1):
        self.interval, self.quiet_cores = interval, quiet_cores

    def __enter__(self):
        self.start = os.getloadavg()
        self.uptime_start = _uptime()
        self.samples = [self.start[0]]
        self._jiffies, self._own = _cpu_jiffies(), _own_cpu_seconds()
        self._tic = time.monotonic()
        self._start_sampling()
        return self

    def __exit__(self, *exc):
        self._stop_sampling()
        self.wall = time.monotonic() - self._tic
        self.end = os.getloadavg()
        self.uptime_end = _uptime()
        self.samples.append(self.end[0])
        jiffies, own = _cpu_jiffies(), _own_cpu_seconds()
        self.other_cores = self.steal_cores = None
        if jiffies and self._jiffies and self.wall > 0:
            hz = os.sysconf("SC_CLK_TCK")
            busy = (jiffies[0] - self._jiffies[0]) / hz
            self.other_cores = max(0.0, busy - (own - self._own)) / self.wall
            self.steal_cores = (jiffies[1] - self._jiffies[1]) / hz / self.wall

    def _sample(self):
        self.samples.append(os.getloadavg()[0])

    @property
    def verdict(self):
        if self.other_cores is None:
            return "unknown"
        quiet = self.other_cores < self.quiet_cores and self.start[0] < 0.5
        return "quiet" if quiet else "shared"

    def summary(self):
        return {"load_average_start": self.start, "load_average_end": self.end,
                "load_1min_max_sampled": max(self.samples), "uptime_start": self.uptime_start,
                "uptime_end": self.uptime_end, "wall_seconds": self.wall,
                "other_processes_cores": self.other_cores, "steal_cores": self.steal_cores,
                "cpu_count": os.cpu_count(), "verdict": self.verdict,
                "interval": self.interval, "quiet_cores": self.quiet_cores}


def _own_cpu_seconds():
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _uptime():
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return None


def machine_cpu():
    """The CPU's model name, its core count and its widest SIMD (from /proc/cpuinfo)."""
    cpu, flags, named = platform.processor() or platform.machine(), set(), False
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not named:
                cpu, named = line.split(":", 1)[1].strip(), True
            if line.startswith("flags") and not flags:
                flags = set(line.split(":", 1)[1].split())
    except OSError:
        pass
    simd = ("AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags
            else "no AVX2" if flags else "SIMD unknown")
    return {"cpu": cpu, "cpu_count": os.cpu_count(), "simd": simd}


def markdown_to_rst(text):
    """Turn a results page (heading lines, paragraphs and markdown tables, in any order)
    into reStructuredText: headings become bold paragraphs, tables list-tables, in
    place; inline code in single backticks becomes an rst literal, and what rst
    would read as markup (a lone asterisk, a bar, a word ending in an underscore) is
    escaped. Lines already in rst (indented, or directives) pass unchanged."""
    out, table = [], []

    def flush():
        if table:
            out.extend(["", ".. list-table::", "   :header-rows: 1", ""])
            for row in table:
                out.append("   * - " + (_rst_inline(row[0]) or ".."))
                out.extend("     - " + (_rst_inline(cell) or "..") for cell in row[1:])
            out.append("")
            table.clear()

    for line in text.splitlines():
        if line.startswith("|"):
            if not set(line) <= set("|-: "):
                table.append([cell.strip() for cell in line.strip("|").split("|")])
            continue
        flush()
        if line.startswith("#"):
            line = "**" + _rst_inline(line.lstrip("#").strip()) + "**"
        elif not line.startswith((" ", "..")):
            line = _rst_inline(line)
        out.append(line)
    flush()
    return "\n".join(out).strip("\n") + "\n"


_CODE = re.compile(r"(``.+?``|`[^`]+`)")


def _rst_inline(text):
    """One line of light markdown as rst inline text (see :func:`markdown_to_rst`)."""
    parts = []
    for i, part in enumerate(_CODE.split(text)):
        if i % 2:  # a code span
            parts.append(part if part.startswith("``") else f"`{part}`")
            continue
        pieces = part.split("**")  # even positions lie outside **strong** text
        if len(pieces) % 2 == 0:  # an unmatched ``**`` is two asterisks
            pieces[-2:] = [pieces[-2] + "**" + pieces[-1]]
        parts.append("**".join(_rst_escape(p) if k % 2 == 0 else p
                               for k, p in enumerate(pieces)))
    return "".join(parts)


def _rst_escape(text):
    text = text.replace("\\", "\\\\").replace("*", "\\*").replace("|", "\\|")
    return re.sub(r"(?<=\w)_(?=\W|$)", r"\\_", text)


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


class PeakRSS(_Sampling):
    """Peak resident memory (bytes) of this process while the context is open, sampled
    every ``interval`` seconds in a thread (and at both ends); ``baseline`` is the
    resident memory on entry."""

    def __init__(self, interval=0.05):
        self.interval = interval

    def __enter__(self):
        self.baseline = self.peak = self._rss()
        self._start_sampling()
        return self

    def __exit__(self, *exc):
        self._stop_sampling()
        self.peak = max(self.peak, self._rss())

    @property
    def rise_mb(self):
        """The peak above the baseline, in MB."""
        return (self.peak - self.baseline) / 2**20

    def _sample(self):
        self.peak = max(self.peak, self._rss())

    @staticmethod
    def _rss():
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

