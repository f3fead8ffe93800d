"""The explorer's views as self-contained HTML: the predictions strip (shared with the widget),
the attribution grid, and the whole static snapshot a report shows where no kernel runs.

Colours: a token is tinted by the probability the model gave it from the previous position
(green = expected, red = a surprise, grey = not scored); the position being read is outlined.
The attribution grid is blue for a head that raises the target's logit, red for one that
lowers it. No script and no file from a network: the attention view is the project's offline
circuitsvis view (``toymech.display.attention``).
"""

from __future__ import annotations

import html

import numpy as np

from ..display import BUNDLES_SENT, attention_view

LIVE_NOTE = ("A static snapshot of the explorer's first state. The live version (type a "
             "sequence, ablate heads, move through training) needs a running Python kernel: "
             "open the notebook in JupyterLab and run this cell.")


def _tint(prob: float | None) -> str:
    """Background for a token predicted with probability ``prob`` (None: not scored)."""
    if prob is None:
        return "#eeeeee"
    hue = 120 * float(np.clip(prob, 0, 1))  # 0 red .. 120 green
    return f"hsl({hue:.0f}, 70%, 80%)"


def strip_html(state: dict) -> str:
    """The sequence as coloured cells: each token, the probability the model gave it, and the
    model's top prediction for the next token underneath."""
    tokens, preds, pos = state["tokens"], state["predictions"], state["position"]
    scored = set(state["loss"])
    cells = []
    for i, token in enumerate(tokens):
        prob = None
        if i >= 1 and (i - 1) in scored:
            prob = float(np.exp(-state["loss"][i - 1]))  # p(x_i | x_<i)
        top, top_p = preds[i][0]
        border = "2px solid #222" if i == pos else "1px solid #ccc"
        title = f"position {i}: next-token guess {top} ({top_p:.0%})"
        shown = "" if prob is None else f"{prob:.6f}"  # read by tests and scripts
        data = f' data-token="{html.escape(token)}" data-prob="{shown}"'
        cells.append(
            f'<span class="toymech-explore-token"{data} title="{html.escape(title)}" '
            f'style="display:inline-block;margin:1px;padding:2px 3px;text-align:center;'
            f'border:{border};background:{_tint(prob)};font-family:monospace">'
            f'{html.escape(token)}<br>'
            f'<small style="color:#555">{html.escape(top)} {top_p:.0%}</small></span>')
    return '<div class="toymech-explore-strip" style="line-height:1.1">' + "".join(cells) + "</div>"


def attribution_html(state: dict) -> str:
    """The [L, H] direct logit attributions as a small coloured table."""
    z = np.asarray(state["attribution"])
    span = float(np.abs(z).max()) or 1.0
    rows = []
    for layer, row in enumerate(z):
        cells = []
        for value in row:
            shade = int(255 - 155 * min(1.0, abs(value) / span))
            colour = f"rgb({shade},{shade},255)" if value >= 0 else f"rgb(255,{shade},{shade})"
            cells.append(f'<td style="background:{colour};padding:2px 6px">{value:+.2f}</td>')
        rows.append(f"<tr><th>L{layer}</th>{''.join(cells)}</tr>")
    head = "".join(f"<th>H{h}</th>" for h in range(z.shape[1]))
    return (f'<table class="toymech-explore-attribution"><tr><th></th>{head}</tr>'
            f"{''.join(rows)}</table>")


def caption(state: dict) -> str:
    """One line: where the views are read and what is predicted there."""
    pos, tokens = state["position"], state["tokens"]
    ablated = ", ".join(f"L{l}H{h} ({k})" for l, h, k in state["ablated"]) or "none"
    at = "final weights" if state["step"] is None else f"weights at step {state['step']}"
    return (f"At position {pos} ({tokens[pos]!r}) the target is {state['target']!r}, predicted "
            f"with probability {state['target_prob']:.1%}; ablated heads: {ablated}; {at}.")


def attention_html(state: dict, layer: int, head: int, include_bundle: bool) -> str:
    """The offline circuitsvis view of head (layer, head) on the current sequence."""
    name = f"L{layer}H{head}"
    view = attention_view(state["tokens"], state["patterns"][layer, head][None], [name],
                          caption=f"The view opens on {name}, on the current sequence.",
                          focus=name)
    return view.to_html(include_bundle=include_bundle)


def best_head(state: dict) -> tuple[int, int]:
    """The head with the largest attribution to the target (what a view opens on)."""
    z = np.asarray(state["attribution"])
    layer, head = np.unravel_index(int(np.argmax(z)), z.shape)
    return int(layer), int(head)


def snapshot_html(explorer) -> str:
    """The static page of the explorer's current state: the note that the live version needs
    a kernel, the caption, the strip, the attribution grid and one head's attention view."""
    state = explorer.state()
    layer, head = best_head(state)
    first = not BUNDLES_SENT["circuitsvis"]  # the bundle travels once per page, as for other views
    view = attention_html(state, layer, head, include_bundle=first)
    BUNDLES_SENT["circuitsvis"] = True
    return (f'<div class="toymech-explore-snapshot"><p><em>{html.escape(LIVE_NOTE)}</em></p>'
            f"<p>{html.escape(caption(state))}</p>{strip_html(state)}"
            f"<p>Direct logit attribution of each head to the target (logit units):</p>"
            f"{attribution_html(state)}<p>Attention of L{layer}H{head}, the head that adds "
            f"most to the target's logit:</p>{view}</div>")
