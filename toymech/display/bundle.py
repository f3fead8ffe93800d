"""plotly.js sent once per page, gzip-compressed: 4.8 MB of source become 1.96 MB of base64 that the
page decompresses itself (the browser's ``DecompressionStream``), so a report stays one
self-contained file at well under half the weight.

The page defines ``window.toymechPlotly``, a promise of ``window.Plotly``; every figure's script
waits on it (``defer_figure``). Only the static HTML uses this: JupyterLab draws figures from the
plotly mimetype with its own plotly.js.
"""

from __future__ import annotations

import base64
import functools
import gzip
import re

BUNDLE_ATTRIBUTE = 'data-toymech-bundle="plotly"'

# Decode, decompress, then run plotly.js as a classic script (its UMD wrapper then sets
# window.Plotly, as require.js is not on the page). A browser without DecompressionStream (older
# than 2023) gets a message in place of each figure.
_LOADER = """<script %(attr)s>
window.toymechPlotly = window.toymechPlotly || (function () {
  if (typeof DecompressionStream === "undefined") {
    return Promise.reject(new Error("this browser cannot decompress the page's plotly.js"));
  }
  // fetch() of a data: URL decodes the base64 natively (a loop over atob's characters is slow).
  return fetch("data:application/gzip;base64,%(data)s").then(function (response) {
    return new Response(response.body.pipeThrough(new DecompressionStream("gzip"))).text();
  }).then(function (source) {
    var script = document.createElement("script");
    script.textContent = source;
    document.head.appendChild(script);
    return window.Plotly;
  });
})();
</script>"""

# The one inline script of a figure that calls Plotly.newPlot (never reaching into the next one).
_FIGURE_SCRIPT = re.compile(r"(<script\b[^>]*>)((?:(?!</script>).)*?Plotly\.newPlot(?:(?!</script>).)*)(</script>)", re.S)
_WAIT = """(window.toymechPlotly || Promise.resolve()).then(function () {%s
}).catch(function (error) {
  document.querySelectorAll(".plotly-graph-div").forEach(function (el) {
    if (!el.children.length) { el.textContent = "figure not drawn: " + error.message; }
  });
});"""


@functools.lru_cache(maxsize=1)
def plotly_bundle_script() -> str:
    """The page's one copy of plotly.js, compressed (see the module docstring)."""
    from plotly.offline import get_plotlyjs

    packed = gzip.compress(get_plotlyjs().encode("utf-8"), compresslevel=9, mtime=0)
    return _LOADER % {"attr": BUNDLE_ATTRIBUTE, "data": base64.b64encode(packed).decode("ascii")}


def defer_figure(html: str) -> str:
    """A figure's HTML (``plotly.io.to_html(include_plotlyjs=False)``) whose drawing waits for the
    page's plotly.js."""
    return _FIGURE_SCRIPT.sub(lambda m: m.group(1) + _WAIT % m.group(2) + m.group(3), html)
