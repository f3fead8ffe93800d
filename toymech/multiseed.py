"""Train several seeds of one configuration at once: parameters stacked along a new leading
axis and the model evaluated with ``torch.func.functional_call`` under ``torch.vmap``.

Each seed is exactly the run ``toymech.training.train`` would make (same initial weights from
``build_model``, same data stream ``make_generator(seed)``, same held-out batch, AdamW applied
elementwise, gradient norm clipped PER SEED, same schedule), up to float rounding; the trained
models are stored in the zoo under the same keys, so ``Zoo.get_or_train`` later loads them.

Whether this is faster depends on the hardware: on a GPU many small models underuse the device
and stacking pays; on one CPU thread small models are already compute-bound (see
``benchmarks/bench_multiseed.py``, which prints the ratio).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Sequence

import torch
from torch.func import functional_call, stack_module_state

from . import checkpoints
from .devices import make_generator, resolve_device
from .models import build_model, parameter_counts
from .tasks.base import Batch, check
from .training import apply_freeze, evaluate, lr_factor
from .zoo import Experiment, Zoo, ZooEntry


def _same_but_seed(exps: Sequence[Experiment]) -> None:
    check(len(exps) >= 1, "exps", len(exps), "at least one experiment")
    ref = exps[0]
    for e in exps[1:]:
        same = (e.task.to_dict() == ref.task.to_dict()
                and dataclasses.replace(e.model, seed=0) == dataclasses.replace(ref.model, seed=0)
                and e.train.replace(seed=0) == ref.train.replace(seed=0))
        check(same, "exps", e.name, "experiments that differ only in their seeds")
    check(ref.train.optimizer == "adamw", "optimizer", ref.train.optimizer, "'adamw' here")


def _stack_batches(batches: list[Batch]) -> tuple[torch.Tensor, list[Batch]]:
    return torch.stack([b.tokens for b in batches]), batches


def train_seeds(exps: Sequence[Experiment], device: str | torch.device = "auto"
                ) -> list[tuple[torch.nn.Module, list[dict[str, float]], float]]:
    """Train ``exps`` (identical but for the seeds) together; returns (model, history,
    seconds shared equally) per experiment."""
    _same_but_seed(exps)
    dev = resolve_device(device)
    cfg, task = exps[0].train, exps[0].task
    models = [build_model(e.model, dev) for e in exps]
    for m in models:
        apply_freeze(m, cfg.freeze)
    base = models[0]
    params, buffers = stack_module_state(models)  # name -> [S, ...]
    trainable = {n for n, p in base.named_parameters() if p.requires_grad}
    for n, p in params.items():
        p.requires_grad_(n in trainable)
    opt = torch.optim.AdamW([params[n] for n in sorted(trainable)], lr=cfg.lr, betas=cfg.betas,
                            weight_decay=cfg.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: lr_factor(s, cfg))
    gens = [make_generator(e.train.seed, dev) for e in exps]
    eval_batches = [task.sample(cfg.eval_size, make_generator(e.train.seed + 1_000_003, dev))
                    for e in exps]

    def forward(p, b, tokens):
        return functional_call(base, (p, b), (tokens,))

    batched = torch.vmap(forward)
    histories: list[list[dict[str, float]]] = [[] for _ in exps]
    window: list[torch.Tensor] = []
    t0 = time.perf_counter()
    for step in range(cfg.steps):
        tokens, batches = _stack_batches([task.sample(cfg.batch_size, g) for g in gens])
        logits = batched(params, buffers, tokens)
        losses = torch.stack([task.loss(logits[s], b) for s, b in enumerate(batches)])
        opt.zero_grad(set_to_none=True)
        losses.sum().backward()  # seeds share no parameters: each gets its own gradient
        if cfg.grad_clip is not None:
            grads = [params[n].grad for n in sorted(trainable)]
            norms = torch.sqrt(sum((g.flatten(1) ** 2).sum(1) for g in grads))  # [S]
            scale = (cfg.grad_clip / (norms + 1e-6)).clamp(max=1.0)
            for g in grads:
                g.mul_(scale.view(-1, *([1] * (g.ndim - 1))))
        opt.step()
        sched.step()
        window.append(losses.detach())
        done = step + 1
        if done % cfg.eval_every == 0 or done == cfg.steps:
            mean = torch.stack(window).mean(0)
            window.clear()
            for s, m in enumerate(models):
                _load(m, params, buffers, s)
                row = {"step": done, "train_loss": float(mean[s]), "lr": opt.param_groups[0]["lr"]}
                row.update({f"eval_{k}": v for k, v in evaluate(m, task, eval_batches[s]).items()})
                histories[s].append(row)
    seconds = (time.perf_counter() - t0) / len(exps)
    for s, m in enumerate(models):
        _load(m, params, buffers, s)
        m.eval()
    return [(m, h, seconds) for m, h in zip(models, histories)]


@torch.no_grad()
def _load(model: torch.nn.Module, params, buffers, s: int) -> None:
    for n, p in model.named_parameters():
        p.copy_(params[n][s])


def get_or_train_seeds(exps: Sequence[Experiment], zoo: Zoo, device="auto", log=None
                       ) -> list[ZooEntry]:
    """Like ``Zoo.get_or_train`` for each experiment, training the missing ones together."""
    dev = resolve_device(device)
    missing = [e for e in exps if not (zoo.path(e) / "config.json").is_file()]
    if missing:
        for e, (model, history, seconds) in zip(missing, train_seeds(missing, dev)):
            trainable, frozen = parameter_counts(model)
            meta = {**e.to_dict(), "tag": "", "history": history, "seconds": seconds,
                    "device": str(dev), "trainable": trainable, "frozen": frozen,
                    "created": time.strftime("%Y-%m-%dT%H:%M:%S"), "multiseed": len(missing)}
            checkpoints.save_model(zoo.path(e), model, meta)
    return [zoo.get_or_train(e, device=dev, progress=False, log=log) for e in exps]
