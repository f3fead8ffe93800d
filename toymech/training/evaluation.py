"""What the training loop logs at an evaluation step, and its stop rule.

The logged evaluation (``LoggedEval``) of a run is fixed at its start, from the run's own
``train_eval`` stream (so it is the same however the run is resumed):

* a task with a held-out split (``Task.held_out`` returns a Batch: modular addition's held-out
  pairs, the held-out sequences of needle, decimal addition and parentheses): ``eval_*`` are the
  task's metrics on held-out examples, which training never draws, and ``train_*`` (``train_acc``,
  ``train_seq_acc``, ...) the same metrics on a fixed batch of training examples, so that
  memorising without generalising shows in the log (``train_loss`` stays the running mean of the
  optimised loss since the previous row);
* a task without one (``held_out`` is None: every training batch is fresh): ``eval_*`` on a fixed
  batch drawn like the training data, and no ``train_*`` metrics.

``LoggedEval.held_out`` says which of the two a run logged.

The stop rule (``TrainConfig.stop_metric`` / ``stop_value``): a run stops at the first
evaluation step whose ``stop_metric`` passes ``stop_value``: a loss (a name ending in ``loss``)
by falling to it or below, any other metric by reaching it or above. The row of that step
records ``stop_step``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import torch

from ..core import seed_for
from ..devices import make_generator
from ..tasks.base import Batch, Task
from .config import TrainConfig


@torch.no_grad()
def evaluate(model: torch.nn.Module, task: Task, batch: Batch,
             forward: Callable[[torch.Tensor], torch.Tensor] | None = None) -> dict[str, float]:
    """The task's metrics (``task.metrics``) of ``model`` on ``batch``, in eval mode;
    ``forward``: the logits from the model's own parameters by another route (the training
    step's ``fast_forward``), else ``model`` itself."""
    was_training = model.training
    model.eval()
    out = task.metrics((forward or model)(batch.tokens), batch)
    model.train(was_training)
    return out


@dataclass
class LoggedEval:
    """The batches a run logs its metrics on (see the module docstring)."""

    eval_batch: Batch
    train_batch: Batch | None = None

    @property
    def held_out(self) -> bool:
        """True when ``eval_*`` are measured on held-out examples."""
        return self.train_batch is not None

    @classmethod
    def for_run(cls, task: Task, cfg: TrainConfig, device: torch.device) -> LoggedEval:
        gen = make_generator(seed_for(cfg.seed, "train_eval"), device)
        held = task.held_out(cfg.eval_size, gen)
        if held is None:  # the draw that the loop has always made, so old histories still hold
            return cls(task.sample(cfg.eval_size, gen))
        return cls(held, task.sample(cfg.eval_size, gen))

    def row(self, model: torch.nn.Module, task: Task,
            forward: Callable[[torch.Tensor], torch.Tensor] | None = None) -> dict[str, float]:
        """``eval_*`` (and ``train_*`` where the task has a held-out split) of ``model``
        (its logits by ``forward`` where given: see ``evaluate``)."""
        out = {f"eval_{k}": v for k, v in evaluate(model, task, self.eval_batch, forward).items()}
        if self.train_batch is not None:
            out.update({f"train_{k}": v for k, v in
                        evaluate(model, task, self.train_batch, forward).items()
                        if k != "loss"})  # train_loss is the running mean of the optimised loss
        return out


def passes(row: Mapping[str, float], cfg: TrainConfig) -> bool:
    """Whether ``row`` meets the stop rule of ``cfg`` (False without one).

    A ``stop_metric`` missing from the row raises ValueError naming the keys it has."""
    if cfg.stop_metric is None:
        return False
    if cfg.stop_metric not in row:
        keys = ", ".join(k for k in row if k not in ("step", "lr"))
        raise ValueError(f"stop_metric={cfg.stop_metric!r} is not allowed: a metric of the "
                         f"logged history, one of {keys}")
    value = row[cfg.stop_metric]
    if cfg.stop_metric.endswith("loss"):
        return value <= cfg.stop_value
    return value >= cfg.stop_value
