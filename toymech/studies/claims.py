"""Claims as data, verdicts computed over seeds.

A ``Claim`` states what a source says and how to test it on our numbers: ``value`` picks the
number we report from one seed's measurements, ``holds`` says whether that seed agrees with the
source (None: not measured). ``assess`` applies both over seeds:

    ours   = median of value over the seeds that measured it, with its [min, max]
    agree  = number of seeds for which holds is True, out of those that measured it (k/n)
    verdict: "reproduced"      when k/n >= 0.8 (every seed when n < 5)
             "not reproduced"  when k = 0
             "mixed"           otherwise
             "not measured"    when n = 0

``scorecard`` gives one row per claim: claim, source, the source's number, ours, seeds
agreeing, verdict. Notebooks display it; they never compute a verdict themselves.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence

import pandas as pd

from ..core import check

Numbers = Mapping[str, Any]


@dataclass(frozen=True)
class Claim:
    key: str
    statement: str
    source: str          # where the source makes it ("the post, OOD losses")
    source_value: str    # the source's number, as the source gives it
    value: Callable[[Numbers], float | None]
    holds: Callable[[Numbers], bool | None]
    unit: str = ""


@dataclass(frozen=True)
class Assessment:
    median: float
    low: float
    high: float
    agree: int
    measured: int
    verdict: str

    @property
    def ours(self) -> str:
        if self.measured == 0 or math.isnan(self.median):
            return "n/a"
        if self.measured == 1 or self.low == self.high:
            return f"{self.median:.3g}"
        return f"{self.median:.3g} [{self.low:.3g}, {self.high:.3g}]"


def verdict(agree: int, measured: int) -> str:
    """The verdict for ``agree`` seeds out of ``measured`` (see the module docstring)."""
    check(0 <= agree <= measured, "agree", agree, f"an integer in 0..measured={measured}")
    if measured == 0:
        return "not measured"
    if agree == 0:
        return "not reproduced"
    if agree == measured or (measured >= 5 and agree / measured >= 0.8):
        return "reproduced"
    return "mixed"


def _safe(fn: Callable[[Numbers], Any], numbers: Numbers) -> Any:
    try:
        return fn(numbers)
    except KeyError:  # this seed did not measure what the claim needs
        return None


def assess(claim: Claim, per_seed: Sequence[Numbers]) -> Assessment:
    """Median/spread of the claim's value and how many seeds agree with the source."""
    values = [v for v in (_safe(claim.value, n) for n in per_seed)
              if v is not None and not (isinstance(v, float) and math.isnan(v))]
    held = [h for h in (_safe(claim.holds, n) for n in per_seed) if h is not None]
    agree = sum(bool(h) for h in held)
    med = statistics.median(values) if values else float("nan")
    low, high = (min(values), max(values)) if values else (float("nan"), float("nan"))
    return Assessment(float(med), float(low), float(high), agree, len(held),
                      verdict(agree, len(held)))


def scorecard(claims: Sequence[Claim], per_seed: Sequence[Numbers]) -> pd.DataFrame:
    """One row per claim: the source's number beside ours (median over seeds) and the verdict."""
    rows = []
    for c in claims:
        a = assess(c, per_seed)
        rows.append({"claim": c.statement, "source": c.source, "source's number": c.source_value,
                     "ours": a.ours + (f" {c.unit}" if c.unit and a.measured else ""),
                     "seeds agreeing": f"{a.agree}/{a.measured}", "verdict": a.verdict})
    return pd.DataFrame(rows).set_index("claim")
