"""Plotly figure builders. Each takes data and RETURNS a figure; nothing here calls ``.show()``.
Attention patterns (circuitsvis) live in ``toymech.display.attention_view``.

Every figure says what it shows: traces and axes are named through ``labels`` (readable names
with units), reference lines (chance, the source's value) are drawn by ``style.reference_lines``
where a builder is given them, heatmaps meant to be compared share one colour range with a titled
colour bar, and no figure is lower than ``style.MIN_HEIGHT``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import plotly.graph_objects as go
import torch
from plotly.subplots import make_subplots

from .labels import axis_title, label, shared_axis_title
from .style import PALETTE, height, reference_lines


def _np(x):
    return x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else np.asarray(x)


def curves(histories: Mapping[str, Sequence[Mapping[str, float]]], keys: Sequence[str] = ("eval_loss",),
           title: str = "Training curves", y_title: str | None = None, log_y: bool = False,
           hlines: Mapping[str, float] | None = None) -> go.Figure:
    """One line per (run, key) against ``step`` (histories: run name -> list of history rows).
    ``hlines``: label -> y reference lines (e.g. ``{"chance": 3.26, "floor": 0.708}``); the y title
    defaults to the keys' label and unit.

    ``y_title``: the y axis title (None: from the keys); ``log_y``: a log y axis."""
    fig = go.Figure()
    for run, rows in histories.items():
        for key in keys:
            pts = [(r["step"], r[key]) for r in rows if key in r]
            if not pts:
                continue
            name = run if len(keys) == 1 else f"{run}: {label(key)}"
            fig.add_trace(go.Scatter(x=[p[0] for p in pts], y=[p[1] for p in pts],
                                     mode="lines", name=name))
    reference_lines(fig, hlines)
    fig.update_layout(title=title, xaxis_title=axis_title("step"),
                      yaxis_title=y_title or shared_axis_title(list(keys)), height=height(420),
                      yaxis_type="log" if log_y else "linear")
    return fig


def head_heatmap(scores: torch.Tensor, title: str, zmid: float | None = 0.0,
                 zrange: tuple[float, float] | None = (-1.0, 1.0), text_fmt: str = ".2f",
                 colorscale: str = "RdBu", z_title: str = "score") -> go.Figure:
    """Heatmap of a [n_layers, n_heads] score tensor, values printed in each cell; ``z_title``
    titles the colour bar.

    ``scores``: the [n_layers, n_heads] tensor; ``title`` the figure's; ``zmid``, ``zrange``:
    the colour scale's middle and range (None: from the data); ``text_fmt``: the cells' number
    format; ``colorscale``: a plotly colour scale."""
    z = _np(scores)
    fig = go.Figure(go.Heatmap(
        z=z, x=[f"H{h}" for h in range(z.shape[1])], y=[f"L{l}" for l in range(z.shape[0])],
        colorscale=colorscale, zmid=zmid, zmin=zrange[0] if zrange else None,
        zmax=zrange[1] if zrange else None, texttemplate="%{z:" + text_fmt + "}",
        colorbar=dict(title=dict(text=z_title))))
    fig.update_layout(title=title, height=height(160 + 60 * z.shape[0]), yaxis_autorange="reversed",
                      xaxis_title="head", yaxis_title="layer")
    return fig


def _composition_grid(s: np.ndarray) -> tuple[np.ndarray, list[str], list[str]]:
    """[L1, H1, L2, H2] scores as a matrix: earlier heads (rows) into later heads (columns)."""
    L, H = s.shape[0], s.shape[1]
    rows = [f"L{l}H{h}" for l in range(L - 1) for h in range(H)]
    cols = [f"L{l}H{h}" for l in range(1, L) for h in range(H)]
    z = s[: L - 1].reshape((L - 1) * H, L, H)[:, 1:].reshape(len(rows), len(cols))
    return z, rows, cols


def composition_heatmap(scores: torch.Tensor, baseline: float, title: str,
                        zmax: float | None = None) -> go.Figure:
    """Scores [L1, H1, L2, H2] of earlier heads (rows) into later heads (columns), for every
    layer pair l1 < l2, with the random-matrix baseline in the title and the colour bar's title.
    ``zmax`` fixes the colour range (0..zmax) so that separate figures can be compared; to compare
    K- and Q-composition, ``composition_pair`` draws both on one scale.

    ``scores``: ``analysis.composition_scores(model, mode)``; ``baseline``:
    ``analysis.composition_baseline``'s mean."""
    z, rows, cols = _composition_grid(_np(scores))
    fig = go.Figure(go.Heatmap(z=z, x=cols, y=rows, colorscale="Viridis", texttemplate="%{z:.2f}",
                               zmin=0, zmax=zmax,
                               colorbar=dict(title=dict(text=f"composition score<br>(random: {baseline:.3f})"))))
    fig.update_layout(title=f"{title} (random baseline {baseline:.3f})",
                      xaxis_title="later head (reads)", yaxis_title="earlier head (writes)",
                      height=height(200 + 40 * len(rows)), yaxis_autorange="reversed")
    return fig


def composition_pair(scores: Mapping[str, torch.Tensor], baselines: Mapping[str, float],
                     title: str = "Composition of layer-0 heads into layer-1 heads") -> go.Figure:
    """Side-by-side composition heatmaps (kind -> [L1, H1, L2, H2] scores, e.g. ``{"K": ...,
    "Q": ...}``) on ONE colour range (0 to the largest score of either) with one titled colour
    bar, so that the colours can be compared across panels; each panel's title gives its
    random-matrix baseline.

    ``baselines``: {mode: the random-matrix baseline} for each panel."""
    kinds = list(scores)
    grids = {k: _composition_grid(_np(scores[k])) for k in kinds}
    top = max(float(np.nanmax(g[0])) for g in grids.values())
    fig = make_subplots(rows=1, cols=len(kinds), horizontal_spacing=0.12,
                        subplot_titles=[f"{k}-composition (random baseline {baselines[k]:.3f})" for k in kinds])
    for i, k in enumerate(kinds, start=1):
        z, rows, cols = grids[k]
        fig.add_trace(go.Heatmap(z=z, x=cols, y=rows, coloraxis="coloraxis", texttemplate="%{z:.2f}",
                                 name=f"{k}-composition"), row=1, col=i)
        fig.update_xaxes(title_text="later head (reads)", row=1, col=i)
        fig.update_yaxes(autorange="reversed", title_text="earlier head (writes)" if i == 1 else None,
                         row=1, col=i)
    n_rows = len(grids[kinds[0]][1])
    fig.update_layout(title=title, height=height(220 + 40 * n_rows),
                      coloraxis=dict(colorscale="Viridis", cmin=0, cmax=top,
                                     colorbar=dict(title=dict(text="composition score"))))
    return fig


def eigenvalue_spectra(eigs: Mapping[str, torch.Tensor], title: str = "Eigenvalues") -> go.Figure:
    """Eigenvalues in the complex plane, one trace per named circuit (name -> complex [n]).

    ``eigs``: {name: eigenvalues}, one trace each in the complex plane; ``title`` the figure's."""
    fig = go.Figure()
    for name, lam in eigs.items():
        lam = _np(lam)
        fig.add_trace(go.Scatter(x=lam.real, y=lam.imag, mode="markers", name=name,
                                 marker=dict(size=7, opacity=0.8)))
    fig.add_vline(x=0, line_color="grey", line_width=1)
    fig.add_hline(y=0, line_color="grey", line_width=1)
    fig.update_layout(title=title, xaxis_title="Re λ (real part)", yaxis_title="Im λ (imaginary part)",
                      height=height(450))
    return fig


def eigenvalue_grid(eigs: Mapping[str, Mapping[str, torch.Tensor]], title: str) -> go.Figure:
    """One complex-plane panel per model (model -> circuit name -> eigenvalues).

    ``eigs``: {model: {circuit: eigenvalues}}, one panel per model; ``title`` the figure's."""
    names = list(eigs)
    fig = make_subplots(rows=1, cols=len(names), subplot_titles=names)
    for i, model in enumerate(names, start=1):
        for j, (circuit, lam) in enumerate(eigs[model].items()):
            lam = _np(lam)
            fig.add_trace(go.Scatter(x=lam.real, y=lam.imag, mode="markers", name=circuit,
                                     legendgroup=circuit, showlegend=(i == 1),
                                     marker=dict(size=6, color=PALETTE[j % len(PALETTE)])),
                          row=1, col=i)
    fig.update_layout(title=title, height=height(380))
    fig.update_xaxes(title_text="Re λ (real part)", zeroline=True)
    fig.update_yaxes(title_text="Im λ (imaginary part)", zeroline=True)
    return fig


def per_position(losses: Mapping[str, torch.Tensor], title: str = "Loss per position",
                 tokens: Sequence[str] | None = None,
                 hlines: Mapping[str, float] | None = None) -> go.Figure:
    """Loss of the target at each position (name -> [seq-1]); NaN (unscored) points are gaps;
    ``hlines``: label -> y reference lines (chance).

    ``losses``: {name: loss per position}; ``title`` the figure's; ``tokens``: the sequence's
    token strings, which label the target positions (None: position numbers)."""
    fig = go.Figure()
    for name, values in losses.items():
        v = _np(values)
        fig.add_trace(go.Scatter(x=list(range(1, len(v) + 1)), y=v, mode="lines+markers",
                                 name=name))
    reference_lines(fig, hlines)
    fig.update_layout(title=title, xaxis_title="target position", yaxis_title=axis_title("loss"),
                      height=height(400))
    if tokens is not None:
        fig.update_xaxes(tickvals=list(range(1, len(tokens))), ticktext=list(tokens[1:]))
    return fig


def grouped_bars(table: Mapping[str, Mapping[str, float]], title: str, y_title: str,
                 log_y: bool = False, x_title: str = "model",
                 hlines: Mapping[str, float] | None = None,
                 source: Mapping[str, Mapping[str, float]] | None = None,
                 source_name: str = "the source's value") -> go.Figure:
    """Bars: one group per outer key, one bar per inner key (e.g. model -> set -> loss).
    ``hlines``: label -> y lines across the plot (chance); ``source``: the same shape as
    ``table`` (missing entries skipped), drawn as a black marker on its bar.

    ``title``, ``x_title`` and ``y_title`` name the figure and its axes; ``log_y``: a log y
    axis; ``source_name``: how the source's markers are named in the legend."""
    outer = list(table)
    inner = list(dict.fromkeys(k for row in table.values() for k in row))
    fig = go.Figure()
    # A two-level category axis (model, set): every bar has its own position, so the source's
    # markers can sit exactly on the bars they belong to.
    for j, key in enumerate(inner):
        groups = [o for o in outer if key in table[o]]
        fig.add_trace(go.Bar(name=key, x=[groups, [key] * len(groups)],
                             y=[table[o][key] for o in groups], marker_color=PALETTE[j % len(PALETTE)]))
    if source:
        pts = [(o, k, source[o][k]) for o in outer for k in inner
               if k in table[o] and k in source.get(o, {}) and source[o][k] is not None]
        if pts:
            fig.add_trace(go.Scatter(name=source_name, x=[[p[0] for p in pts], [p[1] for p in pts]],
                                     y=[p[2] for p in pts], mode="markers",
                                     marker=dict(symbol="line-ew-open", size=22, color="black",
                                                 line=dict(width=3))))
    reference_lines(fig, hlines)
    fig.update_layout(title=title, yaxis_title=y_title, xaxis_title=x_title, barmode="overlay",
                      height=height(440), yaxis_type="log" if log_y else "linear")
    return fig


def pattern_score_heatmaps(scores: Mapping[str, Mapping[str, torch.Tensor]],
                           title: str = "Attention-pattern scores per head") -> go.Figure:
    """Grid of heatmaps: one row per model, one column per score kind (model -> kind -> [L, H]),
    all on one colour range (0 to 1) with one titled colour bar.

    ``scores``: {kind: [n_layers, n_heads]} (``analysis.head_pattern_scores``), one panel each
    on one colour scale; ``title`` the figure's."""
    models = list(scores)
    kinds = list(next(iter(scores.values())))
    fig = make_subplots(rows=len(models), cols=len(kinds), horizontal_spacing=0.06,
                        vertical_spacing=0.12 if len(models) > 1 else 0.0,
                        subplot_titles=[f"{m}: {label(k)}" for m in models for k in kinds])
    for i, model in enumerate(models, start=1):
        for j, kind in enumerate(kinds, start=1):
            z = _np(scores[model][kind])
            fig.add_trace(go.Heatmap(z=z, x=[f"H{h}" for h in range(z.shape[1])],
                                     y=[f"L{l}" for l in range(z.shape[0])], coloraxis="coloraxis",
                                     texttemplate="%{z:.2f}", name=f"{model}: {kind}"), row=i, col=j)
            fig.update_yaxes(autorange="reversed", title_text="layer" if j == 1 else None, row=i, col=j)
            if i == len(models):
                fig.update_xaxes(title_text="head", row=i, col=j)
    fig.update_layout(title=title, height=height(160 + 170 * len(models)),
                      coloraxis=dict(colorscale="Blues", cmin=0, cmax=1,
                                     colorbar=dict(title=dict(text="pattern score Σ(A⊙D)/ΣA", side="right"))))
    return fig


from .scrubber import scrubber  # noqa: E402  (training dynamics: patterns with a step slider)
