"""What every figure shares: a minimum height, reference lines (chance, the source's value),
ticks at the data on log axes, integer ticks for counts, and range scaling of curves."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go

from ..core import check

MIN_HEIGHT = 260  # px; below it titles, legends and colour bars overlap
MIN_TICK_PX = 10  # no tick label is drawn smaller (a reader's report is checked for it)
TITLE_CHAR_PX = 7.0  # about one character of an 14 px axis title
PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf"]
SYMBOLS = ["circle", "square", "diamond", "triangle-up", "x", "cross", "star", "triangle-down"]
# Reference lines: chance is dotted, a source's value dashed, anything else dash-dot.
_DASH = {"chance": "dot", "source": "dash"}


def height(h: float) -> int:
    """``h`` raised to the minimum height."""
    return int(max(MIN_HEIGHT, h))


def _kind(label: str) -> str:
    low = label.lower()
    if "chance" in low or "uniform" in low or "random" in low:
        return "chance"
    if any(w in low for w in ("paper", "post", "source", "the authors")):
        return "source"
    return "other"


def reference_lines(fig: go.Figure, lines: Mapping[str, float] | None, axis: str = "y",
                    row: int | None = None, col: int | None = None) -> None:
    """Draw each ``label -> value`` as a labelled line across the plot (horizontal for ``axis="y"``).
    A label naming chance (or uniform / random) is dotted, one naming the source (paper, post)
    dashed, others dash-dot; all grey, so they never read as data."""
    for label, value in (lines or {}).items():
        if value is None or not np.isfinite(float(value)):
            continue
        style = dict(line_dash=_DASH.get(_kind(label), "dashdot"), line_color="#666", line_width=1.2,
                     annotation_text=f"{label}: {float(value):.3g}", annotation_font_size=11,
                     annotation_font_color="#444")
        where = {} if row is None else {"row": row, "col": col}
        if axis == "y":
            fig.add_hline(y=float(value), annotation_position="top left", **style, **where)
        else:
            fig.add_vline(x=float(value), annotation_position="top right", **style, **where)


def _tick_text(v: float) -> str:
    return f"{int(v):,}" if float(v).is_integer() else f"{v:g}"


def log_ticks_at(values: Sequence[float]) -> dict:
    """Axis settings for a log axis with one tick at each distinct data value (16, 64, ...)
    instead of plotly's 2, 3, ... 7 between decades."""
    vals = sorted({float(v) for v in values if v is not None and np.isfinite(float(v)) and float(v) > 0})
    return dict(type="log", tickvals=vals, ticktext=[_tick_text(v) for v in vals])


def integer_ticks(values: Sequence[float]) -> dict:
    """Axis settings for a count: a tick at each distinct value, none in between (no K = 1.5)."""
    vals = sorted({float(v) for v in values if v is not None and np.isfinite(float(v))})
    return dict(tickmode="array", tickvals=vals, ticktext=[_tick_text(v) for v in vals])


def range_scaled(y: np.ndarray) -> np.ndarray:
    """``y`` scaled by its range over the run: 0 at its minimum, 1 at its maximum. A metric that
    overshoots and comes back is drawn as it moved (scaling from the first to the last value
    would push the peak far above 1 and crowd the rest of the curve)."""
    y = np.asarray(y, dtype=float)
    finite = y[np.isfinite(y)]
    if finite.size == 0:
        return y
    low, high = float(finite.min()), float(finite.max())
    return (y - low) / (high - low) if high - low > 1e-12 else np.zeros_like(y)


def unit_range(values: Sequence[float], pad: float = 0.05) -> list[float] | None:
    """[0, 1 + pad] for values inside [0, 1] (accuracies, recall, scores), else None."""
    vals = np.asarray([v for v in values if v is not None], dtype=float)
    vals = vals[np.isfinite(vals)]
    if vals.size and vals.min() >= 0 and vals.max() <= 1:
        return [0, 1 + pad]
    return None


def fit_title(text: str, length_px: float, char_px: float = TITLE_CHAR_PX) -> str:
    """``text`` broken into lines (``<br>``, at spaces) that fit ``length_px``: a y-axis title
    longer than its plot is high would run out of the figure."""
    check(length_px > 0, "length_px", length_px, "a length in px > 0")
    most = max(1, int(length_px // char_px))
    lines, line = [], ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > most:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return "<br>".join(lines + [line])


def tick_stride(n_labels: int, length_px: float, font_px: float = MIN_TICK_PX) -> int:
    """Show every k-th of ``n_labels`` tick labels so that labels of ``font_px`` fit ``length_px``."""
    check(length_px > 0, "length_px", length_px, "a length in px > 0")
    return max(1, int(np.ceil(n_labels * (font_px + 2) / length_px)))
