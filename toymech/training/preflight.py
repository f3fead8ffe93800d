"""Preflight: check a whole experiment before any work, so that a run (or a sweep's trial)
never fails on its configuration after minutes of training, and a refused one writes nothing.

``preflight(exp, device)`` checks, in order:

1. the task fits the model (its sequences into ``n_ctx``, its tokens into ``d_vocab``) and every
   ``train_from`` step falls inside the run (a matrix released at or after ``steps`` never trains);
2. memory, from the config alone (``models.config.parameter_estimate`` / ``activation_bytes``):
   weights, gradients and optimizer state (4 bytes each: 1 + 1 + 2 for Adam(W), 1 + 1 + 1 for
   SGD with momentum), buffers, one training step's activations or the evaluation batch's
   (whichever is larger) and the parameter snapshots, against ``memory_limit(device)``: 80 % of
   the machine's memory (CPU, MPS) or 90 % of the GPU's, or ``$TOYMECH_MEMORY_LIMIT_GB``;
3. only then the model is built (on ``device``), the ``freeze`` and ``train_from`` patterns are
   resolved against its parameter names (each must match; something must stay trainable), and a
   forward pass and loss on a batch of 2 run, so a configuration that cannot run (e.g. rotary
   positions with an odd ``d_head``) is refused here, in one line; under the run's precision
   (bf16 where the device lacks it is refused), and its stop metric must be one the run logs.

Every refusal is a ValueError in one line naming the field, the value and what is allowed.
"""

from __future__ import annotations

import fnmatch
import os
import re
from dataclasses import dataclass, field
from typing import Any

import torch

from ..core import check
from ..devices import resolve_device
from ..models import BaselineConfig, build_model
from ..models.config import FLOAT_BYTES, activation_bytes, buffer_bytes, parameter_estimate
from .experiment import Experiment
from .precision import autocast

GB = 1e9


@dataclass
class MemoryPlan:
    """What the preflight found: the estimate (bytes per part), the limit, and the model it
    built (reused by the zoo to train, so nothing is built twice)."""

    parameters: int
    memory: dict[str, int]
    limit: int
    frozen: list[str] = field(default_factory=list)
    model: torch.nn.Module | None = field(default=None, repr=False)

    @property
    def total(self) -> int:
        """The estimated bytes in all (weights, optimizer state, activations)."""
        return sum(self.memory.values())


def memory_limit(device: torch.device | str = "cpu") -> tuple[int, str]:
    """(bytes, how it was chosen) that one run on ``device`` may use:
    ``$TOYMECH_MEMORY_LIMIT_GB``, else 90 % of the GPU's memory on CUDA, else 80 % of this
    machine's memory."""
    raw = os.environ.get("TOYMECH_MEMORY_LIMIT_GB", "")
    if raw:
        check(re.fullmatch(r"[0-9]{1,7}(\.[0-9]+)?", raw) is not None and float(raw) > 0,
              "TOYMECH_MEMORY_LIMIT_GB", raw, "a positive number of gigabytes, e.g. 16")
        return int(float(raw) * GB), "TOYMECH_MEMORY_LIMIT_GB"
    dev = torch.device(device)
    if dev.type == "cuda" and torch.cuda.is_available():
        total = torch.cuda.get_device_properties(dev.index or 0).total_memory
        return int(0.9 * total), (f"90 % of the GPU's {total / GB:.0f} GB; "
                                  "TOYMECH_MEMORY_LIMIT_GB sets it")
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        total = 16 * 2**30  # not reported (Windows): assume a 16 GiB machine
    return int(0.8 * total), (f"80 % of this machine's {total / GB:.0f} GB; "
                              "TOYMECH_MEMORY_LIMIT_GB sets it")


def estimate(exp: Experiment) -> dict[str, int]:
    """Bytes per part of a run of ``exp`` (see the module docstring)."""
    cfg, train, seq = exp.model, exp.train, exp.task.seq_len
    params = parameter_estimate(cfg)
    states = 3 if train.optimizer == "sgd" else 4  # weights, grads, optimizer state(s)
    return {"weights, gradients and optimizer state": FLOAT_BYTES * states * params,
            "buffers": buffer_bytes(cfg),
            "activations": max(activation_bytes(cfg, train.batch_size, seq, grad=True),
                               activation_bytes(cfg, train.eval_size, seq, grad=False)),
            "snapshots": FLOAT_BYTES * params * len(train.snapshot_steps)}


def _fits(exp: Experiment) -> None:
    task, cfg, train = exp.task, exp.model, exp.train
    check(task.seq_len <= cfg.n_ctx, "model.n_ctx", cfg.n_ctx,
          f"at least the task's sequence length {task.seq_len} (task {task.name})")
    check(task.d_vocab <= cfg.d_vocab, "model.d_vocab", cfg.d_vocab,
          f"at least the task's vocabulary size {task.d_vocab} (task {task.name})")
    for i, (pattern, step) in enumerate(train.train_from):
        check(step < train.steps, f"train.train_from[{i}] step", step,
              f"a step below train.steps={train.steps} ({pattern!r} would never train)")


def _memory(exp: Experiment, dev: torch.device) -> tuple[dict[str, int], int]:
    parts, (limit, how) = estimate(exp), memory_limit(dev)
    total = sum(parts.values())
    if total <= limit:
        return parts, limit
    worst = max(parts, key=parts.get)
    cfg, train = exp.model, exp.train
    knob = {"activations": f"train.batch_size={train.batch_size} (eval_size={train.eval_size}, "
                           f"sequence length {exp.task.seq_len})",
            "snapshots": f"train.snapshots={train.snapshots!r}",
            "buffers": f"model.n_ctx={cfg.n_ctx}"}.get(
        worst, f"model (d_model={cfg.d_model}, n_layers={cfg.n_layers}, d_vocab={cfg.d_vocab}: "
               f"about {parameter_estimate(cfg):.3g} parameters)")
    raise ValueError(f"{knob} is not allowed: the run would need about {total / GB:.3g} GB "
                     f"({worst}: {parts[worst] / GB:.3g} GB), more than the memory limit of "
                     f"{limit / GB:.3g} GB ({how})")


def _patterns(exp: Experiment, model: torch.nn.Module) -> list[str]:
    """The parameter names ``freeze`` freezes, checked as the loop would check them."""
    names = [n for n, _ in model.named_parameters()]
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    frozen: set[str] = set()
    for i, pattern in enumerate(exp.train.freeze):
        hits = fnmatch.filter(names, pattern)
        check(bool(hits), f"train.freeze[{i}]", pattern,
              f"a pattern matching parameter names, e.g. {', '.join(names[:4])}, ...")
        frozen.update(hits)
    check(bool(trainable - frozen), "train.freeze", list(exp.train.freeze),
          "patterns that leave something to train")
    for i, (pattern, _) in enumerate(exp.train.train_from):
        check(bool(set(fnmatch.filter(names, pattern)) & (trainable - frozen)),
              f"train.train_from[{i}]", pattern,
              "a pattern matching trainable parameter names (not frozen ones)")
    return sorted(frozen)


def preflight(exp: Experiment, device: torch.device | str = "cpu", *,
              keep_model: bool = True, extra_metrics: bool = False) -> MemoryPlan:
    """Check ``exp`` whole for ``device`` (see the module docstring); ValueError in one line
    when it cannot run; returns the ``MemoryPlan``.
    ``keep_model``: return the model it built (initialised as training would build it);
    ``extra_metrics``: the run's callbacks add to its history (its stop metric may be theirs)."""
    check(isinstance(exp, Experiment), "experiment", exp, "an Experiment (toymech.experiments.get)")
    dev = resolve_device(device)
    _fits(exp)
    parts, limit = _memory(exp, dev)
    label = exp.name or exp.task.name
    try:
        model = build_model(exp.model, dev)
    except (RuntimeError, TypeError, ValueError, AssertionError) as exc:
        raise ValueError(f"model={_model_text(exp)} is not allowed: it cannot be built "
                         f"({type(exc).__name__}: {_line(exc)})") from None
    frozen = _patterns(exp, model)
    batch = exp.task.sample(2, torch.Generator(device=dev).manual_seed(0))
    try:
        with torch.no_grad(), autocast(exp.train.precision, dev):  # bf16 where the device has it
            logits = model(batch.tokens)
            loss = exp.task.loss(logits, batch)
        check(loss.numel() == 1, "task.loss", tuple(loss.shape), "a scalar loss")
    except (RuntimeError, TypeError, IndexError, AssertionError) as exc:
        raise ValueError(f"model={_model_text(exp)} is not allowed: experiment {label!r} fails "
                         f"on a batch of 2 ({type(exc).__name__}: {_line(exc)})") from None
    if exp.train.stop_metric is not None and not extra_metrics:
        logged = logged_metrics(exp.task, logits.float(), batch, dev)
        check(exp.train.stop_metric in logged, "train.stop_metric", exp.train.stop_metric,
              f"a metric the run logs: one of {', '.join(logged)}")
    return MemoryPlan(parameters=sum(p.numel() for p in model.parameters()), memory=parts,
                limit=limit, frozen=frozen, model=model if keep_model else None)


def logged_metrics(task, logits: torch.Tensor, batch, dev: torch.device) -> list[str]:
    """The numbers a run of ``task`` logs at an evaluation step (``evaluation.LoggedEval``):
    the running train loss, the task's metrics as ``eval_*``, and as ``train_*`` too where the
    task holds out a split."""
    metrics = list(task.metrics(logits, batch))
    held_out = task.held_out(2, torch.Generator(device=dev).manual_seed(0)) is not None
    return (["train_loss"] + [f"eval_{k}" for k in metrics]
            + ([f"train_{k}" for k in metrics if k != "loss"] if held_out else []) + ["cpu_seconds"])


def _model_text(exp: Experiment) -> str:
    cfg = exp.model
    if isinstance(cfg, BaselineConfig):
        return f"{{kind: {cfg.kind}, d_model: {cfg.d_model}}}"
    return (f"{{d_model: {cfg.d_model}, n_heads: {cfg.n_heads}, d_head: {cfg.d_head}, "
            f"positions: {cfg.positions}}}")


def _line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 200 else text[:197] + "..."


def check_callbacks(callbacks: Any) -> list:
    """``callbacks``: an iterable of callables ``cb(step, model) -> dict`` (checked before the
    run, not at its first evaluation step)."""
    try:
        items = list(callbacks)
    except TypeError:
        raise ValueError(f"callbacks={callbacks!r} is not allowed: a list of callables "
                         "cb(step, model) -> dict of numbers") from None
    for i, cb in enumerate(items):
        check(callable(cb), f"callbacks[{i}]", cb, "a callable cb(step, model) -> dict of numbers")
    return items
