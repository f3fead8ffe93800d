"""The reproduction scorecard of an executed notebook: found among its outputs, counted by the
words of its verdict column and rebuilt as escaped HTML for the top of its report and the index.

Where it is found: the output of the cell tagged ``scorecard`` (a table with a ``verdict``
column), and nowhere else: another table with a ``verdict`` column (a study's mechanism table, a
copied notebook's own) is no scorecard. Read back from the notebook's own output rather than
recomputed: the report shows exactly what this run displayed.

Verdict words are counted as they are written, so the scorecard can change its vocabulary without
breaking the report: the known words are listed in ``VERDICT_ORDER`` ("consistent (n seeds)" for
any n), anything else is counted as "other".
"""

from __future__ import annotations

import html
import re
from collections import Counter
from html.parser import HTMLParser

from ..studies.findings import CONSISTENT, verdict_word

SCORECARD_TAG = "scorecard"
# Display order of the verdict words; "consistent (k seeds)" sorts by k after "reproduced".
# A variant's rows are properties, not verdicts: "holds", "holds on" (some seeds), "does not hold".
# A test of ours that the source never ran: "holds (our test)", "does not hold (our test)".
VERDICT_ORDER = ("reproduced", "holds (our test)", "consistent", "mixed", "not reproduced",
                 "does not hold (our test)", "holds", "holds on", "does not hold", "unresolved",
                 "not measured", "below the source's setting", "pipeline check", "other")


class _Tables(HTMLParser):
    """The cell texts of each top-level ``<table>`` in an HTML fragment (entities decoded)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []  # {"head": [row, ...], "body": [row, ...]}, row = [text, ...]
        self._depth, self._part, self._row, self._cell = 0, "body", None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._depth += 1
            if self._depth == 1:
                self.tables.append({"head": [], "body": []})
                self._part = "body"
        elif self._depth != 1:
            return
        elif tag in ("thead", "tbody", "tfoot"):
            self._part = "head" if tag == "thead" else "body"
        elif tag == "tr":
            self._row = []
        elif tag in ("th", "td") and self._row is not None:
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "table":
            self._depth = max(0, self._depth - 1)
        elif self._depth != 1:
            return
        elif tag in ("th", "td") and self._cell is not None and self._row is not None:
            self._row.append(" ".join("".join(self._cell).split()))
            self._cell = None
        elif tag == "tr" and self._row is not None:
            self.tables[-1][self._part].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def tables(fragment: str) -> list[dict]:
    """Each table in an HTML ``fragment`` as ``{"columns": [...], "rows": [[...], ...]}``.

    A DataFrame with a named index has two header rows (the columns, then the index name under
    an empty corner): each column takes the non-empty header texts at its position.
    """
    parser = _Tables()
    parser.feed(fragment)
    parser.close()
    found = []
    for table in parser.tables:
        width = max((len(row) for row in table["head"] + table["body"]), default=0)
        columns = [" / ".join(t for t in (row[i] if i < len(row) else "" for row in table["head"]) if t)
                   for i in range(width)]
        rows = [row + [""] * (width - len(row)) for row in table["body"]]
        if rows:
            found.append({"columns": columns, "rows": rows})
    return found


def is_scorecard(table: dict) -> bool:
    """A table is a scorecard when one of its columns is called ``verdict``."""
    return "verdict" in {c.strip().lower() for c in table["columns"]}


def html_of(output: dict) -> str:
    """The ``text/html`` of a notebook output ("" without one)."""
    fragment = output.get("data", {}).get("text/html") or ""
    return "".join(fragment) if isinstance(fragment, list) else str(fragment)


def find_scorecard(nb) -> dict | None:
    """The scorecard the executed notebook ``nb`` displayed, as ``{"columns": [...], "rows":
    [[...]]}``, or None when there is none (the run stopped before it, or the notebook shows
    none). See the module docstring for where it is looked for."""
    tagged = []
    for cell in nb.cells:
        if cell.get("cell_type") != "code" or SCORECARD_TAG not in cell.get("metadata", {}).get("tags", []):
            continue
        for output in cell.get("outputs", []):
            tagged += [table for table in tables(html_of(output)) if is_scorecard(table)]
    return tagged[-1] if tagged else None


def _order(word: str) -> tuple[int, int, int]:
    scaled = int(word.endswith(" (scaled)"))
    word = word.removesuffix(" (scaled)")
    match = CONSISTENT.match(word)
    if match:
        return VERDICT_ORDER.index("consistent"), int(match.group(2)), scaled
    return VERDICT_ORDER.index(word), 0, scaled


def verdict_counts(card: dict | None) -> dict[str, int]:
    """How many claims of the scorecard ``card`` (``find_scorecard``'s) carry each verdict
    word, in display order ({} without a verdict column)."""
    if not card:
        return {}
    columns = [c.strip().lower() for c in card["columns"]]
    if "verdict" not in columns:
        return {}
    i = columns.index("verdict")
    counts = Counter(verdict_word(row[i]) for row in card["rows"] if i < len(row))
    return {word: counts[word] for word in sorted(counts, key=_order)}


def scorecard_counts(card: dict | None) -> str:
    """The verdicts of the scorecard ``card`` counted, in display order: "2 reproduced, 1
    mixed" ("" without a verdict column)."""
    return ", ".join(f"{n} {word}" for word, n in verdict_counts(card).items())


def verdict_class(text: str) -> str:
    """CSS class of a verdict cell: ``toymech-verdict-not-reproduced``, ``...-consistent``."""
    word = verdict_word(text).removesuffix(" (scaled)")
    word = "consistent" if CONSISTENT.match(word) else word
    return "toymech-verdict-" + re.sub(r"[^a-z0-9]+", "-", word).strip("-")


def scorecard_table_html(card: dict) -> str:
    """The scorecard as an HTML table, every text escaped; the verdict cells carry a class
    (``verdict_class``) for their colour. Used by the reports and the index."""
    esc = html.escape
    columns = [c.strip().lower() for c in card["columns"]]
    verdict = columns.index("verdict") if "verdict" in columns else -1
    head = "".join(f"<th>{esc(c)}</th>" for c in card["columns"])
    rows = []
    for row in card["rows"]:
        cells = []
        for i, text in enumerate(row):
            css = f' class="toymech-verdict {verdict_class(text)}"' if i == verdict else ""
            cells.append(f"<td{css}>{esc(text)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return ('<table class="toymech-scorecard-table">\n'
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>")


def scorecard_heading(size_name: str) -> str:
    """The fixed heading of the scorecard section of a report at size ``size_name``: at
    ``smoke`` a run of a few steps only checks that the code runs, so its scorecard is titled
    a pipeline check."""
    if size_name == "smoke":
        return "Pipeline check (size smoke: the verdicts test the code, not the claims)"
    return "Scorecard"
