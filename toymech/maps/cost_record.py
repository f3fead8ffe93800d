"""What a map's table cost to build, written beside it by ``toymech map``:
``<out>/<name>.cost.json``.

Each invocation of a map that trained or measured something adds one entry: the command line as
typed, in its public form (``core.public_command``: no path of the machine), the commit, the
date, its wall seconds, its core-seconds (this process and the child processes it waited for:
user + system time, ``display.prose.core_seconds``), the runs it trained, measured (rows written
with status ok), loaded (measured from a model the zoo already held) and saw fail, and the machine
(``models.reference.machine_record``, the report's machine facts: cores, CUDA, torch, the
reference steps per second measured at its end, and the device the runs trained on). An
invocation that trained and measured nothing (a rerun of a finished map) adds nothing and leaves
the file as it was; one stopped before its end (killed, refused) adds nothing either.

The record's top level holds what the results pages read (``report.study_results``, as they read
a hand-kept record of kind ``map``): the totals over its invocations (``wall_s``, ``core_s``,
``reference_steps``: each invocation's wall seconds times its machine's reference speed, ``runs``),
the commands in order, the last commit and date, the machine (one, or each where they differ),
``table_sha256``, the sha256 of ``<name>.csv`` as the last invocation left it (a page shows the
cost only for that table), and ``from_empty_table``: whether the first invocation found no table
(where not, the rows the table held before were built at a cost not recorded here). An
invocation that finds no table starts the record afresh (the table was moved aside), keeping only
the entries of another writer of the same map that ended while it ran.

The file is toymech's: it is one of the map's files in the ledger (``ledger.files_of``), written
atomically (``files.replace_file``) under the map's lock and recorded with its sha256, so a
user's file of that name is refused before any work and never replaced.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import check, public_command, source_commit
from ..devices import resolve_device
from ..display.prose import core_seconds
from ..files import replace_file
from ..models.reference import machine_record
from . import ledger

KIND = "map"
RUNS = ("trained", "measured", "loaded", "failed")
# the machine facts that name a machine; the reference speed is measured at each invocation
MACHINE_KEYS = ("cores", "cuda", "torch", "device")
DATE_FORMAT = "%Y-%m-%d %H:%M:%S UTC"


def _now() -> _dt.datetime:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0)


def _ended(entry: Mapping[str, Any]) -> _dt.datetime | None:
    """When an invocation ``entry`` ended (its date), None where it does not say."""
    try:
        return _dt.datetime.strptime(str(entry.get("date")), DATE_FORMAT).replace(
            tzinfo=_dt.timezone.utc)
    except ValueError:
        return None


def cost_file(name: str) -> str:
    """The file name of map ``name``'s cost record."""
    return f"{name}{ledger.COST_SUFFIX}"


@dataclass
class Invocation:
    """One invocation of a map while it runs: when it began, the core-seconds used before it,
    and its runs counted as ``maps.run`` trains and measures them (``tally``)."""

    command: str
    device: str
    table_existed: bool
    began: _dt.datetime = field(default_factory=_now)
    started: float = field(default_factory=time.monotonic)
    core_s_before: float | None = field(default_factory=core_seconds)
    tally: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RUNS, 0))

    @classmethod
    def begin(cls, command: str | None, device: str, table: Path) -> Invocation:
        """An invocation starting now: ``command`` as typed (None: a call from Python, recorded
        as such), ``device`` as given (``"auto"`` resolved when it is recorded), ``table`` the
        map's table."""
        said = public_command(command) if command else "run_map(...) from Python"
        return cls(said, device, table.is_file())

    def count(self, what: str, n: int = 1) -> None:
        self.tally[what] += n

    def changed(self) -> bool:
        """Whether it trained or measured anything (only then is it recorded)."""
        return any(self.tally.values())

    def entry(self) -> dict[str, Any]:
        """Its entry in the record, measured now (the reference step is measured here)."""
        wall = time.monotonic() - self.started
        used = core_seconds()
        core = (round(used - self.core_s_before, 1)
                if used is not None and self.core_s_before is not None else None)
        return {"command": self.command, "commit": source_commit(),
                "date": _now().strftime(DATE_FORMAT),
                "wall_s": round(wall, 1), "core_s": core, "runs": dict(self.tally),
                "machine": {**machine_record(), "device": str(resolve_device(self.device))}}


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_record(path: Path) -> dict[str, Any] | None:
    """The cost record at ``path`` (None where there is none); a file there that is not one is a
    ValueError naming it."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        data = None
    check(isinstance(data, dict) and data.get("kind") == KIND
          and isinstance(data.get("invocations"), list)
          and all(isinstance(i, dict) for i in data["invocations"]),
          "map cost record", str(path), "the JSON record toymech map writes beside its table "
          "(kind 'map', with its invocations)")
    return data


def _machine(entries: list[dict[str, Any]]) -> dict[str, Any] | list[dict[str, Any]]:
    """The machine of ``entries``: one (its reference speed the mean of theirs) where every
    entry names the same, else each distinct one in order."""
    named = [{k: e["machine"].get(k) for k in MACHINE_KEYS} for e in entries]
    if all(n == named[0] for n in named):
        speeds = [e["machine"].get("reference_steps_per_s") for e in entries]
        speeds = [s for s in speeds if isinstance(s, (int, float))]
        return {**named[0], **({"reference_steps_per_s": round(sum(speeds) / len(speeds), 1)}
                               if speeds else {})}
    distinct: list[dict[str, Any]] = []
    for e in entries:
        if e["machine"] not in distinct:
            distinct.append(e["machine"])
    return distinct


def _total(entries: list[dict[str, Any]], key: str) -> float | None:
    values = [e.get(key) for e in entries]
    if not values or not all(isinstance(v, (int, float)) for v in values):
        return None  # a platform that did not say: no total rather than a short one
    return round(sum(values), 1)


def record_of(name: str, entries: list[dict[str, Any]], table_sha256: str,
              from_empty_table: bool) -> dict[str, Any]:
    """The record of map ``name`` holding ``entries`` (its invocations, in order)."""
    ref = [e["wall_s"] * e["machine"]["reference_steps_per_s"] for e in entries
           if isinstance(e.get("wall_s"), (int, float))
           and isinstance(e["machine"].get("reference_steps_per_s"), (int, float))]
    commands = [e["command"] for e in entries]
    return {"kind": KIND, "map": name, "table": f"{name}.csv", "table_sha256": table_sha256,
            "from_empty_table": from_empty_table, "invocations": entries,
            "command": ", then ".join(c for i, c in enumerate(commands)
                                      if i == 0 or c != commands[i - 1]),
            "commit": entries[-1]["commit"], "date": entries[-1]["date"],
            "wall_s": _total(entries, "wall_s"), "core_s": _total(entries, "core_s"),
            "reference_steps": round(sum(ref)) if len(ref) == len(entries) else None,
            "runs": {k: sum(int(e["runs"].get(k, 0)) for e in entries) for k in RUNS},
            "machine": _machine(entries)}


def add_invocation(folder: Path, spec: Mapping[str, Any], invocation: Invocation, log=None,
                   timeout: float | None = None) -> Path | None:
    """Add ``invocation`` of map ``spec`` to its record in ``folder`` (written atomically under
    the map's lock, recorded in the ledger), or nothing where it changed nothing. Returns the
    record's path, or None where nothing was written."""
    if not invocation.changed():
        return None
    name = spec["name"]
    path = folder / cost_file(name)
    entry = invocation.entry()
    with ledger.writing(folder, spec, log, timeout):
        ledger.check_recorded(folder, name, [path.name])  # toymech's as it wrote it, or none
        old = read_record(path) or {"invocations": [], "from_empty_table": False}
        kept = old["invocations"]
        if not invocation.table_existed:  # the table was moved aside: its record goes with it,
            # but not the entries of another writer of this map that ended while this one ran
            kept = [e for e in kept if (ended := _ended(e)) is not None
                    and ended >= invocation.began]
        entries = [*kept, entry]
        from_empty = (bool(old.get("from_empty_table")) if kept
                      else not invocation.table_existed)
        data = record_of(name, entries, _sha256(folder / f"{name}.csv"), from_empty)
        replace_file(path, json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
        ledger.record(folder, spec)
    return path


__all__ = ["Invocation", "add_invocation", "cost_file", "read_record", "record_of"]
