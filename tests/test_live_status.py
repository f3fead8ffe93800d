"""The progress line names the model being trained and its step (``toymech.training.live``):
training processes write a status into ``$TOYMECH_LIVE``, ``toymech report`` gives each
notebook's kernel a folder of its own and reads it back."""

from __future__ import annotations

import io
import json
import os
import time

import pytest
from waiting import limit

from toymech.report import progress
from toymech.report.costs import CostTable, crowding, estimate_left, shipped_costs
from toymech.report.engine import kernel_manager
from toymech.training import live
from toymech.zoo import Zoo


def _exp(steps=6, seed=0):
    from toymech import experiments

    exp = experiments.get("induction-1l", "smoke", seed=seed)
    exp.train = exp.train.replace(steps=steps, eval_every=2)
    return exp


def test_without_a_watcher_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.delenv(live.ENV, raising=False)
    assert live.ticker(10) is None
    live.sweep_progress(1, 2)  # no folder: a no-op
    assert live.read(None) == {"runs": [], "sweeps": []}


def test_a_run_reports_its_label_and_step_then_clears(tmp_path, monkeypatch):
    monkeypatch.setenv(live.ENV, str(tmp_path))
    with live.training("induction-2l seed 6"):
        tick = live.ticker(10_000)
        tick(4_250)
        status = live.read(tmp_path)
        assert live.describe(status) == "training induction-2l seed 6: step 4,250/10,000"
        live.sweep_progress(7, 30)
        assert live.describe(live.read(tmp_path)).endswith("(7 of 30 runs done)")
    assert live.read(tmp_path)["runs"] == []  # the run's status goes with it
    live.sweep_done()
    assert live.describe(live.read(tmp_path)) == ""


def test_stale_or_broken_statuses_are_skipped(tmp_path):
    (tmp_path / "run-1.json").write_text(json.dumps({"label": "old", "step": 1, "steps": 2,
                                                     "time": time.time() - 3600}))
    (tmp_path / "run-2.json").write_text("{not json")
    (tmp_path / "run-3.json").write_text(json.dumps({"label": "new", "step": 1, "steps": 2,
                                                     "time": time.time()}))
    assert [r["label"] for r in live.read(tmp_path)["runs"]] == ["new"]


def test_the_zoo_labels_a_training_run_with_its_experiment_and_seed(tmp_path, monkeypatch):
    monkeypatch.setenv(live.ENV, str(tmp_path / "live"))
    seen = []

    def look(step, model):  # an evaluation-step callback: what a watcher sees mid-run
        seen.append(live.describe(live.read(tmp_path / "live")))
        return {}

    exp = _exp(seed=3)
    Zoo(tmp_path / "zoo").get_or_train(exp, device="cpu", callbacks=[look], progress=False,
                                       log=None)
    assert seen and all(s.startswith(f"training {exp.name} seed 3: step ") for s in seen)
    assert live.read(tmp_path / "live")["runs"] == []  # cleared when the run ended


def test_the_log_line_names_the_model_training(tmp_path, monkeypatch):
    monkeypatch.setenv(live.ENV, str(tmp_path))
    out = io.StringIO()
    line = progress.LiveProgress(["nb.ipynb"], stream=out, live=False)
    line.start(0, None, live_dir=tmp_path)
    with live.training("induction-1l seed 2"):
        live.ticker(100)(40)
        assert line.line(0).endswith("| training induction-1l seed 2: step 40/100")
    assert "training" not in line.line(0)
    line.close()


def test_a_kernel_started_by_the_report_sees_its_own_folder(tmp_path):
    import asyncio

    from jupyter_client import BlockingKernelClient  # noqa: F401  (jupyter_client is installed)

    async def run():
        km = kernel_manager({live.ENV: str(tmp_path / "nb")})(kernel_name="python3")
        await km.start_kernel()
        try:
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=limit(300))
            reply = await kc.execute_interactive(
                f"import os; open({str(tmp_path / 'env.txt')!r}, 'w').write("
                f"os.environ.get({live.ENV!r}, ''))", timeout=limit(300))
            kc.stop_channels()
            return reply
        finally:
            await km.shutdown_kernel(now=True)

    reply = asyncio.run(run())
    assert reply["content"]["status"] == "ok"
    assert (tmp_path / "env.txt").read_text() == str(tmp_path / "nb")
    assert live.ENV not in os.environ  # this process's environment is unchanged


def test_three_notebooks_on_one_core_double_the_estimate_of_three_on_two(tmp_path):
    table = CostTable(tmp_path)
    table.record("nb", "size=default", [10.0, 50.0], 60.0, reference_step_s=0.03, jobs=3, cores=2)
    same = table.get("nb", "size=default", 0.03, crowding(3, 2))
    one_core = table.get("nb", "size=default", 0.03, crowding(3, 1))
    alone = table.get("nb", "size=default", 0.03, crowding(1, 2))
    assert same["total_s"] == pytest.approx(60.0)
    assert one_core["total_s"] == pytest.approx(120.0)
    assert alone["total_s"] == pytest.approx(60.0 / 1.5)
    # on a machine also half as fast, both factors apply
    slow = table.get("nb", "size=default", 0.06, crowding(3, 1))
    assert estimate_left(slow, 0, 2, 0.0) == pytest.approx(240.0)


def test_the_shipped_rows_say_how_crowded_their_cores_were():
    for stem, runs in shipped_costs().items():
        for key, row in runs.items():
            assert row.get("jobs") and row.get("cores"), (stem, key)


def test_a_log_gets_a_line_at_least_every_30_s_while_a_model_trains(tmp_path, monkeypatch):
    monkeypatch.setenv(live.ENV, str(tmp_path))
    now = [1000.0]
    out = io.StringIO()
    line = progress.LiveProgress(["nb.ipynb"], stream=out, live=False, clock=lambda: now[0])
    line.start(0, None, live_dir=tmp_path)
    start = out.getvalue().count("\n")

    def printed():
        return out.getvalue().count("\n") - start

    with live.training("induction-2l seed 3"):
        tick = live.ticker(10_000, clock=lambda: now[0])
        tick(10)
        line._log_tick()
        assert printed() == 1  # a new model: a line
        assert progress.LOG_EVERY_S <= 30  # the bound on a log's silence
        for step in (500, 900):  # the same model, less than LOG_EVERY_S later: nothing
            now[0] += progress.LOG_EVERY_S / 3
            tick(step)
            line._log_tick()
        assert printed() == 1
        now[0] += progress.LOG_EVERY_S  # LOG_EVERY_S after the last line: its step, again
        tick(1_500)
        line._log_tick()
        assert printed() == 2 and "step 1,500/10,000" in out.getvalue().splitlines()[-1]
    now[0] += progress.LOG_EVERY_S
    line._log_tick()  # nothing training: no heartbeat
    assert printed() == 2
    line.close()


def test_a_training_cell_is_estimated_by_its_own_pace_once_runs_finish(tmp_path, monkeypatch):
    monkeypatch.setenv(live.ENV, str(tmp_path))
    now = [0.0]
    line = progress.LiveProgress(["nb.ipynb"], stream=io.StringIO(), live=False,
                                 clock=lambda: now[0])
    # the last run: a 100 s training cell between two 10 s cells
    line.start(0, {"cells": [10.0, 100.0, 10.0], "total_s": 120.0}, live_dir=tmp_path)
    line.cell(0, 1, 3, "Training")
    now[0] = 50.0
    assert "about 1 min left" in line.line(0)  # by the cost table: 50 s + 10 s
    live.sweep_progress(1, 4)  # 1 of 4 runs done in 50 s: 3 more take 150 s
    assert "about 2 min 40 s left" in line.line(0)
    live.sweep_progress(3, 4)  # 3 of 4 in 50 s: one more takes about 17 s
    assert "about 27 s left" in line.line(0)
    line.close()


def test_a_run_past_the_last_runs_time_says_finishing_not_zero_left(tmp_path, monkeypatch):
    monkeypatch.setenv(live.ENV, str(tmp_path))
    now = [0.0]
    line = progress.LiveProgress(["nb.ipynb"], stream=io.StringIO(), live=False,
                                 clock=lambda: now[0])
    line.start(0, {"cells": [10.0, 20.0], "total_s": 30.0}, live_dir=tmp_path)
    line.cell(0, 1, 2, "Training")
    now[0] = 15.0
    assert "about 5.0 s left" in line.line(0)  # 20 s last time, 15 s in
    now[0] = 500.0  # the last cell runs far longer than last time: work remains
    text = line.line(0)
    assert "finishing" in text and "left" not in text, text
    line.close()
