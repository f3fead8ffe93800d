"""Bad-input catalogue, part reliability: map files and tables, report folders and plugins. Each
case's id starts with its class: **refused** (one line naming the file, the column or the knob;
nothing written, no folder left, no work done), **handled** (the command goes on and says what it
left out) or **damage** (a file toymech wrote, edited or replaced: found and refused, never read
as toymech's). Zoo damage (the training state among it) is in ``test_bad_input_zoo.py``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from catalogue import no_hang, refused, run_cli, tree
from waiting import limit

MAP = "study: induction\nsize: smoke\nseeds: 1\nknobs: {block_len: [6]}\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    """One smoke map (one run) measured into ``out``: the tables the damage cases edit."""
    root = tmp_path_factory.mktemp("mapped")
    spec = _write(root / "m.yaml", MAP)
    code, out, err = run_cli(["map", str(spec), "--cache", str(root / "zoo"), "--out",
                              str(root / "out"), "--no-progress"])
    assert code == 0, err[-3000:]
    return root


@pytest.fixture
def copy(mapped, tmp_path):
    shutil.copytree(mapped, tmp_path / "m")
    return tmp_path / "m"


def _edit(table: Path, change) -> None:
    """Change the table's CSV by hand, every other cell kept as written."""
    frame = pd.read_csv(table, dtype=str, keep_default_na=False)
    frame = change(frame)
    frame.to_csv(table, index=False)


def _set(column, value):
    def change(frame):
        assert column in frame, (column, list(frame))  # an edit of a column the table has
        frame.loc[0, column] = value
        return frame
    return change


def _duplicate(frame):
    return pd.concat([frame, frame.iloc[[0]]], ignore_index=True)


# --- refused before any work: map files ------------------------------------------------------

def _bomb(key: str) -> str:
    levels = ["&a [x, x, x, x, x, x, x, x, x]"] + [
        f"&{b} [{', '.join([f'*{a}'] * 9)}]" for a, b in zip("abcdefgh", "bcdefghi")]
    kept = "".join(line + "\n" for line in MAP.splitlines() if not line.startswith(f"{key}:"))
    return kept + f"{key}:\n" + "".join(f"  - {level}\n" for level in levels)


MAP_CASES = {
    # name: (map file text, extra argv, fragments of the one line)
    "refused: --out at an existing file (traceback before)": (
        MAP, ["--out", "{tmp}/a-file"], ["--out=", "a-file", "it is a file"]),
    "refused: experiment [[...]] (traceback before)": (
        MAP + "experiment: [[induction-2l]]\n", [], ["experiment=['induction-2l']", "one of the study's"]),
    "refused: one value in three spellings (three identical rows before)": (
        MAP.replace("[6]", "[4, '4-4', '4']"), [], ["knobs['block_len']", "each value once", "'4-4'"]),
    "refused: a cell its measurement refuses (trained first, then 'n_blocks=4' before)": (
        MAP.replace("block_len: [6]", "seq_len: [12]"), [], ["seq_len=12", "cannot be measured", "n_blocks=4"]),
    "refused: a block longer than the sequence (trained blocks that never repeat before)": (
        MAP.replace("block_len: [6]", "block_len: [30], seq_len: [24]"), [], ["block_len=30", "seq_len=24"]),
    "refused: an alias bomb as the name (formatted whole before)": (
        _bomb("name"), [], ["name=[[", "...", "letters, digits"]),
    "refused: an alias bomb as the seeds": (_bomb("seeds"), [], ["seeds=", "an integer"]),
    "refused: 20,000 keys under one mapping (minutes of silence before)": (
        MAP + "extra:\n" + "".join(f"  k{i}: 1\n" for i in range(20_000)), [], ["at most 10,000 keys"]),
}


@pytest.mark.parametrize("case", list(MAP_CASES), ids=list(MAP_CASES))
def test_bad_map_files_refused_before_any_work(case, tmp_path):
    text, extra, fragments = MAP_CASES[case]
    spec = _write(tmp_path / "m.yaml", text)
    _write(tmp_path / "a-file", "mine")
    before = tree(tmp_path)
    argv = ["map", str(spec), "--cache", str(tmp_path / "zoo"), "--no-progress"]
    argv += [a.replace("{tmp}", str(tmp_path)) for a in extra] or ["--out", str(tmp_path / "out")]
    with no_hang():
        code, out, err = run_cli(argv)
    line = refused(code, out, err, fragments)
    assert len(line) < 600, line  # a refusal never formats an unbounded value
    assert tree(tmp_path) == before, "something was written (a zoo, a table or an empty folder)"


# --- refused: files in --out and --report that toymech did not write --------------------------

def _user_csv(root):
    _write(root / "out" / "m.csv", "sample,score\n1,0.5\n")


def _user_parquet(root):
    pd.DataFrame({"a": [1]}).to_parquet(root / "out" / "m.parquet")


def _user_runs(root):
    _write(root / "out" / "m.runs.csv", "mine\n")


def _user_cost(root):
    _write(root / "out" / "m.cost.json", json.dumps(["my notes on what m cost"]))


def _user_index(root):
    (root / "reports").mkdir()
    _write(root / "reports" / "index.json", json.dumps({"my": "notes"}))


def _user_executed(root):
    (root / "reports" / "executed").mkdir(parents=True)
    _write(root / "reports" / "executed" / "map-m.ipynb", "{}")


OUT_CASES = {
    # name: (setup(root) on an empty --out, argv extra, fragments)
    "refused: a user's <name>.csv in --out (read as the table and rewritten before)": (
        _user_csv, [], ["m.csv", "not written by toymech map"]),
    "refused: a user's <name>.parquet alone in --out (replaced before)": (
        _user_parquet, [], ["m.parquet", "not written by toymech map"]),
    "refused: a user's <name>.runs.csv in --out": (_user_runs, [], ["m.runs.csv", "not written by toymech"]),
    "refused: a user's <name>.cost.json in --out (the map's cost record's name)": (
        _user_cost, [], ["m.cost.json", "not written by toymech map"]),
    "refused: a user's index.json in the --report folder (overwritten before)": (
        _user_index, ["--report", "{root}/reports"], ["index.json toymech did not write"]),
    "refused: a user's executed/map-<name>.ipynb in the --report folder": (
        _user_executed, ["--report", "{root}/reports"], ["executed/map-m.ipynb", "did not write"]),
}


@pytest.mark.parametrize("case", list(OUT_CASES), ids=list(OUT_CASES))
def test_a_users_files_are_never_replaced(case, tmp_path):
    setup, extra, fragments = OUT_CASES[case]
    spec = _write(tmp_path / "m.yaml", MAP)
    (tmp_path / "out").mkdir()
    setup(tmp_path)
    before = tree(tmp_path)
    argv = ["map", str(spec), "--cache", str(tmp_path / "zoo"), "--out", str(tmp_path / "out"),
            "--no-progress", *[a.replace("{root}", str(tmp_path)) for a in extra]]
    with no_hang():
        code, out, err = run_cli(argv)
    refused(code, out, err, fragments)
    assert tree(tmp_path) == before, "a file was written or replaced"


# --- damage: tables edited after toymech wrote them -------------------------------------------

EDITS = {
    # name: (edit of the table, fragments of the line naming the row)
    "damage: a label changed to content (published before)": (
        _set("label", "content"), ["row 1", "row_sha256"]),
    "damage: a loss set to NaN (counted before)": (_set("loss.train", "nan"), ["row 1", "row_sha256"]),
    "damage: a seed of -7": (_set("seed", "-7"), ["row 1", "seed=-7"]),
    "damage: a knob value 99-1": (_set("knob.block_len", "99-1"), ["row 1", "knob.block_len='99-1'"]),
    "damage: a duplicated row": (_duplicate, ["row 2", "the same run as row 1"]),
    "damage: an edited zoo key": (_set("zoo_key", "0123456789abcdef"), ["row 1", "not the run"]),
    "damage: the label column removed": (lambda f: f.drop(columns=["label"]), ["'label' column"]),
}


@pytest.mark.parametrize("case", list(EDITS), ids=list(EDITS))
def test_edited_rows_are_refused_by_results(case, copy):
    edit, fragments = EDITS[case]
    table = copy / "out" / "m.csv"
    _edit(table, edit)
    (copy / "out" / ".toymech-maps.json").unlink()  # the row checks alone, not the file's hash
    with no_hang():
        code, out, err = run_cli(["results", "--pages", "--maps", str(table), "--data",
                                  str(copy / "no-data"), "--out", str(copy / "site")])
    refused(code, out, err, [str(table), *fragments])
    assert not (copy / "site").exists(), "a page was written"


def test_damage_an_edited_table_is_refused_by_the_next_map_run(copy):
    _edit(copy / "out" / "m.csv", _set("label", "content"))
    before = tree(copy)
    with no_hang():
        code, out, err = run_cli(["map", str(copy / "m.yaml"), "--cache", str(copy / "zoo"),
                                  "--out", str(copy / "out"), "--no-progress"])
    refused(code, out, err, ["m.csv", "changed since toymech wrote it"])
    assert tree(copy) == before


def test_refused_another_map_under_the_same_name(copy):
    _write(copy / "m.yaml", MAP.replace("block_len: [6]", "offset: [0]"))
    before = tree(copy)
    with no_hang():
        code, out, err = run_cli(["map", str(copy / "m.yaml"), "--cache", str(copy / "zoo"),
                                  "--out", str(copy / "out"), "--no-progress"])
    refused(code, out, err, ["name='m'", "another map", "['block_len']", "['offset']"])
    assert tree(copy) == before


def test_handled_an_unrelated_csv_in_a_maps_folder_is_skipped_with_a_line(copy):
    _write(copy / "out" / "notes.csv", "x,y\n1,2\n")
    code, out, err = run_cli(["results", "--pages", "--maps", str(copy / "out"), "--data",
                              str(copy / "no-data"), "--out", str(copy / "site")])
    assert code == 0, err[-2000:]
    skipped = [line for line in err.splitlines() if "skipped" in line]
    assert len(skipped) == 1 and "notes.csv" in skipped[0] and "'experiment' column" in skipped[0]
    assert "### Map `m`" in (copy / "site" / "induction.md").read_text()


# --- refused: plugins -------------------------------------------------------------------------

SHADOW = ("from dataclasses import dataclass\nfrom toymech.tasks import register\n"
          "from toymech.tasks.repeated_blocks import RepeatedBlocks\n\n"
          "@register({name!r})\n@dataclass(frozen=True)\nclass Mine(RepeatedBlocks):\n    pass\n")
PLUGINS = {
    "refused: a plugin that raises (traceback before)": (
        "raise RuntimeError('lab database unreachable')\n", ["RuntimeError", "lab database unreachable", "line 1"]),
    "refused: a plugin with a syntax error (traceback before)": (
        "def f(:\n    pass\n", ["SyntaxError", "line 1"]),
    "refused: a plugin task named like a study's experiment (hidden silently before)": (
        SHADOW.format(name="induction-2l"), ["task='induction-2l'", "study 'induction'"]),
    "refused: a plugin task with a built-in task's name": (
        SHADOW.format(name="repeated_blocks"), ["registered twice"]),
}


@pytest.mark.parametrize("case", list(PLUGINS), ids=list(PLUGINS))
def test_bad_plugins_are_one_line(case, tmp_path, monkeypatch):
    import sys

    source, fragments = PLUGINS[case]
    module = f"catalogue_plugin_{abs(hash(case)) % 10**8}"
    _write(tmp_path / f"{module}.py", source)
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        code, out, err = run_cli(["--import", module, "list", "tasks"])
    finally:
        from toymech.tasks import base

        for name in [n for n, cls in base._REGISTRY.items() if cls.__module__ == module]:
            del base._REGISTRY[name]  # this process goes on with the package's tasks only
        sys.modules.pop(module, None)
    refused(code, out, err, [module, *fragments])


def test_handled_two_writers_of_one_map_at_once_keep_every_row(tmp_path):
    """Two runs of one map (other cells each) into one folder at once: both exit 0 and the
    table holds both runs' rows (the last writer kept only its own before)."""
    import os
    import subprocess
    import sys

    import toymech

    root = Path(toymech.__file__).resolve().parents[1]  # the toymech under test
    specs = [_write(tmp_path / f"{v}.yaml", MAP.replace("[6]", f"[{v}]") + "name: m\n")
             for v in (5, 6)]
    env = {**os.environ, "PYTHONPATH": str(root), "OMP_NUM_THREADS": "1"}
    procs = [subprocess.Popen([sys.executable, "-m", "toymech", "map", str(s), "--cache",
                               str(tmp_path / "zoo"), "--out", str(tmp_path / "out"),
                               "--no-progress"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for s in specs]
    results = [p.communicate(timeout=limit(900)) for p in procs]  # a net against a hang, scaled
    assert [p.returncode for p in procs] == [0, 0], [r[1][-2000:] for r in results]
    table = pd.read_csv(tmp_path / "out" / "m.csv", dtype=str)
    assert sorted(table["knob.block_len"]) == ["5", "6"], table
    assert not list((tmp_path / "out").glob(".*.lock"))
