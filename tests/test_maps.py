"""Maps (``toymech map``): a smoke map of 2 knobs x 2 values x 2 seeds from an empty zoo, killed
mid-run and resumed (only the missing runs train, the table has every run once), its tidy table
and per-cell summary, and its bad input refused before any work."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from toymech import maps
from toymech.maps.table import write_table
from toymech.studies import protocol

SPEC = {"study": "induction", "experiment": "induction-2l", "size": "smoke", "seeds": 2,
        "knobs": {"block_len": [6, "4-8"], "offset": [0, "0-3"]}, "name": "smoke-map"}


def _stored(zoo: Path) -> set[str]:
    if not zoo.is_dir():
        return set()
    return {p.name for p in zoo.iterdir() if not p.name.startswith(".")
            and (p / "config.json").is_file()}


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="kills the map's process group")
def test_smoke_map_killed_and_resumed(tmp_path):
    import yaml

    grid = tmp_path / "smoke-map.yaml"
    grid.write_text(yaml.safe_dump(SPEC))
    zoo = tmp_path / "zoo"
    command = [sys.executable, "-m", "toymech", "map", str(grid), "--cache", str(zoo),
               "--backend", "local", "--no-progress", "--device", "cpu"]
    env = {**os.environ, "TOYMECH_THREADS": "1"}
    first = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                             start_new_session=True)
    try:
        while not _stored(zoo) and first.poll() is None:
            time.sleep(0.05)  # no deadline: the map either trains or ends (checked next)
        assert first.poll() is None, "the map ended before it was killed"
        os.killpg(first.pid, signal.SIGKILL)
    finally:
        first.wait()
    before = _stored(zoo)
    assert 1 <= len(before) < 8
    reports = tmp_path / "reports"
    resumed = [c for c in command if c != "--no-progress"]  # with its live line, in a log
    done = subprocess.run([*resumed, "--report", str(reports)], capture_output=True, text=True,
                          env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"map smoke-map: 8 runs in 4 cells, {len(before)} in the zoo" in done.stderr
    assert "map smoke-map: 8 of 8 runs trained, 4 of 4 cells" in done.stderr
    assert "measured 8 rows" in done.stderr
    # the map's page, listed in the reports folder's index, opens with the map's finding
    page = (reports / "map-smoke-map.html").read_text()
    assert done.stdout.strip().split(" (")[0].split(";")[0] in page
    assert "map-smoke-map.html" in (reports / "index.html").read_text()
    table = pd.read_csv(zoo / "maps" / "smoke-map.csv", dtype={"zoo_key": str})
    assert len(table) == 8 and table["zoo_key"].is_unique
    pd.testing.assert_frame_equal(maps.read_table(zoo / "maps" / "smoke-map.csv"),
                                  pd.read_parquet(zoo / "maps" / "smoke-map.parquet"))
    assert set(table["knob.block_len"].astype(str)) == {"6", "4-8"}
    assert set(table["knob.offset"].astype(str)) == {"0", "0-3"}
    assert set(table["seed"]) == {0, 1} and (table["status"] == "ok").all()
    assert set(table["label"].dropna()) <= {"content", "partial", "position"}
    assert set(table["state"]) <= {"learned", "untrained", "still learning"}
    assert table["panel"].nunique() == 1  # every cell judged on the one panel of the map
    assert "Label 'content'" in done.stdout
    # untouched: the entries the killed run stored were read back, not trained again
    assert before <= _stored(zoo) and len(_stored(zoo)) == 8
    # a rerun measures nothing new
    again = maps.run_map({**SPEC}, cache_dir=zoo, backend="local", progress=False, log=None)
    assert len(again) == 8


def test_cells_and_finding_count_labels():
    table = pd.DataFrame({
        "experiment": ["induction-2l"] * 6,
        "knob.block_len": ["6", "6", "6", "4-8", "4-8", "4-8"],
        "seed": [3, 4, 5, 3, 4, 5],
        "loss.test": [0.7, 0.8, 0.9, 1.0, 1.1, 1.2],
        "label": ["position", "position", "position", "content", "content", "position"]})
    c = maps.cells(table, numbers=("loss.test",)).set_index("knob.block_len")
    assert c.loc["6", "share position"] == 1.0 and c.loc["6", "share content"] == 0.0
    assert c.loc["4-8", "share content"] == pytest.approx(2 / 3)
    assert c.loc["4-8", "median loss.test"] == pytest.approx(1.1)
    assert c.loc["4-8", "low content"] == pytest.approx(0.0943, abs=1e-4)  # 2 of 3, exact
    assert c.loc["6", "high content"] == pytest.approx(1 - 0.025 ** (1 / 3))  # 0 of 3
    text = maps.finding(table, "content")
    assert "every seed in 0 of 2 cells" in text
    assert "some seeds in 1 (block_len 4-8: 2 of 3 [0.09, 0.99])" in text


@pytest.mark.parametrize("change, fragment", [
    ({"study": "nope"}, "study='nope' is not allowed"),
    ({"experiment": "birth-simplified"}, "experiment='birth-simplified' is not allowed"),
    ({"knobs": {}}, "knobs={} is not allowed"),
    ({"knobs": {"block_len": []}}, "knobs['block_len']=[] is not allowed"),
    ({"knobs": {"block_len": ["x"]}}, "block_len='x' is not allowed"),
    ({"knobs": {"embeddings": ["trained"]}}, "a knob of study 'birth'"),
    ({"seeds": 0}, "seeds=0 is not allowed"),
    ({"seeds": [1, 1]}, "each seed once"),
    ({"size": "huge"}, "size='huge' is not allowed"),
    ({"colour": "red"}, "map key='colour' is not allowed"),
    ({"name": "../x"}, "name='../x' is not allowed"),
])
def test_bad_maps_refused_before_any_work(tmp_path, change, fragment):
    with pytest.raises(ValueError, match=fragment.replace("[", r"\[").replace("(", r"\(")):
        maps.run_map({**SPEC, **change}, cache_dir=tmp_path / "zoo", log=None)
    assert not (tmp_path / "zoo").exists()


@pytest.mark.parametrize("path", sorted((Path(__file__).resolve().parents[1] / "specs" / "maps")
                                        .glob("*.yaml")), ids=lambda p: p.name)
def test_shipped_maps_are_valid(path):
    spec = maps.check_map({**maps.load_map(path), "name": path.stem})
    assert len(spec["seeds"]) >= 3 and not set(spec["seeds"]) & {0, 1, 2}  # no calibration seed


def test_table_as_csv_and_parquet_reads_back_the_same(tmp_path):
    """``toymech map`` writes its table twice, ``<name>.csv`` and ``<name>.parquet``: read with
    pandas (``maps.read_table`` for the CSV's text columns, ``pd.read_parquet``) both give the
    frame that was written, knobs as text (``"6"`` stays a knob value, not a number)."""
    table = pd.DataFrame({"experiment": ["induction-2l"] * 3, "knob.block_len": ["6", "6", "4-8"],
                          "knob.offset": ["0", "1", "0"], "seed": [3, 4, 3], "size": "smoke",
                          "zoo_key": ["0012", "0034", "0056"], "commit": "abc", "status": "ok",
                          "loss.test": [0.5, float("nan"), 1.25], "solved.shifted": "yes",
                          "label": ["content", "position", "neither"]})
    path = tmp_path / "m.csv"
    write_table(table, path)
    csv, parquet = maps.read_table(path, verify=False), pd.read_parquet(tmp_path / "m.parquet")
    pd.testing.assert_frame_equal(csv, parquet)
    pd.testing.assert_frame_equal(csv, table)
    assert maps.read_table(tmp_path / "m.parquet", verify=False)["zoo_key"].tolist() == [
        "0012", "0034", "0056"]
    with pytest.raises(ValueError, match="row 1 .* is not the run its experiment"):
        maps.read_table(path)  # the one reader checks every row unless told not to
    # the check can fail: the CSV read naively loses the text (zoo keys lose their zeros)
    assert not pd.read_csv(path).equals(parquet)


@pytest.mark.parametrize("grid, labels", [
    ("s2-ff.yaml", {"in-context head", "no in-context head"}),
    ("s3-layers.yaml", {"solved", "not solved", ""}),  # "": a run untrained or still learning
], ids=["birth", "random_transformers"])
def test_every_study_maps_at_smoke(tmp_path, grid, labels):
    """Each study's shipped map, at smoke with one seed (its two cells): a row per run with the
    study's own measurements and its mechanism label, and the finding printed."""
    path = Path(__file__).resolve().parents[1] / "specs" / "maps" / grid
    zoo = tmp_path / "zoo"
    done = subprocess.run([sys.executable, "-m", "toymech", "map", str(path), "--size", "smoke",
                           "--seeds", "1", "--cache", str(zoo), "--backend", "local",
                           "--no-progress", "--device", "cpu"], capture_output=True, text=True,
                          env={**os.environ, "TOYMECH_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    table = maps.read_table(zoo / "maps" / f"{path.stem}.csv")
    assert len(table) == 2 and (table["status"] == "ok").all() and table["seed"].nunique() == 1
    knob = next(c for c in table.columns if c.startswith("knob."))
    assert table[knob].nunique() == 2
    # a label only on a run that learned; the others carry their state (untrained at smoke)
    state = table["state"] if "state" in table else pd.Series("learned", index=table.index)
    learned = table[state == "learned"]
    assert {str(label).split(";")[0] for label in learned["label"]} <= labels
    assert set(state) <= {"learned", "untrained", "still learning"}
    assert done.stdout.startswith("Label '")
    assert set(table["study"]) == {__import__("yaml").safe_load(path.read_text())["study"]}


def test_a_table_names_its_study_and_older_tables_are_still_read():
    from toymech.maps.page import study_for

    runs = pd.DataFrame({"experiment": ["induction-2l", "induction-2l"]})
    assert study_for(runs.assign(study="induction")).map_label == "content"
    assert study_for(runs).map_label == "content"  # written before the study column: by experiment
    with pytest.raises(ValueError, match="table study"):
        study_for(runs.assign(study=["induction", "birth"]))
    with pytest.raises(ValueError, match="table experiments"):
        study_for(runs.assign(study="birth"))  # the column and the runs disagree


def test_untrained_runs_map_to_no_mechanism():
    """The null: an untrained model of each study's map carries no mechanism label (study 1:
    not content; Birth: untrained, no label; study 3: untrained, no label)."""
    from toymech import experiments
    from toymech.models import build_model
    from toymech.studies import birth, induction
    from toymech.studies import random_transformers as rt
    from toymech.zoo.store import ZooEntry

    one = induction.STUDY.map_row(build_model(induction.experiment("induction-2l", "smoke", 3).model),
                            "smoke", 3)
    assert one["label"] == "" and one["state"] == "untrained" and one["beyond_baseline"] < 0
    two = birth.STUDY.map_row(build_model(birth.experiment("smoke", 3).model), "smoke", 3)
    assert two["state"] == "untrained" and two["label"] == "" != birth.STUDY.map_label
    assert two["probe.W_O2.init"] == two["probe.W_O2.final"]
    exp = experiments.get("rt-modular_addition-random", size="smoke", seed=3)
    three = rt.STUDY.map_row(ZooEntry(build_model(exp.model), exp.to_dict(), False, Path(".")),
                       "smoke", 3)
    assert three["label"] == "" and three["state"] == "untrained" and three["solved"] == "no"
    with pytest.raises(ValueError, match="run='HookedTransformer' is not allowed"):
        rt.STUDY.map_row(build_model(exp.model), "smoke", 3)


def _d_model_table(labels: dict[str, list[str]]) -> pd.DataFrame:
    return pd.DataFrame([{"experiment": "induction-2l", "knob.d_model": d, "seed": s,
                          "status": "ok", "label": lab}
                         for d, labs in labels.items() for s, lab in zip((3, 4, 5), labs)])


def test_refinements_add_seeds_where_intervals_are_widest_then_midpoints():
    from toymech.studies import induction

    spec = maps.check_map({**SPEC, "knobs": {"d_model": [16, 32, 64]}, "seeds": [3, 4, 5]})
    table = _d_model_table({"16": ["neither"] * 3, "32": ["content", "content", "neither"],
                            "64": ["content"] * 3})
    fresh = [s for s in induction.seeds_of("smoke", 0, 10) if s not in (3, 4, 5)]
    # 2 of 3 (0.90 wide) first, then 0 of 3 and 3 of 3 (0.71 each: unanimous is not certain)
    parts = maps.refinements(table, spec, 5)
    assert [(p["knobs"], p["seeds"]) for p in parts] == [
        ({"d_model": ["32"]}, fresh[:2]), ({"d_model": ["16"]}, fresh[:2]),
        ({"d_model": ["64"]}, fresh[:1])]
    # each cell at most doubled (9 runs), then the midpoint between 16 (neither) and 32
    parts = maps.refinements(table, spec, 12)
    assert [(p["knobs"], p["seeds"]) for p in parts] == [
        ({"d_model": ["32"]}, fresh[:3]), ({"d_model": ["16"]}, fresh[:3]),
        ({"d_model": ["64"]}, fresh[:3]), ({"d_model": ["24"]}, [3, 4, 5])]
    assert maps.refinements(table, spec, 0) == []
    # cells whose intervals are narrow enough (six unanimous seeds: 0.46 wide) and agreeing
    # neighbours: nothing to refine (the check can fail)
    calm = pd.DataFrame([{"experiment": "induction-2l", "knob.d_model": d, "seed": s,
                          "status": "ok", "label": "neither"}
                         for d in ("16", "32", "64") for s in (3, 4, 5, *fresh[:3])])
    assert maps.refinements(calm, spec, 9) == []
    # the same cells with three seeds each: every one gets seeds, none a midpoint
    parts = maps.refinements(_d_model_table({d: ["neither"] * 3 for d in ("16", "32", "64")}),
                             spec, 9)
    assert [p["seeds"] for p in parts] == [fresh[:3]] * 3


def _measured_by(study, map_row):
    """``study`` with its map measurement replaced by the function ``map_row``: an instance of a
    subclass of its class."""
    return type("Measured", (type(study),), {"map_row": lambda self, *a, **k: map_row(*a, **k)})()


def test_refine_trains_more_seeds_and_marks_them(tmp_path, monkeypatch):
    """``run_map(refine=N)`` on a cell whose seeds split: N more runs trained and measured, each
    row marked refined; the page's cell says so; a rerun adds nothing unasked."""
    from toymech.maps.page import MapPage
    from toymech.studies import induction

    def by_parity(run, size, seed, panel=None):  # a label that splits by seed, deterministically
        return {"loss.test": float(seed), "label": "content" if seed % 2 else "neither"}

    monkeypatch.setitem(protocol._REGISTERED, "induction",  # the registered Study's measurement
                        _measured_by(induction.STUDY, by_parity))
    spec = {**SPEC, "knobs": {"block_len": [6]}, "seeds": [3, 4]}
    zoo = tmp_path / "zoo"
    table = maps.run_map(spec, cache_dir=zoo, backend="local", device="cpu", progress=False,
                         refine=2, log=None)
    assert len(table) == 4 and table["refined"].tolist() == [False, False, True, True]
    assert not set(table["seed"][2:]) & {3, 4}
    again = maps.run_map(spec, cache_dir=zoo, backend="local", device="cpu", progress=False,
                         log=None)
    pd.testing.assert_frame_equal(again, maps.read_table(zoo / "maps" / "smoke-map.csv"))
    assert len(again) == 4 and again["refined"].sum() == 2
    page = MapPage.of(again)
    assert page.cells["refined"].tolist() == [True]
    assert page.figure().data[0].text[0].endswith("<br>refined")


def test_report_folder_refused_before_any_training(tmp_path):
    """``toymech map --report DIR`` with a DIR holding pages toymech did not write: one line
    naming it, exit 2, before anything trains (the zoo is not created)."""
    import yaml

    grid = tmp_path / "m.yaml"
    grid.write_text(yaml.safe_dump(SPEC))
    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "home.html").write_text("<p>mine</p>")
    done = subprocess.run([sys.executable, "-m", "toymech", "map", str(grid), "--cache",
                           str(tmp_path / "zoo"), "--report", str(tmp_path / "site")],
                          capture_output=True, text=True)
    assert done.returncode == 2, done.stderr[-500:]
    assert "report=" in done.stderr and "home.html" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not (tmp_path / "zoo").exists()


# the shipped tables, and study 1's tables of the previous rule (kept as tables a user may hold)
SHIPPED_TABLES = sorted([*(Path(__file__).resolve().parents[1] / "docs" / "maps").glob("*.csv"),
                         *(Path(__file__).resolve().parent / "data" / "maps_before").glob("*.csv")])


def test_the_shipped_tables_are_found_wherever_the_tests_run():
    assert len(SHIPPED_TABLES) >= 6  # the parametrised test below is never empty


@pytest.mark.parametrize("path", SHIPPED_TABLES, ids=lambda p: p.name)
def test_a_table_written_before_the_maps_package_loads_and_extends_unchanged(path, tmp_path):
    """A map table written by the previous main (docs/maps/*.csv): read back as a map run reads
    it before extending, one more row written beside its rows, its old rows read back the same;
    its cells hold every run once."""
    from toymech.maps.summary import cell_groups
    from toymech.maps.table import read_or_empty

    old = maps.read_table(path)  # every row checked (verify=True): the shipped tables still read
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    table = read_or_empty(copy)
    pd.testing.assert_frame_equal(table, old)
    more = old.iloc[[0]].assign(seed=10_000, zoo_key="a-new-run")
    write_table(pd.concat([table, more], ignore_index=True), copy)
    back = maps.read_table(copy, verify=False)  # a made-up row: the text read back, unchecked
    assert len(back) == len(old) + 1 and back["zoo_key"].iloc[-1] == "a-new-run"
    pd.testing.assert_frame_equal(back.iloc[:len(old)][list(old.columns)], old)
    assert sum(c.n for c in cell_groups(old)) == len(old)


def test_a_grid_with_knobs_keeps_the_trial_ids_and_zoo_keys_of_the_previous_main():
    """Knobs are a field of a trial now (``Trial.knobs``), not ``knob.`` overrides: a sweep's
    trial ids (what a killed sweep resumes by) and zoo keys are those the previous main wrote."""
    from toymech.grid import expand_grid
    from toymech.sweep.table import row

    trials = expand_grid({"experiment": ["induction-2l"], "size": "smoke", "seed": [3],
                          "knobs": {"block_len": [6, "4-8"]}, "overrides": {"train.lr": [0.001]}})
    assert [(t.id, t.key) for t in trials] == [
        ("induction-2l-smoke-s3-689d0c82", "cc0677f201a6a60a"),
        ("induction-2l-smoke-s3-ddc7d110", "f6941f593fc95d89")]
    assert [t.knobs for t in trials] == [{"block_len": 6}, {"block_len": "4-8"}]
    assert list(row(trials[0], "ok"))[:6] == ["trial", "experiment", "size", "seed", "train.lr",
                                              "knob.block_len"]


def test_a_trial_carries_the_setting_its_grid_built():
    """``Trial.setting`` is the study's ``with_knobs`` of the trial's size and knobs, built once
    by the grid: two spellings of one knob value are one Setting (the table keeps each column
    as given), the source's value is the plain size, and the trial's run is built from it."""
    from toymech.core import Setting
    from toymech.grid import expand_grid
    from toymech.sweep.table import explicit_trials

    study = protocol.study("induction")
    trials = expand_grid({"experiment": ["induction-2l"], "size": "smoke", "seed": [3],
                          "knobs": {"block_len": [6, "4-8", [4, 5, 6, 7, 8]]}})
    assert [t.setting for t in trials] == [study.with_knobs("smoke", t.knobs) for t in trials]
    assert trials[0].setting == Setting("smoke") and trials[0].size == "smoke"
    assert trials[1].setting == trials[2].setting != Setting("smoke")
    assert trials[1].knobs != trials[2].knobs and trials[1].id != trials[2].id  # as given
    made = study.named_experiments["induction-2l"].make
    assert [t.key for t in trials] == [made(t.setting, 3).key() for t in trials]
    assert trials[1].key == trials[2].key != trials[0].key
    explicit = explicit_trials({"experiments": [trials[0].exp]})
    assert explicit[0].setting is None and explicit[0].size == ""


def test_a_knob_left_at_the_source_value_for_one_experiment_resets_its_setting_too():
    """``map_trials`` sets a knob that changes none of an experiment's runs to the source's
    value in that experiment's trials: their setting follows, so the row is measured at the
    setting its knobs say (the smeared model's cell at n_layers 2 is the plain size)."""
    from toymech.core import Setting
    from toymech.maps.spec import check_map, map_trials

    spec = check_map({"study": "induction", "experiment": ["induction-1l-smeared", "induction-2l"],
                      "size": "smoke", "seeds": 1, "knobs": {"n_layers": [1, 3]}, "name": "m"})
    trials, notes = map_trials(spec)
    study = protocol.study("induction")
    assert len(notes) == 1 and len(trials) == 3
    assert [t.setting for t in trials] == [study.with_knobs("smoke", t.knobs) for t in trials]
    smeared = [t for t in trials if t.experiment == "induction-1l-smeared"]
    assert [t.setting for t in smeared] == [Setting("smoke")]
    assert sorted(dict(t.setting.knobs)["n_layers"] for t in trials
                  if t.experiment == "induction-2l") == [1, 3]


def test_a_continued_run_takes_its_shorter_row_s_place(tmp_path, monkeypatch):
    """The longer run's row replaces the shorter one where it stood, so the table keeps the
    grid's order of cells and seeds (which the page and the findings read)."""
    from toymech.studies import induction

    def seed_0_learns_slowly(run, size, seed, panel=None):
        still = seed == 0 and int(run.meta["train"]["steps"]) < 80
        return {"state": "still learning" if still else "learned",
                "label": None if still else "content"}

    monkeypatch.setitem(protocol._REGISTERED, "induction",
                        _measured_by(induction.STUDY, seed_0_learns_slowly))
    spec = {**SPEC, "knobs": {"block_len": [6]}, "seeds": [0, 1], "until_converged": 80}
    table = maps.run_map(spec, cache_dir=tmp_path / "zoo", backend="local", device="cpu",
                         progress=False, log=None)
    assert table["seed"].tolist() == [0, 1] and table["steps"].tolist() == [80, 40]


def test_runs_still_learning_are_continued_until_the_cap(tmp_path, monkeypatch):
    """The budget policy (``until_converged``): a run its study calls still learning is continued
    (steps doubled, at most the cap) and its row replaced by the longer run's; one that is still
    learning at the cap is ``budget exhausted``, a state and never a label."""
    from toymech.studies import induction

    def learns_until_80(run, size, seed, panel=None):  # still learning below 80 steps
        steps = int(run.meta["train"]["steps"])
        still = steps < 80 or seed == 1
        return {"loss.test": 1.0 / steps, "state": "still learning" if still else "learned",
                "label": None if still else "content"}

    monkeypatch.setitem(protocol._REGISTERED, "induction",  # the registered Study's measurement
                        _measured_by(induction.STUDY, learns_until_80))
    spec = {**SPEC, "knobs": {"block_len": [6]}, "seeds": [0, 1], "until_converged": 80}
    zoo = tmp_path / "zoo"
    table = maps.run_map(spec, cache_dir=zoo, backend="local", device="cpu", progress=False,
                         log=None)
    assert sorted(table["seed"]) == [0, 1] and table["steps"].tolist() == [80, 80]
    by_seed = table.set_index("seed")
    assert by_seed.loc[0, "state"] == "learned" and by_seed.loc[0, "label"] == "content"
    assert by_seed.loc[1, "state"] == "budget exhausted" and pd.isna(by_seed.loc[1, "label"])
    cell = maps.summary.cell_groups(table)[0]
    assert cell.n == 2 and cell.held("content") == 1 and cell.states() == {"budget exhausted": 1}
    again = maps.run_map(spec, cache_dir=zoo, backend="local", device="cpu", progress=False,
                         log=None)  # read again: the continued runs' shorter rows stay replaced
    assert again["seed"].tolist() == [0, 1] and again["steps"].tolist() == [80, 80]  # in place
    more = maps.run_map({**spec, "seeds": [0, 1, 2]}, cache_dir=zoo, backend="local",
                        device="cpu", progress=False, log=None)  # a later invocation continues
    assert sorted(more["seed"]) == [0, 1, 2] and set(more["steps"]) == {80}  # another run: its
    assert len(list((zoo / "maps").glob("*.converge-*.runs.csv"))) == 3  # own file, none lost
    with pytest.raises(ValueError, match="until_converged"):
        maps.run_map({**spec, "knobs": {"steps": [40]}}, cache_dir=zoo, log=None)


def test_without_the_budget_policy_a_run_still_learning_has_exhausted_its_budget(tmp_path,
                                                                               monkeypatch):
    """A map without ``until_converged`` gives each run its steps and no more: a run its study
    calls still learning is ``budget exhausted`` in the table (the study does not know the
    budget; the map does), counted in its cell and holding no label."""
    from toymech.studies import induction

    def seed_1_learning(run, size, seed, panel=None):
        return {"state": "still learning" if seed == 1 else "learned",
                "label": None if seed == 1 else "content"}

    monkeypatch.setitem(protocol._REGISTERED, "induction",
                        _measured_by(induction.STUDY, seed_1_learning))
    spec = {**SPEC, "knobs": {"block_len": [6]}, "seeds": [0, 1]}
    table = maps.run_map(spec, cache_dir=tmp_path / "zoo", backend="local", device="cpu",
                         progress=False, log=None).set_index("seed")
    assert table.loc[1, "state"] == "budget exhausted" and table.loc[0, "state"] == "learned"
    (cell,) = maps.summary.cell_groups(table.reset_index())
    assert cell.n == 2 and cell.held("content") == 1


def test_the_budget_policy_refuses_a_still_learning_row_without_steps():
    """A table written before the ``steps`` column (an old row, its cell empty) cannot say how far
    its run trained: the budget policy refuses it naming the column, never a bare ``int`` error;
    a row with its steps is continued (steps doubled)."""
    from toymech.maps import run as map_run

    row = {"study": "induction", "experiment": "induction-2l", "knob.block_len": "6", "seed": 0,
           "state": "still learning", "zoo_key": "k0"}
    spec = {**SPEC, "knobs": {"block_len": [6]}, "until_converged": 80}
    with pytest.raises(ValueError, match="steps"):
        map_run._still_learning(pd.DataFrame([{**row, "steps": float("nan")}]), spec)
    with pytest.raises(ValueError, match="steps"):
        map_run._still_learning(pd.DataFrame([{**row, "steps": ""}]), spec)
    [(part, refined)] = map_run._still_learning(pd.DataFrame([{**row, "steps": 40.0}]), spec)
    assert part["knobs"]["steps"] == [80] and part["seeds"] == [0] and not refined
    # a run out of an earlier, lower budget is continued under a higher cap; not at the cap
    out = {**row, "state": "budget exhausted"}
    [(part, _)] = map_run._still_learning(pd.DataFrame([{**out, "steps": 40}]), spec)
    assert part["knobs"]["steps"] == [80]
    assert map_run._still_learning(pd.DataFrame([{**out, "steps": 80}]), spec) == []
