"""Study 2's class: what it declares and what it computes, each naming the table or function of
its modules (``toymech.studies.protocol.Study`` says what each must be)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch

from ...core import Setting
from ...tasks import Batch, Task
from ...training import Experiment
from ..protocol import Study
from . import causal, design, design_map, dynamics, map_measure, nulls, over_seeds
from .claims import CLAIMS, SETTINGS, SOURCE


class BirthStudy(Study):
    """Study 2: Birth of a Transformer, a memory viewpoint (Bietti et al. 2023; see
    docs/sources.md, study 2)."""

    name = "birth"
    title = "Birth of a Transformer: a memory viewpoint"
    source = SOURCE
    source_called = "the paper"
    sizes = design.SIZES
    calibration = design.CALIBRATION
    named_experiments = design.EXPERIMENTS
    knobs = design.KNOBS
    claims = CLAIMS
    settings = SETTINGS
    notebook = "notebooks/02_birth_of_a_transformer.ipynb"
    own_options = design.OPTIONS
    optional_run_names = design.OPTIONAL_RUNS
    llc_on_sizes = design.LLC_ON
    llc_settings = causal.LLC_SETTINGS
    llc_pool_sizes = causal.LLC_POOL
    dynamics_names = dynamics.DYNAMICS_METRICS
    dynamics_shown = dynamics.CAUSAL_SHOWN
    map_label = map_measure.MAP_LABEL
    null_family = nulls.NULL_FAMILY
    # the maps its results page shows first (docs/results/), the first as its figure
    results_maps = ("s2-design-calibrated", "s2-reviewer", "s2-design", "s2-positions",
                    "s2-design-calibration")

    def experiments(self, size: Setting | str, seeds: Sequence[int]) -> list[Experiment]:
        return design.experiments(size, seeds)

    def knob_runs(self, size: Setting | str) -> list[Experiment]:
        return design.every_run(size)

    def check_own_options(self, size: Setting | str, seed: int, **options: Any) -> None:
        design.check_own_options(size, seed, **options)

    def eval_sets(self, task: Task, size: Setting | str, seed: int,
                  device: str | torch.device = "cpu", **options: Any) -> dict[str, Batch]:
        return design.eval_sets(task, size, seed, device, **options)

    def describe(self, size: Setting | str, seed: int, device: Any, *,
                 n_seeds: int | None = None, **options: Any) -> str:
        return design.describe(size, seed, device, n_seeds=n_seeds, **options)

    def probe_data(self, task: Task, size: Setting | str, seed: int,
                   device: str | torch.device = "cpu", **options: Any
                   ) -> dynamics.BirthProbeData:
        return dynamics.probe_data(task, size, seed, device, **options)

    def dynamics_metrics(self, model: Any, data: dynamics.BirthProbeData) -> dict[str, float]:
        return dynamics.dynamics_metrics(model, data)

    def measure_seed(self, runs: Mapping[str, Any], data: dynamics.BirthProbeData
                     ) -> dict[str, float]:
        return over_seeds.measure_seed(runs, data)

    def untrained_numbers(self, size: Setting | str, seed: int) -> dict[str, float]:
        return over_seeds.untrained_numbers(size, seed)

    def map_row(self, run: Any, size: Setting | str, seed: int, **options: Any) -> dict:
        return map_measure.map_row(run, size, seed, **options)

    def map_evidence(self, table: pd.DataFrame) -> str:
        return design_map.comparisons_said(table)
