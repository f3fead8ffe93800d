"""The results record (``docs/results.md``): what toymech measured at each size it was run at,
regenerated from finished runs by ``toymech results``.

A record is made of blocks, each between ``<!-- toymech-results KEY -->`` and
``<!-- /toymech-results -->``: one per (notebook, size) read from a report folder (its
``index.json`` and executed notebooks: the scorecard the notebook displayed, with ``display.
scorecard``'s JSON, the commit, the machine and its reference steps per second, the wall time
and the command), and one per map table given to it (``blocks_of``, e.g. ``maps.page.map_blocks``:
its finding and cells; study 3's width ladder is four such maps). Updating a record replaces the
blocks it has new data for and keeps everything else (the prose a person wrote around them), so a
record is never half-generated and never loses text.

What keeps that promise (``write_results``): a record whose markers do not pair (a START
without its END, an END without a START, a marker spelled otherwise) or that holds one key
twice is refused, naming the line, before anything is written; the record must be a markdown
file (``.md``) in an existing folder and writable; it is rewritten under a lock
(``.<name>.lock`` beside it), through a temporary file renamed over it, keeping its mode, and
through a symbolic link (the link stays, its target is updated). A report folder is read only
inside itself: an ``executed`` path in its ``index.json`` that leads elsewhere is refused.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, Callable, Sequence

from ..display import SCORECARD_MIME
from ..files import replace_file
from ..display.prose import duration_text
from ..studies.claims import SCALED_SAYS
from .reader_page import facts_of
from ..zoo.locks import EntryLock
from .scorecards import SCORECARD_TAG, find_scorecard, scorecard_counts, verdict_word

START = "<!-- toymech-results {key} -->"
END = "<!-- /toymech-results -->"
_START_LINE = re.compile(r"<!-- toymech-results (?P<key>[^\s>](?:[^>]*[^\s>])?) -->")
# a line that opens a comment naming toymech's results: it must be one of the two markers
_LOOKS_LIKE_MARKER = re.compile(r"^\s*<!--.*toymech[\s_-]*results?", re.I)
RECORD_SUFFIXES = (".md", ".markdown")
KEEP = ("claim", "source's number", "ours", "chance / null", "seeds agreeing", "verdict")


def scorecard_of(nb) -> dict | None:
    """The scorecard an executed notebook displayed in its cell tagged ``scorecard``:
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
    """One record per notebook that ran ok in the report folder ``folder``."""
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
        except Exception as exc:  # noqa: BLE001  (NotJSONError, ValidationError, ...)
            why = " ".join(str(exc).split())[:120] or type(exc).__name__
            raise ValueError(f"{str(executed)!r} is not allowed: an executed notebook (.ipynb "
                             f"JSON); reading it gives {type(exc).__name__}: {why}") from None
        out.append({**row, "name": Path(row["notebook"]).stem, "card": scorecard_of(nb),
                    "facts": facts_of(nb)})
    return out


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
    lines = ["| " + " | ".join(map(_cell, columns)) + " |",
             "|" + "|".join(" --- " for _ in columns) + "|"]
    lines += ["| " + " | ".join(map(_cell, r)) + " |" for r in rows]
    return lines


def _machine_text(machine: dict | None) -> str:
    if not machine:
        return "not recorded"
    cuda = "CUDA" if machine.get("cuda") else "no GPU"
    return (f"{machine.get('cores', '?')} cores, {cuda}, {machine.get('reference_steps_per_s', '?')} "
            f"reference steps/s (torch {machine.get('torch', '?')})")


def _cost_text(wall_s: float | None, machine: dict | None) -> str:
    if wall_s is None:
        return "not recorded"
    steps = (machine or {}).get("reference_steps_per_s")
    ref = f" = {wall_s * steps:,.0f} reference steps" if steps else ""
    return f"{duration_text(wall_s)} ({wall_s:,.0f} s{ref})"


def _variant_text(rec: dict[str, Any]) -> str:
    """The knobs a report ran with (``block_len=4-8, offset=0-3``), "" for the size itself."""
    variant = (rec.get("parameters") or {}).get("variant")
    if not isinstance(variant, dict) or not variant:
        return ""
    return ", ".join(f"{k}={v}" for k, v in variant.items())


def report_block(rec: dict[str, Any]) -> tuple[str, str]:
    """(key, markdown) of one report record."""
    key = f"{rec['name']} size={rec['size']}"
    knobs = _variant_text(rec)
    if knobs:  # a variant's block never replaces the size's own
        key += f" variant={knobs.replace(' ', '')}"
    zoo = (rec.get("facts") or {}).get("zoo") or {}
    zoo_text = (f"; {zoo.get('trained', '?')} models trained, {zoo.get('loaded', '?')} read from "
                f"the zoo" if zoo else "")
    named = f", a variant ({knobs}: properties, not verdicts)" if knobs else ""
    lines = [START.format(key=key), f"### {rec.get('title') or rec['name']}: `{rec['size']}`"
             f"{named}, seeds {rec.get('seeds') or '?'}", "",
             f"- command: `{rec.get('command') or 'not recorded'}`",
             f"- commit: `{rec.get('commit') or 'not recorded'}`; date {rec.get('date', '?')}",
             f"- machine: {_machine_text(rec.get('machine'))}; device {rec.get('device_used') or rec.get('device')}",
             f"- wall time: {_cost_text(rec.get('wall_s'), rec.get('machine'))}{zoo_text}"]
    card = rec.get("card")
    if card:
        lines.append(f"- verdicts: {scorecard_counts(card)}")
        cols = list(card["columns"])
        keep = [i for i, c in enumerate(cols) if c in KEEP] or list(range(len(cols)))
        lines += ["", *markdown_table([cols[i] for i in keep], [[r[i] for i in keep] for r in card["rows"]])]
    else:
        lines.append("- scorecard: none displayed")
    return key, "\n".join(lines + [END]) + "\n"


def record_parts(text: str, name: str = "record") -> list[tuple[str | None, str]]:
    """``text`` cut into (key, text) parts: a block (``key`` its key, from its START line to its
    END line) or prose between blocks (``key`` None); joined again they give ``text``. A record
    whose markers do not pair, a line that opens a comment like a marker but is none, and a key
    held twice are refused (``ValueError`` naming ``name`` and the line): updating such a record
    could replace the user's text."""
    parts: list[tuple[str | None, str]] = []
    prose: list[str] = []
    block: list[str] | None = None
    key, opened, seen = None, 0, {}
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        bare = line.strip()
        start = _START_LINE.fullmatch(bare)
        where = f"{name} line {number}"
        if start:
            if block is not None:
                raise ValueError(f"{where} is not allowed: the block {key!r} opened at line "
                                 f"{opened} has no {END} before this next block starts; "
                                 "put it back, then rerun")
            key, opened = start.group("key"), number
            if key in seen:
                raise ValueError(f"{where} is not allowed: block {key!r} is also at line "
                                 f"{seen[key]}; one block per key (remove one, then rerun)")
            seen[key] = number
            if prose:
                parts.append((None, "".join(prose)))
                prose = []
            block = [line]
        elif bare == END:
            if block is None:
                raise ValueError(f"{where} is not allowed: {END} closes no block (its "
                                 f"{START.format(key='KEY')} line is missing); put it back, then rerun")
            block.append(line)
            parts.append((key, "".join(block)))
            block = None
        elif _LOOKS_LIKE_MARKER.match(line):
            raise ValueError(f"{where} is not allowed: a results marker is written exactly "
                             f"{START.format(key='KEY')} or {END} (found {_quote(bare)})")
        else:
            (prose if block is None else block).append(line)
    if block is not None:
        raise ValueError(f"{name} line {opened} is not allowed: the block {key!r} has no {END} "
                         "(the record ends first); put it back, then rerun")
    if prose:
        parts.append((None, "".join(prose)))
    return parts


def _quote(text: str) -> str:
    return repr(text if len(text) <= 60 else text[:57] + "...")


def update_record(text: str, blocks: dict[str, str], name: str = "record") -> str:
    """``text`` with each block of ``blocks`` replaced where its key is, appended otherwise
    (``record_parts`` refuses a record it cannot update without losing text)."""
    parts = record_parts(text, name)
    seen = {key for key, _ in parts if key is not None}
    out = "".join(blocks.get(key, part) if key is not None else part for key, part in parts)
    for key, block in blocks.items():
        if key not in seen:
            out = out.rstrip("\n") + "\n\n" + block
    return out


def check_record(into) -> Path:
    """The record ``into``: a markdown file (``.md``) in an existing folder, writable, or a new
    one there; a link is followed (the file it names is the record). One line when not."""
    ok = isinstance(into, (str, Path)) and str(into).strip() != "" and "\0" not in str(into)
    if not ok:
        raise ValueError(f"--into={into!r} is not allowed: a markdown file path (e.g. docs/results.md)")
    given = Path(into).expanduser()
    if given.suffix.lower() not in RECORD_SUFFIXES:
        raise ValueError(f"--into={str(into)!r} is not allowed: a markdown record ending in .md "
                         "(toymech writes markdown blocks into it)")
    try:
        real = given.resolve(strict=False)
    except (OSError, RuntimeError):
        raise ValueError(f"--into={str(into)!r} is not allowed: a file path (it is a symlink "
                         "loop)") from None
    if real.is_dir():
        raise ValueError(f"--into={str(into)!r} is not allowed: a markdown file, not a folder")
    if not real.parent.is_dir():
        raise ValueError(f"--into={str(into)!r} is not allowed: a file in an existing folder "
                         f"({real.parent} does not exist)")
    if os.path.lexists(real):
        mode = real.stat().st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"--into={str(into)!r} is not allowed: a regular markdown file")
        if not mode & 0o222 or not os.access(real, os.W_OK):
            raise ValueError(f"--into={str(into)!r} is not allowed: a record you can write (it "
                             "is read-only; make it writable first, e.g. chmod u+w)")
    if not os.access(real.parent, os.W_OK | os.X_OK):
        raise ValueError(f"--into={str(into)!r} is not allowed: a file in a folder you can "
                         f"write ({real.parent} is not writable)")
    return real


def _write_through(real: Path, text: str) -> None:
    """Replace the file ``real`` by ``text`` atomically (a temporary file beside it, renamed
    over it), keeping its mode; the temporary file never stays behind."""
    replace_file(real, text, durable=True)


def write_results(reports: Sequence[str | Path], into: str | Path,
                  blocks_of: Callable[[], dict[str, str]] | None = None) -> list[str]:
    """Update the record ``into`` from report folders and with ``blocks_of`` the blocks it returns ({key: markdown}, e.g. each map's:
    ``maps.page.map_blocks``); returns the keys written. The record is checked first (``check_record``, ``record_parts``),
    then replaced atomically under its lock (see the module docstring)."""
    check_record(into)  # before any report folder is read: a bad target costs nothing
    records = [r for folder in reports for r in report_records(folder)]
    blocks = dict(report_block(r) for r in records)
    # a notebook recorded at a smaller size and at paper: do its scaled verdicts hold there?
    for small in records:
        for full in records:
            if (small["name"] == full["name"] and full["size"] == "paper"
                    and small["size"] != "paper"
                    and (found := scaled_check_block(small, full)) is not None):
                blocks[found[0]] = found[1]
    if blocks_of is not None:  # read after the record is checked: a bad target costs nothing
        blocks.update(blocks_of())
    if not blocks:
        raise ValueError("nothing to record: no notebook ran ok in the report folders given")
    real = check_record(into)
    # one writer at a time: a second waits, then updates what the first wrote
    with EntryLock(real.parent, real.name, what=f"results record {real}"):
        try:
            old = real.read_text(encoding="utf-8") if real.is_file() else "# Results record\n"
        except UnicodeDecodeError:
            raise ValueError(f"--into={str(into)!r} is not allowed: a markdown file (UTF-8 text)"
                             ) from None
        _write_through(real, update_record(old, blocks, name=f"--into={str(into)!r}"))
    return list(blocks)


def _scaled_verdict(cell: str) -> str:
    """The counted verdict of a scaled row: "reproduced (scaled)" where the row was judged scaled,
    and also where it reads below the source's setting but quotes what the scaled run said (a
    scaled claim not yet shown to match), so the comparison covers every scaled claim."""
    word = verdict_word(cell)
    text = " ".join(str(cell).split())
    if SCALED_SAYS in text:
        return verdict_word(text.split(SCALED_SAYS, 1)[1].split(",", 1)[0]) + " (scaled)"
    return word


def scaled_check_block(scaled: dict[str, Any], full: dict[str, Any]) -> tuple[str, str] | None:
    """(key, markdown): each claim judged at a declared scaled setting in ``scaled`` (a record at
    a smaller size) beside its verdict in ``full`` (the same notebook at the source's setting),
    and whether the two agree: the evidence that the scaled setting stands in for the source's.
    None when either has no scorecard or no row was judged scaled."""
    a, b = scaled.get("card"), full.get("card")
    if not a or not b:
        return None
    col_a, col_b = list(a["columns"]), list(b["columns"])
    if "verdict" not in col_a or "verdict" not in col_b:
        return None
    at_full = {r[0]: r[col_b.index("verdict")] for r in b["rows"]}
    rows, agree = [], 0
    for r in a["rows"]:
        word = _scaled_verdict(r[col_a.index("verdict")])
        if not word.endswith(" (scaled)") or r[0] not in at_full:
            continue
        theirs = verdict_word(at_full[r[0]])
        same = word.removesuffix(" (scaled)") == theirs
        agree += same
        rows.append([r[0], word, theirs, "yes" if same else "no"])
    if not rows:
        return None
    key = f"{scaled['name']} size={scaled['size']} vs size={full['size']}"
    lines = [START.format(key=key),
             f"### {scaled.get('title') or scaled['name']}: the scaled verdicts at `{scaled['size']}` "
             f"against `{full['size']}`", "",
             f"{agree} of {len(rows)} claims judged at the declared scaled setting "
             f"(`{scaled['size']}`, seeds {scaled.get('seeds')}) get the verdict they get at the "
             f"source's setting (`{full['size']}`, seeds {full.get('seeds')}).", "",
             *markdown_table(["claim", f"{scaled['size']} (scaled)", full["size"], "same"], rows)]
    return key, "\n".join(lines + [END]) + "\n"
