"""Sweeps of experiments into the zoo, above the zoo layer: ``from toymech.sweep import
run_experiments``. Named grids (``toymech sweep GRID.yaml``, ``run_sweep``) are
``toymech.grid``, one layer up beside ``toymech.experiments``: nothing here imports them.

* ``table``: trials, the results table, the options every sweep shares (imports the zoo);
* ``backends``: where the jobs run (in-process, local processes, Ray) and ``run_job``;
* ``pool``: ``train_missing``, the runs a zoo lacks as one process per free core;
* ``runner``: the preflight of every trial, retries, Ctrl-C, ``run_experiments`` for explicit
  experiments (a study's grid; imports the zoo).
"""

from .backends import LocalRunner, PoolRunner, RayRunner, RayStartFailed, run_job
from .pool import train_missing
from .runner import BACKENDS, run_experiments
from .table import (
                    COLUMNS,
                    MAX_TRIALS,
                    RESULT_COLUMNS,
                    STATUSES,
                    SweepResult,
                    Trial,
                    sweep_name,
                    write_table,
)

__all__ = ["BACKENDS", "COLUMNS", "MAX_TRIALS", "RESULT_COLUMNS", "STATUSES", "LocalRunner",
           "PoolRunner", "RayRunner", "RayStartFailed", "SweepResult", "Trial", "run_experiments",
           "run_job", "sweep_name", "train_missing", "write_table"]
