"""The reader's rules (toymech.report.page_rules) on hand-made DOM states: a clean page passes, and
each rule fails on a page made to break it (no browser needed; test_browser_reading.py applies
the same rules to rendered pages)."""

from __future__ import annotations

import pytest

from toymech.report import page_rules


def _table(**over):
    return {"caption": "Loss per set (model: induction-2l)", "width": 600, "room": 1200,
            "headers": ["model", "held-out loss (nats)"], "cells": ["induction-2l", "0.412", "—"],
            "rows": [["induction-2l", "0.412"], ["tied", "—"]], **over}


def _figure(**over):
    svg = {"l": 0, "r": 800, "t": 0, "b": 400}
    return {"title": "Loss", "svg": svg, "ticks": [{"text": "0.5", "px": 12}],
            "titles": [{"text": "training step", "box": {"l": 300, "r": 420, "t": 370, "b": 390}}], **over}


def _state(**over):
    return {"window": 1280, "pending": 0, "tables": [_table()], "figures": [_figure()],
            "text": "The model reaches p = 23 at step 400; the comparison was not run at this size; "
                    "the `paper` size (or `also=llc` on the command line) runs it.", **over}


def test_a_clean_page_breaks_no_rule():
    assert page_rules.violations(_state()) == []
    assert page_rules.counts([]) == {rule: 0 for rule in page_rules.RULES}


@pytest.mark.parametrize("rule, over", [
    ("nan", {"tables": [_table(cells=["0.41", "nan"])]}),
    ("nan", {"tables": [_table(cells=["NaN ± 0.1"])]}),
    ("repr", {"text": "p values {'a': 0.1}"}),
    ("repr", {"text": "per seed {1: 0.155, 2: 0.2}"}),
    ("repr", {"text": "widths [16, 64]"}),
    ("repr", {"text": "Plan(widths=(8, 64))"}),
    ("internal-key", {"text": "the gap causal.clean_gap fell"}),
    ("internal-key", {"tables": [_table(headers=["model", "qcomp_max"])]}),
    ("wide-table", {"tables": [_table(width=1500, room=1200)]}),
    ("empty-column", {"tables": [_table(rows=[["a", "", "1"], ["b", "", "2"]])]}),
    ("small-tick", {"figures": [_figure(ticks=[{"text": "L0H1", "px": 8}])]}),
    ("cut-title", {"figures": [_figure(titles=[{"text": "loss", "box": {"l": -20, "r": 10, "t": 100, "b": 200}}])]}),
    ("instruction", {"text": 'Not run: Add "llc" to `also` (or pass it to the report) to train it.'}),
])
def test_each_rule_fails_on_a_page_that_breaks_it(rule, over):
    found = page_rules.violations(_state(**over))
    assert found and {v.rule for v in found} == {rule}, found
    assert page_rules.counts(found)[rule] == len(found)
    assert str(found[0]).startswith(rule + ": ")


def test_violations_refuses_what_is_not_a_page_state():
    with pytest.raises(ValueError, match=r"state=.* is not allowed: the DOM_SCRIPT result"):
        page_rules.violations({"text": ""})
    with pytest.raises(ValueError, match="state='str' is not allowed"):
        page_rules.violations("<html>")


def test_an_interval_after_its_number_is_no_repr():
    assert page_rules.violations(_state(text="held-out loss 3.25 [3.24, 3.26] nats; 65 % [60, 70]")) == []
