"""Study 3's class: what it declares and what it computes, each naming the table or function of
its modules (``toymech.studies.protocol.Study`` says what each must be)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ...core import Setting
from ...tasks import Batch, Task
from ...training import Experiment
from ..protocol import Study
from . import design, dynamics, map_measure, over_seeds, recipes
from .claims import CLAIMS, SETTINGS, SOURCE


class RandomTransformersStudy(Study):
    """Study 3: algorithmic capabilities of random transformers (Zhong & Andreas 2024; see
    docs/sources.md, study 3)."""

    name = "random_transformers"
    title = "Algorithmic capabilities of random transformers"
    source = SOURCE
    source_called = "the paper"
    sizes = design.SIZES
    calibration = design.CALIBRATION
    named_experiments = recipes.EXPERIMENTS
    knobs = design.KNOBS
    claims = CLAIMS
    settings = SETTINGS
    notebook = "notebooks/03_random_transformers.ipynb"
    optional_run_names = design.OPTIONAL_RUNS
    dynamics_names = dynamics.DYNAMICS_METRICS
    map_label = map_measure.MAP_LABEL
    null_family = map_measure.NULL_FAMILY
    # the maps its results page shows first (docs/results/), the first as its figure
    results_maps = ("s3-budget-parentheses", "s3-width-parentheses")

    def experiments(self, size: Setting | str, seeds: Sequence[int]) -> list[Experiment]:
        return design.experiments(size, seeds)

    def knob_runs(self, size: Setting | str) -> list[Experiment]:
        return recipes.knob_runs(size)

    def eval_sets(self, task: Task, size: Setting | str, seed: int,
                  device: str | torch.device = "cpu", **options: Any) -> dict[str, Batch]:
        return design.eval_sets(task, size, seed, device, **options)

    def describe(self, size: Setting | str, seed: int, device: Any, *,
                 n_seeds: int | None = None) -> str:
        return design.describe(size, seed, device, n_seeds=n_seeds)

    def probe_data(self, task: Task, size: Setting | str, seed: int,
                   device: str | torch.device = "cpu", **options: Any
                   ) -> dynamics.RandomTransformersProbeData:
        return dynamics.probe_data(task, size, seed, device, **options)

    def dynamics_metrics(self, model: Any, data: dynamics.RandomTransformersProbeData
                         ) -> dict[str, float]:
        return dynamics.dynamics_metrics(model, data)

    def measure_seed(self, runs: Mapping[str, Any], data: over_seeds.MeasureData
                     ) -> dict[str, float]:
        return over_seeds.measure_seed(runs, data)

    def untrained_numbers(self, size: Setting | str, seed: int) -> dict[str, float]:
        return over_seeds.untrained_numbers(size, seed)

    def map_row(self, run: Any, size: Setting | str, seed: int, **options: Any) -> dict:
        return map_measure.map_row(run, size, seed, **options)
