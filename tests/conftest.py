import os
from pathlib import Path

import pytest
import torch


def _shared_data():
    env = os.environ.get("SKTOPICS_DATA")
    path = Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def data_home():
    """The shared real corpora, or skip when they are not beside the checkout."""
    path = _shared_data()
    if path is None:
        pytest.skip("the shared corpora (../shared/data or $SKTOPICS_DATA) are not available")
    return str(path)


@pytest.fixture(autouse=True)
def one_thread():
    """The suite's models are tiny: one torch thread (restored after each test).

    On 2 shared cores torch's intra-op threads spin and slow small operations by up
    to 50x. Tests of threading set their own count.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def two_threads():
    """Two torch threads in the test (the autouse one-thread setting restored after)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


@pytest.fixture(autouse=True)
def no_failed_graph_captures(monkeypatch):
    """Each test starts as if no CUDA-graph capture had failed in the process: the
    failures are counted, and after a few of them fits stop using graphs (on a GPU,
    tests that make captures fail on purpose would otherwise turn graphs off for the
    tests after them in the same worker)."""
    from sktopics._neural import _graphs

    monkeypatch.setattr(_graphs, "_failures", 0)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
