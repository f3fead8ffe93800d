"""A sweep's trials and its results table (one row per trial), and the checks of the options
every sweep shares. Imports only ``toymech.zoo`` and below.

``explicit_trials`` turns ``{"experiments": [Experiment, ...]}`` into trials (how the studies
send their grids); ``toymech.grid`` makes trials from a named grid.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core import Setting, check, check_int, check_path_writable_file, check_str, jsonable
from ..files import replace_file
from ..training import Experiment, seedless_key
from ..zoo import Zoo, ZooEntry

STATUSES = ("ok", "failed", "diverged", "cancelled", "pending")  # pending: a live sweep's table
COLUMNS = ("trial", "experiment", "size", "seed")  # then the overrides, RESULT_COLUMNS, metrics
RESULT_COLUMNS = ("status", "error", "attempts", "seconds", "loaded", "device", "entry")
MAX_TRIALS = 10_000  # a sweep's trials at most (a grid is counted before it is expanded)
KNOB_PREFIX = "knob."  # a knob's column in a sweep's or a map's table: ``knob.<name>``


def knob_column(name: str) -> str:
    """The table column of knob ``name`` (``block_len`` -> ``knob.block_len``)."""
    return KNOB_PREFIX + name


def is_knob_column(column: Any) -> bool:
    """Whether ``column`` is a knob's column (``knob_column``'s form)."""
    return str(column).startswith(KNOB_PREFIX)


def knob_columns(table: pd.DataFrame) -> dict[str, str]:
    """{knob name: its column} of ``table``, in the table's order: with ``knob_column`` and
    ``is_knob_column``, the one place that names a knob's column."""
    return {c[len(KNOB_PREFIX):]: c for c in table.columns if is_knob_column(c)}


@dataclass(eq=False)
class Trial:
    """One model of the sweep (one table row). Trials with the same ``group`` train as one job
    (the seeds of a grid point with ``stack_seeds``).

    ``setting``: the ``core.Setting`` the grid built the trial's experiment from (its size and
    the study's knobs, canonical: the study's ``with_knobs``), or None for an explicit
    experiment (no size). ``knobs``: the grid point's knob values as the grid gives them, its
    table columns (``knob.<name>``) and part of its ``id``; a knob at the source's value is a
    column here though the setting, which holds only the knobs that change a run, drops it."""

    index: int
    experiment: str
    setting: Setting | None
    seed: int
    overrides: dict[str, Any]
    exp: Experiment
    tag: str = ""
    group: int = 0
    knobs: dict[str, Any] = field(default_factory=dict)  # the grid point's, as given

    @property
    def size(self) -> str:
        """The trial's size name ("" for an explicit experiment): its setting's size."""
        return self.setting.size if self.setting is not None else ""

    @property
    def columns(self) -> dict[str, Any]:
        """The trial's grid point as table columns: its overrides, then its knobs
        (``knob_column``)."""
        return {**self.overrides, **{knob_column(k): v for k, v in self.knobs.items()}}

    @property
    def id(self) -> str:
        """Stable across runs and machines: the name, size, seed and a hash of its columns (overrides and knobs)."""
        if not self.size:  # an explicit experiment: its name and its zoo key
            return f"{self.experiment}-{self.key}"
        blob = json.dumps(jsonable(self.columns), sort_keys=True)
        return (f"{self.experiment}-{self.size}-s{self.seed}-"
                f"{hashlib.sha256(blob.encode()).hexdigest()[:8]}")

    @property
    def key(self) -> str:
        """The zoo key of the trial's experiment under its tag."""
        return self.exp.key(self.tag)


@dataclass
class SweepResult:
    """What a sweep returns. ``table``: one row per trial (also at ``path``); ``trials``: the
    Trial objects, in the table's order; ``cache_dir``: the zoo; ``backend``: the runner used;
    ``meta``: how it started. ``entry(i)`` loads trial i's model from the zoo."""

    table: pd.DataFrame
    trials: list[Trial]
    path: Path
    cache_dir: Path
    backend: str
    # how the runner started: requested and used backend, start-up attempts, seconds, outcome
    # (also written beside the table as ``<table>.meta.json``)
    meta: dict = dataclasses.field(default_factory=dict)

    def count(self, status: str) -> int:
        """The trials whose status is ``status`` (ok, failed, diverged, cancelled)."""
        return int((self.table["status"] == status).sum())

    @property
    def loaded(self) -> int:
        """The trials read back from the zoo rather than trained."""
        return int(self.table["loaded"].sum())

    def summary(self) -> str:
        """One line: the trials by status, the runner and the table's path."""
        diverged = f", {self.count('diverged')} diverged" if self.count("diverged") else ""
        return (f"{self.count('ok')} ok ({self.loaded} loaded from the zoo), "
                f"{self.count('failed')} failed{diverged}, {self.count('cancelled')} cancelled of "
                f"{len(self.trials)} trials ({self.backend}); table: {self.path}")

    def entry(self, i: int, device: str = "auto") -> ZooEntry:
        """Trial ``i``'s model, loaded from the zoo onto ``device`` (a ``ZooEntry``)."""
        trial = self.trials[check_int("trial", i, 0, len(self.trials) - 1)]
        return Zoo(self.cache_dir).load(trial.exp, device=device, tag=trial.tag, log=None)


def row(trial: Trial, status: str, result: dict[str, Any] | None = None,
        attempts: int = 0) -> dict[str, Any]:
    """A table row: the trial's axes, then ``RESULT_COLUMNS``, then its final metrics."""
    result = result or {}
    out = {"trial": trial.id, "experiment": trial.experiment, "size": trial.size, "seed": trial.seed}
    for key, value in trial.columns.items():  # lists (freeze patterns) as JSON text
        out[key] = json.dumps(jsonable(value)) if isinstance(value, (list, tuple, dict)) else value
    out.update(status=status, error=result.get("error", ""), attempts=attempts,
               seconds=result.get("seconds", math.nan), loaded=bool(result.get("loaded", False)),
               device=result.get("device", ""),
               entry=result.get("entry", f"{trial.exp.task.name}-{trial.key}"))
    for name, value in result.get("final", {}).items():
        out[name if name not in out else f"final_{name}"] = value
    return out


def meta_path(path: Path) -> Path:
    """Where a table's metadata lies: ``<table>.meta.json`` beside it."""
    return path.with_name(path.name + ".meta.json")


def write_meta(meta: dict[str, Any], path: Path) -> None:
    """The runner's start-up record beside the table ``path``, written atomically."""
    target = meta_path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    replace_file(target, json.dumps(meta, indent=1, sort_keys=True))


def write_table(rows: dict[int, dict[str, Any]], path: Path) -> pd.DataFrame:
    """The rows as a DataFrame, written to ``path`` atomically (a complete CSV at all times)."""
    records = [rows[i] for i in sorted(rows)]
    fixed = list(records[0])[:list(records[0]).index("entry") + 1]
    metrics = sorted({k for r in records for k in r} - set(fixed), key=lambda k: (k != "step", k))
    table = pd.DataFrame(records, columns=fixed + metrics)
    path.parent.mkdir(parents=True, exist_ok=True)
    replace_file(path, lambda tmp: table.to_csv(tmp, index=False))
    return table


# ----------------------------------------------------------------------------------------------
# options every sweep shares
# ----------------------------------------------------------------------------------------------


def check_out(out: Any, grid: str | Path | None = None) -> Path:
    """``out``, the table's file: a new file, or a results table a sweep wrote before (its header
    starts with ``COLUMNS``), never the grid file or another file of the user's, which
    writing the table would overwrite."""
    path = check_path_writable_file("out", out)
    if not os.path.lexists(path):
        return path
    if grid is not None and os.path.exists(grid):
        check(not os.path.samefile(path, grid), "out", str(out),
              "a results table file, not the grid itself (the table would overwrite it)")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            header = f.readline(4096) if path.is_file() else ""
    except OSError:
        header = ""
    check(header.startswith(",".join(COLUMNS) + ","), "out", str(out),
          "a new file or a results table an earlier sweep wrote (this file is no results "
          "table: writing the table would overwrite it)")
    return path



def check_stack(value: Any) -> bool | str:
    """``stack_seeds``: false, true (stacked where ``zoo.stacking_pays``) or "always"."""
    check(isinstance(value, bool) or value == "always", "stack_seeds", value,
          "false, true (the seeds of a grid point train as one stacked job where that pays) "
          "or 'always'")
    return value


def check_retries(value: Any) -> int:
    return check_int("retries", value, 0, 100)


def check_name(value: Any) -> str:
    check(isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", value)
          is not None, "name", value, "letters, digits, '_', '.' and '-' (a file name)")
    return value


def check_common(spec: dict[str, Any]) -> tuple[bool | str, str]:
    """``stack_seeds``, ``retries``, ``tag`` and ``name`` of a spec; returns (stack, tag)."""
    stack = check_stack(spec.get("stack_seeds", False))
    check_retries(spec.get("retries", 1))
    tag = check_str("tag", spec.get("tag", ""), empty=True)
    if "name" in spec:
        check_name(spec["name"])
    return stack, tag


def sweep_name(spec: dict[str, Any], stem: str = "sweep") -> str:
    """The spec's ``name``, else ``stem`` (the grid file's) and a hash of what defines its
    trials, so two different grids never share a table."""
    if spec.get("name"):
        return spec["name"]
    keys = ("experiment", "size", "seed", "overrides", "stack_seeds", "tag")
    what = {k: spec.get(k) for k in keys}
    if "experiments" in spec:  # explicit experiments: their zoo keys define the sweep
        what["experiments"] = [e.key() if isinstance(e, Experiment) else
                               Experiment.from_dict(e).key() for e in spec["experiments"]]
    blob = json.dumps(jsonable(what), sort_keys=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)[:60] or "sweep"
    return f"{stem}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


def explicit_trials(spec: dict[str, Any]) -> list[Trial]:
    """The trials of ``{"experiments": [...]}``: each an ``Experiment`` (or its dict); with
    ``stack_seeds``, those that differ only in their seeds form one job."""
    both = sorted(set(spec) & {"experiment", "size", "seed", "overrides"})
    check(not both, "grid key", both[0] if both else None,
          "not with 'experiments' (explicit experiments carry their own size, seed and settings)")
    items = spec["experiments"]
    check(isinstance(items, (list, tuple)) and len(items) > 0, "experiments",
          type(items).__name__, "a non-empty list of Experiment objects or their dicts")
    check(len(items) <= MAX_TRIALS, "experiments", f"{len(items):,} experiments",
          f"at most {MAX_TRIALS:,} trials in one sweep")
    exps = [e if isinstance(e, Experiment) else Experiment.from_dict(e) for e in items]
    stack, tag = check_common(spec)
    groups: dict[str, int] = {}
    trials = []
    for i, exp in enumerate(exps):
        group = groups.setdefault(seedless_key(exp), len(groups)) if stack else i
        trials.append(Trial(i, exp.name or exp.task.name, None, exp.train.seed, {}, exp, tag,
                            group))
    seen: set[str] = set()
    dup = next((t.key for t in trials if t.key in seen or seen.add(t.key)), None)
    check(dup is None, "experiments", dup, "each experiment once (two have the same zoo key)")
    return trials
