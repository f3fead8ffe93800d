"""Train (or load) and measure: functions that return numbers and tables, never figures."""

from __future__ import annotations

import torch

from ...core import seed_for
from ...devices import make_generator
from ...training import Zoo, evaluate
from .design import SIZES, experiment


def run(size: str, seed: int, device: torch.device, cache_dir=None) -> dict[str, float]:
    """Train or load the study's model; its metrics on evaluation data of the seed's stream."""
    exp = experiment(size, seed)
    entry = Zoo(cache_dir).get_or_train(exp, device=device, progress=False, log=None)
    batch = exp.task.sample(SIZES[size]["eval_n"], make_generator(seed_for(seed, "eval"), device))
    return evaluate(entry.model, exp.task, batch)
