"""Training layer: the one loop (stacked seeds are a mode of it), its config, its checkpoints
and its evaluation.

``TrainConfig`` -> ``train(model, task, cfg)`` / ``train_stacked(models, task, cfgs)``;
``Experiment`` (task + model + train, ``experiment``) -> ``preflight`` (the whole input checked
first). The store of trained models is the layer above: ``toymech.zoo`` (``Zoo.get_or_train``,
the only writer of models). ``checkpoints`` (with ``atomic`` and ``reading``) is the folder
format both the loop's resume checkpoints and the zoo's entries use, so it lives here, below
the zoo.
"""

from .config import OPTIMIZERS, SCHEDULES, TrainConfig
from .divergence import TrainingDiverged
from .experiment import Experiment, Named, seedless_key
from .loop import (
                   Callback,
                   TrainResult,
                   apply_freeze,
                   evaluate,
                   latest_checkpoint,
                   lr_factor,
                   save_training_checkpoint,
                   train,
                   train_stacked,
)
from .preflight import MemoryPlan, memory_limit, preflight

__all__ = ["OPTIMIZERS", "SCHEDULES", "Callback", "Experiment", "Named", "MemoryPlan", "TrainConfig",
           "TrainResult", "TrainingDiverged", "apply_freeze", "evaluate", "latest_checkpoint",
           "lr_factor", "memory_limit", "preflight", "save_training_checkpoint", "seedless_key",
           "train", "train_stacked"]
