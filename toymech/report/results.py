"""A report run's results as data (``toymech results <report folder>``): one small JSON file per
(notebook, setting) in ``docs/results/data/``, from which ``toymech results --pages`` generates
the results pages (``report.pages``).

A record is read from a finished report folder (its ``index.json`` and executed notebooks: the
scorecard the notebook displayed, with ``display.scorecard``'s JSON, the commit, the machine and
its reference steps per second, the wall time, the models trained and read, and the command).
What is written keeps nothing private: the command's folders become placeholders (``--cache
<zoo>``, ``--out <out>``, any other absolute path ``<path>``). Each file is written atomically
(``files.replace_file``); a file of the same (notebook, setting) is replaced, any other kept.

A report folder is read only inside itself: an ``executed`` path in its ``index.json`` that leads
elsewhere is refused. A data file that is not a record (``read_data``) is refused, naming it.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..core import check, public_command
from ..display import SCORECARD_MIME
from ..files import replace_file
from ..studies import protocol
from ..studies.claims import SCALED_SAYS
from .reader_page import facts_of
from .scorecards import SCORECARD_TAG, find_scorecard, verdict_word

DATA_DIR = "docs/results/data"
# a report's scorecard; a table of another run (the width ladder); a map's measured cost (its
# table is the map's own file, docs/maps/<map>.csv, whose sha256 the record names: a record of
# an earlier table of the same name is not shown)
KINDS = ("scorecard", "table", "map")
KEEP = ("claim", "source's number", "ours", "chance / null", "seeds agreeing", "verdict")


def scorecard_of(nb) -> dict | None:
    """The scorecard the executed notebook ``nb`` displayed in its cell tagged ``scorecard``:
    ``display.scorecard``'s JSON when it is there (every cell in full), else the table found in
    its HTML (``find_scorecard``)."""
    found = None
    for cell in nb.cells:
        if SCORECARD_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            if SCORECARD_MIME in data and isinstance(data[SCORECARD_MIME], dict):
                found = data[SCORECARD_MIME]
    return found or find_scorecard(nb)


def _index_rows(folder: Path) -> list[dict]:
    """The rows of ``folder/index.json``: a JSON list of objects, else one line naming the file."""
    index = folder / "index.json"
    if not index.is_file():
        raise ValueError(f"report folder {str(folder)!r} is not allowed: it has no index.json "
                         "(a folder written by toymech report)")
    try:
        rows = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        why = " ".join(str(exc).split())[:120] or type(exc).__name__
        raise ValueError(f"{str(index)!r} is not allowed: the JSON index toymech report writes; "
                         f"reading it gives {type(exc).__name__}: {why}") from None
    ok = isinstance(rows, list) and all(isinstance(r, dict) and isinstance(r.get("notebook"), str)
                                        for r in rows)
    if not ok:
        raise ValueError(f"{str(index)!r} is not allowed: the JSON index toymech report writes "
                         "(a list of rows, each naming its notebook)")
    return rows


def _inside(folder: Path, index: Path, relative) -> Path:
    """``folder / relative``, refused unless it stays inside ``folder`` (links followed)."""
    ok = isinstance(relative, str) and relative != "" and "\0" not in relative
    path = folder / relative if ok else folder
    if not ok or Path(relative).is_absolute() or not path.resolve().is_relative_to(folder.resolve()):
        raise ValueError(f"executed={relative!r} in {str(index)!r} is not allowed: a path "
                         "inside the report folder (executed/<name>.ipynb)")
    return path


def report_records(folder: str | Path) -> list[dict[str, Any]]:
    """One record per notebook that ran ok in the report folder ``folder``: its ``index.json``
    row with ``name`` (the notebook's stem), ``card`` (``scorecard_of``) and ``facts``."""
    import nbformat

    folder = Path(folder)
    rows = _index_rows(folder)
    out = []
    for row in rows:
        if row.get("status") != "ok":
            continue
        executed = _inside(folder, folder / "index.json", row.get("executed"))
        if not executed.is_file():
            continue
        try:
            nb = nbformat.read(executed, as_version=4)
        except Exception as exc:
            why = " ".join(str(exc).split())[:120] or type(exc).__name__
            raise ValueError(f"{str(executed)!r} is not allowed: an executed notebook (.ipynb "
                             f"JSON); reading it gives {type(exc).__name__}: {why}") from None
        out.append({**row, "name": Path(row["notebook"]).stem, "card": scorecard_of(nb),
                    "facts": facts_of(nb)})
    return out


def _variant(rec: dict[str, Any]) -> dict[str, str]:
    variant = (rec.get("parameters") or {}).get("variant")
    return {str(k): str(v) for k, v in variant.items()} if isinstance(variant, dict) else {}


def _seed_list(text: Any) -> list[int]:
    """The seeds of a report's header text ("3 (3, 4, 5)") as a list."""
    inside = re.search(r"\(([^)]*)\)", str(text or ""))
    return [int(s) for s in re.findall(r"-?\d+", inside.group(1))] if inside else []


def study_of_notebook(notebook: str) -> str | None:
    """The registered study whose notebook is ``notebook`` (a path or its stem), or None."""
    stem = Path(str(notebook)).stem
    for name, path in protocol.STUDIES.items():
        if Path(path).stem == stem:
            return name
    return None


def record_data(rec: dict[str, Any]) -> dict[str, Any]:
    """The data of the report record ``rec`` (one of ``report_records``): what the results
    pages show of it."""
    card = rec.get("card")
    zoo = (rec.get("facts") or {}).get("zoo") or {}
    machine = dict(rec.get("machine") or {})
    wall = rec.get("wall_s")
    steps = machine.get("reference_steps_per_s")
    return {
        "kind": "scorecard", "notebook": rec["name"], "study": study_of_notebook(rec["name"]),
        "title": rec.get("title") or rec["name"], "size": rec.get("size"),
        "variant": _variant(rec), "seeds": _seed_list(rec.get("seeds")),
        "command": public_command(rec.get("command") or ""), "commit": rec.get("commit") or "",
        "date": rec.get("date") or "",
        "machine": {**machine, "device": rec.get("device_used") or rec.get("device") or ""},
        "wall_s": wall, "core_s": (rec.get("facts") or {}).get("core_s"),
        "reference_steps": round(wall * steps) if wall and steps else None,
        "zoo": {k: zoo[k] for k in ("trained", "loaded") if k in zoo},
        "scorecard": _kept_columns(card) if card else None,
    }


def _kept_columns(card: dict) -> dict:
    cols = list(card["columns"])
    keep = [i for i, c in enumerate(cols) if c in KEEP] or list(range(len(cols)))
    return {"columns": [cols[i] for i in keep],
            "rows": [[str(r[i]) if i < len(r) else "" for i in keep] for r in card["rows"]]}


def data_name(data: dict[str, Any]) -> str:
    """The file name of the record ``data``: ``<notebook>-<size>[-<knob>=<value>...].json`` (a
    table's ``<key>.json``, a map's ``map-<map>.json``), in characters safe on every file
    system."""
    if data.get("kind") == "table":
        stem = str(data["key"])
    elif data.get("kind") == "map":
        stem = f"map-{data['map']}"
    else:
        stem = f"{data['notebook']}-{data['size']}" + "".join(
            f"-{k}={v}" for k, v in sorted(data.get("variant", {}).items()))
    return re.sub(r"[^A-Za-z0-9._=-]+", "_", stem) + ".json"


def data_text(data: dict[str, Any]) -> str:
    """The record ``data`` as it is stored: JSON, keys sorted, indented (diffs read well)."""
    return json.dumps(data, indent=1, sort_keys=True, ensure_ascii=False) + "\n"


def write_result_data(reports: Sequence[str | Path], into: str | Path = DATA_DIR) -> list[Path]:
    """Write a data file (``record_data``) per notebook that ran ok in the report folders
    ``reports`` into the folder ``into`` (which must exist); returns the paths written. Every
    folder is read before anything is written, so a bad one costs nothing."""
    folder = Path(into)
    check(folder.is_dir(), "--into", str(into), "an existing folder (e.g. docs/results/data)")
    records = [record_data(r) for given in reports for r in report_records(given)]
    check(bool(records), "reports", [str(r) for r in reports],
          "report folders with at least one notebook that ran ok")
    paths = [folder / data_name(data) for data in records]
    for path in paths:  # a name taken by something that is not a file: refused before writing
        check(not os.path.lexists(path) or path.is_file() and not path.is_symlink(), "--into",
              str(into), f"a folder where {path.name} is a file of toymech's (it is not a file)")
    for path, data in zip(paths, records):
        replace_file(path, data_text(data))
    return paths


def read_data(folder: str | Path) -> list[dict[str, Any]]:
    """Every record in ``folder`` (``*.json``), in file-name order; a file that is not one is a
    ValueError naming it."""
    out = []
    for path in sorted(Path(folder).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"results data {str(path)!r} is not allowed: a JSON record written "
                             f"by toymech results ({type(exc).__name__})") from None
        ok = isinstance(data, dict) and data.get("kind") in KINDS
        needs = {"scorecard": {"notebook", "size", "scorecard"}, "table": {"key", "tables"},
                 "map": {"map"}}
        ok = ok and needs[data["kind"]] <= set(data)
        check(ok, "results data", str(path), f"a record of one of the kinds {', '.join(KINDS)} "
              "(toymech results <report folder> writes them)")
        out.append({**data, "file": path.name})
    return out


def _scaled_verdict(cell: str) -> str:
    """The counted verdict of a scaled row: "reproduced (scaled)" where the row was judged scaled,
    and also where it reads below the source's setting but quotes what the scaled run said (a
    scaled claim not yet shown to match), so the comparison covers every scaled claim."""
    word = verdict_word(cell)
    text = " ".join(str(cell).split())
    if SCALED_SAYS in text:
        return verdict_word(text.split(SCALED_SAYS, 1)[1].split(",", 1)[0]) + " (scaled)"
    return word


def scaled_comparison(scaled: dict[str, Any], full: dict[str, Any]) -> dict[str, Any] | None:
    """Each claim judged at a declared scaled setting in ``scaled`` (a record at a smaller size)
    beside its verdict in ``full`` (the same notebook at the source's setting) and whether the
    two agree: the evidence that the scaled setting stands in for the source's. Returns
    {"rows": [[claim, scaled verdict, full verdict, "yes"/"no"], ...], "agree": n}, or None when
    either has no scorecard or no row was judged scaled."""
    a, b = scaled.get("scorecard"), full.get("scorecard")
    if not a or not b or "verdict" not in a["columns"] or "verdict" not in b["columns"]:
        return None
    at_full = {r[0]: r[b["columns"].index("verdict")] for r in b["rows"]}
    rows, agree = [], 0
    for r in a["rows"]:
        word = _scaled_verdict(r[a["columns"].index("verdict")])
        if not word.endswith(" (scaled)") or r[0] not in at_full:
            continue
        theirs = verdict_word(at_full[r[0]])
        same = word.removesuffix(" (scaled)") == theirs
        agree += same
        rows.append([r[0], word, theirs, "yes" if same else "no"])
    return {"rows": rows, "agree": agree} if rows else None


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    """A Markdown table: a header of ``columns`` and one line per row of ``rows``."""
    lines = ["| " + " | ".join(map(_cell, columns)) + " |",
             "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(map(_cell, r)) + " |" for r in rows]
    return lines
