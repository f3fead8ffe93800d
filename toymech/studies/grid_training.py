"""The studies' grids go through ``toymech.sweep``: every run of a grid is a sweep trial stored
in the zoo (resumable, with a results table under ``<zoo>/sweeps/``), and the study then reads
the models back from the sweep's result.

Backend: Ray when it is installed and the notebook's CPU budget (the torch threads its
``validate`` chose: free cores / notebooks running, or ``threads``) allows two or more workers,
or a GPU is used; the in-process runner otherwise, since a one-worker Ray only adds its start-up
(``benchmarks/bench_sweep.py``: 0.49x the in-process rate with one free core). The embedded Ray
is started once per notebook process and reused by its later grids. ``TOYMECH_SWEEP_BACKEND``
(auto, ray, local) overrides the choice.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Sequence

import torch

from ..core import check
from ..devices import initial_threads
from ..sweep.runner import BACKENDS, run_experiments
from ..sweep.table import SweepResult
from ..training import Experiment
from ..zoo import Zoo


def backend_for(device: torch.device | str, workers: int) -> str:
    """``ray`` or ``local`` by the rule of the module docstring."""
    forced = os.environ.get("TOYMECH_SWEEP_BACKEND", "auto")
    check(forced in BACKENDS, "TOYMECH_SWEEP_BACKEND", forced, f"one of {', '.join(BACKENDS)}")
    if forced != "auto":
        return forced
    has_ray = importlib.util.find_spec("ray") is not None
    gpu = torch.device(device).type == "cuda"
    return "ray" if has_ray and (workers >= 2 or gpu) else "local"


def train_grid(experiments: Sequence[Experiment], zoo: Zoo, device: torch.device | str,
               stacked: bool | None = None, log=None) -> SweepResult:
    """Train (or find in the zoo) every experiment of a study's grid as one sweep; the seeds of
    a setting train together, stacked where that pays (``stacked`` forces it). A trial that
    fails (after one retry) stops the study with its error, as a failing run would. A grid with
    something to train shows one progress bar (JupyterLab draws it; the reports leave it out)."""
    workers = max(1, initial_threads())  # the notebook's share, not what rebalance made of it
    experiments = list(experiments)
    todo = sum(not zoo.has(e) for e in experiments)
    forced = os.environ.get("TOYMECH_SWEEP_BACKEND", "auto") == "ray"
    result = run_experiments(experiments, cache_dir=zoo.root, stacked=stacked,
                             backend=backend_for(device, workers), device=str(device),
                             workers=workers, log=log, progress=todo > 0, fallback=not forced)
    failed = result.table[result.table["status"] != "ok"]
    if len(failed):
        first = failed.iloc[0]
        raise RuntimeError(f"{len(failed)} of {len(result.trials)} runs of the grid failed "
                           f"(table: {result.path}); first: {first['trial']}: {first['error']}")
    return result
