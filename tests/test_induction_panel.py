"""Study 1's map panel (toymech.studies.induction.panel): one set of tests for every cell of a
map, outside every cell's training range; the judging rule and its null world (an untrained
model and every member of the null family, scored as a run is, get no `content` label; the
mechanism itself does), the evidence against, the sets that can tell, and the intervals."""

from __future__ import annotations

import functools
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
    """The derivation of MARGIN: every predictor's loss (each member of the family, and the
    mechanism's) moves by less than a third of it between two independently drawn panels."""
    train = CELLS[0].predictable(512, torch.Generator().manual_seed(0))
    a = panel.baselines(panel.build_panel(CELLS, 512, seed=1), train, V)
    b = panel.baselines(panel.build_panel(CELLS, 512, seed=2), train, V)
    for name in a:
        if name == "train":
            continue
        for kind in (*panel.MEMBERS, panel.MECHANISM):
            assert abs(a[name][kind] - b[name][kind]) < panel.MARGIN / 3, (name, kind, a[name], b[name])


def _baselines():
    train = CELLS[0].predictable(512, torch.Generator().manual_seed(0))
    p = panel.build_panel(CELLS, 512, seed=1)
    return p, train, panel.baselines(p, train, V)


MAP_CELLS = {"fixed": RepeatedBlocks(block_len=6),
             "varied": RepeatedBlocks(block_len=(4, 5, 6, 7, 8), offset=(0, 1, 2, 3), length=24)}


@pytest.fixture(scope="module")
def scored():
    """A map of a fixed 6-letter cell and a varied 4-8-letter cell with random starts (study 1's
    capacity map's extremes): its panel and, per cell, the family fitted on one run's own
    training distribution and scored on it (as ``map_row`` scores a run's bar)."""
    p = panel.build_panel(list(MAP_CELLS.values()), 512, seed=11)
    out = {}
    for i, (name, task) in enumerate(MAP_CELLS.items()):
        train = task.predictable(512, torch.Generator().manual_seed(20 + i))
        sets = panel.panel_sets(p, train)
        preds = panel.set_predictions(sets, train, V)
        out[name] = (task, sets, preds, panel.bars(preds))
    return p, out


def _as_run(mine, preds, base):
    """A predictor scored on the panel exactly as a run is (``map_row``): its losses, its
    margins' intervals against the family (paired bootstrap over the panel's sequences) and
    ``judge``."""
    losses = {k: p.loss for k, p in mine.items()}
    draws = panel.margin_draws({k: p for k, p in mine.items() if k != "train"}, preds)
    return panel.judge(losses, base, False, panel.MARGIN, panel.margin_bounds(draws))


@pytest.mark.parametrize("cell", list(MAP_CELLS))
@pytest.mark.parametrize("member", panel.NULL_FAMILY, ids=lambda m: m.name)
def test_every_member_of_the_null_family_scored_as_a_run_gets_no_content_label(scored, cell, member):
    """Each algorithm without induction, fitted on ANOTHER draw of the cell's training data (an
    independent 'run' of it) and scored on the panel as a run is, is never labelled content
    against the family fitted on the run's own data."""
    _, cells = scored
    task, sets, preds, base = cells[cell]
    other = task.predictable(512, torch.Generator().manual_seed(99))
    fitted = member.fit(other, V)
    mine = {k: member.predict(b, V, fitted) for k, b in sets.items()}
    verdict = _as_run(mine, preds, base)
    assert verdict["label"] != "content", (member.name, cell, verdict)
    assert verdict["state"] in ("learned", "untrained", "undecided")


@pytest.mark.parametrize("cell", list(MAP_CELLS))
def test_an_induction_oracle_is_labelled_content(scored, cell):
    """The mechanism itself (a synthetic content copier) clears every bar, on every set that
    can tell, with intervals far from the cut: content, in both kinds of cell."""
    _, cells = scored
    task, sets, preds, base = cells[cell]
    oracle = {k: p[panel.MECHANISM] for k, p in preds.items()}
    verdict = _as_run(oracle, preds, base)
    assert verdict["state"] == "learned" and verdict["label"] == "content", verdict
    assert len(verdict["judged_on"]) >= panel.MIN_SETS and verdict["failed_on"] == ()


def test_the_recency_copier_is_part_of_the_bar_where_it_is_best(scored):
    """The source's 'don't repeat the recent letters': a frequency copier suppressing the last k
    letters (k fitted on the run's own data) beats the frequency copier on the longer blocks by
    more than the margin, so the bar there is lower than the two copiers of the earlier rule."""
    _, cells = scored
    for *_, base in cells.values():
        assert base["longer"]["recency"] < base["longer"]["copier"] - panel.MARGIN
        assert base["longer"]["best"] < min(base["longer"]["copier"], base["longer"]["position"])
        assert base["longer"]["best"] == min(base["longer"][m] for m in panel.MEMBERS)


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


@functools.lru_cache(maxsize=1)
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


def test_a_set_that_a_null_member_solves_does_not_judge_the_run():
    p, (fixed, varied) = _fixed_and_varied()
    assert p.shapes["shorter"][0] == 3
    # copying 6 back solves blocks of 3: more than half of induction's gain there
    gain = fixed["shorter"]["copier"] - fixed["shorter"]["best"]
    assert gain >= panel.TELLS * (fixed["shorter"]["copier"] - fixed["shorter"]["oracle"])
    assert panel.telling(fixed) == ["longer", "far"]
    assert panel.telling(varied) == ["shorter", "longer", "far"]  # no one distance back solves 3 there
    # a run that copies by content on every set that can tell, short of the 3-letter bar but not
    # failing it (far below the frequency copier): content
    content = {"train": 0.2, "shifted": 0.3, "shorter": fixed["shorter"]["best"], "longer": 0.5, "far": 0.6}
    verdict = panel.judge(content, fixed)
    assert verdict["label"] == "content" and verdict["judged_on"] == ("longer", "far")
    # the same losses for a run trained on varied blocks: the 3-letter set tells there, and fails
    assert panel.judge({**content, "shorter": varied["shorter"]["best"]}, varied)["label"] == "partial"
    # the null world: each member's own losses stay without a content label
    for base in (fixed, varied):
        for member in (*panel.MEMBERS, "best"):
            losses = {k: b[member] for k, b in base.items()}
            assert panel.judge(losses, base)["label"] != "content", member


def test_evidence_against_counts_whether_or_not_a_null_solves_the_set():
    """"Fails" (``panel.failed``): a set the mechanism solves (induction below the frequency
    copier by MARGIN) where the run's loss is not below the frequency copier's by MARGIN. It
    rules content out on any panel set: one that cannot tell (a null solves it too) or a shifted
    start, which never judges a label."""
    p, (fixed, varied) = _fixed_and_varied()
    content = {"train": 0.2, "shifted": 0.3, "shorter": 0.3, "longer": 0.5, "far": 0.6}
    assert panel.judge(content, fixed)["label"] == "content"
    for name in ("shifted", "shorter"):  # neither can tell for the fixed cell
        assert name not in panel.telling(fixed, panel.PANEL_SETS)
        at_copier = {**content, name: fixed[name]["copier"] - panel.MARGIN}  # exactly at the line
        verdict = panel.judge(at_copier, fixed)
        assert verdict["label"] == "partial" and verdict["failed_on"] == (name,), verdict
        below = {**content, name: fixed[name]["copier"] - panel.MARGIN - 1e-6}
        assert panel.judge(below, fixed)["label"] == "content"
    # a run beaten everywhere that can tell is position, failing or not
    lost = {**content, "longer": 3.0, "far": 3.0, "shifted": 3.0}
    assert panel.judge(lost, fixed)["label"] == "position"
    assert set(panel.failed(lost, fixed)) == {"shifted", "longer", "far"}
    # a set not measured shows no failure; a set the mechanism does not solve cannot be failed
    assert panel.failed({"train": 0.2}, fixed) == []
    easy = {**fixed, "shifted": {**fixed["shifted"], "oracle": fixed["shifted"]["copier"]}}
    assert "shifted" not in panel.failed({"shifted": 9.0}, easy)


def test_a_label_never_rests_on_fewer_than_two_sets():
    p, (fixed, _) = _fixed_and_varied()
    only = {k: fixed[k] for k in ("train", "shifted", "shorter")}
    assert panel.telling(only) == []
    verdict = panel.judge({"train": 0.1, "shifted": 0.1, "shorter": 0.0}, only)
    assert verdict["state"] == "undecided" and verdict["label"] is None and verdict["judged_on"] == ()
    assert "fewer than 2" in verdict["undecided_because"]
    one = {k: fixed[k] for k in ("train", "shifted", "longer")}
    verdict = panel.judge({"train": 0.1, "shifted": 0.1, "longer": 0.1}, one)
    assert verdict["judged_on"] == ("longer",) and verdict["state"] == "undecided"
    nan = {**fixed, "longer": {k: math.nan for k in fixed["longer"]}}
    assert "longer" not in panel.telling(nan)


def test_a_margin_whose_interval_straddles_the_cut_leaves_the_run_undecided():
    p, (fixed, _) = _fixed_and_varied()
    losses = {"train": 0.2, "shifted": 0.3, "shorter": 0.3, "longer": 0.5,
              "far": fixed["far"]["best"] - 0.12}  # beaten, by 0.02 nats more than the margin
    clear = {k: {"best": (1.0, 1.2), "copier": (1.0, 1.2)} for k in panel.PANEL_SETS}
    assert panel.judge(losses, fixed, bounds=clear)["label"] == "content"
    assert panel.judge(losses, fixed)["label"] == "content"  # point estimates alone
    wide = {**clear, "far": {"best": (0.05, 0.2), "copier": (1.0, 1.2)}}
    verdict = panel.judge(losses, fixed, bounds=wide)
    assert verdict["state"] == "undecided" and verdict["label"] is None
    assert "far (beaten)" in verdict["undecided_because"]
    # an interval that straddles the cut but cannot change the label leaves it alone: failing
    # the shifted start or not, a run beaten on every set that can tell is position
    lost = {**losses, "longer": 3.0, "far": 3.0}
    far_off = {"best": (-1.3, -1.2), "copier": (-1.0, -0.9)}
    unsure = {**clear, "longer": far_off, "far": far_off,
              "shifted": {"best": (0.0, 0.0), "copier": (0.05, 0.3)}}
    assert panel.judge(lost, fixed, bounds=unsure)["label"] == "position"
    # an interval on a failure test counts too
    shaky = {**clear, "shifted": {"best": (0.0, 0.0), "copier": (0.05, 0.3)}}
    assert panel.judge(losses, fixed, bounds=shaky)["state"] == "undecided"


def test_margin_draws_are_paired_and_the_same_for_every_run(scored):
    """The bootstrap resamples a set's sequences alike for the run and every predictor (a run
    identical to the best member has a margin of exactly 0 in every resample), from a seed of
    the set alone (two calls agree), and its interval covers the point estimate."""
    _, cells = scored
    task, sets, preds, base = cells["fixed"]
    member = {k: p["recency"] for k, p in preds.items() if k != "train"}
    draws = panel.margin_draws(member, preds)
    for k in ("longer", "far"):
        assert base[k]["best"] == base[k]["recency"]
        assert float(draws[k]["best"].abs().max()) < 1e-9
    oracle = {k: p[panel.MECHANISM] for k, p in preds.items() if k != "train"}
    one, two = panel.margin_draws(oracle, preds), panel.margin_draws(oracle, preds)
    assert all(torch.equal(one[k]["best"], two[k]["best"]) for k in one)
    bounds = panel.margin_bounds(one)
    for k, b in bounds.items():
        point = base[k]["best"] - oracle[k].loss
        assert b["best"][0] <= point <= b["best"][1] and b["best"][1] - b["best"][0] < 0.2
    low, high = panel.beyond_interval(one, ["longer", "far"])
    assert low <= min(base[k]["best"] - oracle[k].loss for k in ("longer", "far")) <= high
    assert math.isnan(panel.beyond_interval(one, [])[0])


def test_the_earlier_rule_is_kept_for_the_column_beside_the_new_one():
    p, (fixed, varied) = _fixed_and_varied()
    # the earlier bar: the better of the two copiers; its telling: the position copier's
    losses = {"train": 0.2, "shifted": 0.3, "shorter": 0.3,
              "longer": fixed["longer"]["recency"] + 0.05, "far": 0.6}
    assert panel.earlier_label(losses, fixed) == "content"
    assert panel.judge(losses, fixed)["label"] == "partial"  # the recency copier does better
    assert panel.earlier_label({**losses, "train": 9.0}, fixed) is None


def test_bad_cells_are_refused_by_name():
    with pytest.raises(ValueError, match="tasks"):
        panel.panel_shapes([])
    with pytest.raises(ValueError, match="tasks"):
        panel.panel_shapes(["block_len=6"])


def test_a_run_s_own_sets_follow_the_same_rule():
    """The notebook's mechanism check (``own_judge``, ``measure.mechanism_label``) is the maps'
    rule on a run's own sets (``predictable`` its training distribution): a block-length set a
    null member explains does not judge, two sets must tell, a shifted start only counts against;
    the labels and states are the maps'."""
    from toymech.studies.induction.measure import mechanism_label, mechanism_verdict
    from toymech.studies.induction.own_sets import _own

    tells = {"best": 1.8, "copier": 2.0, "oracle": 0.5}
    base = {"predictable": {"best": 0.0, "copier": 1.8, "oracle": 0.3},
            "shifted": {"best": 0.0, "copier": 2.2, "oracle": 0.6},
            "shorter": {"best": 1.5, "copier": 1.6, "oracle": 0.2}, "longer": tells}
    losses = {"predictable": 0.2, "shifted": 0.3, "shorter": 1.0, "longer": 0.5}
    assert mechanism_label(losses, base) == "content"
    assert mechanism_verdict(losses, base).startswith("content-based")
    assert mechanism_label({**losses, "longer": 1.75}, base) == "partial"
    assert mechanism_label({**losses, "shifted": 2.15}, base) == "partial"  # fails a shifted start
    assert mechanism_label({**losses, "shorter": 1.45, "longer": 1.75}, base) == "position"
    assert "a fixed offset back" in mechanism_verdict({**losses, "shorter": 1.45, "longer": 1.75}, base)
    explained = {**base, "shorter": {"best": 0.4, "copier": 1.6, "oracle": 0.2}}  # copying back solves it
    assert panel.telling(_own(explained), ["shorter", "longer"]) == ["longer"]
    assert mechanism_label(losses, explained) == "undecided"  # one set left: no label on it
    assert mechanism_verdict(losses, explained).startswith("undecided")
    assert mechanism_label(losses, base, learning=True) == "still learning"
    assert mechanism_label({k: base[k]["copier"] for k in base}, base) == "untrained"
    assert mechanism_label({k: base[k]["best"] for k in base}, base) != "content"  # the predictors


def test_the_fingerprint_names_the_algorithm_a_run_agrees_with(scored):
    """A run that IS one of the candidate algorithms agrees with it wherever it has one likeliest
    letter (a tie earns a share) and is named by it (induction, or a member of the null family);
    an untrained model's row carries the
    fingerprint columns and no causal share (it has no advantage to remove)."""
    from toymech.studies.induction.map_measure import fingerprint, map_row

    _, cells = scored
    task, sets, preds, base = cells["varied"]
    shown = {k: b for k, b in sets.items() if k != "train"}
    for name in ("oracle", "recency", "attention"):
        mine = {k: preds[k][name] for k in shown}
        said = fingerprint(mine, preds, shown, [4, 6, 9], V)
        assert said["fingerprint"] == ("induction" if name == "oracle" else name)
        shares = {k: v for k, v in said.items() if k.startswith("agreement.")}
        assert said["fingerprint_agreement"] == max(shares.values()) > 0.5
        assert set(said) >= {"agreement.induction", "agreement.copy_9_back", "agreement.copier"}
    model = build_model(experiments.get("induction-2l", "smoke", 3).model, "cpu").eval()
    row = map_row(model, "smoke", 3)
    assert row["state"] == "untrained" and row["label"] == "" and 0 <= row["fingerprint_agreement"] <= 1
    assert math.isnan(row["key_resample_share.longer"]) and math.isnan(row["half_step"])
    assert row["beyond_baseline.low"] <= row["beyond_baseline"] <= row["beyond_baseline.high"]
    assert row["bar.longer"] in panel.MEMBERS and row["oracle.longer"] < row["null.longer.copier"]
