"""One training loop for every task.

``train(model, task, cfg)`` knows nothing about the task beyond the Task protocol
(``sample``, ``loss``, ``metrics``). Freezing is declared in ``TrainConfig.freeze`` as
parameter-name patterns; evaluation probes plug in as callbacks; checkpoints hold everything
needed to resume bit-for-bit (on CPU): weights, optimizer, schedule, data-generator state, history.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

import torch
from transformer_lens import HookedTransformer

from . import checkpoints
from .devices import make_generator, resolve_device
from .models import move, parameter_counts
from .tasks.base import Task, check, dataclass_from_dict
from .tasks import from_dict as task_from_dict

OPTIMIZERS = ("adamw", "adam", "sgd")
SCHEDULES = ("constant", "cosine")

# A callback sees the model (in eval mode, under no_grad) at every evaluation step and returns
# numbers to add to that step's history row.
Callback = Callable[[int, HookedTransformer], dict[str, float]]


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
        object.__setattr__(self, "betas", tuple(self.betas))
        object.__setattr__(self, "freeze", tuple(self.freeze))
        object.__setattr__(self, "train_from", tuple(tuple(x) for x in self.train_from))
        for name in ("steps", "batch_size", "eval_every", "eval_size"):
            v = getattr(self, name)
            check(isinstance(v, int) and v >= 1, name, v, "an integer >= 1")
        check(isinstance(self.lr, (int, float)) and self.lr > 0, "lr", self.lr, "a number > 0")
        check(self.weight_decay >= 0, "weight_decay", self.weight_decay, "a number >= 0")
        check(self.optimizer in OPTIMIZERS, "optimizer", self.optimizer, f"one of {OPTIMIZERS}")
        check(self.schedule in SCHEDULES, "schedule", self.schedule, f"one of {SCHEDULES}")
        check(0 <= self.warmup_steps < max(self.steps, 1) or self.warmup_steps == 0,
              "warmup_steps", self.warmup_steps, f"an integer in 0..{self.steps - 1}")
        check(self.grad_clip is None or self.grad_clip > 0, "grad_clip", self.grad_clip,
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
        return checkpoints.jsonable(dataclasses.asdict(self))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "TrainConfig":
        return dataclass_from_dict(cls, d, "train config")

    def replace(self, **changes: Any) -> "TrainConfig":
        return dataclasses.replace(self, **changes)


@dataclass
class TrainResult:
    model: HookedTransformer
    history: list[dict[str, float]]
    trainable: int
    frozen: int
    seconds: float

    @property
    def final(self) -> dict[str, float]:
        return self.history[-1] if self.history else {}


def apply_freeze(model: torch.nn.Module, patterns: Iterable[str]) -> list[str]:
    """Set ``requires_grad=False`` on parameters whose names match any pattern.

    Returns the frozen names; a pattern that matches nothing raises ValueError (a typo would
    otherwise silently train what the user meant to freeze).
    """
    names = [n for n, _ in model.named_parameters()]
    frozen: list[str] = []
    for pattern in patterns:
        hits = fnmatch.filter(names, pattern)
        check(bool(hits), "freeze", pattern,
              f"a pattern matching parameter names, e.g. {', '.join(names[:4])}, ...")
        frozen.extend(hits)
    params = dict(model.named_parameters())
    for n in frozen:
        params[n].requires_grad_(False)
    return sorted(set(frozen))


def _delayed_params(model: torch.nn.Module, train_from) -> list[tuple[torch.nn.Parameter, int]]:
    """Parameters that start training late, each with its first training step."""
    named = dict(model.named_parameters())
    out = []
    for pattern, begin in train_from:
        hits = [n for n in fnmatch.filter(list(named), pattern) if named[n].requires_grad]
        check(bool(hits), "train_from", pattern,
              "a pattern matching trainable parameter names (not frozen ones)")
        out.extend((named[n], begin) for n in hits)
    return out


def _optimizer(params: list[torch.nn.Parameter], cfg: TrainConfig) -> torch.optim.Optimizer:
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(params, lr=cfg.lr, momentum=cfg.momentum,
                               weight_decay=cfg.weight_decay)
    cls = torch.optim.AdamW if cfg.optimizer == "adamw" else torch.optim.Adam
    return cls(params, lr=cfg.lr, betas=cfg.betas, weight_decay=cfg.weight_decay)


def lr_factor(step: int, cfg: TrainConfig) -> float:
    """Linear warm-up over ``warmup_steps``, then constant or cosine decay to 0 at ``steps``."""
    if step < cfg.warmup_steps:
        return (step + 1) / cfg.warmup_steps
    if cfg.schedule == "constant":
        return 1.0
    progress = (step - cfg.warmup_steps) / max(1, cfg.steps - cfg.warmup_steps)
    return 0.5 * (1.0 + math.cos(math.pi * min(1.0, progress)))


@torch.no_grad()
def evaluate(model: HookedTransformer, task: Task, batch) -> dict[str, float]:
    was_training = model.training
    model.eval()
    out = task.metrics(model(batch.tokens), batch)
    model.train(was_training)
    return out


def train(model: HookedTransformer, task: Task, cfg: TrainConfig, *,
          device: str | torch.device = "auto", callbacks: Iterable[Callback] = (),
          checkpoint_dir: str | Path | None = None, resume_from: str | Path | None = None,
          progress: bool = True, log: Callable[[str], None] | None = print) -> TrainResult:
    """Train ``model`` on fresh batches of ``task``; returns the model and its metrics history.

    History rows (every ``eval_every`` steps and at the end): ``step``, ``train_loss`` (mean
    since the previous row), the task's metrics on a fixed held-out batch (``eval_*``), the
    learning rate, and whatever the callbacks return.
    """
    # --- phase 1: device, freezing, optimizer, data generators -------------------------------
    dev = resolve_device(device)
    n_ctx = model.cfg.n_ctx
    check(task.seq_len <= n_ctx, "task.seq_len", task.seq_len,
          f"at most the model's n_ctx={n_ctx}")
    check(task.d_vocab <= model.cfg.d_vocab, "task.d_vocab", task.d_vocab,
          f"at most the model's d_vocab={model.cfg.d_vocab}")
    move(model, dev)
    frozen_names = apply_freeze(model, cfg.freeze)
    trainable, frozen = parameter_counts(model)
    if log:
        log(f"[toymech] {task.name}: {trainable:,} trainable / {frozen:,} frozen parameters"
            f"{' (frozen: ' + ', '.join(frozen_names) + ')' if frozen_names else ''} on {dev}")
    params = [p for p in model.parameters() if p.requires_grad]
    check(bool(params), "freeze", cfg.freeze, "patterns that leave something to train")
    delayed = _delayed_params(model, cfg.train_from)
    opt = _optimizer(params, cfg)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg))
    data_gen = make_generator(cfg.seed, dev)
    # The held-out batch has its own stream so it is identical however training is resumed.
    eval_batch = task.sample(cfg.eval_size, make_generator(cfg.seed + 1_000_003, dev))
    history: list[dict[str, float]] = []
    start = 0

    # --- phase 2: resume ------------------------------------------------------------------
    if resume_from is not None:
        state = checkpoints.load_train_state(Path(resume_from))
        saved = checkpoints.read_meta(Path(resume_from))
        for key, ours in (("model", model.toymech_config.to_dict()), ("train", cfg.to_dict()),
                          ("task", task.to_dict())):
            theirs = saved.get(key, {})
            diff = [k for k in set(ours) | set(theirs)
                    if checkpoints.jsonable(ours.get(k)) != theirs.get(k)]
            if diff:
                k = sorted(diff)[0]
                raise ValueError(f"resume_from={str(resume_from)!r} does not match this run: "
                                 f"{key}.{k} is {theirs.get(k)!r} there, {ours.get(k)!r} here")
        model_state = checkpoints.load_file_state(Path(resume_from))
        checkpoints.load_state_checked(model, {k: v.to(dev) for k, v in model_state.items()},
                                       str(resume_from))
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        data_gen.set_state(state["generator"].to(data_gen.get_state().device))
        history = state["history"]
        start = int(state["step"])

    # --- phase 3: the loop --------------------------------------------------------------
    callbacks = list(callbacks)
    window: list[torch.Tensor] = []  # losses kept on device: no host sync every step
    t0 = time.perf_counter()
    bar = _progress(range(start, cfg.steps), cfg.steps, start, progress, task.name)
    model.train()
    for step in bar:
        batch = task.sample(cfg.batch_size, data_gen)
        loss = task.loss(model(batch.tokens), batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        for param, begin in delayed:
            if step < begin:
                param.grad = None  # skipped by the optimizer: no update, no weight decay
        if cfg.grad_clip is not None:
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
        opt.step()
        sched.step()
        window.append(loss.detach())
        done = step + 1
        if done % cfg.eval_every == 0 or done == cfg.steps:
            row = {"step": done, "train_loss": float(torch.stack(window).mean()),
                   "lr": opt.param_groups[0]["lr"]}
            window.clear()
            row.update({f"eval_{k}": v for k, v in evaluate(model, task, eval_batch).items()})
            if callbacks:
                model.eval()
                with torch.no_grad():
                    for cb in callbacks:
                        row.update(cb(done, model))
                model.train()
            history.append(row)
            if hasattr(bar, "set_postfix"):
                bar.set_postfix(loss=f"{row['eval_loss']:.3f}")
            if checkpoint_dir is not None and cfg.checkpoint_every and (
                    done % cfg.checkpoint_every == 0 or done == cfg.steps):
                save_training_checkpoint(Path(checkpoint_dir) / f"step_{done:07d}", model, task,
                                         cfg, opt, sched, data_gen, history, done)
    model.eval()
    seconds = time.perf_counter() - t0
    if log and history:
        last = history[-1]
        log(f"[toymech] {task.name}: step {last['step']}, eval loss {last['eval_loss']:.4f}, "
            f"{(cfg.steps - start) / max(seconds, 1e-9):.1f} steps/s")
    return TrainResult(model, history, trainable, frozen, seconds)


def save_training_checkpoint(folder: Path, model, task: Task, cfg: TrainConfig, opt, sched,
                             data_gen: torch.Generator, history, step: int) -> Path:
    train_state = {"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                   "generator": data_gen.get_state().cpu(), "history": history, "step": step}
    meta = {"task": task.to_dict(), "train": cfg.to_dict(), "step": step,
            "metrics": history[-1] if history else {}}
    return checkpoints.save_model(folder, model, meta, train_state)


def latest_checkpoint(checkpoint_dir: str | Path) -> Path | None:
    """The newest complete ``step_*`` folder (temporary folders are hidden and skipped)."""
    folders = sorted(Path(checkpoint_dir).glob("step_*"))
    return folders[-1] if folders else None


def _progress(iterable, total: int, initial: int, progress: bool, desc: str):
    if not progress:
        return iterable
    from tqdm.auto import tqdm
    return tqdm(iterable, total=total, initial=initial, desc=desc, mininterval=1.0,
                smoothing=0.1)
