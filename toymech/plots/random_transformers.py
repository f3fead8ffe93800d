"""Figures of the random-transformers study. Each function RETURNS a plotly figure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .labels import ACC, axis_title, label
from .style import fit_title, height, log_ticks_at, reference_lines, unit_range

MODE_COLORS = {"normal": "#1f77b4", "random": "#d62728", "E_token+U": "#2ca02c",
               "E_token+E_pos": "#9467bd", "U": "#8c564b"}


def width_sweep(df: pd.DataFrame, value: str = "acc", title: str = "Accuracy vs width",
                y_title: str | None = None, chance: Mapping[str, float] | None = None) -> go.Figure:
    """Box plots of ``value`` over seeds, one panel per task, x = width, one box per mode.

    df: one row per run with columns task, width, mode, seed and ``value``; ``chance``: task ->
    the accuracy of guessing, drawn in that task's panel.
    """
    task_names = list(dict.fromkeys(df["task"]))
    fig = make_subplots(rows=1, cols=len(task_names), subplot_titles=task_names,
                        shared_yaxes=True)
    for col, task in enumerate(task_names, start=1):
        sub = df[df["task"] == task]
        for mode in dict.fromkeys(sub["mode"]):
            rows = sub[sub["mode"] == mode]
            fig.add_trace(go.Box(x=rows["width"].astype(str), y=rows[value], name=mode,
                                 legendgroup=mode, showlegend=(col == 1), boxpoints="all",
                                 marker_color=MODE_COLORS.get(mode)), row=1, col=col)
        if chance and task in chance:
            reference_lines(fig, {"chance": chance[task]}, row=1, col=col)
    fig.update_layout(title=title, boxmode="group", height=height(420),
                      yaxis_title=y_title or axis_title(value))
    fig.update_xaxes(title_text=label("width"), type="category")
    r = unit_range(df[value])
    if r is not None:
        fig.update_yaxes(range=r)
    return fig


def mode_bars(summary: pd.DataFrame, value: str = "median", title: str = "Freezing modes",
              y_title: str = f"median test accuracy ({ACC})",
              hlines: Mapping[str, float] | None = None) -> go.Figure:
    """Grouped bars: x = task, one bar per freezing mode, error bars from min to max.

    summary: columns task, mode, median, min, max (``studies.random_transformers.summarize``);
    ``hlines``: label -> y reference lines.
    """
    fig = go.Figure()
    for mode in dict.fromkeys(summary["mode"]):
        rows = summary[summary["mode"] == mode]
        fig.add_trace(go.Bar(
            x=rows["task"], y=rows[value], name=mode, marker_color=MODE_COLORS.get(mode),
            error_y=dict(type="data", symmetric=False, array=rows["max"] - rows[value],
                         arrayminus=rows[value] - rows["min"])))
    reference_lines(fig, hlines)
    fig.update_layout(title=title, barmode="group", yaxis_title=y_title, xaxis_title="task",
                      height=height(420))
    r = unit_range(summary["max"])
    if r is not None:
        fig.update_yaxes(range=r)
    return fig


def kl_vs_target_width(df: pd.DataFrame, title: str = "Circuit imitation",
                       hlines: Mapping[str, float] | None = None) -> go.Figure:
    """KL(target || student) against target width, one line per student (median over seeds,
    with min-max error bars), on a log axis with a tick at each target width. df: columns
    target_width, student, kl; ``hlines``: label -> KL reference lines (e.g. the paper's 0.2)."""
    fig = go.Figure()
    for student in dict.fromkeys(df["student"]):
        g = df[df["student"] == student].groupby("target_width")["kl"]
        med, lo, hi = g.median(), g.min(), g.max()
        fig.add_trace(go.Scatter(x=med.index, y=med.values, mode="lines+markers", name=student,
                                 error_y=dict(type="data", symmetric=False,
                                              array=(hi - med).values,
                                              arrayminus=(med - lo).values)))
    reference_lines(fig, hlines)
    fig.update_layout(title=title, xaxis_title=f"{label('target_width')} (log scale)",
                      yaxis_title=axis_title("kl"), height=height(420))
    fig.update_xaxes(**log_ticks_at(df["target_width"]))
    return fig


def concentration_bars(table: pd.DataFrame, title: str = "Explained variance of the top-10 "
                       "principal directions", bases: Sequence[str] = ("principal", "neuron")
                       ) -> go.Figure:
    """Bars per layer, one per (mode, basis). table: columns task, mode, layer, basis, ev."""
    fig = go.Figure()
    for (mode, basis), rows in table.groupby(["mode", "basis"], sort=False):
        if basis not in bases:
            continue
        fig.add_trace(go.Bar(x=[f"{t} / {l}" for t, l in zip(rows["task"], rows["layer"])],
                             y=rows["ev"], name=f"{mode}, {basis} basis"))
    tall = height(440)
    fig.update_layout(title=title, barmode="group", yaxis_title=fit_title(axis_title("ev"), tall - 200),
                      xaxis_title="task / layer", yaxis_range=[0, 1.05], height=tall)
    return fig


def width_ladder(summary: pd.DataFrame, solved_at: float = 0.95, paper_width: int = 1024,
                 title: str = "The width ladder: held-out accuracy vs width (judged seeds)"
                 ) -> go.Figure:
    """One panel per task: median held-out accuracy over seeds against width (log axis) for
    each mode, whiskers from the seeds' min to max; the solved line and the paper's width.

    summary: ``studies.random_transformers.ladder.ladder_summary`` (task, mode, width, median,
    min, max, seeds)."""
    task_names = list(dict.fromkeys(summary["task"]))
    fig = make_subplots(rows=1, cols=len(task_names), subplot_titles=task_names,
                        shared_yaxes=True)
    for col, task in enumerate(task_names, start=1):
        sub = summary[summary["task"] == task]
        for mode in dict.fromkeys(sub["mode"]):
            rows = sub[sub["mode"] == mode].sort_values("width")
            fig.add_trace(go.Scatter(
                x=rows["width"], y=rows["median"], mode="lines+markers", name=mode,
                legendgroup=mode, showlegend=(col == 1), marker_color=MODE_COLORS.get(mode),
                error_y=dict(type="data", symmetric=False, array=rows["max"] - rows["median"],
                             arrayminus=rows["median"] - rows["min"]),
                customdata=rows[["seeds", "min", "max"]].to_numpy(),
                hovertemplate=("width %{x}: median %{y:.3f} over %{customdata[0]} seeds "
                               "[%{customdata[1]:.3f}, %{customdata[2]:.3f}]<extra>" + mode
                               + "</extra>")), row=1, col=col)
        reference_lines(fig, {f"solved ({solved_at:.0%})": solved_at}, row=1, col=col)
        fig.add_vline(x=paper_width, line_dash="dash", line_color="#666", line_width=1.2,
                      row=1, col=col)
        # on a log axis an annotation's x is the exponent (a vline's own label lands off the plot)
        fig.add_annotation(x=math.log10(paper_width), y=0.5, text="paper's width",
                           textangle=-90, xanchor="right", showarrow=False,
                           font=dict(size=11, color="#444"), row=1, col=col)
    ticks = [*sorted(summary["width"].unique()), paper_width]
    fig.update_xaxes(title_text=label("width"), **log_ticks_at(ticks))
    fig.update_yaxes(range=[-0.02, 1.02])
    fig.update_layout(title=title, height=height(420),
                      yaxis_title=f"held-out accuracy, whole answer ({ACC})")
    return fig
