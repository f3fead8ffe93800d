"""Sentences of the results record (``docs/results.md``) regenerated from its own blocks.

The record's prose sits between the generated blocks (``report.results``). Where a paragraph
quotes counts a block holds (how many rows read "mixed", how many seeds solved a rung), the
sentence is written by a function here from that block and kept between markers::

    <!-- toymech-sentence NAME BLOCK-KEY -->...<!-- /toymech-sentence -->

``refresh_sentences(text)`` rewrites every marked sentence from the block it names, and
``stale_sentences(text)`` lists those that differ from what the block says now
(``tests/test_results_record.py`` asks for none), so no count in the prose can contradict the
block it sits above.
"""

from __future__ import annotations

import re
from typing import Callable

from .scorecards import verdict_word

_BLOCK = re.compile(r"<!-- toymech-results (?P<key>[^>]*?) -->\n(?P<body>.*?)"
                    r"<!-- /toymech-results -->", re.S)
_SENTENCE = re.compile(r"<!-- toymech-sentence (?P<name>\S+) (?P<key>[^>]*?) -->"
                       r"(?P<text>.*?)<!-- /toymech-sentence -->", re.S)
_NUMBERS = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven",
            8: "eight", 9: "nine", 10: "ten"}
_CELL = re.compile(r"(?P<median>[\d.]+) \[(?P<low>[\d.]+), (?P<high>[\d.]+)\] "
                   r"\((?P<solved>\d+)/(?P<seeds>\d+)\)")


def blocks(text: str) -> dict[str, str]:
    """{key: body} of every generated block of a record."""
    return {m.group("key"): m.group("body") for m in _BLOCK.finditer(text)}


def table_rows(body: str) -> list[dict[str, str]]:
    """The first markdown table of a block body, one {column: cell} per row."""
    rows: list[dict[str, str]] = []
    head: list[str] | None = None
    for line in body.splitlines():
        if not line.startswith("| "):
            if head is not None:
                break
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if head is None:
            head = cells
        elif set(cells) != {"---"}:
            rows.append(dict(zip(head, cells)))
    return rows


def _count(n: int) -> str:
    return _NUMBERS.get(n, str(n))


def verdict_rows(body: str, word: str) -> list[tuple[str, str]]:
    """(claim, seeds agreeing) of the rows of a scorecard block whose verdict is ``word``."""
    return [(r["claim"], r["seeds agreeing"]) for r in table_rows(body)
            if verdict_word(r.get("verdict", "")) == word]


def _agreeing(cell: str) -> str:
    agree, _, of = cell.partition("/")
    return f"{agree} of {of.split()[0]}" if of else cell


def mixed_and_not_reproduced(body: str) -> str:
    """"Four rows are mixed (A: 3 of 10; ...) and four are not reproduced (...)", and, where
    some are, "; three of our own tests, which the source never ran, do not hold (...)"."""
    parts = []
    for word in ("mixed", "not reproduced"):
        rows = verdict_rows(body, word)
        listed = "; ".join(f"{claim}: {_agreeing(seeds)}" for claim, seeds in rows)
        verb = "is" if len(rows) == 1 else "are"
        noun = "row" if len(rows) == 1 else "rows"
        parts.append(f"{_count(len(rows))} {noun} {verb} {word}" + (f" ({listed})" if rows
                                                                    else ""))
    text = " and ".join(parts)
    ours = verdict_rows(body, "does not hold (our test)")  # tests of ours, never "reproduced"
    if ours:
        listed = "; ".join(f"{claim}: {_agreeing(seeds)}" for claim, seeds in ours)
        text += (f"; {_count(len(ours))} of our own tests, which the source never ran, "
                 f"{'does' if len(ours) == 1 else 'do'} not hold ({listed})")
    return text[0].upper() + text[1:] + "."


def _ladder_cells(body: str, task: str, mode: str) -> dict[int, dict[str, float]]:
    """{width: median/low/high/solved/seeds} of one (task, mode) row of the ladder block."""
    for r in table_rows(body):
        if r.get("task") == task and r.get("mode") == mode:
            out = {}
            for col, cell in r.items():
                m = _CELL.fullmatch(cell)
                if col.startswith("width ") and m:
                    out[int(col.split()[1])] = {k: float(v) for k, v in m.groupdict().items()}
            return out
    return {}


def ladder_seeds_solving(body: str, tasks: tuple[str, ...] = ("needle", "decimal_addition"),
                         mode: str = "normal") -> str:
    """"seeds solving at widths 32, 64, 128, 256: needle 2, 3, 2, 3 of 3; ..." from the first
    width at which the median solves (``k/n`` in the ladder block)."""
    parts, widths = [], None
    for task in tasks:
        cells = _ladder_cells(body, task, mode)
        first = min((w for w, c in cells.items() if c["median"] >= 0.95), default=None)
        if first is None:
            parts.append(f"{task.replace('_', ' ')} at no width")
            continue
        shown = sorted(w for w in cells if w >= first)
        widths = widths or shown
        solved = ", ".join(str(int(cells[w]["solved"])) for w in shown)
        seeds = {int(cells[w]["seeds"]) for w in shown}
        parts.append(f"{task.replace('_', ' ')} {solved} of {'/'.join(map(str, sorted(seeds)))}")
    where = ", ".join(map(str, widths or ()))
    return f"seeds solving at widths {where}: " + "; ".join(parts)


def ladder_range(body: str, task: str = "needle", mode: str = "random", from_width: int = 32
                 ) -> str:
    """"0.622-0.664 at widths 32-256": the lowest and highest seed of a row from a width on."""
    cells = {w: c for w, c in _ladder_cells(body, task, mode).items() if w >= from_width}
    if not cells:
        return "not run"
    low, high = min(c["low"] for c in cells.values()), max(c["high"] for c in cells.values())
    return f"{low:.3f}-{high:.3f} at widths {min(cells)}-{max(cells)}"


def map_outcomes(body: str) -> str:
    """"24 runs in 8 cells: 10 position, 8 partial, 6 still learning; the label content in no
    cell on most runs": every run's outcome summed over the cells of a map's block (its
    ``outcomes`` column: a learned run's label, or the state of a run without one), then the
    cells whose commonest outcome is each label of a learned run."""
    rows = table_rows(body)
    totals: dict[str, int] = {}
    tops: dict[str, int] = {}
    for r in rows:
        counts = {}
        for part in r.get("outcomes", "").split(", "):
            n, _, name = part.partition(" ")
            if n.isdigit():
                counts[name] = counts.get(name, 0) + int(n)
                totals[name] = totals.get(name, 0) + int(n)
        if counts:
            top = max(counts, key=counts.get)
            tops[top] = tops.get(top, 0) + 1
    runs = sum(totals.values())
    listed = ", ".join(f"{n} {name}" for name, n in sorted(totals.items(), key=lambda x: -x[1]))
    cells = "; ".join(f"{name} in {_count(n)} of {len(rows)}" for name, n in
                      sorted(tops.items(), key=lambda x: -x[1]))
    return f"{runs} runs in {len(rows)} cells: {listed} (the commonest outcome: {cells} cells)"


def map_cells(body: str) -> str:
    """Every cell of a map block (``maps.page.map_block``) in words, in the table's order: its
    knobs and experiment, then its seeds with the label and its runs without one, as the block's
    ``seeds '<label>'`` column reads (``recipe_width 16, steps 1500, rt-parentheses-random: 0 of 3
    (3 still learning)``)."""
    rows = table_rows(body)
    if not rows:
        return "no cell"
    seeds = next(c for c in rows[0] if c.startswith("seeds '"))
    where = list(rows[0])[:list(rows[0]).index(seeds)]
    label = seeds[len("seeds '"):-1]
    cells = [", ".join(f"{c} {r[c]}" if c != "experiment" else r[c] for c in where)
             + f": {r[seeds]}" for r in rows]
    return f"seeds '{label}' per cell: " + "; ".join(cells)


def _paragraph(body: str, opening: str) -> str:
    """The paragraph of a map block that begins with ``opening``, without it ("" if none)."""
    for paragraph in body.split("\n\n"):
        text = " ".join(paragraph.split())
        if text.startswith(opening):
            return text[len(opening):].strip()
    return ""


def map_changes(body: str) -> str:
    """Where a map's commonest outcome changes between neighbouring cells, as its block says
    (``maps.summary.changes``), or "nowhere" when the block names no change."""
    return _paragraph(body, "Where the commonest outcome changes between neighbouring cells:") \
        .rstrip(".") or "nowhere"


def map_evidence(body: str) -> str:
    """A map block's causal evidence (its study's ``map_evidence`` line), or "none recorded"."""
    return _paragraph(body, "Causal evidence,").rstrip(".") or "none recorded"


SENTENCES: dict[str, Callable[[str], str]] = {
    "map-changes": map_changes,
    "map-evidence": map_evidence,
    "map-outcomes": map_outcomes,
    "mixed-and-not-reproduced": mixed_and_not_reproduced,
    "ladder-seeds-solving": ladder_seeds_solving,
    "ladder-random-needle-range": ladder_range,
    "map-cells": map_cells,
}


def _sentence(name: str, key: str, found: dict[str, str]) -> str:
    if name not in SENTENCES:
        raise ValueError(f"sentence={name!r} is not allowed: one of {', '.join(SENTENCES)}")
    if key not in found:
        raise ValueError(f"block={key!r} is not allowed: a block of the record "
                         f"({', '.join(found) or 'none'})")
    return SENTENCES[name](found[key])


def stale_sentences(text: str, record: str | None = None) -> list[str]:
    """Each marked sentence that differs from what its block says now: "NAME KEY: ours != new".
    ``text``: the text holding the sentences; ``record``: the text holding the blocks (None:
    ``text`` itself; the README's sentences read the results record's blocks)."""
    found = blocks(text if record is None else record)
    out = []
    for m in _SENTENCE.finditer(text):
        new = _sentence(m.group("name"), m.group("key"), found)
        if " ".join(m.group("text").split()) != new:
            out.append(f"{m.group('name')} {m.group('key')}: {m.group('text')!r} != {new!r}")
    return out


def refresh_sentences(text: str, record: str | None = None) -> str:
    """``text`` with every marked sentence rewritten from its block (in ``record``, or in
    ``text`` itself where None)."""
    found = blocks(text if record is None else record)

    def swap(m: re.Match) -> str:
        new = _sentence(m.group("name"), m.group("key"), found)
        return f"<!-- toymech-sentence {m.group('name')} {m.group('key')} -->{new}" \
               "<!-- /toymech-sentence -->"

    return _SENTENCE.sub(swap, text)


if __name__ == "__main__":  # python -m toymech.report.record_prose [docs/results.md [README.md]]
    import sys
    from pathlib import Path

    path = Path(sys.argv[1] if len(sys.argv) > 1 else "docs/results.md")
    record = path.read_text(encoding="utf-8")
    path.write_text(refresh_sentences(record), encoding="utf-8")
    print(f"sentences refreshed in {path}")
    for other in map(Path, sys.argv[2:]):
        other.write_text(refresh_sentences(other.read_text(encoding="utf-8"), record),
                         encoding="utf-8")
        print(f"sentences refreshed in {other}")
