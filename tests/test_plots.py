"""toymech.plots: every figure says what it shows (readable labels, axis titles, a minimum height,
shared colour ranges, reference lines, ticks at the data)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import pytest
import torch

from toymech import plots
from toymech.plots import birth, labels, style
from toymech.plots import random_transformers as rt

HISTORY = [{"step": s, "eval_loss": 3.0 - s / 100, "cb_icl_acc": s / 200, "cb_bigram_acc": 0.3,
            "probe_wo2": 0.5, "probe_wk2": 0.5, "probe_wk1": 0.2, "attn_prev": 0.4,
            "attn_induction": 0.3, "attn_induction_uniform": 0.1, "probe_wf_kl": 2.0 - s / 200,
            "kcomp": 0.09 + s / 10000, "kcomp_baseline": 0.088} for s in range(0, 201, 20)]


def _axes(fig: go.Figure, letter: str) -> list:
    return [fig.layout[k] for k in fig.layout if k.startswith(f"{letter}axis")]


def _titled(fig: go.Figure, letter: str) -> bool:
    return any(ax.title.text for ax in _axes(fig, letter))


def _builders():
    comp = torch.rand(2, 4, 2, 4, generator=torch.Generator().manual_seed(0))
    eig = {"direct path": torch.tensor([1 + 0j, -1 + 0.5j])}
    sweep = pd.DataFrame({"task": ["a"] * 4, "width": [16, 16, 64, 64], "mode": ["normal", "random"] * 2,
                          "seed": 0, "acc": [0.2, 0.3, 0.9, 1.0]})
    summary = pd.DataFrame({"task": ["a", "a"], "mode": ["normal", "random"], "median": [0.5, 0.6],
                            "min": [0.4, 0.5], "max": [0.6, 0.7]})
    circ = pd.DataFrame({"target_width": [16, 64, 16, 64], "student": ["normal", "normal", "random", "random"],
                         "kl": [0.1, 0.2, 0.3, 0.5]})
    conc = pd.DataFrame({"task": ["a", "a"], "mode": ["normal", "random"], "layer": ["1", "1"],
                         "basis": ["principal", "principal"], "ev": [0.4, 0.8]})
    ks = pd.DataFrame({"K": [1, 3, 5, 1, 3, 5], "icl_acc": [0.2, 0.4, 0.5, 0.3, 0.6, 0.7],
                       "triggers": ["fixed"] * 3 + ["random"] * 3, "set": "test"})
    seq = list("abcabdab" * 3)
    return {
        "curves": lambda: plots.curves({"run": HISTORY}, hlines={"chance": 3.26}),
        "head_heatmap": lambda: plots.head_heatmap(torch.zeros(1, 4), "copy"),
        "composition_heatmap": lambda: plots.composition_heatmap(comp, 0.1, "K"),
        "composition_pair": lambda: plots.composition_pair({"K": comp, "Q": comp / 2}, {"K": 0.1, "Q": 0.1}),
        "eigenvalue_spectra": lambda: plots.eigenvalue_spectra(eig),
        "eigenvalue_grid": lambda: plots.eigenvalue_grid({"m": eig}, "e"),
        "per_position": lambda: plots.per_position({"m": torch.ones(5)}, hlines={"chance": 3.26}),
        "grouped_bars": lambda: plots.grouped_bars({"m": {"test": 1.0}}, "loss", "nats"),
        "pattern_score_heatmaps": lambda: plots.pattern_score_heatmaps({"m": {"induction": torch.rand(2, 4)}}),
        "scrubber": lambda: plots.scrubber([0, 5], [np.full((1, 3, 3), 1 / 3)] * 2, ["L0H0"],
                                           curves=pd.DataFrame({"step": [0, 5], "kcomp": [0.1, 0.2]}),
                                           normalize=True),
        "birth.dynamics": lambda: birth.dynamics(HISTORY),
        "birth.sequence_view": lambda: birth.sequence_view(seq, torch.tensor([c == "a" for c in seq]),
                                                           torch.zeros(len(seq), dtype=torch.bool), width=16),
        "birth.accuracy_vs_k": lambda: birth.accuracy_vs_k(ks),
        "rt.width_sweep": lambda: rt.width_sweep(sweep, chance={"a": 0.5}),
        "rt.mode_bars": lambda: rt.mode_bars(summary),
        "rt.kl_vs_target_width": lambda: rt.kl_vs_target_width(circ),
        "rt.concentration_bars": lambda: rt.concentration_bars(conc),
    }


@pytest.mark.parametrize("name", list(_builders()))
def test_every_figure_has_titled_axes_and_a_minimum_height(name):
    fig = _builders()[name]()
    assert fig.layout.height >= style.MIN_HEIGHT, fig.layout.height
    assert _titled(fig, "x") and _titled(fig, "y"), name
    texts = [t.name or "" for t in fig.data] + [ax.title.text or "" for ax in _axes(fig, "x") + _axes(fig, "y")]
    raw = [k for k in labels.LABELS if "_" in k and any(k in t for t in texts)]
    assert raw == [], f"{name} shows raw keys {raw}"


def test_keys_the_studies_record_have_labels():
    from toymech.studies.birth.dynamics import DYNAMICS_METRICS as birth_metrics
    from toymech.studies.induction.dynamics import DYNAMICS_METRICS as induction_metrics
    from toymech.studies.random_transformers.dynamics import DYNAMICS_METRICS as rt_metrics

    panel_keys = [k for _, keys in birth.PANELS.values() for k in keys]
    missing = [k for k in (*birth_metrics, *induction_metrics, *rt_metrics, *panel_keys, *HISTORY[0])
               if k not in labels.LABELS]
    assert missing == []
    assert labels.axis_title("eval_loss") == "held-out loss (nats)"
    assert labels.label("probe_wk1") == "W_K¹ recall: previous token"
    assert labels.label("no_such_key") == "no such key" and labels.unit("no_such_key") is None
    assert labels.shared_axis_title(["probe_wk1", "probe_wk2"]) == "fraction correct"
    assert labels.shared_axis_title(["eval_loss", "probe_wk1"], "value") == "value"


def test_range_scaling_keeps_an_overshoot_inside_the_axis():
    y = np.array([1.0, 2.6, 1.2, 1.0 + 1.0])  # peaks at 2.6, ends at 2.0
    scaled = style.range_scaled(y)
    assert scaled.min() == 0 and scaled.max() == 1 and scaled[1] == 1
    assert np.allclose(scaled, (y - 1.0) / 1.6)
    assert np.all(style.range_scaled(np.full(3, 0.5)) == 0)  # flat: no division by zero
    fig = plots.scrubber([0, 1, 3, 9], [np.full((1, 2, 2), 0.5)] * 4, ["L0H0"],
                         curves=pd.DataFrame({"step": [0, 1, 3, 9], "qcomp_max": y}), normalize=True)
    curve = next(t for t in fig.data if t.type == "scatter" and t.name.startswith(labels.label("qcomp_max")))
    assert max(curve.y) == 1 and min(curve.y) == 0  # first-to-last scaling would put the peak at 2.6
    assert curve.name.endswith(f"(raw {y.min():.3g} to {y.max():.3g})") and "raw" in curve.hovertemplate
    heads = [fig.layout[k] for k in fig.layout if k.startswith(("xaxis", "yaxis"))]
    assert all(a.tickfont.size is None or a.tickfont.size >= style.MIN_TICK_PX for a in heads)


def test_ticks_at_the_data_for_log_axes_and_counts():
    assert style.log_ticks_at([64, 16, 16]) == {"type": "log", "tickvals": [16.0, 64.0], "ticktext": ["16", "64"]}
    fig = rt.kl_vs_target_width(pd.DataFrame({"target_width": [16, 64], "student": "s", "kl": [0.1, 0.2]}))
    assert list(fig.layout.xaxis.tickvals) == [16, 64] and fig.layout.xaxis.type == "log"
    ks = pd.DataFrame({"K": [1, 3, 5], "icl_acc": [0.1, 0.2, 0.3], "triggers": "fixed", "set": "test"})
    axis = birth.accuracy_vs_k(ks).layout.xaxis
    assert list(axis.tickvals) == [1, 3, 5] and list(axis.ticktext) == ["1", "3", "5"]


def test_compared_heatmaps_share_one_titled_colour_range():
    k = torch.full((2, 1, 2, 1), 0.6)
    q = torch.full((2, 1, 2, 1), 0.3)
    fig = plots.composition_pair({"K": k, "Q": q}, {"K": 0.2, "Q": 0.25})
    assert all(t.coloraxis == "coloraxis" for t in fig.data)
    assert fig.layout.coloraxis.cmin == 0 and fig.layout.coloraxis.cmax == pytest.approx(0.6)
    assert fig.layout.coloraxis.colorbar.title.text == "composition score"
    assert [a.text for a in fig.layout.annotations] == ["K-composition (random baseline 0.200)",
                                                        "Q-composition (random baseline 0.250)"]
    single = plots.composition_heatmap(k, 0.2, "K", zmax=1.0)
    assert single.data[0].zmax == 1.0 and "composition score" in single.data[0].colorbar.title.text


def test_reference_lines_and_source_markers():
    fig = plots.grouped_bars({"1l": {"test": 3.0, "ood": 2.0}, "2l": {"test": 1.5}}, "loss", "nats",
                             hlines={"chance": 3.26}, source={"1l": {"test": 2.6}, "2l": {"test": 1.4}},
                             source_name="the post")
    marker = fig.data[-1]
    assert marker.name == "the post" and list(marker.y) == [2.6, 1.4]
    assert [list(level) for level in marker.x] == [["1l", "2l"], ["test", "test"]]
    [line] = fig.layout.shapes
    assert line.y0 == 3.26 and line.line.dash == "dot"  # chance: dotted
    assert fig.layout.annotations[0].text == "chance: 3.26"
    styled = go.Figure()
    style.reference_lines(styled, {"the paper": 0.2, "ours": 0.5, "missing": float("nan")})
    assert [s.line.dash for s in styled.layout.shapes] == ["dash", "dashdot"]


def test_birth_dynamics_panels_read_on_their_own():
    fig = birth.dynamics(HISTORY, marks={"W_O² forms": 60})
    titles = [fig.layout[f"yaxis{'' if i == 1 else i}"].title.text for i in range(1, 6)]
    assert titles == ["accuracy (fraction correct)", "recall (fraction correct)", "attention weight",
                      "KL (nats)", "composition score"]
    data = [t for t in fig.data if t.line.dash != "dot"]
    colours = [t.line.color for t in data]
    assert len(set(colours)) == len(colours)  # every series its own colour
    assert len({t.marker.symbol for t in data}) > 1
    legends = {t.legend or "legend" for t in fig.data}
    assert len(legends) == 5 and all(fig.layout[name].y <= 1 for name in legends)
    assert list(fig.layout.yaxis.range) == [-0.02, 1.05] and fig.layout.yaxis5.rangemode == "tozero"


def test_sequence_view_is_readable_at_any_length():
    seq = list("abcd")
    fig = birth.sequence_view(seq, torch.tensor([True, False, False, False]), torch.zeros(4, dtype=torch.bool))
    assert fig.layout.height >= 240 and not fig.data[0].showscale
    assert [t.name for t in fig.data[1:]] == ["bigram", "first output (not predictable)", "in-context output", "trigger"]


def test_fit_title_and_tick_stride_keep_labels_readable():
    from toymech.plots.style import fit_title, tick_stride

    title = fit_title("explained variance of the top-10 principal directions (fraction of variance)", 240)
    assert all(len(line) * 7 <= 240 for line in title.split("<br>")) and title.count("<br>") >= 1
    assert fit_title("short", 500) == "short"
    assert tick_stride(48, 180) == 4 and tick_stride(8, 180) == 1
    with pytest.raises(ValueError, match="^length_px=0 is not allowed"):
        fit_title("x", 0)
    with pytest.raises(ValueError, match="^length_px=-1 is not allowed"):
        tick_stride(3, -1)
