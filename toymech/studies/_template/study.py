"""The template study's class: what it declares and what it computes, each naming the table or
function of its modules (``toymech.studies.protocol.Study`` says what each must be)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from toymech.core import Setting
from toymech.studies.protocol import Study
from toymech.tasks import Batch, Task
from toymech.training import Experiment

from . import design, dynamics, over_seeds
from .claims import CLAIMS, SETTINGS, SOURCE


class TemplateStudy(Study):
    """Template study: a 2-layer transformer on parenthesis balancing (copy it; see the
    package's docstring)."""

    name = design.NAME
    title = "Template study: a 2-layer transformer on parenthesis balancing"
    source = SOURCE
    sizes = design.SIZES
    calibration = design.CALIBRATION
    named_experiments = design.EXPERIMENTS
    knobs = design.KNOBS
    claims = CLAIMS
    settings = SETTINGS
    notebook = "toymech/studies/_template/notebook.ipynb"
    optional_run_names = design.OPTIONAL_RUNS
    dynamics_names = dynamics.DYNAMICS_METRICS

    def experiments(self, size: Setting | str, seeds: Sequence[int]) -> list[Experiment]:
        return design.experiments(size, seeds)

    def eval_sets(self, task: Task, size: Setting | str, seed: int,
                  device: str | torch.device = "cpu") -> dict[str, Batch]:
        return design.eval_sets(task, size, seed, device)

    def describe(self, size: Setting | str, seed: int, device: Any, *,
                 n_seeds: int | None = None) -> str:
        return design.describe(size, seed, device, n_seeds=n_seeds)

    def probe_data(self, task: Task, size: Setting | str, seed: int,
                   device: str | torch.device = "cpu") -> dynamics.TemplateProbeData:
        return dynamics.probe_data(task, size, seed, device)

    def dynamics_metrics(self, model: Any, data: dynamics.TemplateProbeData
                         ) -> dict[str, float]:
        return dynamics.dynamics_metrics(model, data)

    def measure_seed(self, runs: Mapping[str, Any], data: dynamics.TemplateProbeData
                     ) -> dict[str, float]:
        return over_seeds.measure_seed(runs, data)

    def untrained_numbers(self, size: Setting | str, seed: int) -> dict[str, float]:
        return over_seeds.untrained_numbers(size, seed)
