"""The live line's estimate follows the machine: earlier cell times (shipped or this folder's) are
scaled by this machine's reference step over the reference step of the machine that measured
them (``toymech.report.costs``)."""

from __future__ import annotations

import json

import pytest

from toymech.models.reference import SHIPPED_STEPS_PER_S, reference_step_seconds, speed_ratio
from toymech.report import progress
from toymech.report.costs import CostTable, estimate_left, scale_text, shipped_costs

SHIPPED_STEP = 1.0 / SHIPPED_STEPS_PER_S


def _a_shipped_row():
    stem, runs = next(iter(shipped_costs().items()))
    key, row = next(iter(runs.items()))
    return stem, key, row


def test_a_machine_half_as_fast_gets_an_estimate_within_30_percent(tmp_path):
    stem, key, row = _a_shipped_row()
    table = CostTable(tmp_path)
    # the actual time on a machine half as fast: every cell takes twice as long
    actual = 2.0 * row["total_s"]
    slow = table.get(stem, key, reference_step_s=2.0 * SHIPPED_STEP)
    left = estimate_left(slow, 0, len(row["cells"]), 0.0, 0.0)
    assert slow["shipped"] and slow["scale"] == pytest.approx(2.0)
    assert abs(left - actual) <= 0.3 * actual
    # unscaled (what the line said before), the estimate misses by half
    plain = estimate_left(table.get(stem, key), 0, len(row["cells"]), 0.0, 0.0)
    assert abs(plain - actual) > 0.3 * actual


def test_a_recorded_run_is_scaled_by_its_own_reference_step(tmp_path):
    table = CostTable(tmp_path)
    table.record("nb", "size=smoke", [1.0, None, 3.0], 4.5, reference_step_s=0.02)
    stored = json.loads((tmp_path / "costs.json").read_text())["nb"]["size=smoke"]
    assert stored["reference_step_s"] == 0.02
    busy = table.get("nb", "size=smoke", reference_step_s=0.05)
    assert busy["cells"] == pytest.approx([2.5, None, 7.5]) and busy["total_s"] == pytest.approx(11.25)
    assert "scale" not in table.get("nb", "size=smoke")  # no measurement here: as recorded


def test_rows_without_a_reference_step_are_left_as_they_are(tmp_path):
    table = CostTable(tmp_path)
    table.record("nb", "size=smoke", [1.0, 2.0], 3.0)  # an older costs.json
    assert table.get("nb", "size=smoke", reference_step_s=0.1)["cells"] == [1.0, 2.0]


def test_the_started_line_says_it_was_scaled(tmp_path):
    stem, key, row = _a_shipped_row()
    import io

    out = io.StringIO()
    live = progress.LiveProgress([f"{stem}.ipynb"], stream=out, live=False)
    live.start(0, CostTable(tmp_path).get(stem, key, reference_step_s=3.0 * SHIPPED_STEP))
    assert "scaled x3.0" in out.getvalue()


def test_the_reference_step_is_measured_here():
    seconds = reference_step_seconds(steps=3)
    assert 0 < seconds < 60 and speed_ratio(seconds) == pytest.approx(seconds * SHIPPED_STEPS_PER_S)


def test_another_seed_count_is_estimated_from_the_sizes_own_row(tmp_path):
    table = CostTable(tmp_path)
    table.record("nb", "size=default", [1.0, None, 3.0], 4.5, reference_step_s=0.02)
    # --seeds 6 where the size runs 3: no row of its own, so the size's row, twice as long
    six = table.get("nb", CostTable.key("default", 6), 0.02, None, ("size=default", 2.0))
    assert six["seeds_ratio"] == 2.0 and six["total_s"] == pytest.approx(9.0)
    assert six["cells"] == [pytest.approx(2.0), None, pytest.approx(6.0)]
    assert "x2.00 for the seeds" in scale_text(six)
    # without the ratio (or without any row) there is still no estimate
    assert table.get("nb", CostTable.key("default", 6), 0.02) is None
    assert table.get("other", CostTable.key("default", 6), 0.02, None, ("size=default", 2.0)) is None
    # a run recorded at that seed count wins over the scaled one
    table.record("nb", CostTable.key("default", 6), [5.0, None, 5.0], 10.0, reference_step_s=0.02)
    own = table.get("nb", CostTable.key("default", 6), 0.02, None, ("size=default", 2.0))
    assert own["total_s"] == pytest.approx(10.0) and "seeds_ratio" not in own


def test_each_study_notebook_knows_its_sizes_own_seed_count():
    from pathlib import Path

    from toymech.report.checks import study_n_seeds
    from toymech.studies import protocol

    root = Path(__file__).resolve().parents[1]
    for name, notebook in protocol.STUDIES.items():
        for size in ("smoke", "default", "paper"):
            want = protocol.study(name).size(size).n_seeds
            assert study_n_seeds(root / notebook, size) == want
