"""What a reader of a rendered report would trip over, decided from the page's DOM as data.

A browser runs ``DOM_SCRIPT`` on the page (one snippet, returning JSON: the visible text, every
table's header and cell texts and widths, every plotly figure's tick-label font sizes and axis
title boxes); ``violations(state)`` is a pure function of that JSON, so each rule is tested
without a browser, and a test with one opens the rendered reports. The rules (``RULES``):

=================  ===========================================================================
``nan``            a table cell that reads NaN / nan / <NA> / None (a dash with a note instead), or
                   a "nan" / "NaN" anywhere in the visible text (a number that was never measured)
``repr``           a Python value printed as is: ``{'``, ``{1: 0.155``, ``[1, 2``, ``Name(a=``
                   (a line of code a table shows for pasting, ``<code class="toymech-code">``
                   from ``reader_table(..., code=...)``, is code, not prose: left out of the text)
``internal-key``   a dotted key (``causal.clean_gap``) in the text, or a snake_case table header
                   (``qcomp_max``)
``wide-table``     a table wider than the page's room for it (cut or scrolled at 1,280 px)
``empty-column``   a table column that no row fills (rows of equal length only: no row spans)
``small-tick``     a figure's tick label drawn below ``MIN_TICK_PX``
``cut-title``      an axis title whose box leaves its figure's SVG
``instruction``    text that tells the reader to edit a parameter (``Add "llc" to `also```)
=================  ===========================================================================
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..core import check
from ..display.tables import CODE_CLASS

WINDOW = (1280, 1600)  # px: the window a reader's report is checked in
MIN_TICK_PX = 10.0
RULES = ("nan", "repr", "internal-key", "wide-table", "empty-column", "small-tick", "cut-title",
         "instruction")

_NAN_CELL = re.compile(r"(?<![\w.])(nan|NaN|NAN|<NA>|None|NaT)(?![\w.])")
_NAN_TEXT = re.compile(r"(?<![\w.])(nan|NaN)(?![\w.])")  # in prose "None" is a word
# A list after a number ("0.41 [0.38, 0.44]") is an interval, not a repr.
_REPR = re.compile(r"\{'|\{\"\w|\{-?\d+(\.\d+)?: |(?<![\d%] )\[-?\d+(\.\d+)?, -?\d|\b[A-Z]\w*\(\w+=")
_DOTTED_KEY = re.compile(r"\b[a-z]+\.[a-z]+_[a-z0-9_]+\b")
_SNAKE_HEADER = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$")
_INSTRUCTION = re.compile(
    r"\bAdd\s+[\"“'][^\"”']+[\"”']\s+to\b|\bto\s+`\w+`|\bpass it to the report\b|"
    r"\b(edit|change|set)\s+(the\s+)?`?\w+`?\s+(parameter|cell)\b", re.I)

# Runs in the page (Selenium's execute_script). Text of code cells is left out: reader mode
# shows none, and --code pages are for authors; so is a table's line of code for pasting
# (only <code> of the class ``display.tables.CODE_CLASS``, never any other <code> element).
DOM_SCRIPT = r"""
function box(e) { var r = e.getBoundingClientRect(); return {l: r.left, r: r.right, t: r.top, b: r.bottom}; }
function room(e) {
  for (var p = e.parentElement; p; p = p.parentElement) {
    var s = getComputedStyle(p);
    if (p.clientWidth > 0 && (s.overflowX === 'auto' || s.overflowX === 'scroll' || s.overflowX === 'hidden'))
      return Math.min(p.clientWidth, window.innerWidth);
  }
  return window.innerWidth;
}
var inputs = Array.from(document.querySelectorAll('.jp-InputArea, code.CODE_CLASS'));
inputs.forEach(function (e) { e.dataset.display = e.style.display; e.style.display = 'none'; });
var text = document.body.innerText;  // laid out: table cells apart, scripts and styles left out
inputs.forEach(function (e) { e.style.display = e.dataset.display; });
var figures = Array.from(document.querySelectorAll('.js-plotly-plot')).map(function (g) {
  var svg = g.querySelector('svg.main-svg');
  var title = (g.layout && g.layout.title && (g.layout.title.text || g.layout.title)) || '?';
  return {
    title: String(title), svg: svg ? box(svg) : null,
    ticks: Array.from(g.querySelectorAll('g.xtick text, g.ytick text, g.cbaxis text, .colorbar text'))
      .filter(function (t) { return t.textContent.trim().length > 0; })
      .map(function (t) { return {text: t.textContent.trim(), px: parseFloat(getComputedStyle(t).fontSize)}; }),
    titles: Array.from(g.querySelectorAll('g[class]')).filter(function (e) {
      return /^g-[xy]\d*title$/.test(e.getAttribute('class')) && e.textContent.trim().length > 0;
    }).map(function (e) { return {text: e.textContent.trim(), box: box(e)}; }),
  };
});
return {
  window: window.innerWidth,
  pending: document.querySelectorAll('.plotly-graph-div:not(.js-plotly-plot)').length,
  text: text,
  tables: Array.from(document.querySelectorAll('table')).filter(function (t) {
    return !t.closest('.jp-InputArea') && !t.closest('.js-plotly-plot'); }).map(function (t) {
    var cap = t.querySelector('caption');
    return {caption: cap ? cap.innerText.trim() : '', width: t.getBoundingClientRect().width, room: room(t),
            headers: Array.from(t.querySelectorAll('thead th')).map(function (c) { return c.innerText.trim(); }),
            cells: Array.from(t.querySelectorAll('tbody td, tbody th')).map(function (c) { return c.innerText.trim(); }),
            rows: Array.from(t.querySelectorAll('tbody tr')).map(function (r) {
              return Array.from(r.children).map(function (c) { return c.innerText.trim(); }); })};
  }),
  figures: figures,
};
""".replace("CODE_CLASS", CODE_CLASS)


@dataclass(frozen=True)
class Violation:
    rule: str  # one of RULES
    what: str  # where and what, for the reader of a test failure

    def __str__(self) -> str:
        return f"{self.rule}: {self.what}"


def _short(text: str, around: re.Match | None = None, width: int = 60) -> str:
    if around is None:
        return text[:width]
    start = max(0, around.start() - width // 2)
    return " ".join(text[start:around.end() + width // 2].split())


def _text_violations(text: str) -> list[Violation]:
    found = []
    for rule, pattern in (("nan", _NAN_TEXT), ("repr", _REPR), ("internal-key", _DOTTED_KEY),
                          ("instruction", _INSTRUCTION)):
        found += [Violation(rule, repr(_short(text, m))) for m in pattern.finditer(text)]
    return found


def _table_violations(n: int, table: dict) -> list[Violation]:
    name = f"table {n + 1}" + (f" ({table['caption'][:40]!r})" if table.get("caption") else "")
    found = [Violation("nan", f"{name}: cell {cell!r}") for cell in table.get("cells", [])
             if _NAN_CELL.search(cell)]
    found += [Violation("internal-key", f"{name}: header {h!r}") for h in table.get("headers", [])
              if _SNAKE_HEADER.match(h)]
    rows = table.get("rows") or []
    if rows and len({len(r) for r in rows}) == 1:
        found += [Violation("empty-column", f"{name}: column {j + 1}") for j in range(len(rows[0]))
                  if all(r[j] == "" for r in rows)]
    if table["width"] > table["room"] + 1:
        found.append(Violation("wide-table", f"{name}: {table['width']:.0f} px in {table['room']:.0f} px"))
    return found


def _figure_violations(fig: dict) -> list[Violation]:
    found = []
    small = [t for t in fig.get("ticks", []) if t["px"] < MIN_TICK_PX]
    if small:
        found.append(Violation("small-tick", f"figure {fig['title']!r}: {len(small)} tick label(s) at "
                                             f"{min(t['px'] for t in small):g} px (e.g. {small[0]['text']!r})"))
    svg = fig.get("svg")
    for title in fig.get("titles", []) if svg else []:
        b = title["box"]
        if b["l"] < svg["l"] - 1 or b["r"] > svg["r"] + 1 or b["t"] < svg["t"] - 1 or b["b"] > svg["b"] + 1:
            found.append(Violation("cut-title", f"figure {fig['title']!r}: axis title {title['text']!r}"))
    return found


def violations(state: dict[str, Any]) -> list[Violation]:
    """Every rule broken on the page ``state`` (``DOM_SCRIPT``'s result), in ``RULES`` order."""
    check(isinstance(state, dict) and {"text", "tables", "figures"} <= set(state), "state",
          type(state).__name__ if not isinstance(state, dict) else sorted(state),
          "the DOM_SCRIPT result: a dict with text, tables and figures")
    found = _text_violations(state["text"])
    for n, table in enumerate(state["tables"]):
        found += _table_violations(n, table)
    for fig in state["figures"]:
        found += _figure_violations(fig)
    return sorted(found, key=lambda v: RULES.index(v.rule))


def counts(found: list[Violation]) -> dict[str, int]:
    """{rule: how many}, every rule listed."""
    return {rule: sum(v.rule == rule for v in found) for rule in RULES}
