"""Predictions from other work, judged on a map (``toymech.maps``): a study's ``MAP_PREDICTIONS``.

A prediction is a statement another paper's results lead us to expect of our own map, written as
a row of ours: what is expected (``statement``), whose work it comes from (``source``, the
public name), and a ``rule``, a pure function of the map's cells that returns a ``Judgement``:
the pairs of cells the statement compares, each a ``Pair`` (the cell predicted to carry a label
more often, the other, and their counts), and what was left out and why. It is judged on our
setting, never on the source's, and pair by pair:

* each pair's outcome: ``in the predicted direction`` (the predicted cell's share is larger),
  ``against`` (smaller), or a tie, named where it sits: ``tie at the floor`` (both 0),
  ``tie at the ceiling`` (both 1), ``tie`` (equal in between). A tie at the floor or the ceiling
  cannot show a difference whatever the truth: the cells are too easy or too hard for the label;
* each pair's exact one-sided p (Fisher's exact test, ``analysis.exact.fisher_greater``), and
  one stratified exact p over the pairs of each conjunct of the statement
  (``analysis.exact.stratified_greater``: the pairs as strata, their margins fixed);
* a verdict in three words: ``consistent`` (some pair in the predicted direction, none
  against), ``against`` (some against, none in the direction), ``undecided`` (both, or only
  ties); ``not judged on this map`` where the table lacks the cells the rule compares. The
  verdict reads directions; the p-values say how far chance alone could give them.

A statement with several parts (conjuncts) names each pair's conjunct; a rule applies a conjunct
only where its source's mechanism can exist on our map (and says so in ``Judgement.left_out``).
A map's page and its study's results page (``toymech results --pages``) show one row per
prediction and one per pair (``toymech.maps.predictions``). A verdict is never that a result
was reproduced.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..analysis.exact import fisher_greater, interval_text, stratified_greater
from ..core import check

IN_DIRECTION, AGAINST = "in the predicted direction", "against"
TIE_FLOOR, TIE_CEILING, TIE = "tie at the floor", "tie at the ceiling", "tie"
CONSISTENT, AGAINST_VERDICT, UNDECIDED = "consistent", "against", "undecided"
UNJUDGED = "not judged on this map"
VERDICTS = (CONSISTENT, AGAINST_VERDICT, UNDECIDED, UNJUDGED)


@dataclass(frozen=True)
class Pair:
    """One comparison of a prediction: the cell predicted to carry ``label`` more often
    (``higher``: its name in words, ``held`` runs with the label of ``runs`` judged) and the
    other (``lower``, ``lower_held`` of ``lower_runs``), under the statement's ``conjunct``."""

    conjunct: str
    label: str
    higher: str
    held: int
    runs: int
    lower: str
    lower_held: int
    lower_runs: int

    def __post_init__(self) -> None:
        for name, k, n in (("held", self.held, self.runs),
                           ("lower_held", self.lower_held, self.lower_runs)):
            check(isinstance(n, int) and n >= 1, name.replace("held", "runs"), n,
                  "at least one judged run (a cell without one is left out, not paired)")
            check(isinstance(k, int) and 0 <= k <= n, name, k, f"a count from 0 to {n}")

    @property
    def counts(self) -> tuple[int, int, int, int]:
        """(held, runs, lower_held, lower_runs): the pair as a 2 x 2 table."""
        return self.held, self.runs, self.lower_held, self.lower_runs

    @property
    def outcome(self) -> str:
        """The pair's outcome (the module docstring), comparing the shares exactly."""
        a, b = self.held * self.lower_runs, self.lower_held * self.runs
        if a > b:
            return IN_DIRECTION
        if a < b:
            return AGAINST
        if self.held == 0:
            return TIE_FLOOR
        return TIE_CEILING if self.held == self.runs else TIE

    @property
    def p(self) -> float:
        """Fisher's exact one-sided p that the ``higher`` cell's share is the larger."""
        return fisher_greater(*self.counts)

    def text(self) -> str:
        """The pair in words: both cells with their counts and intervals, the outcome, p."""
        return (f"{self.higher} {self.held} of {self.runs} "
                f"{interval_text(self.held, self.runs)} vs {self.lower} {self.lower_held} of "
                f"{self.lower_runs} {interval_text(self.lower_held, self.lower_runs)} "
                f"('{self.label}'): {self.outcome}, one-sided exact p = {self.p:.3g}")


@dataclass(frozen=True)
class Judgement:
    """A rule's answer on one table: its ``pairs`` (``Pair``s, every conjunct's), and
    ``left_out`` (what the rule did not compare and why, in words: cells without enough
    labelled runs, a conjunct not applied where its mechanism cannot exist); ``note``: why
    nothing was judged, where no pair is left."""

    pairs: tuple[Pair, ...] = ()
    left_out: str = ""
    note: str = ""

    def __post_init__(self) -> None:
        check(all(isinstance(p, Pair) for p in self.pairs), "pairs", self.pairs,
              "a tuple of Pair")

    @property
    def verdict(self) -> str:
        """``consistent``, ``against``, ``undecided`` or ``not judged on this map`` (the module
        docstring)."""
        if not self.pairs:
            return UNJUDGED
        outcomes = {p.outcome for p in self.pairs}
        if IN_DIRECTION in outcomes and AGAINST not in outcomes:
            return CONSISTENT
        if AGAINST in outcomes and IN_DIRECTION not in outcomes:
            return AGAINST_VERDICT
        return UNDECIDED

    def conjuncts(self) -> list[str]:
        """The conjuncts of the pairs, in the order they first appear."""
        return list(dict.fromkeys(p.conjunct for p in self.pairs))

    def p(self, conjunct: str) -> float:
        """The stratified exact one-sided p over the pairs of ``conjunct``."""
        mine = [p.counts for p in self.pairs if p.conjunct == conjunct]
        check(bool(mine), "conjunct", conjunct, f"one of {self.conjuncts()}")
        return stratified_greater(mine)

    @property
    def counts(self) -> str:
        """The judgement in words: per conjunct, how many pairs had each outcome and the
        stratified p, then what was left out (or why nothing was judged)."""
        if not self.pairs:
            return self.note or "no pair of cells to compare on this map"
        parts = []
        for c in self.conjuncts():
            mine = [p for p in self.pairs if p.conjunct == c]
            seen = {o: sum(p.outcome == o for p in mine) for o in
                    (IN_DIRECTION, TIE_FLOOR, TIE_CEILING, TIE, AGAINST)}
            said = ", ".join(f"{n} {o}" for o, n in seen.items() if n)
            parts.append(f"{c}: {len(mine)} pair{'s' if len(mine) != 1 else ''} ({said}), "
                         f"stratified one-sided exact p = {self.p(c):.3g}")
        text = "; ".join(parts) + "."
        return text + (f" Left out: {self.left_out.rstrip('.')}." if self.left_out else "")


@dataclass(frozen=True)
class MapPrediction:
    """A prediction of another work's, judged on our map: ``name`` (short, unique in a study),
    ``statement`` (what the map should show, in our terms), ``source`` (the work by its public
    name), ``rule`` (the map's cells -> ``Judgement``; the maps package groups a table into
    cells, ``toymech.maps.summary.cell_groups``, and a cell says which of its runs carry a
    label), ``not_computed`` (what of the source's result the rule does not compute: a
    prediction judged on our map is never the source's result itself)."""

    name: str
    statement: str
    source: str
    rule: Callable[[Sequence], Judgement]  # the map's cells (toymech.maps.summary.Cell) -> ...
    not_computed: str = ""  # what of the source's result the rule does not compute

    def __post_init__(self) -> None:
        for name in ("name", "statement", "source"):
            value = getattr(self, name)
            check(isinstance(value, str) and value.strip() != "", name, value, "a non-empty string")
        check(callable(self.rule), "rule", self.rule,
              "a function of a map's cells returning a Judgement")
        check(isinstance(self.not_computed, str) and self.not_computed.strip() != "",
              "not_computed", self.not_computed,
              "a non-empty string: what of the source's result the rule does not compute")

    def judge(self, cells: Sequence) -> Judgement:
        """The rule's answer on a map's cells (``toymech.maps.summary.cell_groups``)."""
        check(isinstance(cells, (list, tuple)), "cells", type(cells).__name__,
              "a map's cells (toymech.maps.summary.cell_groups)")
        judged = self.rule(cells)
        check(isinstance(judged, Judgement), "rule result", type(judged).__name__, "a Judgement")
        return judged


__all__ = ["AGAINST", "AGAINST_VERDICT", "CONSISTENT", "IN_DIRECTION", "TIE", "TIE_CEILING",
           "TIE_FLOOR", "UNDECIDED", "UNJUDGED", "VERDICTS", "Judgement", "MapPrediction", "Pair"]
