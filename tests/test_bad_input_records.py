"""Bad-input catalogue, part 8: the results record (``toymech results``). Each refused case:
exit code 2, ONE line on stderr naming the record (or the report folder's file), the line or
value and what is allowed, no traceback, and nothing under the test's folder written, moved or
deleted (see ``catalogue``). Then what a good update keeps: the prose, the file's mode, a link
(the link stays, its target is updated), no temporary or lock file, and the record's lock.

Which failed before (toymech at d832c33): every refused case below either replaced the user's
text (a missing END: the block ran to the next block's END), appended a duplicate (a misspelled
marker), kept a duplicate, wrote markdown into a JSON file, printed a traceback (a folder, a
missing folder, a read-only record under a non-root user, a malformed index.json, an unreadable
executed notebook) or opened a file outside the report folder; a link was replaced by a file and a
read-only record came back writable.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import nbformat
import pytest

from catalogue import refused, run_cli, tree

S = "<!-- toymech-results {key} -->"
E = "<!-- /toymech-results -->"
KEY = "report_ok size=smoke"


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
           "date": "2026-12-04", "versions": {}}
    (out / "index.json").write_text(json.dumps([row]) if index is None else index)
    return out


def _record(text: str, root: Path, name: str = "results.md") -> Path:
    path = root / name
    path.write_text(text)
    return path


BLOCK_A = f"{S.format(key=KEY)}\nold A\n{E}\n"
BLOCK_B = f"{S.format(key='other size=paper')}\nold B\n{E}\n"

# name: (record text (or None: no record), index.json text (None: good), executed path,
#        --into (relative to the test folder), fragments of the one stderr line)
CASES = {
    "a block's END deleted by hand (the block ran to the next END, a paragraph lost)": (
        f"# R\n\n{S.format(key=KEY)}\nold A\n\nMy paragraph.\n\n{BLOCK_B}", None, None, "results.md",
        ["line 8", "line 3", KEY, E]),
    "the last block's END deleted": (f"# R\n\n{S.format(key=KEY)}\nold A\n", None, None, "results.md",
                                     ["line 3", "record ends"]),
    "an END without its START": (f"# R\n\nold A\n{E}\n\n{BLOCK_B}", None, None, "results.md",
                                 ["line 4", "closes no block"]),
    "a misspelled START marker (appended a duplicate)": (
        f"# R\n\n<!-- toymech-result {KEY} -->\nold A\n{E}\n", None, None, "results.md",
        ["line 3", "toymech-result "]),
    "a START marker in capitals": (
        f"# R\n\n<!-- Toymech-Results {KEY} -->\nold A\n{E}\n", None, None, "results.md", ["line 3"]),
    "a misspelled END marker": (f"# R\n\n{S.format(key=KEY)}\nold A\n<!-- /toymech-result -->\n",
                                None, None, "results.md", ["line 5", "written exactly"]),
    "one key twice (kept the duplicate)": (f"# R\n\n{BLOCK_A}\n{BLOCK_A}", None, None, "results.md",
                                           ["line 7", "also at line 3"]),
    "--into notes.json (appended markdown to JSON)": (
        '{"mine": 1}\n', None, None, "notes.json", ["--into=", "notes.json", ".md"]),
    "--into a folder (IsADirectoryError traceback)": (None, None, None, "folder.md", ["--into=", "not a folder"]),
    "--into a file in a missing folder (FileNotFoundError traceback)": (
        None, None, None, "nowhere/results.md", ["--into=", "does not exist"]),
    "--into a read-only record (came back writable)": (
        "# R\n", None, None, "readonly.md", ["--into=", "read-only"]),
    "--into a symlink loop": (None, None, None, "loop.md", ["--into=", "loop"]),
    "index.json that is not JSON (JSONDecodeError traceback)": (
        "# R\n", "[{not json", None, "results.md", ["index.json", "JSONDecodeError"]),
    "index.json that is a JSON object, not rows (traceback)": (
        "# R\n", '{"a": 1}', None, "results.md", ["index.json", "a list of rows"]),
    "index.json rows that are numbers (traceback)": (
        "# R\n", "[1, 2]", None, "results.md", ["index.json", "a list of rows"]),
    "executed ../../x outside the report folder (opened it)": (
        "# R\n", None, "../../outside.ipynb", "results.md", ["executed='../../outside.ipynb'", "inside the report folder"]),
    "executed an absolute path (opened it)": (
        "# R\n", None, "/etc/hostname", "results.md", ["executed='/etc/hostname'", "inside"]),
    "executed a number (traceback)": ("# R\n", None, 7, "results.md", ["executed=7", "inside"]),
    "executed notebook that is not JSON (traceback naming no file)": (
        "# R\n", None, "executed/broken.ipynb", "results.md", ["broken.ipynb", "executed notebook"]),
}


@pytest.mark.parametrize("case", list(CASES), ids=[f"results record: {c}" for c in CASES])
def test_results_record_refuses(case, tmp_path):
    text, index, executed, into, fragments = CASES[case]
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
    (tmp_path / "folder.md").mkdir()
    os.symlink(tmp_path / "loop2.md", tmp_path / "loop.md")
    os.symlink(tmp_path / "loop.md", tmp_path / "loop2.md")
    if text is not None:
        record = _record(text, tmp_path, into)
        if into == "readonly.md":
            record.chmod(0o444)
    before = tree(tmp_path)
    refused(*run_cli(["results", str(out), "--into", str(tmp_path / into)]), fragments)
    assert tree(tmp_path) == before, "something was written, moved or deleted"


def test_catalogue_part_8_size():
    assert len(CASES) >= 19


# --------------------------------------------------------------------------------------------
# what a good update keeps
# --------------------------------------------------------------------------------------------


def _update(out: Path, into: Path) -> None:
    code, stdout, err = run_cli(["results", str(out), "--into", str(into)])
    assert code == 0, (stdout, err)


def test_an_update_keeps_prose_mode_and_leaves_no_temporary_or_lock_file(tmp_path):
    out = _report_folder(tmp_path)
    record = _record(f"# R\n\nMine before.\n\n{BLOCK_A}\nMine after.\n\n{BLOCK_B}", tmp_path)
    record.chmod(0o640)
    _update(out, record)
    text = record.read_text()
    assert "Mine before." in text and "Mine after." in text and "old B" in text
    assert "old A" not in text and text.count(S.format(key=KEY)) == 1
    assert stat.S_IMODE(record.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a", "results.md"]


def test_an_update_writes_through_a_link_and_the_link_stays(tmp_path):
    out = _report_folder(tmp_path)
    (tmp_path / "shared").mkdir()
    real = _record("# Shared\n", tmp_path / "shared")
    link = tmp_path / "results.md"
    os.symlink(real, link)
    _update(out, link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert KEY in real.read_text() and real.read_text().startswith("# Shared")


def test_a_new_record_is_created_in_an_existing_folder(tmp_path):
    out = _report_folder(tmp_path)
    _update(out, tmp_path / "new.md")
    assert KEY in (tmp_path / "new.md").read_text()


def test_an_update_waits_for_the_record_lock(tmp_path):
    """Another writer holds the record's lock: with no wait allowed, the update fails (exit 1,
    naming the holder) and the record is untouched: it writes only under the lock."""
    from toymech.zoo.locks import EntryLock

    out = _report_folder(tmp_path)
    record = _record("# R\n", tmp_path)
    with EntryLock(tmp_path, record.name):
        before = tree(tmp_path)
        code, _, err = run_cli(["results", str(out), "--into", str(record)],
                               TOYMECH_LOCK_TIMEOUT="0")
        assert tree(tmp_path) == before
    assert code == 1 and "results record" in err and f"pid {os.getpid()}" in err, err
    assert record.read_text() == "# R\n"
