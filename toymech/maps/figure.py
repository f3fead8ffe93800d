"""A map's figure (``toymech map``): where a label holds over a study's knobs, drawn from the
map's per-cell frame (``toymech.maps.page.cell_frame``), never from the runs themselves.

The frame has one row per cell: a column per dimension (each knob, and ``experiment`` where the
map has several), ``runs``, ``held`` (seeds with the label), ``share`` (held / runs), ``median``
(of the map's number), ``hover`` (each seed's label and number), ``open`` (the line of Python
that opens the cell's runs) and ``refined`` (runs added by ``toymech map --refine``: the cell's
text says so), and ``phase`` (the cell's commonest outcome: a learned run's label or the state
of a run without one).

Two or more dimensions: the phase diagram, a heatmap over the first two, each cell coloured by
its phase (one colour per label, the states in greys and warm tones, named on the colour bar;
text: the median number, "held of runs" with the exact 95 % interval of that share and the runs
without a label), one panel per value of the others. A frame without ``phase`` (a table written
before the states) is coloured by the share of seeds with the label. One dimension: the share as
a curve over it with its exact 95 % interval as error bars (the frame's ``low`` and ``high``),
each point's text the same, each point's phase on hover. The source's setting, where the map has
its value, is outlined in red (a star on a curve).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis.exact import interval_text
from ..core import check
from ..plots.style import height

COLOURS = "Blues"
SHORT_LABEL = 20  # characters: a longer label is named in the title, not on an axis
SOURCE_NAME = "the source's setting"
SOURCE_COLOUR = "#d62728"
MAX_PANEL_COLUMNS = 3
_NEEDED = ("runs", "held", "share", "median", "hover")
# the states' colours (a run without a label); labels take LABEL_COLOURS in order, the mapped
# label first
STATE_COLOURS = {"untrained": "#d9d9d9", "still learning": "#fdd49e",
                 "budget exhausted": "#fdae6b", "undecided": "#bdbdbd", "not measured": "#f0f0f0",
                 "diverged": "#fb6a4a", "failed": "#cb181d"}
LABEL_COLOURS = ("#08519c", "#6baed6", "#31a354", "#756bb1", "#636363", "#e6550d")


def phase_colours(phases: Sequence[str], label: str) -> dict[str, str]:
    """A colour per phase: states their fixed colour, labels ``LABEL_COLOURS`` in order with
    ``label`` (the mapped one) first. ``phases``: the cells' phases; ``label``: the map's."""
    labels = [p for p in dict.fromkeys([label, *phases]) if p not in STATE_COLOURS]
    out = {p: LABEL_COLOURS[i % len(LABEL_COLOURS)] for i, p in enumerate(labels)}
    out.update({p: c for p, c in STATE_COLOURS.items()})
    return {p: out[p] for p in dict.fromkeys([label, *phases])}


def cell_text(row: Mapping) -> str:
    """A cell's text: the median number (a dash where none) over "held of runs" with the exact
    95 % interval of that share (``analysis.exact.interval_text``) on the same line, so the
    figure's text reads "2 of 3 [0.09, 0.99]" as the pages write it."""
    m = row["median"]
    shown = "–" if m is None or (isinstance(m, float) and math.isnan(m)) else f"{m:.3g}"
    held, runs = int(row["held"]), int(row["runs"])
    text = f"{shown}<br>{held} of {runs} {interval_text(held, runs)}"
    if row.get("failed"):  # runs that did not finish (diverged): not a label of theirs
        text += f"<br>{row['failed']}"
    return text + ("<br>refined" if bool(row.get("refined", False)) else "")


def _share_title(label: str) -> str:
    """An axis or colour-bar title for the share: the label itself where it is short."""
    return f"share '{label}'" if len(label) <= SHORT_LABEL else "share of seeds with the label"


def _values(cells: pd.DataFrame, dim: str) -> list[str]:
    """A dimension's values: in numeric order where every one is a number (a refined map's
    midpoints fall between their neighbours), else in the map's own order."""
    values = list(dict.fromkeys(cells[dim].astype(str)))
    try:
        return sorted(values, key=float)
    except ValueError:
        return values


def _source_at(source: Mapping[str, str], dims: Sequence[str]) -> tuple | None:
    """The source's value of each of ``dims`` (None where the map does not know one)."""
    got = tuple(source.get(d) for d in dims)
    return None if any(v is None for v in got) else got


def map_figure(cells: pd.DataFrame, dims: Sequence[str], *, label: str, number: str,
               source: Mapping[str, str] | None = None, title: str = "") -> go.Figure:
    """The map's figure (see the module docstring). ``dims``: the frame's dimension columns, the
    first two on the axes; ``label``: the label whose share colours the cells; ``number``: the
    name of the median shown; ``source``: {dimension: the source's value, as the frame writes
    it}."""
    check(isinstance(cells, pd.DataFrame) and all(c in cells for c in (*dims, *_NEEDED)),
          "cells", type(cells).__name__, "a map's cell frame (maps.page.cell_frame)")
    check(len(dims) >= 1, "dims", list(dims), "at least one dimension of the map")
    source = dict(source or {})
    if len(dims) == 1:
        return _curve(cells, dims[0], label, number, source, title)
    return _heatmaps(cells, list(dims), label, number, source, title)


def _curve(cells, dim, label, number, source, title) -> go.Figure:
    xs = _values(cells, dim)
    rows = cells.assign(_x=cells[dim].astype(str)).set_index("_x").loc[xs]
    bars = (dict(type="data", symmetric=False, array=rows["high"] - rows["share"],
                 arrayminus=rows["share"] - rows["low"]) if {"low", "high"} <= set(rows) else None)
    fig = go.Figure(go.Scatter(
        x=xs, y=rows["share"], mode="lines+markers+text", name=_share_title(label), error_y=bars,
        text=[cell_text(r) for _, r in rows.iterrows()], textposition="top center",
        customdata=rows["hover"], hovertemplate="%{customdata}<extra></extra>"))
    if source.get(dim) in xs:
        at = source[dim]
        fig.add_trace(go.Scatter(x=[at], y=[rows.loc[at, "share"]], mode="markers",
                                 name=SOURCE_NAME, hovertemplate=f"{SOURCE_NAME}<extra></extra>",
                                 marker=dict(symbol="star", size=16, color=SOURCE_COLOUR)))
    fig.update_layout(title=title or f"Share of seeds labelled '{label}' over {dim} "
                      f"(text: median {number}, seeds, exact 95 % interval)", height=height(380),
                      xaxis=dict(title=dim, type="category"),
                      yaxis=dict(title=_share_title(label), range=[-0.05, 1.15]))
    return fig


def _heatmaps(cells, dims, label, number, source, title) -> go.Figure:
    x, y, rest = dims[0], dims[1], dims[2:]
    xs, ys = _values(cells, x), _values(cells, y)
    frame = cells.assign(**{d: cells[d].astype(str) for d in dims})
    panel = (frame[rest].agg(", ".join, axis=1) if rest else pd.Series("", index=frame.index))
    names = list(dict.fromkeys(panel))
    cols = min(len(names), MAX_PANEL_COLUMNS)
    n_rows = math.ceil(len(names) / cols)
    titles = [", ".join(f"{d} {v}" for d, v in zip(rest, n.split(", "))) if rest else ""
              for n in names]
    fig = make_subplots(rows=n_rows, cols=cols, subplot_titles=titles,
                        horizontal_spacing=0.08, vertical_spacing=0.18 if n_rows > 1 else 0.1)
    star = _source_at(source, [x, y])
    source_panel = ", ".join(source[d] for d in rest) if _source_at(source, rest) else None
    phased = "phase" in frame
    colours = phase_colours(list(frame["phase"]), label) if phased else {}
    order = list(colours)
    for i, name in enumerate(names):
        part = frame[panel == name].set_index([y, x])
        z, text, hover = [], [], []
        for yv in ys:
            z.append([(float(order.index(part.loc[(yv, xv), "phase"])) if phased
                       else float(part.loc[(yv, xv), "share"])) if (yv, xv) in part.index else None
                      for xv in xs])
            text.append([cell_text(part.loc[(yv, xv)]) if (yv, xv) in part.index else ""
                         for xv in xs])
            hover.append([part.loc[(yv, xv), "hover"] if (yv, xv) in part.index else "not run"
                          for xv in xs])
        row, col = i // cols + 1, i % cols + 1
        if phased:  # one colour band per phase, named on the colour bar
            n = len(order)
            scale = [[k / n + e / n, colours[p]] for k, p in enumerate(order) for e in (0, 1)]
            colour = dict(zmin=-0.5, zmax=n - 0.5, colorscale=scale,
                          colorbar=dict(title="outcome", tickvals=list(range(n)), ticktext=order))
        else:
            colour = dict(zmin=0, zmax=1, colorscale=COLOURS,
                          colorbar=dict(title=_share_title(label)))
        fig.add_trace(go.Heatmap(
            x=xs, y=ys, z=z, text=text, texttemplate="%{text}", customdata=hover,
            hovertemplate="%{customdata}<extra></extra>", showscale=i == 0,
            name=name or f"share '{label}'", **colour), row=row, col=col)
        if star and star[0] in xs and star[1] in ys and source_panel in (None, name):
            # the source's cell outlined (its text stays readable); the point names it in the
            # legend (a constant-size legend icon) and on hover
            cx, cy = xs.index(star[0]), ys.index(star[1])
            fig.add_shape(type="rect", x0=cx - 0.5, x1=cx + 0.5, y0=cy - 0.5, y1=cy + 0.5,
                          line=dict(color=SOURCE_COLOUR, width=3), row=row, col=col)
            fig.add_trace(go.Scatter(
                x=[star[0]], y=[star[1]], mode="markers", name=SOURCE_NAME,
                showlegend=i == 0 or source_panel is not None,
                hovertemplate=f"{SOURCE_NAME}<extra></extra>",
                marker=dict(symbol="square-open", size=1, color=SOURCE_COLOUR)),
                row=row, col=col)
        fig.update_xaxes(title_text=x, type="category", row=row, col=col)
        fig.update_yaxes(title_text=y if col == 1 else None, type="category", row=row, col=col)
    fig.update_layout(title=title or (
        f"Each cell's commonest outcome (text: median {number}, seeds labelled '{label}' of the "
        "cell's runs, its exact 95 % interval)" if phased else f"Share of seeds labelled "
        f"'{label}' (text: median {number}, seeds with the label of the cell's runs, its exact "
        "95 % interval)"),
                      height=height(120 + 90 * len(ys) * n_rows + 60 * n_rows),
                      legend=dict(orientation="h", y=-0.2, itemsizing="constant"))
    return fig


__all__ = ["LABEL_COLOURS", "STATE_COLOURS", "cell_text", "map_figure", "phase_colours"]
