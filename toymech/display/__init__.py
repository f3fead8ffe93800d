"""Notebook display layer: offline plotly figures and circuitsvis attention views.

Two constraints shape this module (measured with transformer-lens 3.9, circuitsvis 1.43,
papermill 2.7 and nbconvert 7.17):

* Rendered reports must open with no network. Plotly's default renderer under papermill emits only
  the plotly mimetype, which nbconvert drops, and circuitsvis' own ``_repr_html_`` either imports
  from a CDN or inlines its 1.3 MB bundle on *every* view. So both libraries are rendered here,
  with their JavaScript bundle sent once per kernel and every later output reusing it.
* JupyterLab renders the plotly mimetype even in untrusted notebooks, so figures carry both the
  mimetype (for JupyterLab) and ``text/html`` (for nbconvert / static HTML). In the HTML, plotly.js
  comes once per page gzip-compressed (``bundle``: 1.96 MB instead of 4.8 MB) and each figure
  waits for it to decompress.

"Once per kernel" is module state: one kernel is one process, and the first output that carries
a bundle appears above every output that relies on it when the notebook runs top to bottom.

circuitsvis views need their scripts to run: JupyterLab runs them for outputs made in the open
session and for trusted notebooks (``toymech.report.build_reports`` signs the notebooks it
executes); an untrusted view shows a one-line hint instead of staying blank.
"""

from __future__ import annotations

import warnings

from ..devices import rebalance
from .attention import (
    BUNDLES_SENT,
    KIND_WORDS,
    AttentionView,
    attention_caption,
    attention_view,
    circuitsvis_bundle_script,
    focus_head,
)
from .bundle import defer_figure, plotly_bundle_script
from .prose import FACTS_MIME, Facts, Note, duration_text, facts, note
from .scorecard import SCORECARD_MIME, ScorecardView, scorecard
from .tables import RAW_TABLE_MIME, ReaderTable, reader_table

__all__ = ["setup_notebook", "attention_view", "attention_caption", "focus_head", "AttentionView", "note",
           "facts", "duration_text", "reset_bundles", "RENDERER_NAME", "FACTS_MIME",
           "scorecard", "SCORECARD_MIME", "reader_table", "ReaderTable", "RAW_TABLE_MIME",
           "MIN_FIGURE_HEIGHT"]

RENDERER_NAME = "toymech"
# No figure is drawn lower than this in notebooks and reports (px): below it axis titles,
# legends and colour bars overlap. Figure builders aim higher; this is the floor.
MIN_FIGURE_HEIGHT = 240

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
    BUNDLES_SENT["plotly.js"] = False
    BUNDLES_SENT["circuitsvis"] = False


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

            fig_dict = _with_min_height(fig_dict)
            bundle = PlotlyRenderer(config=self.config).to_mimebundle(dict(fig_dict))
            include_js = not BUNDLES_SENT["plotly.js"]
            # include_mathjax=False: plotly's own HTML renderer asks for MathJax from a CDN.
            figure = pio.to_html(
                fig_dict,
                config=self.config,
                include_plotlyjs=False,
                include_mathjax=False,
                full_html=False,
                default_width="100%",
                default_height=525,
                validate=False,
            )
            # plotly.js travels once per page, compressed; every figure waits for it.
            bundle["text/html"] = (plotly_bundle_script() if include_js else "") + defer_figure(figure)
            BUNDLES_SENT["plotly.js"] = True
            return bundle

    return OfflineDualRenderer


def _with_min_height(fig_dict: dict) -> dict:
    layout = fig_dict.get("layout") or {}
    height = layout.get("height")
    if isinstance(height, (int, float)) and height < MIN_FIGURE_HEIGHT:
        return {**fig_dict, "layout": {**layout, "height": MIN_FIGURE_HEIGHT}}
    return fig_dict


def setup_notebook(silence_deprecations: bool = True) -> None:
    """Prepare a notebook kernel for offline figures; safe to call any number of times.

    Registers and activates the ``"toymech"`` plotly renderer (plotly mimetype + offline
    ``text/html``) and, with ``silence_deprecations``, hides TransformerLens' deprecation
    warnings. In an IPython
    kernel it also follows the free cores before every cell (``devices.rebalance``, quietly):
    the training loop does so at its evaluation steps, but a notebook's analysis cells (the
    learning coefficient, patching) would otherwise keep the threads it took when the machine
    was free, and two threads beside a sweep's workers ran the analysis about five times slower.
    """
    import plotly.io as pio

    _rebalance_before_cells()

    if RENDERER_NAME not in pio.renderers:
        pio.renderers[RENDERER_NAME] = _renderer_class()()
    pio.renderers.default = RENDERER_NAME
    if silence_deprecations:
        for message in _TL_DEPRECATION_MESSAGES:
            warnings.filterwarnings("ignore", message=message, category=DeprecationWarning)


def _on_cell(*_args) -> None:
    try:
        rebalance(log=None)
    except Exception:
        pass


def _rebalance_before_cells(shell=None) -> bool:
    """Register ``_on_cell`` for IPython's ``pre_run_cell`` once (True when registered now)."""
    if shell is None:
        try:
            from IPython import get_ipython
        except ImportError:
            return False
        shell = get_ipython()
    events = getattr(shell, "events", None)
    if events is None or _on_cell in events.callbacks.get("pre_run_cell", []):
        return False
    events.register("pre_run_cell", _on_cell)
    return True
