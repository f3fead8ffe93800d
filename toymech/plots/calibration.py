"""Figures of study 3's calibration (``studies.random_transformers.calibration``). Each function
RETURNS a plotly figure."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .random_transformers import MODE_COLORS

X_TITLES = {"step": "training step", "core_seconds": "core-seconds of training"}


def _label(run: pd.Series) -> str:
    return f"{run['mode']}, width {run['width']}, lr {run['lr']:g}, batch {run['batch']}"


def calibration_curves(curves: pd.DataFrame, x: str = "step", threshold: float | None = 0.95,
                       title: str = "Calibration: held-out accuracy through training"
                       ) -> go.Figure:
    """Held-out accuracy (whole answer) against ``x`` (``step`` or ``core_seconds``), one panel
    per task, one line per run (colour by mode; the seeds of a setting share its legend entry).

    curves: ``calibration_curves(zoo_root)``: columns task, mode, width, lr, batch, seed, entry,
    step, held_out_acc, core_seconds. ``threshold``: a dotted line (the "solved" bar)."""
    if x not in X_TITLES:
        raise ValueError(f"x={x!r} is not allowed: one of {', '.join(X_TITLES)}")
    task_names = list(dict.fromkeys(curves["task"]))
    fig = make_subplots(rows=1, cols=max(1, len(task_names)), subplot_titles=task_names,
                        shared_yaxes=True)
    shown: set[str] = set()
    for col, task in enumerate(task_names, start=1):
        sub = curves[curves["task"] == task]
        for _, run in sub.groupby("entry", sort=False):
            first = run.iloc[0]
            label = _label(first)
            dash = {0: "solid", 1: "dash"}.get(list(dict.fromkeys(sub["width"])).index(
                first["width"]) % 2, "dot")
            fig.add_trace(go.Scatter(
                x=run[x], y=run["held_out_acc"], mode="lines+markers", name=label,
                legendgroup=label, showlegend=label not in shown,
                line=dict(color=MODE_COLORS.get(first["mode"]), dash=dash),
                hovertext=f"{label}, seed {first['seed']}"), row=1, col=col)
            shown.add(label)
        if threshold is not None:
            fig.add_hline(y=threshold, line_dash="dot", line_color="gray", row=1, col=col)
    fig.update_layout(title=title, height=460, yaxis_title="held-out accuracy (whole answer)")
    fig.update_xaxes(title_text=X_TITLES[x])
    fig.update_yaxes(range=[0, 1.02])
    return fig


def calibration_costs(table: pd.DataFrame, threshold: float = 0.95,
                      title: str = "Calibration: what each run cost") -> go.Figure:
    """Held-out accuracy against core-seconds, one marker per run (colour by mode, symbol
    filled where it reached ``threshold``), one panel per task.

    table: ``calibration_table(zoo_root)``."""
    task_names = list(dict.fromkeys(table["task"]))
    fig = make_subplots(rows=1, cols=max(1, len(task_names)), subplot_titles=task_names,
                        shared_yaxes=True)
    for col, task in enumerate(task_names, start=1):
        sub = table[table["task"] == task]
        for mode in dict.fromkeys(sub["mode"]):
            rows = sub[sub["mode"] == mode]
            solved = rows["held_out_acc"] >= threshold
            fig.add_trace(go.Scatter(
                x=rows["core_seconds"], y=rows["held_out_acc"], mode="markers", name=mode,
                legendgroup=mode, showlegend=col == 1,
                marker=dict(color=MODE_COLORS.get(mode), size=9,
                            symbol=["circle" if s else "circle-open" for s in solved]),
                hovertext=[_label(r) for _, r in rows.iterrows()]), row=1, col=col)
    fig.update_layout(title=title, height=420, yaxis_title="held-out accuracy (whole answer)")
    fig.update_xaxes(title_text="core-seconds of training", type="log")
    return fig
