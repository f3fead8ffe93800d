"""An executed notebook made into a page for readers (``prepare``): what to show, in what order.

Reader mode (the default of ``toymech report``) shows no code: every code cell's input is left
out, and so are the parameter cells (their values are in the page's header), logs, warnings,
progress bars and bare values (outputs that only have a ``text/plain`` form: reprs, dicts,
strings left as a cell's last value). What stays: markdown, printed sentences and tables, HTML
tables, figures, attention views, errors. ``code=True`` (``toymech report --code``) keeps every
input and output, for authors. The executed ``.ipynb`` is never changed: this works on a copy.

Cell tags (set in JupyterLab's property inspector, or in the cell's metadata ``tags``):

==================  ==========================================================================
``finding``         the cell's outputs (or a markdown cell's text) open the page under "What
                    this run found"; several cells keep their order
``scorecard``       the cell showing the scorecard; moved under the scorecard heading, after the
                    finding (its table is rebuilt with coloured verdicts)
``remove-cell``     never shown (setup that a reader does not need)
``remove-input``    output only, even with ``--code``
``remove-output``   input only (with ``--code``), never its output
``show-input``      input shown even to readers (a short snippet the text refers to)
==================  ==========================================================================

Run facts: ``toymech.display.facts(...)`` emits a machine-readable output (``FACTS_MIME``) that is
never shown; its values (the device as resolved, the seeds, the zoo's counts of models trained
and loaded) fill the header and the "Where the time went" table.
"""

from __future__ import annotations

import copy
import html
import re
from typing import Any

from ..display import FACTS_MIME
from ..display.tables import RAW_TABLE_MIME
from .scorecards import find_scorecard, html_of, is_scorecard, scorecard_table_html, tables

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_PARAMETER_TAGS = ("parameters", "injected-parameters")
_LOG_LINE = re.compile(r"^\s*\[toymech\]")
_HEADING = re.compile(r"^\s{0,3}(#{1,6})\s+(.*?)[\s#]*$")
# A bare value printed or left as a cell's result: a container, a call-like repr, <object ...>,
# or a quoted string. Readers get a sentence or a table instead.
_REPR = re.compile(r"""^(\{.*\}|\[.*\]|\(.*\)|[A-Za-z_][\w.]*\(.*\)|<.*>|'.*'|".*")$""", re.S)
_REPR_START = re.compile(r"^([{\[(]|[A-Za-z_][\w.]*\()")
SETUP_SECTION = "Setup (imports, parameters, data)"


def _node(value: dict):
    import nbformat

    return nbformat.from_dict(value)


def _tags(cell) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def heading(cell) -> tuple[int, str] | None:
    """(level, text) of a markdown cell's first heading, or None."""
    if cell.cell_type != "markdown":
        return None
    for line in cell.source.splitlines():
        match = _HEADING.match(line)
        if match and match.group(2):
            return len(match.group(1)), match.group(2)
    return None


def looks_like_repr(text: str) -> bool:
    """Whether ``text`` is a bare Python value rather than prose or a table (see ``_REPR``)."""
    return bool(_REPR.match(text.strip()))


def _without_reprs(lines: list[str]) -> list[str]:
    """``lines`` without the bare values printed among them: a line that opens a value (``{``,
    ``[``, ``(``, ``Name(``) and the lines up to where its brackets close, when the whole block
    is a value (``looks_like_repr``)."""
    out, i = [], 0
    while i < len(lines):
        if _REPR_START.match(lines[i].strip()):
            depth, j = 0, i
            while j < len(lines):
                depth += sum(lines[j].count(c) for c in "([{") - sum(lines[j].count(c) for c in ")]}")
                if depth <= 0:
                    break
                j += 1
            if depth == 0 and looks_like_repr("\n".join(lines[i : j + 1])):
                i = j + 1
                continue
        out.append(lines[i])
        i += 1
    return out


def _clean_stdout(text: str) -> str:
    """Printed text as a reader should see it: carriage-return redraws reduced to their final
    state, toymech's ``[toymech] ...`` log lines and printed bare values removed."""
    lines = [line.rsplit("\r", 1)[-1] for line in text.split("\n")]
    kept = "\n".join(_without_reprs([line for line in lines if not _LOG_LINE.match(line)]))
    return "" if not kept.strip() or looks_like_repr(kept) else kept


def _reader_output(output: dict) -> dict | None:
    """The output as shown to a reader, or None when it is hidden (see the module docstring)."""
    kind = output.get("output_type")
    if kind == "stream":
        if output.get("name") != "stdout":
            return None  # warnings, tqdm's text bars, library chatter
        text = _clean_stdout("".join(output.get("text", "")))
        return _node({**output, "text": text}) if text else None
    if kind in ("execute_result", "display_data"):
        data = output.get("data", {})
        if RAW_TABLE_MIME in data:  # a reader_table: the reader's HTML only
            return _node({**output, "data": {k: v for k, v in data.items() if k != RAW_TABLE_MIME}})
        if set(data) - {"text/plain", WIDGET_VIEW}:
            if WIDGET_VIEW not in data:
                return output
            # A widget with a static rendering beside it (the explorer): a page has no widget
            # manager (one would come from a CDN), so the static rendering is what it shows.
            return _node({**output, "data": {k: v for k, v in data.items() if k != WIDGET_VIEW}})
        return None  # a bare value or a progress bar
    return output  # errors


def facts_of(nb) -> dict:
    """Every ``FACTS_MIME`` output of the executed notebook ``nb`` merged, later values
    winning."""
    facts: dict = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            value = output.get("data", {}).get(FACTS_MIME)
            if isinstance(value, dict):
                facts.update(value)
    return facts


def time_table(nb, wall_s: float | None = None) -> list[dict]:
    """Seconds per section of the executed notebook ``nb``: each markdown heading of level 2 or
    deeper starts one, cells before the
    first are the setup. From papermill's per-cell ``duration``; with ``wall_s``, what the cells
    do not account for (kernel start-up, saving) is a last row. Rows: section, seconds, cells."""
    rows: dict[str, dict] = {}
    section = SETUP_SECTION
    for cell in nb.cells:
        found = heading(cell)
        if found and found[0] >= 2:
            section = found[1]
        seconds = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
        if cell.cell_type != "code" or not isinstance(seconds, (int, float)):
            continue
        row = rows.setdefault(section, {"section": section, "seconds": 0.0, "cells": 0})
        row["seconds"] += float(seconds)
        row["cells"] += 1
    table = list(rows.values())
    if wall_s is not None and table:
        rest = wall_s - sum(r["seconds"] for r in table)
        if rest > 0:
            table.append({"section": "kernel start-up and saving (outside the cells)",
                          "seconds": rest, "cells": 0})
    return table


def cell_durations(nb) -> list[float | None]:
    """papermill's duration of every cell, in order (None where it has none)."""
    out = []
    for cell in nb.cells:
        seconds = (cell.get("metadata", {}).get("papermill") or {}).get("duration")
        out.append(float(seconds) if isinstance(seconds, (int, float)) else None)
    return out


def _marker(kind: str, **extra: Any):
    # An empty raw cell: it renders as nothing by itself; the template's rawcell block writes the
    # section tags there (HTML in the cell would go through nbconvert's sanitiser).
    import nbformat

    return nbformat.v4.new_raw_cell("", metadata={"toymech": kind, **extra})


def _split_title(cell):
    """A first markdown cell that opens with a ``#`` heading becomes two: the heading alone (the
    top of the page) and the rest (shown after the finding and the scorecard)."""
    lines = cell.source.splitlines()
    if not lines or not _HEADING.match(lines[0]) or len(_HEADING.match(lines[0]).group(1)) != 1:
        return cell, None
    rest = "\n".join(lines[1:]).strip()
    title = copy.deepcopy(cell)
    title.source = lines[0]
    if not rest:
        return title, None
    body = copy.deepcopy(cell)
    body.source = rest
    body.pop("id", None)  # ids are unique in a notebook
    return title, body


def _swap_scorecard_table(cell, card: dict | None) -> None:
    """In a ``scorecard`` cell, the output holding the table shows the rebuilt, coloured one."""
    if not card:
        return
    for output in cell.get("outputs", []):
        if any(is_scorecard(t) for t in tables(html_of(output))):
            output["data"] = _node({"text/html": scorecard_table_html(card)})


def prepare(nb, *, code: bool = False, scorecard: dict | None = None) -> tuple[Any, dict]:
    """A copy of the executed notebook ``nb`` laid out for the page, and what was left out
    (``code``: keep the code cells, for authors).

    The order: the title, "What this run found" (cells tagged ``finding``), the scorecard (the cell
    tagged ``scorecard``, else a copy of the scorecard found among the outputs, passed as
    ``scorecard``), then the notebook in its own order. Returns ``(nb, info)`` with ``info`` =
    {"hidden": outputs left out, "finding": bool, "scorecard": "tagged" | "copied" | None}.
    """
    from papermill.execute import ERROR_MARKER_TAG

    nb = copy.deepcopy(nb)
    widgets = nb.metadata.pop("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
    states = widgets.get("state", {})
    hidden = 0
    cells = []
    for cell in nb.cells:
        tags = _tags(cell)
        # The report's own banner replaces papermill's red "An Exception was encountered" cell;
        # its anchor cell beside the failing cell stays, the banner links to it.
        if ERROR_MARKER_TAG in tags and "An Exception was encountered" in cell.source:
            continue
        if "remove-cell" in tags or (not code and set(tags) & set(_PARAMETER_TAGS)):
            continue
        if cell.cell_type == "code":
            outputs = []
            for output in cell.outputs:
                data = output.get("data", {})
                if FACTS_MIME in data:
                    continue  # machine-readable: read by facts_of, never shown
                if code:
                    output = _widget_as_text(_raw_table(output), states)
                else:
                    shown = _reader_output(output)
                    hidden += shown is None
                    output = shown
                if output is not None and "remove-output" not in tags:
                    outputs.append(output)
            cell.outputs = outputs
            show_input = (code and "remove-input" not in tags) or "show-input" in tags
            if not show_input:
                # nbconvert's base template honours this per cell.
                cell.metadata.setdefault("transient", {})["remove_source"] = True
                if not cell.outputs:
                    continue  # nothing left to show
        cells.append(cell)

    finding = [c for c in cells if "finding" in _tags(c)]
    tagged_card = [c for c in cells if "scorecard" in _tags(c) and c not in finding]
    rest = [c for c in cells if c not in finding and c not in tagged_card]
    top, intro = [], None
    if rest and rest[0].cell_type == "markdown":
        title, intro = _split_title(rest.pop(0))
        top.append(title)
    if finding:
        top += [_marker("open", section="finding"), *finding, _marker("close")]
    card = scorecard if scorecard is not None else find_scorecard(nb)
    how = None
    if tagged_card:
        for cell in tagged_card:
            _swap_scorecard_table(cell, card)
        top += [_marker("open", section="scorecard"), *tagged_card, _marker("close")]
        how = "tagged"
    elif card:
        top.append(_marker("scorecard-copy"))
        how = "copied"
    nb.cells = top + ([intro] if intro is not None else []) + rest
    if nb.get("nbformat_minor", 0) >= 5:  # cell ids are required from nbformat 4.5 on
        taken = {c.get("id") for c in nb.cells}
        for n, cell in enumerate(nb.cells):
            if not cell.get("id"):
                cell["id"] = next(f"toymech-{n}-{k}" for k in range(len(nb.cells) + 1)
                                  if f"toymech-{n}-{k}" not in taken)
    return nb, {"hidden": hidden, "finding": bool(finding), "scorecard": how}


def _raw_table(output: dict) -> dict:
    """With --code, a ``reader_table`` output shows the raw frame it was made from."""
    data = output.get("data", {})
    if RAW_TABLE_MIME not in data:
        return output
    rest = {k: v for k, v in data.items() if k != RAW_TABLE_MIME}
    return _node({**output, "data": {**rest, "text/html": data[RAW_TABLE_MIME]}})


def _widget_as_text(output: dict, states: dict) -> dict | None:
    """Widgets (tqdm bars) need a widget manager from a CDN: show their final state as text. The
    output's own text/plain was captured at display time (a 0% bar); the final values live in the
    notebook's saved widget state."""
    data = output.get("data")
    if data is None or WIDGET_VIEW not in data:
        return output
    data = dict(data)
    text = _widget_text(data.pop(WIDGET_VIEW).get("model_id", ""), states)
    if text:
        data["text/plain"] = text
    return _node({**output, "data": data}) if data else None


def _widget_text(model_id: str, states: dict, depth: int = 0) -> str:
    """Plain text of a saved widget: boxes join their children, a progress bar is drawn."""
    model = states.get(model_id)
    if model is None or depth > 10:
        return ""
    name, state = model.get("model_name", ""), model.get("state", {})
    if name in ("HBoxModel", "VBoxModel", "BoxModel"):
        children = [_widget_text(c.removeprefix("IPY_MODEL_"), states, depth + 1) for c in state.get("children", [])]
        return ("" if name == "HBoxModel" else "\n").join(c for c in children if c)
    if name in ("HTMLModel", "LabelModel", "TextModel"):
        return html.unescape(re.sub(r"<[^>]*>", "", str(state.get("value", ""))))
    if name in ("FloatProgressModel", "IntProgressModel"):
        low, high, value = state.get("min", 0), state.get("max", 100), state.get("value", 0)
        filled = min(10, max(0, round(10 * (value - low) / (high - low)))) if high > low else 10
        return "|" + "█" * filled + " " * (10 - filled) + "|"
    return ""


def finding_lines(nb, most: int = 2) -> list[str]:
    """The first sentences of "What this run found" (cells tagged ``finding``: their markdown
    outputs or text), one per bullet, at most ``most``; a bullet saying the run is a pipeline
    check is always among them. For the index's front page."""
    bullets = []
    for cell in nb.cells:
        if "finding" not in _tags(cell):
            continue
        texts = [cell.source] if cell.cell_type == "markdown" else [
            "".join(o.get("data", {}).get("text/markdown", "")) for o in cell.get("outputs", [])]
        for text in texts:
            bullets += [re.sub(r"^\s*[-*]\s+", "", line).strip() for line in text.splitlines()
                        if line.strip() and not _HEADING.match(line)]
    bullets = [b.replace("**", "") for b in bullets]
    chosen = bullets[:most]
    pipeline = next((b for b in bullets if "pipeline check" in b), None)
    if pipeline and pipeline not in chosen and chosen:
        chosen[-1] = pipeline
    return chosen


def title_of(nb, fallback: str) -> str:
    """The first heading of the notebook's first markdown cell (papermill's error banner skipped)."""
    from papermill.execute import ERROR_MARKER_TAG

    for cell in nb.cells:
        if cell.cell_type != "markdown" or ERROR_MARKER_TAG in _tags(cell):
            continue
        found = heading(cell)
        return found[1] if found else fallback
    return fallback


def bare_figures(nb) -> int:
    """Plotly figures that carry no HTML (nbconvert drops the plotly mimetype, so they would be
    missing from the page)."""
    return sum(1 for cell in nb.cells for output in cell.get("outputs", [])
               if "application/vnd.plotly.v1+json" in output.get("data", {})
               and "text/html" not in output.get("data", {}))
