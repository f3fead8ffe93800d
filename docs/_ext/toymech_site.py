"""The site's figures and reports, offline, with one copy of each script for the whole site.

- ``toymech-figure PATH``: a plotly figure stored as JSON (``toymech results --pages`` writes
  them under ``docs/results/figures/``; a path starting with ``/`` is from ``docs/``), drawn in
  the page by ``_static/toymech/figures.js`` with the site's plotly.js. Only the pages that hold
  a figure load plotly.js.
- At the end of a build, ``_static/toymech/`` receives plotly.js (from the installed plotly
  package), the circuitsvis bundle and ``figures.js``, and ``reports/`` the reports of
  ``docs/reports/`` (``toymech site-reports`` put them there without their scripts, which they
  load from ``_static/toymech/``).
"""

from __future__ import annotations

import html
import shutil
from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import Directive

STATIC = "toymech"  # under _static
FIGURES_JS = """document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll("script.toymech-figure-data").forEach(function (data) {
    var el = document.getElementById(data.getAttribute("data-for"));
    if (!el) { return; }
    if (!window.Plotly) {
      el.textContent = "figure not drawn: the site's plotly.js did not load";
      return;
    }
    var fig = JSON.parse(data.textContent);
    window.Plotly.newPlot(el, fig.data, fig.layout || {}, {responsive: true, displaylogo: false});
  });
});
"""


class figure_node(nodes.General, nodes.Element):
    """A figure's place in a page (its HTML written by ``visit_figure``)."""


class Figure(Directive):
    """``toymech-figure PATH``: the plotly figure stored as JSON at ``PATH``."""

    required_arguments = 1

    def run(self):
        env = self.state.document.settings.env
        rel, path = env.relfn2path(self.arguments[0], env.docname)
        env.note_dependency(rel)
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError:
            raise self.error(f"toymech-figure: no figure at {self.arguments[0]} (run toymech "
                             "results --pages)")
        node = figure_node()
        node["figure"] = text.replace("</", "<\\/")  # JSON's own escape: never ends the script
        node["id"] = f"toymech-figure-{env.new_serialno('toymech-figure')}"
        return [node]


def visit_figure(self, node):
    height = 420
    self.body.append(
        f'<div class="toymech-figure" id="{node["id"]}" style="width:100%;min-height:{height}px">'
        f'</div><script type="application/json" class="toymech-figure-data" '
        f'data-for="{html.escape(node["id"])}">{node["figure"]}</script>')
    raise nodes.SkipNode


def skip(self, node):
    raise nodes.SkipNode


def add_scripts(app, pagename, templatename, context, doctree):
    """Load plotly.js and ``figures.js`` on a page that holds a figure (and only there)."""
    if doctree is not None and next(iter(doctree.findall(figure_node)), None) is not None:
        app.add_js_file(f"{STATIC}/plotly.min.js")
        app.add_js_file(f"{STATIC}/figures.js")


def copy_shared(app, exception):
    """The site's one copy of each script, and its reports."""
    if exception is not None or app.builder.format != "html":
        return
    from toymech.report.site import shared_scripts

    static = Path(app.outdir) / "_static" / STATIC
    static.mkdir(parents=True, exist_ok=True)
    for name, text in {**shared_scripts(), "figures.js": FIGURES_JS}.items():
        target = static / name
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
    reports = Path(app.srcdir) / "reports"
    if reports.is_dir():
        out = Path(app.outdir) / "reports"
        out.mkdir(parents=True, exist_ok=True)
        for page in reports.glob("*.html"):
            shutil.copyfile(page, out / page.name)


def setup(app):
    app.add_node(figure_node, html=(visit_figure, None), latex=(skip, None), text=(skip, None),
                 man=(skip, None), texinfo=(skip, None))
    app.add_directive("toymech-figure", Figure)
    app.connect("html-page-context", add_scripts)
    app.connect("build-finished", copy_shared)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
