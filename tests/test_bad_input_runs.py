"""Bad-input catalogue, part runs: what a map keeps of its runs (one row, one cell per run,
whatever knob or policy built it), tables whose rows lost their hash, files of the user's in a
report folder, a study given a setting that is not its own, waits on a lock and the cost of
training at ``smoke``. Each case's id starts with its class: **refused** (one line naming the
parameter, the value and what is allowed; nothing written, no folder left), **handled** (the
command goes on and says in one line what it did) or **damage** (before: a run counted twice, a
row published as measured that was not, a user's file replaced; now refused or handled, tested
the same way). Every map here is at ``smoke``, one folder each."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from catalogue import no_hang, refused, run_cli, stderr_lines, tree

SMEARED = "study: induction\nexperiment: induction-1l-smeared\nsize: smoke\nseeds: 1\n"
TWO_LAYER = "study: induction\nexperiment: induction-2l\nsize: smoke\nseeds: 1\n"


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _map(tmp: Path, text: str, *extra: str, name: str = "m") -> tuple[int, str, str]:
    spec = _write(tmp / f"{name}.yaml", text)
    return run_cli(["map", str(spec), "--cache", str(tmp / "zoo"), "--out", str(tmp / "out"),
                    "--no-progress", *extra])


def _refused_before_any_work(tmp: Path, text: str, fragments, *extra: str) -> str:
    spec = _write(tmp / "m.yaml", text)
    before = tree(tmp)
    with no_hang():
        code, out, err = run_cli(["map", str(spec), "--cache", str(tmp / "zoo"), "--out",
                                  str(tmp / "out"), "--no-progress", *extra])
    line = refused(code, out, err, fragments)
    assert tree(tmp) == before, "something was written (a zoo, a table or an empty folder)"
    return line


# --- refused before any work: map files ------------------------------------------------------

MAP_CASES = {
    # name: (map file text, fragments of the one line)
    "damage: a knob no experiment of the map takes (one run as two cells before)": (
        SMEARED + "knobs: {n_layers: [1, 3]}\n",
        ["knobs['n_layers']=[1, 3]", "changes none of its experiments", "induction-1l-smeared"]),
    "damage: a knob of one experiment only, at a value not the source's (mislabelled before)": (
        SMEARED + "knobs: {n_layers: [3]}\n", ["knobs['n_layers']=[3]", "changes none"]),
    "damage: another knob declared for other experiments only": (
        TWO_LAYER + "knobs: {smear: [per_position, per_head]}\n",
        ["knobs['smear']", "changes none", "induction-2l"]),
    "refused: an empty experiment list (the study's first experiment mapped silently before)": (
        TWO_LAYER.replace("experiment: induction-2l", "experiment: []") + "knobs: {offset: [0]}\n",
        ["experiment=[]", "non-empty list"]),
    "refused: until_converged below the runs' own steps (did nothing silently before)": (
        TWO_LAYER + "knobs: {offset: [0]}\nuntil_converged: 20\n",
        ["until_converged=20", "induction-2l trains 40"]),
    "refused: until_converged equal to the runs' own steps": (
        TWO_LAYER + "knobs: {offset: [0]}\nuntil_converged: 40\n", ["until_converged=40"]),
    "refused: a YAML integer with a leading 0 (read as octal 8 before)": (
        TWO_LAYER + "knobs: {offset: [010]}\n", ["m.yaml", "line 5", "'010'", "octal"]),
    "refused: a hex YAML integer": (TWO_LAYER + "knobs: {offset: [0x3]}\n", ["'0x3'"]),
    "refused: a base-60 YAML integer": (TWO_LAYER + "knobs: {offset: [1:30]}\n", ["'1:30'"]),
    "refused: a 5,000-digit seed count (Python's own message before)": (
        TWO_LAYER.replace("seeds: 1", "seeds: " + "1" * 5000) + "knobs: {offset: [0]}\n",
        ["m.yaml", "5,000 digits"]),
    "refused: a 5,000-digit knob value": (
        TWO_LAYER + "knobs: {d_model: ['" + "1" * 5000 + "']}\n", ["d_model=", "an integer in"]),
    "refused: a long map name (refused as map-... before)": (
        TWO_LAYER + "knobs: {offset: [0]}\nname: " + "a" * 200 + "\n",
        ["name='aaaa", "at most 100 characters"]),
    "refused: a non-Latin map name (refused as map-... before)": (
        TWO_LAYER + "knobs: {offset: [0]}\nname: карта\n", ["name='карта'", "ASCII"]),
}


@pytest.mark.parametrize("case", list(MAP_CASES), ids=list(MAP_CASES))
def test_map_files_refused_before_any_work(case, tmp_path):
    text, fragments = MAP_CASES[case]
    line = _refused_before_any_work(tmp_path, text, fragments)
    assert "map-" not in line.split("is not allowed")[0], line  # named as the user wrote it


def _two_values(knob):
    """Two values of ``knob`` other than its source's (None where it has not two)."""
    if knob.kind == "bool":
        return None
    if knob.kind == "choice":
        others = [c for c in knob.allowed if c != knob.source]
        return others[:2] if len(others) >= 2 else None
    lo, hi = knob.allowed
    if knob.kind == "float":
        return [v for v in (knob.source / 2, knob.source * 2, lo, hi) if lo <= v <= hi
                and v != knob.source][:2]
    return [v for v in (knob.source + 1, knob.source - 1, lo, hi) if lo <= v <= hi
            and v != knob.source][:2]


@pytest.mark.parametrize("name", ["induction", "birth", "random_transformers"])
def test_damage_any_knob_that_reaches_no_experiment_of_a_map_is_refused(name):
    """Over every knob and named experiment of each study (no run trained): where two values of
    a knob build one run of an experiment (the same zoo key), a map of that experiment alone
    over them is refused; where they build two runs, it is two cells."""
    from toymech.core import Setting
    from toymech.maps import check_map
    from toymech.maps.spec import map_trials
    from toymech.studies import protocol

    study = protocol.study(name)
    checked = {"refused": 0, "mapped": 0}
    for k, knob in study.knobs.items():
        values = _two_values(knob)
        if not values or len(values) < 2:
            continue
        try:
            at = [study.with_knobs("smoke", {k: v}) for v in values]
        except ValueError:
            continue  # a value the study refuses at smoke: no map of it
        seen = set()
        for exp_name, named in study.named_experiments.items():
            keys = []
            for setting in at:
                try:
                    keys.append(named.make(setting, 0).key(""))
                except ValueError:
                    keys.append(None)
            if None in keys:
                continue
            spec = check_map({"study": name, "experiment": [exp_name], "size": "smoke",
                              "seeds": 1, "knobs": {k: values}, "name": "m"})
            kind = ("refused" if keys[0] == keys[1] == named.make(Setting("smoke"), 0).key("")
                    else "mapped" if keys[0] != keys[1] else None)
            if kind is None or kind in seen:
                continue  # one experiment of each kind per knob
            seen.add(kind)
            if kind == "refused":
                with pytest.raises(ValueError, match=rf"knobs\['{k}'\]=.* changes none"):
                    map_trials(spec)
            else:
                trials, _ = map_trials(spec)
                assert len({t.key for t in trials}) == len(trials) == 2, (k, exp_name)
            checked[kind] += 1
    assert checked["mapped"] >= 1 and (name != "induction" or checked["refused"] >= 2), checked


def test_refused_a_map_name_from_a_non_latin_file_name_says_where_it_came_from(tmp_path):
    spec = _write(tmp_path / "карта.yaml", TWO_LAYER + "knobs: {offset: [0]}\n")
    before = tree(tmp_path)
    code, out, err = run_cli(["map", str(spec), "--cache", str(tmp_path / "zoo"), "--no-progress"])
    refused(code, out, err, ["name='карта'", "the map file's name", "give 'name:'"])
    assert tree(tmp_path) == before


OUT_CASES = {
    # name: (--out given, as a function of the temporary folder; fragments)
    "refused: --out under a regular file (traceback before)": (
        lambda tmp: str(tmp / "a-file" / "out"), ["--out=", "a-file", "is a file"]),
    "refused: --out /proc (named zoo='/proc' before)": (lambda tmp: "/proc", ["--out='/proc'"]),
    "refused: --out under /proc (traceback before)": (
        lambda tmp: "/proc/toymech-out", ["--out='/proc/toymech-out'"]),
}


@pytest.mark.parametrize("case", list(OUT_CASES), ids=list(OUT_CASES))
def test_unusable_out_folders_are_one_line(case, tmp_path):
    if not Path("/proc").is_dir():
        pytest.skip("no /proc on this system")
    given, fragments = OUT_CASES[case]
    _write(tmp_path / "a-file", "mine")
    spec = _write(tmp_path / "m.yaml", TWO_LAYER + "knobs: {offset: [0]}\n")
    before = tree(tmp_path)
    code, out, err = run_cli(["map", str(spec), "--cache", str(tmp_path / "zoo"), "--out",
                              given(tmp_path), "--no-progress"])
    line = refused(code, out, err, fragments)
    assert "zoo=" not in line, line
    assert tree(tmp_path) == before


def test_refused_a_sweep_table_under_proc(tmp_path):
    """``toymech sweep --out /proc/x.csv``: a folder its permissions call writable (root) where
    no file can be made: one line before any training (a traceback writing its temporary file
    before)."""
    if not Path("/proc").is_dir():
        pytest.skip("no /proc on this system")
    grid = _write(tmp_path / "g.yaml", "experiment: induction-2l\nsize: smoke\nseed: [0]\n")
    before = tree(tmp_path)
    with no_hang():
        code, out, err = run_cli(["sweep", str(grid), "--cache", str(tmp_path / "zoo"),
                                  "--out", "/proc/toymech-sweep.csv", "--backend", "local",
                                  "--no-progress"])
    refused(code, out, err, ["out='/proc/toymech-sweep.csv'", "can write to"])
    assert tree(tmp_path) == before


DIGITS = "1" * 5000
CLI_CASES = {
    # name: (argv, fragments of the one line)
    "refused: a 5,000-digit --set value (Python's own message before)": (
        ["train", "induction-2l", "--size", "smoke", "--set", f"d_model={DIGITS}"],
        ["d_model='1111", "an integer in 4..1024"]),
    "refused: a 5,000-digit --set range": (
        ["train", "induction-2l", "--size", "smoke", "--set", f"block_len=4-{DIGITS}"],
        ["block_len='4-1111", "a range such as"]),
    "refused: a 5,000-digit --param value": (
        ["report", "--size", "smoke", "--param", f"also={DIGITS}"],
        ["--param also=1111", "at most 100 digits"]),
}


@pytest.mark.parametrize("case", list(CLI_CASES), ids=list(CLI_CASES))
def test_long_integers_are_named_in_one_line(case, tmp_path):
    argv, fragments = CLI_CASES[case]
    before = tree(tmp_path)
    with no_hang():
        code, out, err = run_cli([*argv, "--cache", str(tmp_path / "zoo")])
    line = refused(code, out, err, fragments)
    assert "Exceeds the limit" not in line and len(line) < 600, line
    assert tree(tmp_path) == before


LEDGERS = {
    "refused: a ledger whose map entry is a list (traceback before)": {"maps": {"m": []}},
    "refused: a ledger whose identity is a number": {"maps": {"m": {"identity": 1, "files": {}}}},
    "refused: a ledger whose file hash is a number": {
        "maps": {"m": {"identity": {}, "files": {"m.csv": 5}}}},
    "refused: a ledger whose maps are a list": {"maps": [1, 2]},
}


@pytest.mark.parametrize("case", list(LEDGERS), ids=list(LEDGERS))
def test_a_ledger_of_another_structure_is_one_line(case, tmp_path):
    (tmp_path / "out").mkdir()
    _write(tmp_path / "out" / ".toymech-maps.json", json.dumps(LEDGERS[case]))
    _refused_before_any_work(tmp_path, TWO_LAYER + "knobs: {offset: [0]}\n",
                             ["map ledger=", ".toymech-maps.json", "move it aside"])


REACH_NO_RUN = {
    # name: (argv, fragments of the one line)
    "damage: train with a knob of Birth's other runs (the plain birth-control built before)": (
        ["train", "birth-control", "--size", "smoke", "--set", "d_model=64"],
        ["d_model='64'", "birth-control", "the same without it", "toymech list knobs birth"]),
    "damage: train with n_layers on the 1-layer smeared model": (
        ["train", "induction-1l-smeared", "--size", "smoke", "--set", "n_layers=3"],
        ["n_layers='3'", "induction-1l-smeared"]),
    "damage: train with a knob of study 3's other tasks": (
        ["train", "rt-needle-normal", "--size", "smoke", "--set", "modulus=7"],
        ["modulus='7'", "rt-needle-normal", "toymech list knobs random_transformers"]),
}


@pytest.mark.parametrize("case", list(REACH_NO_RUN), ids=list(REACH_NO_RUN))
def test_train_with_a_knob_that_does_not_change_its_run_is_refused(case, tmp_path):
    argv, fragments = REACH_NO_RUN[case]
    before = tree(tmp_path)
    with no_hang():
        code, out, err = run_cli([*argv, "--cache", str(tmp_path / "zoo")])
    refused(code, out, err, fragments)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("values", [[64], [64, 128]], ids=["one value", "two values"])
def test_damage_a_sweep_knob_that_does_not_change_its_run_is_refused(values, tmp_path):
    """A sweep grid's knob that does not change its experiment wrote the plain run as a row
    per value (``knob.d_model`` 64 and 128, one zoo key): refused before any work."""
    grid = _write(tmp_path / "g.yaml", "experiment: birth-control\nsize: smoke\nseed: [0]\n"
                  f"knobs: {{d_model: {values}}}\n")
    before = tree(tmp_path)
    with no_hang():
        code, out, err = run_cli(["sweep", str(grid), "--cache", str(tmp_path / "zoo"),
                                  "--backend", "local", "--no-progress"])
    refused(code, out, err, ["d_model=", "birth-control", "the same without it"])
    assert tree(tmp_path) == before


# --- one run, one row, one cell ------------------------------------------------------------

def test_handled_a_knob_of_one_experiment_maps_the_other_once(tmp_path):
    """``n_layers`` on a map of the 1-layer smeared model beside the 2-layer one: the 2-layer
    model gets a cell per value, the smeared one a single cell at the source's value, said in one
    line; every run once in the table, which the rerun and ``results --maps`` read back."""
    text = ("study: induction\nexperiment: [induction-1l-smeared, induction-2l]\nsize: smoke\n"
            "seeds: 1\nknobs: {n_layers: [1, 3]}\n")
    with no_hang(300):
        code, out, err = _map(tmp_path, text)
    assert code == 0, err[-3000:]
    said = [line for line in err.splitlines() if "does not change" in line]
    assert len(said) == 1 and "n_layers" in said[0] and "induction-1l-smeared" in said[0], err
    table = pd.read_csv(tmp_path / "out" / "m.csv", dtype=str)
    assert table["zoo_key"].is_unique and len(table) == 3, table
    smeared = table[table["experiment"] == "induction-1l-smeared"]
    assert smeared["knob.n_layers"].tolist() == ["2"]  # the source's value, once
    assert sorted(table[table["experiment"] == "induction-2l"]["knob.n_layers"]) == ["1", "3"]
    before = tree(tmp_path / "out")
    with no_hang(300):
        again = _map(tmp_path, text)
    assert again[0] == 0 and "0 run(s) measured now" in again[2], again[2][-2000:]
    code, out, err = run_cli(["results", "--pages", "--maps", str(tmp_path / "out" / "m.csv"),
                              "--data", str(tmp_path / "no-data"), "--out", str(tmp_path / "site")])
    assert code == 0, err[-2000:]
    assert set(before) <= set(tree(tmp_path / "out"))


def test_damage_two_float_values_apart_in_the_tenth_digit_are_two_cells(tmp_path):
    """Float knob values were written with 6 significant digits: 0.0010000001 and 0.0010000002
    were one cell ``lr 0.001`` holding seed 0 twice, and 0.0012345678 a row its rerun refused."""
    text = TWO_LAYER + "knobs: {lr: [0.0010000001, 0.0010000002, 0.0012345678]}\n"
    with no_hang(300):
        code, out, err = _map(tmp_path, text)
    assert code == 0, err[-3000:]
    table = pd.read_csv(tmp_path / "out" / "m.csv", dtype=str)
    assert table["knob.lr"].tolist() == ["0.0010000001", "0.0010000002", "0.0012345678"]
    assert table["zoo_key"].is_unique
    with no_hang(300):
        code, out, err = _map(tmp_path, text)
    assert code == 0 and "3 read back" in err, err[-3000:]


def test_damage_the_same_map_without_its_budget_policy_is_another_map(tmp_path):
    """The same map with and without ``until_converged`` kept a run twice (the continued run's
    row beside the plain one): a map's identity holds its policy now, so the second is refused
    in one line, before any work, the table as it was."""
    text = TWO_LAYER + "knobs: {offset: [0]}\n"
    with no_hang(300):
        code, out, err = _map(tmp_path, text + "until_converged: 80\n")
    assert code == 0, err[-3000:]
    before = tree(tmp_path / "out"), tree(tmp_path / "zoo")
    refused(*_map(tmp_path, text), ["name='m'", "another map", "until_converged 80",
                                     "this map's None"])
    assert (tree(tmp_path / "out"), tree(tmp_path / "zoo")) == before
    refused(*_map(tmp_path, text + "until_converged: 160\n"), ["another map", "160"])
    assert (tree(tmp_path / "out"), tree(tmp_path / "zoo")) == before


def test_damage_a_table_holding_one_run_twice_is_refused(tmp_path):
    """One run (experiment, knobs, seed) in two rows of other steps, as the two policies wrote
    it before: refused wherever the table is read, naming both rows."""
    from toymech.maps import ledger
    from toymech.studies import protocol

    study = protocol.study("induction")
    rows = []
    for steps in (40, 80):
        exp = study.named_experiments["induction-2l"].make(study.with_knobs("smoke", {}), 0)
        exp.train = exp.train.replace(steps=steps)
        rows.append({"study": "induction", "experiment": "induction-2l", "knob.offset": "0",
                     "seed": 0, "size": "smoke", "steps": steps, "zoo_key": exp.key(""),
                     "status": "ok", "label": "content"})
    table = pd.DataFrame(rows)
    table[ledger.ROW_HASH] = [ledger.row_hash(r) for r in table.to_dict("records")]
    with pytest.raises(ValueError, match=r"row 2 .*the same run \(experiment, knobs and seed\) "
                                         r"as row 1"):
        ledger.verify_rows(table, tmp_path / "m.csv", study)


# --- rows without their hash ------------------------------------------------------------------

@pytest.fixture(scope="module")
def mapped(tmp_path_factory):
    """One smoke map (one run) measured into ``out``: the tables the cases below edit."""
    root = tmp_path_factory.mktemp("mapped")
    with no_hang(300):
        code, out, err = _map(root, TWO_LAYER + "knobs: {offset: [0]}\n")
    assert code == 0, err[-3000:]
    return root


@pytest.fixture
def copy(mapped, tmp_path):
    shutil.copytree(mapped, tmp_path / "m")
    return tmp_path / "m"


def _edit(copy: Path, change) -> Path:
    table = copy / "out" / "m.csv"
    frame = pd.read_csv(table, dtype=str, keep_default_na=False)
    change(frame).to_csv(table, index=False)
    (copy / "out" / "m.parquet").unlink()
    (copy / "out" / ".toymech-maps.json").rename(copy / "ledger-moved-aside.json")  # as told
    # the cost record names the table before the edit: a map run refuses it first, naming it
    # (tests/test_map_costs.py); moved aside as that refusal tells, the rows are what is checked
    (copy / "out" / "m.cost.json").rename(copy / "cost-record-moved-aside.json")
    return table


def _label_content(blank_hash: bool, drop: tuple[str, ...] = ()):
    def change(frame):
        frame.loc[0, "label"] = "content"
        if blank_hash:
            frame.loc[0, "row_sha256"] = ""
        return frame.drop(columns=list(drop))
    return change


UNHASHED = {
    "damage: a label edited, its hash blanked (adopted into a new ledger before)": (
        _label_content(True), ["row 1", "label='content'", "not what its run measures"]),
    "damage: a label edited, the hash column dropped": (
        _label_content(False, ("row_sha256",)), ["row 1", "label='content'"]),
    "damage: a label edited, the hash and study columns dropped (looks older than hashes)": (
        _label_content(False, ("row_sha256", "study")), ["row 1", "label='content'"]),
}


@pytest.mark.parametrize("case", list(UNHASHED), ids=list(UNHASHED))
def test_rows_without_a_hash_are_measured_again_never_adopted(case, copy):
    change, fragments = UNHASHED[case]
    _edit(copy, change)
    before = tree(copy)
    with no_hang(300):
        code, out, err = run_cli(["map", str(copy / "m.yaml"), "--cache", str(copy / "zoo"),
                                  "--out", str(copy / "out"), "--no-progress"])
    assert code == 2 and "Traceback" not in err, err[-3000:]
    line = [x for x in stderr_lines(err) if x.startswith("toymech: error: ")]
    assert len(line) == 1 and all(f in line[0] for f in fragments), err[-3000:]
    table = copy / "out" / "m.csv"
    assert tree(copy)["out/m.csv"] == before["out/m.csv"], "the table was written"
    ledger = json.loads((copy / "out" / ".toymech-maps.json").read_text())
    assert all(h is None for h in ledger["maps"]["m"]["files"].values()), ledger  # not adopted
    assert "content" in table.read_text()


READ_BACK = {
    "damage: results of a table whose row hash is blank (published before)": (
        _label_content(True), ["row 1", "no row_sha256"]),
    "damage: results of a table whose hash column is dropped": (
        _label_content(False, ("row_sha256",)), ["no hashes", "removed"]),
}


@pytest.mark.parametrize("case", list(READ_BACK), ids=list(READ_BACK))
def test_results_refuse_rows_without_a_hash(case, copy):
    change, fragments = READ_BACK[case]
    table = _edit(copy, change)
    code, out, err = run_cli(["results", "--pages", "--maps", str(table), "--data",
                              str(copy / "no-data"), "--out", str(copy / "site")])
    refused(code, out, err, [str(table), *fragments])
    assert not (copy / "site").exists(), "a page was written"


def test_damage_results_refuse_a_row_with_a_blank_knob(copy):
    """Rows of two maps joined in one table (a knob column of one map blank in the other's rows,
    every row hash intact): ``results`` drew it as one map with ``nan`` cells; now refused,
    naming the row and the column, as the map's rerun refuses it."""
    table = _edit(copy, lambda f: f.assign(**{"knob.lr": ""}))
    code, out, err = run_cli(["results", "--pages", "--maps", str(table), "--data",
                              str(copy / "no-data"), "--out", str(copy / "site")])
    refused(code, out, err, [str(table), "row 1", "knob.lr is blank"])
    assert not (copy / "site").exists(), "a page was written"


def test_handled_rows_from_before_hashes_are_measured_again_and_kept_when_equal(copy):
    """A table of the time before row hashes (neither a hash nor a study column) whose rows are
    what their runs measure: measured again, said in one line, and written back with hashes."""
    _edit(copy, lambda f: f.drop(columns=["row_sha256", "study"]))
    with no_hang(300):
        code, out, err = run_cli(["map", str(copy / "m.yaml"), "--cache", str(copy / "zoo"),
                                  "--out", str(copy / "out"), "--no-progress"])
    assert code == 0, err[-3000:]
    said = [line for line in err.splitlines() if "without a row hash" in line]
    assert len(said) == 1 and "measured again" in said[0], err[-3000:]
    table = pd.read_csv(copy / "out" / "m.csv", dtype=str)
    assert len(table) == 1 and table["row_sha256"].str.fullmatch("[0-9a-f]{64}").all(), table


# --- a user's files in a report folder --------------------------------------------------------

def _costs_list(root: Path) -> None:
    _write(root / "reports" / "costs.json", json.dumps(["my", "own", "list"]))


def _costs_dict(root: Path) -> None:
    _write(root / "reports" / "costs.json", json.dumps({"budget": 100}))


def _marker(root: Path) -> None:
    _write(root / "reports" / ".toymech-reports.json", json.dumps(["mine"]))


REPORT_FOLDERS = {
    "damage: a user's costs.json, a JSON list, in --report (read as {} and replaced before)": (
        _costs_list, ["costs.json toymech did not write"]),
    "damage: a user's costs.json, another object, in --report": (
        _costs_dict, ["costs.json toymech did not write"]),
    "refused: a user's .toymech-reports.json in --report": (
        _marker, [".toymech-reports.json toymech did not write"]),
}


@pytest.mark.parametrize("case", list(REPORT_FOLDERS), ids=list(REPORT_FOLDERS))
@pytest.mark.parametrize("command", ["map", "report"])
def test_a_users_files_in_a_report_folder_are_never_replaced(case, command, tmp_path):
    setup, fragments = REPORT_FOLDERS[case]
    (tmp_path / "reports").mkdir()
    setup(tmp_path)
    spec = _write(tmp_path / "m.yaml", TWO_LAYER + "knobs: {offset: [0]}\n")
    notebook = (Path(__file__).resolve().parents[1] / "notebooks"
                / "01_induction_repeated_blocks.ipynb")
    argv = (["map", str(spec), "--cache", str(tmp_path / "zoo"), "--out", str(tmp_path / "out"),
             "--no-progress", "--report", str(tmp_path / "reports")] if command == "map" else
            ["report", str(notebook), "--size", "smoke", "--cache", str(tmp_path / "zoo"),
             "--out", str(tmp_path / "reports")])
    before = tree(tmp_path)
    with no_hang():
        code, out, err = run_cli(argv, TOYMECH_CACHE=os.environ.get("TOYMECH_CACHE"))
    refused(code, out, err, fragments)
    assert tree(tmp_path) == before, "a file was written or replaced"


def test_damage_results_pages_never_replace_or_remove_a_users_files(copy):
    """``results --pages --out`` replaced a user's ``index.md`` and removed every .png and .json
    of a ``figures/`` there, and gave a traceback for an --out that is a file: now the user's
    page is refused in one line, a user's picture kept, a file named in one line."""
    table = str(copy / "out" / "m.csv")
    site = copy / "site"
    (site / "figures").mkdir(parents=True)
    _write(site / "figures" / "holiday.png", "mine")
    _write(site / "index.md", "my notes")
    argv = ["results", "--pages", "--maps", table, "--data", str(copy / "no-data"), "--out"]
    before = tree(copy)
    refused(*run_cli([*argv, str(site)]), ["out=", "index.md toymech did not write"])
    refused(*run_cli([*argv, str(site / "index.md")]), ["--out=", "index.md", "not a file"])
    assert tree(copy) == before
    (site / "index.md").unlink()
    code, out, err = run_cli([*argv, str(site)])
    assert code == 0, err[-3000:]
    assert (site / "figures" / "holiday.png").read_text() == "mine"
    assert (site / "index.md").is_file()


# --- a study given a setting that is not its own ------------------------------------------------

@pytest.mark.parametrize("name", ["induction", "birth", "random_transformers"])
def test_damage_a_study_refuses_a_setting_with_knobs_not_its_own(name):
    """Another study's Setting, or a knob with a typo, through the Python API: its plain runs
    were built while ``describe`` called it a variant; now one line naming the knob, the study
    and its knobs, for every other study's knobs."""
    from toymech.core import Setting
    from toymech.studies import knobs as study_knobs
    from toymech.studies import protocol

    study = protocol.study(name)
    cases = [(Setting("smoke", {"blok_len": 4}), ["knob='blok_len'"])]
    for other in protocol.STUDIES:
        for k, knob in protocol.study(other).knobs.items():
            if k not in study.knobs:
                value = study_knobs.jsonable_value(knob.source)
                cases.append((Setting("smoke", {k: value}), [f"knob='{k}'", "a knob of study"]))
    assert len(cases) > 1
    for setting, fragments in cases:
        with pytest.raises(ValueError) as got:
            study.experiments(setting, study.seeds_of("smoke", 0, 1))
        message = str(got.value)
        assert "\n" not in message and all(f in message for f in fragments), message
        assert f"toymech list knobs {name}" in message and "one of " in message, message
        if len(fragments) > 1:  # the study it names has the knob
            owner = message.split("a knob of study ")[-1].split("'")[1]
            assert owner != name and setting.knobs.keys() <= protocol.study(owner).knobs.keys()


FOREIGN = {"induction": {"modulus": 7}, "birth": {"blok_len": 4},
           "random_transformers": {"smear": "per_head"}}
OUT_OF_RANGE = {"induction": {"lr": 5.0}, "birth": {"d_model": 4},
                "random_transformers": {"n_layers": 99}}


@pytest.mark.parametrize("name", ["induction", "birth", "random_transformers"])
@pytest.mark.parametrize("knobs", [FOREIGN, OUT_OF_RANGE], ids=["not its knob", "out of range"])
def test_damage_describe_and_the_scorecard_refuse_a_setting_not_the_studys(name, knobs):
    """The scorecard's title called another study's Setting (or a value out of its range) "a
    variant" of this one, and study 3's ``describe`` took it as its plain size: refused now, in
    one line naming the knob."""
    from toymech.core import Setting
    from toymech.studies import protocol

    study, (knob, _), = protocol.study(name), *knobs[name].items()
    setting = Setting("smoke", knobs[name])
    for call in (lambda: study.describe(setting, 0, "cpu"),
                 lambda: study.scorecard([{}], setting, [0])):
        with pytest.raises(ValueError, match=rf"^(knob='{knob}'|{knob}=)") as got:
            call()
        assert "\n" not in str(got.value)


def test_damage_study_3_describes_the_plan_and_steps_of_its_variant():
    """Study 3's run line said the plain size's widths and steps at a variant that changes them
    (``width 64``, ``steps 30`` at smoke), without naming the variant."""
    from toymech.studies import protocol
    from toymech.studies.random_transformers.design import plan

    study = protocol.study("random_transformers")
    setting = study.with_knobs("smoke", {"width": 64, "steps": 30})
    line = study.describe(setting, 0, "cpu")
    small, large = plan(setting).widths
    assert large == 64 and f"widths {small} and 64 " in line, line
    assert "30 training steps per run" in line and "circuit imitation 30;" in line, line
    assert line.startswith(setting.described), line
    assert "a variant" not in study.describe("smoke", 0, "cpu")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_refused_a_setting_with_a_number_that_is_not_finite(value):
    from toymech.core import Setting

    with pytest.raises(ValueError, match=r"^knob lr=.* is not allowed: a finite number"):
        Setting("smoke", {"lr": value})
    with pytest.raises(ValueError, match=r"knob lr="):
        Setting("smoke", {"lr": [0.1, value]})


def test_damage_negative_zero_is_zero_one_run():
    """A float knob at -0.0 (``weight_decay: [-0.0]`` in a map, ``--set weight_decay=-0``) built
    another zoo key than at 0, so the same training ran and was kept twice, its table cell
    written ``-0``: now -0.0 is 0, one run, over every float knob that allows 0."""
    from toymech.core import Setting
    from toymech.studies import protocol

    checked = 0
    for name in protocol.STUDIES:
        study = protocol.study(name)
        for k, knob in study.knobs.items():
            if knob.kind != "float" or not knob.allowed[0] <= 0 <= knob.allowed[1]:
                continue
            assert study.with_knobs("smoke", {k: -0.0}).variant() == {k: "0"}
            for exp_name, named in study.named_experiments.items():
                keys = {named.make(setting, 0).key("") for setting in (
                    study.with_knobs("smoke", {k: 0.0}), study.with_knobs("smoke", {k: "-0"}),
                    Setting("smoke", {k: -0.0}))}
                assert len(keys) == 1, (name, k, exp_name, keys)
                checked += 1
    assert checked >= 1

# --- waits that say what they wait for --------------------------------------------------------

LOCKING = ["train", "sweep", "map", "ladder", "report", "results", "zoo verify"]


@pytest.mark.parametrize("command", LOCKING)
def test_every_command_that_takes_a_lock_takes_lock_timeout(command, capsys):
    from toymech.cli.parser import build_parser

    with pytest.raises(SystemExit):
        build_parser().parse_args([*command.split(), "--help"])
    assert "--lock-timeout SECONDS" in capsys.readouterr().out


def _hold(lock: Path, holder: subprocess.Popen) -> None:
    """Write ``lock`` as a live process (``holder``) would have taken it."""
    from toymech.devices import HOST, process_start

    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"pid": holder.pid, "host": HOST, "hostname": "here",
                                "start": process_start(holder.pid), "time": time.time(),
                                "nonce": "0" * 16}))


@pytest.fixture
def holder():
    # a holder that outlives any test however slow the machine: killed below, never timed out
    proc = subprocess.Popen([sys.executable, "-c", "import signal; signal.pause()"])
    yield proc
    proc.kill()
    proc.wait()


WAITS = {
    # name: (the lock held, as a function of the temporary folder and the map's spec)
    "handled: a held zoo entry (waited up to 6 hours before)": "entry",
    "handled: a held map table": "table",
}


@pytest.mark.parametrize("case", list(WAITS), ids=list(WAITS))
def test_a_held_lock_is_waited_for_at_most_lock_timeout(case, tmp_path, holder):
    from toymech.maps import check_map
    from toymech.maps.spec import map_trials
    from toymech.zoo import Zoo

    spec = _write(tmp_path / "m.yaml", TWO_LAYER + "knobs: {offset: [0]}\n")
    if WAITS[case] == "entry":
        trials, _ = map_trials(check_map({"study": "induction", "experiment": "induction-2l",
                                          "size": "smoke", "seeds": 1, "knobs": {"offset": [0]},
                                          "name": "m"}))
        zoo = Zoo(tmp_path / "zoo")
        lock = zoo.root / f".{zoo.path(trials[0].exp).name}.lock"
    else:
        lock = tmp_path / "out" / ".map-m.lock"
    _hold(lock, holder)
    before = tree(tmp_path)
    with no_hang(300):
        code, out, err = run_cli(["map", str(spec), "--cache", str(tmp_path / "zoo"), "--out",
                                  str(tmp_path / "out"), "--no-progress", "--lock-timeout", "1"])
    assert code == 1 and "Traceback" not in err, err[-3000:]
    errors = [x for x in err.splitlines() if x.startswith("toymech: error: ")]
    assert len(errors) == 1 and "locked by" in errors[0], err[-3000:]
    assert f"pid {holder.pid}" in errors[0] and "waited 1 s" in errors[0], errors
    waiting = [x for x in err.splitlines() if x.startswith("[toymech] waiting for")]
    assert len(waiting) == 1 and f"pid {holder.pid}" in waiting[0] and "at most 1 s" in waiting[0]
    assert not (tmp_path / "out" / "m.csv").exists(), "a row was written"
    assert lock.is_file()  # the holder's lock left alone
    after = tree(tmp_path)
    assert {k for k in after if k.startswith("out/") and "lock" not in k} <= {
        "out/.toymech-maps.json"} | {k for k in before if k.startswith("out/")}
    assert os.environ.get("TOYMECH_LOCK_TIMEOUT") is None  # restored after the command


# --- the cost of training, said before it starts ----------------------------------------------

BIG = "knobs: {batch: [4096], d_model: [512], n_layers: [8]}\n"


def test_damage_knobs_at_their_maxima_at_smoke_are_refused_without_yes(tmp_path):
    """About an hour of training at ``smoke`` started with nothing said before; now its cost is
    named and refused without ``--yes``, before any work."""
    line = _refused_before_any_work(tmp_path, TWO_LAYER + BIG,
                                    ["size='smoke'", "--yes", "reference steps", "smoke's 10,000"])
    assert "on one core of this machine" in line


@pytest.mark.parametrize("argv", [
    ["train", "induction-2l", "--size", "smoke", "--set", "batch=4096", "--set", "d_model=512",
     "--set", "n_layers=8"],
    ["train", "induction-2l", "--size", "smoke", "--steps", "100000"],
], ids=["train with knobs at their maxima", "train with 100,000 steps"])
def test_refused_a_smoke_run_above_its_budget_through_train(argv, tmp_path):
    before = tree(tmp_path)
    code, out, err = run_cli([*argv, "--cache", str(tmp_path / "zoo")])
    refused(code, out, err, ["size='smoke'", "--yes", "reference steps"])
    assert tree(tmp_path) == before


def test_refused_a_smoke_report_variant_above_its_budget(tmp_path):
    notebook = (Path(__file__).resolve().parents[1] / "notebooks"
                / "01_induction_repeated_blocks.ipynb")
    before = tree(tmp_path)
    with no_hang():
        code, out, err = run_cli(["report", str(notebook), "--size", "smoke", "--set",
                                  "batch=4096", "--set", "d_model=512", "--set", "n_layers=8",
                                  "--cache", str(tmp_path / "zoo"), "--out",
                                  str(tmp_path / "reports")],
                                 TOYMECH_CACHE=os.environ.get("TOYMECH_CACHE"))  # restored after
    refused(code, out, err, ["size='smoke'", "--yes", "the studies' main runs"])
    assert tree(tmp_path) == before


def test_refused_a_smoke_sweep_above_its_budget(tmp_path):
    grid = _write(tmp_path / "g.yaml", "experiment: induction-2l\nsize: smoke\nseed: [0]\n" + BIG)
    before = tree(tmp_path)
    code, out, err = run_cli(["sweep", str(grid), "--cache", str(tmp_path / "zoo"),
                              "--backend", "local", "--no-progress"])
    refused(code, out, err, ["size='smoke'", "--yes"])
    assert tree(tmp_path) == before


def test_handled_the_cost_is_said_before_training_without_a_terminal(tmp_path):
    with no_hang(300):
        code, out, err = _map(tmp_path, TWO_LAYER + "knobs: {offset: [0]}\n")
    assert code == 0, err[-3000:]
    lines = err.splitlines()
    cost = [i for i, x in enumerate(lines) if "run(s) to train, about" in x]
    trained = [i for i, x in enumerate(lines) if "trainable" in x]
    assert len(cost) == 1 and trained and cost[0] < trained[0], err[-3000:]
    assert "reference steps" in lines[cost[0]] and "ms here now" in lines[cost[0]]


# --- calibration seeds ------------------------------------------------------------------------

def test_handled_calibration_seeds_in_a_map_are_named_and_marked(tmp_path, monkeypatch):
    """A map over the seeds a study's thresholds were chosen on judged them without a mark;
    now one line names them and their rows say ``calibration``."""
    from toymech.studies import protocol

    study = protocol.study("induction")
    monkeypatch.setitem(study.settings.calibration, "smoke", (0,))
    with no_hang(300):
        code, out, err = _map(tmp_path, TWO_LAYER.replace("seeds: 1", "seeds: [0, 5]")
                              + "knobs: {offset: [0]}\n")
    assert code == 0, err[-3000:]
    said = [x for x in err.splitlines() if "calibration seeds" in x]
    assert len(said) == 1 and "seed(s) 0 " in said[0], err[-3000:]
    table = pd.read_csv(tmp_path / "out" / "m.csv")
    assert dict(zip(table["seed"], table["calibration"])) == {0: True, 5: False}
