"""The results record (``toymech results`` -> docs/results.md): blocks replaced, prose kept, every
scorecard row in full, a record that cannot be updated safely refused."""

from __future__ import annotations

import nbformat
import pytest

from toymech.cli import main
from toymech.report import results


# --- the record -----------------------------------------------------------------------------
def test_updating_a_record_replaces_its_blocks_and_keeps_the_prose():
    text = ("# Results\n\nWhat we saw.\n\n" + results.START.format(key="a size=paper")
            + "\nold\n" + results.END + "\n\nMore prose.\n")
    new = results.update_record(text, {"a size=paper": results.START.format(key="a size=paper")
                                       + "\nnew\n" + results.END + "\n",
                                       "b size=default": "B-block\n"})
    assert "What we saw." in new and "More prose." in new
    assert "\nnew\n" in new and "\nold\n" not in new and new.rstrip().endswith("B-block")
    assert results.update_record(new, {}) == new


def test_a_folder_that_is_no_report_is_refused_and_the_record_is_untouched(tmp_path, capsys):
    record = tmp_path / "results.md"
    record.write_text("# mine\n")
    assert main(["results", str(tmp_path), "--into", str(record)]) == 2
    assert "has no index.json" in capsys.readouterr().err
    assert record.read_text() == "# mine\n"
    assert main(["results", "--into", str(record)]) == 2


@pytest.mark.usefixtures("smoke_reports")
def test_the_record_of_a_finished_report_holds_each_full_scorecard(smoke_reports, tmp_path):
    record = tmp_path / "results.md"
    record.write_text("# Results record\n\nA paragraph a person wrote.\n")
    assert main(["results", str(smoke_reports.out), "--into", str(record)]) == 0
    text = record.read_text()
    assert "A paragraph a person wrote." in text
    for entry in smoke_reports.entries:
        nb = nbformat.read(smoke_reports.out / entry.executed, as_version=4)
        card = results.scorecard_of(nb)
        assert card and card["rows"], entry.notebook
        key = f"{results.START.format(key=entry.notebook.rsplit('/', 1)[-1][:-6] + ' size=smoke')}"
        block = text[text.index(key):]
        block = block[:block.index(results.END)]
        for row in card["rows"]:
            assert results._cell(row[0]) in block  # every claim, in full (no "...")
        assert f"commit: `{entry.commit or 'not recorded'}`" in block
        assert "reference steps/s" in block and "reference steps)" in block
        assert "command:" in block
    again = results.update_record(text, dict(results.report_block(r)
                                             for r in results.report_records(smoke_reports.out)))
    assert again == text  # regenerating from the same folder changes nothing


def test_scaled_verdicts_are_set_beside_the_source_setting_ones():
    cols = ["claim", "ours", "verdict"]
    small = {"name": "nb", "size": "default", "seeds": "3", "card": {"columns": cols, "rows": [
        ["a", "1", "reproduced (scaled: steps 2,000 vs the source's 10,000)"],
        ["b", "2", "not reproduced (scaled: steps 2,000 vs ...)"],
        ["c", "3", "below the source's setting: steps 2,000 vs 10,000"],
        ["d", "4", "mixed (scaled)"],
        ["e", "5", "below the source's setting: steps 2,000 vs 10,000; reached by ...; our "
                   "scaled run says mixed, but no run has shown that the scaled setting gives "
                   "the source's setting's verdict"]]}}
    full = {"name": "nb", "size": "paper", "seeds": "10", "card": {"columns": cols, "rows": [
        ["a", "1", "reproduced"], ["b", "2", "mixed"], ["c", "3", "reproduced"],
        ["e", "5", "mixed"]]}}
    key, block = results.scaled_check_block(small, full)
    assert key == "nb size=default vs size=paper"
    # c was not judged scaled; d has no paper row; e is a scaled claim not yet shown (its
    # verdict reads below, quoting the scaled run's), compared all the same
    assert "2 of 3 claims" in block
    assert "| e | mixed (scaled) | mixed | yes |" in block
    assert "| a | reproduced (scaled) | reproduced | yes |" in block
    assert "| b | not reproduced (scaled) | mixed | no |" in block
    assert results.scaled_check_block({**small, "card": None}, full) is None
