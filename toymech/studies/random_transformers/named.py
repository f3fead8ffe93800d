"""Study 3's named numbers: one seed's tables flattened into the dict every claim reads (the keys:
``claims``' docstring). The recipe rows come from the calibration sweeps only, never a copy of
the table's run (one measurement backs one row)."""

from __future__ import annotations

import math
from typing import Any, Mapping

import numpy as np
import pandas as pd

from .design import ALGORITHMIC
from .recipes import recipe


# --- numbers: one seed's tables -> named numbers --------------------------------------------------
def _rows(df: pd.DataFrame | None, seed: int | None) -> pd.DataFrame | None:
    if df is None or not len(df):
        return None
    return df[df["seed"] == seed] if seed is not None and "seed" in df else df


def _accuracy_column(task: str) -> str:
    return "seq_acc" if task == "decimal_addition" else "acc"


def numbers(measured: Mapping[str, Any]) -> dict[str, float]:
    """The named numbers (module docstring) of one seed's tables. ``measured``: ``widths`` (the
    plan's (small, large)), ``seed`` (None: medians over every seed), ``main`` (rows of
    ``run_grid``: the table, sweep and ablation runs) and where measured ``mem``
    (``memorization_table``), ``lm``, ``circ`` (``circuit_grid``), ``conc``
    (``concentration_rows``), ``base`` (``baseline_grid``), ``short`` (``short_budget_grid``)."""
    widths, seed = measured["widths"], measured.get("seed")
    out: dict[str, float] = {}
    label = {widths[0]: "small", widths[1]: "large"}
    if (df := _rows(measured.get("main"), seed)) is not None:
        for (task, width, mode), rows in df.groupby(["task", "width", "mode"]):
            if width in label:
                col = _accuracy_column(task)
                out[f"acc.{task}.{mode}.{label[width]}"] = float(rows[col].median())
                if task == "decimal_addition":
                    out[f"digit_acc.{task}.{mode}.{label[width]}"] = float(rows["acc"].median())
        if "chance" in df:
            for task, rows in df.groupby("task"):
                out[f"chance.{task}"] = float(rows["chance"].median())
    # The recipe's runs come from the calibration sweeps only (never a copy of the table's run:
    # one measurement backs one row).
    if (cal := _rows(measured.get("calibration"), seed)) is not None:
        for (task, mode), rows in cal.groupby(["task", "mode"]):
            if mode in ("random", "normal") and task in ALGORITHMIC and (
                    acc := _recipe_run_accuracy(rows, recipe(task, mode))) is not None:
                out[f"acc.{task}.{mode}.recipe"] = acc
    if (s := _rows(measured.get("short"), seed)) is not None and len(s):
        for task, rows in s.groupby("task"):
            widest = rows[rows["width"] == rows["width"].max()]
            out[f"acc.{task}.random.short"] = float(widest[_accuracy_column(task)].median())
    if (m := _rows(measured.get("mem"), seed)) is not None:
        out.update({f"mem.bits.{k}": float(v)
                    for k, v in m.groupby("mode")["bits_per_param"].median().items()})
    if (m := _rows(measured.get("lm"), seed)) is not None:
        out.update({f"lm.loss.{k}": float(v) for k, v in m.groupby("mode")["loss"].median().items()})
        if "chance_loss" in m:
            out["lm.chance"] = float(m["chance_loss"].median())
    if (c := _rows(measured.get("circ"), seed)) is not None:
        kl = c.groupby(["target_width", "mode"])["kl"].median().unstack()
        if {"normal", "random"} <= set(kl.columns) and len(kl) >= 2:
            gap = (kl["random"] - kl["normal"]).sort_index()
            out["circuit.gap.narrowest"], out["circuit.gap.widest"] = (float(gap.iloc[0]),
                                                                      float(gap.iloc[-1]))
            out["circuit.random.widest"] = float(kl["random"].sort_index().iloc[-1])
    if (c := _rows(measured.get("conc"), seed)) is not None:
        c = c[(c["basis"] == "principal") & (c["layer"] != "embedding")]
        out.update({f"conc.{t}.{m}": float(v)
                    for (t, m), v in c.groupby(["task", "mode"])["ev"].mean().items()})
    if (b := _rows(measured.get("base"), seed)) is not None:
        for (kind, task), rows in b.groupby(["model", "task"]):
            col = _accuracy_column(task) if _accuracy_column(task) in rows else "acc"
            out[f"baseline.{kind}.{task}"] = float(rows[col].median())
            if "chance" in rows:
                out.setdefault(f"chance.{task}", float(rows["chance"].median()))
    return {k: v for k, v in out.items() if math.isfinite(v)}


def _recipe_run_accuracy(rows: pd.DataFrame, r) -> float | None:
    """Held-out accuracy of the recipe's run among a task's calibration rows: the rows at the
    recipe's width and learning rate (none: its width), those with the recipe's step budget
    where there are any, and of them the longest run. Never the best of other settings."""
    rows = rows[(rows["width"] == r.width) & rows["held_out_acc"].notna()]
    for narrower in (lambda d: np.isclose(d["lr"].astype(float), r.lr),
                     lambda d: (d["steps"] == r.steps).to_numpy()):
        if (keep := narrower(rows)).any():
            rows = rows[keep]
    if not len(rows):
        return None
    return float(rows.sort_values("last_step", kind="stable")["held_out_acc"].iloc[-1])
