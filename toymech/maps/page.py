"""A map's page for readers (``toymech map GRID --report``): the map's table (``toymech.maps``)
read back, summarised per cell and drawn, through the thin notebook ``map.ipynb`` beside this
module, executed and rendered like every report (``build_reports``) and listed in the index.

The page opens with the map's finding, computed from the table (``maps.summary.finding``: in which cells
the study's ``map_label`` holds on every seed, on some, on none, each share with its exact 95 %
interval), and where its rows come from
(``provenance``: a table whose runs recorded a commit "+ local changes" says it is not
rebuildable from a commit); then the figure
(``maps.figure.map_figure``: the share of seeds with the label per cell, the median of the map's
number and "held of runs" with its interval as each cell's text, each seed's value on hover, the
source's setting as a star); then other works' predictions judged on the map (the study's
``MAP_PREDICTIONS``, ``maps.predictions``: judged pair by pair, each pair's outcome and exact p,
a verdict in three words: consistent, against, undecided); then every cell with the line of
Python that opens its runs (``toymech.explore(...)``).

The map notebook is not one of ``notebooks/``: it shows a table already measured, so it has no
study of its own, no step slider and no training; tests/test_notebooks.py says so.
"""

from __future__ import annotations

import math
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import check
from ..display import note, reader_table
from ..report.build import build_reports
from ..report.index import ReportEntry
from ..studies.states import BEYOND
from . import ledger
from .figure import map_figure
from .ledger import study_for
from .predictions import pair_rows, prediction_rows
from .summary import MEASURED, NOT_MEASURED, cell_groups, changes, count_text, finding
from .table import knob_columns, read_table  # the one reader (verify=True: every row checked)

MAP_NOTEBOOK = Path(__file__).resolve().parent / "map.ipynb"
PAGE_PREFIX = "map-"  # a map's page: <out>/map-<name>.html
_NOT_NUMBERS = ("seed", "refined")


def label_of(table: pd.DataFrame, label: str | None = None) -> str:
    """``label``, else the mapped study's ``map_label`` (the label that says its mechanism holds)."""
    return label if label is not None else study_for(table).map_label


def number_of(table: pd.DataFrame, number: str | None = None) -> str | None:
    """``number``, else the table's ``beyond_baseline`` where its study writes one, else its
    first measured number (the study's ``map_row`` order; a count such as a width is not a
    measurement)."""
    if number is not None:
        check(number in table, "number", number, f"a column of the map: {', '.join(table)}")
        return number
    if BEYOND in table:  # how far beyond the best predictor without the mechanism
        return BEYOND
    start = list(table.columns).index("status") + 1 if "status" in table else 0
    for c in list(table.columns)[start:]:
        if c not in _NOT_NUMBERS and pd.api.types.is_float_dtype(table[c]):
            return c
    return None


def dims_of(table: pd.DataFrame) -> list[str]:
    """The map's dimensions: its knobs (in the table's order), then ``experiment`` where the
    map has several."""
    return list(knob_columns(table)) + (["experiment"] if table["experiment"].nunique() > 1 else [])


def open_line(experiment: str, knobs: dict[str, str], size_name: str, seed: int) -> str:
    """The line of Python that opens one run of a cell at size ``size_name`` in the explorer."""
    variant = ", ".join(f"{k!r}: {v!r}" for k, v in knobs.items())
    return (f'toymech.explore("{experiment}", size="{size_name}", seed={int(seed)}, '
            f"variant={{{variant}}})").replace("'", '"')


def _value_text(v: Any) -> str:
    if isinstance(v, float):
        return "–" if math.isnan(v) else f"{v:.3g}"
    return str(v)


def cell_frame(table: pd.DataFrame, label: str, number: str | None) -> pd.DataFrame:
    """One row per cell of the map (``summary.cell_groups``): its dimensions (``dims_of``),
    ``runs``, ``held`` (measured seeds labelled ``label``), ``share``, ``phase`` (only for a table
    whose study writes run states: the cell's commonest outcome, a learned run's label or the
    state of a run without one; the first listed where two tie), ``outcomes`` (every outcome's count), ``median`` (of ``number``
    over its measured runs), ``low`` and ``high`` (the exact 95 % interval of ``share``:
    ``summary.Cell.interval``), ``seeds`` ("2 of 3 [0.09, 0.99]": held of runs and that
    interval, with the runs without a label: "(1 diverged)"),
    ``failed`` (those runs in words), ``refined`` (whether ``--refine`` added runs to it),
    ``hover`` (each seed's label and number) and ``open`` (``open_line`` of its first seed)."""
    check(isinstance(table, pd.DataFrame) and {"experiment", "seed", "label"} <= set(table),
          "table", type(table).__name__, "a map table (toymech map)")
    rows = []
    for cell in cell_groups(table):
        runs, held, failed = cell.runs, cell.held(label), cell.states_text()
        nums = (pd.to_numeric(cell.measured[number], errors="coerce").dropna() if number
                else pd.Series())
        seeds = "<br>".join(f"seed {int(r['seed'])}: {r['label']}"
                            + (f" ({r['state']})" if r["state"] not in (MEASURED, NOT_MEASURED) else "")
                            + (f", {number} {_value_text(r[number])}" if number else "")
                            for _, r in runs.iterrows())
        line = open_line(cell.experiment, cell.knobs, str(runs["size"].iloc[0])
                         if "size" in runs else "default", runs["seed"].iloc[0])
        refined = bool(runs["refined"].fillna(False).astype(bool).any()) \
            if "refined" in runs else False
        outcomes = [str(r["label"]) if r["state"] == MEASURED else str(r["state"])
                    for _, r in runs.iterrows()]
        counts = pd.Series(outcomes).value_counts(sort=False)
        low, high = cell.interval(label)
        rows.append({**cell.knobs, "experiment": cell.experiment, "runs": cell.n,
                     "held": held, "share": held / cell.n, "low": low, "high": high,
                     **({"phase": str(counts.idxmax())} if "state" in table else {}),
                     "outcomes": ", ".join(f"{n} {o}" for o, n in counts.items()),
                     "median": float(nums.median()) if len(nums) else math.nan,
                     "seeds": count_text(held, cell.n) + (f" ({failed})" if failed else ""),
                     "failed": failed, "refined": refined,
                     "hover": f"{cell.experiment}: {cell.where()}<br>{seeds}<br>{line}",
                     "open": line})
    return pd.DataFrame(rows)


LOCAL_CHANGES = " + local changes"  # what ``core.source_commit`` appends for a dirty tree


def provenance(table: pd.DataFrame) -> str:
    """Where the rows of a map ``table`` come from, in a sentence: the commits its runs recorded
    and, where any recorded `` + local changes`` (``core.source_commit``: a tree whose tracked
    files differed from its commit), that those rows are not rebuildable from a commit."""
    commits = (table["commit"].dropna().astype(str).str.strip() if "commit" in table
               else pd.Series(dtype=str))
    commits = commits[commits != ""]
    names = sorted(set(commits))
    if commits.empty:
        return "The table records no commit: its rows are not rebuildable from a commit."
    dirty = commits[commits.str.endswith(LOCAL_CHANGES)]
    if dirty.empty:
        if len(names) == 1:
            return f"Rows from commit {names[0]}: rebuildable from that code."
        counts = commits.value_counts()
        return ("Rows from commits " + ", ".join(f"{c} ({counts[c]} rows)" for c in names)
                + ": each row rebuildable from the code of its own commit (its `commit` column).")
    return (f"Not rebuildable from a commit: {len(dirty)} of {len(commits)} rows were written "
            f"from a tree with local changes ({', '.join(sorted(set(dirty)))}), so the code that "
            "made them is in no commit; re-run the map from a clean checkout to record one.")


def source_of(study, dims: list[str]) -> dict[str, str]:
    """The source's value of each knob of ``dims``, as the table writes it."""
    return {d: study.knobs[d].text(study.knobs[d].source) for d in dims if d in study.knobs}


@dataclass
class MapPage:
    """What a map's page shows, computed from its table (``MapPage.read(path)``)."""

    table: pd.DataFrame
    label: str
    number: str | None
    cells: pd.DataFrame
    dims: list[str]
    source: dict[str, str]
    finding: str
    predictions: pd.DataFrame  # ``prediction_rows`` of the study's MAP_PREDICTIONS on the table
    changes: list = None  # ``summary.changes``: where the commonest outcome changes
    evidence: str = ""  # the study's ``map_evidence`` of the table (its causal evidence)
    pairs: pd.DataFrame = None  # ``pair_rows``: each pair of cells a prediction compares

    @classmethod
    def of(cls, table: pd.DataFrame, label: str | None = None,
           number: str | None = None) -> MapPage:
        label, number = label_of(table, label), number_of(table, number)
        dims, study = dims_of(table), study_for(table)
        return cls(table, label, number, cell_frame(table, label, number), dims,
                   source_of(study, dims), finding(table, label),
                   prediction_rows(study.map_predictions, table),
                   changes(table), study.map_evidence(table),
                   pair_rows(study.map_predictions, table))

    @classmethod
    def read(cls, path: str | Path, label: str | None = None,
             number: str | None = None) -> MapPage:
        return cls.of(read_table(path), label, number)

    @property
    def provenance(self) -> str:
        """``provenance`` of the table: its commits, and whether its rows are rebuildable."""
        return provenance(self.table)

    @property
    def seeds(self) -> list[int]:
        return sorted({int(s) for s in self.table["seed"]})

    def figure(self):
        return map_figure(self.cells, self.dims, label=self.label, number=self.number or "-",
                          source=self.source)

    def cell_table(self) -> pd.DataFrame:
        """Every cell, as the page lists it: dimensions, the seeds with the label (with the
        exact 95 % interval of their share), the median number, whether refined, and the line
        that opens its runs."""
        shown = self.cells[[*self.dims, "seeds", "outcomes", "median", "refined", "open"]]
        return shown.rename(columns={"seeds": f"seeds '{self.label}'",
                                     "median": f"median {self.number or ''}".strip(),
                                     "open": "open its runs (Python)"})

    def reader_table(self):
        return reader_table(self.cell_table(), caption=f"Every cell of the map: how many of its "
                            f"seeds are labelled '{self.label}' (in brackets the exact 95 % "
                            "interval of that share), every run's outcome (a learned "
                            f"run's label, or its state), the median {self.number}, and "
                            "the line that opens its first seed's run in the explorer.",
                            code=["open its runs (Python)"])


    def prediction_view(self):
        """Other works' predictions judged on this map (a table), or a note that the study
        declares none."""
        if self.predictions.empty:
            return note("The mapped study declares no prediction from other work to judge on its map.")
        return reader_table(self.predictions, caption="Predictions from other work, each judged "
                            "on this map pair by pair: its verdict (consistent, against, "
                            "undecided), its pairs' outcomes and the stratified exact p (our "
                            "setting, not the source's)")

    def pair_view(self):
        """Every pair of cells the predictions compare (a table), or a note that none does."""
        if self.pairs is None or self.pairs.empty:
            return note("No prediction compares a pair of cells on this map.")
        return reader_table(self.pairs, caption="Each pair of cells a prediction compares: the "
                            "cell predicted to carry the label more often and the other, each "
                            "with its labelled runs and the exact 95 % interval of its share, "
                            "the pair's outcome and Fisher's exact one-sided p")


def map_tables(paths) -> list[Path]:
    """The map tables of ``paths``: each a map's ``.csv``, or a folder whose ``*.csv`` are maps
    (a zoo's ``maps/`` folder, or a zoo holding one); a sweep's ``.runs.csv`` is not a map."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        folder = path / "maps" if (path / "maps").is_dir() else path
        if folder.is_dir():
            for p in sorted(folder.glob("*.csv")):
                if p.name.endswith(".runs.csv"):
                    continue
                missing = [c for c in ledger.FIXED if c not in _header(p)]
                if missing:  # another file in the folder: said, and the others still read
                    print(f"[toymech] skipped {p}: not a map table (it has no {missing[0]!r} "
                          "column)", file=sys.stderr)
                    continue
                found.append(p)
        else:
            check(path.suffix == ".csv" and path.is_file(), "map", str(given),
                  "a map table (.csv written by toymech map), its folder or its zoo")
            found.append(path)
    return found


def read_maps(folder: str | Path, prefix: str = "") -> pd.DataFrame | None:
    """The map tables in ``folder`` (a zoo's ``maps/`` folder, or a zoo holding one:
    ``map_tables``) whose names start with ``prefix``, each read and checked (``read_table``),
    as one frame (their cells stay apart: each row names its experiment and knobs); None where
    there is none (no such table, or no such folder yet)."""
    if not Path(folder).is_dir():
        return None
    found = [p for p in map_tables([folder]) if p.stem.startswith(prefix)]
    tables = [t for t in (read_table(p) for p in found) if len(t)]
    return pd.concat(tables, ignore_index=True) if tables else None


def _header(path: Path) -> list[str]:
    try:
        return list(pd.read_csv(path, nrows=0).columns)
    except (OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError):
        return []


def build_map_report(table_path: str | Path, out_dir: str | Path = "reports", *,
                     size: str | None = None, command: str = "") -> ReportEntry:
    """Execute the map notebook on the table at ``table_path`` and write its page,
    ``<out_dir>/map-<table name>.html``, listed in ``<out_dir>/index.html``; returns its entry
    (``status == "failed"`` where the notebook failed)."""
    table_path = Path(table_path).resolve()
    table = read_table(table_path)
    if size is None:
        size = str(table["size"].iloc[0]) if "size" in table and len(table) else "default"
    with tempfile.TemporaryDirectory(prefix="toymech-map-") as tmp:
        notebook = Path(tmp) / f"{PAGE_PREFIX}{table_path.stem}.ipynb"
        shutil.copyfile(MAP_NOTEBOOK, notebook)
        first = int(table["seed"].min()) if len(table) else 0  # the header's first seed
        (entry,) = build_reports([notebook], out_dir, size=size, device="cpu", seed=first,
                                 extra_parameters={"table": str(table_path)}, command=command)
    return entry


__all__ = ["MapPage", "build_map_report", "provenance", "map_tables", "read_maps", "cell_frame", "open_line", "read_table", "study_for"]
