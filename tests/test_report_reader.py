"""The reader's report (toymech.report.reader_page), the seeds parameter, the cost table and the live
progress of toymech report."""

from __future__ import annotations

import html
import io
import json
import re
from pathlib import Path

import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

from toymech.display import FACTS_MIME
from toymech.report import CostTable, LiveProgress, build_reports, prepare, time_table
from toymech.report.costs import estimate_left
from toymech.report.reader_page import looks_like_repr
from toymech.report.scorecards import scorecard_counts, verdict_counts, verdict_word

FIXTURES = Path(__file__).parent / "fixtures"
READER, OK = FIXTURES / "report_reader.ipynb", FIXTURES / "report_ok.ipynb"


@pytest.fixture(scope="module")
def reader(tmp_path_factory):
    """The reader fixture rendered twice from one execution folder: for readers, and with --code."""
    out = tmp_path_factory.mktemp("reader")
    [entry] = build_reports([READER], out_dir=out, size="smoke", device="cpu", seed=0, trust=False)
    [coded] = build_reports([READER], out_dir=out / "code", size="smoke", device="cpu", seed=0,
                            n_seeds=3, code=True, trust=False)
    return out, entry, (out / entry.html).read_text(encoding="utf-8"), \
        (out / "code" / coded.html).read_text(encoding="utf-8"), coded


def _visible(page: str) -> str:
    """The page without its scripts and styles (what a reader can read)."""
    return re.sub(r"<(script|style)\b.*?</\1>", "", page, flags=re.S)


def test_reader_page_has_no_code_logs_or_bare_values(reader):
    _, entry, page, _, _ = reader
    assert entry.ok, entry.error
    text = _visible(page)
    assert "jp-InputArea-editor" not in text  # no code cell input at all
    for hidden in ("[toymech]", "a warning a reader does not need", "printed bare",
                   "extremes not in also: skipped", "steps:\u2007", "run facts:", 'size = "smoke"'):
        assert hidden not in html.unescape(text), hidden
    assert FACTS_MIME not in page
    assert "measured 3 seeds from seed=0 on cpu" in text  # a printed sentence stays
    assert "3 output(s) left out for readers" in text  # the warning, the bare value, the bar  # said, with how to see them


def test_finding_then_scorecard_then_the_notebook(reader):
    _, _, page, _, _ = reader
    body = page[page.index("<body"):]
    order = [body.index('id="Reader-fixture"'), body.index('id="toymech-finding"'),
             body.index('id="toymech-scorecard"'), body.index("A toy study laid out for readers"),
             body.index('id="Training-curves"'), body.index('id="toymech-time"')]
    assert order == sorted(order)
    finding = body[order[1]:order[2]]
    assert "<h2>What this run found</h2>" in finding
    assert "This toy run measured <strong>3 seeds</strong> on cpu in 1.5 s" in finding
    card = body[order[2]:order[3]]
    assert "Pipeline check (size smoke" in card and "1 reproduced, 1 not reproduced" in card
    assert 'class="toymech-verdict toymech-verdict-not-reproduced">not reproduced' in card  # rebuilt table
    # Moved, not copied: the scorecard and the finding appear once.
    assert body.count("loss above 1") == 1 and body.count("This toy run measured") == 1


def test_header_block_and_time_table(reader):
    out, entry, page, coded_page, coded = reader
    header = html.unescape(re.sub(r"<[^>]+>", "", page[page.index('id="toymech-run"'):page.index("</header>")]))
    assert re.search(r"ran: ok · size smoke · seeds 3 \(0, 1, 2\) · device cpu · seed 0 · wall time \d", " ".join(header.split()))
    assert "report_reader.ipynb" in header and "transformer-lens" in header
    assert entry.seeds == "3 (0, 1, 2)" and entry.device_used == "cpu"
    # --seeds 3 reaches the notebook (its facts list three seeds) and the header.
    assert coded.seeds == "3 (0, 1, 2)" and "seeds <strong>3 (0, 1, 2)</strong>" in coded_page
    time_part = page[page.index('id="toymech-time"'):]
    rows = re.findall(r"<tr><td>(.*?)</td>", time_part)
    assert rows[:4] == ["Setup (imports, parameters, data)", "Training curves", "Attention", "Claims"]
    assert rows[-1] == "kernel start-up and saving (outside the cells)"
    # the fixture trains nothing: the zoo counter (toymech.zoo.zoo_stats) says so
    assert "Models trained / loaded from the zoo: 0 trained, 0 loaded" in time_part


def test_code_mode_keeps_inputs_and_outputs(reader):
    _, _, _, page, _ = reader
    text = html.unescape(_visible(page))
    words = " ".join(re.sub(r"<[^>]+>", " ", text).split())  # code is highlighted span by span
    assert "jp-InputArea-editor" in text and "seeds = 3" in words  # the injected parameters cell
    assert "[toymech] torch CPU threads" in text and "a warning a reader does not need" in text
    assert "steps:\u2007100%|\u2588\u2588\u2588" in text  # the tqdm widget's final state, as text
    assert "run facts:" not in text  # facts are never shown


def test_cost_table_records_each_cell(reader):
    out, _, _, _, _ = reader
    costs = json.loads((out / "costs.json").read_text())
    row = costs["report_reader"]["size=smoke"]
    executed = nbformat.read(out / "executed" / "report_reader.ipynb", as_version=4)
    assert len(row["cells"]) == len(executed.cells) and row["total_s"] > sum(c or 0 for c in row["cells"]) > 0
    coded = json.loads((out / "code" / "costs.json").read_text())
    assert list(coded["report_reader"]) == ["size=smoke,seeds=3"]  # another run shape, its own row


def _nb(*cells):
    return new_notebook(cells=list(cells))


def _stream(text, name="stdout"):
    return new_output("stream", name=name, text=text)


def test_prepare_filters_outputs_and_honours_tags():
    plain = new_output("execute_result", data={"text/plain": "Plan(widths=(8, 64))"}, execution_count=1)
    table = new_output("display_data", data={"text/html": "<table><tr><td>1</td></tr></table>", "text/plain": "t"})
    cells = [
        new_markdown_cell("# Title\n\nIntro."),
        new_code_cell("p = 1", metadata={"tags": ["parameters"]}),
        new_code_cell("a", outputs=[_stream("[toymech] log\nkept line\n{'x': 1}\n"), _stream("warn", "stderr"), plain]),
        new_code_cell("secret", outputs=[_stream("never\n")], metadata={"tags": ["remove-cell"]}),
        new_code_cell("shown()", outputs=[_stream("out\n")], metadata={"tags": ["show-input"]}),
        new_code_cell("quiet()", outputs=[_stream("gone\n")], metadata={"tags": ["remove-output"]}),
        new_code_cell("table", outputs=[table], metadata={"tags": ["remove-input"]}),
        new_code_cell("silent = 1"),
    ]
    nb, info = prepare(_nb(*cells))
    assert info == {"hidden": 2, "finding": False, "scorecard": None}
    sources = [c.source for c in nb.cells]
    assert sources == ["# Title", "Intro.", "a", "shown()", "table"]  # title split; p, secret, quiet, silent gone
    a, shown, tbl = nb.cells[2:]
    assert [o.text for o in a.outputs] == ["kept line\n"]
    assert a.metadata["transient"]["remove_source"] and tbl.metadata["transient"]["remove_source"]
    assert "transient" not in shown.metadata
    coded, info = prepare(_nb(*cells), code=True)
    assert info["hidden"] == 0
    by_source = {c.source: c for c in coded.cells}
    assert "p = 1" in by_source and "secret" not in by_source
    assert by_source["quiet()"].outputs == [] and by_source["table"].metadata["transient"]["remove_source"]
    assert len(by_source["a"].outputs) == 3


@pytest.mark.parametrize("text, bare", [
    ("{'a': 1}", True), ("[1, 2]", True), ("Plan(widths=(8, 64),\n  steps=3)", True), ("'skipped'", True),
    ("<Figure size 10x10>", True), ("seeds [0, 1]; seed 0:", False), ("f(x) is large", False),
    ("test 3.25 (post 2.60)", False), ("a | b\n1 | 2", False),
])
def test_looks_like_repr(text, bare):
    assert looks_like_repr(text) is bare


def test_time_table_sums_papermill_durations_per_heading():
    cells = [new_markdown_cell("# T"), new_code_cell("a"), new_markdown_cell("## One\ntext"),
             new_code_cell("b"), new_code_cell("c"), new_markdown_cell("### Deeper"), new_code_cell("d")]
    for cell, seconds in zip([cells[1], cells[3], cells[4], cells[6]], [1.0, 2.0, 0.5, 4.0]):
        cell.metadata["papermill"] = {"duration": seconds}
    rows = time_table(_nb(*cells), wall_s=10.0)
    assert [(r["section"], r["seconds"], r["cells"]) for r in rows] == [
        ("Setup (imports, parameters, data)", 1.0, 1), ("One", 2.5, 2), ("Deeper", 4.0, 1),
        ("kernel start-up and saving (outside the cells)", 2.5, 0)]


def test_verdict_words_are_counted_as_written():
    words = ["reproduced", "consistent (2 seeds)", "Consistent (1 seed)", "mixed", "not reproduced",
             "not measured", "pipeline ran", "consistent (2 seeds)", "", "unresolved", "pipeline check"]
    card = {"columns": ["claim", "Verdict"], "rows": [["c", w] for w in words]}
    assert verdict_word("Consistent  (1 seed)") == "consistent (1 seed)"
    assert verdict_word("pipeline check: holds 0/2") == "pipeline check"
    assert verdict_word("not reproduced at this size") == "not reproduced"
    assert verdict_word("reproducedish") == "other"
    assert verdict_counts(card) == {"reproduced": 1, "consistent (1 seed)": 1, "consistent (2 seeds)": 2,
                                    "mixed": 1, "not reproduced": 1, "unresolved": 1, "not measured": 1,
                                    "pipeline check": 1, "other": 2}
    assert scorecard_counts(card).startswith("1 reproduced, 1 consistent (1 seed), 2 consistent (2 seeds)")


def test_estimate_and_progress_lines():
    previous = {"cells": [1.0, 10.0, 5.0, None], "total_s": 20.0}
    assert estimate_left(previous, 1, 4, in_cell_s=4.0) == pytest.approx(11.0)
    assert estimate_left(previous, 1, 5, in_cell_s=0.0) is None  # another cell count: no estimate
    assert estimate_left(None, 0, 4, 0.0) is None
    now = [100.0]
    stream = io.StringIO()
    progress = LiveProgress(["nb/a.ipynb", "nb/b.ipynb"], stream=stream, live=False, clock=lambda: now[0],
                            header="2 notebook(s)")
    progress.start(0, previous)
    now[0] = 103.0
    progress.cell(0, 1, 4, "Training")
    progress.cell(0, 2, 4, "Training")  # same section: no new line
    now[0] = 150.0
    progress.start(1, None)
    progress.cell(1, 0, 4, "Setup")
    progress.done(0, "[1/2] a: ok in 50.0 s")
    lines = stream.getvalue().splitlines()
    assert lines == ["2 notebook(s)", "[1/2] a: started, last run at this size 20 s",
                     "[1/2] a: cell 2/4, 3.0 s elapsed, about 15 s left | Training",
                     "[2/2] b: started",
                     "[2/2] b: cell 1/4, 0.0 s elapsed, no estimate (no earlier run at this size) | Setup",
                     "[1/2] a: ok in 50.0 s"]


def test_live_progress_redraws_one_line_per_notebook():
    stream = io.StringIO()
    progress = LiveProgress(["a.ipynb", "b.ipynb", "c.ipynb"], stream=stream, live=True, clock=lambda: 0.0)
    progress.start(1, None)
    progress.cell(1, 0, 3, "Setup")
    progress.close()
    frames = stream.getvalue().split("\x1b[3F")  # cursor up three lines: the block is redrawn
    assert len(frames) >= 3 and all(f.count("\n") == 3 for f in frames)
    assert "[1/3] a: waiting" in frames[-1] and "[2/3] b: cell 1/3" in frames[-1]


def test_cost_table_round_trip(tmp_path):
    table = CostTable(tmp_path)
    assert table.get("x", "size=smoke") is None
    table.record("x", "size=smoke", [0.5, None, 1.25], 3.0)
    (tmp_path / "junk").write_text("{")
    assert table.get("x", "size=smoke") == {"cells": [0.5, None, 1.25], "total_s": 3.0}
    (tmp_path / "costs.json").write_text("not json")
    assert table.get("x", "size=smoke") is None  # a damaged table only costs the estimate


def test_seeds_reach_the_notebooks_own_parameter():
    from toymech.report.build import with_seeds

    common = {"size": "smoke"}
    assert with_seeds(Path("a.ipynb"), common, {"n_seeds": "None"}, 5) == {"size": "smoke", "n_seeds": 5}
    assert with_seeds(Path("a.ipynb"), common, {"seed": "0"}, None) == common
    # ``seeds`` is never a count: a notebook whose parameter is called so is told which name to use
    with pytest.raises(ValueError, match=r"does not define parameter\(s\) n_seeds in"):
        with_seeds(Path("a.ipynb"), common, {"seeds": "2"}, 5)
    with pytest.raises(ValueError, match=r"does not define parameter\(s\) n_seeds in"):
        with_seeds(Path("a.ipynb"), common, {"seed": "0"}, 5)


def test_first_run_estimates_from_the_shipped_cost_table(tmp_path):
    from toymech.report.costs import shipped_costs

    shipped = shipped_costs()
    notebooks = sorted(p.stem for p in (Path(__file__).parents[1] / "notebooks").glob("*.ipynb"))
    assert set(shipped) == set(notebooks)  # one measured row per shipped notebook
    for stem in notebooks:
        row = CostTable(tmp_path).get(stem, CostTable.key("default", None))  # an empty folder
        assert row is not None and row["shipped"] and row["total_s"] > 0
        assert all(c is None or c >= 0 for c in row["cells"])
    table = CostTable(tmp_path)
    table.record(notebooks[0], "size=default", [1.0, 2.0], 3.0)  # a run of its own wins
    assert table.get(notebooks[0], "size=default") == {"cells": [1.0, 2.0], "total_s": 3.0}
    # the notebook changed since (another cell count): the total less the time elapsed
    assert estimate_left({"cells": [1.0, 2.0], "total_s": 30.0}, 0, 5, 0.0, elapsed_s=12.0) == 18.0
    assert estimate_left({"cells": [1.0, 2.0], "total_s": 30.0}, 0, 5, 0.0, elapsed_s=40.0) == 0.0


def test_progress_names_the_section_of_the_running_cell(tmp_path):
    """papermill injects a parameters cell: the section shown is still the running cell's."""
    nb = new_notebook(cells=[
        new_markdown_cell("# Title"),
        new_code_cell('size = "smoke"\ndevice = "cpu"\nseed = 0', metadata={"tags": ["parameters"]}),
        new_markdown_cell("## First part"), new_code_cell("x = 1"),
        new_markdown_cell("## Second part"), new_code_cell("y = 2")])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    path = tmp_path / "sections.ipynb"
    nbformat.write(nb, path)
    seen = []

    class Recorder:
        def start(self, index, previous, live_dir=None): pass
        def cell(self, index, cell_index, n_cells, section): seen.append((cell_index, n_cells, section))
        def done(self, index, text): pass
        def close(self): pass

    [entry] = build_reports([path], out_dir=tmp_path / "out", size="smoke", device="cpu", seed=0,
                            progress=Recorder())
    assert entry.status == "ok", entry
    executed = nbformat.read(tmp_path / "out" / "executed" / "sections.ipynb", as_version=4).cells
    for cell_index, n_cells, section in seen:
        assert n_cells == len(executed) == 7  # the injected cell counted
        if "x = 1" in executed[cell_index].source:
            assert section == "First part"
        if "y = 2" in executed[cell_index].source:
            assert section == "Second part"
    assert {s for _, _, s in seen} >= {"First part", "Second part"}


def test_finding_lines_keep_the_first_sentences_and_the_pipeline_caveat():
    from toymech.report.reader_page import finding_lines

    finding = new_output("display_data", data={"text/markdown": "- **At 6 steps**, the head forms.\n"
                                                                 "- The memories cross in order.\n"
                                                                 "- This is a pipeline check at size smoke.\n",
                                               "text/plain": "x"})
    nb = _nb(new_code_cell("f", outputs=[finding], metadata={"tags": ["finding"]}), new_code_cell("other"))
    assert finding_lines(nb) == ["At 6 steps, the head forms.", "This is a pipeline check at size smoke."]
    assert finding_lines(nb, most=3)[1] == "The memories cross in order."
    assert finding_lines(_nb(new_code_cell("nothing"))) == []
