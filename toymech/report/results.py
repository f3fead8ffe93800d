"""The results record (``docs/results.md``): what toymech measured at each size it was run at,
regenerated from finished runs by ``toymech results``.

A record is made of blocks, each between ``<!-- toymech-results KEY -->`` and
``<!-- /toymech-results -->``: one per (notebook, size) read from a report folder (its
``index.json`` and executed notebooks: the scorecard the notebook displayed, with ``display.
scorecard``'s JSON, the commit, the machine and its reference steps per second, the wall time
and the command), and one for study 3's width ladder read from a zoo's ladder sweeps. Updating a
record replaces the blocks it has new data for and keeps everything else (the prose a person
wrote around them), so a record is never half-generated and never loses text.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Sequence

from ..display import SCORECARD_MIME
from ..display.prose import duration_text
from ..studies.claims import SCALED_SAYS
from ..studies.random_transformers import ladder as lad
from ..sweep.table import meta_path
from .reader import facts_of
from .scorecards import find_scorecard, scorecard_counts, verdict_word

START = "<!-- toymech-results {key} -->"
END = "<!-- /toymech-results -->"
_BLOCK = re.compile(r"<!-- toymech-results (?P<key>[^>]*?) -->\n.*?<!-- /toymech-results -->\n?",
                    re.S)
KEEP = ("claim", "source's number", "ours", "chance / null", "seeds agreeing", "verdict")
LADDER_KEY = "rt-width-ladder"


def scorecard_of(nb) -> dict | None:
    """The scorecard an executed notebook displayed: ``display.scorecard``'s JSON when it is
    there (every cell in full), else the table found in its HTML (``find_scorecard``)."""
    found = None
    for cell in nb.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {})
            if SCORECARD_MIME in data and isinstance(data[SCORECARD_MIME], dict):
                found = data[SCORECARD_MIME]
    return found or find_scorecard(nb)


def report_records(folder: str | Path) -> list[dict[str, Any]]:
    """One record per notebook that ran ok in the report folder ``folder``."""
    import nbformat

    folder = Path(folder)
    index = folder / "index.json"
    if not index.is_file():
        raise ValueError(f"report folder {str(folder)!r} is not allowed: it has no index.json "
                         "(a folder written by toymech report)")
    rows = json.loads(index.read_text(encoding="utf-8"))
    out = []
    for row in rows:
        executed = folder / row.get("executed", "")
        if row.get("status") != "ok" or not executed.is_file():
            continue
        nb = nbformat.read(executed, as_version=4)
        out.append({**row, "name": Path(row["notebook"]).stem, "card": scorecard_of(nb),
                    "facts": facts_of(nb)})
    return out


def _cell(text: Any) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _table(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[str]:
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


def report_block(rec: dict[str, Any]) -> tuple[str, str]:
    """(key, markdown) of one report record."""
    key = f"{rec['name']} size={rec['size']}"
    zoo = (rec.get("facts") or {}).get("zoo") or {}
    zoo_text = (f"; {zoo.get('trained', '?')} models trained, {zoo.get('loaded', '?')} read from "
                f"the zoo" if zoo else "")
    lines = [START.format(key=key), f"### {rec.get('title') or rec['name']}: `{rec['size']}`, "
             f"seeds {rec.get('seeds') or '?'}", "",
             f"- command: `{rec.get('command') or 'not recorded'}`",
             f"- commit: `{rec.get('commit') or 'not recorded'}`; date {rec.get('date', '?')}",
             f"- machine: {_machine_text(rec.get('machine'))}; device {rec.get('device_used') or rec.get('device')}",
             f"- wall time: {_cost_text(rec.get('wall_s'), rec.get('machine'))}{zoo_text}"]
    card = rec.get("card")
    if card:
        lines.append(f"- verdicts: {scorecard_counts(card)}")
        cols = list(card["columns"])
        keep = [i for i, c in enumerate(cols) if c in KEEP] or list(range(len(cols)))
        lines += ["", *_table([cols[i] for i in keep], [[r[i] for i in keep] for r in card["rows"]])]
    else:
        lines.append("- scorecard: none displayed")
    return key, "\n".join(lines + [END]) + "\n"


def ladder_block(zoo_root: str | Path) -> tuple[str, str] | None:
    """(key, markdown) of study 3's width ladder in ``zoo_root``; None before any rung ran."""
    table = lad.ladder_table(zoo_root)
    summary = lad.ladder_summary(table)
    if summary is None:
        return None
    metas = []
    for path in sorted((Path(zoo_root).expanduser() / "sweeps").glob(f"{lad.NAME}-*.csv")):
        m = meta_path(path)
        if m.is_file():
            metas.append(json.loads(m.read_text(encoding="utf-8")))
    commits = sorted({m.get("commit", "") for m in metas if m.get("commit")}) or ["not recorded"]
    machine = next((m["machine"] for m in reversed(metas) if m.get("machine")), None)
    wall = sum(float(m.get("wall_s", 0.0)) for m in metas) or None
    seeds = ", ".join(map(str, summary.attrs.get("seeds", ())))
    widths = sorted(summary["width"].unique())
    lines = [START.format(key=LADDER_KEY), f"### Study 3's width ladder: seeds {seeds}", "",
             "- command: `toymech ladder` (with the "
             "`--tasks`/`--modes` of the rows below)",
             f"- commit: `{', '.join(commits)}`",
             f"- machine: {_machine_text(machine)}",
             f"- wall time (the sweeps' own, summed; some ran side by side): "
             f"{_cost_text(wall, machine)}; "
             f"{summary['core_s'].sum() / 60:,.0f} core-minutes of training", "",
             f"Held-out accuracy on the whole answer, median [min, max] over seeds (seeds "
             f"reaching {lad.SOLVED_AT:.0%}); each rung is the task's recipe at that width.", ""]
    rows = []
    for (task, mode), g in summary.groupby(["task", "mode"], sort=False):
        by = {int(r["width"]): r for _, r in g.iterrows()}
        rows.append([task, mode] + [
            f"{by[w]['median']:.3f} [{by[w]['min']:.3f}, {by[w]['max']:.3f}] "
            f"({by[w]['solved']}/{by[w]['seeds']})" if w in by else "not run" for w in widths])
    lines += _table(["task", "mode", *[f"width {w}" for w in widths]], rows)
    first = lad.first_widths(summary)
    lines += ["", lad.ladder_sentence(summary), ""]
    lines += _table(list(first.columns), [["—" if v is None or v != v else
                                          (f"{v:,.0f}" if isinstance(v, float) else v)
                                          for v in r] for r in first.itertuples(index=False)])
    return LADDER_KEY, "\n".join(lines + [END]) + "\n"


def update_record(text: str, blocks: dict[str, str]) -> str:
    """``text`` with each block of ``blocks`` replaced where its key is, appended otherwise."""
    seen = set()

    def swap(m: re.Match) -> str:
        key = m.group("key")
        if key in blocks:
            seen.add(key)
            return blocks[key]
        return m.group(0)

    out = _BLOCK.sub(swap, text)
    for key, block in blocks.items():
        if key not in seen:
            out = out.rstrip("\n") + "\n\n" + block
    return out


def write_results(reports: Sequence[str | Path], into: str | Path, ladder_zoo: str | Path | None = None
                  ) -> list[str]:
    """Update the record ``into`` from report folders and, with ``ladder_zoo``, the ladder;
    returns the keys written. The file is replaced atomically."""
    records = [r for folder in reports for r in report_records(folder)]
    blocks = dict(report_block(r) for r in records)
    # a notebook recorded at a smaller size and at paper: do its scaled verdicts hold there?
    for small in records:
        for full in records:
            if (small["name"] == full["name"] and full["size"] == "paper"
                    and small["size"] != "paper"
                    and (found := scaled_check_block(small, full)) is not None):
                blocks[found[0]] = found[1]
    if ladder_zoo is not None:
        found = ladder_block(ladder_zoo)
        if found is None:
            raise ValueError(f"ladder zoo {str(ladder_zoo)!r} is not allowed: it has no width "
                             "ladder sweeps (toymech ladder)")
        blocks[found[0]] = found[1]
    if not blocks:
        raise ValueError("nothing to record: no notebook ran ok in the report folders given")
    target = Path(into)
    old = target.read_text(encoding="utf-8") if target.is_file() else "# Results record\n"
    new = update_record(old, blocks)
    tmp = target.with_name(f".{target.name}.tmp")
    tmp.write_text(new, encoding="utf-8")
    tmp.replace(target)
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
             *_table(["claim", f"{scaled['size']} (scaled)", full["size"], "same"], rows)]
    return key, "\n".join(lines + [END]) + "\n"
