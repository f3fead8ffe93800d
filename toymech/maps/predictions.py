"""Other works' predictions judged on a map: one row each, as a map's page and its block in the
results record show them (a study declares its ``MAP_PREDICTIONS``, ``studies.predictions``)."""

from __future__ import annotations

import pandas as pd

from .summary import cell_groups


def prediction_rows(predictions, table: pd.DataFrame) -> pd.DataFrame:
    """One row per prediction judged on ``table``'s cells (``cell_groups``: the one grouping and
    its rule for runs without a label): ``prediction`` (its statement), ``source``, ``on our
    map`` (``Judgement.verdict``), ``counts`` and ``not computed`` (what of the source's result
    the rule does not compute).

    ``predictions``: a study's ``MAP_PREDICTIONS``; ``table``: the map's table."""
    cells = cell_groups(table) if len(table) else []
    rows = []
    for p in predictions:
        judged = p.judge(cells)
        rows.append({"prediction": p.statement, "source": p.source, "on our map": judged.verdict,
                     "counts": judged.counts, "not computed": p.not_computed})
    return pd.DataFrame(rows, columns=["prediction", "source", "on our map", "counts",
                                       "not computed"])


__all__ = ["prediction_rows"]
