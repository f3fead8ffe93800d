"""The source's claims as data; verdicts are computed by ``toymech.studies.claims``.

Every claim needs: where the source says it, the source's number (or words: mark a number that
is yours with ``ours=True``), a ``holds`` that an untrained or at-chance model fails (compare
with ``reference``, the chance of the same task instance), and ``test`` / ``why`` for the claims
table in docs/sources.md. A claim with only a direction in the source still asks for a margin
that noise cannot produce.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from toymech.studies.claims import Claim
from toymech.studies.settings import StudySettings

from .design import CALIBRATION, COST, SOURCE_SETTING, setting

SOURCE = "the source's authors, title, year and link (add it to docs/sources.md)"
SOLVED = 0.95

CLAIMS = (
    Claim("solves", "a 2-layer transformer balances parentheses", "the source, table 1", "100 %",
          value=lambda n: n["acc"],
          holds=lambda n: n["acc"] >= max(SOLVED, n["chance"] + (1 - n["chance"]) / 2),
          reference=lambda n: n["chance"], null="chance", unit="accuracy",
          test=f"held-out accuracy >= {SOLVED} and half way from chance to 1",
          why="the source's 100 %, less 5 points; chance (the share of the majority answer) "
              "is about 0.56 here", setting=SOURCE_SETTING),
)
# Each size's setting in the parameters the claims name, what reaching each costs, the seeds
# thresholds were chosen on (never judged: ``seeds_of`` passes over them).
SETTINGS = StudySettings.of_sizes(setting, COST, CALIBRATION, calibrated="nothing",
                                  judged="the seeds of seeds_of")


def source_like() -> dict[str, float]:
    """One seed as the source reports it: every claim holds (tests/test_claims_null.py)."""
    return {"acc": 1.0, "chance": 0.56}


def at_chance(n: Mapping[str, float]) -> dict[str, float]:
    """``n`` moved to what a model that learned nothing gives."""
    return {"acc": n["chance"], "chance": n["chance"]}


def numbers(measured: Mapping[str, Any]) -> dict[str, float]:
    """One seed's named numbers, the only input of the claims."""
    return {"acc": float(measured["acc"]), "chance": float(measured["chance"])}

