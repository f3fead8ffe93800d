"""The explorer in JupyterLab: ipywidgets controls around the plain face (``Explorer``).

A text box for the sequence, a sample button and a set picker, a position slider, the predictions
strip, the circuitsvis view of the head picked, the per-head attribution heatmap (plotly,
``plots.head_heatmap``), one ablation toggle per head with the kind (zero or mean), and a step
slider when the run kept weight snapshots. Every control calls one ``Explorer`` method and redraws
from the state it returns; a refused input shows its one-line message under the controls.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import ipywidgets as w
from plotly.io.base_renderers import PlotlyRenderer

from ..plots import head_heatmap
from .snapshot import attention_html, best_head, caption, strip_html

FINAL = "final"


class ExplorerWidget:
    """The widgets of one explorer; ``box`` is what JupyterLab shows."""

    def __init__(self, explorer):
        self.explorer = explorer
        cfg = explorer.model.cfg
        heads = [(l, h) for l in range(cfg.n_layers) for h in range(cfg.n_heads)]
        state = explorer.state()
        self.text = w.Text(value=explorer.text(), description="sequence", continuous_update=False,
                           layout=w.Layout(width="60%"))
        self.sample = w.Button(description="sample")
        self.set = w.Dropdown(options=explorer.sets, value="sampler", description="set")
        self.position = w.IntSlider(value=explorer.position, min=0, max=len(state["tokens"]) - 1,
                                    description="position", continuous_update=False)
        self.head = w.Dropdown(options=[(f"L{l}H{h}", (l, h)) for l, h in heads],
                               value=best_head(state), description="attention of")
        self.kind = w.Dropdown(options=["zero", "mean"], value="zero", description="ablate as",
                               layout=w.Layout(width="200px"))
        self.toggles = {head: w.ToggleButton(description=f"L{head[0]}H{head[1]}", value=False,
                                             layout=w.Layout(width="70px")) for head in heads}
        grid = w.GridBox(list(self.toggles.values()), layout=w.Layout(
            grid_template_columns=f"repeat({cfg.n_heads}, 74px)"))
        steps = explorer.snapshot_steps
        self.step = (w.SelectionSlider(options=[*steps, FINAL], value=FINAL, description="step",
                                       continuous_update=False) if steps else None)
        self.caption, self.strip, self.error = w.HTML(), w.HTML(), w.HTML()
        self.attention, self.heatmap = w.Output(), w.Output()
        self._bundle_sent = False
        self._wire()
        rows = [w.HBox([self.text, self.sample, self.set]), self.error,
                w.HBox([self.position, self.head] + ([self.step] if self.step else [])),
                self.caption, self.strip,
                w.HBox([self.heatmap, w.VBox([self.kind, grid])]), self.attention]
        self.box = w.VBox(rows)
        self.show(state)

    # --- wiring ------------------------------------------------------------------------------
    def _wire(self) -> None:
        e = self.explorer
        self.text.observe(lambda c: self._do(e.set_sequence, c["new"], new_sequence=True),
                          names="value")
        self.sample.on_click(lambda _: self._do(e.sample, self.set.value, new_sequence=True))
        self.position.observe(lambda c: self._do(e.set_position, c["new"]), names="value")
        self.head.observe(lambda c: self.show(e.state()), names="value")
        for (layer, head), toggle in self.toggles.items():
            toggle.observe(lambda c, l=layer, h=head: self._do(
                *((e.ablate, l, h, self.kind.value) if c["new"] else (e.restore, l, h))),
                names="value")
        if self.step is not None:
            self.step.observe(lambda c: self._do(e.at_step, None if c["new"] == FINAL
                                                 else c["new"]), names="value")

    def _do(self, method: Callable[..., dict], *args: Any, new_sequence: bool = False) -> None:
        """Call one explorer method; show its state, or its ValueError in one line."""
        if getattr(self, "_busy", False):
            return  # a control moved by ``show`` itself
        try:
            state = method(*args)
        except ValueError as exc:
            self.error.value = f'<span style="color:#b00">{html.escape(str(exc))}</span>'
            return
        self.error.value = ""
        self.show(state, new_sequence)

    # --- drawing -----------------------------------------------------------------------------
    def show(self, state: dict, new_sequence: bool = False) -> None:
        """Redraw every view from ``state``; move the controls to match it."""
        self._busy = True
        try:
            if new_sequence:
                self.text.value = self.explorer.text()
                self.position.max = len(state["tokens"]) - 1
                self.position.value = state["position"]
        finally:
            self._busy = False
        # the strip before the caption: a reader (or a test) who sees the new caption sees the
        # strip it describes (the front end applies the two updates in the order they are sent)
        self.strip.value = strip_html(state)
        self.caption.value = f'<p class="toymech-explore-caption">{html.escape(caption(state))}</p>'
        layer, head = self.head.value
        view = attention_html(state, layer, head, include_bundle=not self._bundle_sent)
        self._bundle_sent = True  # once per widget: its output area may be the first view
        # Outputs set as data (not printed inside ``with output:``), so they need no kernel to
        # be read and JupyterLab renders them as any cell output (scripts run: the session's own).
        self.attention.outputs = (_output({"text/html": view}),)
        fig = head_heatmap(state["attribution"], title=f"Attribution to {state['target']!r}",
                           zrange=None, z_title="logit")
        fig.update_layout(width=360)
        self.heatmap.outputs = (_output(PlotlyRenderer().to_mimebundle(fig.to_dict())),)


def _output(data: dict) -> dict:
    """One display_data output of an Output widget."""
    return {"output_type": "display_data", "data": data, "metadata": {}}
