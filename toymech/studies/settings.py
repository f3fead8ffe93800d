"""The setting a source states a claim at, against the setting a run of ours has.

A claim's ``setting`` is a flat ``{parameter: value}`` (``steps``, ``batch``, ``width``,
``modulus``, ``digits``, ``frozen``, ...): the source's own, as it states the claim. A study's
``StudySettings`` gives, per size, the same parameters for what that size trains (read from the
study's ``SIZES``), what running the report at that size costs, and the seeds its thresholds,
learning rates or recipes were chosen on (calibration seeds, never judged).

A run meets a claim's setting when every parameter of it is met: budget parameters (``AT_LEAST``:
steps, batch, width, ...) by ours >= theirs, every other one (task sizes, what is frozen) by
equality. A parameter the run does not state is not met. ``shortfall`` lists what is not met,
``reach`` names the smallest size of ours that meets it and the command that runs it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core import SIZES, Setting, check, size_name

# Parameters where more is at least the source's setting (a longer run, a wider model).
AT_LEAST = frozenset({"steps", "batch", "width", "d_model", "eval_n", "train_n", "seeds",
                      "circuit_target", "baseline_width", "baseline_steps", "side_steps",
                      "mem_width", "lm_width", "student_width"})

Parameters = Mapping[str, Any]  # a setting as parameters: {"steps": 10_000, "width": 512, ...}
Short = tuple[tuple[str, Any, Any], ...]  # (parameter, ours, theirs)
REACHED_BY = "reached by "  # how ``reach`` names the command that meets a setting
NO_SIZE_REACHES = "no size of ours reaches it"

# What every claim's setting names (``missing``), so that no row is judged at a size that
# differs from the source's in something the setting leaves out: the training budget, the
# model's width and the data (a corpus, or a synthetic task's sizes). A parameter counts by its
# name: ``steps`` or ``<what>_steps``; ``width``, ``d_model`` or ``<what>_width``; ``data``,
# a task size below or ``<what>_task``.
STEP_KEYS = ("steps",)
WIDTH_KEYS = ("width", "d_model")
DATA_KEYS = ("data", "length", "modulus", "needle_pairs", "digits", "paren_len", "max_len",
             "mem_table", "circuit_target")
KINDS = {"the steps": lambda k: k in STEP_KEYS or k.endswith("_steps"),
         "a width": lambda k: k in WIDTH_KEYS or k.endswith("_width"),
         "the data or task size": lambda k: k in DATA_KEYS or k.endswith("_task")}


def missing(setting: Parameters) -> list[str]:
    """What ``setting`` does not name of ``KINDS`` (empty: it names the steps, a width and the
    data)."""
    return [kind for kind, named in KINDS.items() if not any(named(k) for k in setting)]


def _fmt(v: Any) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return str(v)
    return f"{v:,}" if float(v).is_integer() else f"{v:g}"


def shortfall(source: Parameters, ours: Parameters | None) -> Short:
    """The parameters of ``source`` that ``ours`` does not meet, as (name, ours, theirs)."""
    ours = ours or {}
    out = []
    for name, theirs in source.items():
        have = ours.get(name)
        if have is None:
            out.append((name, "not stated", theirs))
        elif name in AT_LEAST and isinstance(theirs, (int, float)):
            if not (isinstance(have, (int, float)) and have >= theirs):
                out.append((name, have, theirs))
        elif have != theirs:
            out.append((name, have, theirs))
    return tuple(out)


def describe(short: Short) -> str:
    """"steps 2,000 vs the source's 10,000; width 64 vs 1,024"."""
    return "; ".join(f"{name} {_fmt(ours)} vs the source's {_fmt(theirs)}"
                     for name, ours, theirs in short)


def setting_text(setting: Parameters) -> str:
    """"steps 10,000, batch 256" (empty: "none stated")."""
    return ", ".join(f"{k} {_fmt(v)}" for k, v in setting.items()) or "none stated"


@dataclass(frozen=True)
class StudySettings:
    """A study's settings per size, the cost of reaching each, and its calibration seeds."""

    sizes: Mapping[str, Parameters]                 # size -> the setting that size trains at
    cost: Mapping[str, str]                      # size -> estimated cost of its report
    calibration: Mapping[str, tuple[int, ...]] = field(default_factory=dict)  # size -> seeds
    calibrated: str = ""                         # what was chosen on the calibration seeds
    judged: str = ""                             # which seeds are judged, in words
    # size -> keys of the qualitative claims whose scaled verdict at that size was shown to be
    # the verdict at the source's setting (``evidence_record`` says where, a test re-reads it);
    # a scaled claim without it reads "below the source's setting" at that size
    evidence: Mapping[str, frozenset[str]] = field(default_factory=dict)
    evidence_record: str = ""

    def __post_init__(self) -> None:
        check(set(self.sizes) == set(SIZES), "sizes", sorted(self.sizes),
              f"a setting for each of {', '.join(SIZES)}")
        check(set(self.cost) >= set(SIZES), "cost", sorted(self.cost),
              f"a cost for each of {', '.join(SIZES)}")

    @classmethod
    def of_sizes(cls, setting: Callable[[str], Parameters], cost: Mapping[str, str],
                 calibration: Mapping[str, tuple[int, ...]], **words: Any) -> StudySettings:
        """The settings of every size from a study's ``setting(size)``."""
        return cls({size: setting(size) for size in SIZES}, cost, calibration, **words)

    def of(self, size: Any) -> Parameters | None:
        """The parameters ``size`` (a size name or a ``core.Setting``; None: none) trains at."""
        return None if size is None else self.sizes[size_name(size)]

    def scaled_shown(self, size: Setting | str | None, key: str) -> bool:
        """Whether claim ``key``'s scaled verdict at ``size`` was shown to match the source's
        setting (``evidence``)."""
        return size is not None and key in self.evidence.get(size_name(size), frozenset())

    def calibration_seeds(self, size: Setting | str | None) -> tuple[int, ...]:
        return tuple(self.calibration.get(size_name(size), ())) if size is not None else ()

    def reach(self, source: Parameters) -> str:
        """The command that meets ``source`` and its cost, or that no size of ours does."""
        for size in SIZES:
            if not shortfall(source, self.sizes[size]):
                return f"{REACHED_BY}`./run.sh report --size {size}` ({self.cost[size]})"
        return NO_SIZE_REACHES

    def seeds_text(self) -> str:
        """"calibration: default 0-2; judged: ..." for the claims table."""
        cal = "; ".join(f"{s} {_span(self.calibration[s])}" for s in SIZES
                        if self.calibration.get(s)) or "none"
        return f"calibration seeds: {cal} ({self.calibrated or 'nothing calibrated'}); " \
               f"judged: {self.judged or 'the seeds of seeds_of, never a calibration seed'}"


def _span(seeds: Sequence[int]) -> str:
    seeds = sorted(seeds)
    if seeds and seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2:
        return f"{seeds[0]}-{seeds[-1]}"
    return ", ".join(map(str, seeds))


def skipping(seed: int, n: int, skip: Sequence[int]) -> tuple[int, ...]:
    """The first ``n`` seeds from ``seed`` on that are not in ``skip``."""
    out, s = [], seed
    while len(out) < n:
        if s not in skip:
            out.append(s)
        s += 1
    return tuple(out)
