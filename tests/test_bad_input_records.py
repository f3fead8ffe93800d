"""Bad-input catalogue, part 8: a report run's record as data (``toymech results <report
folder>``). Each refused case: exit code 2, ONE line on stderr naming the folder (or the report
folder's file), the value and what is allowed, no traceback, and nothing under the test's folder
written, moved or deleted (see ``catalogue``). Then what a good write keeps: the other records,
no temporary file.

Which failed before (toymech at d832c33, when the record was a markdown file): a folder, a
missing folder, a malformed index.json or an unreadable executed notebook printed a traceback,
and a file outside the report folder was opened.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from catalogue import refused, run_cli, tree

NAME = "report_ok-smoke.json"


def _report_folder(root: Path, executed: str = "executed/report_ok.ipynb", index=None) -> Path:
    """A report folder as ``toymech report`` leaves it: index.json and one executed notebook
    (two levels down, so that ``../../`` stays inside the test's folder)."""
    out = root / "a" / "reports"
    (out / "executed").mkdir(parents=True)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A report")]
    nbformat.write(nb, str(out / "executed" / "report_ok.ipynb"))
    row = {"notebook": "nbs/report_ok.ipynb", "html": "report_ok.html", "executed": executed,
           "status": "ok", "size": "smoke", "device": "cpu", "seed": 0, "wall_s": 1.0,
           "date": "2026-12-04", "versions": {}, "command": "toymech report --out /home/me/r"}
    (out / "index.json").write_text(json.dumps([row]) if index is None else index)
    return out


# name: (index.json text (None: good), executed path, --into (relative to the test folder),
#        fragments of the one stderr line)
CASES = {
    "--into a file, not a folder": (None, None, "data.json", ["--into=", "existing folder"]),
    "--into a missing folder": (None, None, "nowhere", ["--into=", "existing folder"]),
    "--into a symlink loop": (None, None, "loop", ["--into=", "existing folder"]),
    "the record's name taken by a folder": (None, None, "taken", ["--into=", NAME, "not a file"]),
    "index.json that is not JSON (JSONDecodeError traceback)": (
        "[{not json", None, "data", ["index.json", "JSONDecodeError"]),
    "index.json that is a JSON object, not rows (traceback)": (
        '{"a": 1}', None, "data", ["index.json", "a list of rows"]),
    "index.json rows that are numbers (traceback)": ("[1, 2]", None, "data",
                                                    ["index.json", "a list of rows"]),
    "executed ../../x outside the report folder (opened it)": (
        None, "../../outside.ipynb", "data",
        ["executed='../../outside.ipynb'", "inside the report folder"]),
    "executed an absolute path (opened it)": (None, "/etc/hostname", "data",
                                              ["executed='/etc/hostname'", "inside"]),
    "executed a number (traceback)": (None, 7, "data", ["executed=7", "inside"]),
    "executed notebook that is not JSON (traceback naming no file)": (
        None, "executed/broken.ipynb", "data", ["broken.ipynb", "executed notebook"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=[f"results data: {c}" for c in CASES])
def test_results_data_refuses(case, tmp_path):
    index, executed, into, fragments = CASES[case]
    out = _report_folder(tmp_path, executed or "executed/report_ok.ipynb", index)
    if executed is not None and not isinstance(executed, int):
        target = (out / executed) if not executed.startswith("/") else None
        if target is not None and "broken" in executed:
            target.write_text("this is not a notebook")
        elif target is not None:
            nbformat.write(nbformat.v4.new_notebook(), str(target.resolve()))  # it exists: not read
    if executed == 7:
        rows = json.loads((out / "index.json").read_text())
        rows[0]["executed"] = 7
        (out / "index.json").write_text(json.dumps(rows))
    (tmp_path / "data").mkdir()
    (tmp_path / "data.json").write_text("{}")
    (tmp_path / "taken" / NAME).mkdir(parents=True)
    os.symlink(tmp_path / "loop2", tmp_path / "loop")
    os.symlink(tmp_path / "loop", tmp_path / "loop2")
    before = tree(tmp_path)
    refused(*run_cli(["results", str(out), "--into", str(tmp_path / into)]), fragments)
    assert tree(tmp_path) == before, "something was written, moved or deleted"


def test_a_good_write_keeps_the_other_records_and_leaves_no_temporary_file(tmp_path):
    out = _report_folder(tmp_path)
    data = tmp_path / "data"
    data.mkdir()
    (data / "other-default.json").write_text('{"kind": "table", "key": "other"}\n')
    code, stdout, err = run_cli(["results", str(out), "--into", str(data)])
    assert code == 0, (stdout, err)
    assert sorted(p.name for p in data.iterdir()) == sorted([NAME, "other-default.json"])
    written = json.loads((data / NAME).read_text())
    assert written["command"] == "toymech report --out <out>" and written["size"] == "smoke"
