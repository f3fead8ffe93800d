"""Study 1's class: what it declares and what it computes, each naming the table or function of
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
from . import causal, design, dynamics, map_measure, over_seeds, panel
from .claims import CLAIMS, SETTINGS, SOURCE
from .predictions import MAP_PREDICTIONS


class InductionStudy(Study):
    """Study 1: induction heads on repeated letter blocks (the blog post and its code; see
    docs/sources.md, study 1)."""

    name = "induction"
    title = "Induction heads on repeated letter blocks"
    source = SOURCE
    source_called = "the post"
    sizes = design.SIZES
    calibration = design.CALIBRATION
    named_experiments = design.EXPERIMENTS
    knobs = design.KNOBS
    claims = CLAIMS
    settings = SETTINGS
    notebook = "notebooks/01_induction_repeated_blocks.ipynb"
    optional_run_names = design.OPTIONAL_RUNS
    llc_on_sizes = design.LLC_ON
    llc_settings = causal.LLC_SETTINGS
    llc_pool_sizes = causal.LLC_POOL
    dynamics_names = dynamics.DYNAMICS_METRICS
    dynamics_shown = dynamics.CAUSAL_SHOWN
    map_label = map_measure.MAP_LABEL
    map_predictions = MAP_PREDICTIONS
    null_family = panel.NULL_FAMILY
    # the maps its results page shows first (docs/results/), the first as its figure
    results_maps = ("s1-capacity", "s1-smeared")
    text_columns = ("panel", "ablate.top")  # the panel's description; the top head's name

    def experiments(self, size: Setting | str, seeds: Sequence[int]) -> list[Experiment]:
        return design.experiments(size, seeds)

    def knob_runs(self, size: Setting | str) -> list[Experiment]:
        return design.every_model(size)

    def check_knobs(self, experiment: Experiment, values: Mapping[str, Any]) -> None:
        design.check_length(experiment, values)

    def eval_sets(self, task: Task, size: Setting | str, seed: int,
                  device: str | torch.device = "cpu") -> dict[str, Batch]:
        return design.eval_sets(task, size, seed, device)

    def describe(self, size: Setting | str, seed: int, device: Any, *,
                 n_seeds: int | None = None) -> str:
        return design.describe(size, seed, device, n_seeds=n_seeds)

    def probe_data(self, task: Task, size: Setting | str, seed: int,
                   device: str | torch.device = "cpu", **options: Any
                   ) -> dynamics.InductionProbeData:
        return dynamics.probe_data(task, size, seed, device, **options)

    def dynamics_metrics(self, model: Any, data: dynamics.InductionProbeData
                         ) -> dict[str, float]:
        return dynamics.dynamics_metrics(model, data)

    def measure_seed(self, runs: Mapping[str, Any], data: dynamics.InductionProbeData
                     ) -> dict[str, float]:
        return over_seeds.measure_seed(runs, data)

    def untrained_numbers(self, size: Setting | str, seed: int) -> dict[str, float]:
        return over_seeds.untrained_numbers(size, seed)

    def map_row(self, run: Any, size: Setting | str, seed: int, **options: Any) -> dict:
        return map_measure.map_row(run, size, seed, **options)

    def map_check(self, size: Setting | str) -> None:
        map_measure.map_check(size)

    def map_panel(self, sizes: Sequence[Setting]) -> map_measure.MapPanel:
        return map_measure.map_panel(sizes)

    def map_evidence(self, table: pd.DataFrame) -> str:
        return map_measure.map_evidence(table)
