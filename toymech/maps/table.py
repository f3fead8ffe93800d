"""A map's table on disk: ``<name>.csv`` and the same frame as ``<name>.parquet`` beside it.

Text columns (the knobs, the keys, the status and the label) are written and read back as text,
so either file reads back as the same frame.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ..core import check
from ..files import replace_file

TEXT_COLUMNS = ("experiment", "size", "zoo_key", "commit", "status", "label")
KNOB_PREFIX = "knob."  # a knob's column is named ``knob.<name>`` (``block_len`` -> ``knob.block_len``)


def knob_column(name: str) -> str:
    """The table's column for knob ``name``."""
    return KNOB_PREFIX + name


def knob_columns(table: pd.DataFrame) -> dict[str, str]:
    """{knob name: its column} of ``table``, in the table's order (the one place that reads a
    column name as a knob)."""
    return {c[len(KNOB_PREFIX):]: c for c in table.columns if str(c).startswith(KNOB_PREFIX)}


def read_table(path: str | Path) -> pd.DataFrame:
    """A map's table as ``toymech map`` wrote it, from the ``.csv`` or ``.parquet`` at
    ``path``: the same frame either way (knobs, keys and labels as text)."""
    path = Path(path)
    check(path.is_file(), "map table", str(path), "a table written by toymech map (.csv, .parquet)")
    if path.suffix == ".parquet":
        return pd.read_parquet(path)
    header = pd.read_csv(path, nrows=0).columns
    table = pd.read_csv(path, dtype={c: str for c in header
                                     if c.startswith(KNOB_PREFIX) or c in TEXT_COLUMNS})
    if "refined" in table:  # True / False as written (a bool column, as Parquet keeps it)
        table["refined"] = table["refined"].map(lambda v: v is True or str(v) == "True")
    return table


def read_or_empty(path: Path) -> pd.DataFrame:
    """The table at ``path`` (empty where there is none yet); one that cannot be read raises."""
    if not path.is_file():
        return pd.DataFrame()
    try:
        return read_table(path)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"map table={str(path)!r} is not allowed: a table written by toymech map "
                         f"(reading it gives {type(exc).__name__}); move it aside to start "
                         "again") from None


def write_table(table: pd.DataFrame, path: Path) -> None:
    """The table as CSV and, beside it, as Parquet (each atomically: a killed write leaves the
    last good table). Text columns are written as text, so both read back as the same frame."""
    table = table.assign(**{c: table[c].map(lambda v: v if pd.isna(v) else str(v))
                            for c in table.columns if c in knob_columns(table).values() or c in TEXT_COLUMNS})
    if "refined" in table:  # rows of a map measured before it was refined: not refined
        table = table.assign(refined=table["refined"].map(lambda v: v is True))
    replace_file(path, lambda tmp: table.to_csv(tmp, index=False))
    replace_file(path.with_suffix(".parquet"), lambda tmp: table.to_parquet(tmp, index=False))


__all__ = ["KNOB_PREFIX", "TEXT_COLUMNS", "knob_column", "knob_columns", "read_or_empty", "read_table", "write_table"]
