"""Tables for a report's reader: ``reader_table(df, caption=..., model=...)``.

A notebook ends a cell with ``reader_table(frame, caption=...)`` instead of the bare frame. For
readers (the HTML a report shows) the table has

* readable column and row names with units (``plots.labels``: ``icl_acc`` -> "in-context accuracy
  (fraction correct)", ``causal.k_share`` -> "causal: share of log p(output) the W_K² key path
  restores (fraction restored)"), never an internal key;
* numbers to their precision (three significant digits, integers and counts as integers with
  thousands separators, 1e15 and beyond as ``1.00e+15``, ∞ and -∞, complex as ``a + bi``), a
  dash where a value is missing with a footnote saying why, dicts as ``p = 23``, lists as
  ``1, 2, 3``; a NaN row or column name as "(no name)", two columns that read the same told
  apart by their keys (a frame holding one column name twice is refused);
* an empty frame as its caption and a note saying it is empty;
* the cells of ``code`` columns (a line of Python to paste, such as a map's ``toymech.explore``
  line) in a ``<code class="toymech-code">`` element: text for a program, not for reading, which
  the reading rules (``toymech.report.page_rules``) leave out of the page's prose;
* a caption naming what it shows and which model;
* nothing cut at a 1,280 px window: a table estimated wider than ``MAX_WIDTH_PX`` is transposed
  when that makes it narrower, else split into parts that repeat the row names.

The raw frame travels beside it (``RAW_TABLE_MIME``): ``toymech report --code`` shows that one
(``toymech.report.reader_page``), and ``ReaderTable.frame`` is the frame itself for code that reads it.
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ..core import check
from ..plots.labels import LABELS, axis_title, label

RAW_TABLE_MIME = "application/vnd.toymech.raw-table+html"
CODE_CLASS = "toymech-code"  # a cell's line of code: <code class="toymech-code">
MAX_WIDTH_PX = 1100  # what a table may take of a 1,280 px window beside the page's margins
CHAR_PX, CELL_PAD_PX = 7.5, 18  # a character of the table font; a cell's padding and border
MISSING = "—"
UNNAMED = "(no name)"
DEFAULT_MISSING_NOTE = "no value: not measured for this row at this size, or not given by the source"
_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
_DOTTED = re.compile(r"^([a-z]+)\.([a-z0-9_]+)$")


def readable_name(key: Any, units: Mapping[str, str] | None = None) -> str:
    """What a reader reads for a column or row key: its ``plots.labels`` title with its unit,
    ``prefix: words`` for a dotted key, underscores as spaces for another snake_case key, and
    ``units[key]`` appended when given. Non-string keys (numbers, seeds) as they print."""
    if isinstance(key, tuple):
        return " · ".join(readable_name(k) for k in key if str(k) != "")
    if is_missing(key):
        return UNNAMED  # a NaN or None label: no name, not the word "nan"
    text = str(key)
    if text in LABELS:
        name = axis_title(text)
    elif (dotted := _DOTTED.match(text)) is not None:
        joined = f"{dotted.group(1)}_{dotted.group(2)}"
        name = axis_title(joined) if joined in LABELS else f"{dotted.group(1)}: {dotted.group(2).replace('_', ' ')}"
    elif _SNAKE.match(text):
        name = text.replace("_", " ")
    else:
        name = text
    if units and key in units:
        name = f"{name} ({units[key]})"
    return name


def is_missing(value: Any) -> bool:
    """None, NaN, pandas' NA / NaT."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and math.isnan(value)


BIG = 1e15  # from here on a number is written 1.23e+15, never as its digits


def format_number(value: float, digits: int = 3) -> str:
    """``value`` to ``digits`` significant digits; an integer value as an integer (1,024); a
    magnitude from ``BIG`` on in scientific notation (1.00e+300); infinities as ∞ and -∞; a
    complex number as ``a + bi``."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        z = complex(value)
        if z.imag == 0:
            return format_number(z.real, digits)
        sign = "-" if z.imag < 0 or (z.imag == 0 and math.copysign(1, z.imag) < 0) else "+"
        return f"{format_number(z.real, digits)} {sign} {format_number(abs(z.imag), digits)}i"
    if isinstance(value, numbers.Integral):
        value = int(value)  # exact: a 20-digit count is no float
        return f"{value:,}" if abs(value) < BIG else f"{value:.{digits - 1}e}"
    value = float(value)
    if math.isnan(value):
        return MISSING
    if math.isinf(value):
        return "∞" if value > 0 else "-∞"
    magnitude = abs(value)
    if magnitude >= BIG:
        return f"{value:.{digits - 1}e}"
    if value.is_integer():
        return f"{int(value):,}"
    if magnitude >= 10 ** digits:
        return f"{round(value):,}"
    if magnitude < 1e-3:
        return f"{value:.{digits - 1}e}"
    return f"{float(f'{value:.{digits}g}'):g}"


def format_value(value: Any, digits: int = 3) -> str:
    """A cell as a reader reads it (``MISSING`` for a missing value)."""
    if is_missing(value):
        return MISSING
    if isinstance(value, Mapping):
        return ", ".join(f"{readable_name(k)} = {format_value(v, digits)}" for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value) if isinstance(value, (set, frozenset)) else value
        return ", ".join(format_value(v, digits) for v in items)
    if isinstance(value, numbers.Number):
        return format_number(value, digits)
    if isinstance(value, str) and value in LABELS:  # a metric named by its key
        return label(value)
    return str(value)


def _integer_columns(frame: pd.DataFrame) -> set:
    """Columns whose every present value is a whole number (counts, steps, widths)."""
    out = set()
    for column in frame.columns:
        values = [v for v in frame[column] if not is_missing(v)]
        if values and all(isinstance(v, numbers.Real) and not isinstance(v, bool)
                          and math.isfinite(v) and abs(v) < BIG and float(v).is_integer()
                          for v in values):
            out.add(column)
    return out


def _cells(frame: pd.DataFrame, digits: int) -> list[list[str]]:
    whole = _integer_columns(frame)
    return [[f"{int(v):,}" if c in whole and not is_missing(v) else format_value(v, digits)
             for c, v in zip(frame.columns, row)] for row in frame.itertuples(index=False)]


def _min_width(texts: list[str]) -> float:
    """The width (px) a column needs at the least: its longest word (text wraps at spaces)."""
    longest = max((len(w) for t in texts for w in t.split()), default=1)
    return longest * CHAR_PX + CELL_PAD_PX


class ReaderTable:
    """``reader_table``'s result: the reader's HTML, plain text, and the raw frame. Made by
    ``reader_table``, which describes ``frame``, ``caption``, ``model``, ``units``, ``digits``,
    ``missing_note`` (its ``missing``), ``max_width_px`` and ``code``."""

    def __init__(self, frame: pd.DataFrame, caption: str, model: str | None, units, digits: int,
                 missing_note: str, max_width_px: float, code: Sequence[Any] = ()):
        self.frame = frame
        self.caption = caption.strip().rstrip(".") + "." + (f" Model: {model}." if model else "")
        shown = frame.copy()
        shown.columns = _distinct([readable_name(c, units) for c in frame.columns], list(frame.columns))
        # A default 0, 1, 2 ... index numbers nothing a reader needs: it is left out.
        plain = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
        self.index_names = [] if plain else [readable_name(n) if n is not None else ""
                                             for n in frame.index.names]
        self.rows = [[] if plain else [readable_name(k) for k in (key if isinstance(key, tuple) else (key,))]
                     for key in frame.index]
        self.columns = list(shown.columns)
        self.cells = _cells(frame, digits)
        # which cells are code (as written, never formatted as a number or a name)
        self.is_code = [[c in code for c in frame.columns] for _ in self.cells]
        for row, flags, values in zip(self.cells, self.is_code, frame.itertuples(index=False)):
            for j, (flag, value) in enumerate(zip(flags, values)):
                if flag and not is_missing(value):
                    row[j] = str(value)
        self.missing_note = missing_note
        self.max_width_px = max_width_px
        if self._width(self.columns, self.rows, self.cells) > max_width_px and self._transposed_fits_better():
            self._transpose()

    # ---- layout --------------------------------------------------------------------------
    def _width(self, columns, rows, cells) -> float:
        index = sum(_min_width([r[i] for r in rows] + [""]) for i in range(len(rows[0]) if rows else 0))
        return index + sum(_min_width([c] + [row[j] for row in cells]) for j, c in enumerate(columns))

    def _flipped_columns(self) -> list[str]:
        """The row names as column names: "seed 3" where the index is named seed."""
        name = self.index_names[0] if len(self.index_names) == 1 else ""
        return [(f"{name} {r[0]}" if name else " · ".join(r)) if r else str(n + 1)
                for n, r in enumerate(self.rows)]

    def _transposed_fits_better(self) -> bool:
        flipped_cells = [list(col) for col in zip(*self.cells)] if self.cells else []
        rows = [[c] for c in self.columns]
        return self._width(self._flipped_columns(), rows, flipped_cells) < \
            self._width(self.columns, self.rows, self.cells)

    def _transpose(self) -> None:
        self.cells = [list(col) for col in zip(*self.cells)] if self.cells else []
        self.is_code = [list(col) for col in zip(*self.is_code)] if self.is_code else []
        self.rows, self.columns = [[c] for c in self.columns], self._flipped_columns()
        self.index_names = [""]

    def parts(self) -> list[list[int]]:
        """Column positions of each part: as many columns per part as fit in the width."""
        fixed = self._width([], self.rows, [[] for _ in self.cells])
        parts, current, used = [], [], fixed
        for j, column in enumerate(self.columns):
            need = _min_width([column] + [row[j] for row in self.cells])
            if current and used + need > self.max_width_px:
                parts.append(current)
                current, used = [], fixed
            current.append(j)
            used += need
        return parts + [current] if current or not parts else parts

    # ---- output --------------------------------------------------------------------------
    @property
    def empty_note(self) -> str:
        """What an empty table says instead of nothing ("" when it has cells)."""
        if self.cells and self.columns:
            return ""
        return ("This table is empty: " + ("no rows" if not len(self.frame) else "no columns")
                + " to show for this run")

    def html(self) -> str:
        """The table as the reader sees it (parts side by side where it is too wide)."""
        if self.empty_note:
            return (f'<table class="dataframe toymech-table"><caption>{html.escape(self.caption)}'
                    f'</caption></table>\n<p class="toymech-table-note">{html.escape(self.empty_note)}.</p>')
        parts = self.parts()
        missing = any(MISSING == c for row in self.cells for c in row)
        out = []
        for n, columns in enumerate(parts):
            caption = self.caption + (f" (part {n + 1} of {len(parts)})" if len(parts) > 1 else "")
            head = "".join(f"<th>{html.escape(h)}</th>" for h in self.index_names) + \
                "".join(f"<th>{html.escape(self.columns[j])}</th>" for j in columns)
            body = "".join(
                "<tr>" + "".join(f"<th>{html.escape(k)}</th>" for k in row)
                + "".join(f"<td>{_cell_html(cells[j], code[j])}</td>" for j in columns) + "</tr>"
                for row, cells, code in zip(self.rows, self.cells, self.is_code))
            out.append(f'<table class="dataframe toymech-table"><caption>{html.escape(caption)}</caption>'
                       f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        if missing:
            out.append(f'<p class="toymech-table-note">{MISSING} {html.escape(self.missing_note)}.</p>')
        return "\n".join(out)

    def text(self) -> str:
        """The caption and the raw frame as plain text."""
        if self.empty_note:
            return f"{self.caption}\n{self.empty_note}."
        return self.caption + "\n" + self.frame.to_string()

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        return {"text/html": self.html(), "text/plain": self.text(), RAW_TABLE_MIME: self.frame._repr_html_()}

    def __repr__(self) -> str:
        return f"ReaderTable({self.caption!r}, {self.frame.shape[0]} x {self.frame.shape[1]})"


def _cell_html(text: str, code: bool) -> str:
    if code and text != MISSING:
        return f'<code class="{CODE_CLASS}">{html.escape(text)}</code>'
    return html.escape(text)


def _distinct(names: list[str], keys: list) -> list[str]:
    """Readable column names, each once: two columns that read the same are told apart by their
    keys (``name [key]``)."""
    seen: dict[str, int] = {}
    for name in names:
        seen[name] = seen.get(name, 0) + 1
    return [f"{n} [{k}]" if seen[n] > 1 else n for n, k in zip(names, keys)]


def reader_table(df: pd.DataFrame | pd.Series, caption: str, model: str | None = None,
                 units: Mapping[str, str] | None = None, digits: int = 3,
                 missing: str = DEFAULT_MISSING_NOTE, max_width_px: float = MAX_WIDTH_PX,
                 code: Sequence[Any] = ()) -> ReaderTable:
    """``df`` laid out for a reader (see the module docstring). ``caption``: what the table
    shows (a sentence); ``model``: which model(s) it measures; ``units``: {column: unit} for
    columns ``plots.labels`` does not know; ``digits``: significant digits of non-integer numbers;
    ``missing``: why a value can be missing (the footnote under a dash); ``max_width_px``: the
    width above which a wide table is split into parts; ``code``: columns whose cells are a
    line of code to paste (shown as code, as written). Example:
    ``reader_table(pd.DataFrame({"eval_loss": [0.04]}), caption="One run")``."""
    if isinstance(df, pd.Series):
        df = df.to_frame()
    check(isinstance(df, pd.DataFrame), "df", type(df).__name__, "a pandas DataFrame or Series")
    repeated = sorted({str(c) for c in df.columns[df.columns.duplicated()]})
    check(not repeated, "df", f"a frame with columns {', '.join(repeated)} twice",
          "a frame whose columns have distinct names (a reader cannot tell two such columns apart)")
    check(isinstance(caption, str) and caption.strip() != "", "caption", caption,
          "a non-empty sentence saying what the table shows")
    check(model is None or (isinstance(model, str) and model.strip() != ""), "model", model,
          "None or the name of the model(s) measured")
    check(isinstance(digits, int) and not isinstance(digits, bool) and 1 <= digits <= 8, "digits", digits,
          "an integer from 1 to 8")
    check(isinstance(max_width_px, (int, float)) and max_width_px >= 200, "max_width_px", max_width_px,
          "a width in px, at least 200")
    code = [code] if isinstance(code, str) else list(code)
    unknown = [c for c in code if c not in df.columns]
    check(not unknown, "code", unknown, f"columns of the frame: {', '.join(map(str, df.columns))}")
    return ReaderTable(df, caption, model, units, digits, missing, float(max_width_px), code)
