"""A scaled verdict needs evidence: a qualitative claim is judged below its source's setting only
where a recorded run showed that the scaled setting gives the verdict of the source's setting
(``StudySettings.evidence``). This test re-reads that record (docs/results.md, the blocks
``<notebook> size=<scaled> vs size=paper`` written by ``toymech results``), so a study cannot
list a claim the record does not back."""

from __future__ import annotations

from pathlib import Path

import pytest

from toymech.studies import protocol
from toymech.studies.claims import BELOW, assess

RECORD = Path(__file__).resolve().parents[1] / "docs" / "results.md"


def _same_column(notebook: str, size: str) -> dict[str, str]:
    """{claim statement: "yes"/"no"} of the record's comparison block, {} without one."""
    text = RECORD.read_text(encoding="utf-8")
    marker = f"<!-- toymech-results {Path(notebook).stem} size={size} vs size=paper -->"
    if marker not in text:
        return {}
    block = text.split(marker, 1)[1].split("<!-- /toymech-results -->", 1)[0]
    rows = {}
    for line in block.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| ") and cells[0] not in ("claim", "---") and len(cells) >= 4:
            rows[cells[0]] = cells[-1]
    return rows


@pytest.mark.parametrize("name", list(protocol.STUDIES))
def test_every_scaled_verdict_is_backed_by_the_record(name):
    study = protocol.study(name)
    settings = study.settings
    by_key = {c.key: c for c in study.claims}
    for size, keys in settings.evidence.items():
        record = _same_column(protocol.STUDIES[name], size)
        assert keys <= set(by_key), f"{name}: unknown claim keys {sorted(keys - set(by_key))}"
        for key in keys:
            claim = by_key[key]
            assert claim.scaled, f"{name}: {key} is not a scaled claim"
            assert record.get(claim.statement) == "yes", (
                f"{name}: {key} is listed as shown at {size}, but the record says "
                f"{record.get(claim.statement, 'nothing')}")
    if settings.evidence:
        assert settings.evidence_record


def _claim(scaled: bool, key="k"):
    from toymech.studies.claims import Claim
    return Claim(key, "s", "src", "1", value=lambda n: n["x"], holds=lambda n: n["x"] > 0,
                 setting={"steps": 10_000, "width": 8, "data": "d"}, numeric=not scaled,
                 scaled="a direction" if scaled else "")


def test_a_scaled_claim_without_evidence_reads_below_the_sources_setting():
    from toymech.studies.settings import StudySettings

    def setting(size):
        return {"steps": {"smoke": 10, "default": 2_000, "paper": 10_000}[size], "width": 8,
                "data": "d"}

    cost = {"smoke": "s", "default": "m", "paper": "h"}
    seeds = [{"x": 1.0}] * 3
    none = StudySettings.of_sizes(setting, cost, {})
    shown = StudySettings.of_sizes(setting, cost, {}, evidence={"default": frozenset({"k"})},
                                   evidence_record="a test")
    unshown = assess(_claim(True), seeds, settings=none, size="default").verdict
    assert unshown.startswith(BELOW) and "no run has shown" in unshown
    assert "reproduced" in unshown  # it quotes what the scaled run said, as a quote
    assert assess(_claim(True), seeds, settings=shown, size="default").verdict.startswith(
        "reproduced (scaled")
    # a numeric claim is never judged scaled, evidence or not
    assert assess(_claim(False), seeds, settings=shown, size="default").verdict.startswith(BELOW)
    # at the source's setting the verdict stands either way
    assert assess(_claim(True), seeds, settings=none, size="paper").verdict == "reproduced"


def test_the_record_s_count_of_agreeing_scaled_verdicts_is_its_block():
    """The prose above study 1's comparison block quotes how many scaled verdicts agree; it is the
    block's own count, and the study lists exactly the agreeing claims as shown."""
    import re

    text = RECORD.read_text(encoding="utf-8")
    block = text.split("<!-- toymech-results 01_induction_repeated_blocks size=default vs size=paper -->", 1)[1]
    agree, total = (int(x) for x in re.search(r"(\d+) of (\d+) claims judged", block).groups())
    prose = " ".join(text.split("**Do the scaled verdicts at `default` stand in")[1].split("**")[1].split())
    assert f"{agree} of {total} agree" in prose
    same = _same_column(protocol.STUDIES["induction"], "default")
    study = protocol.study("induction")
    shown = {c.statement for c in study.claims if c.key in study.settings.evidence["default"]}
    assert shown == {k for k, v in same.items() if v == "yes"} and len(shown) == agree
