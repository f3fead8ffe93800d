"""Sweeps of experiments into the zoo, above the training layer: ``from toymech.sweep import
run_sweep`` (the command is ``toymech sweep GRID.yaml``).

* ``table``: trials, the results table, the options every sweep shares (imports training);
* ``backends``: where the jobs run (in-process, local processes, Ray) and ``run_job``;
* ``runner``: the preflight of every trial, retries, Ctrl-C, ``run_experiments`` for explicit
  experiments (a study's grid; imports training);
* ``grid``: named grids expanded through ``toymech.experiments``, and ``run_sweep``.
"""

from .grid import (NOT_OVERRIDABLE, SECTIONS, SPEC_KEYS, apply_overrides, expand_grid, load_grid,
                   run_sweep)
from .backends import LocalRunner, PoolRunner, RayRunner, RayStartFailed, run_job
from .runner import BACKENDS, run_experiments
from .table import (COLUMNS, MAX_TRIALS, RESULT_COLUMNS, STATUSES, SweepResult, Trial,
                    sweep_name, write_table)

__all__ = ["BACKENDS", "COLUMNS", "MAX_TRIALS", "NOT_OVERRIDABLE", "RESULT_COLUMNS", "SECTIONS",
           "SPEC_KEYS", "STATUSES", "LocalRunner", "PoolRunner", "RayRunner", "RayStartFailed", "SweepResult", "Trial",
           "apply_overrides", "expand_grid", "load_grid", "run_experiments", "run_job",
           "run_sweep", "sweep_name", "write_table"]
