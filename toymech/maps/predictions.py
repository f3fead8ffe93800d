"""Other works' predictions judged on a map: one row each, and one row per pair of cells each
compares, as a map's page and its block in the results record show them (a study declares its
``MAP_PREDICTIONS``, ``studies.predictions``: judged pair by pair, a verdict in three words)."""

from __future__ import annotations

import pandas as pd

from ..analysis.exact import interval_text
from .summary import cell_groups

PREDICTION_COLUMNS = ["prediction", "source", "on our map", "counts", "not computed"]
PAIR_COLUMNS = ["prediction", "conjunct", "label", "predicted higher", "other", "outcome",
                "exact p"]


def _judged(predictions, table: pd.DataFrame) -> list:
    cells = cell_groups(table) if len(table) else []
    return [(p, p.judge(cells)) for p in predictions]


def prediction_rows(predictions, table: pd.DataFrame) -> pd.DataFrame:
    """One row per prediction judged on ``table``'s cells (``cell_groups``: the one grouping and
    its rule for runs without a label): ``prediction`` (its statement), ``source``, ``on our
    map`` (``Judgement.verdict``: consistent, against, undecided, or not judged), ``counts``
    (per conjunct, its pairs' outcomes and the stratified exact p; what was left out) and ``not
    computed`` (what of the source's result the rule does not compute).

    ``predictions``: a study's ``MAP_PREDICTIONS``; ``table``: the map's table."""
    rows = [{"prediction": p.statement, "source": p.source, "on our map": judged.verdict,
             "counts": judged.counts, "not computed": p.not_computed}
            for p, judged in _judged(predictions, table)]
    return pd.DataFrame(rows, columns=PREDICTION_COLUMNS)


def pair_rows(predictions, table: pd.DataFrame) -> pd.DataFrame:
    """One row per pair of cells a prediction compares on ``table`` (``studies.predictions.Pair``):
    ``prediction`` (its name), ``conjunct``, ``label``, ``predicted higher`` and ``other`` (each
    cell with its count and the exact 95 % interval of its share), ``outcome`` (in the predicted
    direction, a tie at the floor or the ceiling, a tie, against) and ``exact p`` (Fisher's
    one-sided).

    ``predictions``: a study's ``MAP_PREDICTIONS``; ``table``: the map's table."""
    rows = [{"prediction": p.name, "conjunct": pair.conjunct, "label": pair.label,
             "predicted higher": f"{pair.higher}: {pair.held} of {pair.runs} "
                                 f"{interval_text(pair.held, pair.runs)}",
             "other": f"{pair.lower}: {pair.lower_held} of {pair.lower_runs} "
                      f"{interval_text(pair.lower_held, pair.lower_runs)}",
             "outcome": pair.outcome, "exact p": round(pair.p, 4)}
            for p, judged in _judged(predictions, table) for pair in judged.pairs]
    return pd.DataFrame(rows, columns=PAIR_COLUMNS)


__all__ = ["PAIR_COLUMNS", "PREDICTION_COLUMNS", "pair_rows", "prediction_rows"]
