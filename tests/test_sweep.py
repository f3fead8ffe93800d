"""Sweeps: grid checks, the two backends giving one table, failures, Ctrl-C, and a driver killed
with SIGKILL half way then re-run (toymech.sweep)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from waiting import limit

from toymech import cli, experiments
from toymech.grid import apply_overrides, expand_grid, load_grid, run_sweep
from toymech.sweep import backends as sweep_module
from toymech.zoo import Zoo

ray = pytest.importorskip("ray")

SMOKE = {"experiment": "modular_addition", "size": "smoke"}
# SGD at lr=100 diverges within the 20 smoke steps: the loop raises "training diverged" and the
# trial's status is "diverged" (not retried: it would diverge again).
MIXED = {**SMOKE, "seed": [0], "overrides": {"model.d_model": [16, 32], "train.optimizer": ["sgd"],
                                             "train.lr": [0.5, 100.0]}}


def _entries(zoo: Path) -> int:
    """Finished zoo entries (counted on disk, without loading anything)."""
    if not zoo.is_dir():
        return 0
    return sum(1 for p in zoo.iterdir() if not p.name.startswith(".") and (p / "config.json").is_file())


# ----------------------------------------------------------------------------------------------
# the grid: expansion and bad input, before any training
# ----------------------------------------------------------------------------------------------


def test_grid_expands_to_the_cartesian_product_with_stable_ids():
    spec = {**SMOKE, "seed": [0, 1], "overrides": {"model.d_model": [16, 32], "train.steps": [5]}}
    trials = expand_grid(spec)
    assert len(trials) == 4
    assert [(t.seed, t.overrides["model.d_model"]) for t in trials] == [(0, 16), (1, 16), (0, 32), (1, 32)]
    assert len({t.id for t in trials}) == len({t.key for t in trials}) == 4
    assert [t.id for t in expand_grid(spec)] == [t.id for t in trials]  # stable
    assert trials[0].exp.model.d_model == 16 and trials[0].exp.train.steps == 5
    # stack_seeds groups the seeds of one grid point into one job
    stacked = expand_grid({**spec, "stack_seeds": True})
    assert [t.group for t in stacked] == [0, 0, 1, 1]


def test_overrides_keep_derived_fields_consistent():
    exp = experiments.get("modular_addition", size="smoke", seed=3)
    out = apply_overrides(exp, {"model.d_model": 32, "task.p": 13, "train.steps": 1})
    assert (out.model.d_head, out.model.d_mlp) == (8, 128)  # follow d_model, as ModelConfig.replace
    assert out.model.d_vocab == out.task.d_vocab != exp.task.d_vocab  # the model follows its task
    assert out.train.eval_every == 1 and out.model.seed == out.train.seed == 3


@pytest.mark.parametrize("change, match", [
    ({"experiment": "nope"}, r"experiment='nope' is not allowed: one of .*modular_addition"),
    ({"size": ["smoke", "huge"]}, r"size='huge' is not allowed: one of smoke, default, paper"),
    ({"overrides": {"model.bogus": [1]}}, r"overrides key='model.bogus' is not allowed: a field of "
                                          r"experiment 'modular_addition': one of .*model\.d_model"),
    ({"overrides": {"bogus": [1]}}, r"overrides key='bogus' is not allowed: a dotted key"),
    ({"overrides": {"model.d_model": []}}, r"overrides\['model.d_model'\]=\[\] is not allowed: a non-empty list"),
    ({"overrides": {"model.d_model": 16}}, r"overrides\['model.d_model'\]=16 is not allowed: a non-empty list"),
    ({"overrides": {"model.seed": [1]}}, r"overrides key='model.seed' is not allowed"),
    ({"overrides": {"train.lr": [-1.0]}}, r"lr=-1.0 is not allowed"),
    ({"seed": []}, r"seed=\[\] is not allowed: a non-empty list"),
    ({"seed": [0, 0]}, r"seed=0 is not allowed: each value once"),
    ({"retries": -1}, r"retries=-1 is not allowed: an integer in 0..100"),
    ({"stack_seeds": "yes"}, r"stack_seeds='yes' is not allowed: false, true"),
    ({"sizes": "smoke"}, r"grid key='sizes' is not allowed: one of experiment, size"),
])
def test_bad_grid_is_refused_before_any_work(tmp_path, change, match):
    zoo = tmp_path / "zoo"
    with pytest.raises(ValueError, match=match):
        run_sweep({**SMOKE, **change}, cache_dir=zoo, backend="local", progress=False)
    assert not zoo.exists()


@pytest.mark.parametrize("kwargs, match", [
    ({"backend": "spark"}, r"backend='spark' is not allowed: one of 'auto', 'ray', 'local'"),
    ({"retries": 1.5}, r"retries=1.5 is not allowed: an integer in 0..100"),
    ({"backend": "local", "address": "auto"}, r"address='auto' is not allowed: None with backend='local'"),
    ({"device": "tpu"}, r"device='tpu' is not allowed"),
    ({"gpu_fraction": 0}, r"gpu_fraction=0 is not allowed"),
])
def test_bad_options_are_refused_before_any_work(tmp_path, kwargs, match):
    with pytest.raises(ValueError, match=match):
        run_sweep(SMOKE, cache_dir=tmp_path / "zoo", progress=False, **kwargs)
    assert not (tmp_path / "zoo").exists()


def test_grid_files_json_and_yaml(tmp_path, capsys):
    spec = {**SMOKE, "seed": [0, 1], "overrides": {"train.freeze": [[], ["blocks.*"]]}}
    (tmp_path / "g.json").write_text(json.dumps(spec))
    (tmp_path / "g.yaml").write_text("experiment: modular_addition\nsize: smoke\nseed: [0, 1]\n"
                                     "overrides:\n  train.freeze: [[], ['blocks.*']]\n")
    assert load_grid(tmp_path / "g.json") == load_grid(tmp_path / "g.yaml") == spec
    (tmp_path / "bad.json").write_text("{\"experiment\": ")
    with pytest.raises(ValueError, match=r"is not allowed: valid JSON \(line 1"):
        load_grid(tmp_path / "bad.json")
    with pytest.raises(ValueError, match=r"grid=.*g.txt' is not allowed: a .json, .yaml, .yml file"):
        load_grid(tmp_path / "g.txt")
    # the command: one line on stderr, exit 2, nothing trained
    (tmp_path / "typo.json").write_text(json.dumps({**SMOKE, "overrides": {"model.bogus": [1]}}))
    code = cli.main(["sweep", str(tmp_path / "typo.json"), "--cache", str(tmp_path / "zoo")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_USAGE and err.count("\n") == 1 and "model.bogus" in err
    assert not (tmp_path / "zoo").exists()


# ----------------------------------------------------------------------------------------------
# running: both backends, failures, resumption, Ctrl-C
# ----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def both_backends(tmp_path_factory):
    """MIXED (2 trials that train, 2 that diverge) through Ray (2 workers) and in-process."""
    out = {}
    for backend in ("ray", "local"):
        zoo = tmp_path_factory.mktemp(f"zoo-{backend}")
        out[backend] = run_sweep(MIXED, cache_dir=zoo, backend=backend, progress=False,
                                 workers=2, retries=1, log=None)
    return out


def test_failed_trials_are_reported_and_do_not_stop_the_others(both_backends):
    for backend, result in both_backends.items():
        table = result.table
        assert result.backend == backend
        assert list(table["status"]) == ["ok", "diverged", "ok", "diverged"], backend
        failed = table[table["status"] == "diverged"]
        assert failed["error"].str.contains("TrainingDiverged: training diverged: train_loss=").all()
        assert (failed["attempts"] == 1).all() and failed["eval_loss"].isna().all()
        ok = table[table["status"] == "ok"]
        assert (ok["attempts"] == 1).all() and (ok["error"].fillna("") == "").all()
        assert not ok["loaded"].any() and ok["eval_loss"].notna().all()
        assert _entries(result.cache_dir) == 2  # only the ok trials are in the zoo
        on_disk = pd.read_csv(result.path)
        assert list(on_disk.columns) == list(table.columns) and len(on_disk) == 4


def test_ray_and_local_give_the_same_table(both_backends):
    ray_t, local_t = both_backends["ray"].table, both_backends["local"].table
    assert list(ray_t.columns) == list(local_t.columns)
    assert list(ray_t.columns[:7]) == ["trial", "experiment", "size", "seed", "model.d_model",
                                       "train.optimizer", "train.lr"]
    same = ["trial", "experiment", "size", "seed", "model.d_model", "train.lr", "status",
            "attempts", "loaded", "device", "entry"]
    pd.testing.assert_frame_equal(ray_t[same], local_t[same])
    metrics = ["step", "train_loss", "eval_loss", "eval_acc"]
    # one torch thread per Ray worker, the test's threads in-process: equal up to float rounding
    np.testing.assert_allclose(ray_t[metrics].to_numpy(float), local_t[metrics].to_numpy(float),
                               rtol=1e-5, atol=1e-6)


def test_rerun_loads_finished_trials_and_retries_failed_ones(both_backends):
    first = both_backends["local"]
    again = run_sweep(MIXED, cache_dir=first.cache_dir, backend="local", progress=False,
                      retries=0, log=None)
    assert list(again.table["status"]) == ["ok", "diverged", "ok", "diverged"]
    assert list(again.table["loaded"]) == [True, False, True, False]
    assert list(again.table["attempts"]) == [0, 1, 0, 1] and again.path == first.path
    cols = ["trial", "entry", "eval_loss", "eval_acc"]
    pd.testing.assert_frame_equal(again.table[cols], first.table[cols])
    entry = again.entry(0, device="cpu")  # a notebook reaches the model of a row
    assert entry.path.name == again.table["entry"][0] and entry.model.cfg.d_model == 16


def test_cli_exit_code_1_when_a_trial_failed(tmp_path, capsys):
    grid = {**SMOKE, "overrides": {"model.d_model": [16], "train.optimizer": ["sgd"],
                                   "train.lr": [100.0]}}
    (tmp_path / "g.json").write_text(json.dumps(grid))
    out = tmp_path / "table.csv"
    code = cli.main(["sweep", str(tmp_path / "g.json"), "--backend", "local", "--retries", "0",
                     "--cache", str(tmp_path / "zoo"), "--out", str(out), "--no-progress"])
    assert code == cli.EXIT_FAILED
    assert "0 ok (0 loaded from the zoo), 0 failed, 1 diverged" in capsys.readouterr().out
    assert list(pd.read_csv(out)["status"]) == ["diverged"]


def test_stacked_seeds_give_one_row_per_seed(tmp_path):
    grid = {**SMOKE, "seed": [0, 1], "stack_seeds": True,
            "overrides": {"model.d_model": [16], "train.steps": [4]}}
    result = run_sweep(grid, cache_dir=tmp_path, backend="local", progress=False, log=None)
    assert list(result.table["status"]) == ["ok", "ok"] and list(result.table["seed"]) == [0, 1]
    assert all(Zoo(tmp_path).load(t.exp, device="cpu", log=None).meta.get("stacked") == 2
               for t in result.trials)


def test_ctrl_c_leaves_a_consistent_table_and_zoo(tmp_path, monkeypatch):
    calls = []
    real = sweep_module.run_job

    def interrupted_second(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(sweep_module, "run_job", interrupted_second)
    grid = {**SMOKE, "seed": [0, 1, 2], "overrides": {"model.d_model": [16], "train.steps": [4]},
            "name": "interrupted"}
    with pytest.raises(KeyboardInterrupt):
        run_sweep(grid, cache_dir=tmp_path, backend="local", progress=False, log=None)
    table = pd.read_csv(tmp_path / "sweeps" / "interrupted.csv")
    assert list(table["status"]) == ["ok", "cancelled", "cancelled"]
    assert [e["status"] for e in Zoo(tmp_path).entries()] == ["ok"]
    assert not list(tmp_path.glob(".*.lock")) and not list((tmp_path / "sweeps").glob(".*"))


# ----------------------------------------------------------------------------------------------
# kill -9 of the driver half way, then a re-run (local Ray, through the command)
# ----------------------------------------------------------------------------------------------


def _family(root: int) -> set[int]:
    """``root``, its descendants and the processes of its session (where Ray's live)."""
    procs = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                fields = (d / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            procs[int(d.name)] = (int(fields[1]), int(fields[3]))  # ppid, session
    family, grew = {root} | {p for p, (_, sid) in procs.items() if sid == root}, True
    while grew:
        more = {p for p, (ppid, _) in procs.items() if ppid in family} - family
        family |= more
        grew = bool(more)
    return family


def _alive(pids: set[int]) -> list[str]:
    out = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            if stat.rsplit(")", 1)[1].split()[0] != "Z":
                out.append(f"{pid} {Path(f'/proc/{pid}/cmdline').read_bytes()[:80]!r}")
        except OSError:
            pass
    return out


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to find Ray's processes")
def test_sigkill_of_the_driver_then_rerun_finishes_the_sweep(tmp_path):
    zoo, table = tmp_path / "zoo", tmp_path / "table.csv"
    grid = {**SMOKE, "seed": [0, 1, 2], "overrides": {"model.d_model": [16, 32],
                                                      "train.steps": [40, 80],
                                                      "train.eval_every": [20]}}
    (tmp_path / "grid.json").write_text(json.dumps(grid))
    command = [sys.executable, "-m", "toymech", "sweep", str(tmp_path / "grid.json"), "--backend",
               "ray", "--cache", str(zoo), "--out", str(table), "--device", "cpu", "--no-progress"]
    env = {**os.environ, "TOYMECH_THREADS": "2"}  # two Ray workers whatever the load
    with open(tmp_path / "first.log", "wb") as log:
        first = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
    try:
        while _entries(zoo) < 5 and first.poll() is None:
            time.sleep(0.1)  # no deadline: the sweep either trains or ends (checked next)
        if first.poll() is not None:
            pytest.fail(f"the sweep ended before it was killed: "
                        f"{(tmp_path / 'first.log').read_text()[-2000:]}")
        family = _family(first.pid)
        os.kill(first.pid, signal.SIGKILL)
    finally:
        first.kill()
        first.wait()
    done_at_kill = _entries(zoo)
    assert 0 < done_at_kill < 12, (done_at_kill, (tmp_path / "first.log").read_text()[-2000:])
    assert len(family) > 3  # Ray's own processes were running under the driver

    rerun = subprocess.run(command, capture_output=True, text=True, env=env, timeout=limit(600))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "12 ok" in rerun.stdout
    entries = Zoo(zoo).entries()
    assert len(entries) == 12 and all(e["status"] == "ok" for e in entries)
    rows = pd.read_csv(table)
    assert len(rows) == 12 and set(rows["status"]) == {"ok"} and rows["trial"].is_unique
    assert rows["loaded"].sum() >= done_at_kill
    assert not list(zoo.glob(".*.lock")), "a lock of the killed run is still there"
    assert "Traceback" not in rerun.stderr

    # Ray's processes of the killed driver follow it (the raylet and GCS at once, its agents
    # when they notice the raylet is gone); wait for that instead of timing it.
    deadline = time.monotonic() + limit(300)
    while _alive(family) and time.monotonic() < deadline:
        time.sleep(1)
    assert not _alive(family), f"orphaned Ray processes of the killed sweep: {_alive(family)}"


# ----------------------------------------------------------------------------------------------
# explicit experiments: how the studies send their grids through the sweep
# ----------------------------------------------------------------------------------------------


def test_explicit_experiments_run_as_a_sweep_and_group_their_seeds(tmp_path):
    from toymech.sweep import run_experiments

    exps = [experiments.get("modular_addition", "smoke", s) for s in (0, 1)]
    trials = expand_grid({"experiments": exps, "stack_seeds": True})
    assert [t.group for t in trials] == [0, 0] and trials[0].id.endswith(exps[0].key())
    res = run_experiments(exps, cache_dir=tmp_path, backend="local", stacked=True)
    assert list(res.table["status"]) == ["ok", "ok"] and res.path.parent == tmp_path / "sweeps"
    assert res.entry(1, "cpu").meta["train"]["seed"] == 1 and _entries(tmp_path) == 2
    again = run_experiments(exps, cache_dir=tmp_path, backend="local", stacked=True)
    assert again.loaded == 2 and again.path == res.path


@pytest.mark.parametrize("spec, match", [
    ({"experiments": []}, "experiments=.*non-empty list"),
    ({"experiments": "x"}, "experiments=.*non-empty list"),
    ({"experiments": None, "experiment": "modular_addition"}, "grid key='experiment'"),
    ({"experiments": "dup"}, "each experiment once"),
    ({"experiments": "one", "stack_seeds": "sometimes"}, "stack_seeds='sometimes'"),
])
def test_bad_explicit_experiments_are_refused(tmp_path, spec, match):
    one = experiments.get("modular_addition", "smoke", 0)
    spec = dict(spec)
    named = {"dup": [one, one], "one": [one]}
    if isinstance(spec["experiments"], str) and spec["experiments"] in named:
        spec["experiments"] = named[spec["experiments"]]
    with pytest.raises(ValueError, match=match):
        run_sweep(spec, cache_dir=tmp_path, backend="local", progress=False, log=None)
    assert _entries(tmp_path) == 0


def test_studies_choose_ray_only_when_two_workers_or_a_gpu(monkeypatch):
    from toymech.studies.grid_training import backend_for

    monkeypatch.delenv("TOYMECH_SWEEP_BACKEND", raising=False)
    assert backend_for("cpu", 1) == "local" and backend_for("cpu", 2) == "ray"
    monkeypatch.setenv("TOYMECH_SWEEP_BACKEND", "local")
    assert backend_for("cpu", 8) == "local"
    monkeypatch.setenv("TOYMECH_SWEEP_BACKEND", "sometimes")
    with pytest.raises(ValueError, match="TOYMECH_SWEEP_BACKEND='sometimes'"):
        backend_for("cpu", 2)


def test_a_failing_run_of_a_study_grid_stops_the_study(tmp_path, monkeypatch):
    from toymech.studies.grid_training import train_grid

    monkeypatch.setenv("TOYMECH_SWEEP_BACKEND", "local")
    good = experiments.get("modular_addition", "smoke", 0)
    bad = apply_overrides(good, {"train.optimizer": "sgd", "train.lr": 100.0})
    with pytest.raises(RuntimeError, match="1 of 2 runs of the grid failed.*diverged"):
        train_grid([good, bad], Zoo(tmp_path), "cpu")
    assert _entries(tmp_path) == 1  # the good run is kept


def test_a_study_grid_runs_on_local_ray_like_in_process(tmp_path, monkeypatch):
    """Notebook 03's grid function through the embedded Ray (two one-thread workers) and
    in-process: the same rows; each left a sweep table in the zoo."""
    from toymech.studies import random_transformers as rt

    tables = {}
    for backend in ("ray", "local"):
        monkeypatch.setenv("TOYMECH_SWEEP_BACKEND", backend)
        zoo = Zoo(tmp_path / backend)
        tables[backend] = rt.run_grid(["parentheses"], [8], ["normal", "random"], [0, 1],
                                      "smoke", zoo, "cpu")
        assert len(list((zoo.root / "sweeps").glob("*.csv"))) == 1 and _entries(zoo.root) == 4
    if ray.is_initialized():
        ray.shutdown()
    cols = ["task", "width", "mode", "seed", "acc"]
    pd.testing.assert_frame_equal(tables["ray"][cols], tables["local"][cols], rtol=1e-4)


def test_sweeps_sit_above_the_zoo_layer():
    """runner, backends and table import only the zoo and below; named grids (``toymech.grid``)
    are the module that knows the experiments, outside the sweep package; the training layer
    imports no zoo, sweep, experiment registry or study."""
    import ast

    root = Path(__file__).resolve().parents[1] / "toymech"

    def imported(path):
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                base = path.relative_to(root.parent).with_suffix("").parts[:-node.level] if node.level else ()
                module = ".".join([*base, *(node.module.split(".") if node.module else [])])
                names |= {module} | {f"{module}.{a.name}" for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {a.name for a in node.names}
        return {n for n in names if n.startswith("toymech")}

    below = ("toymech.core", "toymech.files", "toymech.devices", "toymech.models", "toymech.tasks", "toymech.training",
             "toymech.zoo")
    for name in ("runner", "backends", "table"):
        bad = [m for m in imported(root / "sweep" / f"{name}.py")
               if not m.startswith(below)
               and not m.startswith(("toymech.sweep.table", "toymech.sweep.backends"))]
        assert not bad, (name, bad)
    assert "toymech.experiments" in imported(root / "grid.py")
    for path in (root / "training").glob("*.py"):
        bad = [m for m in imported(path) if m.startswith(("toymech.zoo", "toymech.sweep", "toymech.experiments",
                                                          "toymech.studies", "toymech.analysis"))]
        assert not bad, (path.name, bad)
