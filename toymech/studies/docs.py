"""The claims table of docs/sources.md, generated from the studies' ``CLAIMS`` (one row per claim:
its key, what the source says and where, the source's number, our test, and why its tolerance is
what it is), so the documentation cannot drift from the code. ``python -m toymech.studies.docs``
rewrites the table between its markers; ``tests/test_claims_null.py`` checks it is current."""

from __future__ import annotations

import sys
from pathlib import Path

from .protocol import all_studies

BEGIN, END = "<!-- claims table: begin (generated) -->", "<!-- claims table: end -->"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def claims_markdown() -> str:
    """The claims of every registered study as Markdown tables, one per study."""
    parts = []
    for study in all_studies():
        parts.append(f"### {study.TITLE}\n")
        parts.append("| key | claim | where the source says it | the source's number | our test "
                     "| why this tolerance |")
        parts.append("| --- | --- | --- | --- | --- | --- |")
        for c in study.CLAIMS:
            number = c.source_value + (" (a number of ours, not the source's)" if c.ours else "")
            test = c.test + ("" if c.trained else " (a property of the initialisation)")
            parts.append(f"| `{c.key}` | {_cell(c.statement)} | {_cell(c.source)} | "
                         f"{_cell(number)} | {_cell(test)} | {_cell(c.why)} |")
        parts.append("")
    return "\n".join(parts).rstrip() + "\n"


def with_table(doc: str) -> str:
    """``doc`` with the generated table between its markers (appended when there are none)."""
    block = f"{BEGIN}\n\n{claims_markdown()}\n{END}"
    if BEGIN in doc and END in doc:
        head, rest = doc.split(BEGIN, 1)
        return head + block + rest.split(END, 1)[1]
    return doc.rstrip() + "\n\n" + block + "\n"


def main(path: str = "docs/sources.md") -> int:
    p = Path(path)
    p.write_text(with_table(p.read_text()))
    print(f"claims table written to {p}")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
