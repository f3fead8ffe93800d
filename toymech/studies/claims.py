"""Claims as data, verdicts computed over seeds: the one definition of every verdict.

A ``Claim`` states what a source says and how we test it on one seed's named numbers (a flat
``{name: float}`` dict, the study's ``measure_seed``): ``value`` picks the number we report,
``holds`` says whether that seed agrees with the source (True / False, or None: *unresolved*, the
seed measured the claim but cannot decide it, e.g. two curves that never rose), ``reference`` the
chance or null value for the same task instance (computed by a package function of the task,
shown beside ours). ``test`` and ``why`` say, in words, what the test asks and why its tolerance
is what it is (docs/sources.md lists them, one row per claim).

Missing means not measured, decided here and nowhere else: a claim reads its numbers through a
view in which a missing key AND a non-finite value (NaN, inf) raise ``KeyError``, and ``assess``
counts a seed whose ``value`` or ``holds`` raised ``KeyError`` as not measured. So no claim can
pass or fail on NaN, and a claim "over every task" written with ``need(n, keys)`` is not measured
for a seed that lacks one of them.

``assess`` over the seeds:

    ours      median of ``value`` over the seeds that measured it, with its [min, max]
    agree     seeds for which ``holds`` is True, out of the ``measured`` ones (True or False)
    verdict   measured >= 3:  "reproduced" when agree/measured >= 0.8, "not reproduced" when
                              agree = 0, else "mixed";
              measured 1-2:   "consistent (1 seed)" / "consistent (2 seeds)" when all agree,
                              "not reproduced (1 seed)" ... when none does, else "mixed (2 seeds)";
              measured 0:     "unresolved" when some seed was unresolved, else "not measured".

A size marked as a pipeline check (``smoke``: models trained for seconds) gets no verdict words:
its verdict column reads "pipeline check: holds k/n" (or "not measured"), and the scorecard's title
says so. ``scorecard`` returns a DataFrame (one row per claim; ``attrs["title"]`` names the size and
the seeds); notebooks display it and never compute a verdict themselves.
"""

from __future__ import annotations

import math
import numbers as _numbers
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import pandas as pd

from ..core import SIZES, check

Numbers = Mapping[str, Any]

REPRODUCED_SEEDS = 3      # seeds measured before a claim may read "reproduced"
REPRODUCED_SHARE = 0.8    # share of them that must agree
PIPELINE_SIZES = ("smoke",)  # sizes whose scorecard is a pipeline check, not evidence
LEGEND = (f". \"Reproduced\" needs at least {REPRODUCED_SEEDS} seeds measured and "
          f"{REPRODUCED_SHARE:.0%} of them agreeing; with fewer a claim reads \"consistent (n "
          "seeds)\"; \"unresolved\": measured but undecided (e.g. two curves that never rose). "
          "\"Chance / null\" is what a model that learned nothing scores on the same data. Each "
          "claim's test and tolerance: docs/sources.md.")


@dataclass(frozen=True)
class Claim:
    """One claim of a source, and our test of it (see the module docstring)."""

    key: str
    statement: str
    source: str           # where the source makes it ("the post, 'Results'")
    source_value: str     # the source's number or words, as the source gives them
    value: Callable[[Numbers], float | None]
    holds: Callable[[Numbers], bool | None]
    unit: str = ""
    test: str = ""        # our test in words, with its tolerance
    why: str = ""         # why that tolerance (a measured spread, a null, the size we run at)
    reference: Callable[[Numbers], float | None] | None = None  # chance / null, same instance
    trained: bool = True  # False: a property of the initialisation, not of training
    ours: bool = False    # the number compared with is ours, not the source's

    def __post_init__(self) -> None:
        check(isinstance(self.key, str) and self.key != "", "key", self.key, "a non-empty string")
        check(callable(self.value) and callable(self.holds), "claim", self.key,
              "value and holds functions")


class Measured(Mapping):
    """A seed's numbers as claims see them: a missing key and a non-finite value both raise
    ``KeyError`` (so both read as "not measured")."""

    def __init__(self, numbers: Numbers):
        self._numbers = numbers

    def __getitem__(self, key: str) -> Any:
        value = self._numbers[key]
        if isinstance(value, _numbers.Real) and not isinstance(value, bool) and not math.isfinite(
                float(value)):
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return (k for k in self._numbers if k in self)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    def all_keys(self) -> list[str]:
        """Every key, also those whose value is NaN (a claim that discovers its keys, e.g. the
        Ks of a sweep, reads them all so that one NaN makes it "not measured")."""
        return list(self._numbers)

    def __contains__(self, key: object) -> bool:
        try:
            self[key]  # type: ignore[index]
        except KeyError:
            return False
        return True


def need(n: Numbers, keys: Iterable[str]) -> list[Any]:
    """The values of every key (KeyError, i.e. "not measured", when any is missing or NaN):
    for claims over "every task", which must not be decided on a subset."""
    return [n[k] for k in keys]


def _call(fn: Callable[[Numbers], Any] | None, numbers: Numbers) -> Any:
    if fn is None:
        return None
    try:
        return fn(Measured(numbers))
    except KeyError:  # this seed did not measure what the claim needs
        return None


def _finite(v: Any) -> bool:
    return (isinstance(v, _numbers.Real) and not isinstance(v, bool)
            and math.isfinite(float(v)))


@dataclass(frozen=True)
class Assessment:
    median: float
    low: float
    high: float
    agree: int
    measured: int
    unresolved: int
    verdict: str
    reference: float = float("nan")

    @property
    def ours(self) -> str:
        if not math.isfinite(self.median):
            return "n/a"
        if self.low == self.high:
            return f"{self.median:.3g}"
        return f"{self.median:.3g} [{self.low:.3g}, {self.high:.3g}]"


def _seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def verdict(agree: int, measured: int, unresolved: int = 0, pipeline: bool = False) -> str:
    """The verdict for ``agree`` seeds out of ``measured`` (see the module docstring)."""
    check(isinstance(measured, int) and measured >= 0, "measured", measured, "an integer >= 0")
    check(isinstance(agree, int) and 0 <= agree <= measured, "agree", agree,
          f"an integer in 0..measured={measured}")
    if measured == 0:
        return "unresolved" if unresolved else "not measured"
    if pipeline:
        return f"pipeline check: holds {agree}/{measured}"
    if measured < REPRODUCED_SEEDS:
        if agree == measured:
            return f"consistent ({_seeds(measured)})"
        return f"not reproduced ({_seeds(measured)})" if agree == 0 else \
            f"mixed ({_seeds(measured)})"
    if agree / measured >= REPRODUCED_SHARE:
        return "reproduced"
    return "not reproduced" if agree == 0 else "mixed"


def holds_per_seed(claim: Claim, per_seed: Sequence[Numbers]) -> list[bool | None]:
    """``holds`` for each seed (None: not measured or unresolved)."""
    out = []
    for n in per_seed:
        h = _call(claim.holds, n)
        out.append(None if h is None else bool(h))
    return out


def assess(claim: Claim, per_seed: Sequence[Numbers], pipeline: bool = False) -> Assessment:
    """Median/spread of the claim's value and how many seeds agree with the source."""
    values = [float(v) for v in (_call(claim.value, n) for n in per_seed) if _finite(v)]
    refs = [float(v) for v in (_call(claim.reference, n) for n in per_seed) if _finite(v)]
    held, unresolved = [], 0
    for n in per_seed:
        try:
            h = claim.holds(Measured(n))
        except KeyError:
            continue  # not measured
        if h is None:
            unresolved += 1
        else:
            held.append(bool(h))
    agree = sum(held)
    med = statistics.median(values) if values else float("nan")
    low, high = (min(values), max(values)) if values else (float("nan"), float("nan"))
    return Assessment(float(med), float(low), float(high), agree, len(held), unresolved,
                      verdict(agree, len(held), unresolved, pipeline),
                      float(statistics.median(refs)) if refs else float("nan"))


def is_pipeline(size: str | None) -> bool:
    return size in PIPELINE_SIZES


def title(size: str | None, seeds: Sequence[int] | None) -> str:
    """The scorecard's title: the size and the seeds it was assessed over."""
    where = "" if size is None else f" at size {size}"
    over = "" if seeds is None else f" over {_seeds(len(seeds))} ({', '.join(map(str, seeds))})"
    if is_pipeline(size):
        return (f"Pipeline check{where}{over}: the models trained for seconds, so the rows say "
                "only that every claim was computed; they are no evidence for or against a source")
    return f"Reproduction scorecard{where}{over}"


def scorecard(claims: Sequence[Claim], per_seed: Sequence[Numbers], size: str | None = None,
              seeds: Sequence[int] | None = None) -> pd.DataFrame:
    """One row per claim: the source's number beside ours (median [min, max] over seeds), the
    chance / null reference, seeds agreeing and the verdict. ``size`` (smoke/default/paper; a
    pipeline check at smoke) and ``seeds`` (the seeds of ``per_seed``) go into the title."""
    if size is not None:
        check(size in SIZES, "size", size, f"one of {', '.join(SIZES)}")
    check(seeds is None or len(seeds) == len(per_seed), "seeds", seeds,
          f"one seed per entry of per_seed ({len(per_seed)})")
    pipeline = is_pipeline(size)
    rows = []
    for c in claims:
        a = assess(c, per_seed, pipeline)
        unit = f" {c.unit}" if c.unit and a.ours != "n/a" else ""
        agreeing = f"{a.agree}/{a.measured}" + (f" (+{a.unresolved} unresolved)"
                                                  if a.unresolved else "")
        rows.append({"claim": c.statement, "source": c.source,
                     "source's number": c.source_value + (" (ours)" if c.ours else ""),
                     "ours": a.ours + unit,
                     "chance / null": f"{a.reference:.3g}" if math.isfinite(a.reference) else "",
                     "seeds agreeing": agreeing, "verdict": a.verdict})
    card = pd.DataFrame(rows).set_index("claim")
    card.attrs["title"] = title(size, seeds)
    card.attrs["caption"] = card.attrs["title"] + ("." if is_pipeline(size) else LEGEND)
    card.attrs["size"] = size
    return card


def verdict_table(claims: Sequence[Claim], per_seed: Mapping[int, Numbers]) -> pd.DataFrame:
    """One row per seed, one column per claim key: "yes" / "no" / "n/a" (not measured or
    unresolved), from the claims' own ``holds``: the per-seed view of the scorecard."""
    seeds = list(per_seed)
    cols = {c.key: ["n/a" if h is None else "yes" if h else "no"
                    for h in holds_per_seed(c, [per_seed[s] for s in seeds])] for c in claims}
    return pd.DataFrame(cols, index=pd.Index(seeds, name="seed"))


def agreement(claim: Claim, per_seed: Sequence[Numbers]) -> str:
    """"k/n seeds" for one claim (its own test; seeds that did not measure it are left out)."""
    a = assess(claim, per_seed)
    return f"{a.agree}/{_seeds(a.measured)}"


def by_key(claims: Sequence[Claim], key: str) -> Claim:
    found = [c for c in claims if c.key == key]
    check(len(found) == 1, "key", key, f"one of {', '.join(c.key for c in claims)}")
    return found[0]
