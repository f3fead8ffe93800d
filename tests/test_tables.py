"""toymech.display.tables: the reader's table (names, numbers, dashes, captions, width) and the
raw frame it carries for --code reports."""

from __future__ import annotations

import re

import nbformat
import numpy as np
import pandas as pd
import pytest
from nbformat.v4 import new_code_cell, new_notebook, new_output

from toymech.display import RAW_TABLE_MIME, reader_table
from toymech.display.tables import format_number, format_value, is_missing, readable_name
from toymech.report import prepare


def test_readable_names_come_from_the_labels():
    assert readable_name("icl_acc") == "in-context accuracy (fraction correct)"
    assert readable_name("causal.k_share") == "causal: share of log p(output) the W_K² key path restores (fraction restored)"
    assert readable_name("causal.clean_gap") == "causal: logit gap a - b, clean run (logits)"
    assert readable_name("causal.some_new_number") == "causal: some new number"  # no label yet
    assert readable_name("paper_bits_per_param") == "paper bits per param"
    assert readable_name("bits", {"bits": "bits"}) == "bits (bits)"
    assert readable_name(("normal", "w8")) == "normal · w8"
    assert readable_name(3) == "3" and readable_name("L0H1") == "L0H1"


@pytest.mark.parametrize("value, text", [
    (0.123456, "0.123"), (12.3456, "12.3"), (2306.6, "2,307"), (1024.0, "1,024"), (7, "7"),
    (0.000363, "3.63e-04"), (-0.0254, "-0.0254"), (True, "yes"),
])
def test_numbers_to_their_precision(value, text):
    assert format_number(value) == text


def test_values_as_a_reader_reads_them():
    assert format_value({"p": 23, "n_keys": 8}) == "p = 23, n keys = 8"
    assert format_value([1, 2, 3]) == "1, 2, 3"
    assert format_value("cb_bigram_acc") == "bigram accuracy" and format_value("learned_pos") == "learned_pos"
    assert format_value(float("nan")) == "—" and format_value(None) == "—"
    assert is_missing(pd.NA) and not is_missing(0.0)


def _frame():
    return pd.DataFrame({"icl_acc": [0.91234, np.nan], "trainable": [1024.0, 2048.0],
                         "params": [{"p": 23}, {"p": 59}]}, index=pd.Index(["main", "tied"], name="model"))


def test_table_has_caption_readable_headers_no_nan_and_a_footnote():
    table = reader_table(_frame(), caption="End of training, per run", model="induction-2l")
    page = table.html()
    assert "<caption>End of training, per run. Model: induction-2l.</caption>" in page
    assert "<th>in-context accuracy (fraction correct)</th>" in page and "icl_acc" not in page
    assert "<td>1,024</td>" in page and "<td>0.912</td>" in page and "<td>p = 23</td>" in page
    assert not re.search(r">\s*(nan|NaN|None)\s*<", page)
    assert "<td>—</td>" in page and "— no value: not measured for this row at this size, or not given by the source." in page
    bundle = table._repr_mimebundle_()
    assert "icl_acc" in bundle[RAW_TABLE_MIME] and "NaN" in bundle[RAW_TABLE_MIME]
    assert table.frame is not None and "End of training" in bundle["text/plain"]


def test_a_wide_table_is_transposed_or_split():
    long = pd.DataFrame({f"metric number {i} of the run": [0.5] for i in range(40)}, index=["run"])
    flipped = reader_table(long, caption="One run, many metrics")
    assert len(flipped.columns) == 1 and len(flipped.rows) == 40 and len(flipped.parts()) == 1
    seeds = reader_table(long.set_axis(pd.Index([3], name="seed")), caption="Per seed")
    assert seeds.columns == ["seed 3"]
    plain = reader_table(pd.DataFrame({"metric": ["icl_acc"], "step": [4.0]}), caption="No index")
    assert "<th></th>" not in plain.html() and "<tr><td>in-context accuracy</td><td>4</td></tr>" in plain.html()
    wide = pd.DataFrame(np.full((50, 40), 0.123), columns=[f"column_{i:02d}_name" for i in range(40)])
    split = reader_table(wide, caption="Many rows and columns")
    parts = split.parts()
    assert len(parts) > 1 and sorted(j for p in parts for j in p) == list(range(40))
    assert split.html().count("<table") == len(parts) and f"(part 1 of {len(parts)})" in split.html()


def test_code_columns_are_code_as_written():
    """A ``code`` column's cells are shown as written, in a ``<code>`` of ``CODE_CLASS`` (the
    class the reading rules leave out of the prose), transposed or not; other cells are not."""
    from toymech.display.tables import CODE_CLASS

    frame = pd.DataFrame({"cell": ["a", "b"], "open": ['f(x={"k": "4-8"})', None], "n": [1.0, 2.0]})
    page = reader_table(frame, caption="Cells", code=["open"]).html()
    assert f'<td><code class="{CODE_CLASS}">f(x={{&quot;k&quot;: &quot;4-8&quot;}})</code></td>' in page
    assert page.count("<code") == 1 and "<td>—</td>" in page and "<td>a</td>" in page
    flipped = reader_table(frame.assign(**{f"metric number {i} of the run": 0.5 for i in range(30)}),
                           caption="Wide", code="open")
    assert len(flipped.columns) == 2 and flipped.html().count(f'class="{CODE_CLASS}"') == 1
    with pytest.raises(ValueError, match=r"^code=\['nope'\] is not allowed: columns of the frame"):
        reader_table(frame, caption="x", code=["nope"])


@pytest.mark.parametrize("kwargs, name", [
    ({"caption": ""}, "caption"), ({"caption": "x", "model": ""}, "model"),
    ({"caption": "x", "digits": 0}, "digits"), ({"caption": "x", "max_width_px": 10}, "max_width_px"),
])
def test_bad_arguments_are_refused(kwargs, name):
    with pytest.raises(ValueError, match=rf"^{name}=.* is not allowed: "):
        reader_table(_frame(), **kwargs)
    with pytest.raises(ValueError, match=r"^df='list' is not allowed"):
        reader_table([1, 2], caption="x")


def test_reports_show_the_reader_table_and_code_mode_the_raw_frame():
    bundle = reader_table(_frame(), caption="End of training")._repr_mimebundle_()
    cell = new_code_cell("t", outputs=[new_output("display_data", data=bundle)])
    read, _ = prepare(new_notebook(cells=[cell]))
    coded, _ = prepare(new_notebook(cells=[nbformat.from_dict(cell)]), code=True)
    [shown], [raw] = read.cells[0].outputs, coded.cells[0].outputs
    assert RAW_TABLE_MIME not in shown["data"] and "toymech-table" in shown["data"]["text/html"]
    assert "icl_acc" in raw["data"]["text/html"] and "toymech-table" not in raw["data"]["text/html"]


def test_not_run_says_what_runs_it_in_a_readers_words():
    from toymech.report import page_rules
    from toymech.studies.findings import not_run

    optional, command = not_run("extremes"), not_run("the width ladder", how="`toymech ladder`")
    assert optional.text == ("Not run at this size: extremes, an optional comparison; a report made "
                             "with `--param also=extremes` on the command line runs it.")
    assert "`toymech ladder` runs it" in command.text
    for shown in (optional, command):
        assert page_rules.violations({"text": shown.text, "tables": [], "figures": []}) == []
    with pytest.raises(ValueError, match="^how='' is not allowed"):
        not_run("x", how="")
