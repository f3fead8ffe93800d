"""The results record's prose quotes no count its blocks contradict: the marked sentences of
docs/results.md are regenerated from the blocks they sit above (``report.record_prose``)."""

from pathlib import Path

import pytest

from toymech.report import record_prose as rp

RECORD = Path(__file__).resolve().parents[1] / "docs" / "results.md"

CARD = """<!-- toymech-results nb size=paper -->
### nb: `paper`

| claim | ours | seeds agreeing | verdict |
| --- | --- | --- | --- |
| a | 1 | 10/10 | reproduced |
| b | 2 | 3/10 | mixed |
| c | 3 | 0/10 | not reproduced |
| d | 4 | 1/10 | mixed |
<!-- /toymech-results -->
"""
LADDER = """<!-- toymech-results rt-width-ladder -->
| task | mode | width 16 | width 32 | width 64 | width 128 |
| --- | --- | --- | --- | --- | --- |
| needle | normal | 0.631 [0.631, 0.651] (0/3) | 0.996 [0.632, 1.000] (2/3) | 0.998 [0.993, 1.000] (3/3) | 0.998 [0.636, 0.998] (2/3) |
| needle | random | 0.434 [0.356, 0.467] (0/3) | 0.633 [0.622, 0.636] (0/3) | 0.644 [0.622, 0.646] (0/3) | 0.639 [0.629, 0.664] (0/3) |
<!-- /toymech-results -->
"""


def _marked(name, key, said):
    return f"<!-- toymech-sentence {name} {key} -->{said}<!-- /toymech-sentence -->"


def test_the_records_sentences_match_its_blocks():
    text = RECORD.read_text(encoding="utf-8")
    assert "toymech-sentence" in text  # the counts the prose quotes are generated
    assert rp.stale_sentences(text) == [], "run: python -m toymech.report.record_prose"


def test_counts_are_read_from_the_block_and_a_wrong_one_is_stale():
    said = rp.mixed_and_not_reproduced(rp.blocks(CARD)["nb size=paper"])
    assert said == "Two rows are mixed (b: 3 of 10; d: 1 of 10) and one row is not reproduced " \
                   "(c: 0 of 10)."
    wrong = CARD + _marked("mixed-and-not-reproduced", "nb size=paper",
                           "Three rows are mixed (b: 3 of 10) and two rows are not reproduced.")
    assert len(rp.stale_sentences(wrong)) == 1
    assert rp.stale_sentences(rp.refresh_sentences(wrong)) == []
    assert said in rp.refresh_sentences(wrong)


def test_the_ladder_sentences_name_every_rung_and_the_whole_range():
    body = rp.blocks(LADDER)["rt-width-ladder"]
    # not "3 of 3 from 64": width 128 has 2 of 3
    assert rp.ladder_seeds_solving(body, ("needle",)) == \
        "seeds solving at widths 32, 64, 128: needle 2, 3, 2 of 3"
    assert rp.ladder_range(body, "needle", "random", 32) == "0.622-0.664 at widths 32-128"


@pytest.mark.parametrize("marked, match", [
    (_marked("no-such-sentence", "nb size=paper", "x"), "sentence='no-such-sentence'"),
    (_marked("mixed-and-not-reproduced", "nb size=smoke", "x"), "block='nb size=smoke'"),
])
def test_an_unknown_sentence_or_block_is_refused_in_one_line(marked, match):
    with pytest.raises(ValueError, match=match) as err:
        rp.stale_sentences(CARD + marked)
    assert "\n" not in str(err.value)


MAP = """<!-- toymech-results map s1-demo -->
| block_len | d_model | seeds 'content' | outcomes | median beyond_baseline | refined |
| --- | --- | --- | --- | --- | --- |
| 6 | 32 | 0 of 3 | 2 position, 1 still learning | -0.1 | no |
| 4-8 | 32 | 1 of 3 | 1 content, 2 partial | 0.05 | no |
<!-- /toymech-results -->
"""


def test_a_maps_outcomes_are_summed_from_its_block_and_the_readme_reads_the_record():
    body = rp.blocks(MAP)["map s1-demo"]
    assert rp.map_outcomes(body) == ("6 runs in 2 cells: 2 position, 2 partial, 1 still learning, "
                                     "1 content (the commonest outcome: position in one of 2; "
                                     "partial in one of 2 cells)")
    readme = _marked("map-outcomes", "map s1-demo", "6 runs in 2 cells: 6 content")
    assert len(rp.stale_sentences(readme, MAP)) == 1
    assert rp.stale_sentences(rp.refresh_sentences(readme, MAP), MAP) == []


def test_the_readmes_sentences_match_the_records_blocks():
    readme = (RECORD.parents[1] / "README.md").read_text(encoding="utf-8")
    assert rp.stale_sentences(readme, RECORD.read_text(encoding="utf-8")) == [], \
        "run: python -m toymech.report.record_prose docs/results.md README.md"


def test_where_a_map_changes_and_its_evidence_are_read_from_its_block():
    """The ``map-changes`` and ``map-evidence`` sentences are the block's own paragraphs; a
    block without them reads "nowhere" / "none recorded", and an edited sentence is stale."""
    block = MAP.replace("| block_len |", "Where the commonest outcome changes between neighbouring "
                        "cells: block_len 6 -> 4-8 (at d_model 32): position (2 of 3) -> partial "
                        "(2 of 3).\n\nCausal evidence, median over the learned runs: content (1 "
                        "runs): kcut 1.50 (train).\n\n| block_len |")
    body = rp.blocks(block)["map s1-demo"]
    assert rp.map_changes(body) == ("block_len 6 -> 4-8 (at d_model 32): position (2 of 3) -> "
                                    "partial (2 of 3)")
    assert rp.map_evidence(body) == "median over the learned runs: content (1 runs): kcut 1.50 (train)"
    assert rp.map_changes(rp.blocks(MAP)["map s1-demo"]) == "nowhere"
    assert rp.map_evidence(rp.blocks(MAP)["map s1-demo"]) == "none recorded"
    said = _marked("map-changes", "map s1-demo", "block_len 6 -> 4-8: content")
    assert len(rp.stale_sentences(said, block)) == 1
    assert rp.stale_sentences(rp.refresh_sentences(said, block), block) == []
