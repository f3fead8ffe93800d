"""Figures of the Birth of a Transformer study. Each function returns a plotly figure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .labels import ACC, COMP, label
from .style import PALETTE, SYMBOLS, height, integer_ticks, reference_lines

# panel -> (y-axis title, history keys); missing keys are skipped. Trace names come from the
# label map (``labels.label``).
PANELS: dict[str, tuple[str, list[str]]] = {
    "accuracy": (f"accuracy ({ACC})", ["cb_icl_acc", "cb_bigram_acc"]),
    "memory recall": (f"recall ({ACC})", ["probe_wo2", "probe_wk2", "probe_wk1", "linprobe_prev"]),
    "attention": ("attention weight", ["attn_prev", "attn_induction", "attn_induction_uniform"]),
    "W_F bigram memory": ("KL (nats)", ["probe_wf_kl"]),
    "K-composition": (COMP, ["kcomp", "kcomp_baseline"]),
}
_UNIT_PANELS = ("accuracy", "memory recall", "attention")  # values in [0, 1]: drawn on [0, 1]


def dynamics(history: Sequence[Mapping[str, float]], title: str = "Training dynamics",
             marks: Mapping[str, float] | None = None,
             hlines: Mapping[str, tuple[str, float]] | None = None) -> go.Figure:
    """Stacked panels on one shared step axis (``PANELS``), each with its own y title and its
    own legend beside it. ``marks``: label -> step drawn as a vertical dotted line on every panel
    (e.g. the step where each memory forms); ``hlines``: label -> (panel, y) reference lines.

    Every series has its own colour and marker symbol, and markers are drawn only where the
    lines alone would not tell overlapping series apart (solid vs dashed lines for references).
    Accuracy, recall and attention panels span [0, 1]; score panels start at 0, so that a small
    rise is not stretched over the whole panel.
    """
    panels = [(name, y_title, [k for k in keys if any(k in r for r in history)])
              for name, (y_title, keys) in PANELS.items()]
    panels = [p for p in panels if p[2]]
    n = len(panels)
    gap = 0.05
    fig = make_subplots(rows=n, cols=1, shared_xaxes=True, vertical_spacing=gap,
                        subplot_titles=[name for name, _, _ in panels])
    color = 0
    for row, (name, y_title, keys) in enumerate(panels, start=1):
        legend = "legend" if row == 1 else f"legend{row}"
        for key in keys:
            pts = [(r["step"], r[key]) for r in history if key in r]
            reference = key.endswith(("baseline", "uniform"))
            fig.add_trace(go.Scatter(
                x=[p[0] for p in pts], y=[p[1] for p in pts], name=label(key), legend=legend,
                mode="lines" if reference else "lines+markers",
                line=dict(dash="dot" if reference else None, color="#777" if reference else PALETTE[color % len(PALETTE)],
                          width=1.5 if reference else 2),
                marker=dict(size=6, symbol=SYMBOLS[color % len(SYMBOLS)], line=dict(width=1, color="white")),
            ), row=row, col=1)
            color += 0 if reference else 1
        for lab, (panel, y) in (hlines or {}).items():
            if panel == name:
                reference_lines(fig, {lab: y}, row=row, col=1)
        fig.update_yaxes(title_text=y_title, row=row, col=1)
        if name in _UNIT_PANELS:
            fig.update_yaxes(range=[-0.02, 1.05], row=row, col=1)
        elif name == "K-composition":
            fig.update_yaxes(rangemode="tozero", row=row, col=1)
    for lab, step in (marks or {}).items():
        fig.add_vline(x=step, line_dash="dot", line_color="grey")
        fig.add_annotation(x=step, y=1.0, yref="paper", text=lab, showarrow=False,
                           textangle=-90, xanchor="right", yanchor="top", font=dict(size=10))
    fig.update_xaxes(title_text=label("step"), row=n, col=1)
    # One legend per panel, at the panel's top right, outside the plot area.
    legends = {}
    for row in range(1, n + 1):
        top = fig.get_subplot(row, 1).yaxis.domain[1]
        legends["legend" if row == 1 else f"legend{row}"] = dict(x=1.01, y=top, yanchor="top",
                                                                   xanchor="left", font=dict(size=11))
    fig.update_layout(title=title, height=height(240 * n + 100), margin=dict(r=300), **legends)
    return fig


_KINDS = [("bigram", "#d9d9d9"), ("first output (not predictable)", "#fdd49e"),
          ("in-context output", "#74c476"), ("trigger", "#fb6a4a")]


def sequence_view(tokens: Sequence[str], is_trigger: torch.Tensor, in_context: torch.Tensor,
                  width: int = 64, title: str = "A sample sequence") -> go.Figure:
    """One sequence as a grid of characters, ``width`` per row: triggers, the outputs that can be
    predicted in context (a trigger's output from its second occurrence on), first outputs
    (unpredictable) and plain bigram tokens in different colours, named in a legend above the grid
    (rows are labelled by the position they start at)."""
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
    hover = [[""] * width for _ in range(rows)]
    for i in range(n):
        r, c = divmod(i, width)
        z[r][c], text[r][c] = float(kind[i]), tokens[i]
        hover[r][c] = f"position {i}: {tokens[i]!r} ({_KINDS[int(kind[i])][0]})"
    scale = []
    for k, (_, colour) in enumerate(_KINDS):
        scale += [[k / 4, colour], [(k + 1) / 4, colour]]
    fig = go.Figure(go.Heatmap(z=z, text=text, texttemplate="%{text}", colorscale=scale, zmin=-0.5,
                               zmax=3.5, xgap=1, ygap=1, hovertext=hover, hoverinfo="text",
                               showscale=False, name="sequence", showlegend=False))
    for name, colour in _KINDS:  # legend entries only (no data)
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name=name,
                                 marker=dict(symbol="square", size=12, color=colour)))
    fig.update_layout(title=title, height=height(150 + 30 * rows), plot_bgcolor="white",
                      legend=dict(orientation="h", x=0, y=1.0, yanchor="bottom"),
                      margin=dict(t=110))
    fig.update_xaxes(title_text="position within the row", showgrid=False, zeroline=False,
                     tickmode="array", tickvals=list(range(0, width, 8)))
    fig.update_yaxes(title_text="row (first position)", autorange="reversed", showgrid=False,
                     zeroline=False, tickmode="array", tickvals=list(range(rows)),
                     ticktext=[str(r * width) for r in range(rows)])
    return fig


def accuracy_vs_k(table, x: str = "K", y: str = "icl_acc", group: Sequence[str] = ("triggers",
                  "set"), title: str = "In-context accuracy against K",
                  hlines: Mapping[str, float] | None = None) -> go.Figure:
    """Lines of ``y`` against ``x`` from a DataFrame, one per combination of ``group`` columns;
    ticks only at the values of ``x`` (a count); ``hlines``: label -> y reference lines."""
    fig = go.Figure()
    for i, (key, part) in enumerate(table.groupby(list(group))):
        key = key if isinstance(key, tuple) else (key,)
        part = part.sort_values(x)
        fig.add_trace(go.Scatter(x=part[x], y=part[y], mode="lines+markers",
                                 name=" / ".join(str(k) for k in key),
                                 marker=dict(symbol=SYMBOLS[i % len(SYMBOLS)], size=8)))
    reference_lines(fig, hlines)
    fig.update_layout(title=title, xaxis_title=label(x), yaxis_title=f"{label(y)} ({ACC})",
                      height=height(400), yaxis_range=[0, 1.05])
    fig.update_xaxes(**integer_ticks(table[x]))
    return fig
