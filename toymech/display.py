"""Notebook display layer: offline plotly figures and circuitsvis attention views.

Two constraints shape this module (measured with transformer-lens 3.9, circuitsvis 1.43,
papermill 2.7 and nbconvert 7.17):

* Rendered reports must open with no network. Plotly's default renderer under papermill emits only
  the plotly mimetype, which nbconvert drops, and circuitsvis' own ``_repr_html_`` either imports
  from a CDN or inlines its 1.3 MB bundle on *every* view. So both libraries are rendered here,
  with their JavaScript bundle sent once per kernel and every later output reusing it.
* JupyterLab renders the plotly mimetype even in untrusted notebooks, so figures carry both the
  mimetype (for JupyterLab) and ``text/html`` (for nbconvert / static HTML).

"Once per kernel" is module state: one kernel is one process, and the first output that carries
a bundle appears above every output that relies on it when the notebook runs top to bottom.

circuitsvis views need their scripts to run: JupyterLab runs them for outputs made in the open
session and for trusted notebooks (``toymech.report.build_reports`` signs the notebooks it
executes); an untrusted view shows a one-line hint instead of staying blank.
"""

from __future__ import annotations

import html
import json
import re
import uuid
import warnings
from pathlib import Path
from typing import Any, Sequence

import numpy as np

__all__ = ["setup_notebook", "attention_view", "AttentionView", "reset_bundles", "RENDERER_NAME"]

RENDERER_NAME = "toymech"

# Shared state, not attributes of the renderer: plotly copies renderer objects on every render,
# so a flag stored on the renderer instance would never be seen by the next figure.
_SENT = {"plotly.js": False, "circuitsvis": False}

# TransformerLens 3.9 warns on every HookedTransformer construction and on `transformer_lens.utils`
# imports; in a notebook each warning shows as a red box under the cell that built a toy model.
_TL_DEPRECATION_MESSAGES = (
    r"HookedTransformer is deprecated",
    r"HookedRootModule is deprecated",
    r"The 'utils' module has been deprecated",
)


def reset_bundles() -> None:
    """Forget that plotly.js / the circuitsvis bundle were sent, so the next output re-sends them.

    Needed only when the output that carried a bundle was cleared from a live notebook page.
    """
    _SENT["plotly.js"] = False
    _SENT["circuitsvis"] = False


# --------------------------------------------------------------------------------------------
# plotly
# --------------------------------------------------------------------------------------------


def _renderer_class():
    # Imported lazily: `import toymech.display` should not pull in plotly's IO machinery.
    from plotly.io.base_renderers import MimetypeRenderer, PlotlyRenderer

    class OfflineDualRenderer(MimetypeRenderer):
        """Emit the plotly mimetype and ``text/html`` with plotly.js included the first time only."""

        def __init__(self, config: dict | None = None):
            self.config = dict(config) if config else {}

        def to_mimebundle(self, fig_dict: dict) -> dict:
            import plotly.io as pio

            bundle = PlotlyRenderer(config=self.config).to_mimebundle(dict(fig_dict))
            include_js = not _SENT["plotly.js"]
            # include_mathjax=False: plotly's own HTML renderer asks for MathJax from a CDN.
            bundle["text/html"] = pio.to_html(
                fig_dict,
                config=self.config,
                include_plotlyjs=include_js,
                include_mathjax=False,
                full_html=False,
                default_width="100%",
                default_height=525,
                validate=False,
            )
            _SENT["plotly.js"] = True
            return bundle

    return OfflineDualRenderer


def setup_notebook(silence_deprecations: bool = True) -> None:
    """Prepare a notebook kernel for offline figures; safe to call any number of times.

    Registers and activates the ``"toymech"`` plotly renderer (plotly mimetype + offline
    ``text/html``) and, by default, hides TransformerLens' deprecation warnings.
    """
    import plotly.io as pio

    if RENDERER_NAME not in pio.renderers:
        pio.renderers[RENDERER_NAME] = _renderer_class()()
    pio.renderers.default = RENDERER_NAME
    if silence_deprecations:
        for message in _TL_DEPRECATION_MESSAGES:
            warnings.filterwarnings("ignore", message=message, category=DeprecationWarning)


# --------------------------------------------------------------------------------------------
# circuitsvis
# --------------------------------------------------------------------------------------------


def _circuitsvis_bundle_path() -> Path:
    import circuitsvis

    return Path(circuitsvis.__file__).parent / "dist" / "cdn" / "iife.js"


def _circuitsvis_bundle_script() -> str:
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
# front ends), then replaces the placeholder with the rendered React component.
_RENDER_JS = """<script>
(function () {
  var id = %(id)s, props = %(props)s, tries = 0;
  function draw() {
    var el = document.getElementById(id);
    if (!el) { return; }
    if (!window.CircuitsVis) {
      if (tries++ < 100) { setTimeout(draw, 50); return; }
      el.textContent = "circuitsvis bundle missing: run toymech.display.reset_bundles() and re-run this cell";
      return;
    }
    el.textContent = "";
    window.CircuitsVis.render(id, window.CircuitsVis.%(component)s, props);
  }
  draw();
})();
</script>"""


class AttentionView:
    """A circuitsvis attention-heads view that renders offline; display it as a cell's last value.

    ``attention`` is ``[n_heads, n_pos, n_pos]`` (query position, key position); values are rounded
    to ``decimals`` places to keep reports small.
    """

    component = "AttentionHeads"

    def __init__(
        self,
        tokens: list[str],
        attention: np.ndarray,
        head_names: list[str],
        decimals: int,
    ):
        self.tokens = tokens
        self.attention = attention
        self.head_names = head_names
        self.decimals = decimals

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
        parts = [_circuitsvis_bundle_script()] if include_bundle else []
        parts.append(
            f'<div id="{view_id}" class="toymech-circuitsvis" style="margin: 15px 0;">'
            f"{html.escape(placeholder)}</div>"
        )
        parts.append(
            _RENDER_JS
            % {
                "id": _json_for_script(view_id),
                "props": _json_for_script(self.props()),
                "component": self.component,
            }
        )
        return "\n".join(parts)

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        include_bundle = not _SENT["circuitsvis"]
        text = self.to_html(include_bundle=include_bundle)
        _SENT["circuitsvis"] = True
        return {"text/html": text, "text/plain": repr(self)}

    def _repr_html_(self) -> str:
        return self._repr_mimebundle_()["text/html"]

    def __repr__(self) -> str:
        n_heads, n_pos, _ = self.attention.shape
        return f"AttentionView({n_heads} heads x {n_pos} tokens)"


def attention_view(
    tokens: Sequence[str],
    attention,
    head_names: Sequence[str] | None = None,
    decimals: int = 3,
) -> AttentionView:
    """Build an offline circuitsvis attention-heads view.

    Args:
        tokens: the ``n_pos`` token strings, shown on both axes.
        attention: ``torch.Tensor`` or ``np.ndarray`` of shape ``[n_heads, n_pos, n_pos]``
            (query position, key position), e.g. ``cache["pattern", layer][batch_index]``.
        head_names: ``n_heads`` labels; default ``"H0", "H1", ...``.
        decimals: decimal places kept in the page (0 to 8); 3 is enough for a colour scale.
    """
    if isinstance(tokens, str) or not all(isinstance(t, str) for t in tokens):
        raise ValueError(
            f"tokens must be a list of str, got {type(tokens).__name__} "
            f"{list(tokens)[:5] if not isinstance(tokens, str) else tokens!r}"
        )
    tokens = list(tokens)
    if hasattr(attention, "detach"):  # torch.Tensor, without importing torch here
        attention = attention.detach().to("cpu").double().numpy()
    values = np.asarray(attention, dtype=np.float64)
    expected = f"[n_heads, {len(tokens)}, {len(tokens)}] ([n_heads, n_pos, n_pos] with n_pos = len(tokens))"
    if values.ndim != 3 or values.shape[1:] != (len(tokens), len(tokens)) or values.shape[0] < 1:
        hint = " (for a single head use attention[None])" if values.ndim == 2 else ""
        raise ValueError(
            f"attention has shape {list(values.shape)}, expected {expected}{hint}"
        )
    if not np.isfinite(values).all():
        raise ValueError("attention contains NaN or infinite values; expected finite numbers")
    n_heads = values.shape[0]
    if head_names is None:
        names = [f"H{h}" for h in range(n_heads)]
    else:
        names = [str(name) for name in head_names]
        if len(names) != n_heads:
            raise ValueError(
                f"head_names has {len(names)} names, expected {n_heads} (one per head of attention)"
            )
    if isinstance(decimals, bool) or not isinstance(decimals, int) or not 0 <= decimals <= 8:
        raise ValueError(f"decimals={decimals!r} is not allowed; expected an int from 0 to 8")
    return AttentionView(tokens, values, names, decimals)
