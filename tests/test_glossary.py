"""toymech.report.glossary: the words a report uses, with this run's values."""

from __future__ import annotations

import pytest

from toymech.report import page_rules
from toymech.report.glossary import glossary


def test_glossary_names_this_runs_size_seeds_and_options():
    rows = dict(glossary("smoke", 0, "3 (0, 1, 2)", [("also", "()")], ("twins", "llc")))
    assert list(rows) == ["size", "seed", "seeds", "zoo", "chance / null", "also"]
    assert "This report ran at smoke: a pipeline check" in rows["size"] and "paper (the source's own settings)" in rows["size"]
    assert rows["seeds"].endswith("Measured here: 3 (0, 1, 2).") and "first seed: 0" in rows["seed"]
    assert "“twins”, “llc”" in rows["also"] and rows["also"].endswith("In this run: none.")
    text = " ".join(rows.values())
    assert page_rules.violations({"text": text, "tables": [], "figures": []}) == []


def test_glossary_without_options_has_no_also_row_and_refuses_a_bad_size():
    assert "also" not in dict(glossary("paper", 4, ""))
    with pytest.raises(ValueError, match="^size='huge' is not allowed: one of smoke, default, paper"):
        glossary("huge", 0, "")
