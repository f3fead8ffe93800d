"""A map's live line (``maps.live.MapProgress``): runs and cells done, the run in progress and
its step read from the training processes' status files, an estimate left at this call's pace;
printed per event in a log, redrawn in place on a terminal; ``$TOYMECH_LIVE`` restored after."""

from __future__ import annotations

import io
import os

from toymech.experiments import get
from toymech.maps.live import MapProgress, duration
from toymech.training import live as live_status


def _runs():
    exp = get("induction-2l", "smoke")
    return [(f"r{i}", f"cell{i // 2}", exp) for i in range(4)]  # 2 cells of 2 seeds


def test_a_log_gets_a_line_per_event_with_counts_and_an_estimate(monkeypatch):
    monkeypatch.delenv(live_status.ENV, raising=False)
    now = [0.0]
    out = io.StringIO()
    with MapProgress("m", stream=out, live=False, clock=lambda: now[0]) as progress:
        folder = live_status.folder()
        assert folder is not None and folder.is_dir()  # workers inherit it
        progress.plan(_runs(), have={"r0"})
        now[0] = 30.0
        progress.trained("r1")  # one run in 30 s, two left: about a minute
        progress.trained("r1")  # counted once
        now[0] = 60.0
        progress.trained("r2")
        progress.trained("r3")
        progress.measured(0, 4)
        progress.measured(3, 4)
    lines = out.getvalue().splitlines()
    assert lines[0] == "map m: 4 runs in 2 cells, 1 in the zoo, 3 to train"
    assert lines[1] == ("map m: 2 of 4 runs trained, 1 of 2 cells, 30 s elapsed | "
                        "about 1 min 0 s left")
    assert lines[2].startswith("map m: 3 of 4 runs trained, 1 of 2 cells, 1 min 0 s elapsed")
    assert lines[3].startswith("map m: 4 of 4 runs trained, 2 of 2 cells") and "left" not in lines[3]
    assert lines[4].endswith("measuring row 1 of 4") and lines[5].endswith("measured 4 rows")
    assert len(lines) == 6  # the second measured row prints nothing in a log
    assert live_status.ENV not in os.environ and not folder.exists()


def test_a_terminal_line_shows_the_run_in_progress_and_its_step(monkeypatch, tmp_path):
    monkeypatch.setenv(live_status.ENV, str(tmp_path))  # a watcher's folder is kept
    now = [0.0]
    out = io.StringIO()
    progress = MapProgress("m", stream=out, live=True, clock=lambda: now[0], every_s=3600)
    with progress:
        progress.plan(_runs()[:2], have=set())
        assert progress.line().endswith("estimate after the first steps")
        with live_status.training("induction-2l seed 3"):
            live_status.ticker(100)(50)  # half of one of the two runs after 10 s
            now[0] = 10.0
            line = progress.line()
    assert "training induction-2l seed 3: step 50/100" in line
    assert line.endswith("about 30 s left")  # 1.5 runs left at 0.5 runs per 10 s
    assert out.getvalue().startswith("\r") and out.getvalue().endswith("\n")
    assert os.environ[live_status.ENV] == str(tmp_path) and tmp_path.is_dir()


def test_durations_read_as_words():
    assert [duration(s) for s in (0.4, 42, 185, 3725)] == ["0 s", "42 s", "3 min 5 s", "1 h 02 min"]


def test_a_run_a_stop_rule_ended_early_counts_for_the_steps_it_ran(monkeypatch):
    monkeypatch.delenv(live_status.ENV, raising=False)
    now = [0.0]
    with MapProgress("m", stream=io.StringIO(), live=False, clock=lambda: now[0]) as progress:
        progress.plan(_runs(), have=set())
        now[0] = 10.0
        progress.trained("r0", fraction=0.1)  # a tenth of a run in 10 s: 3 runs left, 300 s
        assert progress.left_s([]) == 300.0


def test_the_share_a_stored_run_ran_is_read_from_its_record(tmp_path):
    import json

    from toymech.maps.run import trained_share
    from toymech.zoo import Zoo

    zoo, exp = Zoo(tmp_path), get("induction-2l", "smoke")
    assert trained_share(zoo, exp) == 1.0  # no record: its whole budget
    zoo.path(exp).mkdir(parents=True)
    (zoo.path(exp) / "config.json").write_text(json.dumps(
        {"history": [{"step": exp.train.steps // 4}]}))
    assert trained_share(zoo, exp) == (exp.train.steps // 4) / exp.train.steps


def test_runs_that_failed_are_said_and_not_left_to_do(monkeypatch):
    monkeypatch.delenv(live_status.ENV, raising=False)
    out = io.StringIO()
    with MapProgress("m", stream=out, live=False, clock=lambda: 5.0) as progress:
        progress.plan(_runs(), have=set())
        progress.trained("r0")
        progress.trained("r1")
        progress.failed({"r2", "r3", "r0"})  # r0 was stored: not a failure
        line = progress.line()
        assert line.startswith("map m: 2 of 4 runs trained (2 failed), 1 of 2 cells")
        assert "left" not in line and progress.left_s([]) == 0.0


def test_an_estimate_that_rounds_to_nothing_while_runs_train_says_finishing(monkeypatch, tmp_path):
    monkeypatch.setenv(live_status.ENV, str(tmp_path))
    now = [0.0]
    progress = MapProgress("m", stream=io.StringIO(), live=True, clock=lambda: now[0],
                           every_s=3600)
    with progress:
        progress.plan(_runs()[:1], have=set())
        with live_status.training("induction-2l seed 3"):
            live_status.ticker(100)(100)  # the run's last step is done, it is not stored yet
            now[0] = 10.0
            line = progress.line()
    assert line.endswith("finishing") and "0 s left" not in line, line
