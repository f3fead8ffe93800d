"""Read the calibration sweeps back for the notebook and docs/calibration.md.

``toymech sweep specs/sweeps/rt-calibration-<part>.yaml`` trains its runs into the zoo and writes
``<zoo>/sweeps/rt-calibration-<part>.csv`` (one row per run). ``calibration_table`` turns every
such table into one tidy row per run (task, mode, width, lr, batch, seed, held-out accuracy on
the whole answer, per-digit accuracy, the step the stop rule ended it, core-seconds), reading
each run's configuration from its zoo entry; ``calibration_curves`` gives the learning curves
(held-out accuracy at every logged step). Both return None when no calibration table is there,
so a notebook shows the calibration only where it was run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd

from ...zoo import default_cache_dir
from .design import mode_of
from .recipes import ANSWER_METRIC

PREFIX = "rt-calibration"
COLUMNS = ("task", "mode", "width", "lr", "batch", "steps", "seed", "held_out_acc",
           "digit_acc", "train_acc", "stop_step", "last_step", "core_seconds", "held_out_n",
           "task_params", "sweep", "entry")


def _tables(zoo_root: Path, prefix: str) -> list[tuple[str, pd.DataFrame]]:
    folder = zoo_root / "sweeps"
    return [(p.stem, pd.read_csv(p)) for p in sorted(folder.glob(f"{prefix}*.csv"))]


def _meta(zoo_root: Path, entry: Any) -> dict[str, Any] | None:
    path = zoo_root / str(entry) / "config.json"
    if not isinstance(entry, str) or not path.is_file():
        return None
    return json.loads(path.read_text())


def _held_out_n(task: dict[str, Any], eval_size: int) -> int:
    """How many held-out examples the logged accuracy averaged: every held-out pair of modular
    addition (up to ``eval_size``), else ``eval_size`` held-out sequences."""
    if task["name"] == "modular_addition":
        p, frac = task["p"], task.get("train_frac", 0.95)
        return min(eval_size, p * p - round(frac * p * p))
    return eval_size


def run_row(meta: dict[str, Any], sweep: str, entry: str) -> dict[str, Any]:
    """One run's row (``COLUMNS``) from its zoo entry's configuration and history ``meta``: the
    last logged held-out accuracy on the whole answer, the step it stopped."""
    task, model, train = meta["task"], meta["model"], meta["train"]
    history = meta.get("history") or [{}]
    last = history[-1]
    name = task["name"]
    params = {k: v for k, v in task.items() if k not in ("name", "version")}
    return {"task": name, "mode": mode_of(tuple(train.get("freeze", ()))),
            "width": model.get("d_model"), "lr": train.get("lr"),
            "batch": train.get("batch_size"), "steps": train.get("steps"),
            "seed": train.get("seed"), "held_out_acc": last.get(ANSWER_METRIC[name],
                                                                last.get("eval_acc")),
            "digit_acc": last.get("eval_acc") if name == "decimal_addition" else None,
            "train_acc": last.get("train_seq_acc" if name == "decimal_addition" else
                                  "train_first_acc" if "train_first_acc" in last else
                                  "train_acc"),
            "stop_step": last.get("stop_step"), "last_step": last.get("step"),
            "core_seconds": last.get("cpu_seconds"),
            "held_out_n": _held_out_n(task, train.get("eval_size", 1024)),
            "task_params": json.dumps(params, sort_keys=True), "sweep": sweep, "entry": entry}


def calibration_table(zoo_root: str | Path | None = None, prefix: str = PREFIX
                      ) -> pd.DataFrame | None:
    """One row per finished run of the calibration sweeps in ``<zoo_root>/sweeps/`` (columns
    ``COLUMNS``; ``held_out_acc`` is on the whole answer: all digits of a sum, the needle's
    first query), sorted by task, mode, width, lr; None when there is no such table or none of
    its runs is in the zoo."""
    root = Path(zoo_root).expanduser() if zoo_root else default_cache_dir()
    rows = []
    for sweep, table in _tables(root, prefix):
        for _, trial in table[table["status"] == "ok"].iterrows():
            meta = _meta(root, trial["entry"])
            if meta is not None and meta.get("task", {}).get("name") in ANSWER_METRIC:
                rows.append(run_row(meta, sweep, str(trial["entry"])))
    if not rows:
        return None
    out = pd.DataFrame(rows, columns=list(COLUMNS)).drop_duplicates("entry")
    return out.sort_values(["task", "mode", "width", "lr", "batch", "seed"]).reset_index(
        drop=True)


def calibration_curves(zoo_root: str | Path | None = None, prefix: str = PREFIX
                       ) -> pd.DataFrame | None:
    """The learning curves of ``calibration_table``'s runs: one row per (run, logged step) with
    the run's columns, ``step``, ``held_out_acc``, ``train_acc`` and ``core_seconds`` so far."""
    root = Path(zoo_root).expanduser() if zoo_root else default_cache_dir()
    table = calibration_table(root, prefix)
    if table is None:
        return None
    rows = []
    keys = ["task", "mode", "width", "lr", "batch", "seed", "task_params", "entry"]
    for _, run in table.iterrows():
        meta = _meta(root, run["entry"]) or {}
        metric = ANSWER_METRIC[run["task"]]
        for h in meta.get("history", []):
            rows.append({**{k: run[k] for k in keys}, "step": h["step"],
                         "held_out_acc": h.get(metric, h.get("eval_acc")),
                         "train_acc": h.get("train_acc"), "core_seconds": h.get("cpu_seconds")})
    return pd.DataFrame(rows)
