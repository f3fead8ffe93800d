"""circuitsvis attention views that render offline, with a caption and an open/folded state, and
``attention_caption``: the sentence that says which heads are worth looking at, from their scores.

circuitsvis' own ``_repr_html_`` either imports from a CDN or inlines its 1.3 MB bundle on every
view, so views are rendered here: the bundle is sent once per kernel (``BUNDLES_SENT``, shared with the
plotly renderer) and every later view keeps only its render call. A folded view (``open=False``)
sits in a ``<details>`` element and is drawn when it is first unfolded, so its canvas gets its
real width (a view drawn while hidden would be laid out at zero width).
"""

from __future__ import annotations

import html
import json
import re
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# Shared state, not attributes of the renderer: plotly copies renderer objects on every render,
# so a flag stored on the renderer instance would never be seen by the next figure.
BUNDLES_SENT = {"plotly.js": False, "circuitsvis": False}


def _circuitsvis_bundle_path() -> Path:
    import circuitsvis

    return Path(circuitsvis.__file__).parent / "dist" / "cdn" / "iife.js"


def circuitsvis_bundle_script() -> str:
    """The local circuitsvis bundle as one classic <script> defining ``window.CircuitsVis``."""
    source = _circuitsvis_bundle_path().read_text(encoding="utf-8")
    # The source-map comment would make devtools request iife.js.map next to the report.
    source = re.sub(r"\n//# sourceMappingURL=\S*\s*$", "\n", source)
    # "</script" inside a JS literal would end the inline script early; "<\/script" is the same
    # string (or regex) to JavaScript.
    source = source.replace("</script", "<\\/script")
    return f'<script data-toymech-bundle="circuitsvis">\n{source}\n</script>'


def _json_for_script(value: Any) -> str:
    # Escaping <, > and & keeps token strings such as "</script>" from breaking out of the script.
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


# The view's own script waits briefly for the bundle (it may be parsed after this output in some
# front ends), and inside a closed <details> until it is first opened; then it replaces the
# placeholder with the rendered React component.
_RENDER_JS = """<script>
(function () {
  var id = %(id)s, props = %(props)s, tries = 0, focus = %(focus)s;
  function draw() {
    var el = document.getElementById(id);
    if (!el) { return; }
    var fold = el.closest("details");
    if (fold && !fold.open) {
      fold.addEventListener("toggle", function again() {
        if (fold.open) { fold.removeEventListener("toggle", again); draw(); }
      });
      return;
    }
    if (!window.CircuitsVis) {
      if (tries++ < 100) { setTimeout(draw, 50); return; }
      el.textContent = "circuitsvis bundle missing: run toymech.display.reset_bundles() and re-run this cell";
      return;
    }
    el.textContent = "";
    window.CircuitsVis.render(id, window.CircuitsVis.%(component)s, props);
    if (focus !== null) { select(el, 0); }
  }
  // circuitsvis opens on the first head and has no property for another: once its thumbnails
  // are drawn, click the one named ``focus`` (the head the caption names).
  function select(el, n) {
    var names = el.querySelectorAll("h4");
    for (var i = 0; i < names.length; i++) {
      if (names[i].textContent === focus) { names[i].parentElement.parentElement.click(); return; }
    }
    if (n < 100) { setTimeout(function () { select(el, n + 1); }, 50); }
  }
  draw();
})();
</script>"""


class AttentionView:
    """A circuitsvis attention-heads view that renders offline; display it as a cell's last value.

    ``tokens``: the sequence's token strings. ``attention`` is ``[n_heads, n_pos, n_pos]``
    (query position, key position); values are rounded to ``decimals`` places to keep reports
    small. ``head_names``: one name per head (``L0H1``). ``caption`` is shown above the view
    (and, when folded, its first sentence is the summary line that unfolds it). ``open``: shown
    unfolded. ``focus``: the head name the view opens on (None: the first head).
    """

    component = "AttentionHeads"

    def __init__(self, tokens: list[str], attention: np.ndarray, head_names: list[str],
                 decimals: int, caption: str | None = None, open: bool = True,
                 focus: str | None = None):
        self.tokens = tokens
        self.focus = focus
        self.attention = attention
        self.head_names = head_names
        self.decimals = decimals
        self.caption = caption
        self.open = open

    def props(self) -> dict:
        """The JSON-ready properties passed to ``CircuitsVis.AttentionHeads``."""
        return {
            "tokens": self.tokens,
            "attention": np.round(self.attention, self.decimals).tolist(),
            "attentionHeadNames": self.head_names,
        }

    def to_html(self, include_bundle: bool = False) -> str:
        """HTML for this view; with the circuitsvis bundle in front when ``include_bundle``."""
        view_id = "toymech-cv-" + uuid.uuid4().hex[:12]
        placeholder = "circuitsvis attention view (needs JavaScript; trust the notebook in JupyterLab)"
        parts = [circuitsvis_bundle_script()] if include_bundle else []
        view = (f'<div id="{view_id}" class="toymech-circuitsvis" style="margin: 15px 0;">'
                f"{html.escape(placeholder)}</div>")
        caption = (f'<p class="toymech-attention-caption">{html.escape(self.caption)}</p>'
                   if self.caption else "")
        if self.open:
            parts.append(f'<div class="toymech-attention">{caption}{view}</div>')
        else:
            n_heads, n_pos, _ = self.attention.shape
            summary = f"Attention patterns: {n_heads} heads on {n_pos} tokens (click to unfold or fold)"
            parts.append(f'<details class="toymech-attention"><summary>{html.escape(summary)}'
                         f"</summary>{caption}{view}</details>")
        parts.append(_RENDER_JS % {"id": _json_for_script(view_id),
                                   "props": _json_for_script(self.props()),
                                   "focus": _json_for_script(self.focus),
                                   "component": self.component})
        return "\n".join(parts)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        include_bundle = not BUNDLES_SENT["circuitsvis"]
        text = self.to_html(include_bundle=include_bundle)
        BUNDLES_SENT["circuitsvis"] = True
        plain = repr(self) + (f"\n{self.caption}" if self.caption else "")
        return {"text/html": text, "text/plain": plain}

    def _repr_html_(self) -> str:
        return self._repr_mimebundle_()["text/html"]

    def __repr__(self) -> str:
        n_heads, n_pos, _ = self.attention.shape
        return f"AttentionView({n_heads} heads x {n_pos} tokens)"


def attention_view(tokens: Sequence[str], attention, head_names: Sequence[str] | None = None,
                   decimals: int = 3, caption: str | None = None, open: bool = True,
                   focus: str | None = None) -> AttentionView:
    """Build an offline circuitsvis attention-heads view.

    Args:
        tokens: the ``n_pos`` token strings, shown on both axes.
        attention: ``torch.Tensor`` or ``np.ndarray`` of shape ``[n_heads, n_pos, n_pos]``
            (query position, key position), e.g. ``cache["pattern", layer][batch_index]``.
        head_names: ``n_heads`` labels; default ``"H0", "H1", ...``.
        decimals: decimal places kept in the page (0 to 8); 3 is enough for a colour scale.
        caption: what to look for, shown above the view (``attention_caption`` builds one from
            measured head scores).
        open: False folds the view into a ``<details>`` element that a click unfolds (it is
            drawn then, offline too); one view per model open, the others folded.
        focus: the name (one of ``head_names``) of the head the view opens on, e.g. the head
            the caption names (``focus_head``); None opens on the first head.
    """
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(
            f"tokens must be a list of str, got {type(tokens).__name__} "
            f"{list(tokens)[:5] if not isinstance(tokens, str) else tokens!r}"
        )
    tokens = list(tokens)
    values = _array(attention)
    expected = f"[n_heads, {len(tokens)}, {len(tokens)}] ([n_heads, n_pos, n_pos] with n_pos = len(tokens))"
    if values.ndim != 3 or values.shape[1:] != (len(tokens), len(tokens)) or values.shape[0] < 1:
        hint = " (for a single head use attention[None])" if values.ndim == 2 else ""
        raise ValueError(f"attention has shape {list(values.shape)}, expected {expected}{hint}")
    if not np.isfinite(values).all():
        raise ValueError("attention contains NaN or infinite values; expected finite numbers")
    n_heads = values.shape[0]
    if head_names is None:
        names = [f"H{h}" for h in range(n_heads)]
    else:
        names = [str(name) for name in head_names]
        if len(names) != n_heads:
            raise ValueError(f"head_names has {len(names)} names, expected {n_heads} (one per head of attention)")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 8:
        raise ValueError(f"decimals={decimals!r} is not allowed; expected an int from 0 to 8")
    if caption is not None and not isinstance(caption, str):
        raise ValueError(f"caption={caption!r} is not allowed: a string or None")
    if not isinstance(open, bool):
        raise ValueError(f"open={open!r} is not allowed: True or False")
    if focus is not None and focus not in names:
        raise ValueError(f"focus={focus!r} is not allowed: None or one of the head names {names}")
    return AttentionView(tokens, values, names, decimals, caption, open, focus)


def _array(x) -> np.ndarray:
    if hasattr(x, "detach"):  # torch.Tensor, without importing torch here
        x = x.detach().to("cpu").double().numpy()
    return np.asarray(x, dtype=np.float64)


# What a high score of each kind means, and where a reader sees it on the view.
KIND_WORDS = {
    "previous": "attends to the previous token: a stripe just below the diagonal",
    "previous-token": "attends to the previous token: a stripe just below the diagonal",
    "duplicate": "attends to earlier copies of the current token",
    "duplicate-token": "attends to earlier copies of the current token",
    "induction": "attends to the token after an earlier copy of the current one: a stripe the "
                 "repeat's period minus one below the diagonal",
    "retrieval": "attends from the query to the matching key or its value",
}


def attention_caption(scores: Mapping[str, Any], *, threshold: float = 0.4,
                      baselines: Mapping[str, float] | None = None, top: int = 3,
                      words: Mapping[str, str] | None = None,
                      head_names: Sequence[str] | None = None) -> str:
    """A caption naming the heads worth looking at and what they do, from their scores only.

    ``scores``: kind -> ``[L, H]`` scores in [0, 1] (e.g. ``{"previous-token": ..., "induction":
    ...}``, TransformerLens' detection scores Σ(A ⊙ D)/ΣA). Per kind, the heads at or above
    ``threshold`` (at most ``top``, highest first) are named with their scores; ``baselines``
    (kind -> the score of uniform attention) is quoted beside them; ``words`` overrides
    ``KIND_WORDS``. When no head reaches ``threshold``, the caption says so and names the
    highest score, so a near-uniform view is called what it is. ``head_names``: one name per
    head, in layer-major order (None: ``L0H1``...).
    """
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0 < threshold <= 1:
        raise ValueError(f"threshold={threshold!r} is not allowed: a number in (0, 1]")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top={top!r} is not allowed: an integer >= 1")
    arrays, names = _checked_scores(scores, head_names)
    words = {**KIND_WORDS, **(words or {})}
    baselines = dict(baselines or {})
    strong, best = _named_heads(arrays, names, threshold, top)
    sentences = []
    for kind, heads in strong:
        flat = arrays[kind].reshape(-1)
        verb = "attends" if len(heads) == 1 else "attend"
        what = words.get(kind, f"scores high on the {kind} pattern")
        what = what.replace("attends", verb, 1) if what.startswith("attends") else what
        values = ", ".join(f"{flat[names.index(h)]:.2f}" for h in heads)
        ref = f"; uniform attention would give {baselines[kind]:.2f}" if kind in baselines else ""
        sentences.append(f"{_join(heads)} {what} ({kind} score {values}{ref}).")
    if not sentences:
        ref = f" (uniform attention: {baselines[best[2]]:.2f})" if best[2] in baselines else ""
        return (f"No head reaches a {', '.join(arrays)} score of {threshold:.2f}: the attention "
                f"here is diffuse. The highest is {best[1]}'s {best[2]} score, {best[0]:.2f}{ref}.")
    return "Worth looking at: " + " ".join(sentences)


def focus_head(scores: Mapping[str, Any], *, threshold: float = 0.4, top: int = 3,
               head_names: Sequence[str] | None = None) -> str:
    """The head ``attention_caption`` names first, with the same ``scores``, ``threshold``,
    ``top`` and ``head_names``: the strongest head of the first kind that has one at
    ``threshold``, else the highest-scoring head, which the caption quotes. A view opened on it
    (``attention_view(focus=...)``) shows what the caption says."""
    arrays, names = _checked_scores(scores, head_names)
    strong, best = _named_heads(arrays, names, threshold, top)
    return strong[0][1][0] if strong else best[1]


def _checked_scores(scores, head_names):
    if not isinstance(scores, Mapping) or not scores:
        raise ValueError(f"scores={scores!r} is not allowed: a non-empty dict kind -> [L, H] scores")
    arrays = {kind: _array(value) for kind, value in scores.items()}
    shape = next(iter(arrays.values())).shape
    for kind, a in arrays.items():
        if a.ndim != 2 or a.shape != shape or not np.isfinite(a).all():
            raise ValueError(f"scores[{kind!r}] has shape {list(a.shape)}: expected finite [L, H] "
                             f"scores, the same shape for every kind ({list(shape)})")
    names = list(head_names) if head_names is not None else [
        f"L{l}H{h}" for l in range(shape[0]) for h in range(shape[1])]
    if len(names) != shape[0] * shape[1]:
        raise ValueError(f"head_names has {len(names)} names, expected {shape[0] * shape[1]} (L * H)")
    return arrays, names


def _named_heads(arrays, names, threshold, top):
    """Per kind in order, the heads at or above ``threshold`` (at most ``top``, highest first),
    and the single highest (score, head, kind) over every kind."""
    strong, best = [], (-1.0, "", "")
    for kind, a in arrays.items():
        flat = a.reshape(-1)
        order = [int(i) for i in np.argsort(-flat, kind="stable")]
        if flat[order[0]] > best[0]:
            best = (float(flat[order[0]]), names[order[0]], kind)
        heads = [names[i] for i in order if flat[i] >= threshold][:top]
        if heads:
            strong.append((kind, heads))
    return strong, best


def _join(items: Sequence[str]) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]
