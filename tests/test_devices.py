import pytest
import torch

from toymech import devices


def test_explicit_threads_win_and_are_checked(monkeypatch):
    monkeypatch.setenv("TOYMECH_THREADS", "3")
    assert devices.choose_threads(2) == 2
    assert devices.choose_threads() == 3
    monkeypatch.setenv("TOYMECH_THREADS", "many")
    with pytest.raises(ValueError, match="TOYMECH_THREADS='many'"):
        devices.choose_threads()
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError, match="threads="):
            devices.choose_threads(bad)
    with pytest.raises(ValueError, match="jobs=0"):
        devices.choose_threads(None, jobs=0)


def test_automatic_threads_divide_the_free_cores(monkeypatch):
    monkeypatch.delenv("TOYMECH_THREADS", raising=False)
    monkeypatch.setattr(devices, "usable_cores", lambda: 8)
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (3.0, 0.0, 0.0))
    assert devices.free_cores() == 5
    assert devices.choose_threads() == 5
    assert devices.choose_threads(jobs=2) == 2
    assert devices.choose_threads(jobs=9) == 1  # never zero
    monkeypatch.setattr(devices.os, "getloadavg", lambda: (20.0, 0.0, 0.0))
    assert devices.choose_threads() == 1  # a machine busier than its cores: one thread


def test_apply_threads_sets_torch_and_says_so_once(monkeypatch):
    monkeypatch.setattr(devices, "_CHOSEN", {})  # as in a fresh process
    before = torch.get_num_threads()
    lines = []
    try:
        assert devices.apply_threads(1, log=lines.append) == 1
        assert torch.get_num_threads() == 1
        devices.apply_threads(1, log=lines.append)
        assert len(lines) == 1 and "threads: 1 (as asked)" in lines[0]
    finally:
        torch.set_num_threads(before)
