"""Training layer: the one loop (stacked seeds are a mode of it), checkpoints and the zoo.

``TrainConfig`` -> ``train(model, task, cfg)`` / ``train_stacked(models, task, cfgs)``;
``Experiment`` (task + model + train, ``experiment``) -> ``preflight`` (the whole input checked
first) -> ``Zoo.get_or_train`` (the only writer of models). ``zoo_stats()``: what this process
trained and loaded.
"""

from .config import OPTIMIZERS, SCHEDULES, TrainConfig
from .divergence import TrainingDiverged
from .experiment import Experiment, Named, seedless_key
from .locks import LockTimeout
from .loop import (Callback, TrainResult, apply_freeze, evaluate, latest_checkpoint, lr_factor,
                   save_training_checkpoint, train, train_stacked)
from .preflight import Plan, memory_limit, preflight
from .stats import add_zoo_stats, reset_zoo_stats, zoo_stats
from .zoo import Zoo, ZooEntry, default_cache_dir, stacking_pays

__all__ = ["OPTIMIZERS", "SCHEDULES", "Callback", "Experiment", "LockTimeout", "Named", "Plan",
           "TrainConfig", "TrainResult", "TrainingDiverged", "Zoo", "ZooEntry", "add_zoo_stats",
           "apply_freeze", "default_cache_dir", "evaluate", "latest_checkpoint", "lr_factor",
           "memory_limit", "preflight", "reset_zoo_stats", "save_training_checkpoint",
           "seedless_key", "stacking_pays", "train", "train_stacked", "zoo_stats"]
