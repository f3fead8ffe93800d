"""A map's page (``toymech map GRID --report``), built from small hand-made tables (no training):
its finding, the figure's values (share of seeds with the label, median number, "held of runs",
each seed on hover, the source's setting), the line that opens a cell's runs, a null map that
shows no mechanism, the executed page listed in the index, offline, every share with its exact
interval, and study 1's prediction from Kawata et al. (2025) judged pair by pair on the shipped
map and on hand-made ones."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pandas as pd
import pytest

from toymech import maps
from toymech.analysis.exact import interval_text
from toymech.maps.figure import SOURCE_NAME
from toymech.maps.page import MapPage, build_map_report, open_line
from toymech.report import external_loads
from toymech.studies.induction.predictions import KAWATA, KAWATA_SOURCE
from toymech.studies.predictions import (
    AGAINST_VERDICT,
    CONSISTENT,
    UNDECIDED,
    UNJUDGED,
    MapPrediction,
)


def map_block(path: Path) -> tuple[str, str]:
    """(the table's name, the results page of its study) generated from the table's folder
    (``report.pages``: the map's section with its finding, cells and predictions)."""
    from toymech.report.pages import build_pages

    files = build_pages(data_dir=path.parent / "no-records", maps=path.parent)
    return path.stem, files["induction.md"]


CELLS = [("6", "0"), ("6", "0-3"), ("4-8", "0"), ("4-8", "0-3")]
# per cell: the labels of seeds 3, 4, 5 and their test losses
LABELS = {("6", "0"): ["position"] * 3, ("6", "0-3"): ["neither"] * 3,
          ("4-8", "0"): ["content", "content", "position"], ("4-8", "0-3"): ["content"] * 3}
LOSSES = {("6", "0"): [1.0, 2.0, 3.0], ("6", "0-3"): [3.0, 3.1, 3.2],
          ("4-8", "0"): [0.5, 0.7, 0.9], ("4-8", "0-3"): [0.2, 0.3, 0.4]}


@functools.cache
def _key(block_len: str, offset: str, seed: int) -> str:
    """The zoo key of the run a row names (rows read back are checked against it)."""
    from toymech.studies import induction

    size = induction.with_knobs("smoke", {"block_len": block_len, "offset": offset})
    return induction.STUDY.named_experiments["induction-2l"].make(size, seed).key("")


def _table(labels=LABELS) -> pd.DataFrame:
    rows = [{"experiment": "induction-2l", "knob.block_len": b, "knob.offset": o, "seed": s,
             "size": "smoke", "zoo_key": _key(b, o, s), "commit": "abc", "status": "ok",
             "loss.test": LOSSES[(b, o)][i], "label": labels[(b, o)][i]}
            for b, o in CELLS for i, s in enumerate((3, 4, 5))]
    return pd.DataFrame(rows)


def test_page_opens_with_the_finding_from_the_table():
    page = MapPage.of(_table())
    assert page.label == "content" and page.number == "loss.test"  # the study's MAP_LABEL
    assert page.finding == maps.finding(_table(), "content")
    assert page.finding.startswith("Label 'content' on every seed in 1 of 4 cells "
                                   "(block_len 4-8, offset 0-3: 3 of 3 [0.29, 1.00]), on some "
                                   "seeds in 1 (block_len 4-8, offset 0: 2 of 3 [0.09, 0.99]), "
                                   "on none in 2 (block_len 6, offset 0: 0 of 3 [0.00, 0.71]; ")


def test_heatmap_colour_is_the_share_and_text_the_median_and_seeds():
    page = MapPage.of(_table())
    fig = page.figure()
    heat = [t for t in fig.data if t.type == "heatmap"]
    assert len(heat) == 1  # two knobs: one panel
    (h,) = heat
    assert list(h.x) == ["6", "4-8"] and list(h.y) == ["0", "0-3"]
    assert [list(r) for r in h.z] == [[0.0, pytest.approx(2 / 3)], [0.0, 1.0]]
    assert h.text[0][1] == "0.7<br>2 of 3 [0.09, 0.99]"  # the share's exact interval
    assert h.text[1][0] == "3.1<br>0 of 3 [0.00, 0.71]"
    assert h.text[0][0] == "2<br>0 of 3 [0.00, 0.71]"  # the median of 1, 2, 3
    hover = h.customdata[0][1]
    assert "seed 5: position, loss.test 0.9" in hover and "seed 3: content" in hover
    assert 'toymech.explore("induction-2l", size="smoke", seed=3, variant={"block_len": "4-8", ' \
           '"offset": "0"})' in hover
    star = [t for t in fig.data if t.name == SOURCE_NAME]
    assert len(star) == 1 and (star[0].x[0], star[0].y[0]) == ("6", "0")  # the post's setting
    (box,) = fig.layout.shapes  # outlined: block_len 6 is column 0, offset 0 row 0
    assert (box.x0, box.x1, box.y0, box.y1) == (-0.5, 0.5, -0.5, 0.5)
    shown = page.cell_table()
    assert list(shown["seeds 'content'"]) == ["0 of 3 [0.00, 0.71]", "0 of 3 [0.00, 0.71]",
                                              "2 of 3 [0.09, 0.99]", "3 of 3 [0.29, 1.00]"]
    assert page.cells["low"].tolist()[-1] == pytest.approx(0.025 ** (1 / 3))


def test_a_null_map_shows_no_mechanism():
    null = {cell: ["neither"] * 3 for cell in CELLS}
    page = MapPage.of(_table(null))
    assert "every seed in 0 of 4 cells, on none in 4" in page.finding
    (h,) = [t for t in page.figure().data if t.type == "heatmap"]
    assert all(v == 0.0 for row in h.z for v in row)


def test_one_knob_is_a_curve_and_a_third_knob_facets():
    one = _table()[lambda t: t["knob.offset"] == "0"].drop(columns="knob.offset")
    fig = MapPage.of(one).figure()
    assert fig.data[0].type == "scatter" and list(fig.data[0].y) == [0.0, pytest.approx(2 / 3)]
    assert fig.data[0].text[1] == "0.7<br>2 of 3 [0.09, 0.99]"
    bars = fig.data[0].error_y  # the exact interval around each share
    assert list(bars.arrayminus) == pytest.approx([0.0, 2 / 3 - 0.0943], abs=1e-3)
    assert list(bars.array) == pytest.approx([0.708, 0.992 - 2 / 3], abs=1e-3)
    three = pd.concat([_table().assign(**{"knob.mlp": v}) for v in ("no", "yes")])
    page = MapPage.of(three)
    heat = [t for t in page.figure().data if t.type == "heatmap"]
    assert page.dims == ["block_len", "offset", "mlp"] and len(heat) == 2  # a panel per mlp


def test_the_open_line_opens_the_cells_run():
    """The line is a call of ``toymech.explore`` whose arguments build the cell's experiment
    (the variant applied: not the source's)."""
    import ast

    from toymech import experiments

    line = open_line("induction-2l", {"block_len": "4-8"}, "smoke", 3)
    assert line == 'toymech.explore("induction-2l", size="smoke", seed=3, ' \
                   'variant={"block_len": "4-8"})'
    call = ast.parse(line).body[0].value
    assert ast.unparse(call.func) == "toymech.explore"
    kw = {k.arg: ast.literal_eval(k.value) for k in call.keywords}
    exp = experiments.get(ast.literal_eval(call.args[0]), **kw)
    assert exp.to_dict() != experiments.get("induction-2l", size="smoke", seed=3).to_dict()


def test_map_page_is_built_and_listed_in_the_index(tmp_path):
    path = tmp_path / "maps" / "s1-demo.csv"
    path.parent.mkdir()
    _table().to_csv(path, index=False)
    entry = build_map_report(path, tmp_path / "reports")
    assert entry.ok, entry.error
    assert (entry.size, entry.seed, entry.seeds) == ("smoke", 3, "3 (3, 4, 5)")
    html = (tmp_path / "reports" / "map-s1-demo.html").read_text()
    assert maps.finding(_table(), "content").split(" (")[0] in html
    assert "2 of 3 [0.09, 0.99]" in html and "toymech.explore(" in html
    assert "Predictions from other work" in html and CONSISTENT in html
    assert "in the predicted direction" in html  # the pairs, each with its outcome
    assert not external_loads(html)
    index = json.loads((tmp_path / "reports" / "index.json").read_text())
    assert [r["html"] for r in index] == ["map-s1-demo.html"]
    assert "map-s1-demo.html" in (tmp_path / "reports" / "index.html").read_text()


def test_results_pages_list_each_maps_finding_and_cells(tmp_path, capsys):
    """``toymech results --pages --maps DIR``: a section per map table of the folder (a sweep's
    ``.runs.csv`` beside it is not one) on its study's page, with the map's finding, a row per
    cell and its figure."""
    from toymech.cli import main

    folder = tmp_path / "zoo" / "maps"
    folder.mkdir(parents=True)
    _table().to_csv(folder / "s1-demo.csv", index=False)
    pd.DataFrame({"trial": [0]}).to_csv(folder / "s1-demo.runs.csv", index=False)
    site = tmp_path / "site"
    assert main(["results", "--pages", "--maps", str(folder), "--data", str(tmp_path / "none"),
                 "--out", str(site)]) == 0
    text = (site / "induction.md").read_text()
    assert text.count("### Map `") == 1 and "### Map `s1-demo`" in text
    assert maps.finding(_table(), "content") in text
    assert "| 4-8 | 0 | 2 of 3 [0.09, 0.99] | 2 content, 1 position | 0.7 | no |" in text
    assert "| 6 | 0-3 | 0 of 3 [0.00, 0.71] | 3 neither | 3.1 | no |" in text
    assert (site / "figures" / "induction-map-s1-demo.json").is_file()
    assert main(["results", "--pages", "--maps", str(tmp_path / "nothing"), "--data",
                 str(tmp_path / "none"), "--out", str(tmp_path / "site2")]) != 0
    assert "--maps=" in capsys.readouterr().err and not (tmp_path / "site2").exists()


def test_study_3s_map_reads_its_accuracy_and_label():
    """A study-3 table: the label is ``solved`` (its MAP_LABEL) and the number its accuracy,
    not the width before it."""
    rows = [{"experiment": "rt-modular_addition-random", "knob.n_layers": n, "seed": s,
             "size": "smoke", "status": "ok", "task": "modular_addition", "mode": "random",
             "width": 16, "acc": acc, "chance": 0.5, "solved": "yes" if acc > 0.9 else "no",
             "label": "solved" if acc > 0.9 else "not solved"}
            for n, accs in (("1", (0.95, 0.4)), ("2", (0.99, 0.97))) for s, acc in zip((3, 4), accs)]
    page = MapPage.of(pd.DataFrame(rows))
    assert (page.label, page.number, page.dims) == ("solved", "acc", ["n_layers"])
    assert page.cells["seeds"].tolist() == ["1 of 2 [0.01, 0.99]", "2 of 2 [0.16, 1.00]"]
    assert page.cells["median"].tolist() == [pytest.approx(0.675), pytest.approx(0.98)]
    assert page.source == {"n_layers": "2"}


# a study-1 table written before the states and the panel (rows without a ``state``)
SHIPPED = Path(__file__).resolve().parent / "data" / "maps_before" / "s1-content-default-gpu.csv"


def _judged(table):
    """(verdict, counts) of the Kawata prediction on ``table``, through the page's rows."""
    (row,) = MapPage.of(table).predictions.to_dict("records")
    assert row["source"] == KAWATA_SOURCE and row["prediction"] == KAWATA.statement
    assert "reproduc" not in " ".join(map(str, row.values())).lower()  # judged, never reproduced
    return row["on our map"], row["counts"]


def _pairs(table):
    """(outcome, predicted higher, other) of each pair the Kawata prediction compares."""
    return [tuple(r) for r in MapPage.of(table).pairs[["outcome", "predicted higher", "other"]]
            .itertuples(index=False)]


def test_kawata_prediction_is_undecided_on_a_map_of_ties():
    """The shipped study-1 map from before the states (36 runs): no 2-layer cell is labelled
    content and every fixed-start cell is position, so every pair ties (at the floor for content,
    at the ceiling for the shortcut): the map cannot show the prediction either way."""
    table = MapPage.read(SHIPPED).table
    verdict, counts = _judged(table)
    assert verdict == UNDECIDED
    assert counts.startswith("varied lengths give content: 4 pairs (4 tie at the floor), "
                             "stratified one-sided exact p = 1;")
    assert "gives position: 2 pairs (2 tie at the ceiling)" in counts
    assert ("tie at the floor", "(block_len 4-8, offset 0): 0 of 3 [0.00, 0.71]",
            "(block_len 6, offset 0): 0 of 3 [0.00, 0.71]") in _pairs(table)


def test_kawata_prediction_is_consistent_where_varied_is_content_and_fixed_position():
    labels = {("6", "0"): ["position"] * 3, ("6", "0-3"): ["position", "position", "neither"],
              ("4-8", "0"): ["content", "content", "position"], ("4-8", "0-3"): ["content"] * 3}
    verdict, counts = _judged(_table(labels))
    assert verdict == CONSISTENT
    assert ("in the predicted direction", "(block_len 4-8, offset 0): 2 of 3 [0.09, 0.99]",
            "(block_len 6, offset 0): 0 of 3 [0.00, 0.71]") in _pairs(_table(labels))
    # the shortcut conjunct is judged at a fixed start only: a random-start fixed cell without
    # the shortcut changes nothing, and the page says the pair was left out
    other = _table({**labels, ("6", "0-3"): ["neither"] * 3})
    assert _judged(other)[0] == CONSISTENT and len(_pairs(other)) == 3
    assert "Left out: the shortcut conjunct at a random start" in _judged(other)[1]
    # reversed: varied cells position, fixed cells content: against
    reversed_ = {("6", "0"): ["content"] * 3, ("6", "0-3"): ["content"] * 3,
                 ("4-8", "0"): ["position"] * 3, ("4-8", "0-3"): ["position"] * 3}
    assert _judged(_table(reversed_))[0] == AGAINST_VERDICT


def test_kawata_prediction_is_undecided_on_a_map_of_learned_runs_without_the_mechanism():
    verdict, counts = _judged(_table({cell: ["partial"] * 3 for cell in CELLS}))
    assert verdict == UNDECIDED and "tie at the floor" in counts


@pytest.mark.parametrize("state", ["untrained", "still learning", "budget exhausted",
                                   "undecided"])
def test_the_null_world_gives_no_label_and_no_judged_prediction(state):
    """A map whose runs all carry a state without a label: no cell holds a label, the finding
    says so by state, and the prediction is not judged (it names the states)."""
    table = _table().assign(state=state, label=None)
    verdict, counts = _judged(table)
    assert verdict == UNJUDGED
    assert counts.startswith("not judged: cells whose runs mostly carry no label:")
    # more cells than a sentence names: counted, their runs summed by state
    assert f"4 cells, 12 of 12 runs without a label (12 {state})" in counts
    cells = maps.summary.cell_groups(table)
    assert all(c.held(lab) == 0 for c in cells for lab in ("content", "position", "partial"))
    assert f"runs without a label: 12 {state}, in 4 cells" in maps.finding(table, "content")


def test_a_prediction_is_judged_only_on_cells_whose_runs_mostly_learned():
    """Varied cells content and fixed cells position, but one fixed cell mostly still learning:
    that pair is left out and named, the rest judged."""
    labels = {("6", "0"): ["position"] * 3, ("6", "0-3"): ["position"] * 3,
              ("4-8", "0"): ["content"] * 3, ("4-8", "0-3"): ["content"] * 3}
    table = _table(labels)
    late = (table["knob.block_len"] == "6") & (table["knob.offset"] == "0-3") & (table["seed"] != 3)
    table.loc[late, "state"] = "still learning"
    verdict, counts = _judged(table)
    assert verdict == CONSISTENT and len(_pairs(table)) == 2
    assert ("cells whose runs mostly carry no label: (block_len 6, offset 0-3) 2 of 3 without a "
            "label (2 still learning)") in counts


def test_kawata_prediction_is_not_judged_without_its_cells():
    """Only the 1-layer model, or only varied lengths: nothing the rule compares."""
    one_layer = _table().assign(experiment="induction-1l-smeared")
    assert _judged(one_layer)[0] == UNJUDGED
    varied = _table()[lambda t: t["knob.block_len"] == "4-8"]
    assert _judged(varied)[0] == UNJUDGED


def test_the_prediction_is_written_in_the_page_and_the_results_block(tmp_path):
    path = tmp_path / "s1-demo.csv"
    _table().to_csv(path, index=False)
    _, block = map_block(path)
    assert f"({KAWATA_SOURCE}): **{CONSISTENT}**." in block and "reproduc" not in block.lower()
    assert ("  - varied lengths give content: (block_len 4-8, offset 0): 2 of 3 [0.09, 0.99] vs "
            "(block_len 6, offset 0): 0 of 3 [0.00, 0.71]: in the predicted direction, exact "
            "p = 0.2") in block
    view = MapPage.of(_table()).prediction_view().html()
    assert KAWATA_SOURCE in view and CONSISTENT in view
    pairs = MapPage.of(_table()).pair_view().html()
    assert "in the predicted direction" in pairs and "[0.09, 0.99]" in pairs


def test_a_prediction_needs_its_statement_source_and_rule():
    with pytest.raises(ValueError, match=r"^source='' is not allowed: a non-empty string"):
        MapPrediction("x", "a statement", "", KAWATA.rule, "its threshold")
    with pytest.raises(ValueError, match=r"^rule=.* is not allowed"):
        MapPrediction("x", "a statement", "a source", None, "its threshold")
    with pytest.raises(ValueError, match=r"^not_computed='' is not allowed"):
        MapPrediction("x", "a statement", "a source", KAWATA.rule)


def test_a_cell_whose_runs_diverged_says_so_not_only_zero_of_n():
    from pathlib import Path

    from toymech.maps.figure import cell_text
    from toymech.maps.page import cell_frame

    t = maps.read_table(Path(__file__).resolve().parents[1] / "docs" / "maps"
                        / "s2-design-default-cpu.csv")
    cells = cell_frame(t, "in-context head; memories W_O², W_K², W_K¹", "icl_acc")
    bad = cells[(cells["lr"] == "3") & (cells["embeddings"] == "trained")]
    assert len(bad) == 3 and all(s == "0 of 3 [0.00, 0.71] (3 diverged)" for s in bad["seeds"])
    assert all("3 diverged" in cell_text(r) for _, r in bad.iterrows())
    ok = cells[(cells["lr"] == "3") & (cells["embeddings"] == "frozen") & (cells["ff"] == "last")]
    assert ok["seeds"].tolist() == ["3 of 3 [0.29, 1.00]"]
    assert "diverged" not in cell_text(ok.iloc[0])


def test_page_finding_predictions_and_results_read_cells_by_one_rule(tmp_path):
    """A cell with a measured run, a failed, a diverged and a not-measured one (the study could
    not measure it): the page, the per-cell table, the finding, the prediction and the results
    block count the same runs (every seed in the denominator, a label only on measured runs)
    and name the same runs without a label."""
    states = [("ok", "position"), ("failed", "not measured"), ("diverged", "not measured"),
              ("ok", "not measured")]
    rows = [{"experiment": "induction-2l", "knob.block_len": b, "knob.offset": "0", "seed": s,
             "size": "smoke", "zoo_key": _key(b, "0", s), "commit": "abc", "status": status,
             "loss.test": 1.0 if status == "ok" else float("nan"), "label": label}
            for b, cell in (("6", states), ("4-8", [("ok", "content")] * 3 + [("ok", "position")]))
            for s, (status, label) in zip((3, 4, 5, 6), cell)]
    table = pd.DataFrame(rows)
    without = "1 failed, 1 diverged, 1 not measured"
    page = MapPage.of(table, label="content")
    frame = page.cells.set_index("block_len")
    assert frame.loc["6", "seeds"] == f"0 of 4 {interval_text(0, 4)} ({without})"
    assert frame.loc["4-8", "seeds"] == f"3 of 4 {interval_text(3, 4)}"
    assert frame.loc["6", "runs"] == frame.loc["4-8", "runs"] == 4
    per_cell = maps.cells(table).set_index("knob.block_len")
    assert per_cell.loc["4-8", "share content"] == frame.loc["4-8", "share"] == 0.75
    assert per_cell.loc["6", "share position"] == 0.25 and "share not measured" not in per_cell
    assert [per_cell.loc["6", f"runs {s}"] for s in ("failed", "diverged", "not measured")] == [1, 1, 1]
    assert page.finding == maps.finding(table, "content")
    assert (f"on some seeds in 1 (block_len 4-8, offset 0: 3 of 4 {interval_text(3, 4)}), on "
            "none in 1") in page.finding
    assert f"runs without a label: {without} in block_len 6, offset 0" in page.finding
    ((verdict, counts),) = page.predictions[["on our map", "counts"]].itertuples(index=False)
    assert verdict == UNJUDGED  # the fixed cell: 1 of its 4 runs carries a label, not most
    assert counts == ("not judged: cells whose runs mostly carry no label: (block_len 6, offset "
                      f"0) 3 of 4 without a label ({without})")
    path = tmp_path / "s1-states.csv"
    table.to_csv(path, index=False)
    _, block = map_block(path)
    assert page.finding in block and f"0 of 4 {interval_text(0, 4)} ({without})" in block
    assert counts in block


def test_the_phase_diagram_colours_each_cell_by_its_outcome_and_shows_the_gap():
    """Each cell coloured by its commonest outcome (a learned run's label, else its state), the
    colour bar naming them, and the number shown is how far beyond the baseline the runs got."""
    table = _table().assign(beyond_baseline=0.25, state="learned")
    late = table["knob.block_len"] == "6"
    table.loc[late & (table["knob.offset"] == "0"), "state"] = "untrained"
    table.loc[late & (table["knob.offset"] == "0-3"), "state"] = "still learning"
    page = MapPage.of(table)
    assert page.number == "beyond_baseline"
    phases = page.cells.set_index(["block_len", "offset"])["phase"]
    assert phases[("6", "0")] == "untrained" and phases[("6", "0-3")] == "still learning"
    assert phases[("4-8", "0")] == "content" and phases[("4-8", "0-3")] == "content"
    heat = page.figure().data[0]
    assert list(heat.colorbar.ticktext) == ["content", "untrained", "still learning"]
    assert heat.z[list(heat.y).index("0")][list(heat.x).index("6")] == 1.0  # untrained's band
    assert page.cells.set_index(["block_len", "offset"]).loc[("6", "0"), "median"] != \
        page.cells.set_index(["block_len", "offset"]).loc[("6", "0"), "median"]  # no learned run


def test_every_view_counts_each_state_of_run_alike(tmp_path):
    """One table whose runs are in every state (measured; failed and diverged by the sweep; not
    measured; untrained and still learning by the study's ``state``, each with a label it does
    not hold): the page, the per-cell frame, the finding, the prediction and the block that
    ``toymech results --pages`` writes all count every run in the denominator, hold a label only
    on measured runs, and name the same runs without one."""
    from toymech.cli import main
    from toymech.maps.summary import cell_groups

    # (status, label, the study's state)
    fixed = [("ok", "position", "learned"), ("failed", "not measured", None),
             ("diverged", "not measured", None), ("ok", "not measured", None),
             ("ok", "position", "untrained"), ("ok", "position", "still learning")]
    varied = [("ok", "content", "learned")] * 3 + [("ok", "position", "learned"),
                                                   ("ok", "content", "untrained")]
    rows = [{"study": "induction", "experiment": "induction-2l", "knob.block_len": b,
             "knob.offset": "0", "seed": s, "size": "smoke", "zoo_key": _key(b, "0", s),
             "commit": "abc", "status": status,
             "loss.test": 1.0 if status == "ok" else float("nan"), "label": label, "state": state}
            for b, runs in (("6", fixed), ("4-8", varied))
            for s, (status, label, state) in zip(range(3, 9), runs)]
    table = pd.DataFrame(rows)
    without = "1 failed, 1 diverged, 1 not measured, 1 untrained, 1 still learning"
    groups = {c.knobs["block_len"]: c for c in cell_groups(table)}
    assert (groups["6"].n, groups["6"].held("position")) == (6, 1)
    assert (groups["4-8"].n, groups["4-8"].held("content")) == (5, 3)
    assert groups["6"].states_text() == without and groups["4-8"].states_text() == "1 untrained"
    # the page and its per-cell frame
    page = MapPage.of(table, label="content")
    frame = page.cells.set_index("block_len")
    assert frame.loc["6", "seeds"] == f"0 of 6 {interval_text(0, 6)} ({without})"
    assert frame.loc["4-8", "seeds"] == f"3 of 5 {interval_text(3, 5)} (1 untrained)"
    assert frame.loc["4-8", "share"] == 0.6
    # the summary per cell: a state is never a label
    per_cell = maps.cells(table, ("loss.test",)).set_index("knob.block_len")
    assert per_cell.loc["6", "share position"] == pytest.approx(1 / 6)
    assert per_cell.loc["4-8", "share content"] == pytest.approx(3 / 5)
    assert [per_cell.loc["6", f"runs {s}"] for s in
            ("failed", "diverged", "not measured", "untrained", "still learning")] == [1] * 5
    # the finding
    assert page.finding == maps.finding(table, "content")
    assert (f"on some seeds in 1 (block_len 4-8, offset 0: 3 of 5 {interval_text(3, 5)}), on "
            "none in 1") in page.finding
    assert (f"runs without a label: {without} in block_len 6, offset 0; 1 untrained in "
            "block_len 4-8, offset 0") in page.finding
    # the prediction: counted on the same cells
    ((verdict, counts),) = page.predictions[["on our map", "counts"]].itertuples(index=False)
    assert verdict == UNJUDGED  # the fixed cell: 1 of its 6 runs learned, not most
    assert counts == ("not judged: cells whose runs mostly carry no label: (block_len 6, offset "
                      f"0) 5 of 6 without a label ({without})")
    # toymech results --pages: the same finding, cells and counts
    folder = tmp_path / "maps"
    folder.mkdir()
    from toymech.maps.ledger import ROW_HASH, row_hash

    hashed = table.assign(**{ROW_HASH: [row_hash(r) for r in table.to_dict("records")]})
    hashed.to_csv(folder / "s1-states.csv", index=False)  # as toymech writes it: rows hashed
    assert main(["results", "--pages", "--maps", str(folder), "--data", str(tmp_path / "none"),
                 "--out", str(tmp_path / "site")]) == 0
    text = (tmp_path / "site" / "induction.md").read_text()
    assert MapPage.of(table).finding in text  # the study's own label, content
    assert f"| 6 | 0 | 0 of 6 {interval_text(0, 6)} ({without}) |" in text
    assert f"| 4-8 | 0 | 3 of 5 {interval_text(3, 5)} (1 untrained) |" in text
    assert counts in text


def test_where_the_outcome_changes_and_the_causal_evidence_are_computed_from_the_table():
    from toymech.studies.induction.map_measure import map_evidence

    table = _table()
    page = MapPage.of(table)
    assert ("block_len 6 -> 4-8 (at offset 0): position (3 of 3 [0.29, 1.00]) -> content (2 of 3 "
            "[0.09, 0.99])") in page.changes
    assert ("block_len 6 -> 4-8 (at offset 0-3): neither (3 of 3 [0.29, 1.00]) -> content (3 of "
            "3 [0.29, 1.00])") in page.changes
    assert not any(c.startswith("offset 0 -> 0-3 (at block_len 4-8)") for c in page.changes)
    assert maps.summary.changes(table.assign(label="position")) == []  # one outcome: no change
    # the evidence: the panel (and what it left out), then per label within each cell (never
    # pooled over a knob), over the learned runs only; none without learned runs
    measured = table.assign(state="learned", fingerprint="induction", fingerprint_agreement=0.8,
                            panel="shifted 6@6; longer 9@0; left out: far",
                            **{"key_resample_share.longer": 0.8,
                               "query_resample_share.longer": 0.2,
                               "n_heads_removing_most.longer": 2})
    measured.loc[measured["label"] == "position", "key_resample_share.longer"] = 0.1
    measured.loc[measured["label"] == "position", "fingerprint"] = "copy_6_back"
    said = map_evidence(measured)
    assert said.startswith("Judged on the panel shifted 6@6; longer 9@0; left out: far (a set "
                           "left out does not fit the map's shortest sequences).")
    assert ("experiment induction-2l, block_len 4-8, offset 0: content (2 runs): fingerprint "
            "induction 0.80, keys 0.80, queries 0.20, heads 2; position (1 runs): fingerprint "
            "copy_6_back 0.80, keys 0.10") in said
    assert "block_len 4-8, offset 0-3: content (3 runs): fingerprint induction" in said
    assert "content (5 runs)" not in said  # never pooled over the cells
    assert "fingerprint" not in map_evidence(measured.assign(state="untrained"))
    # a map of 1-layer models only has no resample or head columns: fingerprints alone
    one_layer = measured.drop(columns=["key_resample_share.longer",
                                       "query_resample_share.longer",
                                       "n_heads_removing_most.longer"])
    assert "content (2 runs): fingerprint induction 0.80; position" in map_evidence(one_layer)
    assert "keys" not in map_evidence(one_layer) and "resampling" not in map_evidence(one_layer)
    _, block = map_block_of(measured)
    assert said in block and "Where the commonest outcome changes" in block


def test_the_outcome_changes_only_between_neighbouring_values_of_a_knob():
    """Along a numeric knob with three values, only consecutive values are neighbours: 16 -> 64
    is not a change when 32 lies between them (in numeric order, whatever the table's)."""
    rows = [{"experiment": "e", "knob.width": w, "seed": s, "status": "ok", "label": lab,
             "state": "learned"}
            for w, lab in (("64", "solved"), ("16", "not solved"), ("32", "solved"))
            for s in (3, 4)]
    said = maps.summary.changes(pd.DataFrame(rows))
    assert said == ["width 16 -> 32: not solved (2 of 2 [0.16, 1.00]) -> solved (2 of 2 "
                    "[0.16, 1.00])"], said


def map_block_of(table):
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s1-evidence.csv"
        table.to_csv(path, index=False)
        return map_block(path)
def test_a_table_from_a_tree_with_local_changes_says_it_is_not_rebuildable(tmp_path):
    """A run's ``commit`` ends with " + local changes" (``core.source_commit``) when the tree it
    ran from differed from its commit: the page and the results block say the table cannot be
    rebuilt from a commit, and a clean table says which commit rebuilds it."""
    from toymech.maps.page import provenance
    clean = _table()
    dirty = clean.assign(commit=["abc + local changes"] + ["abc"] * (len(clean) - 1))
    assert "Not rebuildable" not in provenance(clean) and "commit abc" in provenance(clean)
    said = provenance(dirty)
    assert said.startswith("Not rebuildable from a commit: 1 of ") and "local changes" in said
    assert "not rebuildable" in provenance(clean.assign(commit="")).lower()
    two = provenance(clean.assign(commit=["def"] + ["abc"] * (len(clean) - 1)))
    assert two.startswith(f"Rows from commits abc ({len(clean) - 1} rows), def (1 rows)"), two
    assert MapPage.of(dirty).provenance == said
    for table, expected in ((dirty, True), (clean, False)):
        path = tmp_path / "s1-demo.csv"
        table.to_csv(path, index=False)
        _, block = map_block(path)
        assert ("Not rebuildable from a commit" in block) is expected, block
    nb = (Path(__file__).resolve().parents[1] / "toymech" / "maps" / "map.ipynb").read_text()
    assert "page.provenance" in nb  # the page shows it beside the finding
