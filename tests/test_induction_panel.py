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
    for task, sets, preds, base in cells.values():
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


def _study1_maps():
    from pathlib import Path

    from toymech.maps import read_table

    maps_dir = Path(__file__).resolve().parents[1] / "docs" / "maps"
    return (read_table(maps_dir / "s1-capacity-default-cpu.csv"),
            read_table(maps_dir / "s1-smeared-default-cpu.csv"))


def _cell(table, block_len, offset, d_model=None):
    rows = table[(table["knob.block_len"].astype(str) == block_len)
                 & (table["knob.offset"].astype(str) == offset)]
    return rows if d_model is None else rows[rows["knob.d_model"].astype(str) == d_model]


def _won(row, sets):
    return [k for k in sets if row[f"loss.{k}"] < row[f"base.{k}"] - panel.MARGIN]


def test_the_record_s_reading_of_the_panel_s_rule_is_the_tables():
    """docs/results.md's study-1 paragraphs (the panel's rule corrected after the first reading,
    what the map answers, Kawata et al., the smeared model): every figure and count they quote,
    recomputed from the shipped tables."""
    capacity, smeared = _study1_maps()
    moved = []
    for name, table in (("capacity", capacity), ("smeared", smeared)):
        fixed = table[table["knob.block_len"].astype(str) == "6"]
        varied = table[table["knob.block_len"].astype(str) == "4-8"]
        assert round(float(fixed["base.shorter"].max()), 2) == 0.47
        assert round(float(varied["base.shorter"].min()), 2) == 1.14
        assert set(fixed["judged_on"]) == {"longer far"} and set(varied["judged_on"]) == {"shorter longer far"}
        # the first reading judged every run on all three sets: only the fixed-length runs
        # that are content now were partial then ("no other label moved")
        for _, row in table[table["state"] == "learned"].iterrows():
            sets = row["judged_on"].split()
            old = _won(row, panel.BLOCK_LENGTH_SETS)
            then = "content" if len(old) == 3 else "position" if not old else "partial"
            if then != row["label"]:
                moved.append((name, str(row["knob.block_len"]), str(row["knob.offset"]),
                              None if "knob.d_model" not in row else str(row["knob.d_model"]),
                              then, row["label"]))
            assert row["label"] == ("content" if len(_won(row, sets)) == len(sets)
                                    else "position" if not _won(row, sets) else "partial")
    assert sorted(set(moved)) == sorted({("capacity", "6", "0-3", "64", "partial", "content"),
                                         ("smeared", "6", "0", None, "partial", "content"),
                                         ("smeared", "6", "0-3", None, "partial", "content")})
    assert len(moved) == 9
    wide = _cell(capacity, "6", "0-3", "64")  # "beyond both predictors by 0.9-1.1 nats"
    assert len(wide) == 3 and round(wide["beyond_baseline"].min(), 1) == 0.9 \
        and round(wide["beyond_baseline"].max(), 1) == 1.1
    # what the map answers: the shortcut at a fixed length and start, content at width 64 with
    # any variety, partial at width 32 (every partial run: 9-letter blocks yes, after the longer
    # start no), content on a minority of the refined cell
    for d in ("32", "64"):
        shortcut = _cell(capacity, "6", "0", d)
        learned = shortcut[shortcut["state"] == "learned"]
        assert len(learned) >= 2 and (learned["label"] == "position").all()
    for b, o in (("6", "0-3"), ("4-8", "0"), ("4-8", "0-3")):
        assert (_cell(capacity, b, o, "64")["label"] == "content").all()
        narrow = _cell(capacity, b, o, "32")
        assert (narrow["label"] != "position").all()
        assert (narrow["label"] == "partial").sum() * 2 > len(narrow)
    refined = _cell(capacity, "4-8", "0-3", "32")
    assert len(refined) == 12 and 0 < (refined["label"] == "content").sum() < 6
    for _, row in capacity[(capacity["label"] == "partial")].iterrows():
        assert str(row["knob.d_model"]) == "32" and "longer" in _won(row, ["longer"]) and not _won(row, ["far"])
    # Kawata et al.: at width 64 with a random start the fixed length is content as often as the varied one
    assert (_cell(capacity, "6", "0-3", "64")["label"] == "content").sum() == \
        (_cell(capacity, "4-8", "0-3", "64")["label"] == "content").sum() == 3
    assert (_cell(capacity, "4-8", "0", "32")["label"] == "content").sum() == 0
    # the smeared model: content everywhere; on fixed blocks 1.2-1.3 nats beyond on the 9-letter
    # sets and about the position copier's 0.47 on the 3-letter set (0.41-0.52)
    assert (smeared["label"] == "content").all() and len(smeared) == 12
    fixed = smeared[smeared["knob.block_len"].astype(str) == "6"]
    assert round(fixed["beyond_baseline"].min(), 1) == 1.2 and round(fixed["beyond_baseline"].max(), 1) == 1.3
    assert round(fixed["loss.shorter"].min(), 2) == 0.41 and round(fixed["loss.shorter"].max(), 2) == 0.52


def test_the_record_s_reading_of_the_causal_evidence_is_the_tables():
    """"Cutting layer 0 out of layer 1's keys costs the content runs the most on the longer
    blocks and the position runs the least, the partial runs in between, while on their own
    sequences content and position runs lose about as much"; the query cut: content above
    position on the longer blocks, below on their own sequences."""
    capacity, _ = _study1_maps()
    learned = capacity[capacity["state"] == "learned"]
    med = learned.groupby("label")[["kcut.train", "kcut.longer", "qcut.train", "qcut.longer"]].median()
    assert med.loc["content", "kcut.longer"] > med.loc["partial", "kcut.longer"] > med.loc["position", "kcut.longer"]
    assert abs(med.loc["content", "kcut.train"] - med.loc["position", "kcut.train"]) < 0.25
    assert med.loc["content", "qcut.longer"] > med.loc["position", "qcut.longer"]
    assert med.loc["content", "qcut.train"] < med.loc["position", "qcut.train"]


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


def test_the_prose_quotes_the_paper_scorecard_s_mechanism_rows():
    """docs/results.md and docs/studies/induction.md quote the two copies-by-content rows of the
    study's `paper` scorecard (median [low, high] beyond the predictors without induction, seeds
    agreeing): recomputed here from the block, so a new run cannot leave the prose behind."""
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    record = (docs / "results.md").read_text(encoding="utf-8")
    block = record.split("<!-- toymech-results 01_induction_repeated_blocks size=paper -->")[1]
    block = block.split("<!-- /toymech-results -->")[0]
    rows = {}
    for who in ("2-layer model", "1-layer smeared model"):
        line = next(x for x in block.splitlines() if x.startswith(f"| {who}: copies by content"))
        cells = [c.strip() for c in line.strip("|").split("|")]
        med, low, high = (float(v) for v in re.match(r"(\S+) \[(\S+), (\S+)\]", cells[2]).groups())
        rows[who] = (med, low, high, cells[4])
    med, low, high, agree = rows["2-layer model"]
    assert med < 0 and agree == "0/10"
    worse = f"{-med:.2f} [{-high:.2f}, {-low:.2f}] nats worse than the better predictor"
    med, low, high, agree = rows["1-layer smeared model"]
    assert med > panel.MARGIN and agree == "10/10"
    beyond = f"{med:.2f} [{low:.2f}, {high:.2f}]"
    page = (docs / "studies" / "induction.md").read_text(encoding="utf-8")
    for text in (" ".join(record.split()), " ".join(page.split())):
        assert worse in text and beyond in text


def test_the_variant_page_quotes_the_variant_scorecard():
    """docs/variants.md quotes the study-1 variant's copies-by-content rows (block_len=4-8,
    offset=0-3 at default) and its count of properties holding on every seed / on none."""
    import re
    from pathlib import Path

    docs = Path(__file__).resolve().parents[1] / "docs"
    record = (docs / "results.md").read_text(encoding="utf-8")
    key = "<!-- toymech-results 01_induction_repeated_blocks size=default variant=block_len=4-8,offset=0-3 -->"
    block = record.split(key)[1].split("<!-- /toymech-results -->")[0]
    page = " ".join((docs / "variants.md").read_text(encoding="utf-8").split())
    cells = {}
    for who in ("2-layer model", "1-layer smeared model"):
        line = next(x for x in block.splitlines() if x.startswith(f"| {who}: copies by content"))
        c = [x.strip() for x in line.strip("|").split("|")]
        cells[who] = (re.match(r"(\S+) \[(\S+), (\S+)\]", c[2]).groups(), c[4])
    (med, low, high), agree = cells["1-layer smeared model"]
    assert f"by {med} [{low}, {high}] nats on its worst set" in page and agree == "3/3"
    (med, low, high), agree = cells["2-layer model"]
    assert f"{med.lstrip('-')} [{high.lstrip('-')}, {low.lstrip('-')}] nats worse" in page and agree == "0/3"
    every = block.count("| 3/3 | holds")
    none = block.count("| 0/3 | does not hold")
    assert f"{every} properties holding on every seed, {none} on none" in page


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
