"""Study 3 at the rebuttal's width 16: the runs `specs/sweeps/rt-paper-w16.yaml` trains are the zoo
entries the `paper` scorecard reads for its width-16 rows, on ten seeds no calibration used, and
those rows fail on untrained width-16 models at the paper's task sizes (their null world)."""

import dataclasses
from pathlib import Path

import pytest

from toymech import grid
from toymech.core import SIZES
from toymech.models import build_model
from toymech.studies import random_transformers as rt
from toymech.studies.claims import assess, by_key
from toymech.studies.random_transformers import claims as rtc
from toymech.studies.random_transformers.design import ALGORITHMIC, CALIBRATION, experiment
from toymech.studies.random_transformers.over_seeds import measure_data, measure_seed
from toymech.studies.settings import shortfall

W16_ROWS = ("normal-w16-decimal-all-or-nothing", "random-w16-solves-none")


def _mode(exp):
    return "random" if exp.train.freeze else "normal"


def test_the_width16_grid_trains_what_paper_judges_the_rows_on():
    trials = grid.expand_grid(grid.load_grid(Path(__file__).resolve().parents[1] / "specs" / "sweeps" / "rt-paper-w16.yaml"))
    seeds = rt.seeds_of("paper", 0)
    assert sorted({t.seed for t in trials}) == list(seeds) and len(seeds) == 10
    assert not set(seeds) & {s for cal in CALIBRATION.values() for s in cal}
    for t in trials:  # the same zoo entry as the notebook's own width-16 run at paper
        assert t.exp.model.d_model == 16 and t.exp.train.steps == 50_000
        assert t.exp.train.batch_size == 1000
        assert t.exp.key(t.tag) == experiment(t.exp.task.name, 16, _mode(t.exp), "paper",
                                              t.seed).key()
    have = {(t.exp.task.name, _mode(t.exp)) for t in trials}
    need = {("decimal_addition", "normal")} | {(task, "random") for task in ALGORITHMIC}
    assert have == need
    # the rows are judged at paper, at the rebuttal's setting, not "scaled" and not below it
    for key in W16_ROWS:
        c = by_key(rtc.CLAIMS, key)
        assert c.numeric or not c.scaled
        assert [s for s in SIZES if not shortfall(c.setting, rtc.SETTINGS.of(s))] == ["paper"]


@pytest.fixture(scope="module")
def untrained_w16():
    """Two seeds' numbers from untrained width-16 runs at the paper's task sizes, measured by
    the study's own ``measure_seed`` (only the width-16 runs: the width-1024 ones are the
    TOYMECH_PAPER_TESTS null world's)."""
    out = []
    for seed in rt.seeds_of("paper", 0, 2):
        data = measure_data("paper", seed, "table")
        runs = {k: r for k, r in data.runs.items() if k.startswith("main/") and "-w16-" in k}
        data = dataclasses.replace(data, runs=runs)
        out.append(measure_seed({k: build_model(r.exp.model, "cpu").eval()
                                 for k, r in runs.items()}, data))
    return out


@pytest.mark.parametrize("key", W16_ROWS)
def test_the_width16_rows_fail_on_untrained_models(untrained_w16, key):
    a = assess(by_key(rtc.CLAIMS, key), untrained_w16)
    assert a.measured == 2 and a.verdict.startswith("not reproduced"), a.verdict
