"""Where a sweep runs when Ray is slow to start: the embedded start is retried inside its budget,
an automatic choice falls back to local processes with one line, an explicit ``--backend ray``
fails in one line that says how to join a cluster, and the table's metadata records it all."""

from __future__ import annotations

import json

import pytest

from toymech import cli
from toymech.grid import run_sweep
from toymech.sweep import backends
from toymech.sweep.table import meta_path

ray = pytest.importorskip("ray")

SMOKE = {"experiment": "modular_addition", "size": "smoke", "seed": [0, 1],
         "overrides": {"model.d_model": [16], "train.steps": [4], "train.eval_every": [4]}}
TIMED_OUT = "The current node timed out during startup."


@pytest.fixture
def ray_never_starts(monkeypatch):
    calls = []

    def init(*args, **kwargs):
        calls.append(kwargs)
        raise RuntimeError(TIMED_OUT)

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setenv("TOYMECH_RAY_START_S", "1")
    return calls


def test_an_automatic_choice_falls_back_to_local_processes(tmp_path, ray_never_starts):
    lines = []
    result = run_sweep(SMOKE, cache_dir=tmp_path / "zoo", backend="auto", progress=False,
                       workers=2, log=lines.append)
    assert list(result.table["status"]) == ["ok", "ok"]
    assert result.backend == "processes" and len(ray_never_starts) >= 2  # retried first
    assert len(lines) == 2 and "run(s) to train, about" in lines[0]  # the cost, said first
    assert "did not start" in lines[1] and "2 local processes" in lines[1]
    meta = json.loads(meta_path(result.path).read_text())
    assert meta == result.meta and meta["outcome"] == "fell back" and meta["backend"] == "processes"
    assert meta["requested"] == "ray" and meta["attempts"] == len(ray_never_starts)
    assert TIMED_OUT in meta["error"]


def test_one_worker_falls_back_to_this_process(tmp_path, ray_never_starts):
    with pytest.warns(RuntimeWarning, match="running the trials in this process instead"):
        result = run_sweep(SMOKE, cache_dir=tmp_path / "zoo", backend="auto", progress=False,
                           workers=1, log=None)
    assert result.backend == "local" and list(result.table["status"]) == ["ok", "ok"]


def test_an_explicit_ray_backend_fails_in_one_line(tmp_path, ray_never_starts, capsys):
    (tmp_path / "grid.json").write_text(json.dumps(SMOKE))
    code = cli.main(["sweep", str(tmp_path / "grid.json"), "--backend", "ray", "--cache",
                     str(tmp_path / "zoo"), "--no-progress"])
    err = capsys.readouterr().err
    cost, error = err.splitlines()  # what the runs to train cost, then the one error line
    assert code == cli.EXIT_FAILED and "run(s) to train, about" in cost and "Traceback" not in err
    assert "did not start" in error and "--address auto" in error and "TOYMECH_RAY_START_S" in error


def test_a_start_that_fails_once_is_retried(monkeypatch):
    """``start_ray`` on a stand-in for the ray module: the first start times out, the second
    works (a real Ray's start cannot be made to fail once on demand)."""
    class FlakyRay:
        def __init__(self):
            self.inits, self.shutdowns = 0, 0

        def init(self, **kwargs):
            self.inits += 1
            if self.inits == 1:
                raise RuntimeError(TIMED_OUT)

        def shutdown(self):
            self.shutdowns += 1

    monkeypatch.setenv("TOYMECH_RAY_START_S", "600")
    flaky = FlakyRay()
    record = backends.start_ray(flaky, 2, {})
    assert record["attempts"] == 2 and record["outcome"] == "started" and record["seconds"] >= 0
    assert flaky.inits == 2 and flaky.shutdowns == 1


def test_a_real_embedded_ray_records_its_start(tmp_path):
    result = run_sweep(SMOKE, cache_dir=tmp_path / "zoo", backend="ray", progress=False,
                       workers=1, log=None)
    assert result.backend == "ray" and list(result.table["status"]) == ["ok", "ok"]
    assert result.meta["outcome"] == "started" and result.meta["attempts"] >= 1


def test_the_in_process_runner_records_its_start_too(tmp_path):
    result = run_sweep(SMOKE, cache_dir=tmp_path / "zoo", backend="local", progress=False, log=None)
    assert result.meta["backend"] == "local" and result.meta["outcome"] == "in-process"
    again = run_sweep(SMOKE, cache_dir=tmp_path / "zoo", backend="local", progress=False, log=None)
    assert again.meta["outcome"] == "nothing to run" and again.loaded == 2


@pytest.mark.parametrize("raw", ["abc", "0", "-5", "nan"])
def test_a_bad_start_budget_is_refused(tmp_path, monkeypatch, raw):
    monkeypatch.setenv("TOYMECH_RAY_START_S", raw)
    with pytest.raises(ValueError, match="TOYMECH_RAY_START_S"):
        run_sweep(SMOKE, cache_dir=tmp_path / "zoo", backend="ray", progress=False, log=None)
