"""A report run's record as data (``toymech results <report folder>`` -> docs/results/data/):
every scorecard row in full, nothing private, written atomically; a folder that is no report
refused before anything is written; the scaled verdicts set beside the source's setting's."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from toymech.cli import main
from toymech.report import results

ROOT = Path(__file__).resolve().parents[1]


def test_a_command_keeps_nothing_of_the_machine_that_ran_it():
    said = ("toymech report --size paper --cache /work/zoo-paper3 --out=/home/me/rep "
            "notebooks/01_induction_repeated_blocks.ipynb --param x=/tmp/a")
    assert results.public_command(said) == (
        "toymech report --size paper --cache <zoo> --out=<out> "
        "notebooks/01_induction_repeated_blocks.ipynb --param x=<path>")
    assert results.public_command("") == ""
    # a file of the checkout that ran it: the repository's own path, which a reader's clone has
    spec = ROOT / "specs" / "maps" / "s1-capacity.yaml"
    assert results.public_command(f"toymech map {spec} --cache /z") == \
        "toymech map specs/maps/s1-capacity.yaml --cache <zoo>"
    assert results.public_command(f"toymech map {ROOT.parent}/elsewhere.yaml") == \
        "toymech map <path>"


def test_a_folder_that_is_no_report_is_refused_and_nothing_is_written(tmp_path, capsys):
    into = tmp_path / "data"
    into.mkdir()
    assert main(["results", str(tmp_path), "--into", str(into)]) == 2
    assert "has no index.json" in capsys.readouterr().err
    assert list(into.iterdir()) == []
    assert main(["results", "--into", str(into)]) == 2  # no folder at all
    assert main(["results", str(tmp_path), "--into", str(tmp_path / "missing")]) == 2
    assert "--into" in capsys.readouterr().err


def test_a_data_file_that_is_no_record_is_refused_by_name(tmp_path):
    (tmp_path / "mine.json").write_text('{"a": 1}')
    with pytest.raises(ValueError, match="mine.json"):
        results.read_data(tmp_path)
    (tmp_path / "mine.json").write_text("not json")
    with pytest.raises(ValueError, match="mine.json"):
        results.read_data(tmp_path)


@pytest.mark.usefixtures("smoke_reports")
def test_the_record_of_a_finished_report_holds_each_full_scorecard(smoke_reports, tmp_path):
    into = tmp_path / "data"
    into.mkdir()
    assert main(["results", str(smoke_reports.out), "--into", str(into)]) == 0
    records = {r["notebook"]: r for r in results.read_data(into)}
    for entry in smoke_reports.entries:
        name = entry.notebook.rsplit("/", 1)[-1][:-6]
        nb = nbformat.read(smoke_reports.out / entry.executed, as_version=4)
        card = results.scorecard_of(nb)
        assert card and card["rows"], entry.notebook
        rec = records[name]
        assert rec["size"] == "smoke" and rec["study"] and rec["commit"] == entry.commit
        assert [r[0] for r in rec["scorecard"]["rows"]] == [r[0] for r in card["rows"]]
        assert rec["machine"]["reference_steps_per_s"] and rec["wall_s"] > 0
        assert rec["reference_steps"] > 0 and rec["seeds"] and rec["core_s"] > 0
        text = (into / results.data_name(rec)).read_text()
        assert str(smoke_reports.out) not in text and str(tmp_path) not in text
    before = {p.name: p.read_text() for p in into.iterdir()}
    assert main(["results", str(smoke_reports.out), "--into", str(into)]) == 0
    assert {p.name: p.read_text() for p in into.iterdir()} == before  # the same folder: the same


def test_a_variant_has_its_own_record():
    base = {"kind": "scorecard", "notebook": "nb", "size": "default", "variant": {}}
    variant = {**base, "variant": {"block_len": "4-8", "offset": "0-3"}}
    assert results.data_name(base) == "nb-default.json"
    assert results.data_name(variant) == "nb-default-block_len=4-8-offset=0-3.json"
    assert json.loads(results.data_text(variant)) == variant


def test_scaled_verdicts_are_set_beside_the_source_setting_ones():
    cols = ["claim", "ours", "verdict"]
    small = {"size": "default", "scorecard": {"columns": cols, "rows": [
        ["a", "1", "reproduced (scaled: steps 2,000 vs the source's 10,000)"],
        ["b", "2", "not reproduced (scaled: steps 2,000 vs ...)"],
        ["c", "3", "below the source's setting: steps 2,000 vs 10,000"],
        ["d", "4", "mixed (scaled)"],
        ["e", "5", "below the source's setting: steps 2,000 vs 10,000; reached by ...; our "
                   "scaled run says mixed, but no run has shown that the scaled setting gives "
                   "the source's setting's verdict"]]}}
    full = {"size": "paper", "scorecard": {"columns": cols, "rows": [
        ["a", "1", "reproduced"], ["b", "2", "mixed"], ["c", "3", "reproduced"],
        ["e", "5", "mixed"]]}}
    found = results.scaled_comparison(small, full)
    # c was not judged scaled; d has no paper row; e is a scaled claim not yet shown (its
    # verdict reads below, quoting the scaled run's), compared all the same
    assert found["agree"] == 2 and len(found["rows"]) == 3
    assert ["e", "mixed (scaled)", "mixed", "yes"] in found["rows"]
    assert ["a", "reproduced (scaled)", "reproduced", "yes"] in found["rows"]
    assert ["b", "not reproduced (scaled)", "mixed", "no"] in found["rows"]
    assert results.scaled_comparison({**small, "scorecard": None}, full) is None
