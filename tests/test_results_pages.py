"""The results pages (``toymech results --pages``, ``report.pages``), generated from small
synthetic records and map tables: the finding computed from them (and saying that nothing holds
on a scorecard at chance and a map of untrained runs), stable anchors without seed lists, the
figures as plotly JSON, the command and its cost; a rebuild replaces what it wrote and nothing
else; and the pages shipped in docs/results/ are the ones the shipped data give."""

from __future__ import annotations

import functools
import importlib
import json
from pathlib import Path

import pandas as pd
import pytest

from toymech.maps.ledger import ROW_HASH, row_hash
from toymech.report import pages, results
from toymech.studies import protocol

ROOT = Path(__file__).resolve().parents[1]
CELLS = [("6", "0"), ("6", "0-3"), ("4-8", "0"), ("4-8", "0-3")]


@functools.cache
def _key(block_len: str, offset: str, seed: int, d_model: str | None = None) -> str:
    from toymech.studies import induction

    knobs = {"block_len": block_len, "offset": offset}
    knobs.update({"d_model": d_model} if d_model else {})
    size = induction.STUDY.with_knobs("smoke", knobs)
    return induction.STUDY.named_experiments["induction-2l"].make(size, seed).key("")


def _map(labels: dict, state: str = "learned", **columns) -> pd.DataFrame:
    """A table as ``toymech map`` writes it (``columns``: values set in every row), each row
    with its hash."""
    rows = [{"study": "induction", "experiment": "induction-2l",
                          "knob.block_len": b, "knob.offset": o, "seed": s, "size": "smoke",
                          "zoo_key": _key(b, o, s), "commit": "abc", "status": "ok",
                          "state": state, "beyond_baseline": 0.3 if labels[(b, o)] == "content"
                          else -0.5, "label": labels[(b, o)] if state == "learned" else ""}
            for b, o in CELLS for s in (3, 4, 5)]
    rows = [{**row, **columns} for row in rows]
    return pd.DataFrame([{**row, ROW_HASH: row_hash(row)} for row in rows])


def _record(card: dict, size: str = "paper", **extra) -> dict:
    return {"kind": "scorecard", "notebook": "01_induction_repeated_blocks", "study": "induction",
            "title": "Induction heads on repeated letter blocks", "size": size, "variant": {},
            "seeds": [3, 4, 5], "command": "toymech report --size paper --cache <zoo> --out <out> "
            "notebooks/01_induction_repeated_blocks.ipynb", "commit": "0123456789ab",
            "date": "2026-12-05 07:55:15 UTC", "machine": {"cores": 2, "cuda": False,
            "reference_steps_per_s": 34.4, "torch": "2.13.0+cpu", "device": "cpu"},
            "wall_s": 2254, "core_s": 4171, "reference_steps": 77538,
            "zoo": {"trained": 30, "loaded": 0}, "scorecard": card, **extra}


def _card(numbers: str, size: str = "paper") -> dict:
    """The induction study's scorecard at ``size`` on its ``source_like`` or ``at_chance``
    numbers (the study's own claims module), over three seeds."""
    study = protocol.study("induction")
    cl = importlib.import_module("toymech.studies.induction.claims")
    n = cl.source_like() if numbers == "source" else cl.at_chance(cl.source_like())
    seeds = list(study.seeds_of(size, 0, 3))
    card = study.scorecard([n] * len(seeds), size, seeds).reset_index()
    card = card.rename(columns={card.columns[0]: "claim"})  # the claim is the frame's index
    return {"columns": list(card.columns), "rows": card.astype(str).values.tolist()}


def _site(tmp_path: Path, card: dict, labels: dict, state: str = "learned") -> dict[str, str]:
    data, maps = tmp_path / "data", tmp_path / "maps"
    data.mkdir()
    maps.mkdir()
    rec = _record(card)
    (data / results.data_name(rec)).write_text(results.data_text(rec))
    _map(labels, state).to_csv(maps / "s1-capacity-smoke-cpu.csv", index=False)
    return pages.build_pages(data, maps, specs=ROOT / "specs" / "maps")


def test_a_page_holds_the_finding_figure_table_command_and_cost(tmp_path):
    labels = {("6", "0"): "position", ("6", "0-3"): "partial", ("4-8", "0"): "content",
              ("4-8", "0-3"): "content"}
    card = _card("source")
    files = _site(tmp_path, card, labels)
    page = files["induction.md"]
    counts = pages.verdict_counts(card)
    held = sum(n for w, n in counts.items() if w.startswith(("reproduced", "holds")))
    assert held and f"At `paper` (3 seeds, commit `0123456`): {held} of the" in page
    assert "on the map `s1-capacity` the label 'content' holds on every seed in 2 of its 4 cells" \
        in files["index.md"]
    assert "(results-induction-paper)=" in page and "(results-induction-map-s1-capacity)=" in page
    assert not any("3-4-5" in line for line in page.splitlines() if line.startswith("("))
    assert "`toymech report --size paper --cache <zoo> --out <out> notebooks/" in page
    assert "37 min 34 s wall; 4,171 core-s; 77,538 reference steps" in page
    assert "`toymech map specs/maps/s1-capacity.yaml`" in page  # the spec that rebuilds the map
    for row in card["rows"]:  # every claim in full
        assert results.markdown_table(["c"], [[row[0]]])[2] in page
    figures = {k: json.loads(v) for k, v in files.items() if k.startswith("figures/")}
    assert "figures/induction-map-s1-capacity-smoke-cpu.json" in figures
    assert "figures/induction-scorecard-paper.json" in figures
    for fig in figures.values():
        assert fig["data"] and "layout" in fig
    for rel in ("_induction-finding.md", "_induction-rerun.md", "_headlines.md"):
        assert pages.GENERATED in files[rel]
    assert "```{toymech-figure} /results/figures/induction-map-s1-capacity-smoke-cpu.json" \
        in files["_induction-finding.md"]


def test_at_chance_and_untrained_the_finding_says_nothing_holds(tmp_path):
    labels = {c: "content" for c in CELLS}  # the labels a rule would give, had the runs learned
    files = _site(tmp_path, _card("chance"), labels, state="untrained")
    page = files["induction.md"]
    assert "At `paper` (3 seeds, commit `0123456`): none of the" in page
    assert "on the map `s1-capacity` the label 'content' holds on no seed of any of its 4 cells" \
        in files["index.md"]
    assert "Label 'content' on every seed in 0 of 4 cells" in page
    # and a study with no record and no map says so
    assert "Birth of a Transformer: a memory viewpoint: nothing recorded yet." in files["index.md"]


def test_counts_say_when_nothing_was_judged():
    below = {"columns": ["claim", "verdict"], "rows": [["a", "below the source's setting: x"],
                                                       ["b", "not measured"]]}
    assert pages.counts_sentence(below).startswith("none of its 2 claims is judged at this setting")
    mixed = {"columns": ["claim", "verdict"], "rows": [["a", "reproduced"], ["b", "mixed"],
                                                       ["c", "below the source's setting"]]}
    assert pages.counts_sentence(mixed).startswith("1 of the 2 claims judged hold, of 3")


def test_a_rebuild_replaces_its_own_files_and_nothing_else(tmp_path):
    labels = {c: "content" for c in CELLS}
    data, maps, out = tmp_path / "data", tmp_path / "maps", tmp_path / "out"
    data.mkdir()
    maps.mkdir()
    _map(labels).to_csv(maps / "s1-a.csv", index=False)
    pages.write_pages(data, maps, out, specs=ROOT / "specs" / "maps", png=False)
    assert (out / "figures" / "induction-map-s1-a.json").is_file()
    (out / "mine.md").write_text("# my notes\n")
    (out / "figures" / "mine.txt").write_text("mine")
    (maps / "s1-a.csv").rename(maps / "s1-b.csv")
    pages.write_pages(data, maps, out, specs=ROOT / "specs" / "maps", png=False)
    assert not (out / "figures" / "induction-map-s1-a.json").exists()  # no longer generated
    assert (out / "figures" / "induction-map-s1-b.json").is_file()
    assert (out / "mine.md").read_text() == "# my notes\n"
    assert (out / "figures" / "mine.txt").exists()


def test_a_table_that_fails_its_check_writes_nothing(tmp_path):
    labels = {c: "content" for c in CELLS}
    maps, out = tmp_path / "maps", tmp_path / "out"
    maps.mkdir()
    _map(labels, zoo_key="0123456789abcdef").to_csv(maps / "s1-a.csv", index=False)
    with pytest.raises(ValueError, match="s1-a.csv"):
        pages.write_pages(tmp_path / "none", maps, out, png=False)
    assert not out.exists()


def test_the_scorecard_figure_shows_each_claims_share_of_agreeing_seeds():
    from toymech.plots.scorecard import agreeing, scorecard_figure

    assert agreeing("7/10") == (7, 10) and agreeing("0/0 (3 not measured)") is None
    fig = scorecard_figure(["a", "b", "c"], ["3/3", "1/4", "0/0 (3 not measured)"],
                           ["reproduced", "mixed", "not measured"])
    shares = {t.name: list(t.x) for t in fig.data}
    assert shares == {"reproduced": [1.0], "mixed": [0.25], "not measured": [0.0]}
    assert list(fig.data[2].text) == ["none judged"]


def test_the_shipped_pages_are_the_ones_the_shipped_data_give():
    """docs/results/ as ``toymech results --pages`` writes it from docs/results/data and
    docs/maps: after a new record or map table, run that command."""
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        files = pages.build_pages()
    finally:
        os.chdir(cwd)
    out = ROOT / "docs" / "results"
    stale = [rel for rel, text in files.items()
             if not (out / rel).is_file() or (out / rel).read_text(encoding="utf-8") != text]
    assert not stale, f"run: toymech results --pages ({stale[:5]})"


def test_a_maps_cost_is_shown_only_for_the_table_it_was_measured_on(tmp_path):
    import hashlib

    labels = {c: "content" for c in CELLS}
    data, maps = tmp_path / "data", tmp_path / "maps"
    data.mkdir()
    maps.mkdir()
    table = maps / "s1-a.csv"
    _map(labels).to_csv(table, index=False)
    cost = {"kind": "map", "map": "s1-a", "command": "toymech map specs/maps/s1-a.yaml",
            "wall_s": 754, "core_s": 1346, "machine": {"cores": 2, "cuda": False},
            "table_sha256": hashlib.sha256(table.read_bytes()).hexdigest()}
    (data / results.data_name(cost)).write_text(results.data_text(cost))
    page = pages.build_pages(data, maps)["induction.md"]
    assert "- measured: 12 min 34 s wall; 1,346 core-s" in page
    _map(labels, commit="def").to_csv(table, index=False)  # the map ran again
    page = pages.build_pages(data, maps)["induction.md"]
    assert "1,346 core-s" not in page and "- measured: not recorded with the table" in page


def _wide_map() -> pd.DataFrame:
    """A map of 12 cells (block_len x offset x d_model): 'content' on every seed where the
    block length varies at a width of 32 or 64, 'position' where it is fixed; at width 16 no
    run carries a label (still learning at a fixed length, diverged at a varied one)."""
    rows = []
    for (b, o), d, s in ((cell, d, s) for cell in CELLS for d in ("16", "32", "64")
                         for s in (3, 4, 5)):
        learned = d != "16"
        rows.append({"study": "induction", "experiment": "induction-2l", "knob.block_len": b,
                     "knob.offset": o, "knob.d_model": d, "seed": s, "size": "smoke",
                     "zoo_key": _key(b, o, s, d), "commit": "abc",
                     "status": "ok" if learned or b == "6" else "diverged",
                     "state": "learned" if learned else "still learning",
                     "beyond_baseline": 0.3 if learned else float("nan"),
                     "label": ("content" if "-" in b else "position") if learned else ""})
    return pd.DataFrame([{**row, ROW_HASH: row_hash(row)} for row in rows])


def test_a_maps_finding_counts_a_large_group_of_cells_and_names_none_of_them(tmp_path):
    """A finding bullet stays short however many cells the map has: counts per group, the runs
    without a label counted by state, the fewest seeds and the interval rule; a cell is named
    only in a group of at most two (``NAMED_AT_MOST``), and the page's table lists every one."""
    from toymech.display.prose import NAMED_AT_MOST
    from toymech.maps.summary import cell_groups

    data, maps = tmp_path / "data", tmp_path / "maps"
    data.mkdir()
    maps.mkdir()
    table = _wide_map()
    table.to_csv(maps / "s1-capacity-smoke-cpu.csv", index=False)
    files = pages.build_pages(data, maps, specs=ROOT / "specs" / "maps")
    (bullet,) = [line for line in files["_induction-finding.md"].splitlines()
                 if line.startswith("- Map `s1-capacity`")]
    assert len(bullet.split()) <= 50, bullet
    assert ("Label 'content' on every seed in 4 of 12 cells, on none in 8, runs without a "
            "label: 6 still learning, 6 diverged, in 4 cells; at least 3 seeds per cell") in bullet
    groups = cell_groups(table)
    assert len(groups) == 12 and NAMED_AT_MOST < 4
    assert not any(c.where() in bullet for c in groups)  # every group here holds 4 cells or more
    page = files["induction.md"]
    for c in groups:  # the table on the results page names each cell with its share
        k = c.knobs
        assert (f"| {k['block_len']} | {k['offset']} | {k['d_model']} | "
                f"{c.share_text('content')}") in page
    # a group of at most two cells is named: here the two cells whose runs diverged
    few = table[~((table["knob.d_model"] == "16") & (table["knob.block_len"] == "6"))]
    few.to_csv(maps / "s1-capacity-smoke-cpu.csv", index=False)
    bullet = next(line for line in pages.build_pages(data, maps)["_induction-finding.md"]
                  .splitlines() if line.startswith("- Map `s1-capacity`"))
    assert ("on none in 6, runs without a label: 3 diverged in block_len 4-8, offset 0, "
            "d_model 16; 3 diverged in block_len 4-8, offset 0-3, d_model 16;") in bullet


def test_a_scorecards_shared_verdict_clause_is_said_once_above_its_table(tmp_path):
    """The verdict column holds the verdict words; what every row short of the source's setting
    shares (the setting's gap, the scaled caveat) is one sentence above the table, said once."""
    from toymech.report.study_results import shared_verdicts
    from toymech.studies.claims import BELOW, SCALED_CAVEAT, verdict_parts

    card = _card("source", size="default")
    at = card["columns"].index("verdict")
    parts = [verdict_parts(r[at]) for r in card["rows"]]
    gap = parts[0].gaps[0]  # the study's own gap at default ("steps ... vs the source's ...")
    assert all(gap in p.gaps for p in parts) and sum(bool(p.scaled_says) for p in parts) > 1
    data = tmp_path / "data"
    data.mkdir()
    rec = _record(card, size="default")
    (data / results.data_name(rec)).write_text(results.data_text(rec))
    page = pages.build_pages(data, None)["induction.md"]
    section = page.split("### At `default`")[1].split("\n## ")[0]
    assert section.count(gap) == 1 and section.count(SCALED_CAVEAT) == 1
    table = [line for line in section.splitlines() if line.startswith("| ")][2:]
    assert len(table) == len(card["rows"])
    for line, p in zip(table, parts):
        cell = line.rstrip(" |").rsplit(" | ", 1)[1]
        assert cell.startswith(p.word.removesuffix(" (scaled)")) and len(cell.split()) <= 12
        assert (BELOW in cell) == (p.word == BELOW)
    # rows that differ keep what differs; a command two rows name is said once
    reach = "reached by `./run.sh report --size paper` (hours)"
    rows = [["a", (f"{BELOW}: steps 400 vs the source's 10,000; width 64 vs the source's "
                   f"1,024; {reach}")],
            ["b", f"{BELOW}: steps 400 vs the source's 10,000; {reach}"],
            ["c", f"{BELOW}: steps 400 vs the source's 10,000; no size of ours reaches it"],
            ["d", "not measured"]]
    said, short = shared_verdicts({"columns": ["claim", "verdict"], "rows": rows})
    assert said.count("steps 400 vs the source's 10,000") == 1 and said.count(reach) == 1
    assert "unless it names another" in said
    assert [r[1] for r in short] == [f"{BELOW}: width 64 vs the source's 1,024", BELOW,
                                     f"{BELOW}; no size of ours reaches it", "not measured"]
    assert shared_verdicts({"columns": ["claim", "verdict"], "rows": rows[3:]}) == ("", rows[3:])
