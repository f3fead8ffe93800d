"""Figures of the Birth of a Transformer study. Each function returns a plotly figure."""

from __future__ import annotations

from typing import Mapping, Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

# (history key, label) per panel of ``dynamics``; missing keys are skipped.
PANELS: dict[str, list[tuple[str, str]]] = {
    "accuracy": [("cb_icl_acc", "in-context acc"), ("cb_bigram_acc", "bigram acc")],
    "memory recall": [("probe_wo2", "W_O² output copy"), ("probe_wk2", "W_K² induction key"),
                      ("probe_wk1", "W_K¹ previous token"),
                      ("linprobe_prev", "linear probe: previous token")],
    "attention": [("attn_prev", "layer 0: previous token"),
                  ("attn_induction", "layer 1: output after earlier trigger"),
                  ("attn_induction_uniform", "layer 1: uniform-attention reference")],
    "W_F bigram KL (nats)": [("probe_wf_kl", "KL(π_b ‖ W_F recall)")],
    "K-composition": [("kcomp", "layer 0 → layer 1"), ("kcomp_baseline", "random baseline")],
}


def dynamics(history: Sequence[Mapping[str, float]], title: str = "Training dynamics",
             marks: Mapping[str, float] | None = None,
             hlines: Mapping[str, tuple[str, float]] | None = None) -> go.Figure:
    """Stacked panels on one shared step axis (``PANELS``). ``marks``: label -> step drawn as a
    vertical dotted line on every panel (e.g. the step where each memory forms); ``hlines``:
    label -> (panel, y) reference lines."""
    panels = [(name, [(k, lab) for k, lab in keys if any(k in r for r in history)])
              for name, keys in PANELS.items()]
    panels = [(name, keys) for name, keys in panels if keys]
    fig = make_subplots(rows=len(panels), cols=1, shared_xaxes=True, vertical_spacing=0.04,
                        subplot_titles=[name for name, _ in panels])
    for row, (name, keys) in enumerate(panels, start=1):
        for key, label in keys:
            pts = [(r["step"], r[key]) for r in history if key in r]
            dash = "dot" if key.endswith(("baseline", "uniform")) else None
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts], name=label,
                                     mode="lines+markers", marker=dict(size=4),
                                     line=dict(dash=dash)), row=row, col=1)
        for label, (panel, y) in (hlines or {}).items():
            if panel == name:
                fig.add_hline(y=y, line_dash="dash", line_color="grey", annotation_text=label,
                              row=row, col=1)
    for label, step in (marks or {}).items():
        fig.add_vline(x=step, line_dash="dot", line_color="grey")
        fig.add_annotation(x=step, y=1.0, yref="paper", text=label, showarrow=False,
                           textangle=-90, xanchor="right", yanchor="top", font=dict(size=10))
    fig.update_xaxes(title_text="step", row=len(panels), col=1)
    fig.update_layout(title=title, height=230 * len(panels) + 80)
    return fig


def sequence_view(tokens: Sequence[str], is_trigger: torch.Tensor, in_context: torch.Tensor,
                  width: int = 64, title: str = "A sample sequence") -> go.Figure:
    """One sequence as a grid of characters, ``width`` per row: triggers, the outputs that can be
    predicted in context (a trigger's output from its second occurrence on), first outputs
    (unpredictable) and plain bigram tokens in different colours."""
    n = len(tokens)
    is_trigger, in_context = is_trigger.bool().cpu(), in_context.bool().cpu()
    after_trigger = torch.zeros(n, dtype=torch.bool)
    after_trigger[1:] = is_trigger[:-1]
    kind = torch.zeros(n)  # 0 bigram
    kind[after_trigger & ~in_context] = 1  # first output
    kind[in_context] = 2  # in-context output
    kind[is_trigger] = 3  # trigger (a trigger can also be an output; the trigger colour wins)
    rows = -(-n // width)
    z = [[None] * width for _ in range(rows)]
    text = [[""] * width for _ in range(rows)]
    for i in range(n):
        z[i // width][i % width] = float(kind[i])
        text[i // width][i % width] = tokens[i]
    scale = [[0.0, "#eeeeee"], [0.25, "#eeeeee"], [0.25, "#fdd49e"], [0.5, "#fdd49e"],
             [0.5, "#74c476"], [0.75, "#74c476"], [0.75, "#fb6a4a"], [1.0, "#fb6a4a"]]
    fig = go.Figure(go.Heatmap(z=z, text=text, texttemplate="%{text}", colorscale=scale,
                               zmin=0, zmax=3, xgap=1, ygap=1, hoverinfo="text",
                               colorbar=dict(tickvals=[0.4, 1.1, 1.9, 2.6],
                                             ticktext=["bigram", "first output",
                                                       "in-context output", "trigger"])))
    fig.update_layout(title=title, height=60 + 28 * rows, yaxis_autorange="reversed",
                      xaxis_visible=False, yaxis_visible=False)
    return fig


def accuracy_vs_k(table, x: str = "K", y: str = "icl_acc", group: Sequence[str] = ("triggers",
                  "set"), title: str = "In-context accuracy against K") -> go.Figure:
    """Lines of ``y`` against ``x`` from a DataFrame, one per combination of ``group`` columns."""
    fig = go.Figure()
    for key, part in table.groupby(list(group)):
        key = key if isinstance(key, tuple) else (key,)
        part = part.sort_values(x)
        fig.add_trace(go.Scatter(x=part[x], y=part[y], mode="lines+markers",
                                 name=" / ".join(str(k) for k in key)))
    fig.update_layout(title=title, xaxis_title=x, yaxis_title=y, height=400)
    return fig
