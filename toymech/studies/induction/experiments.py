"""Study 1's sizes and named experiments: the post's three models and their learned-position twins.

The post (see docs/sources.md, study 1) trains with AdamW, lr 1e-3, weight decay 1.0, batch 256
of fresh sequences, 10,000 steps; ``paper`` is that, ``default`` 2,000 steps, ``smoke`` seconds.
"""

from __future__ import annotations

from typing import Callable

import torch

from ... import tasks
from ...core import check_seed, check_size, seed_for
from ...devices import make_generator, resolve_device
from ...models import ModelConfig
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks
from ...training import Experiment, Named, TrainConfig

# The one place the study's sizes live: training and evaluation per size.
SIZES = {
    "smoke": dict(train=TrainConfig(steps=40, batch_size=64, eval_every=20, eval_size=256),
                  eval_n=256),
    "default": dict(train=TrainConfig(steps=2000, batch_size=256, eval_every=100,
                                      eval_size=1024), eval_n=2048),
    "paper": dict(train=TrainConfig(steps=10_000, batch_size=256, eval_every=250,
                                    eval_size=2048), eval_n=2048),
}

# name -> (n_layers, smeared keys, positions, description)
MODELS = {
    "induction-1l": (1, False, "sinusoidal_qk", "1 layer, sinusoidal Q/K positions"),
    "induction-1l-smeared": (1, True, "sinusoidal_qk", "1 layer, smeared keys, sinusoidal Q/K"),
    "induction-2l": (2, False, "sinusoidal_qk", "2 layers, sinusoidal Q/K positions"),
    "induction-1l-learned": (1, False, "shortformer", "1 layer, learned Q/K positions"),
    "induction-1l-smeared-learned": (1, True, "shortformer",
                                     "1 layer, smeared keys, learned Q/K positions"),
    "induction-2l-learned": (2, False, "shortformer", "2 layers, learned Q/K positions"),
}
MAIN = ("induction-1l", "induction-1l-smeared", "induction-2l")
LEARNED = ("induction-1l-learned", "induction-1l-smeared-learned", "induction-2l-learned")


def experiment(name: str, size: str = "default", seed: int = 0) -> Experiment:
    """One of the study's models (``MODELS``) at ``size``, seeded with ``seed``."""
    n_layers, smear, positions, _ = MODELS[name]
    check_size(size)
    task = tasks.get("repeated_blocks")
    model = ModelConfig(n_layers=n_layers, n_heads=4, d_model=32, d_vocab=task.d_vocab,
                        n_ctx=task.seq_len, positions=positions, smear_keys=smear, seed=seed)
    return Experiment(task, model, SIZES[size]["train"].replace(seed=seed), name)


def _maker(name: str) -> Callable[[str, int], Experiment]:
    return lambda size, seed: experiment(name, size, seed)


EXPERIMENTS = {name: Named(name, spec[3], _maker(name), "induction")
               for name, spec in MODELS.items()}


def validate(size: str, seed: int, device: str) -> torch.device:
    """Check the notebook's parameters (clear ValueErrors) and resolve the device, once."""
    check_size(size)
    check_seed(seed)
    return resolve_device(device)


def eval_sets(task: RepeatedBlocks, size: str, seed: int, device: torch.device
              ) -> dict[str, Batch]:
    """The study's evaluation sets, drawn from the run's ``eval`` stream."""
    return task.eval_sets(SIZES[size]["eval_n"], make_generator(seed_for(seed, "eval"), device))
