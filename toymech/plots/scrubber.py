"""The training scrubber: attention patterns of every head at each snapshot, with a step slider.

Every step's patterns are in the figure itself (slider steps with ``method="update"`` carry the
heatmaps' ``z`` and the position of the step marker), so the slider works in a static, offline
HTML report with no Python kernel behind it (ipywidgets do not survive papermill).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from ..core import check, check_int
from .labels import label
from .style import MIN_TICK_PX, PALETTE, height, range_scaled, tick_stride


def _array(x) -> np.ndarray:
    return x.detach().cpu().float().numpy() if isinstance(x, torch.Tensor) else np.asarray(x, float)


def _keep(n: int, per_step: int, max_steps: int, max_values: int) -> list[int]:
    """Indices of the steps to keep: all when within both caps, else evenly spread over the
    index (snapshots are log-spaced, so this keeps the spacing), first and last always kept."""
    most = max(2, min(max_steps, max_values // max(per_step, 1)))
    if n <= most:
        return list(range(n))
    return sorted({round(i * (n - 1) / (most - 1)) for i in range(most)})


def _transition_points(transitions) -> dict[str, float]:
    if transitions is None:
        return {}
    if isinstance(transitions, pd.DataFrame):
        check({"metric", "step"} <= set(transitions.columns), "transitions",
              list(transitions.columns), "a table with 'metric' and 'step' (from transitions())")
        transitions = dict(zip(transitions["metric"], transitions["step"]))
    return {m: float(s) for m, s in transitions.items() if s is not None and math.isfinite(s)}


def scrubber(steps: Sequence[int], patterns: Sequence, head_labels: Sequence[str],
             curves: pd.DataFrame | None = None,
             transitions: pd.DataFrame | Mapping[str, float] | None = None,
             token_labels: Sequence[str] | None = None,
             title: str = "Attention patterns through training", *, normalize: bool = False,
             max_steps: int = 30, max_values: int = 1_000_000, decimals: int = 3) -> go.Figure:
    """A grid of attention heatmaps (one per head) and, with ``curves``, the metrics against
    the step (a log axis of ``step + 1``, as step 0 is the initial model) with the selected step marked by a
    vertical line and each metric's transition step by an ``x``; a slider selects the step.

    ``patterns[i]``: [n_heads_total, T_q, T_k] at ``steps[i]`` (``patterns_over_training``);
    ``head_labels``: one per head (``L0H1``); ``curves``: ``metric_curves`` output;
    ``transitions``: ``transitions()`` output or {metric: step}; ``normalize`` scales each
    metric by its range over the run, ``(v - min) / (max - min)`` (``style.range_scaled``), so
    curves of any scale share the axis and a metric that overshoots is drawn as it moved (a
    first-to-last scale would send its peak far above 1). Size is capped: at most ``max_steps`` slider steps and ``max_values`` pattern numbers
    (steps are subsampled, first and last kept), values rounded to ``decimals``. The slider
    starts at the last step.
    """
    arrays = _checked_patterns(steps, patterns, head_labels, token_labels)
    n_heads, T = len(head_labels), arrays[0].shape[1]
    check_int("max_steps", max_steps, 2, 10_000)
    keep = _keep(len(steps), n_heads * T * T, max_steps, max_values)
    steps = [int(steps[i]) for i in keep]
    zs = [np.round(arrays[i], decimals) for i in keep]
    active = len(steps) - 1

    # heads in a grid, the curves below spanning its width
    cols = min(n_heads, 4)
    head_rows = math.ceil(n_heads / cols)
    specs = [[{} for _ in range(cols)] for _ in range(head_rows)]
    titles = list(head_labels) + [""] * (head_rows * cols - n_heads)
    if curves is not None:
        specs.append([{"colspan": cols}] + [None] * (cols - 1))
        titles.append("metrics" + (", each scaled to its range over the run" if normalize else "")
                      + " (x: half-way step)")
    fig = make_subplots(rows=len(specs), cols=cols, specs=specs, subplot_titles=titles,
                        horizontal_spacing=0.04, vertical_spacing=0.3 / len(specs))
    _add_heads(fig, zs[active], head_labels, cols, token_labels)
    heat = list(range(n_heads))  # trace indices of the heatmaps, in head order

    layout_at = lambda s: {}  # noqa: E731  (no curves: nothing to move)
    if curves is not None:
        _add_curves(fig, curves, _transition_points(transitions), len(specs), normalize)
        layout_at = _add_step_line(fig, len(specs), steps[active])

    slider_steps = [dict(method="update", label=str(s),
                         args=[{"z": [z[h].tolist() for h in range(n_heads)]}, layout_at(s), heat])
                    for s, z in zip(steps, zs)]
    fig.update_layout(
        title=title, height=height(60 + 230 * head_rows + (320 if curves is not None else 0) + 90),
        sliders=[dict(active=active, steps=slider_steps, currentvalue=dict(prefix="step "),
                      pad=dict(t=40), len=1.0, x=0, y=0, yanchor="top")],
        margin=dict(b=110))
    return fig


def _checked_patterns(steps: Sequence[int], patterns: Sequence, head_labels: Sequence[str],
                      token_labels: Sequence[str] | None) -> list[np.ndarray]:
    """The patterns as arrays, each [n_heads, T, T] and all of one shape (else ValueError)."""
    check(len(steps) == len(patterns) >= 1, "patterns", len(patterns),
          f"one pattern array per step ({len(steps)} steps), at least one")
    arrays = [_array(p) for p in patterns]
    n_heads = len(head_labels)
    for i, a in enumerate(arrays):
        check(a.ndim == 3 and a.shape == arrays[0].shape and a.shape[0] == n_heads
              and a.shape[1] == a.shape[2], f"patterns[{i}]", tuple(a.shape),
              f"[n_heads={n_heads}, T, T], the same at every step")
    T = arrays[0].shape[1]
    if token_labels is not None:
        check(len(token_labels) == T, "token_labels", len(token_labels), f"{T} labels (one per position)")
    return arrays


def _add_heads(fig: go.Figure, z: np.ndarray, head_labels: Sequence[str], cols: int,
               token_labels: Sequence[str] | None) -> None:
    """One heatmap per head (``z``: [n_heads, T, T], the step shown first), ``cols`` a row."""
    n_heads, T = len(head_labels), z.shape[1]
    # A head's panel is about 180 px high; its width is what the grid leaves beside the curves'
    # legend, about 420 px shared by ``cols`` panels at a 1,280 px window: each axis gets the
    # stride that keeps its 10 px labels apart (else plotly tilts them into one another).
    labels = list(token_labels) if token_labels else []
    y_every, x_every = tick_stride(T, 180), tick_stride(T, 420 / cols)
    yticks = dict(tickvals=list(range(0, T, y_every)), ticktext=labels[::y_every]) if labels else {}
    xticks = dict(tickvals=list(range(0, T, x_every)), ticktext=labels[::x_every], tickangle=0) \
        if labels else {}
    for h in range(n_heads):
        row, col = h // cols + 1, h % cols + 1
        fig.add_trace(go.Heatmap(z=z[h].tolist(), zmin=0, zmax=1, colorscale="Blues",
                                 showscale=(h == 0), name=head_labels[h],
                                 colorbar=dict(len=0.5, y=1, yanchor="top", title="attn"),
                                 hovertemplate="query %{y}, key %{x}: %{z}<extra>"
                                               + head_labels[h] + "</extra>"), row=row, col=col)
        bottom = h + cols >= n_heads  # no head below this one
        fig.update_xaxes(showticklabels=bool(xticks), tickfont_size=MIN_TICK_PX, **xticks, row=row, col=col,
                         title_text="key position" if bottom else None, title_font_size=11)
        fig.update_yaxes(autorange="reversed", showticklabels=bool(yticks) and col == 1,
                         tickfont_size=MIN_TICK_PX, **yticks, row=row, col=col,
                         title_text="query position" if col == 1 else None, title_font_size=11)


def _add_step_line(fig: go.Figure, row: int, step: int):
    """The vertical line at the selected step on the curves (row ``row``), a shape in data units
    of the log axis, and the legend right of the curves; returns the layout of a slider step."""
    xref = fig.get_subplot(row, 1).xaxis.plotly_name.replace("axis", "")
    yref = fig.get_subplot(row, 1).yaxis.plotly_name.replace("axis", "")
    fig.add_shape(type="line", xref=xref, yref=f"{yref} domain", x0=step + 1, x1=step + 1,
                  y0=0, y1=1, line=dict(color="black", dash="dot"))
    top = fig.get_subplot(row, 1).yaxis.domain[1]
    fig.update_layout(legend=dict(x=1.01, y=top, yanchor="top"))
    return lambda s: {"shapes[0].x0": s + 1, "shapes[0].x1": s + 1}


def _add_curves(fig: go.Figure, curves: pd.DataFrame, marks: dict[str, float], row: int,
                normalize: bool) -> None:
    check("step" in curves.columns, "curves", list(curves.columns), "a table with a 'step' column")
    table = curves.sort_values("step")
    x = table["step"].to_numpy(float)
    for i, metric in enumerate(c for c in table.columns if c != "step"):
        raw = table[metric].to_numpy(float)
        y = range_scaled(raw) if normalize else raw
        color = PALETTE[i % len(PALETTE)]
        finite = raw[np.isfinite(raw)]
        # A scaled curve says its raw range in the legend and in the hover (raw value first).
        span = (f" (raw {finite.min():.3g} to {finite.max():.3g})" if normalize and finite.size else "")
        fig.add_trace(go.Scatter(x=x + 1, y=y, mode="lines+markers", name=label(metric) + span,
                                 legendgroup=metric, line=dict(color=color), marker_size=4,
                                 customdata=np.stack([x, raw], axis=1),
                                 hovertemplate="step %{customdata[0]}: %{customdata[1]:.3g}" + span),
                      row=row, col=1)
        if metric in marks and np.isfinite(y).all():
            at = marks[metric]
            # On the curve as drawn: plotly joins the points straight on the log axis.
            on_curve = float(np.interp(np.log(at + 1), np.log(x + 1), y))
            fig.add_trace(go.Scatter(x=[at + 1], y=[on_curve], mode="markers",
                                     marker=dict(symbol="x", size=11, color=color),
                                     legendgroup=metric, showlegend=False,
                                     hovertemplate=f"{label(metric)}: half way at step {at:.0f}"
                                                   "<extra></extra>"), row=row, col=1)
    # Log axis over step + 1 (step 0 is the initial model), ticks named by the step itself.
    shown = x[sorted({round(i * (len(x) - 1) / 7) for i in range(8)})] if len(x) > 8 else x
    fig.update_xaxes(type="log", title_text="step (log scale)", tickvals=shown + 1,
                     ticktext=[f"{s:g}" for s in shown], row=row, col=1)
    fig.update_yaxes(title_text="scaled: 0 = min, 1 = max over the run" if normalize else "value",
                     row=row, col=1)
