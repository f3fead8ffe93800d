"""Sizes (the one place they live) and named experiments of the study."""

from __future__ import annotations

import torch

from ... import tasks
from ...core import check_size
from ...models import ModelConfig
from ..params import validate_run
from ...training import Experiment, Named, TrainConfig

SIZES = {
    "smoke": dict(steps=20, batch=32, eval_n=128),
    "default": dict(steps=500, batch=64, eval_n=1024),
    "paper": dict(steps=5000, batch=256, eval_n=4096),
}


def experiment(size: str = "default", seed: int = 0) -> Experiment:
    s = SIZES[check_size(size)]
    task = tasks.get("parentheses")
    model = ModelConfig(n_layers=2, n_heads=4, d_model=32, d_vocab=task.d_vocab,
                        n_ctx=task.seq_len, attn_only=False, normalization="LN",
                        positions="standard", seed=seed)
    train = TrainConfig(steps=s["steps"], batch_size=s["batch"], lr=1e-3, weight_decay=0.01,
                        eval_every=max(1, s["steps"] // 5), eval_size=256, seed=seed)
    return Experiment(task, model, train, "template-parentheses")


# Experiment names are global: prefix them with the study's name.
EXPERIMENTS = {"template-parentheses": Named("template-parentheses", "template study's model",
                                             experiment, "_template")}


def validate(size: str, seed: int, device: str, cache_dir: str | None = None,
             threads: int | None = None) -> torch.device:
    """Check the notebook's parameters (one clear ValueError each); resolve the device once."""
    return validate_run(size, seed, device, cache_dir, threads)
