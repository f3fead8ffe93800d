"""A map's runs grouped into cells, one rule for the states of runs that carry no label, the
table per cell and its finding in words, every share with its exact interval.

A cell is the runs of one experiment at one value of every knob (its seeds). ``cell_groups`` is
the one grouping: the page, the finding, the refinements and the predictions judged on a map all
read cells from it. ``run_state`` is the one rule for a run's state:

* a run the sweep did not finish is its sweep status (``failed``, ``diverged``, ...);
* a finished run the study's ``map_row`` calls ``untrained``, ``still learning`` or
  ``undecided`` (``toymech.studies.states``: the one order every study decides them in,
  ``states.state_of``), or the map calls ``budget exhausted``, is that state: not having learned
  is never evidence of absence;
* a finished run with no label is ``not measured``;
* every other run is ``measured`` (learned, stopped learning, its label decided) and carries its
  label.

**The map's budget.** A study does not know how many steps a map gives a run; the map does
(``budget_state``, applied to each row as it is measured): a run the study calls ``still
learning`` is ``budget exhausted`` once it has had the map's budget, the ``until_converged``
cap of a map with that policy (``maps.spec``), else its own steps (a map without the policy
gives a run its steps and no more). So in a finished map ``still learning`` is left only on a
run the policy will continue; a later invocation with a higher cap continues a ``budget
exhausted`` run too.

A state is never a label: a cell's runs count every seed (its denominator), and a label is held
only by measured runs. Every share of a cell is printed with its exact 95 % interval
(``analysis.exact.share_interval``, Clopper-Pearson: 3 of 3 is [0.29, 1.00]). A study's
``map_row`` states a run's state in its ``state`` column and how far the run got beyond the
best predictor without the mechanism in ``beyond_baseline`` (positive: better than it, in the
study's own units).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import pandas as pd

from ..analysis.exact import interval_text, share_interval
from ..core import check
from ..display.prose import NAMED_AT_MOST
from ..studies.states import (
    BEYOND,
    BUDGET_EXHAUSTED,
    LEARNED,
    STATES,
    STILL_LEARNING,
    UNDECIDED,
    UNTRAINED,
)
from .table import knob_column, knob_columns

MEASURED = "measured"
NOT_MEASURED = "not measured"


_WITHOUT_LABEL = tuple(s for s in STATES if s != LEARNED)  # a study's or map's state, no label


def run_state(status, label, state=None) -> str:
    """A run's state (the module's rule): its sweep ``status`` where that is not ``ok``; the
    row's ``state`` where it is one without a label (``untrained``, ``still learning``,
    ``budget exhausted``, ``undecided``); ``not measured`` where it finished but has no label
    (missing, or the study's own ``not measured``); else ``measured``.

    ``status``: the sweep's status of the run; ``label``: its row's label; ``state``: its
    row's ``state`` column (None where the study writes none)."""
    if isinstance(status, str) and status != "ok":
        return status
    if isinstance(state, str) and state in _WITHOUT_LABEL:
        return state
    if label is None or (isinstance(label, float) and math.isnan(label)) or str(label) in (NOT_MEASURED, ""):
        return NOT_MEASURED
    return MEASURED


def budget_state(state, steps, cap) -> str:
    """A measured row's ``state`` once the map's budget is known (the module docstring): a run
    ``still learning`` at ``steps`` is ``budget exhausted`` where the map will give it no more
    (``cap`` None: a map without the budget policy; or ``steps >= cap``); every other state is
    returned as it is.

    ``state``: the study's state of the run; ``steps``: the steps it trained; ``cap``: the map's
    ``until_converged`` (None without it)."""
    if state != STILL_LEARNING:
        return state
    return BUDGET_EXHAUSTED if cap is None or int(steps) >= int(cap) else STILL_LEARNING


def cell_key(experiment: str, knobs: dict[str, str]) -> tuple:
    """What makes runs one cell: their ``experiment`` and the value of every knob (``knobs``:
    {name: value as the table writes it}), in name order; the seed is not part of it. The
    table's grouping (``cell_groups``) and a running map's live line (``run``) both key cells
    by it."""
    return (str(experiment), *sorted((str(k), str(v)) for k, v in knobs.items()))


@dataclass(frozen=True)
class Cell:
    """One cell of a map: its ``experiment``, ``knobs`` ({name: value as the table writes it})
    and ``runs`` (its rows, with a ``state`` column from ``run_state``)."""

    experiment: str
    knobs: dict[str, str]
    runs: pd.DataFrame = field(repr=False)

    @property
    def n(self) -> int:
        """Every run of the cell, whatever its state (each requested seed counts)."""
        return len(self.runs)

    @property
    def measured(self) -> pd.DataFrame:
        return self.runs[self.runs["state"] == MEASURED]

    def held(self, label: str) -> int:
        """How many of the cell's runs are measured and labelled ``label``."""
        return int((self.measured["label"].astype(str) == label).sum())

    def interval(self, label: str) -> tuple[float, float]:
        """The exact 95 % interval of the share of the cell's runs labelled ``label`` (every run
        in the denominator: ``analysis.exact.share_interval``)."""
        return share_interval(self.held(label), self.n)

    def share_text(self, label: str) -> str:
        """The share of runs labelled ``label`` as every page prints it: ``2 of 3 [0.09,
        0.99]`` (``held`` of ``n`` and its exact 95 % interval)."""
        return count_text(self.held(label), self.n)

    def states(self) -> dict[str, int]:
        """{state: runs} of the runs that carry no label (failed, diverged, not measured, the
        studies' and the map's states), in the order they first appear."""
        return {s: int(n) for s, n in self.runs["state"][self.runs["state"] != MEASURED]
                .value_counts(sort=False).items()}

    def states_text(self) -> str:
        """The runs without a label in words: ``1 failed, 2 diverged`` (empty where none)."""
        return ", ".join(f"{n} {s}" for s, n in self.states().items())

    @property
    def key(self) -> tuple:
        """The cell's ``cell_key``."""
        return cell_key(self.experiment, self.knobs)

    def where(self) -> str:
        """The cell in words: ``block_len 6, offset 0``."""
        return ", ".join(f"{k} {v}" for k, v in self.knobs.items())


def count_text(k: int, n: int) -> str:
    """``k`` of ``n`` runs with the share's exact 95 % interval: ``3 of 3 [0.29, 1.00]``."""
    return f"{k} of {n} {interval_text(k, n)}"


def cell_groups(table: pd.DataFrame) -> list[Cell]:
    """The map's cells in the table's order: one per experiment and knob values, each with its
    runs and their states (``run_state``)."""
    check(isinstance(table, pd.DataFrame) and {"experiment", "label"} <= set(table), "table",
          type(table).__name__, "a map table (toymech map)")
    columns = knob_columns(table)
    status = table["status"] if "status" in table else pd.Series("ok", index=table.index)
    study_state = table["state"] if "state" in table else pd.Series(None, index=table.index)
    table = table.assign(state=[run_state(s, lab, st) for s, lab, st
                                in zip(status, table["label"], study_state)])
    knobs = [{name: str(v) for name, v in zip(columns, values)}
             for values in table[list(columns.values())].itertuples(index=False)]
    experiments = table["experiment"].astype(str).tolist()
    first: dict[tuple, int] = {}  # each cell's key -> its first row (the table's order)
    rows_of: dict[tuple, list[int]] = {}
    for i, (experiment, k) in enumerate(zip(experiments, knobs)):
        key = cell_key(experiment, k)
        first.setdefault(key, i)
        rows_of.setdefault(key, []).append(i)
    return [Cell(experiments[i], knobs[i], table.iloc[rows_of[key]]) for key, i in first.items()]


def cells(table: pd.DataFrame, numbers: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per cell of the map's ``table`` (``cell_groups``: the experiment and every knob):
    runs, the share of its runs that carry each label (``share <label>``: a fraction of every
    run, a state never being a label) with its exact 95 % interval (``low <label>``, ``high
    <label>``: ``Cell.interval``), the runs of each state without one (``runs <state>``) and
    the median, min and max of each of ``numbers`` over its measured runs (``median <n>``,
    ``min <n>``, ``max <n>``).

    ``table``: the map's table (one row per run); ``numbers``: its columns to summarise."""
    groups = cell_groups(table)
    labels = list(dict.fromkeys(str(v) for c in groups for v in c.measured["label"]))
    out = []
    for cell in groups:
        row = {"experiment": cell.experiment,
               **{knob_column(k): v for k, v in cell.knobs.items()}, "runs": cell.n}
        for label in labels:
            row[f"share {label}"] = cell.held(label) / cell.n
            row[f"low {label}"], row[f"high {label}"] = cell.interval(label)
        for state, n in cell.states().items():
            row[f"runs {state}"] = n
        for name in numbers:
            if name in cell.runs:
                vals = pd.to_numeric(cell.measured[name], errors="coerce").dropna()
                row[f"median {name}"] = float(vals.median()) if len(vals) else math.nan
                row[f"min {name}"] = float(vals.min()) if len(vals) else math.nan
                row[f"max {name}"] = float(vals.max()) if len(vals) else math.nan
        out.append(row)
    frame = pd.DataFrame(out)
    return frame.fillna({c: 0 for c in frame.columns if c.startswith("runs ")})


def finding(table: pd.DataFrame, label: str) -> str:
    """The map's finding in words, computed from its cells (``cell_groups``): in how many cells
    the label holds on every seed, on some, on none (a run without a label never holds it), how
    many runs carry no label and in which states, the fewest seeds of a cell, and the interval
    rule. A group of at most ``NAMED_AT_MOST`` cells names them, each with its count and the
    exact 95 % interval of its share (``count_text``: 3 of 3 runs is [0.29, 1.00], not a
    certainty); a larger group is only counted (the map's table lists every cell).

    ``table``: the map's table (one row per run); ``label``: the label whose cells are counted.
    Returns one sentence."""
    groups = cell_groups(table)
    several = len({c.experiment for c in groups}) > 1

    def name(cell: Cell) -> str:
        return cell.where() + (f" ({cell.experiment})" if several else "")

    def listed(cells: list[Cell]) -> str:
        return f" ({'; '.join(f'{name(c)}: {c.share_text(label)}' for c in cells)})" \
            if 0 < len(cells) <= NAMED_AT_MOST else ""

    every = [c for c in groups if c.held(label) == c.n]
    some = [c for c in groups if 0 < c.held(label) < c.n]
    none = [c for c in groups if c.held(label) == 0]
    runs = min((c.n for c in groups), default=0)
    parts = [f"Label '{label}' on every seed in {len(every)} of {len(groups)} cells"
             + listed(every)]
    if some:
        parts.append(f"on some seeds in {len(some)}{listed(some)}")
    parts.append(f"on none in {len(none)}{listed(none)}")
    unlabelled = [c for c in groups if c.states()]
    if 0 < len(unlabelled) <= NAMED_AT_MOST:
        parts.append("runs without a label: "
                     + "; ".join(f"{c.states_text()} in {name(c)}" for c in unlabelled))
    elif unlabelled:
        by_state: dict[str, int] = {}
        for c in unlabelled:
            for state, n in c.states().items():
                by_state[state] = by_state.get(state, 0) + n
        parts.append(f"runs without a label: {', '.join(f'{n} {s}' for s, n in by_state.items())}"
                     f", in {len(unlabelled)} cells")
    seeds = f"{runs} seed" + ("" if runs == 1 else "s")
    return ", ".join(parts) + f"; at least {seeds} per cell (brackets: exact 95 % intervals)."


def outcome(cell: Cell) -> tuple[str, int]:
    """A cell's commonest outcome (a measured run's label, or the state of a run without one;
    the first in the table's order where two tie) and how many of its runs have it."""
    seen: dict[str, int] = {}
    for label, state in zip(cell.runs["label"], cell.runs["state"]):
        key = str(label) if state == MEASURED else str(state)
        seen[key] = seen.get(key, 0) + 1
    best = max(seen, key=seen.get)
    return best, seen[best]


def _line(cell: Cell, knob: str) -> tuple:
    """The cells that differ from ``cell`` in ``knob`` only share this key."""
    return (cell.experiment, knob, *sorted((k, v) for k, v in cell.knobs.items() if k != knob))


def _neighbours(values: list[str], a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are next to each other among ``values`` (a line's values of one
    knob): in numeric order where every value is a number, else in the table's order."""
    try:
        order = sorted(values, key=float)
    except ValueError:
        order = values
    return abs(order.index(a) - order.index(b)) == 1


def changes(table: pd.DataFrame) -> list[str]:
    """Where the map's answer changes, in words: for every two neighbouring cells of one
    experiment (they differ in one knob only, and no cell of the map has a value of that knob
    between theirs), whose commonest outcomes (``outcome``) differ, one sentence naming the
    knob, its two values, the other knobs and both outcomes with their counts and the exact
    intervals of their shares (``count_text``). Empty where no
    neighbouring cells differ.

    ``table``: the map's table (one row per run)."""
    groups = cell_groups(table)
    several = len({c.experiment for c in groups}) > 1
    lines: dict[tuple, list[str]] = {}  # the values of one knob along a line of cells
    for c in groups:
        for k in c.knobs:
            line = lines.setdefault(_line(c, k), [])
            if c.knobs[k] not in line:
                line.append(c.knobs[k])
    out = []
    for i, a in enumerate(groups):
        for b in groups[i + 1:]:
            if a.experiment != b.experiment or a.knobs.keys() != b.knobs.keys():
                continue
            differ = [k for k in a.knobs if a.knobs[k] != b.knobs[k]]
            if len(differ) != 1 or not _neighbours(lines[_line(a, differ[0])], a.knobs[differ[0]],
                                                   b.knobs[differ[0]]):
                continue
            (oa, na), (ob, nb) = outcome(a), outcome(b)
            if oa == ob:
                continue
            k = differ[0]
            at = [f"{n} {v}" for n, v in a.knobs.items() if n != k]
            at += [a.experiment] if several else []
            out.append(f"{k} {a.knobs[k]} -> {b.knobs[k]}" + (f" (at {', '.join(at)})" if at else "")
                       + f": {oa} ({count_text(na, a.n)}) -> {ob} ({count_text(nb, b.n)})")
    return out


__all__ = ["BEYOND", "BUDGET_EXHAUSTED", "LEARNED", "MEASURED", "NOT_MEASURED", "STILL_LEARNING",
           "UNDECIDED", "UNTRAINED", "Cell", "budget_state", "cell_groups", "cell_key", "cells",
           "changes", "count_text", "finding", "outcome", "run_state"]
