"""``TrainConfig``: optimisation settings of one run (frozen, validated, JSON round trip)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..core import (
    check,
    check_float,
    check_int,
    check_seed,
    check_str,
    dataclass_from_dict,
    is_int,
    jsonable,
    set_checked,
)

OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("constant", "cosine")
MAX_SNAPSHOTS = 10_000


def log_spaced_steps(total: int, n: int) -> tuple[int, ...]:
    """``n`` distinct steps in ``0..total``, log-spaced: always 0 (before any update) and
    ``total``; in between ``s_i ~ total ** (i / (n - 2))`` for i = 0..n-2 (so 1 and ``total``),
    rounded, and pushed up to the previous step + 1 where rounding collides, so early steps are
    dense and there are exactly ``min(n, total + 1)`` of them. ``n = 0`` gives ``()``."""
    total = check_int("total", total, 0, 10**9)
    n = check_int("n", n, 0, None)
    check(n != 1, "n", n, "0 or at least 2 (step 0 and the last step are always included)")
    if n == 0:
        return ()
    if n >= total + 1:
        return tuple(range(total + 1))
    steps, inner = [0], n - 1  # steps after 0: from 1 to total, geometrically
    for i in range(inner):
        target = round(total ** (i / (inner - 1))) if inner > 1 else total
        # at least one past the previous step, and room left for the steps still to come
        steps.append(min(max(target, steps[-1] + 1), total - (inner - 1 - i)))
    return tuple(steps)


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
    # Parameter snapshots through training: 0 = none, n = n log-spaced steps (log_spaced_steps),
    # or the explicit steps (0 = the initial weights, s = after s optimizer updates).
    snapshots: int | tuple[int, ...] = 0
    # Stop rule: stop at the first evaluation step where ``stop_metric`` (a history key, e.g.
    # "eval_acc") passes ``stop_value`` (a loss by falling to it, anything else by reaching it;
    # see ``toymech.training.evaluation``). None: run all ``steps``.
    stop_metric: str | None = None
    stop_value: float | None = None
    # "fp32", or "bf16": the training step's forward under bf16 autocast (fp32 master weights,
    # loss and optimizer; ``training.precision``), refused where the hardware lacks bf16.
    precision: str = "fp32"

    def __post_init__(self) -> None:
        for name in ("betas", "freeze", "train_from"):
            check(isinstance(getattr(self, name), (list, tuple)), name, getattr(self, name),
                  "a list or tuple")
        for name, most in (("steps", 10**8), ("batch_size", 10**6), ("eval_every", 10**8),
                           ("eval_size", 10**6)):
            set_checked(self, **{name: check_int(name, getattr(self, name), 1, most)})
        set_checked(self,
                    lr=check_float("lr", self.lr, 0.0, 100.0, lo_open=True),
                    weight_decay=check_float("weight_decay", self.weight_decay, 0.0, 1e4),
                    momentum=check_float("momentum", self.momentum, 0.0, 1.0, hi_open=True),
                    seed=check_seed(self.seed),
                    optimizer=check_str("optimizer", self.optimizer, OPTIMIZERS),
                    schedule=check_str("schedule", self.schedule, SCHEDULES),
                    warmup_steps=check_int("warmup_steps", self.warmup_steps, 0,
                                           max(self.steps - 1, 0)))
        check(len(self.betas) == 2, "betas", self.betas, "two numbers in [0, 1)")
        set_checked(self, betas=tuple(check_float(f"betas[{i}]", b, 0.0, 1.0, hi_open=True)
                                      for i, b in enumerate(self.betas)))
        if self.grad_clip is not None:
            set_checked(self, grad_clip=check_float("grad_clip", self.grad_clip, 0.0, 1e6,
                                                    lo_open=True))
        for i, p in enumerate(self.freeze):
            check(isinstance(p, str) and p != "", f"freeze[{i}]", p,
                  "a parameter-name pattern (fnmatch), e.g. 'blocks.*.attn.W_V'")
        set_checked(self, freeze=tuple(self.freeze))
        pairs = []
        for i, x in enumerate(self.train_from):
            check(isinstance(x, (list, tuple)) and len(x) == 2 and isinstance(x[0], str)
                  and x[0] != "", f"train_from[{i}]", x,
                  "a (pattern, step) pair, e.g. ('blocks.0.attn.W_K', 500)")
            pairs.append((x[0], check_int(f"train_from[{i}] step", x[1], 0, 10**8)))
        set_checked(self, train_from=tuple(pairs))
        if self.checkpoint_every is not None:
            # Checkpoints sit on evaluation steps so a resumed run's history is identical.
            every = check_int("checkpoint_every", self.checkpoint_every, 1, 10**8)
            check(every % self.eval_every == 0, "checkpoint_every", self.checkpoint_every,
                  f"None or a multiple of eval_every={self.eval_every}")
            set_checked(self, checkpoint_every=every)
        set_checked(self, snapshots=self._checked_snapshots())
        self._check_stop()

    def _check_stop(self) -> None:
        set_checked(self, precision=check_str("precision", self.precision, ("fp32", "bf16")))
        check((self.stop_metric is None) == (self.stop_value is None), "stop_value",
              self.stop_value, f"a number when stop_metric is set (stop_metric={self.stop_metric!r})"
              " and None when it is not: both or neither")
        if self.stop_metric is None:
            return
        check(isinstance(self.stop_metric, str) and self.stop_metric not in ("", "step", "lr"),
              "stop_metric", self.stop_metric,
              "None or the name of a logged metric, e.g. 'eval_acc', 'eval_seq_acc', 'eval_loss'")
        value = check_float("stop_value", self.stop_value)
        # a value the metric can never reach would never stop the run
        if "acc" in self.stop_metric:
            check(0 <= value <= 1, "stop_value", value, f"a number in [0, 1] for the accuracy "
                  f"stop_metric={self.stop_metric!r} (accuracies are fractions)")
        elif self.stop_metric.endswith("loss"):
            check(value >= 0, "stop_value", value, f"a number >= 0 for the loss "
                  f"stop_metric={self.stop_metric!r} (losses are never negative)")
        set_checked(self, stop_value=value)

    def _checked_snapshots(self) -> int | tuple[int, ...]:
        s = self.snapshots
        allowed = (f"0 (none), an integer in 2..{MAX_SNAPSHOTS:,} (that many log-spaced steps) "
                   f"or a list of steps in 0..{self.steps:,}")
        if isinstance(s, (list, tuple)):
            check(len(s) > 0 and all(is_int(x) and 0 <= int(x) <= self.steps for x in s),
                  "snapshots", s, allowed)
            return tuple(sorted({int(x) for x in s}))
        check(is_int(s) and (int(s) == 0 or 2 <= int(s) <= MAX_SNAPSHOTS), "snapshots", s, allowed)
        return int(s)

    @property
    def snapshot_steps(self) -> tuple[int, ...]:
        """The steps at which the loop records parameters (sorted; empty when off)."""
        if isinstance(self.snapshots, tuple):
            return self.snapshots
        return log_spaced_steps(self.steps, self.snapshots)

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON-ready data (``from_dict`` reads it back)."""
        d = jsonable(dataclasses.asdict(self))
        if self.snapshots == 0:
            del d["snapshots"]  # so the zoo keys of runs without snapshots stay what they were
        if self.stop_metric is None:  # the same for runs without a stop rule
            del d["stop_metric"], d["stop_value"]
        if self.precision == "fp32":  # and for fp32 runs
            del d["precision"]
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> TrainConfig:
        """The config ``to_dict`` wrote (``d``), checked like a new one."""
        return dataclass_from_dict(cls, d, "train config")

    def replace(self, **changes: Any) -> TrainConfig:
        """A copy with ``changes`` (field=value), checked like a new config."""
        return dataclasses.replace(self, **changes)
