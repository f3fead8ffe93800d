"""Study 3's width ladder in words and as the recipe claims read it: at which width does a random
transformer (only the embeddings and the unembedding trained) start to solve each algorithmic
task, beside a normal transformer?

The ladder is ordinary maps, one per task (``specs/maps/s3-width-<task>.yaml``: the task's
calibrated recipe at ``recipe_width`` 16-256, random and normal, on the judged seeds 3-5 that no
calibration used), run by ``toymech map`` or by name (``toymech ladder``) into
``<zoo>/maps/s3-width-<task>.csv``. This module reads nothing and trains nothing: it words the
maps' cells (``toymech.maps.cells(table, ("acc",))``, the one grouping of runs into cells, whose
label is this study's ``solved_label``)::

    table = toymech.maps.page.read_maps(zoo.root / "maps", MAPS)
    summary = ladder_summary(toymech.maps.cells(table, ("acc",)))

``ladder_summary`` gives one row per (task, mode, width); ``first_width`` the narrowest width
solved on most of its seeds; ``ladder_sentence`` the finding; ``with_ladder`` the calibration
rows and the ladder's runs together (what the recipe claims read).
"""

from __future__ import annotations

import pandas as pd

from ...sweep.table import knob_column
from . import claims
from .design import ALGORITHMIC

MAPS = "s3-width-"        # the ladder's maps: specs/maps/s3-width-<task>.yaml, <zoo>/maps/s3-width-<task>.csv
MODES = ("random", "normal")
SOLVED = "solved"         # the maps' label that says a run solved its task (map_measure.MAP_LABEL)
PAPER_WIDTH = 1024        # the paper's Table 1 width, marked on the figure
_COLUMNS = ("task", "mode", "width", "median", "min", "max", "seeds", "solved", "without label")


def task_mode(experiment: str) -> tuple[str, str]:
    """(task, mode) of ``experiment``, a recipe run's name ``rt-<task>-<mode>``."""
    task, _, mode = experiment.removeprefix("rt-").rpartition("-")
    return task, mode


def ladder_summary(cells: pd.DataFrame | None) -> pd.DataFrame | None:
    """One row per (task, mode, width) from the maps' cells (``toymech.maps.cells(table,
    ("acc",))``): the median, min and max held-out accuracy over the cell's measured runs,
    ``seeds`` (every run of the cell), ``solved`` (its runs labelled solved) and ``without
    label`` (its runs that failed, diverged or were not measured). None without cells.

    ``cells``: the per-cell frame of the width-ladder maps' tables."""
    if cells is None or not len(cells):
        return None
    width = knob_column("recipe_width")
    rows = []
    for _, c in cells.iterrows():
        task, mode = task_mode(str(c["experiment"]))
        runs = int(c["runs"])
        rows.append({"task": task, "mode": mode, "width": int(c[width]),
                     "median": float(c.get("median acc", float("nan"))),
                     "min": float(c.get("min acc", float("nan"))),
                     "max": float(c.get("max acc", float("nan"))), "seeds": runs,
                     "solved": int(round(float(c.get(f"share {SOLVED}", 0.0)) * runs)),
                     "without label": int(sum(c[k] for k in cells.columns
                                              if k.startswith("runs ")))})
    order = {t: i for i, t in enumerate(ALGORITHMIC)}
    out = pd.DataFrame(rows, columns=list(_COLUMNS))
    return out.sort_values(["task", "mode", "width"], key=lambda s: s.map(order).fillna(99)
                           if s.name == "task" else s).reset_index(drop=True)


def first_width(summary: pd.DataFrame | None, task: str, mode: str) -> int | None:
    """The narrowest width of ``task`` in ``mode`` solved on most of its seeds (None: none
    was), from ``summary`` (``ladder_summary``)."""
    if summary is None:
        return None
    rows = summary[(summary["task"] == task) & (summary["mode"] == mode)
                   & (summary["solved"] * 2 > summary["seeds"])]
    return int(rows["width"].min()) if len(rows) else None


def first_widths(summary: pd.DataFrame | None) -> pd.DataFrame | None:
    """Per task of ``summary`` (``ladder_summary``): the first solving width of random and of
    normal models and the widest rung run of each (so "none up to 128" is said as such)."""
    if summary is None:
        return None
    rows = []
    for task in dict.fromkeys(summary["task"]):
        row = {"task": task}
        for mode in MODES:
            mine = summary[(summary["task"] == task) & (summary["mode"] == mode)]
            row[f"{mode} solves from"] = first_width(summary, task, mode)
            row[f"{mode} widest run"] = int(mine["width"].max()) if len(mine) else None
        rows.append(row)
    return pd.DataFrame(rows)


def ladder_sentence(summary: pd.DataFrame | None) -> str:
    """What the ladder found, one clause per task, from ``first_widths(summary)`` (and nothing
    more)."""
    widths = first_widths(summary)
    if widths is None or not len(widths):
        return "The width ladder has not been run (toymech ladder: its maps)."
    parts = []
    for _, r in widths.iterrows():
        def say(mode: str, r=r) -> str:
            found, widest = r[f"{mode} solves from"], r[f"{mode} widest run"]
            if found is not None and found == found:
                return f"{mode} from width {int(found)}"
            if widest is None or widest != widest:
                return f"{mode} not run"
            return f"{mode} not up to width {int(widest)}"
        parts.append(f"{r['task']}: {say('random')}, {say('normal')}")
    return (f"Solved (the maps' label: held-out accuracy on the whole answer at least "
            f"{claims.SOLVED:.0%}, half way from chance, and beyond every predictor of the "
            "task's null family by the map's margin) on most seeds of a width, each rung "
            "the recipe's step budget: "
            + "; ".join(parts) + f". The paper's Table 1 is at width {PAPER_WIDTH}.")


def with_ladder(calibration: pd.DataFrame | None, ladder: pd.DataFrame | None
                ) -> pd.DataFrame | None:
    """The calibration rows and the ladder maps' finished runs together, each by its zoo entry
    (``entry``: what the recipe claims read; the ladder's run at the recipe's width is the recipe
    at a judged seed).

    ``calibration``: ``calibration_table``'s rows; ``ladder``: the ladder maps' table (one row
    per run: ``task``, ``zoo_key``, ``status``)."""
    frames = [calibration] if calibration is not None and len(calibration) else []
    if ladder is not None and len(ladder) and {"task", "zoo_key"} <= set(ladder):
        done = ladder[ladder["status"] == "ok"] if "status" in ladder else ladder
        frames.append(pd.DataFrame({"entry": [f"{t}-{k}" for t, k
                                              in zip(done["task"], done["zoo_key"])]}))
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True).drop_duplicates("entry")
