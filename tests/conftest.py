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


DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


@pytest.fixture(params=DEVICES)
def device(request):
    return request.param
