"""Every report and the index at size smoke, read by the rules of toymech.report.page_rules in a
1,280 x 1,600 Chromium window: no NaN cell, no Python repr, no internal key, no table wider than
its room, no empty column, no tick label under 10 px, no cut axis title, no instruction to edit
a parameter. Each rule is first shown to fail on a hand-made page that breaks it. Uses
test_browser's fixtures."""

from __future__ import annotations

import pandas as pd
import pytest
from reading_pages import page_violations
from test_browser import PROJECT_NOTEBOOKS, browser, monkeypatch_module  # noqa: F401

from toymech.report import page_rules

pytestmark = pytest.mark.browser


def _figure_html(y_title="token", **layout) -> str:
    import plotly.graph_objects as go

    from toymech import display

    display.reset_bundles()  # each page carries plotly.js
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]], x=["L0H0", "L0H1"], y=["a", "b"]),
                    layout=dict(title="bad", xaxis_title="head", yaxis_title=y_title, **layout))
    return display._renderer_class()().to_mimebundle(fig.to_dict())["text/html"]


_BAD = {
    "nan": lambda: "<table><thead><tr><th>loss</th></tr></thead><tbody><tr><td>nan</td></tr></tbody></table>",
    "repr": lambda: "<p>per seed {1: 0.155, 2: 0.2}</p>",
    "internal-key": lambda: "<table><thead><tr><th>qcomp_max</th></tr></thead><tbody><tr><td>0.2</td></tr></tbody></table>",
    "wide-table": lambda: "<table style='width:2400px'><tbody><tr><td>a</td></tr></tbody></table>",
    "empty-column": lambda: "<table><tbody><tr><td>a</td><td></td></tr><tr><td>b</td><td></td></tr></tbody></table>",
    "small-tick": lambda: _figure_html(xaxis_tickfont_size=7),
    # a rotated y title longer than the figure is high runs out of its SVG at both ends
    "cut-title": lambda: _figure_html(y_title="the token whose attention pattern each row shows " * 3, height=260),
    "instruction": lambda: '<p>Not run. Add "llc" to <code>also</code> to train it.</p>',
}


@pytest.mark.parametrize("rule", page_rules.RULES)
def test_each_rule_fails_on_a_page_made_to_break_it(browser, tmp_path, rule):
    page = tmp_path / f"{rule}.html"
    page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{_BAD[rule]()}</body></html>")
    found = page_violations(browser, page)
    assert rule in {v.rule for v in found}, found


@pytest.mark.parametrize("notebook", [p.stem for p in PROJECT_NOTEBOOKS] + ["index"])
def test_smoke_reports_break_no_reader_rule(smoke_reports, browser, notebook):
    page = smoke_reports.out / "index.html" if notebook == "index" else smoke_reports.html(notebook)
    found = page_violations(browser, page)
    assert found == [], "\n".join(map(str, found))


def test_smoke_map_page_breaks_no_reader_rule(smoke_map_page, browser):
    """The map's page: every cell's ``toymech.explore`` line is code to paste, shown in a
    ``<code>`` of ``CODE_CLASS``; nothing else on the page breaks a rule."""
    from toymech.display.tables import CODE_CLASS

    found = page_violations(browser, smoke_map_page)
    assert found == [], "\n".join(map(str, found))
    assert smoke_map_page.read_text().count(f'<code class="{CODE_CLASS}">toymech.explore(') == 4


def test_only_a_tables_line_of_code_is_left_out_of_the_repr_rule(browser, tmp_path):
    """The same repr is flagged in prose and in any other ``<code>``, and not in a table's line
    of code (``reader_table(..., code=...)``)."""
    from toymech.display import reader_table

    line = 'f(variant={"block_len": "4-8"})'
    table = reader_table(pd.DataFrame({"open": [line]}), caption="A line", code=["open"]).html()
    for body, flagged in ((f"<p>{line}</p>", True), (f"<p><code>{line}</code></p>", True),
                          (table, False)):
        page = tmp_path / "page.html"
        page.write_text(f"<!DOCTYPE html><html><head><meta charset='utf-8'></head><body>{body}</body></html>")
        assert ("repr" in {v.rule for v in page_violations(browser, page)}) is flagged, body
