"""Study 3's width ladder: at which width does a random transformer (only the embeddings and the
unembedding trained) start to solve each algorithmic task, beside a normal transformer?

Every rung is the task's calibrated recipe (``recipes``: learning rate, batch, step budget, stop
rule) at another width, trained on seeds that no calibration used (``LADDER_SEEDS``, the judged
seeds at ``default``; the recipes were chosen on seed 0). Each (task, mode) is one sweep, so the
ladder is resumable and can be run a piece at a time::

    toymech ladder --tasks parentheses modular_addition

writes ``<zoo>/sweeps/rt-width-ladder-<task>-<mode>.csv`` (and its ``.meta.json``: commit,
machine, wall time). ``ladder_table`` reads every such table back (``calibration_table``'s rows),
``ladder_summary`` gives the median and range over seeds per width, ``first_width`` the narrowest
width whose median passes ``SOLVED_AT``. Notebook 03 shows them; its recipe claims read the
ladder's runs at the recipe's width, and ``toymech results --ladder <zoo>`` records them.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Sequence

import pandas as pd

from ...core import check
from ...sweep.runner import run_experiments
from .calibration import calibration_table
from .design import ALGORITHMIC
from .recipes import calibrated, recipe

NAME = "rt-width-ladder"
WIDTHS = (16, 32, 64, 128, 256)
MODES = ("random", "normal")
LADDER_SEEDS = (3, 4, 5)  # the judged seeds at default (seeds_of("default", 0)); never seed 0
SOLVED_AT = 0.95          # held-out accuracy on the whole answer that counts as solved
PAPER_WIDTH = 1024        # the paper's Table 1 width, marked on the figure


def sweep_name(task: str, mode: str) -> str:
    return f"{NAME}-{task}-{mode}"


def experiments(task: str, mode: str, widths: Sequence[int] = WIDTHS,
                seeds: Sequence[int] = LADDER_SEEDS) -> list:
    """The rungs of one (task, mode): the recipe at each width, each seed (narrowest first)."""
    check(task in ALGORITHMIC, "task", task, f"one of {', '.join(ALGORITHMIC)}")
    check(mode in MODES, "mode", mode, "random or normal")
    check(len(widths) > 0 and all(isinstance(w, int) and 8 <= w <= 4096 and w % 4 == 0
                                  for w in widths), "widths", list(widths),
          "integers in 8..4096, multiples of the 4 heads")
    check(len(set(widths)) == len(widths), "widths", list(widths), "distinct widths (one given twice)")
    check(len(seeds) > 0 and len(set(seeds)) == len(seeds) and 0 not in seeds, "seeds",
          list(seeds), "distinct seeds other than 0 (seed 0 calibrated the recipes)")
    return [calibrated(task, mode, "default", s, width=w) for w in sorted(widths) for s in seeds]


def run(zoo_root: str | Path | None, tasks: Sequence[str] = ALGORITHMIC,
        modes: Sequence[str] = MODES, widths: Sequence[int] = WIDTHS,
        seeds: Sequence[int] = LADDER_SEEDS, backend: str = "auto", workers: int | None = None,
        log=print) -> list:
    """Train (or find in the zoo) the ladder's rungs, one sweep per (task, mode), the cheap
    ones first (normal before random, then the tasks in ``tasks``' order)."""
    # every rung is built (and so checked) before the first trains
    check(len(set(tasks)) == len(tasks), "tasks", list(tasks), "distinct tasks (one given twice)")
    check(len(set(modes)) == len(modes), "modes", list(modes), "distinct modes (one given twice)")
    todo = [(task, mode, experiments(task, mode, widths, seeds))
            for mode in sorted(modes, key=lambda m: m != "normal") for task in tasks]
    return [run_experiments(exps, cache_dir=zoo_root, name=sweep_name(task, mode),
                            backend=backend, device="cpu", workers=workers, log=log,
                            fallback=backend == "auto") for task, mode, exps in todo]


def ladder_table(zoo_root: str | Path | None = None) -> pd.DataFrame | None:
    """Every finished rung in the zoo (``calibration_table``'s columns), None before any."""
    table = calibration_table(zoo_root, prefix=NAME)
    if table is None:
        return None
    return table[table["seed"] != 0].reset_index(drop=True)  # seed 0 calibrated the recipes


def ladder_summary(table: pd.DataFrame | None) -> pd.DataFrame | None:
    """One row per (task, mode, width): median, min and max held-out accuracy over seeds, how
    many seeds, how many of them passed ``SOLVED_AT``, the median steps and core-seconds."""
    if table is None or not len(table):
        return None
    rows = []
    seeds = sorted(int(s) for s in table["seed"].dropna().unique())
    for (task, mode, width), g in table.groupby(["task", "mode", "width"]):
        acc = g["held_out_acc"].astype(float)
        rows.append({"task": task, "mode": mode, "width": int(width),
                     "median": float(acc.median()), "min": float(acc.min()),
                     "max": float(acc.max()), "seeds": int(acc.notna().sum()),
                     "solved": int((acc >= SOLVED_AT).sum()),
                     "steps": float(g["last_step"].median()),
                     "core_s": float(g["core_seconds"].astype(float).sum())})
    out = pd.DataFrame(rows)
    out.attrs["seeds"] = seeds
    return out


def first_width(summary: pd.DataFrame | None, task: str, mode: str) -> int | None:
    """The narrowest width whose median over seeds passes ``SOLVED_AT`` (None: none did)."""
    if summary is None:
        return None
    rows = summary[(summary["task"] == task) & (summary["mode"] == mode)
                   & (summary["median"] >= SOLVED_AT)]
    return int(rows["width"].min()) if len(rows) else None


def first_widths(summary: pd.DataFrame | None) -> pd.DataFrame | None:
    """Per task: the first solving width of random and of normal models, the widest rung run
    of each (so "none up to 128" is said as such) and the ladder's core-seconds."""
    if summary is None:
        return None
    rows = []
    for task in [t for t in ALGORITHMIC if t in set(summary["task"])]:
        row = {"task": task}
        for mode in MODES:
            mine = summary[(summary["task"] == task) & (summary["mode"] == mode)]
            row[f"{mode} solves from"] = first_width(summary, task, mode)
            row[f"{mode} widest run"] = int(mine["width"].max()) if len(mine) else None
        row["core_s"] = float(summary[summary["task"] == task]["core_s"].sum())
        rows.append(row)
    return pd.DataFrame(rows)


def ladder_sentence(summary: pd.DataFrame | None) -> str:
    """What the ladder found, one clause per task, from ``first_widths`` (and nothing more)."""
    widths = first_widths(summary)
    if widths is None or not len(widths):
        return "The width ladder has not been run."
    parts = []
    for _, r in widths.iterrows():
        def say(mode: str) -> str:
            found, widest = r[f"{mode} solves from"], r[f"{mode} widest run"]
            if found is not None and not (isinstance(found, float) and math.isnan(found)):
                return f"{mode} from width {int(found)}"
            if widest is None or (isinstance(widest, float) and math.isnan(widest)):
                return f"{mode} not run"
            return f"{mode} not up to width {int(widest)}"
        parts.append(f"{r['task']}: {say('random')}, {say('normal')}")
    seeds = summary.attrs.get("seeds", LADDER_SEEDS)
    return (f"Median over seeds {', '.join(map(str, seeds))} reaching {SOLVED_AT:.0%} "
            f"held-out accuracy (the recipe's step budget at every width): " + "; ".join(parts)
            + f". The paper's Table 1 is at width {PAPER_WIDTH}.")


def with_ladder(calibration: pd.DataFrame | None, ladder: pd.DataFrame | None
                ) -> pd.DataFrame | None:
    """The calibration rows and the ladder's together (what the recipe claims read: the ladder's
    runs at the recipe's width are the recipe at the judged seeds)."""
    frames = [f for f in (calibration, ladder) if f is not None and len(f)]
    if not frames:
        return None
    return pd.concat(frames, ignore_index=True).drop_duplicates("entry")


def estimate_core_s(task: str, mode: str, widths: Sequence[int] = WIDTHS,
                    seeds: Sequence[int] = LADDER_SEEDS) -> str:
    """The recipe's budget at each width, in words, for the not-run note."""
    r = recipe(task, mode)
    return (f"{len(widths) * len(seeds)} runs of at most {r.steps:,} steps "
            f"(widths {', '.join(map(str, widths))})")
