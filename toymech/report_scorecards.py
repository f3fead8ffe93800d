"""The reproduction scorecard of an executed notebook: found among its outputs (the table its
``.scorecard(`` cell displayed, see ``toymech.studies.claims.scorecard``), counted by verdict and
rebuilt as escaped HTML for the top of its report and for the index page."""

from __future__ import annotations

import html
import re
from collections import Counter
from html.parser import HTMLParser

SCORECARD_HEADING = "Reproduction scorecard (computed at the end of this run)"
_SCORECARD_CALL = re.compile(r"\.scorecard\(")
_SCORECARD_COLUMNS = {"verdict", "seeds agreeing"}  # how a scorecard table is known by its headers
_VERDICTS = ("reproduced", "mixed", "not reproduced", "not measured")  # toymech.studies.claims


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


def _tables(fragment: str) -> list[dict]:
    """Each table in ``fragment`` as ``{"columns": [...], "rows": [[...], ...]}``.

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


def _is_scorecard(table: dict) -> bool:
    return _SCORECARD_COLUMNS <= {c.lower() for c in table["columns"]}


def find_scorecard(nb) -> dict | None:
    """The scorecard an executed notebook displayed, as ``{"columns": [...], "rows": [[...]]}``.

    The table in the ``text/html`` output of the last code cell whose source calls
    ``.scorecard(``; failing that (the scorecard was kept in a variable and shown later), the
    last table output with ``verdict`` and ``seeds agreeing`` columns. None when there is none
    (the run stopped before it, or the notebook never shows one).
    """
    called, by_header = [], []
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        for output in cell.get("outputs", []):
            fragment = output.get("data", {}).get("text/html")
            if not fragment:
                continue
            for table in _tables("".join(fragment) if isinstance(fragment, list) else str(fragment)):
                if _SCORECARD_CALL.search(cell.source):
                    called.append(table)
                if _is_scorecard(table):
                    by_header.append(table)
    if called:
        return called[-1]
    return by_header[-1] if by_header else None


def scorecard_counts(card: dict) -> str:
    """The verdicts counted, in the claims module's order: "2 reproduced, 1 mixed" ("" without
    a verdict column)."""
    columns = [c.lower() for c in card["columns"]]
    if "verdict" not in columns:
        return ""
    i = columns.index("verdict")
    counts = Counter(row[i] for row in card["rows"] if i < len(row))
    order = [v for v in _VERDICTS if counts[v]] + [v for v in counts if v not in _VERDICTS]
    return ", ".join(f"{counts[v]} {v}" for v in order)


def scorecard_table_html(card: dict) -> str:
    """The scorecard as an HTML table, every text escaped; the verdict cells carry a class
    (``toymech-verdict-not-reproduced``) for their colour. Used by the reports and the index."""
    esc = html.escape
    columns = [c.lower() for c in card["columns"]]
    verdict = columns.index("verdict") if "verdict" in columns else -1
    head = "".join(f"<th>{esc(c)}</th>" for c in card["columns"])
    rows = []
    for row in card["rows"]:
        cells = []
        for i, text in enumerate(row):
            slug = re.sub(r"[^a-z0-9]+", "-", text.lower())
            css = f' class="toymech-verdict toymech-verdict-{slug}"' if i == verdict else ""
            cells.append(f"<td{css}>{esc(text)}</td>")
        rows.append(f"<tr>{''.join(cells)}</tr>")
    return ('<table class="toymech-scorecard-table">\n'
            f"<thead><tr>{head}</tr></thead>\n<tbody>\n" + "\n".join(rows) + "\n</tbody>\n</table>")
