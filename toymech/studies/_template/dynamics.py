"""Through training: the study's numbers at every weight snapshot of a run."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from toymech.core import Setting
from toymech.studies.protocol import ProbeData
from toymech.tasks import Batch
from toymech.training import evaluate

from .design import eval_sets

# Whose transition steps are compared through training (the study's ``dynamics_names``).
DYNAMICS_METRICS = ("test_acc", "test_loss")


@dataclass(frozen=True)
class TemplateProbeData(ProbeData):
    """What every snapshot is measured on: the run's evaluation ``sets`` and one ``example``
    sequence [seq] (the attention shown through training)."""

    sets: dict[str, Batch]
    example: torch.Tensor


def probe_data(task, size: Setting | str, seed: int, device: str | torch.device = "cpu"
               ) -> TemplateProbeData:
    """The fixed data every snapshot is measured on (the run's ``eval`` stream)."""
    sets = eval_sets(task, size, seed, device)
    return TemplateProbeData(task=task, sets=sets, example=sets["test"].tokens[0])


@torch.no_grad()
def dynamics_metrics(model, data: TemplateProbeData) -> dict[str, float]:
    """Test accuracy and loss of one snapshot."""
    m = evaluate(model, data.task, data.sets["test"].to(next(model.parameters()).device))
    return {"test_acc": m["acc"], "test_loss": m["loss"]}
