"""A map's files on disk: which files of a table folder toymech wrote, the lock that makes the
writers of one map take turns, and the checks every row read back must pass.

The ledger. ``<out>/.toymech-maps.json`` records, per map name, the map it is (study, size, knob
names and, where it has one, its budget policy: ``identity``, what changes its rows) and every
file toymech wrote for it with its sha256. Before any work a
map checks every file name it would write (``files_of``): a file there that the ledger does not
record (a user's ``<name>.csv``, ``<name>.parquet``, ``<name>.cost.json``, ...), or one changed
since toymech wrote it, is refused in one line naming it; so is a map of another identity under
the same name (the cost record, ``maps.cost_record``, is one of these files). A table written
before the ledger existed is taken when its columns are a map table's and its rows pass the
checks below (``legacy_table``); a row of it without its hash is measured again before anything
is written (``toymech map``: ``maps.run``), never adopted as it stands; beside it, a
``<name>.cost.json`` only when it is toymech's cost record of this map naming that table's
sha256. A ledger that is not the record toymech keeps (another structure) is refused in one
line.

A run records the names it will write before its work (``claim``: no hash yet), so a second
run of the same map started meanwhile takes them for toymech's.

The lock. Writers of one map (two ``toymech map`` of the same name into one folder) merge their
rows into the table under ``.map-<name>.lock`` (the zoo's lock): the second re-reads what the
first wrote and adds only the rows it lacks, so no row is lost.

The rows. ``verify_rows`` checks every row read back against the run it names: the fixed columns
there, the seed a seed, the experiment the study's, each knob value one the knob takes and
written as toymech writes it, the zoo key the one the experiment at those knobs and that seed
has, each zoo key once and each run (experiment, knob values, seed) once whatever policy wrote
it, the measured numbers of a measured row finite, and the row's hash (``row_sha256``, of every
value in the row, written when it was measured) there and unchanged. A row that fails is refused
in one line naming the table, the row and what is wrong.

Rows without a hash. toymech has written a hash on every row since before it wrote a ``study``
column, so a table with neither column was written before row hashes (``predates_hashes``): its
rows are read with the checks above only (the shipped tables of that time stay readable), and a
map run measures each of them again from the zoo before the table is extended. A blank hash, or
a hash column dropped from a table with a ``study`` column, is refused where the table is read
for a page or a record, and measured again (compared, never adopted) by a map run.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import check, check_path_writable_dir, short_repr
from ..files import replace_file
from ..studies import protocol
from ..sweep.table import knob_columns
from ..zoo.locks import EntryLock

LEDGER = ".toymech-maps.json"
FIXED = ("experiment", "seed", "size", "zoo_key", "status", "label")
ROW_HASH = "row_sha256"
MAX_LEDGER_BYTES = 16 * 2**20
COST_SUFFIX = ".cost.json"  # the map's cost record (``maps.cost_record``), beside its table
SHA256 = re.compile(r"[0-9a-f]{64}")


# --------------------------------------------------------------------------------------------
# the ledger
# --------------------------------------------------------------------------------------------

def files_of(folder: Path, name: str) -> list[str]:
    """Every file name a map called ``name`` writes into ``folder`` (those of refinements, of
    runs continued by the budget policy and of rows measured again that are there included)."""
    names = [f"{name}.csv", f"{name}.parquet", f"{name}.runs.csv", f"{name}.runs.csv.meta.json",
             f"{name}{COST_SUFFIX}"]
    if folder.is_dir():
        names += sorted(p.name for pattern in ("refine", "converge", "remeasure")
                        for p in folder.glob(f"{name}.{pattern}-*.runs.csv*"))
    return names


def identity(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What makes two maps the same map (their tables may merge): study, size, knob names and
    the budget policy where there is one (``until_converged``: it decides which run a row
    holds, so a map with another policy, or none, is another map)."""
    out = {"study": spec["study"], "size": str(spec["size"]), "knobs": sorted(spec["knobs"])}
    if spec.get("until_converged") is not None:
        out["until_converged"] = int(spec["until_converged"])
    return out


def _sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_ledger(folder: Path) -> dict[str, Any]:
    path = folder / LEDGER
    if not os.path.lexists(path):
        return {"maps": {}}
    st = os.lstat(path)
    ok = stat.S_ISREG(st.st_mode) and st.st_size <= MAX_LEDGER_BYTES
    data = None
    if ok:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            data = None
    check(isinstance(data, dict) and _is_ledger(data), "map ledger", str(path),
          "the record toymech map keeps of the files it wrote ({'maps': {name: {'identity': "
          "{...}, 'files': {file: sha256}}}}); it is damaged or not toymech's: move it aside (the "
          "tables beside it are then checked row by row, and rows without a hash measured again)")
    return data


def _is_ledger(data: dict) -> bool:
    """Whether ``data`` has the ledger's structure: maps by name, each with its identity (a
    mapping) and its files (file name -> sha256, or None while being written)."""
    maps = data.get("maps")
    return isinstance(maps, dict) and all(
        isinstance(name, str) and isinstance(entry, dict)
        and isinstance(entry.get("identity"), dict) and isinstance(entry.get("files"), dict)
        and all(isinstance(f, str) and (h is None or (isinstance(h, str) and SHA256.fullmatch(h)))
                for f, h in entry["files"].items())
        for name, entry in maps.items())


def _record(folder: Path, name: str, spec: Mapping[str, Any], names: list[str]) -> None:
    """Record ``names`` (files of map ``name`` in ``folder``) as toymech's, with their hashes."""
    ledger = read_ledger(folder)
    entry = ledger["maps"].setdefault(name, {"identity": identity(spec), "files": {}})
    entry["identity"] = identity(spec)
    for fname in names:
        path = folder / fname
        if path.is_file():
            entry["files"][fname] = _sha(path)
    replace_file(folder / LEDGER, json.dumps(ledger, indent=1, sort_keys=True))


def check_out(out: Any) -> Path:
    """``--out``: a folder toymech can write in, or a path where one can be made (a file there,
    or on the way there, and a folder that cannot be written, such as ``/proc``, are refused)."""
    check(isinstance(out, (str, Path)) and str(out).strip() != "" and "\0" not in str(out),
          "--out", out, "a folder for the map's table")
    folder = Path(out).expanduser()
    check(not os.path.lexists(folder) or folder.is_dir(), "--out", str(folder),
          "a folder for the map's table (it is a file; give a folder)")
    return check_path_writable_dir("--out", folder)


def _difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    for key in ("study", "size", "knobs", "until_converged"):
        if old.get(key) != new.get(key):
            return f"its {key} {short_repr(old.get(key))}, this map's {short_repr(new.get(key))}"
    return "another map"


def check_files(folder: Path, spec: Mapping[str, Any], study,
                read: Callable[[Path], pd.DataFrame]) -> None:
    """Before any work: every file the map ``spec`` would write into ``folder`` is absent or
    toymech's own for this map (module docstring); ValueError naming the file otherwise.
    ``read``: the table reader (``maps.read_table``)."""
    name = spec["name"]
    if not folder.is_dir():
        return
    ledger = read_ledger(folder)
    entry = ledger["maps"].get(name)
    if entry is not None and entry.get("identity") != identity(spec):
        raise ValueError(f"map name={name!r} is not allowed in --out={str(folder)!r}: a map of "
                         f"that name there is another map ({_difference(entry.get('identity') or {}, identity(spec))}); "
                         "give this map another name or another --out")
    recorded = (entry or {}).get("files", {})
    adopted = False
    for fname in files_of(folder, name):
        path = folder / fname
        if not os.path.lexists(path):
            continue
        if path.is_symlink() or not path.is_file():
            raise ValueError(f"--out={str(folder)!r} is not allowed: {fname} there is not a "
                             "regular file toymech wrote; move it aside")
        if fname in recorded:
            if recorded[fname] is not None and _sha(path) != recorded[fname]:
                raise ValueError(f"--out={str(folder)!r} is not allowed: {fname} was changed "
                                 "since toymech wrote it (its sha256 differs); move it aside to "
                                 "measure the map again")
            continue
        if fname == f"{name}.csv" and entry is None:
            legacy_table(path, spec, study, read)  # refuses a table that is not this map's
            adopted = True
            continue
        if adopted and fname == f"{name}{COST_SUFFIX}":
            names = _cost_record_names(path, name)
            if names == _sha(folder / f"{name}.csv"):
                continue  # toymech's record of that very table (its ledger moved aside)
            if names is not None:
                raise ValueError(f"--out={str(folder)!r} is not allowed: {fname} there is the "
                                 f"cost record of another table than the {name}.csv there (its "
                                 "table_sha256 differs: the table was changed after the record "
                                 "was written); move the record aside to measure the map again")
        if adopted and fname not in (f"{name}.csv", f"{name}{COST_SUFFIX}"):
            continue  # the files an older toymech wrote beside the table it wrote
        raise ValueError(f"--out={str(folder)!r} is not allowed: {fname} there was not written "
                         f"by toymech map (no record of it in {LEDGER}); move it, or give "
                         "another --out")


def _cost_record_names(path: Path, name: str) -> str | None:
    """The table sha256 that ``path`` names where it has the form of toymech's cost record of
    map ``name`` (``maps.cost_record``), else None. A record without a ledger entry is taken as
    toymech's only beside the table it names, itself taken as this map's (``legacy_table``)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        return None
    ok = (isinstance(data, dict) and data.get("kind") == "map" and data.get("map") == name
          and isinstance(data.get("invocations"), list)
          and isinstance(data.get("table_sha256"), str)
          and SHA256.fullmatch(data["table_sha256"]))
    return data["table_sha256"] if ok else None


def legacy_table(path: Path, spec: Mapping[str, Any], study,
                 read: Callable[[Path], pd.DataFrame]) -> None:
    """A table without a ledger record is taken only when it is a map table of this map."""
    header = _header(path)
    missing = [c for c in FIXED if c not in header]
    if missing:
        raise ValueError(f"--out={str(path.parent)!r} is not allowed: {path.name} there was "
                         f"not written by toymech map (it has no {missing[0]!r} column); move "
                         "it, or give another --out")
    knobs = sorted(knob_columns(pd.DataFrame(columns=header)))
    if knobs != sorted(spec["knobs"]):
        raise ValueError(f"map name={spec['name']!r} is not allowed in --out="
                         f"{str(path.parent)!r}: {path.name} there is another map (its knobs "
                         f"{short_repr(knobs)}, this map's {short_repr(sorted(spec['knobs']))}); "
                         "give this map another name or another --out")
    verify_rows(read(path), path, study, remeasure=True)  # rows without a hash: measured again


def _header(path: Path) -> list[str]:
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError):
        return []


@contextmanager
def writing(folder: Path, spec: Mapping[str, Any], log=None, timeout: float | None = None
            ) -> Iterator[None]:
    """Hold the lock of map ``spec`` in ``folder`` (writers of one map take turns), waiting at
    most ``timeout`` seconds (None: ``$TOYMECH_LOCK_TIMEOUT``, else 6 hours)."""
    lock = EntryLock(folder, f"map-{spec['name']}", log=log, timeout=timeout,
                     what=f"map {spec['name']} in {folder}", where="map folder")
    lock.acquire()
    try:
        yield
    finally:
        lock.release()


def check_recorded(folder: Path, name: str, fnames: list[str]) -> None:
    """The files ``fnames`` of map ``name`` are as the ledger records them (a writer holding the
    lock re-reads them; a file changed by hand meanwhile is refused, naming it)."""
    entry = read_ledger(folder)["maps"].get(name) or {}
    for fname in fnames:
        want = entry.get("files", {}).get(fname)
        if want is not None and (folder / fname).is_file() and _sha(folder / fname) != want:
            raise ValueError(f"--out={str(folder)!r} is not allowed: {fname} was changed since "
                             "toymech wrote it (its sha256 differs); move it aside to measure the "
                             "map again")


def claim(folder: Path, spec: Mapping[str, Any], log=None, timeout: float | None = None) -> None:
    """Before a map's work: record the files it will write as toymech's (no hash yet: being
    written), so that a second run of the map started meanwhile takes them for toymech's."""
    name = spec["name"]
    with writing(folder, spec, log, timeout):
        ledger = read_ledger(folder)
        entry = ledger["maps"].setdefault(name, {"identity": identity(spec), "files": {}})
        for fname in files_of(folder, name):
            entry["files"].setdefault(fname, None)
        replace_file(folder / LEDGER, json.dumps(ledger, indent=1, sort_keys=True))


def record(folder: Path, spec: Mapping[str, Any]) -> None:
    """Record every file of map ``spec`` now in ``folder`` as toymech's (under ``writing``)."""
    _record(folder, spec["name"], spec, files_of(folder, spec["name"]))


# --------------------------------------------------------------------------------------------
# the rows
# --------------------------------------------------------------------------------------------

def row_text(value: Any) -> str | None:
    """A cell's value as the row hash reads it: the same before and after a CSV round trip
    (None for an empty cell)."""
    if value is None or (isinstance(value, str) and value == ""):
        return None
    if isinstance(value, (bool,)) or type(value).__name__ in ("bool_", "bool"):
        return str(bool(value))
    if isinstance(value, str):
        return value
    try:
        number = float(value)
    except (TypeError, ValueError):
        return str(value)
    if math.isnan(number):
        return None
    return format(number, ".10g")


def row_hash(row: Mapping[str, Any]) -> str:
    """The sha256 of a row's values (every column but the hash itself)."""
    body = {str(k): c for k, v in row.items() if k != ROW_HASH
            and (c := row_text(v)) is not None}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _numbers(table: pd.DataFrame) -> list[str]:
    knobs = set(knob_columns(table).values())
    return [c for c in table.columns if c not in ("seed", "refined", ROW_HASH)
            and c not in knobs and pd.api.types.is_float_dtype(table[c])]


def differences(old: dict[str, Any], new: dict[str, Any] | None) -> str:
    """What in row ``old`` (without a hash) differs from ``new``, its run measured again: ""
    where nothing does (its commit and hash aside)."""
    if new is None:
        return "its run could not be measured again (the zoo key it names is not the run's)"
    for c, v in old.items():
        if c in ("commit", ROW_HASH) or v is None or v == "" or (
                isinstance(v, float) and math.isnan(v)):
            continue
        if row_text(v) != row_text(new.get(c)):
            return (f"its {c}={v!r} is not what its run measures now ({new.get(c)!r}: edited, "
                    "or measured by an older rule)")
    return ""


def predates_hashes(table: pd.DataFrame) -> bool:
    """Whether ``table`` was written before toymech hashed its rows: it has neither a
    ``row_sha256`` nor a ``study`` column (every toymech that writes the second writes the
    first)."""
    return ROW_HASH not in table and "study" not in table


def unhashed(table: pd.DataFrame) -> list[int]:
    """The positions of ``table``'s rows without their hash (blank, or no hash column)."""
    if ROW_HASH not in table:
        return list(range(len(table)))
    return [i for i, v in enumerate(table[ROW_HASH])
            if not (isinstance(v, str) and SHA256.fullmatch(v))]


def verify_rows(table: pd.DataFrame, path: Path | str, study, remeasure: bool = False) -> None:
    """Every row of ``table`` (read from ``path``) against the run it names (module docstring);
    ValueError naming the table, the row and the problem. ``remeasure``: rows without their
    hash pass here, for a map run that measures them again (``maps.run``); otherwise only the
    rows of a table that ``predates_hashes`` may lack it."""
    where = f"map table={str(path)!r}"
    missing = [c for c in FIXED if c not in table]
    if missing:
        raise ValueError(f"{where} is not allowed: a table written by toymech map (it has no "
                         f"{missing[0]!r} column)")
    if not remeasure and ROW_HASH not in table and not predates_hashes(table):
        raise ValueError(f"{where} is not allowed: a table of toymech map has its {ROW_HASH!r} "
                         "column (this one has a 'study' column but no hashes: they were "
                         "removed); run the map again, which measures its rows again from the zoo")
    knobs = knob_columns(table)  # {knob: its column}
    for k, c in knobs.items():
        check(k in study.knobs, f"{where} column", c,
              f"a knob column of the study's knobs ({', '.join(study.knobs)})")
    numbers = _numbers(table)
    seen: dict[str, int] = {}
    runs: dict[tuple, int] = {}
    sizes: dict[tuple, Any] = {}
    for i, row in enumerate(table.to_dict("records"), start=1):
        key = row.get("zoo_key")
        what = f"{where} row {i} (zoo key {short_repr(key)})"

        def bad(problem: str, what: str = what) -> ValueError:
            return ValueError(f"{what} is not allowed: {problem}; move the table aside (or "
                              "delete the row) to measure it again")
        if not isinstance(key, str) or not key:
            raise bad("it has no zoo key")
        if key in seen:
            raise bad(f"the same run as row {seen[key]} (each run once)")
        seen[key] = i
        seed = row.get("seed")
        if not (isinstance(seed, (int, float)) and not isinstance(seed, bool)
                and float(seed).is_integer() and 0 <= seed < 2**62):
            raise bad(f"seed={short_repr(seed)} is not a seed (an integer >= 0)")
        name = row.get("experiment")
        if not isinstance(name, str) or name not in study.named_experiments:
            raise bad(f"experiment={short_repr(name)} is not one of the study's")
        values: dict[str, Any] = {}
        for k, c in knobs.items():
            text = row.get(c)
            if text is None or (isinstance(text, float) and math.isnan(text)):
                raise bad(f"{c} is blank (toymech map writes every knob of its map on every "
                          "row: a row of another map, or an edited one)")
            knob = study.knobs[k]
            try:
                parsed = knob.parse(str(text))
            except ValueError:
                raise bad(f"{c}={short_repr(text)} is not a value of the knob "
                          f"({knob.allowed_text()})") from None
            if knob.text(parsed) != str(text):
                raise bad(f"{c}={short_repr(text)} is not written as toymech writes it "
                          f"({knob.text(parsed)!r})")
            values[k] = parsed
        run = (name, int(seed), tuple(sorted((k, study.knobs[k].text(v))
                                             for k, v in values.items())))
        if run in runs:  # another policy's row of the same run (its steps differ)
            raise bad(f"the same run (experiment, knobs and seed) as row {runs[run]} with "
                      "other steps (each run once, whatever budget policy wrote it)")
        runs[run] = i
        steps = row.get("steps")  # a run the budget policy continued: its steps are not a knob column
        if "steps" not in values and "steps" in study.knobs and isinstance(steps, (int, float)) \
                and not isinstance(steps, bool) and math.isfinite(float(steps)):
            values["steps"] = int(steps)
        cell = (name, str(row.get("size")), tuple(sorted((k, str(v)) for k, v in values.items())))
        try:
            if cell not in sizes:
                sizes[cell] = study.with_knobs(str(row.get("size")), values)
            expected = study.named_experiments[name].make(sizes[cell], int(seed)).key("")
        except ValueError as exc:
            raise bad(f"its setting cannot be built ({exc})") from None
        if key != expected:
            raise bad(f"it is not the run its experiment, knobs and seed name (that run's zoo "
                      f"key is {expected})")
        if row.get("status") == "ok":
            for c in numbers:
                v = row.get(c)
                if v is not None and not (isinstance(v, float) and math.isnan(v)) \
                        and not math.isfinite(float(v)):
                    raise bad(f"{c}={v} is not a finite number")
        recorded = row.get(ROW_HASH)
        if isinstance(recorded, str) and recorded and recorded != row_hash(row):
            raise bad("its values are not the ones toymech measured (its row_sha256 differs: "
                      "edited after it was written)")
        if ROW_HASH in table and not remeasure and not (isinstance(recorded, str)
                                                         and SHA256.fullmatch(recorded)):
            raise bad(f"it has no {ROW_HASH} (toymech writes one on every row it measures: "
                      "removed, or edited); run the map again, which measures the row again "
                      "from the zoo")


def study_for(table: pd.DataFrame):
    """The registered study whose runs the table holds: its ``study`` column (one value), or, in
    a table written before that column existed, the study whose named experiments the runs are."""
    names = set(table["experiment"].astype(str)) if "experiment" in table else set()
    if "study" in table and table["study"].notna().any():
        given = sorted(set(table["study"].dropna().astype(str)))
        check(len(given) == 1 and given[0] in protocol.STUDIES, "table study", given[:3],
              f"one registered study ({', '.join(protocol.STUDIES)})")
        study = protocol.study(given[0])
        check(names <= set(study.named_experiments), "table experiments", sorted(names)[:4],
              f"the {given[0]} study's named experiments ({', '.join(study.named_experiments)})")
        return study
    for name in protocol.STUDIES:
        study = protocol.study(name)
        if names and names <= set(study.named_experiments):
            return study
    raise ValueError(f"table experiments={sorted(names)!r} is not allowed: the named experiments "
                     "of one registered study (a table written by toymech map)")


__all__ = ["COST_SUFFIX", "FIXED", "LEDGER", "ROW_HASH", "check_files", "claim", "check_out",
           "check_recorded",
           "differences", "files_of", "identity", "predates_hashes", "read_ledger", "record",
           "row_hash", "row_text",
           "study_for", "unhashed", "verify_rows", "writing"]
