"""A map's table summarised per cell (the experiment and every knob), and its finding in words."""

from __future__ import annotations

import math

import pandas as pd

from ..core import check

def cells(table: pd.DataFrame, numbers: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per cell of the map's ``table`` (the experiment and every knob): runs, how many
    seeds carry each label
    (``share <label>``: a fraction), and the median of each of ``numbers``."""
    check(isinstance(table, pd.DataFrame) and "label" in table, "table", type(table).__name__,
          "a map table (toymech map)")
    keys = ["experiment", *[c for c in table.columns if c.startswith("knob.")]]
    out = []
    for cell, runs in table.groupby(keys, sort=False, dropna=False):
        row = dict(zip(keys, cell if isinstance(cell, tuple) else (cell,)))
        row["runs"] = len(runs)
        for label, n in runs["label"].value_counts().items():
            row[f"share {label}"] = n / len(runs)
        for name in numbers:
            if name in runs:
                vals = pd.to_numeric(runs[name], errors="coerce").dropna()
                row[f"median {name}"] = float(vals.median()) if len(vals) else math.nan
        out.append(row)
    return pd.DataFrame(out).fillna({c: 0.0 for c in pd.DataFrame(out).columns
                                     if c.startswith("share ")})


def finding(table: pd.DataFrame, label: str) -> str:
    """The map's finding in words, computed from its ``table``: in which cells ``label`` (the
    study's ``MAP_LABEL``) holds on every seed, on some, on none."""
    c = cells(table)
    share = c.get(f"share {label}", pd.Series(0.0, index=c.index))
    knob_cols = [k for k in c.columns if k.startswith("knob.")]

    def name(row) -> str:
        return ", ".join(f"{k.removeprefix('knob.')} {row[k]}" for k in knob_cols) + \
            (f" ({row['experiment']})" if c["experiment"].nunique() > 1 else "")

    every = [name(r) for (_, r), s in zip(c.iterrows(), share) if s == 1.0]
    some = [name(r) for (_, r), s in zip(c.iterrows(), share) if 0 < s < 1]
    runs = int(c["runs"].min()) if len(c) else 0
    parts = [f"Label '{label}' on every seed in {len(every)} of {len(c)} cells"
             + (f" ({'; '.join(every)})" if every else "")]
    if some:
        parts.append(f"on some seeds in {len(some)} ({'; '.join(some)})")
    parts.append(f"on none in {len(c) - len(every) - len(some)}")
    return ", ".join(parts) + f"; at least {runs} seed(s) per cell."


__all__ = ["cells", "finding"]
