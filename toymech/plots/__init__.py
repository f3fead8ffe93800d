"""Plotly figure builders. Each takes data and RETURNS a figure; nothing here calls ``.show()``.
Attention patterns (circuitsvis) live in ``toymech.display.attention_view``."""

from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots


def _np(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x


def curves(histories: Mapping[str, Sequence[Mapping[str, float]]], keys: Sequence[str] = ("eval_loss",),
           title: str = "Training curves", y_title: str = "loss (nats)", log_y: bool = False,
           hlines: Mapping[str, float] | None = None) -> go.Figure:
    """One line per (run, key) against ``step`` (histories: run name -> list of history rows)."""
    fig = go.Figure()
    for run, rows in histories.items():
        for key in keys:
            pts = [(r["step"], r[key]) for r in rows if key in r]
            if not pts:
                continue
            label = run if len(keys) == 1 else f"{run}: {key}"
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts],
                                     mode="lines", name=label))
    for label, y in (hlines or {}).items():
        fig.add_hline(y=y, line_dash="dot", annotation_text=label)
    fig.update_layout(title=title, xaxis_title="step", yaxis_title=y_title, height=420,
                      yaxis_type="log" if log_y else "linear")
    return fig


def head_heatmap(scores: torch.Tensor, title: str, zmid: float | None = 0.0,
                 zrange: tuple[float, float] | None = (-1.0, 1.0), text_fmt: str = ".2f",
                 colorscale: str = "RdBu") -> go.Figure:
    """Heatmap of a [n_layers, n_heads] score tensor, values printed in each cell."""
    z = _np(scores)
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"H{h}" for h in range(z.shape[1])], y=[f"L{l}" for l in range(z.shape[0])],
        colorscale=colorscale, zmid=zmid, zmin=zrange[0] if zrange else None,
        zmax=zrange[1] if zrange else None, texttemplate="%{z:" + text_fmt + "}"))
    fig.update_layout(title=title, height=160 + 60 * z.shape[0], yaxis_autorange="reversed")
    return fig


def composition_heatmap(scores: torch.Tensor, baseline: float, title: str) -> go.Figure:
    """Scores [L1, H1, L2, H2] of earlier heads (rows) into later heads (columns), for every
    layer pair l1 < l2, with the random-matrix baseline marked in the title and color midpoint."""
    s = _np(scores)
    L, H = s.shape[0], s.shape[1]
    rows = [f"L{l}H{h}" for l in range(L - 1) for h in range(H)]
    cols = [f"L{l}H{h}" for l in range(1, L) for h in range(H)]
    z = s[: L - 1].reshape((L - 1) * H, L, H)[:, 1:].reshape(len(rows), len(cols))
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, colorscale="Viridis",
                               texttemplate="%{z:.2f}", zmin=0))
    fig.update_layout(title=f"{title} (random baseline {baseline:.3f})",
                      xaxis_title="later head (reads)", yaxis_title="earlier head (writes)",
                      height=200 + 40 * len(rows), yaxis_autorange="reversed")
    return fig


def eigenvalue_spectra(eigs: Mapping[str, torch.Tensor], title: str = "Eigenvalues") -> go.Figure:
    """Eigenvalues in the complex plane, one trace per named circuit (name -> complex [n])."""
    fig = go.Figure()
    for name, lam in eigs.items():
        lam = _np(lam)
        fig.add_trace(go.Scatter(x=lam.real, y=lam.imag, mode="markers", name=name,
                                 marker=dict(size=7, opacity=0.8)))
    fig.add_vline(x=0, line_color="grey", line_width=1)
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.update_layout(title=title, xaxis_title="Re λ", yaxis_title="Im λ", height=450)
    return fig


def eigenvalue_grid(eigs: Mapping[str, Mapping[str, torch.Tensor]], title: str) -> go.Figure:
    """One complex-plane panel per model (model -> circuit name -> eigenvalues)."""
    names = list(eigs)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names)
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
               "#7f7f7f", "#bcbd22", "#17becf"]
    for i, model in enumerate(names, start=1):
        for j, (circuit, lam) in enumerate(eigs[model].items()):
            lam = _np(lam)
            fig.add_trace(go.Scatter(x=lam.real, y=lam.imag, mode="markers", name=circuit,
                                     legendgroup=circuit, showlegend=(i == 1),
                                     marker=dict(size=6, color=palette[j % len(palette)])),
                          row=1, col=i)
    fig.update_layout(title=title, height=380)
    fig.update_xaxes(title_text="Re λ", zeroline=True)
    fig.update_yaxes(title_text="Im λ", zeroline=True)
    return fig


def per_position(losses: Mapping[str, torch.Tensor], title: str = "Loss per position",
                 tokens: Sequence[str] | None = None) -> go.Figure:
    """Loss of the target at each position (name -> [seq-1]); NaN (unscored) points are gaps."""
    fig = go.Figure()
    for name, values in losses.items():
        v = _np(values)
        fig.add_trace(go.Scatter(x=list(range(1, len(v) + 1)), y=v, mode="lines+markers",
                                 name=name))
    fig.update_layout(title=title, xaxis_title="target position", yaxis_title="loss (nats)",
                      height=400)
    if tokens is not None:
        fig.update_xaxes(tickvals=list(range(1, len(tokens))), ticktext=list(tokens[1:]))
    return fig


def grouped_bars(table: Mapping[str, Mapping[str, float]], title: str, y_title: str,
                 log_y: bool = False) -> go.Figure:
    """Bars: one group per outer key, one bar per inner key (e.g. model -> set -> loss)."""
    fig = go.Figure()
    inner = list(dict.fromkeys(k for row in table.values() for k in row))
    for key in inner:
        fig.add_trace(go.Bar(name=key, x=list(table), y=[table[o].get(key) for o in table]))
    fig.update_layout(title=title, yaxis_title=y_title, barmode="group", height=420,
                      yaxis_type="log" if log_y else "linear")
    return fig


def pattern_score_heatmaps(scores: Mapping[str, Mapping[str, torch.Tensor]],
                           title: str = "Attention-pattern scores per head") -> go.Figure:
    """Grid of heatmaps: one row per model, one column per score kind (model -> kind -> [L, H])."""
    models = list(scores)
    kinds = list(next(iter(scores.values())))
    fig = make_subplots(rows=len(models), cols=len(kinds), horizontal_spacing=0.06,
                        vertical_spacing=0.12 if len(models) > 1 else 0.0,
                        subplot_titles=[f"{m}: {k}" for m in models for k in kinds])
    for i, model in enumerate(models, start=1):
        for j, kind in enumerate(kinds, start=1):
            z = _np(scores[model][kind])
            fig.add_trace(go.Heatmap(z=z, x=[f"H{h}" for h in range(z.shape[1])],
                                     y=[f"L{l}" for l in range(z.shape[0])], zmin=0, zmax=1,
                                     colorscale="Blues", texttemplate="%{z:.2f}",
                                     showscale=(i == 1 and j == len(kinds))), row=i, col=j)
            fig.update_yaxes(autorange="reversed", row=i, col=j)
    fig.update_layout(title=title, height=140 + 170 * len(models))
    return fig


from .scrubber import scrubber  # noqa: E402,F401  (training dynamics: patterns with a step slider)
