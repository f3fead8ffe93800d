"""A map's cost record (``maps.cost_record``): ``toymech map`` writes ``<name>.cost.json`` beside
its table, one entry per invocation that trained or measured something (a rerun with nothing to
do leaves it as it was, a resumed map adds its own), the command in its public form, the
machine and the table's sha256; a user's file of that name is refused and kept; the results
pages show the cost from it only for the table it names. One tiny smoke map: 1 run, then 2."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest
import yaml

from toymech import maps
from toymech.cli import main
from toymech.maps.ledger import LEDGER, read_ledger
from toymech.report import pages

SPEC = {"study": "induction", "experiment": "induction-2l", "size": "smoke", "seeds": [0],
        "knobs": {"block_len": [6]}, "name": "tiny"}


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _run(spec: dict, zoo: Path, out: Path):
    return maps.run_map(spec, cache_dir=zoo, out=out, backend="local", device="cpu",
                        progress=False, log=None)


@pytest.fixture(scope="module")
def mapped(tmp_path_factory) -> dict[str, Path]:
    """The tiny map run once from the command line (1 run trained), kept as it was then, and
    the folders it used."""
    root = tmp_path_factory.mktemp("tiny-map")
    grid = root / "tiny.yaml"
    grid.write_text(yaml.safe_dump(SPEC))
    zoo, out = root / "zoo", root / "out"
    code = main(["map", str(grid), "--cache", str(zoo), "--out", str(out), "--backend", "local",
                 "--no-progress", "--device", "cpu"])
    assert code == 0
    first = root / "first"
    shutil.copytree(out, first)
    return {"root": root, "zoo": zoo, "out": out, "first": first}


def test_a_map_records_what_it_cost_beside_its_table(mapped):
    out = mapped["first"]
    record = json.loads((out / "tiny.cost.json").read_text())
    assert record["kind"] == "map" and record["map"] == "tiny"
    assert record["table_sha256"] == _sha(out / "tiny.csv")
    [entry] = record["invocations"]
    assert entry["wall_s"] > 0 and entry["core_s"] > 0
    assert entry["runs"] == {"trained": 1, "measured": 1, "loaded": 0, "failed": 0}
    # the command as typed, with nothing of this machine: its folders are placeholders
    assert entry["command"].startswith("toymech map <path> --cache <zoo> --out <out>")
    assert str(mapped["root"]) not in (out / "tiny.cost.json").read_text()
    machine = entry["machine"]
    assert machine["cores"] >= 1 and machine["reference_steps_per_s"] > 0
    assert machine["device"] == "cpu" and machine["torch"] and machine["cuda"] in (True, False)
    assert entry["commit"] and entry["date"].endswith("UTC")
    # the totals are the one invocation's; the ledger holds the record as toymech's
    assert (record["wall_s"], record["core_s"]) == (entry["wall_s"], entry["core_s"])
    assert record["runs"] == entry["runs"] and record["from_empty_table"] is True
    assert record["reference_steps"] == round(entry["wall_s"] * machine["reference_steps_per_s"])
    files = read_ledger(out)["maps"]["tiny"]["files"]
    assert files["tiny.cost.json"] == _sha(out / "tiny.cost.json")


def test_a_rerun_with_nothing_to_do_adds_nothing_and_a_resumed_map_adds_its_invocation(mapped):
    zoo, out = mapped["zoo"], mapped["out"]
    before = (out / "tiny.cost.json").read_bytes()
    _run(SPEC, zoo, out)  # every run there: nothing trained, nothing measured
    assert (out / "tiny.cost.json").read_bytes() == before
    _run({**SPEC, "seeds": [0, 1]}, zoo, out)  # the same map, one more seed
    record = json.loads((out / "tiny.cost.json").read_text())
    first, second = record["invocations"]
    assert first == json.loads(before)["invocations"][0]
    assert second["runs"] == {"trained": 1, "measured": 1, "loaded": 0, "failed": 0}
    assert second["command"] == "run_map(...) from Python"
    assert record["runs"]["trained"] == 2 and record["runs"]["measured"] == 2
    assert record["wall_s"] == round(first["wall_s"] + second["wall_s"], 1)
    assert record["table_sha256"] == _sha(out / "tiny.csv") != json.loads(before)["table_sha256"]
    # the same runs mapped into another folder: measured from the zoo, nothing trained
    _run({**SPEC, "seeds": [0, 1]}, zoo, mapped["root"] / "again")
    again = json.loads((mapped["root"] / "again" / "tiny.cost.json").read_text())
    assert again["runs"] == {"trained": 0, "measured": 2, "loaded": 2, "failed": 0}


def test_a_table_moved_aside_starts_its_record_afresh(mapped, tmp_path):
    """The table moved aside (what toymech's own messages say to do to measure a map again):
    the next invocation's record holds that invocation only, the runs read from the zoo."""
    out = tmp_path / "out"
    shutil.copytree(mapped["first"], out)
    (out / "tiny.csv").rename(tmp_path / "tiny-aside.csv")
    _run(SPEC, mapped["zoo"], out)
    record = json.loads((out / "tiny.cost.json").read_text())
    [entry] = record["invocations"]
    assert entry["runs"] == {"trained": 0, "measured": 1, "loaded": 1, "failed": 0}
    assert record["from_empty_table"] is True and record["table_sha256"] == _sha(out / "tiny.csv")


def _another_tables_record(first: Path) -> str:
    """toymech's record of map ``tiny``, naming another table than the one beside it."""
    record = json.loads((first / "tiny.cost.json").read_text())
    return json.dumps({**record, "table_sha256": "0" * 64})


NOT_TOYMECH = "not written by toymech map"
USERS_FILES = {
    "a user's file alone": (lambda first: '["my notes"]\n', False, NOT_TOYMECH),
    "a user's file beside a table taken as this map's": (
        lambda first: '["my notes"]\n', True, NOT_TOYMECH),
    "a record of another table beside a table taken as this map's": (
        _another_tables_record, True, "the cost record of another table than the tiny.csv"),
}


@pytest.mark.parametrize("case", list(USERS_FILES), ids=list(USERS_FILES))
def test_a_users_file_of_the_records_name_is_refused_and_kept(mapped, tmp_path, case):
    """Into a folder with no ledger: a ``tiny.cost.json`` alone, or beside a table of this map
    that toymech takes as its own (one whose ledger was moved aside), that is not toymech's
    record of that table: refused in one line before any work, the file as it was."""
    text, beside_a_table, says = USERS_FILES[case]
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "tiny.cost.json"
    mine.write_text(text(mapped["first"]))
    if beside_a_table:
        shutil.copy(mapped["first"] / "tiny.csv", out / "tiny.csv")
    before = mine.read_bytes()
    with pytest.raises(ValueError) as err:
        _run({**SPEC, "seeds": [0, 2]}, mapped["zoo"], out)
    message = str(err.value)
    assert "tiny.cost.json" in message and says in message
    assert "\n" not in message
    assert mine.read_bytes() == before and not (out / LEDGER).exists()


def test_with_its_ledger_moved_aside_a_map_keeps_its_own_record(mapped, tmp_path):
    """toymech's table and the record naming it, their ledger moved aside (what toymech's
    message on a damaged ledger says to do): both taken as toymech's, the record extended."""
    out = tmp_path / "out"
    shutil.copytree(mapped["first"], out)
    (out / LEDGER).rename(tmp_path / "ledger-aside.json")
    _run({**SPEC, "seeds": [0, 2]}, mapped["zoo"], out)
    record = json.loads((out / "tiny.cost.json").read_text())
    assert len(record["invocations"]) == 2 and record["table_sha256"] == _sha(out / "tiny.csv")
    assert record["invocations"][1]["runs"]["trained"] == 1


def test_the_results_page_shows_the_cost_from_the_record_for_its_table_only(mapped, tmp_path):
    shipped = tmp_path / "maps"
    shipped.mkdir()
    for name in ("tiny.csv", "tiny.cost.json"):
        shutil.copy(mapped["first"] / name, shipped / f"s1-tiny{name[len('tiny'):]}")
    (shipped / "gone.cost.json").write_text("{}")  # a record of a table that is not there
    record = json.loads((shipped / "s1-tiny.cost.json").read_text())
    page = pages.build_pages(tmp_path / "no-data", shipped)["induction.md"]
    measured = [line for line in page.splitlines() if line.startswith("- measured:")]
    assert len(measured) == 1
    assert f"{record['core_s']:,.0f} core-s" in measured[0]
    assert "1 run trained, 1 measured" in measured[0]
    assert f"machine: {record['machine']['cores']} cores" in measured[0]
    assert f"{record['machine']['reference_steps_per_s']} reference steps/s" in measured[0]
    assert record["command"] in page and "first recorded invocation extended" not in page
    # a record whose first invocation extended a table already there says so
    (shipped / "s1-tiny.cost.json").write_text(json.dumps({**record, "from_empty_table": False}))
    page = pages.build_pages(tmp_path / "no-data", shipped)["induction.md"]
    assert "first recorded invocation extended a table already there" in page
    # another table of that name (its bytes differ): the record's cost is not its
    table = shipped / "s1-tiny.csv"
    table.write_bytes(table.read_bytes() + b"\n")
    page = pages.build_pages(tmp_path / "no-data", shipped)["induction.md"]
    assert "- measured: not recorded with the table" in page
    assert f"{record['core_s']:,.0f} core-s" not in page
