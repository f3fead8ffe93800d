"""``TrainConfig``: optimisation settings of one run (frozen, validated, JSON round trip)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from ..core import check, dataclass_from_dict, jsonable


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("constant", "cosine")

@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings. Defaults: the induction post (AdamW 1e-3, wd 1.0, batch 256)."""

    steps: int = 10_000
    batch_size: int = 256
    lr: float = 1e-3
    weight_decay: float = 1.0
    optimizer: str = "adamw"
    betas: tuple[float, float] = (0.9, 0.999)
    momentum: float = 0.9
    schedule: str = "constant"
    warmup_steps: int = 0
    grad_clip: float | None = None
    freeze: tuple[str, ...] = ()
    # (pattern, step): matching parameters stay fixed until ``step``, then train.
    train_from: tuple[tuple[str, int], ...] = ()
    seed: int = 0
    eval_every: int = 250
    eval_size: int = 1024
    checkpoint_every: int | None = None

    def __post_init__(self) -> None:
        for name in ("betas", "freeze", "train_from"):
            check(isinstance(getattr(self, name), (list, tuple)), name, getattr(self, name),
                  "a list or tuple")
        object.__setattr__(self, "betas", tuple(self.betas))
        object.__setattr__(self, "freeze", tuple(self.freeze))
        object.__setattr__(self, "train_from", tuple(tuple(x) for x in self.train_from))
        for name, most in (("steps", 10**8), ("batch_size", 10**6), ("eval_every", 10**8),
                           ("eval_size", 10**6)):
            v = getattr(self, name)
            check(_is_int(v) and 1 <= v <= most, name, v, f"an integer in 1..{most:,}")
        check(_is_num(self.lr) and 0 < self.lr <= 100, "lr", self.lr, "a finite number in (0, 100]")
        check(_is_num(self.weight_decay) and self.weight_decay >= 0, "weight_decay",
              self.weight_decay, "a finite number >= 0")
        check(_is_num(self.momentum) and 0 <= self.momentum < 1, "momentum", self.momentum,
              "a number in [0, 1)")
        check(len(self.betas) == 2 and all(_is_num(b) and 0 <= b < 1 for b in self.betas),
              "betas", self.betas, "two numbers in [0, 1)")
        check(_is_int(self.seed) and 0 <= self.seed < 2**62, "seed", self.seed,
              "an integer in 0..2**62")
        check(self.optimizer in OPTIMIZERS, "optimizer", self.optimizer, f"one of {OPTIMIZERS}")
        check(self.schedule in SCHEDULES, "schedule", self.schedule, f"one of {SCHEDULES}")
        check(0 <= self.warmup_steps < max(self.steps, 1) or self.warmup_steps == 0,
              "warmup_steps", self.warmup_steps, f"an integer in 0..{self.steps - 1}")
        check(self.grad_clip is None or (_is_num(self.grad_clip) and self.grad_clip > 0), "grad_clip", self.grad_clip,
              "None or a number > 0")
        check(all(isinstance(p, str) and p for p in self.freeze), "freeze", self.freeze,
              "parameter-name patterns (fnmatch), e.g. 'blocks.*.attn.W_V'")
        check(all(len(x) == 2 and isinstance(x[0], str) and isinstance(x[1], int) and x[1] >= 0
                  for x in self.train_from), "train_from", self.train_from,
              "(pattern, step) pairs, e.g. (('blocks.0.attn.W_K', 500),)")
        if self.checkpoint_every is not None:
            # Checkpoints sit on evaluation steps so a resumed run's history is identical.
            check(self.checkpoint_every >= 1 and self.checkpoint_every % self.eval_every == 0,
                  "checkpoint_every", self.checkpoint_every,
                  f"None or a multiple of eval_every={self.eval_every}")

    def to_dict(self) -> dict[str, Any]:
        return jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        return dataclass_from_dict(cls, d, "train config")

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)
