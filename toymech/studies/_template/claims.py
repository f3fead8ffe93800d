"""The source's claims as data; verdicts are computed by ``toymech.studies.claims``."""

from __future__ import annotations

from typing import Mapping, Sequence

import pandas as pd

from ..claims import Claim, scorecard as _scorecard

SOURCE = "the source's authors, title, year and link (add it to docs/sources.md)"

CLAIMS = (
    Claim("solves", "a 2-layer transformer balances parentheses", "the source, table 1", "100 %",
          value=lambda n: n["acc"], holds=lambda n: n["acc"] >= 0.95),
)


def numbers(metrics: Mapping[str, float]) -> dict[str, float]:
    """One seed's named numbers, the only input of the claims."""
    return {"acc": float(metrics["acc"])}


def scorecard(per_seed: Sequence[Mapping[str, float]]) -> pd.DataFrame:
    return _scorecard(CLAIMS, per_seed)
