"""The cost table ``toymech report``'s estimates come from.

``CostTable``: ``costs.json`` beside the reports, the per-cell seconds of the last successful run
of each notebook at each size (and seed count). It is recorded in the folder's marker
(``index.MARKER``) with its sha256 each time toymech writes it, and a ``costs.json`` that is not
toymech's (``toymech_costs``: a user's file of the same name, a JSON list, ...) is never read as
an empty table nor replaced: the reports folder is refused before any work (``checks``). The
next run estimates from it; before any run of its own, from the cost table shipped in the
package (``toymech/data/report_costs.json``: the
``default`` run measured on a 2-core CPU with an empty zoo, dated in ``benchmarks/README.md``).
Each row carries the reference step's seconds of the machine that measured it
(``toymech.models.reference``); ``get`` scales a row to this machine's reference step, so the
estimate follows a slower or busier machine. Estimates scale by how crowded the cores are too:
a row records the notebooks that ran at once and the free cores, and an estimate made with
three notebooks on two cores doubles when the same three share one core.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core import value_text
from ..files import replace_file
from ..models.reference import SHIPPED_STEPS_PER_S
from .index import mark_written, written_by_toymech

SHIPPED_COSTS = "report_costs.json"  # in toymech.data


class CostTable:
    """``<out>/costs.json``: {notebook stem: {run key: {"cells": [s, ...], "total_s": s}}}."""

    def __init__(self, out: Path):
        self.path = Path(out) / "costs.json"
        self._lock = threading.Lock()

    @staticmethod
    def key(size: str, n_seeds: int | None, variant: Mapping[str, Any] | None = None) -> str:
        """The row of a run at ``size`` (a size name) over ``n_seeds`` seeds (None: a row for
        any number) with the knobs of ``variant`` (a setting's knobs, each value in the one
        lossless text form, ``core.value_text``; its runs cost what they cost, not the
        size's)."""
        knobs = "".join(f",{k}={value_text(v)}" for k, v in sorted((variant or {}).items()))
        return f"size={size}" + (f",seeds={n_seeds}" if n_seeds is not None else "") + knobs

    def _read(self) -> dict:
        """The folder's table ({} where there is none, or where the file is not toymech's:
        read for nothing, and never written over, ``record``)."""
        if not toymech_costs(self.path.parent):
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def get(self, stem: str, key: str, reference_step_s: float | None = None,
            crowding: float | None = None, seeds_from: tuple[str, float] | None = None
            ) -> dict | None:
        """This folder's last run of ``stem`` at ``key``; else the shipped measurement (its row
        carries ``"shipped": True``); else None. With ``reference_step_s`` (this machine's, now),
        the row's times are scaled from its own machine's reference step to this one
        (``"scale"``: the factor; a shipped row's machine ran ``SHIPPED_STEPS_PER_S``); with
        ``crowding`` (``crowding(jobs, cores)`` now), also by how much more crowded the cores
        are than when the row was measured. ``seeds_from`` = (the size's own key, seeds asked /
        the size's own seeds): with no row at ``key`` (another seed count), the size's own row
        with its times multiplied by that ratio (``"seeds_ratio"``), since training dominates
        and grows with the seeds."""
        row = self._row(stem, key)
        if row is None and seeds_from is not None:
            base_key, ratio = seeds_from
            row = self._row(stem, base_key)
            if row is not None:
                row = {**row, "cells": [None if c is None else c * ratio for c in row["cells"]],
                       "total_s": row["total_s"] * ratio, "seeds_ratio": ratio}
        if row is None or (reference_step_s is None and crowding is None):
            return row
        theirs = row.get("reference_step_s") or (1.0 / SHIPPED_STEPS_PER_S
                                                 if row.get("shipped") else None)
        return scaled({**row, "reference_step_s": theirs}, reference_step_s, crowding)

    def _row(self, stem: str, key: str) -> dict | None:
        """This folder's row, else the shipped one (marked ``"shipped"``), else None."""
        row = self._read().get(stem, {}).get(key)
        if _valid(row):
            return row
        row = shipped_costs().get(stem, {}).get(key)
        return {**row, "shipped": True} if _valid(row) else None

    def record(self, stem: str, key: str, cells: Sequence[float | None], total_s: float,
               reference_step_s: float | None = None, jobs: int | None = None,
               cores: int | None = None) -> None:
        """Record notebook ``stem``'s run at ``key``: its ``cells``' seconds and ``total_s``,
        with the ``reference_step_s`` of this machine and the ``jobs`` and free ``cores`` it
        ran with, replacing the row of an earlier run."""
        with self._lock:  # notebooks finish in parallel threads
            if not toymech_costs(self.path.parent):  # put there during the run: left alone
                print(f"[toymech] {self.path} is not the cost table toymech writes: left as it "
                      "is, this run's cell times not recorded", file=sys.stderr)
                return
            data = self._read()
            data.setdefault(stem, {})[key] = {"cells": [None if c is None else round(c, 3) for c in cells],
                                              "total_s": round(total_s, 2)}
            if reference_step_s:
                data[stem][key]["reference_step_s"] = round(reference_step_s, 6)
            if jobs and cores:
                data[stem][key].update(jobs=int(jobs), cores=int(cores))
            replace_file(self.path, json.dumps(data, indent=1))
            mark_written(self.path.parent, [self.path.name])


def toymech_costs(out: Path) -> bool:
    """Whether ``out/costs.json`` is absent or toymech's: recorded in the folder's marker with
    its sha256, or, written before the marker recorded it, a cost table (notebook -> key ->
    row with its cells and total)."""
    path = Path(out) / "costs.json"
    if not os.path.lexists(path):
        return True
    if path.is_symlink() or not path.is_file():
        return False
    try:
        raw = path.read_bytes()
    except OSError:
        return False
    recorded = written_by_toymech(Path(out)).get(path.name)
    if recorded is not None:
        return hashlib.sha256(raw).hexdigest() == recorded
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return False
    return isinstance(data, dict) and all(
        isinstance(rows, dict) and all(_valid(r) for r in rows.values()) for rows in data.values())


def crowding(jobs: int | None, cores: int | None) -> float | None:
    """How many notebooks share each core (at least 1: a notebook alone on several cores is
    not faster than the cost it recorded there); None when either is unknown."""
    if not jobs or not cores:
        return None
    return max(1.0, jobs / cores)


def scaled(row: dict, reference_step_s: float | None, crowding_now: float | None = None) -> dict:
    """``row`` with its cell times and total multiplied by this machine's reference step over
    the row's and by ``crowding_now`` over the row's crowding (each factor 1 when either side of
    it is unknown); ``"scale"`` is the product used."""
    theirs = row.get("reference_step_s")
    k = 1.0
    if reference_step_s and isinstance(theirs, (int, float)) and theirs > 0:
        k = reference_step_s / theirs
    then = crowding(row.get("jobs"), row.get("cores"))
    if crowding_now and then:
        k *= crowding_now / then
    if k == 1.0:
        return {**row, "scale": 1.0}
    return {**row, "cells": [None if c is None else c * k for c in row["cells"]],
            "total_s": row["total_s"] * k, "scale": k}


def _valid(row) -> bool:
    return (isinstance(row, dict) and isinstance(row.get("cells"), list)
            and isinstance(row.get("total_s"), (int, float)))


def shipped_costs() -> dict:
    """The cost table shipped with the package ({} when it is missing or unreadable)."""
    try:
        text = (importlib.resources.files("toymech.data") / SHIPPED_COSTS).read_text(encoding="utf-8")
        data = json.loads(text)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def estimate_left(previous: dict | None, cell_index: int, n_cells: int, in_cell_s: float,
                  elapsed_s: float | None = None, cell_left_s: float | None = None
                  ) -> float | None:
    """Seconds left by the last run's cell times: the cells after this one, plus what is left of
    this one (``cell_left_s`` where the cell's own progress says it, e.g. the runs a training
    cell has finished: the estimate is corrected as models finish). With another cell count
    (the notebook changed since), the last run's total less ``elapsed_s`` when given. None
    without a previous run."""
    if not previous:
        return None
    if len(previous["cells"]) != n_cells:
        return None if elapsed_s is None else max(0.0, previous["total_s"] - elapsed_s)
    cells = [c or 0.0 for c in previous["cells"]]
    here = max(0.0, cells[cell_index] - in_cell_s) if cell_left_s is None else cell_left_s
    return sum(cells[cell_index + 1:]) + here


def scale_text(previous: dict) -> str:
    k, ratio = previous.get("scale", 1.0), previous.get("seeds_ratio")
    parts = ([f"x{k:.1f} for this machine's reference step and free cores"]
             if abs(k - 1.0) >= 0.1 else []) + (
        [f"x{ratio:.2f} for the seeds asked over the size's own"] if ratio else [])
    return f" (scaled {'; '.join(parts)})" if parts else ""


__all__ = ["SHIPPED_COSTS", "CostTable", "crowding", "estimate_left", "scale_text", "scaled",
           "shipped_costs", "toymech_costs"]
