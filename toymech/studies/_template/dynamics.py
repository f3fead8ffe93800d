"""Through training: the study's numbers at every weight snapshot of a run."""

from __future__ import annotations

import torch

from ...training import evaluate
from ..trajectory import flat_patterns, through_training_for
from .design import eval_sets

DYNAMICS_METRICS = ("test_acc", "test_loss")


def probe_data(task, size: str, seed: int, device: str | torch.device = "cpu") -> dict:
    """The fixed data every snapshot is measured on (the run's ``eval`` stream)."""
    sets = eval_sets(task, size, seed, device)
    return {"task": task, "sets": sets, "example": sets["test"].tokens[0]}


@torch.no_grad()
def dynamics_metrics(model, data) -> dict[str, float]:
    """Test accuracy and loss of one snapshot."""
    m = evaluate(model, data["task"], data["sets"]["test"].to(next(model.parameters()).device))
    return {"test_acc": m["acc"], "test_loss": m["loss"]}


def dynamics_patterns(model, data):
    return flat_patterns(model, data["task"], data["example"])


through_training = through_training_for(dynamics_metrics, dynamics_patterns, DYNAMICS_METRICS)
