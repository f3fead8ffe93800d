import os
from dataclasses import dataclass
from pathlib import Path

import pytest
import torch
from waiting import limit

from toymech.devices import apply_threads

# Tests never touch the user's cache and never reach the network.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# An embedded Ray gets the start-up budget of a machine like the one the limits were written on,
# scaled to this one (tests/waiting.py), so a slow or busy machine waits longer instead of failing.
os.environ.setdefault("TOYMECH_RAY_START_S", str(round(limit(240))))
# The test process's threads, chosen explicitly (``apply_threads``: the library's thread policy
# keeps them, and its claim tells the notebook kernels and subprocesses started here).
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several pytest workers (./run.sh test): each gets its share of the cores, and the notebook
    # kernels and subprocesses it starts see the others' claims through the thread policy.
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    apply_threads(max(1, min(2, torch.get_num_threads() // _workers)), log=None)
else:
    apply_threads(min(2, torch.get_num_threads()), log=None)


@pytest.hookimpl(tryfirst=True)  # before xdist's loadgroup reads the groups
def pytest_collection_modifyitems(config, items):
    """Under pytest-xdist (--dist loadgroup) the tests that read the executed notebooks share one
    worker, so the notebooks still execute once per run (and so do those that read the map's page)."""
    for item in items:
        for shared in ("smoke_reports", "smoke_map_page"):  # the map's page: built once too
            if shared in getattr(item, "fixturenames", ()):
                item.add_marker(pytest.mark.xdist_group(shared))
                break


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYMECH_CACHE", str(tmp_path / "zoo"))


@pytest.fixture
def gen():
    return torch.Generator().manual_seed(1234)


PROJECT_NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


@dataclass
class SmokeReports:
    """``build_reports`` output for every project notebook at size smoke (see ``smoke_reports``)."""

    out: Path  # the reports folder: <stem>.html, executed/<stem>.ipynb, index.html, index.json
    entries: list  # one toymech.report.ReportEntry per notebook, in PROJECT_NOTEBOOKS order

    def entry(self, notebook):
        stem = Path(notebook).stem
        return next(e for e in self.entries if Path(e.notebook).stem == stem)

    def executed(self, notebook) -> Path:
        return self.out / self.entry(notebook).executed

    def html(self, notebook) -> Path:
        return self.out / self.entry(notebook).html


@pytest.fixture(scope="session")
def smoke_reports(tmp_path_factory) -> SmokeReports:
    """Every project notebook executed ONCE per test session, at size smoke on the CPU, through
    ``toymech.report.build_reports`` (papermill + HTML), with a zoo of its own. The notebook,
    study and browser tests all read these outputs instead of executing the notebooks again."""
    from toymech.report import build_reports

    out = tmp_path_factory.mktemp("smoke-reports")
    with pytest.MonkeyPatch.context() as mp:
        # Session scope runs outside the per-test cache isolation above; the kernels inherit this.
        mp.setenv("TOYMECH_CACHE", str(tmp_path_factory.mktemp("smoke-zoo")))
        # jobs=2: two kernels at once, each with cores/2 threads; on 2 cores this took 71 s for
        # the three notebooks against 167 s one after another.
        entries = build_reports(PROJECT_NOTEBOOKS, out_dir=out, size="smoke", device="cpu",
                                trust=False, jobs=2)
    return SmokeReports(out, entries)


# A smoke map: 2 knobs x 2 values x 2 seeds of study 1 (8 runs, seconds each at smoke).
SMOKE_MAP = {"study": "induction", "experiment": "induction-2l", "size": "smoke", "seeds": 2,
             "knobs": {"block_len": [6, "4-8"], "offset": [0, "0-3"]}, "name": "smoke-map"}


@pytest.fixture(scope="session")
def smoke_map_page(tmp_path_factory) -> Path:
    """The page of ``SMOKE_MAP``, trained from an empty zoo and rendered ONCE per test session by
    ``toymech map GRID --report`` (the command a reader runs), on the CPU: ``map-smoke-map.html``."""
    import subprocess
    import sys

    import yaml

    root = tmp_path_factory.mktemp("smoke-map")
    grid = root / "smoke-map.yaml"
    grid.write_text(yaml.safe_dump(SMOKE_MAP))
    zoo, reports = root / "zoo", root / "reports"
    env = {**os.environ, "TOYMECH_THREADS": "1", "TOYMECH_CACHE": str(zoo)}
    done = subprocess.run([sys.executable, "-m", "toymech", "map", str(grid), "--cache", str(zoo),
                           "--backend", "local", "--no-progress", "--device", "cpu",
                           "--report", str(reports)], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "8 run(s) measured now" in done.stderr, done.stderr[-2000:]  # the zoo was empty
    page = reports / "map-smoke-map.html"
    assert page.is_file(), done.stdout[-2000:]
    return page
