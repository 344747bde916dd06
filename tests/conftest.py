import os
from pathlib import Path

import pytest
import torch

from ._instances import use_suite_device


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
def no_earlier_failures(monkeypatch):
    """Each test starts as if no kernel had failed in the process: the compiled CPU
    kernels, the fused GPU kernel and CUDA-graph captures remember their failures for
    the process (tests that make them fail on purpose would otherwise change what the
    tests after them in the same worker run)."""
    from sktopics._gibbs import _fused
    from sktopics._kernels import _jit
    from sktopics._neural import _graphs

    monkeypatch.setattr(_jit, "_failures", {})
    monkeypatch.setattr(_jit, "_said", set())
    monkeypatch.setattr(_fused, "_failures", {})
    monkeypatch.setattr(_graphs, "_failures", {})


def _machine_auto_device():
    from sktopics.utils import _devices

    return _devices._auto_device


_MACHINE_AUTO_DEVICE = _machine_auto_device()


@pytest.fixture(autouse=True)
def suite_device(request, monkeypatch):
    """Where ``device="auto"`` (every estimator's and evaluator's default) runs a test.

    * A test marked ``cpu`` is about the CPU (its compiled kernels, a CPU-only
      sampler): it must pass ``device="cpu"`` to what it builds, and resolving
      ``"auto"`` fails it, on any machine. On a GPU ``"auto"`` would take CUDA and
      the test would pass without running what it names.
    * Other tests run ``"auto"`` on ``SKTOPICS_TEST_DEVICE``: the CPU by default,
      even where CUDA is visible, and CUDA where present with
      ``SKTOPICS_TEST_DEVICE=auto`` (how the GPU kit runs the suite). An explicit
      ``device="cuda"`` is never changed.
    """
    from sktopics.utils import _devices

    if request.node.get_closest_marker("cpu") is not None:
        def auto_device():
            pytest.fail("this test is marked 'cpu' but left a device to 'auto': pass "
                        "device='cpu' to the estimators and evaluators it builds",
                        pytrace=True)

        monkeypatch.setattr(_devices, "_auto_device", auto_device)
    else:
        use_suite_device(monkeypatch.setattr)


@pytest.fixture
def machine_auto_device(monkeypatch):
    """``device="auto"`` as the machine resolves it, for the tests of that logic itself."""
    from sktopics.utils import _devices

    monkeypatch.setattr(_devices, "_auto_device", _MACHINE_AUTO_DEVICE)


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
