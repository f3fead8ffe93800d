"""A scaled verdict needs evidence: a qualitative claim is judged below its source's setting only
where a recorded run showed that the scaled setting gives the verdict of the source's setting
(``StudySettings.evidence``). This test re-reads the recorded runs (docs/results/data/, the
records ``toymech results`` writes) and compares the scaled run's verdicts with the source's
setting's (``report.results.scaled_comparison``), so a study cannot list a claim the records do
not back."""

from __future__ import annotations

from pathlib import Path

import pytest

from toymech.studies import protocol
from toymech.studies.claims import BELOW, assess

DATA = Path(__file__).resolve().parents[1] / "docs" / "results" / "data"


def _same_column(notebook: str, size: str) -> dict[str, str]:
    """{claim statement: "yes"/"no"}: the recorded run of ``notebook`` at ``size`` against its
    recorded run at paper, {} without both."""
    from toymech.report.results import read_data, scaled_comparison

    plain = {r["size"]: r for r in read_data(DATA) if r["kind"] == "scorecard"
             and r["notebook"] == Path(notebook).stem and not r.get("variant")}
    if size not in plain or "paper" not in plain:
        return {}
    found = scaled_comparison(plain[size], plain["paper"])
    return {row[0]: row[-1] for row in found["rows"]} if found else {}


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


@pytest.mark.parametrize("name", list(protocol.STUDIES))
def test_a_study_lists_every_scaled_claim_the_records_back(name):
    """Where the records compare a scaled run with the source's setting, the study lists exactly
    the claims whose verdicts agree as shown: none left out, none more."""
    study = protocol.study(name)
    for size, keys in study.settings.evidence.items():
        same = _same_column(protocol.STUDIES[name], size)
        shown = {c.statement for c in study.claims if c.key in keys}
        assert shown == {k for k, v in same.items() if v == "yes"}, name
