import os

import pytest
import torch

# Tests never touch the user's cache and never reach the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
torch.set_num_threads(min(2, torch.get_num_threads()))


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYMECH_CACHE", str(tmp_path / "zoo"))


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)
