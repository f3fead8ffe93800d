"""Where a map is unsure, more runs (``run_map(refine=N)``): more seeds where a cell's share of
the map's label is least certain (its exact interval widest: a unanimous 3 of 3 is [0.29, 1.00],
no more certain than it looks narrow), then the value half way between neighbouring cells whose
labels differ."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..analysis.exact import share_interval
from ..studies import protocol
from .spec import MAX_MAP_SEEDS, check_map
from .summary import cell_groups
from .table import knob_columns

# A cell gets more seeds while the exact 95 % interval of its share of the map's label is wider
# than this: its share then known to within about a quarter either way. Three seeds never reach
# it (0 or 3 of 3: 0.71 wide); six unanimous seeds do (0.46).
TARGET_WIDTH = 0.5


def _widths(table: pd.DataFrame, label: str) -> dict[tuple, tuple[float, bool, int]]:
    """{cell: (the width of its label share's interval, whether its labels disagree, its runs)}
    of the cells with a measured run, every run of the cell in the denominator."""
    out = {}
    for c in cell_groups(table):
        if len(c.measured):
            lo, hi = share_interval(c.held(label), c.n)
            out[(c.experiment, *c.knobs.values())] = (hi - lo,
                                                      c.measured["label"].nunique() > 1, c.n)
    return out


def _seeded(table: pd.DataFrame, cell: tuple, names: list[str]) -> set[int]:
    """The seeds ``table`` already holds for ``cell``."""
    mask = table["experiment"].astype(str) == cell[0]
    for column, value in zip(names[1:], cell[1:]):
        mask &= table[column].astype(str) == value
    return {int(s) for s in table.loc[mask, "seed"]}


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

    1. each cell with a measured run whose share of the map's label has an exact 95 % interval
       wider than ``TARGET_WIDTH`` gets more seeds (the study's next judged seeds that the cell
       lacks), the widest interval first (at equal width, a cell whose labels disagree first,
       then the table's order), one seed per cell in turn, each at most doubling its runs;
    2. then, along a numeric knob, two neighbouring cells whose commonest labels differ get the
       value half way between them, with the map's seeds.

    ``table``: the map's table; ``spec``: the map's (``check_map``'s) spec; ``budget``: the
    runs to add at most."""
    study = protocol.study(spec["study"])
    cells = _measured_cells(table)
    columns = knob_columns(table)
    names = ["experiment", *columns]
    judged = list(study.seeds_of(spec["size"], 0, MAX_MAP_SEEDS))
    widths = _widths(table, study.map_label)
    # widest first; at equal width a cell whose labels disagree, then the table's order
    wide = sorted((c for c, (w, _, _) in widths.items() if w > TARGET_WIDTH),
                  key=lambda c: (-round(widths[c][0], 9), not widths[c][1]))
    columns_of = ["experiment", *columns.values()]
    pools = {c: [s for s in judged if s not in _seeded(table, c, columns_of)] for c in wide}
    more: dict[tuple, list[int]] = {cell: [] for cell in wide}
    left = budget
    for _ in range(max((widths[c][2] for c in wide), default=0)):  # a seed per cell in turn,
        for cell in wide:                                        # each at most doubling its runs
            if left and pools[cell] and len(more[cell]) < widths[cell][2]:
                more[cell].append(pools[cell].pop(0))
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
