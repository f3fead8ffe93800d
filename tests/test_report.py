"""toymech.report: papermill execution + offline HTML rendering + the index page."""

from __future__ import annotations

import html
import json
import re
from dataclasses import asdict
from pathlib import Path

import nbformat
import pytest
from plotly.offline import get_plotlyjs

from toymech.report import (
    ReportEntry,
    build_reports,
    external_loads,
    find_scorecard,
    scorecard_counts,
    write_index,
)

FIXTURES = Path(__file__).parent / "fixtures"
OK, FAIL = FIXTURES / "report_ok.ipynb", FIXTURES / "report_fail.ipynb"
SCORECARD = FIXTURES / "report_scorecard.ipynb"  # ends with a real scorecard on made-up numbers
MAX_REPORT_BYTES = 15_000_000


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    entries = build_reports([OK, FAIL, SCORECARD], out_dir=out, size="default", device="cpu", seed=3, trust=False)
    return out, {Path(e.notebook).stem: e for e in entries}


def _page(out: Path, entry: ReportEntry) -> str:
    return (out / entry.html).read_text(encoding="utf-8")


def test_statuses_files_and_sizes(built):
    out, entries = built
    assert entries["report_ok"].status == "ok" and entries["report_ok"].error is None
    assert entries["report_scorecard"].status == "ok"
    assert entries["report_fail"].status == "failed"
    assert entries["report_fail"].error == "RuntimeError: fixture failure on purpose (value=41)"
    for entry in entries.values():
        assert (out / entry.html).is_file() and (out / entry.executed).is_file()
        assert 0 < entry.size_bytes == (out / entry.html).stat().st_size < MAX_REPORT_BYTES
        assert entry.wall_s > 0 and (entry.size, entry.device, entry.seed) == ("default", "cpu", 3)


def test_parameters_injected_into_executed_notebook(built):
    out, entries = built
    nb = nbformat.read(out / entries["report_ok"].executed, as_version=4)
    injected = [c for c in nb.cells if "injected-parameters" in c.metadata.get("tags", [])]
    assert len(injected) == 1
    assert 'size = "default"' in injected[0].source and "seed = 3" in injected[0].source
    printed = [o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert "done: size=default device=cpu seed=3\n" in printed


def test_ok_report_is_self_contained_with_bundles_once(built):
    out, entries = built
    page = _page(out, entries["report_ok"])
    assert external_loads(page) == []
    assert not re.search(r"<script[^>]*\ssrc\s*=", page)
    # plotly.js is there exactly once, compressed (test_display checks that it decodes to it).
    assert page.count('data-toymech-bundle="plotly"') == 1 and get_plotlyjs()[:300] not in page
    assert page.count('data-toymech-bundle="circuitsvis"') == 1
    assert len(re.findall(r'"use strict";var CircuitsVis=', page)) == 1
    assert page.count('class="plotly-graph-div"') == 2
    assert page.count('class="toymech-circuitsvis"') == 1
    # Readers get no progress bar (the widget needs a manager from a CDN; --code shows its
    # final text, see test_report_reader.py).
    assert "steps:\u2007" not in page and "application/vnd.jupyter.widget" not in page
    for absent in ("require.min.js", "require.js", "MathJax.js", "mermaid", "unpkg.com", "jupyter-widgets"):
        assert absent not in page.replace(get_plotlyjs(), ""), absent


def test_failed_report_shows_failing_cell_and_error_first(built):
    out, entries = built
    page = _page(out, entries["report_fail"])
    banner = page.index('class="toymech-failure"')
    first_cell = page.index('class="jp-Cell ')
    assert banner < first_cell
    section = html.unescape(page[banner:first_cell])
    assert "failed at cell In [4]" in section
    assert 'raise RuntimeError(f"fixture failure on purpose (value={value})")' in section
    assert "RuntimeError: fixture failure on purpose (value=41)" in section
    assert 'href="#papermill-error-cell"' in section and 'id="papermill-error-cell"' in page
    assert "An Exception was encountered" not in page  # papermill's own banner is replaced by ours
    assert external_loads(page) == []
    ok_page = _page(out, entries["report_ok"])
    assert 'class="toymech-failure"' not in ok_page


def test_index_lists_every_report(built):
    out, _ = built
    index = (out / "index.html").read_text(encoding="utf-8")
    assert external_loads(index) == []
    reports = index.split('<table id="reports">')[1].split("</table>")[0]
    rows = re.findall(r"<tr>(.*?)</tr>", reports.split("<tbody>")[1], re.S)
    assert len(rows) == 3
    by_name = {re.search(r'href="([^"]+\.html)"', r).group(1): re.findall(r"<td[^>]*>(.*?)</td>", r) for r in rows}
    header = re.findall(r"<th>(.*?)</th>", reports.split("</thead>")[0])
    assert header[:8] == ["report", "ran", "claims", "size", "seeds", "device", "seed", "wall time"]
    ok, failed, card = by_name["report_ok.html"], by_name["report_fail.html"], by_name["report_scorecard.html"]
    # "ran" is whether the notebook ran; the claims' verdicts have their own column.
    assert ok[1] == "ok" and failed[1] == "failed" and card[1] == "ok"
    assert ok[2] == "none" and re.sub(r"<[^>]+>", "", card[2]) == COUNTS
    assert ok[3:7] == ["default", "not recorded", "cpu", "3"]
    assert re.fullmatch(r"\d+\.\d s", ok[7]) and re.fullmatch(r"\d+\.\d MB", ok[8])
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC", ok[9])
    from importlib.metadata import version

    import torch
    import transformer_lens  # noqa: F401

    import toymech

    assert ok[10] == f"torch {torch.__version__}, transformer-lens {version('transformer-lens')}, toymech {toymech.__version__}"
    assert "RuntimeError: fixture failure on purpose" in failed[header.index("error")]
    summary = re.search(r'<p id="summary">(.*?)</p>', index, re.S).group(1)
    assert re.sub(r"<[^>]+>|\s+", " ", summary).split() == \
        f"3 report(s). Ran: 2 ok, 1 failed . Claims: {COUNTS} .".split()
    data = json.loads((out / "index.json").read_text())
    assert {row["status"] for row in data} == {"ok", "failed"}


from toymech.studies.claims import NO_NULL  # noqa: E402  (a claim without a reference)

SCORECARD_ROWS = [  # what the fixture's scorecard shows (seed 3: losses 0.065 .. 0.075, gaps -1, 1, -1)
    ["loss < 0.1 & falling", "the post, <Fig. 2>", "0.08", "0.07 [0.065, 0.075]", NO_NULL, "3/3", "reproduced"],
    ["loss is positive", "table 1", "> 0", "0.07 [0.065, 0.075]", NO_NULL, "3/3", "reproduced"],
    ["the gap is positive", "table 2", "1", "-1 [-1, 1]", NO_NULL, "1/3", "mixed"],
    ["loss above 1", "table 3", "2", "0.07 [0.065, 0.075]", NO_NULL, "0/3", "not reproduced"],
    ["a number nobody measured", "sec. 4", "3", "n/a", NO_NULL, "0/0 (3 not measured)", "not measured"],
]
COUNTS = "2 reproduced, 1 mixed, 1 not reproduced, 1 not measured"


def _table_cells(fragment: str) -> list[list[str]]:
    return [[html.unescape(c) for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
            for row in re.findall(r"<tr>(.*?)</tr>", fragment, re.S)]


def test_scorecard_at_the_top_of_its_report(built):
    out, entries = built
    page = _page(out, entries["report_scorecard"])
    body = page[page.index("<body"):]
    title = body.index('id="Scorecard-fixture"')
    section_start = body.index('<section class="toymech-scorecard" id="toymech-scorecard">')
    section = body[section_start:body.index("</section>", section_start)]
    # Under the title, above the first code cell and its output ("measured ..." is printed there).
    assert title < section_start < body.index('class="jp-Cell jp-CodeCell') < body.index("measured 3 seeds from seed=3")
    assert "<h2>Scorecard</h2>" in section  # size default (smoke's heading: a pipeline check)
    assert f'<p class="toymech-scorecard-counts">{COUNTS}</p>' in section
    header, *rows = _table_cells(section)
    assert header == ["claim", "source", "source's number", "ours", "chance / null", "seeds agreeing",
                      "verdict"]
    assert rows == SCORECARD_ROWS
    # Text is escaped; the cell tagged scorecard is the section itself (moved up, not repeated).
    assert "loss &lt; 0.1 &amp; falling" in section and "<Fig. 2>" not in page
    assert body.count("loss &lt; 0.1 &amp; falling") == 1
    assert external_loads(page) == []
    for name in ("report_ok", "report_fail"):
        assert 'id="toymech-scorecard"' not in _page(out, entries[name])
    # The executed notebook is kept as papermill wrote it: no placeholder cell.
    executed = nbformat.read(out / entries["report_scorecard"].executed, as_version=4)
    assert [c.cell_type for c in executed.cells] == ["markdown", "code", "code", "code", "markdown", "code"]
    assert not any("toymech" in c.metadata for c in executed.cells)


def test_index_shows_each_scorecard_with_counts(built):
    out, entries = built
    index = (out / "index.html").read_text(encoding="utf-8")
    # The overview (ran / claims per report) first, then each scorecard in full.
    assert index.index('<table id="reports">') < index.index('<section id="scorecards">')
    cards = dict(re.findall(r'<div class="scorecard" id="scorecard-([^"]+)">(.*?)</div>', index, re.S))
    assert sorted(cards) == ["report_fail", "report_ok", "report_scorecard"]
    card = cards["report_scorecard"]
    assert '<a href="report_scorecard.html">Scorecard fixture</a> <span class="file">report_scorecard ' \
           '&middot; size default</span>' in card
    assert f'<p class="scorecard-counts">{COUNTS}</p>' in card
    assert _table_cells(card)[1:] == SCORECARD_ROWS
    assert "loss &lt; 0.1 &amp; falling" in card and "<Fig. 2>" not in index
    assert '<a href="report_fail.html">Failing fixture</a>' in cards["report_fail"]
    assert "no scorecard (the run failed before it)" in cards["report_fail"]
    assert "no scorecard (the notebook does not display one)" in cards["report_ok"]
    assert "<table" not in cards["report_fail"] + cards["report_ok"]
    assert external_loads(index) == []
    data = {row["html"]: row for row in json.loads((out / "index.json").read_text())}
    assert data["report_scorecard.html"]["scorecard"]["rows"] == SCORECARD_ROWS
    assert data["report_fail.html"]["scorecard"] is None


def _output_cell(source: str, frame=None, error: bool = False):
    cell = nbformat.v4.new_code_cell(source, execution_count=1)
    if frame is not None:
        cell.outputs = [nbformat.v4.new_output("execute_result", data={"text/html": frame._repr_html_(),
                                                                       "text/plain": repr(frame)}, execution_count=1)]
    if error:
        cell.outputs = [nbformat.v4.new_output("error", ename="KeyError", evalue="x", traceback=[])]
    return cell


def test_find_scorecard_reads_only_the_cell_tagged_scorecard():
    """Only the cell tagged ``scorecard``: an untagged ``.scorecard(`` call or another table
    with a ``verdict`` column (a mechanism table) is no scorecard (a copied notebook's report
    opened with a false one before)."""
    import pandas as pd

    def card(verdict):
        row = {"claim": "c", "ours": "1", "seeds agreeing": "1/1", "verdict": verdict}
        return pd.DataFrame([row]).set_index("claim")

    other = pd.DataFrame({"a": [1, 2]})
    mechanism = _output_cell("mechanism_table(m)", card("mixed"))
    tagged = _output_cell("study.scorecard([study.numbers(m)])", card("reproduced"))
    tagged.metadata["tags"] = ["scorecard"]
    nb = nbformat.v4.new_notebook(cells=[tagged, mechanism, _output_cell("table", other)])
    assert find_scorecard(nb) == {"columns": ["claim", "ours", "seeds agreeing", "verdict"],
                                  "rows": [["c", "1", "1/1", "reproduced"]]}
    # The tagged cell failed: the mechanism table is not taken instead.
    nb.cells[0] = _output_cell("study.scorecard([study.numbers(m)])", error=True)
    nb.cells[0].metadata["tags"] = ["scorecard"]
    assert find_scorecard(nb) is None
    # Untagged, a scorecard call is no scorecard either.
    nb.cells[0] = _output_cell("study.scorecard([study.numbers(m)])", card("reproduced"))
    assert find_scorecard(nb) is None
    assert find_scorecard(nbformat.v4.new_notebook()) is None


def test_scorecard_counts_order_and_unknown_verdicts():
    rows = [["x", v] for v in ("mixed", "reproduced", "odd", "mixed", "not measured")]
    counts = scorecard_counts({"columns": ["claim", "verdict"], "rows": rows})
    assert counts == "1 reproduced, 2 mixed, 1 not measured, 1 other"
    assert scorecard_counts({"columns": ["claim", "value"], "rows": rows}) == ""


def test_write_index_keeps_earlier_scorecards(tmp_path):
    card = {"columns": ["claim", "seeds agreeing", "verdict"], "rows": [["<b>a</b>", "3/3", "reproduced"]]}
    for name in ("a", "b"):
        (tmp_path / f"{name}.html").write_text("x")
    write_index(tmp_path, [ReportEntry(**{**asdict(_entry("a")), "title": "Study A", "scorecard": card})])
    write_index(tmp_path, [_entry("b", status="failed")])  # re-render another notebook
    index = (tmp_path / "index.html").read_text()
    assert '<a href="a.html">Study A</a>' in index and '<p class="scorecard-counts">1 reproduced</p>' in index
    assert "<td>&lt;b&gt;a&lt;/b&gt;</td>" in index and "<b>a</b>" not in index
    assert "no scorecard (the run failed before it)" in index


def _entry(name: str, status: str = "ok") -> ReportEntry:
    return ReportEntry(
        notebook=f"notebooks/{name}.ipynb", html=f"{name}.html", executed=f"executed/{name}.ipynb",
        status=status, size="smoke", device="cpu", seed=0, wall_s=1.0, date="2026-01-01 00:00:00 UTC",
        versions={"torch": "t", "transformer-lens": "tl", "toymech": "tm"},
    )


def test_write_index_keeps_earlier_reports_that_still_exist(tmp_path):
    for name in ("a", "b", "c"):
        (tmp_path / f"{name}.html").write_text("x")
    write_index(tmp_path, [_entry("a"), _entry("b"), _entry("c")])
    (tmp_path / "c.html").unlink()
    write_index(tmp_path, [_entry("a", status="failed")])
    rows = json.loads((tmp_path / "index.json").read_text())
    assert [(r["html"], r["status"]) for r in rows] == [("a.html", "failed"), ("b.html", "ok")]


@pytest.mark.parametrize(
    "snippet, expected",
    [
        ('<script src="https://cdn.example/require.js"></script>', ["https://cdn.example/require.js"]),
        ('<link rel="stylesheet" href="//fonts.example/x.css">', ["//fonts.example/x.css"]),
        ('<script src=""></script>', [""]),
        ("<img src='local.png'>", ["local.png"]),
        ('<style>body { background: url("http://x.example/a.png") }</style>', ["http://x.example/a.png"]),
        ('<style>@import "https://x.example/a.css";</style>', ["https://x.example/a.css"]),
        ('<script type="module">import { render } from "https://unpkg.com/cv/esm.js";</script>', ["https://unpkg.com/cv/esm.js"]),
        ('<script>import("https://x.example/m.js")</script>', ["https://x.example/m.js"]),
        ('<a href="https://arxiv.org/abs/1">paper</a> <a href="#top">top</a>', []),
        ('<img src="data:image/png;base64,AAAA">', []),
    ],
)
def test_external_loads_detects_loads_not_links(snippet, expected):
    assert external_loads(f"<html><body>{snippet}</body></html>") == expected


def test_bad_arguments_rejected_before_running(tmp_path):
    bare = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("size = 'smoke'")])
    nbformat.write(bare, tmp_path / "bare.ipynb")
    cases = [
        (dict(notebooks=[tmp_path / "missing.ipynb"]), r"missing.ipynb' does not exist"),
        (dict(notebooks=[FIXTURES / "report_ok.py"]), r"expected a .ipynb file"),
        (dict(notebooks=[]), r"notebooks is empty"),
        (dict(notebooks=[OK], device="gpu"), r"device='gpu' is not allowed: one of auto, cpu, cuda, cuda:N"),
        (dict(notebooks=[OK], size="a b"), r"size='a b' is not allowed: one of smoke, default, paper"),
        (dict(notebooks=[OK], n_seeds=0), r"n_seeds=0 is not allowed: an integer in 1\.\.1,000$"),
        (dict(notebooks=[OK], n_seeds=True), r"n_seeds=True is not allowed"),
        (dict(notebooks=[OK], n_seeds=2), r"does not define parameter\(s\) n_seeds .*n_seeds=2 cannot reach it"),
        (dict(notebooks=[OK], extra_parameters={"n_seeds": 2}), r"extra parameter 'n_seeds' is set by its own argument"),
        (dict(notebooks=[OK], extra_parameters={"n_seeds": 2}), r"extra parameter 'n_seeds' is set by its own argument"),
        (dict(notebooks=[OK], seed=-1), r"seed=-1 is not allowed"),
        (dict(notebooks=[OK], extra_parameters={"size": "x"}), r"extra parameter 'size' is set by its own argument"),
        (dict(notebooks=[OK], extra_parameters={"steps": 3}), r"does not define parameter\(s\) steps .*defines: size, device, seed"),
        (dict(notebooks=[tmp_path / "bare.ipynb"]), r"does not define parameter\(s\) size, device, seed .*no cell tagged 'parameters'"),
        (dict(notebooks=[OK, OK]), r"would write the same report name"),
    ]
    for kwargs, message in cases:
        with pytest.raises(ValueError, match=message):
            build_reports(out_dir=tmp_path / "out", **kwargs)
    assert not (tmp_path / "out").exists()


def test_figures_without_html_are_flagged_in_the_report():
    from toymech.report import render_html
    from toymech.report.reader_page import bare_figures

    cell = nbformat.v4.new_code_cell("fig", execution_count=1)
    cell.outputs = [nbformat.v4.new_output("display_data", data={"application/vnd.plotly.v1+json": {"data": []}})]
    run = {"notebook": "x.ipynb", "status": "ok", "size": "smoke", "device": "cpu", "seed": 0, "wall_s": 1.0,
           "date": "today", "versions": {"torch": "t", "transformer-lens": "tl", "toymech": "tm"}, "failure": None}
    nb = nbformat.v4.new_notebook(cells=[cell])
    assert bare_figures(nb) == 1
    notes = ["1 plotly figure(s) carry no HTML and are missing from this page"]
    with pytest.warns(UserWarning, match="not able to be represented"):  # nbconvert drops it
        page = render_html(nb, {**run, "notes": notes}, code=True)
    assert '<div class="toymech-note">1 plotly figure(s) carry no HTML' in page
    assert "toymech-note" not in render_html(nbformat.v4.new_notebook(), {**run, "notes": []}).split("</style>")[-1]


def test_parallel_jobs_keep_order_and_results(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("TOYMECH_THREADS", raising=False)
    monkeypatch.chdir(FIXTURES.parent)  # relative paths, as a user types them
    entries = build_reports([f"fixtures/{OK.name}", f"fixtures/{FAIL.name}"], out_dir=tmp_path,
                            size="default", device="cpu", seed=3, trust=False, jobs=2)
    assert [Path(e.notebook).stem for e in entries] == ["report_ok", "report_fail"]
    assert [e.status for e in entries] == ["ok", "failed"]
    index = json.loads((tmp_path / "index.json").read_text())
    assert sorted(row["status"] for row in index) == ["failed", "ok"]
    import os
    assert not {"OMP_NUM_THREADS", "TOYMECH_THREADS", "TOYMECH_THREADS_AUTO"} & set(os.environ)
    with pytest.raises(ValueError, match="jobs=0"):
        build_reports([OK], out_dir=tmp_path, jobs=0)


def test_index_front_page_states_each_finding_and_drops_empty_columns(tmp_path):
    (tmp_path / "a.html").write_text("a")
    entry = ReportEntry(**{**asdict(_entry("a")), "title": "Study A",
                           "finding": ["At 6 of the paper's 10,000 steps, the head forms.",
                                       "This is a pipeline check at size smoke."]})
    write_index(tmp_path, [entry])
    index = (tmp_path / "index.html").read_text()
    study = index.split('<article class="study" id="study-a">')[1].split("</article>")[0]
    assert '<p class="finding">At 6 of the paper&#39;s 10,000 steps, the head forms.</p>' in study
    assert "pipeline check" in study and 'href="a.html">report</a>' in study
    header = re.findall(r"<th>(.*?)</th>", index.split('<table id="reports">')[1].split("</thead>")[0])
    assert "error" not in header and "parameters" not in header and "versions" in header


def test_a_variant_report_never_replaces_the_plain_one(tmp_path):
    """A notebook's report with a ``variant`` gets a name of its own (the notebook's stem and
    the knobs it changes), so the plain report of the same notebook in the same folder is kept
    as it was, and so is another variant's; the index lists each."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell('size = "smoke"\ndevice = "auto"\nseed = 0\nvariant = None',
                                          metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell('print(f"variant: {variant}")')]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    path = tmp_path / "knobbed.ipynb"
    nbformat.write(nb, path)
    out = tmp_path / "reports"
    plain, = build_reports([path], out_dir=out, size="smoke", device="cpu", trust=False)
    before = (out / plain.html).read_bytes()
    one, = build_reports([path], out_dir=out, size="smoke", device="cpu", trust=False,
                         extra_parameters={"variant": {"offset": "0-3", "block_len": "4-8"}})
    two, = build_reports([path], out_dir=out, size="smoke", device="cpu", trust=False,
                         extra_parameters={"variant": {"block_len": 5}})
    assert plain.html == "knobbed.html"
    assert one.html == "knobbed@block_len=4-8,offset=0-3.html"
    assert two.html == "knobbed@block_len=5.html"
    assert one.executed == "executed/knobbed@block_len=4-8,offset=0-3.ipynb"
    assert (out / plain.html).read_bytes() == before  # the plain report as it was
    for entry, said in ((plain, "variant: None"), (one, "'block_len': '4-8'"),
                        (two, "'block_len': 5")):
        assert said in (out / entry.executed).read_text(encoding="utf-8"), entry.html
    rows = json.loads((out / "index.json").read_text(encoding="utf-8"))
    assert sorted(r["html"] for r in rows) == sorted([plain.html, one.html, two.html])


def test_a_study_variants_report_name_is_its_settings_canonical_key():
    """A study notebook's variant is named by the knobs its setting changes (the study's
    ``with_knobs``: canonical values, the knob table's order); the source's values are the
    plain setting, with the plain name."""
    from toymech.report.checks import report_name

    notebook = Path(__file__).parents[1] / "notebooks" / "01_induction_repeated_blocks.ipynb"
    stem = notebook.stem
    assert report_name(notebook, "smoke") == stem
    assert report_name(notebook, "smoke", {"offset": "0-3", "block_len": "4-8"}) == \
        f"{stem}@block_len=4-8,offset=0-3"
    assert report_name(notebook, "smoke", {"block_len": [8, 4, 6]}) == f"{stem}@block_len=4+6+8"
    assert report_name(notebook, "default", {"block_len": 6}) == stem  # the source's value
    assert report_name(notebook, "default", {"block_len": 6, "offset": 2}) == f"{stem}@offset=2"
    with pytest.raises(ValueError, match="block_len"):
        report_name(notebook, "smoke", {"block_len": "nine"})


def test_the_header_shows_no_path_of_the_machine_that_wrote_the_page(tmp_path):
    """A parameter holding an absolute path (a map page's ``table``) is shown as ``<path>/`` and
    its file name: a page on the site names nothing of the machine that built it."""
    from toymech.report.build import _shown

    table = tmp_path / "maps" / "s1-capacity-default-cpu.csv"
    assert _shown("table", str(table)) == "'<path>/s1-capacity-default-cpu.csv'"
    assert str(tmp_path) not in _shown("cache_dir", tmp_path)
    assert _shown("table", "docs/maps/a.csv") == "'docs/maps/a.csv'"  # the repository's own
    assert _shown("variant", {"block_len": "4-8"}) == "block_len=4-8"
    assert _shown("label", None) == "None"
