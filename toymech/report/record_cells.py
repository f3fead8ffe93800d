"""The scorecard cells of the results record (``docs/results.md``) as the current claims write
them: the "chance / null" cell and the verdict cell of each row, for the number and the seeds the
block recorded.

A block of the record is written once, from a finished report; when a claim's wording of its
reference or of its verdict changes (a threshold is no longer called chance; a test of ours reads
"holds (our test)", never "reproduced"), the recorded numbers stay true but their words go stale.
``refresh_cells(text)`` rewrites those two cells of every row whose claim statement names a claim
of the block's study (``studies.claims``: ``null``/``null_detail`` beside the number shown, and
``verdict_words`` in place of "reproduced" / "not reproduced"), and recounts the block's
"verdicts:" line; ``stale_cells(text)`` lists the rows that differ (``tests/test_chance_named.py``
asks for none). ``python -m toymech.report.record_cells [docs/results.md]`` rewrites the record.
Rows naming no current claim (a statement since reworded) are left as recorded and listed by
``unmatched``, except the rows of a retired test (``RETIRED``).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Iterator

from ..studies import protocol
from ..studies.claims import NO_NULL, Claim, verdict_words
from .scorecards import scorecard_counts

_BLOCK = re.compile(r"(<!-- toymech-results (?P<key>[^>]*?) -->\n)(?P<body>.*?)"
                    r"(<!-- /toymech-results -->)", re.S)
_SPLIT = re.compile(r"(?<!\\)\|")
_NUMBER = re.compile(r"^(?P<number>-?[\d.,]+(?:e[-+]?\d+)?) \(")


# Statements a recorded block wrote before the claim was reworded -> the claim's key today.
_REWORDED = ((re.compile(r"^at our CPU recipe's setting \(.*?\) a random transformer solves "
                         r"(?P<task>\w+) \(the recipe's runs"), "random-solves-{task}-recipe"),
             (re.compile(r"^normal width-16 decimal addition \(10 digits\) is all-or-nothing"),
              "normal-w16-decimal-all-or-nothing"))


# Statements of claims whose test was since replaced by another (the claim reworded with it): the
# recorded rows judged the old test, so they are left exactly as recorded (no cell rewritten by
# today's claim) and are not unmatched. Study 1's copies-by-content claims, judged against half
# a uniform guess before the predictors without induction (``studies.induction.panel``). The
# shipped record carries no such row since the study's runs of 2026-12-05; the set keeps rows of
# an older report read back (``toymech results <folder>``) as recorded.
RETIRED = frozenset({
    "2-layer model: predicts the repeats by induction (content), so a shifted start and other "
    "block lengths are solved too",
    "1-layer smeared model: predicts the repeats by induction (content), so a shifted start and "
    "other block lengths are solved too",
})


class _Claims(dict):
    """{statement: claim} of one study; a reworded statement is found by ``_REWORDED``."""

    def __init__(self, claims):
        super().__init__((c.statement, c) for c in claims)
        self.by_key = {c.key: c for c in claims}

    def get(self, statement, default=None):
        if statement in self:
            return self[statement]
        for pattern, key in _REWORDED:
            if (m := pattern.match(statement)) and key.format(**m.groupdict()) in self.by_key:
                return self.by_key[key.format(**m.groupdict())]
        return default


def _claims(notebook: str) -> _Claims:
    """The claims of the registered study shown by ``notebook`` (its file stem), by statement."""
    for name, path in protocol.STUDIES.items():
        if Path(path).stem == notebook:
            return _Claims(protocol.study(name).claims)
    return _Claims(())


def _cells(line: str) -> list[str]:
    return [c.strip() for c in _SPLIT.split(line.strip().strip("|"))]


def null_cell(claim: Claim, cell: str) -> str:
    """The "chance / null" cell ``claim`` writes today for the number ``cell`` shows
    (``scorecard``: "1.63 (threshold: half a uniform guess ...)"); a dash or an empty cell as
    recorded (no reference was measured)."""
    match = _NUMBER.match(cell)
    if match is None or not claim.null:
        return cell
    what = f"{claim.null}: {claim.null_detail}" if claim.null_detail else claim.null
    return f"{match.group('number')} ({what})"


def verdict_cell(claim: Claim, cell: str) -> str:
    """The verdict cell with ``claim``'s own words where a seed count decided it ("reproduced"
    reads "holds (our test)" for a test of ours, also where a row below the source's setting
    quotes what the scaled run said); the rest of the cell as recorded."""
    yes, no = verdict_words(claim)
    for old, new in (("not reproduced", no), ("reproduced", yes)):
        if cell.startswith(old):
            return new + cell[len(old):]
    return re.sub(r"(our scaled run says )(not reproduced|reproduced)",
                  lambda m: m.group(1) + (no if m.group(2) == "not reproduced" else yes), cell)


def _rows(body: str) -> Iterator[tuple[int, list[str]]]:
    lines = body.split("\n")
    for i, line in enumerate(lines):
        if line.startswith("| "):
            yield i, _cells(line)


def _block(key: str, body: str) -> tuple[str, list[str]]:
    """(body rewritten, statements naming no claim) of one block."""
    notebook = key.split(" ", 1)[0]
    claims = _claims(notebook)
    if not claims:
        return body, []
    lines, head, unmatched = body.split("\n"), None, []
    table: list[list[str]] = []
    for i, cells in _rows(body):
        if head is None or cells[0] == "claim":
            head = cells
            continue
        if set(cells) == {"---"}:
            continue
        claim = None if cells[0] in RETIRED else claims.get(cells[0])
        if claim is None and cells[0] not in RETIRED:
            unmatched.append(cells[0])
        elif claim is not None:
            for j, column in enumerate(head):
                if column == "chance / null":
                    cells[j] = null_cell(claim, cells[j])
                elif column == "verdict" or (" vs size=" in key and j in (1, 2)):
                    cells[j] = verdict_cell(claim, cells[j])
            lines[i] = "| " + " | ".join(c for c in cells) + " |"
        if "verdict" in head:
            table.append(cells)
    if table and "verdict" in head:
        counted = scorecard_counts({"columns": head, "rows": table})
        lines = [f"- verdicts: {counted}" if ln.startswith("- verdicts: ") else ln for ln in lines]
    return "\n".join(lines), unmatched


def refresh_cells(text: str) -> str:
    """``text`` (the results record) with every scorecard row's null and verdict cells written
    by its claim today (see the module docstring)."""
    return _BLOCK.sub(lambda m: m.group(1) + _block(m.group("key"), m.group("body"))[0]
                      + m.group(4), text)


def unmatched(text: str) -> list[str]:
    """The statements of scorecard rows that name no current claim of their study."""
    return [s for m in _BLOCK.finditer(text) for s in _block(m.group("key"), m.group("body"))[1]]


def stale_cells(text: str) -> list[str]:
    """The rows of ``text`` whose null or verdict cell differs from what its claim writes."""
    new = refresh_cells(text).split("\n")
    return [line for line, now in zip(text.split("\n"), new) if line != now]


def main(path: str = "docs/results.md") -> int:
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    p.write_text(refresh_cells(text), encoding="utf-8")
    left = unmatched(text)
    print(f"{len(stale_cells(text))} lines rewritten in {p}; {len(left)} rows name no current "
          "claim" + "".join(f"\n  {s}" for s in left))
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
