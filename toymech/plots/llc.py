"""Figures of the local learning coefficient and of the causal effects through training. Each
function returns a plotly figure (nothing here calls ``.show()``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .labels import label


def chain_traces(results: Mapping[int, object], title: str = "SGLD chains (convergence check)",
                 max_panels: int = 4) -> go.Figure:
    """Per-draw estimate nβ (L_B(w_t) - L_B(w*)) of every chain, for up to ``max_panels``
    snapshots (``results``: step -> ``LLCResult``; evenly chosen when there are more). A trace
    that levels off after the burn-in (shaded) has converged; one still rising has not."""
    steps = sorted(results)
    if len(steps) > max_panels:
        steps = [steps[int(i)] for i in np.linspace(0, len(steps) - 1, max_panels).round()]
    fig = make_subplots(rows=1, cols=len(steps), subplot_titles=[f"step {s}" for s in steps])
    for col, step in enumerate(steps, start=1):
        r = results[step]
        trace = r.llc_trace
        for c in range(trace.shape[0]):
            fig.add_trace(go.Scatter(y=trace[c], mode="lines", name=f"chain {c}",
                                     legendgroup=f"chain {c}", showlegend=col == 1,
                                     line=dict(width=1)), row=1, col=col)
        fig.add_hline(y=r.llc, line_dash="dash", row=1, col=col)
        if r.settings.burnin:
            fig.add_vrect(x0=0, x1=r.settings.burnin, fillcolor="grey", opacity=0.15,
                          line_width=0, row=1, col=col)
        fig.update_xaxes(title_text="SGLD step", row=1, col=col)
    fig.update_yaxes(title_text="nβ (L_B(w) - L_B(w*))", row=1, col=1)
    fig.update_layout(title=title, height=330)
    return fig


def llc_curve(curve: pd.DataFrame, boundaries: Sequence[float] = (),
              transitions: pd.DataFrame | None = None, title: str = "Local learning coefficient "
              "through training") -> go.Figure:
    """λ̂ (mean over chains, bars: their spread) against the snapshot step (log axis), the LLC
    stage boundaries as dashed lines and the circuit metrics' transition steps as dotted ones
    (``transitions``: metric, step)."""
    c = curve[curve["step"] > 0]
    fig = go.Figure(go.Scatter(x=c["step"], y=c["llc"], mode="lines+markers", name="λ̂",
                               error_y=dict(type="data", array=c["llc_std"].fillna(0))))
    bad = c[~c["healthy"].astype(bool)]
    if len(bad):
        fig.add_trace(go.Scatter(x=bad["step"], y=bad["llc"], mode="markers",
                                 marker=dict(symbol="x", size=10), name="check failed"))
    for b in boundaries:
        fig.add_vline(x=b, line_dash="dash", line_color="black")
    if transitions is not None:
        for metric, step in zip(transitions["metric"], transitions["step"]):
            if step == step and step > 0:
                fig.add_vline(x=step, line_dash="dot", line_color="grey",
                              annotation_text=label(str(metric)), annotation_textangle=-90)
    # ticks at the decades: plotly labels a log axis' minor ticks (2, 5) below 10 px
    fig.update_layout(title=title, xaxis_type="log", xaxis_dtick=1, xaxis_title="training step",
                      yaxis_title="λ̂", height=380)
    return fig
