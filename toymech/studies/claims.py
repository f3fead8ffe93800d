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

Each claim names the ``setting`` at which its source states it (``toymech.studies.settings``:
steps, batch, width, task sizes, what is frozen). Where the run's setting (the study's
``StudySettings`` for the size) does not meet it, the row shows our number and its verdict reads
"below the source's setting" with the parameters (ours vs theirs) and the command that reaches
them: it counts as neither reproduced nor not reproduced. A qualitative claim (``numeric=False``)
with a ``scaled`` reason is judged at our smaller setting, and its verdict says "(scaled: ...)",
only where a recorded run showed that the scaled setting gives the verdict of the source's
setting on that claim (``StudySettings.evidence``, re-read by ``tests/test_scaled_evidence.py``);
elsewhere it reads "below the source's setting" and quotes what the scaled run said.

``assess`` over the seeds REQUESTED (every entry of ``per_seed`` counts)::

    ours      median of ``value`` over the seeds that measured it, with its [min, max]
    agree     seeds for which ``holds`` is True, out of the ``measured`` ones (True or False)
    verdict   "reproduced" when measured >= 3 and agree >= 80 % of the REQUESTED seeds (a seed
              not measured or unresolved counts against it); "not reproduced" when some seed
              measured and none agrees; measured 1-2 with all of them agreeing: "consistent (1
              seed)" / "consistent (2 seeds)"; else "mixed" ("(k seeds)" when measured < 3);
              measured 0: "unresolved" when some seed was unresolved, else "not measured". A
              claim of ours (``ours``: a test the source never ran) reads "holds (our test)" and
              "does not hold (our test)" in place of "reproduced" and "not reproduced".

A size marked as a pipeline check (``smoke``: models trained for seconds) gets no verdict words:
its verdict column reads "pipeline check: holds k/n" (or "not measured"), and the scorecard's title
says so. ``scorecard`` returns a DataFrame (one row per claim; ``attrs["title"]`` names the size and
the seeds); notebooks display it and never compute a verdict themselves.
"""

from __future__ import annotations

import dataclasses
import math
import numbers as _numbers
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ..core import Setting, check
from .settings import (
    NO_SIZE_REACHES,
    REACHED_BY,
    Parameters,
    StudySettings,
    describe,
    missing,
    shortfall,
)

Numbers = Mapping[str, Any]

REPRODUCED_SEEDS = 3      # seeds measured before a claim may read "reproduced"
REPRODUCED_SHARE = 0.8    # share of them that must agree
PIPELINE_SIZES = ("smoke",)  # sizes whose scorecard is a pipeline check, not evidence
BELOW = "below the source's setting"
SCALED_SAYS = "our scaled run says "  # how a BELOW verdict quotes the scaled run's own verdict
# what a BELOW verdict adds after quoting the scaled run
SCALED_CAVEAT = "no run has shown that the scaled setting gives the source's setting's verdict"
LEGEND = (f". \"Reproduced\" needs at least {REPRODUCED_SEEDS} seeds measured and "
          f"{REPRODUCED_SHARE:.0%} of the seeds requested agreeing (a seed not measured or "
          "unresolved counts against); with fewer a claim reads \"consistent (n seeds)\"; "
          "\"unresolved\": measured but undecided. \"Below the source's setting\": our run is "
          "smaller than the source's (the parameters and the command that reaches it are "
          "given), so the row is not judged. \"Chance / null\" is the reference named in the "
          "row (chance: a uniform guess; a threshold derived from it; a trivial predictor, a "
          "ceiling, an untrained model); a dash there: the "
          "claim compares two of our measurements, or ours with the source's number, so no "
          "single reference applies. \"Holds (our test)\" / \"does not hold (our test)\": "
          "a test of ours that the source never ran, so never \"reproduced\". Each claim's "
          "setting, test and tolerance: docs/sources.md.")
# "chance" is a uniform guess over the task's answers and nothing else; a line derived from it
# (half of it, the midpoint of it and the floor) is a "threshold".
NULLS = ("chance", "threshold", "trivial predictor", "ceiling", "untrained model",
         "unpatched run")
OURS_HOLDS = "holds (our test)"  # a claim of ours (``ours``): never "reproduced"
OURS_FAILS = "does not hold (our test)"
NO_NULL = "—"  # the null cell of a claim with no single reference number (the legend says why)


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
    ours: bool = False    # our test, which the source never ran (the number compared with is
    #  ours): its verdict reads "holds (our test)", never "reproduced"
    setting: Parameters = field(default_factory=dict)  # where the source states it
    numeric: bool = True  # a number (a loss, an accuracy); False: a mechanism, order, preference
    scaled: str = ""      # why this qualitative claim may be judged below the source's setting
    null: str = ""        # what ``reference`` is: one of NULLS
    null_detail: str = ""  # which one, in a reader's words ("a value listed in the context")
    null_exempt: str = ""  # why untrained models cannot be shown to fail it (empty: they can)
    calibration: tuple[int, ...] = ()  # seeds this claim's own calibration used: never judged
    some: Callable[[Numbers], bool] | None = None  # a seed the claim needs among those judged
    #  (the rebuttal's perfect runs): where no seed has it, no seed agrees

    def __post_init__(self) -> None:
        check(isinstance(self.key, str) and self.key != "", "key", self.key, "a non-empty string")
        check(callable(self.value) and callable(self.holds), "claim", self.key,
              "value and holds functions")
        check(not (self.scaled and self.numeric), "scaled", self.key,
              "only on a qualitative claim (numeric=False): a number is never judged scaled")
        check((self.reference is None) == (self.null == ""), "null", self.key,
              f"one of {', '.join(NULLS)} exactly when the claim has a reference")
        check(self.null in ("", *NULLS), "null", self.null, f"one of {', '.join(NULLS)}")
        lacks = missing(self.setting or {})
        check(not lacks, f"setting of claim {self.key!r}", dict(self.setting or {}),
              f"the source's setting naming {', '.join(lacks)} (no verdict without a setting)")


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
    """The values in the numbers ``n`` of every one of ``keys`` (KeyError, i.e. "not measured",
    when any is missing or NaN): for claims over "every task", which must not be decided on a
    subset."""
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
    requested: int = 0

    @property
    def ours(self) -> str:
        """Our number as the scorecard prints it: the median [min, max] over seeds, "n/a" when
        no seed measured it."""
        if not math.isfinite(self.median):
            return "n/a"
        if self.low == self.high:
            return f"{self.median:.3g}"
        return f"{self.median:.3g} [{self.low:.3g}, {self.high:.3g}]"


def _seeds(n: int) -> str:
    return f"{n} seed{'s' if n != 1 else ''}"


def verdict(agree: int, measured: int, unresolved: int = 0, pipeline: bool = False,
            requested: int | None = None, ours: bool = False) -> str:
    """The verdict for ``agree`` seeds out of ``measured``, with ``unresolved`` seeds, over
    ``requested`` seeds (None: measured + unresolved); ``pipeline``: a pipeline-check size (no
    verdict words); ``ours``: a test of ours the source never ran, which reads "holds (our
    test)" / "does not hold (our test)" where a source's claim reads "reproduced" / "not
    reproduced". See the module docstring."""
    check(isinstance(measured, int) and measured >= 0, "measured", measured, "an integer >= 0")
    check(isinstance(agree, int) and 0 <= agree <= measured, "agree", agree,
          f"an integer in 0..measured={measured}")
    requested = measured + unresolved if requested is None else requested
    check(isinstance(requested, int) and requested >= measured + unresolved, "requested",
          requested, f"an integer >= measured + unresolved = {measured + unresolved}")
    if measured == 0:
        return "unresolved" if unresolved else "not measured"
    if pipeline:
        return f"pipeline check: holds {agree}/{measured}"
    few = f" ({_seeds(measured)})" if measured < REPRODUCED_SEEDS else ""
    if agree == 0:
        return (OURS_FAILS if ours else "not reproduced") + few
    if measured >= REPRODUCED_SEEDS and agree / requested >= REPRODUCED_SHARE:
        return OURS_HOLDS if ours else "reproduced"
    if few and agree == measured:
        return "consistent" + few
    return "mixed" + few


def verdict_words(claim: Claim) -> tuple[str, str]:
    """The words ``claim``'s verdict uses where every seed agrees / none does: "reproduced" /
    "not reproduced" for a source's claim, "holds (our test)" / "does not hold (our test)" for a
    test of ours (``ours``)."""
    return (OURS_HOLDS, OURS_FAILS) if claim.ours else ("reproduced", "not reproduced")


def holds_per_seed(claim: Claim, per_seed: Sequence[Numbers]) -> list[bool | None]:
    """``claim.holds`` for each seed's numbers in ``per_seed`` (None: not measured or
    unresolved)."""
    out = []
    for n in per_seed:
        h = _call(claim.holds, n)
        out.append(None if h is None else bool(h))
    return out


def assess(claim: Claim, per_seed: Sequence[Numbers], pipeline: bool = False,
           settings: StudySettings | None = None, size: Setting | str | None = None,
           seeds: Sequence[int] | None = None) -> Assessment:
    """Median/spread of ``claim``'s value and how many of the requested seeds (every entry of
    ``per_seed``) agree with the source (``pipeline``: a pipeline-check size, no verdict words); with ``settings`` and ``size``, "below the source's
    setting" where that size does not meet the claim's setting (see the module docstring).
    With ``seeds``, the claim's own calibration seeds are left out (never judged)."""
    if seeds is not None and claim.calibration:
        per_seed = [n for s, n in zip(seeds, per_seed) if s not in claim.calibration]
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
    if claim.some is not None and not any(_call(claim.some, n) for n in per_seed):
        held = [False] * len(held)  # the seed the claim rests on (``some``) is not among them
    agree = sum(held)
    med = statistics.median(values) if values else float("nan")
    low, high = (min(values), max(values)) if values else (float("nan"), float("nan"))
    said = verdict(agree, len(held), unresolved, pipeline, len(per_seed), claim.ours)
    short = shortfall(claim.setting, settings.of(size)) if settings and size else ()
    if short and not pipeline:
        if claim.scaled and settings.scaled_shown(size, claim.key):
            said = f"{said} (scaled: {describe(short)})"
        else:
            said = (f"{BELOW}: {describe(short)}; {settings.reach(claim.setting)}"
                    + (f"; {SCALED_SAYS}{said}, but {SCALED_CAVEAT}" if claim.scaled else ""))
    return Assessment(float(med), float(low), float(high), agree, len(held), unresolved,
                      said, float(statistics.median(refs)) if refs else float("nan"),
                      len(per_seed))


@dataclass(frozen=True)
class VerdictParts:
    """A verdict cell as ``assess`` writes it, in its parts: ``word`` (the verdict words, "below
    the source's setting", or "reproduced (scaled)" for a row judged scaled), ``gaps`` (each
    parameter short of the source's, "steps 400 vs the source's 10,000"), ``reach`` (the
    command that meets the source's setting, or that no size does; "" where the cell has none)
    and ``scaled_says`` (the scaled run's own verdict a BELOW row quotes, followed by
    ``SCALED_CAVEAT``; "" where none)."""

    word: str
    gaps: tuple[str, ...] = ()
    reach: str = ""
    scaled_says: str = ""


def _clauses(text: str) -> list[str]:
    """``text`` split at each "; " outside brackets (a cost may hold one in its brackets)."""
    out, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0 and text.startswith("; ", i):
            out.append(text[start:i])
            start = i + 2
    return [*out, text[start:]]


def verdict_parts(cell: str) -> VerdictParts:
    """A verdict ``cell`` (``assess``'s words, as a scorecard shows them) in its parts
    (``VerdictParts``); a cell of no known form is all ``word``."""
    text = " ".join(str(cell).split())
    if text.startswith(f"{BELOW}: "):
        gaps, reach, says = [], "", ""
        for clause in _clauses(text[len(BELOW) + 2:]):
            if clause.startswith(REACHED_BY) or clause == NO_SIZE_REACHES:
                reach = clause
            elif clause.startswith(SCALED_SAYS) and clause.endswith(f", but {SCALED_CAVEAT}"):
                says = clause[len(SCALED_SAYS):-len(f", but {SCALED_CAVEAT}")]
            else:
                gaps.append(clause)
        return VerdictParts(BELOW, tuple(gaps), reach, says)
    if text.endswith(")") and " (scaled: " in text:
        word, _, short = text[:-1].rpartition(" (scaled: ")
        return VerdictParts(f"{word} (scaled)", tuple(_clauses(short)))
    return VerdictParts(text)


def property_verdict(a: Assessment) -> str:
    """A variant's row: whether the claim's test holds as a property of our runs, and on how
    many of the requested seeds ("holds, 3 of 3 seeds"); never a verdict on the source."""
    if a.measured == 0:
        return "unresolved" if a.unresolved else "not measured"
    of = f"{a.agree} of {_seeds(a.requested)}"
    if a.agree == a.requested:
        return f"holds, {of}"
    return f"does not hold, {of}" if a.agree == 0 else f"holds on {of}"


VARIANT_LEGEND = (". A variant is not the source's setting: each row says whether the claim's "
                  "test holds as a property of these runs, and on how many of the seeds; no "
                  "row is a verdict on the source.")


def is_pipeline(size: Setting | str | None) -> bool:
    """Whether ``size`` (a size name or a ``Setting``) is a pipeline check (``smoke``), whose
    scorecard has no verdict words."""
    return (size.size if isinstance(size, Setting) else size) in PIPELINE_SIZES


def title(size: Setting | str | None, seeds: Sequence[int] | None) -> str:
    """The scorecard's title: the size (a size name or a ``Setting``: a variant's sentence
    follows it) and the seeds it was assessed over."""
    setting = None if size is None else Setting.of(size)
    variant = setting is not None and bool(setting.knobs)
    where = "" if setting is None else f" at size {setting.size}"
    over = "" if seeds is None else f" over {_seeds(len(seeds))} ({', '.join(map(str, seeds))})"
    if variant:
        where += f", {setting.described}" if setting.described else " (a variant)"
    if variant and not is_pipeline(size):
        return f"Properties of a variant{where}{over}"
    if is_pipeline(size):
        return (f"Pipeline check{where}{over}: the models trained for seconds, so the rows say "
                "only that every claim was computed; they are no evidence for or against a source")
    return f"Reproduction scorecard{where}{over}"


def _agreeing(a: Assessment) -> str:
    """"2/3 (+1 unresolved)", "2/3 (1 not measured)": out of the seeds requested."""
    missing = a.requested - a.measured - a.unresolved
    extra = ([f"+{a.unresolved} unresolved"] if a.unresolved else []) + \
        ([f"{missing} not measured"] if missing > 0 else [])
    return f"{a.agree}/{a.measured}" + (f" ({', '.join(extra)})" if extra else "")


def check_seeds(seeds: Sequence[int] | None, per_seed: Sequence[Numbers],
                settings: StudySettings | None = None, size: Setting | str | None = None) -> None:
    """``seeds``: one distinct seed per entry of ``per_seed``, none of them a calibration seed of
    ``size`` under the study's ``settings`` (ValueError otherwise; None: nothing to check)."""
    if seeds is None:
        return
    check(len(seeds) == len(per_seed), "seeds", seeds,
          f"one seed per entry of per_seed ({len(per_seed)})")
    check(len(set(seeds)) == len(seeds), "seeds", list(seeds), "distinct seeds (one repeated)")
    cal = set(settings.calibration_seeds(size)) if settings else set()
    check(not cal & set(seeds), "seeds", list(seeds),
          f"judged seeds only: {sorted(cal & set(seeds))} calibrated the thresholds at {size}")


def scorecard(claims: Sequence[Claim], per_seed: Sequence[Numbers], size: Setting | str,
              seeds: Sequence[int] | None = None, settings: StudySettings | None = None
              ) -> pd.DataFrame:
    """One row per claim of ``claims``: the source's number beside ours (median [min, max] over seeds), the
    chance / null reference and what it is, seeds agreeing and the verdict. ``size``
    (smoke/default/paper; a pipeline check at smoke; always given: every row is judged against
    its setting; a ``Setting`` with knobs: a variant) and ``seeds`` (the distinct seeds of
    ``per_seed``, never a calibration seed) go into the title; ``settings`` (the study's
    ``StudySettings``, required but for a variant, whose rows are properties) decides which rows
    are below the source's setting."""
    setting = Setting.of(size)
    size, variant = setting.size, bool(setting.knobs)
    check(settings is not None or variant, "settings", settings,
          "the study's StudySettings: a scorecard judges every row against its setting")
    check_seeds(seeds, per_seed, settings, size)
    pipeline = is_pipeline(size)
    rows, reached = [], []
    for c in claims:
        if variant:  # properties of our runs: no source setting to meet, no verdict
            a = assess(c, per_seed, pipeline, None, None, seeds)
            if not pipeline:
                a = dataclasses.replace(a, verdict=property_verdict(a))
        else:
            a = assess(c, per_seed, pipeline, settings, size, seeds)
            if settings is not None and a.verdict.startswith(BELOW):
                # the command and cost that reach the setting: said once, under the table
                reach = settings.reach(c.setting)
                a = dataclasses.replace(a, verdict=a.verdict.replace(f"; {reach}", "", 1))
                reached += [reach] if reach not in reached else []
        unit = f" {c.unit}" if c.unit and a.ours != "n/a" else ""
        what = f"{c.null}: {c.null_detail}" if c.null_detail else c.null
        null = f"{a.reference:.3g} ({what})" if math.isfinite(a.reference) else NO_NULL
        rows.append({"claim": c.statement, "source": c.source,
                     "source's number": c.source_value + (" (ours)" if c.ours else ""),
                     "ours": a.ours + unit, "chance / null": null,
                     "seeds agreeing": _agreeing(a), "verdict": a.verdict})
    card = pd.DataFrame(rows).set_index("claim")
    card.attrs["title"] = title(setting, seeds)
    cal = settings.calibration_seeds(size) if settings else ()
    note = (f" Calibration seeds at {size} (never judged): {', '.join(map(str, cal))}."
            if cal else "")
    if reached:
        note = f" The rows {BELOW}: {'; '.join(reached)}." + note
    legend = VARIANT_LEGEND if variant else LEGEND + note
    card.attrs["caption"] = card.attrs["title"] + ("." if is_pipeline(size) else legend)
    card.attrs["size"] = size
    return card


def verdict_table(claims: Sequence[Claim], per_seed: Mapping[int, Numbers]) -> pd.DataFrame:
    """One row per seed of ``per_seed`` (seed -> numbers), one column per claim key of
    ``claims``: "yes" / "no" / "n/a" (not measured or unresolved), from the claims' own
    ``holds``: the per-seed view of the scorecard."""
    seeds = list(per_seed)
    cols = {c.key: ["n/a" if h is None else "yes" if h else "no"
                    for h in holds_per_seed(c, [per_seed[s] for s in seeds])] for c in claims}
    return pd.DataFrame(cols, index=pd.Index(seeds, name="seed"))


def agreement(claim: Claim, per_seed: Sequence[Numbers]) -> str:
    """"k/n seeds" for one ``claim`` over the numbers of ``per_seed`` (its own test; seeds that
    did not measure it are left out)."""
    a = assess(claim, per_seed)
    return f"{a.agree}/{_seeds(a.measured)}"


def by_key(claims: Sequence[Claim], key: str) -> Claim:
    """The claim of ``claims`` whose key is ``key``; ValueError naming the keys otherwise."""
    found = [c for c in claims if c.key == key]
    check(len(found) == 1, "key", key, f"one of {', '.join(c.key for c in claims)}")
    return found[0]
