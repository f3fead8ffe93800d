"""A map's table on disk: ``<name>.csv`` and the same frame as ``<name>.parquet`` beside it.

Text columns (the knobs, the keys, the status and the label) are written and read back as text,
so either file reads back as the same frame. ``read_table`` is the one reader: with ``verify``
(the default) the file is checked against the ledger beside it and every row against the run it
names (``ledger.verify_rows``) before anything is drawn or published from it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from ..core import check
from ..files import replace_file
from ..sweep.table import (  # the one place naming them
    KNOB_PREFIX,
    is_knob_column,
    knob_column,
    knob_columns,
)
from . import ledger

TEXT_COLUMNS = ("experiment", "size", "zoo_key", "commit", "status", "label", "state")


def _text_columns(studies) -> set[str]:
    """The columns read as text: every map's (``TEXT_COLUMNS``) and those the tables' studies
    (the names in ``studies``: its ``study`` column) declare (``Study.text_columns``)."""
    out = set(TEXT_COLUMNS)
    for name in {str(n) for n in studies if isinstance(n, str)}:
        if name in ledger.protocol.STUDIES:
            out |= set(ledger.protocol.study(name).text_columns)
    return out


def read_table(path: str | Path, verify: bool = True) -> pd.DataFrame:
    """A map's table as ``toymech map`` wrote it, from the ``.csv`` or ``.parquet`` at
    ``path``: the same frame either way (knobs, keys and labels as text). ``verify``: the file
    as the ledger beside it records it (``ledger.check_recorded``) and every row against the run
    it names (``ledger.verify_rows``: a ValueError naming the row); False only where the caller
    checks the rows itself (a map run, which measures rows without a hash again)."""
    path = Path(path)
    check(path.is_file(), "map table", str(path), "a table written by toymech map (.csv, .parquet)")
    if verify:
        ledger.check_recorded(path.parent, path.stem, [path.name])
    if path.suffix == ".parquet":
        table = pd.read_parquet(path)
        table = _as_text(table, _text_columns(table["study"] if "study" in table else ()))
    else:
        header = pd.read_csv(path, nrows=0).columns
        studies = (pd.read_csv(path, usecols=["study"], dtype=str)["study"].dropna().unique()
                   if "study" in header else ())
        text = _text_columns(studies)
        table = pd.read_csv(path, dtype={c: str for c in header
                                         if is_knob_column(c) or c in text})
        if "refined" in table:  # True / False as written (a bool column, as Parquet keeps it)
            table["refined"] = table["refined"].map(lambda v: v is True or str(v) == "True")
        table = _as_text(table, text)
    if verify and len(table):
        missing = [c for c in ledger.FIXED if c not in table]
        check(not missing, "map table", str(path), "a table written by toymech map (it has no "
              f"{missing[0] if missing else ''!r} column)")
        ledger.verify_rows(table, path, ledger.study_for(table))
    return table


def _as_text(table: pd.DataFrame, text: set[str]) -> pd.DataFrame:
    """The text columns as pandas' text columns (missing where empty), whichever file they came
    from, so that a column with no value at all reads back as text too."""
    for c in table.columns:
        if is_knob_column(c) or c in text:
            table[c] = pd.Series([None if pd.isna(v) else str(v) for v in table[c]],
                                 dtype="str", index=table.index)
    return table


def read_or_empty(path: Path) -> pd.DataFrame:
    """The table at ``path`` (empty where there is none yet); one that cannot be read raises."""
    if not path.is_file():
        return pd.DataFrame()
    try:
        return read_table(path, verify=False)  # the caller checks every row (``maps.run``)
    except (OSError, ValueError, pd.errors.ParserError) as exc:
        raise ValueError(f"map table={str(path)!r} is not allowed: a table written by toymech map "
                         f"(reading it gives {type(exc).__name__}); move it aside to start "
                         "again") from None


def is_blank(value) -> bool:
    """Whether a cell of the table holds nothing (missing, NaN or empty text)."""
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def row_knobs(row, columns: dict[str, str]) -> dict[str, list[str]]:
    """A row's knob values (``columns``: ``knob_columns``) as a map spec's ``knobs``, one value
    each; an empty cell left out."""
    return {k: [str(row[c])] for k, c in columns.items() if not is_blank(row.get(c))}


def write_table(table: pd.DataFrame, path: Path) -> None:
    """The table as CSV and, beside it, as Parquet (each atomically: a killed write leaves the
    last good table). Text columns are written as text (an empty one as missing), so both read
    back as the same frame."""
    text = _text_columns(table["study"].dropna().unique() if "study" in table else ())
    table = _as_text(table.assign(**{c: table[c].map(lambda v: None if pd.isna(v) or v == "" else v)
                                     for c in table.columns if c in text}), text)
    if "refined" in table:  # rows of a map measured before it was refined: not refined
        table = table.assign(refined=table["refined"].map(lambda v: v is True))
    replace_file(path, lambda tmp: table.to_csv(tmp, index=False))
    replace_file(path.with_suffix(".parquet"), lambda tmp: table.to_parquet(tmp, index=False))


__all__ = ["KNOB_PREFIX", "TEXT_COLUMNS", "is_blank", "is_knob_column", "knob_column",
           "knob_columns", "read_or_empty", "read_table", "row_knobs", "write_table"]
