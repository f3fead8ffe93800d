"""Predictions from other work, judged on a map (``toymech.maps``): a study's ``MAP_PREDICTIONS``.

A prediction is a statement another paper's results lead us to expect of our own map, written as
a row of ours: what is expected (``statement``), whose work it comes from (``source``, the
public name), and a ``rule``, a pure function of the map's cells that returns a ``Judgement``
(whether the statement holds on the table, and the counts it used). It is judged on our
setting, never on the source's: a row says "holds on our map" or "does not hold on our map" (or
"not judged on this map" where the table lacks the cells the rule compares), never that a
result was reproduced. A map's page and its block in the results record
(``toymech results --pages``) show one row per prediction of the mapped study
(``toymech.maps.predictions.prediction_rows``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from ..core import check

HOLDS, FAILS, UNJUDGED = "holds on our map", "does not hold on our map", "not judged on this map"


@dataclass(frozen=True)
class Judgement:
    """A rule's answer on one table: ``holds`` (None: the table lacks what the rule compares)
    and ``counts`` (the counts it used, in words)."""

    holds: bool | None
    counts: str

    @property
    def verdict(self) -> str:
        return UNJUDGED if self.holds is None else HOLDS if self.holds else FAILS


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
        for field in ("name", "statement", "source"):
            value = getattr(self, field)
            check(isinstance(value, str) and value.strip() != "", field, value, "a non-empty string")
        check(callable(self.rule), "rule", self.rule, "a function of a map's cells returning a Judgement")
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


__all__ = ["FAILS", "HOLDS", "UNJUDGED", "Judgement", "MapPrediction"]
