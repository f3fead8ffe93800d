"""A report killed while it trains resumes: the rerun trains only the models the killed run had
not stored, reads the others from the zoo untouched, and finishes (what ``./run.sh report --size
paper`` relies on for its hour of training; shown here at smoke with four seeds)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from waiting import limit

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "01_induction_repeated_blocks.ipynb"


def _stored(zoo: Path) -> dict[str, float]:
    """Finished entries and their config's modification time (nothing loaded)."""
    if not zoo.is_dir():
        return {}
    return {p.name: (p / "config.json").stat().st_mtime_ns for p in zoo.iterdir()
            if not p.name.startswith(".") and (p / "config.json").is_file()}


def _kernels_of(parent: int) -> list[int]:
    """Processes started for ``parent`` by jupyter_client (``JPY_PARENT_PID`` in their environment)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                env = (proc / "environ").read_bytes().split(b"\0")
            except OSError:
                continue
            if f"JPY_PARENT_PID={parent}".encode() in env:
                found.append(int(proc.name))
    return found


@pytest.mark.skipif(not hasattr(os, "killpg") or not Path("/proc").is_dir(),
                    reason="kills the report's process group and finds its kernel in /proc")
def test_a_killed_report_trains_only_what_is_missing_on_rerun(tmp_path):
    zoo, out = tmp_path / "zoo", tmp_path / "reports"
    command = [sys.executable, "-m", "toymech", "report", "--size", "smoke", "--seeds", "4",
               "--device", "cpu", "--cache", str(zoo), "--out", str(out), str(NOTEBOOK)]
    # one trial after another in the kernel: the entries appear one by one
    env = {**os.environ, "TOYMECH_SWEEP_BACKEND": "local", "TOYMECH_THREADS": "1"}
    with open(tmp_path / "first.log", "wb") as log:
        first = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
    try:
        while not _stored(zoo) and first.poll() is None:
            time.sleep(0.05)  # no deadline: the report either trains or ends (checked next)
        if first.poll() is not None:
            pytest.fail(f"the report ended before it was killed: "
                        f"{(tmp_path / 'first.log').read_text()[-2000:]}")
        kernels = _kernels_of(first.pid)  # jupyter_client starts them in their own session
        assert kernels, "the report's kernel was not found"
        os.killpg(first.pid, signal.SIGKILL)  # the CLI and its process group
        for pid in kernels:  # and the kernel, which trains in this test (a local sweep)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
    finally:
        first.wait()
    before = _stored(zoo)
    assert len(before) > 0, before

    rerun = subprocess.run(command, capture_output=True, text=True, env=env,
                           timeout=limit(900))
    assert rerun.returncode == 0, (rerun.stdout + rerun.stderr)[-3000:]
    assert "1 ok, 0 failed" in rerun.stdout
    after = _stored(zoo)
    assert set(before) < set(after) and len(after) >= 12  # 3 models x 4 seeds at least
    # what the killed run stored is read back as it was, never trained again
    assert {k: after[k] for k in before} == before
    assert not list(zoo.glob(".*.lock")), "a lock of the killed run is still there"
