"""Study 1's map panel (toymech.studies.induction.panel): one set of tests for every cell of a
map, outside every cell's training range; the judging rule and its null world (an untrained
model, the frequency copier and the position copier themselves get no `content` label)."""

from __future__ import annotations

import math

import pytest
import torch

from toymech import analysis, experiments
from toymech.models import build_model
from toymech.studies.induction import panel
from toymech.tasks.repeated_blocks import RepeatedBlocks

V = 26
CELLS = [RepeatedBlocks(block_len=6), RepeatedBlocks(block_len=(5, 7), offset=(0, 3), length=24),
         RepeatedBlocks(block_len=4, n_blocks=6)]


def test_every_panel_set_is_outside_every_cell_and_the_same_for_all():
    shapes, left_out = panel.panel_shapes(CELLS)
    assert set(shapes) | set(left_out) == set(panel.PANEL_SETS)
    assert set(shapes) >= {"shorter", "longer", "shifted"}
    for name, (period, offset) in shapes.items():
        for task in CELLS:
            assert not task.in_distribution(period, offset), (name, period, offset, task)
    assert shapes["shorter"][0] == 3 and shapes["longer"][0] == 8
    assert shapes["shifted"][1] > 3  # past every cell's largest offset
    one, two = panel.build_panel(CELLS, 64, seed=5), panel.build_panel(list(reversed(CELLS)), 64, seed=5)
    for name in one.sets:
        assert torch.equal(one.sets[name].tokens, two.sets[name].tokens)  # cells see the same letters
    other = panel.build_panel(CELLS, 64, seed=6)
    assert not torch.equal(one.sets["longer"].tokens, other.sets["longer"].tokens)


def test_a_set_that_does_not_fit_is_left_out_by_name():
    shapes, left_out = panel.panel_shapes([RepeatedBlocks(block_len=(5, 7), offset=(0, 8), length=24)])
    assert "far" in left_out and "far" not in shapes  # 8-letter blocks after 9 letters: no repeat left


def test_the_margin_is_far_above_the_noise_of_the_bar():
    """The derivation of MARGIN: either predictor's loss moves by less than a third of it between
    two independently drawn panels."""
    train = CELLS[0].predictable(512, torch.Generator().manual_seed(0))
    a = panel.baselines(panel.build_panel(CELLS, 512, seed=1), train, V)
    b = panel.baselines(panel.build_panel(CELLS, 512, seed=2), train, V)
    for name in a:
        if name == "train":
            continue
        for kind in ("copier", "position"):
            assert abs(a[name][kind] - b[name][kind]) < panel.MARGIN / 3, (name, kind, a[name], b[name])


def _baselines():
    train = CELLS[0].predictable(512, torch.Generator().manual_seed(0))
    p = panel.build_panel(CELLS, 512, seed=1)
    return p, train, panel.baselines(p, train, V)


def test_the_predictors_without_the_mechanism_get_no_content_label():
    p, train, base = _baselines()
    copier = {k: b["copier"] for k, b in base.items()}
    assert panel.judge(copier, base)["state"] == "untrained"
    position = {k: b["position"] for k, b in base.items()}
    verdict = panel.judge(position, base)
    assert verdict["state"] == "learned" and verdict["label"] == "position"


def test_an_untrained_model_is_a_state_not_a_label():
    exp = experiments.get("induction-2l", "smoke", 0)
    model = build_model(exp.model, "cpu").eval()
    p, train, base = _baselines()
    losses = analysis.set_losses(model, {"train": train, **p.sets})
    verdict = panel.judge(losses, base)
    assert verdict == {**verdict, "state": "untrained", "label": None}


def test_a_content_copier_is_labelled_content_and_gaps_are_reported():
    p, train, base = _baselines()
    perfect = {k: 0.01 for k in base}
    verdict = panel.judge(perfect, base)
    assert verdict["label"] == "content"
    assert all(verdict[f"gap.{k}"] < 0 for k in ("shorter", "longer"))
    # one block-length set not beaten: partial; still falling at the end: no label at all
    half = {**perfect, "longer": base["longer"]["best"]}
    assert panel.judge(half, base)["label"] == "partial"
    assert panel.judge(perfect, base, learning=True) == {**panel.judge(perfect, base), "state": "still learning",
                                                         "label": None}
    assert panel.judge(perfect, base, learning=None)["label"] is None  # a log too short to tell
    assert panel.median_gap([verdict, verdict], "longer") == pytest.approx(verdict["gap.longer"])
    assert panel.median_gap([{}], "longer") is None


def _fixed_and_varied():
    """A map of fixed 6-letter and varied 4-8-letter cells (its shorter set: blocks of 3, which
    copying 6 back solves) and the baselines of a run of each."""
    cells = [RepeatedBlocks(block_len=6), RepeatedBlocks(block_len=(4, 8), offset=(0, 3), length=24)]
    p = panel.build_panel(cells, 512, seed=11)
    bases = []
    for i, task in enumerate(cells):
        train = task.predictable(512, torch.Generator().manual_seed(20 + i))
        bases.append(panel.baselines(p, train, V))
    return p, bases


def test_a_set_that_the_position_copier_solves_does_not_judge_the_run():
    p, (fixed, varied) = _fixed_and_varied()
    assert p.shapes["shorter"][0] == 3
    # copying 6 back solves blocks of 3: that set cannot tell for a run trained on blocks of 6
    assert fixed["shorter"]["position"] < fixed["shorter"]["copier"] - panel.MARGIN
    assert panel.telling(fixed) == ["longer", "far"]
    assert panel.telling(varied) == ["shorter", "longer", "far"]  # no one distance back solves 3 there
    # a run that copies by content on every set that can tell, short of the 3-letter bar: content
    content = {"train": 0.2, "shifted": 0.3, "shorter": fixed["shorter"]["best"], "longer": 0.5, "far": 0.6}
    verdict = panel.judge(content, fixed)
    assert verdict["label"] == "content" and verdict["judged_on"] == ("longer", "far")
    # the same losses for a run trained on varied blocks: the 3-letter set tells there, and fails
    assert panel.judge({**content, "shorter": varied["shorter"]["best"]}, varied)["label"] == "partial"
    # the null world: the position copier and the frequency copier stay without a content label
    position = {k: b["position"] for k, b in fixed.items()}
    assert panel.judge(position, fixed)["label"] == "position"
    assert panel.judge({k: b["copier"] for k, b in fixed.items()}, fixed)["state"] == "untrained"
    for base in (fixed, varied):
        best = {k: b["best"] for k, b in base.items()}
        assert panel.judge(best, base)["label"] != "content"


def test_a_learned_run_with_no_set_that_can_tell_gets_no_label():
    p, (fixed, _) = _fixed_and_varied()
    only = {k: fixed[k] for k in ("train", "shifted", "shorter")}
    assert panel.telling(only) == []
    verdict = panel.judge({"train": 0.1, "shifted": 0.1, "shorter": 0.0}, only)
    assert verdict["state"] == "learned" and verdict["label"] is None and verdict["judged_on"] == ()
    nan = {**fixed, "longer": {"copier": math.nan, "position": math.nan, "best": math.nan}}
    assert "longer" not in panel.telling(nan)


def test_bad_cells_are_refused_by_name():
    with pytest.raises(ValueError, match="tasks"):
        panel.panel_shapes([])
    with pytest.raises(ValueError, match="tasks"):
        panel.panel_shapes(["block_len=6"])


def test_a_run_s_own_sets_follow_the_same_rule():
    """The notebook's mechanism check (``solved``, ``measure.mechanism_label``) leaves out a
    block-length set the position-only copier solves, as the maps' ``judge`` does; baselines as
    the scorecard records them (no position loss of its own) are read the same way."""
    from toymech.studies.induction.measure import mechanism_label, mechanism_verdict

    tells = {"best": 2.0, "copier": 2.0}
    base = {"predictable": {"best": 0.0, "copier": 1.8}, "shifted": {"best": 0.0, "copier": 2.2},
            "shorter": {"best": 0.4, "copier": 1.1}, "longer": tells}  # shorter: copying back solves it
    losses = {"predictable": 0.2, "shifted": 0.3, "shorter": 1.05, "longer": 0.5}
    assert panel.telling(base, ["shorter", "longer"]) == ["longer"]
    assert panel.solved(losses, base) == {"predictable": True, "shifted": True, "longer": True}
    assert mechanism_label(losses, base) == "content"
    assert mechanism_verdict(losses, base).startswith("content-based")
    told = {**base, "shorter": {"best": 1.1, "copier": 1.1}}  # the same set where it can tell
    assert mechanism_label(losses, told) == "position"
    assert mechanism_label({**losses, "longer": 1.95}, base) == "position"  # longer still judges
    assert mechanism_label({k: base[k]["best"] for k in base}, base) != "content"  # the predictors
    assert mechanism_label({k: base[k]["copier"] for k in base}, base) == "neither"
