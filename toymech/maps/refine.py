"""Where a map is unsure, more runs: more seeds where a cell's seeds disagree, the value half
way between neighbouring cells whose labels differ (``run_map(refine=N)``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..studies import protocol
from .spec import MAX_MAP_SEEDS, check_map
from .summary import cell_groups
from .table import knob_columns

def _measured_cells(table: pd.DataFrame) -> dict[tuple, pd.DataFrame]:
    """{(experiment, *knob values): its measured runs} of the cells that have any: a run without
    a label (``summary.run_state``) says nothing of where a label changes."""
    return {(c.experiment, *c.knobs.values()): c.measured for c in cell_groups(table)
            if len(c.measured)}


def _midpoint(knob, a: str, b: str) -> str | None:
    """The value half way between two single numeric values of a knob, as the table writes it
    (None where there is none strictly between, or the knob is not a number)."""
    if knob.kind not in ("int", "ints", "float"):
        return None
    x, y = knob.parse(a), knob.parse(b)
    if isinstance(x, tuple) or isinstance(y, tuple):
        return None
    mid = (x + y) / 2 if knob.kind == "float" else (x + y) // 2
    return knob.text(knob.parse(mid)) if min(x, y) < mid < max(x, y) else None


def refinements(table: pd.DataFrame, spec: dict[str, Any], budget: int) -> list[dict[str, Any]]:
    """Up to ``budget`` more runs where the map's ``table`` is unsure, as map specs of one cell
    each:
    first a cell whose seeds disagree (more than one label) gets more seeds (the study's next
    judged seeds, one per split cell in turn, at most as many as it has); then, along a numeric knob, two neighbouring cells
    whose commonest labels differ get the value half way between them, with the map's seeds.
    ``spec``: the map's (``check_map``'s) spec."""
    study = protocol.study(spec["study"])
    cells = _measured_cells(table)
    names = ["experiment", *knob_columns(table)]
    used = {int(s) for s in table["seed"]}
    pool = [s for s in study.seeds_of(spec["size"], 0, MAX_MAP_SEEDS) if s not in used]
    split = [cell for cell, runs in cells.items() if runs["label"].nunique() > 1]
    more: dict[tuple, list[int]] = {cell: [] for cell in split}
    left = budget
    for _ in range(max((len(cells[c]) for c in split), default=0)):  # a seed per cell in turn,
        for cell in split:                                     # each at most doubling its seeds
            if left and pool and len(more[cell]) < len(cells[cell]):
                more[cell].append(pool.pop(0))
                left -= 1
    parts = [_one_cell(spec, names, cell, seeds) for cell, seeds in more.items() if seeds]
    top = {cell: runs["label"].mode().iloc[0] for cell, runs in cells.items()}
    seeds, planned = list(spec["seeds"]), set()
    for j, name in enumerate(names[1:], start=1):
        knob = study.knobs[name]
        for cell, other in ((a, b) for a in top for b in top
                            if a[:j] + a[j + 1:] == b[:j] + b[j + 1:] and a[j] != b[j]):
            if left < len(seeds):
                return parts
            mid = _midpoint(knob, cell[j], other[j])
            new = cell[:j] + (mid,) + cell[j + 1:]
            inside = any(_between(knob, c[j], cell[j], other[j]) for c in top
                         if c[:j] + c[j + 1:] == cell[:j] + cell[j + 1:])
            if mid is None or top[cell] == top[other] or inside or new in planned:
                continue  # not neighbours, the same label, or planned already
            parts.append(_one_cell(spec, names, new, seeds))
            planned.add(new)
            left -= len(seeds)
    return parts


def _between(knob, v: str, a: str, b: str) -> bool:
    """Whether ``v`` lies strictly between ``a`` and ``b`` (single numeric values)."""
    try:
        x, lo, hi = knob.parse(v), *sorted((knob.parse(a), knob.parse(b)))
    except (TypeError, ValueError):
        return False
    return not isinstance(x, tuple) and lo < x < hi


def _one_cell(spec: dict[str, Any], names: list[str], cell: tuple, seeds: list[int]
              ) -> dict[str, Any]:
    """A map spec of one cell (checked as every map is)."""
    return check_map({**spec, "experiment": [cell[0]], "seeds": list(seeds),
                      "knobs": {n: [v] for n, v in zip(names[1:], cell[1:])}})


__all__ = ["refinements"]
