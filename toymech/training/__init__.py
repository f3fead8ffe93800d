"""Training layer: the one loop (stacked seeds are a mode of it), checkpoints and the zoo.

``TrainConfig`` -> ``train(model, task, cfg)`` / ``train_stacked(models, task, cfgs)``;
``Experiment`` (task + model + train) -> ``Zoo.get_or_train`` (the only writer of models).
"""

from .config import OPTIMIZERS, SCHEDULES, TrainConfig
from .loop import (Callback, TrainResult, apply_freeze, evaluate, latest_checkpoint, lr_factor,
                   save_training_checkpoint, train, train_stacked)
from .zoo import Experiment, Named, Zoo, ZooEntry, default_cache_dir, stacking_pays

__all__ = ["OPTIMIZERS", "SCHEDULES", "Callback", "Experiment", "Named", "TrainConfig", "TrainResult",
           "Zoo", "ZooEntry", "apply_freeze", "default_cache_dir", "evaluate",
           "latest_checkpoint", "lr_factor", "save_training_checkpoint", "stacking_pays", "train",
           "train_stacked"]
