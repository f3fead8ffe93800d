"""The study over its seeds: train or load every seed's run, one seed's numbers, the null world
and the findings (functions that return numbers and tables, never figures)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from toymech.analysis.chance import chance_levels
from toymech.core import Setting
from toymech.models import build_model
from toymech.studies.findings import Findings, misses, scorecard_sentence
from toymech.studies.protocol import judged_seeds
from toymech.training import evaluate
from toymech.zoo import Zoo, ZooEntry

from .claims import numbers
from .design import CALIBRATION, SIZES, experiment
from .dynamics import TemplateProbeData, probe_data


def load_seeds(size: Setting | str, seed: int, device: torch.device, cache_dir=None,
               n_seeds: int | None = None) -> dict[int, ZooEntry]:
    """Train or load the study's model for every seed: {seed: zoo entry}."""
    zoo = Zoo(cache_dir)
    return {s: zoo.get_or_train(experiment(size, s), device=device, progress=False, log=None)
            for s in judged_seeds(SIZES, CALIBRATION, size, seed, n_seeds)}


@torch.no_grad()
def measure_seed(runs: Mapping[str, Any], data: TemplateProbeData) -> dict[str, float]:
    """One seed's numbers: ``runs = {"model": entry or model}``, ``data`` = ``probe_data``."""
    model = getattr(runs["model"], "model", runs["model"])
    test = data.sets["test"].to(next(model.parameters()).device)
    metrics = evaluate(model, data.task, test)
    return numbers({"acc": metrics["acc"], "chance": chance_levels(data.task, test)["acc"]})


def untrained_numbers(size: Setting | str, seed: int) -> dict[str, float]:
    """The null world: the study's model at ``size``'s settings, untrained, measured by
    ``measure_seed`` (every claim must fail it; tests/test_claims_null.py runs it)."""
    exp = experiment(size, seed)
    return measure_seed({"model": build_model(exp.model, "cpu").eval()},
                        probe_data(exp.task, size, seed))


def findings(per_seed, card, size: Setting | str):
    """"What this run found", computed from the scorecard (add the study's own sentences)."""
    return Findings([scorecard_sentence(card), misses(card)], size=size)
