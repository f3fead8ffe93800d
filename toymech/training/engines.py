"""How the loop steps its models: one model with its own parameters (``EagerEngine``, the plain PyTorch
step, with ``toymech.models.fast_forward`` where that supports the model), or N models of one
shape as stacked parameters under ``torch.vmap`` (``StackedEngine``). Both give the loop the same
surface: ``loss``, ``clip``, ``sync``, ``hold``, ``restore``, ``snapshot``, ``named``, ``params``."""

from __future__ import annotations

import os
from collections.abc import Sequence

import torch
from torch.func import functional_call, stack_module_state

from ..core import check
from ..models.fast import fast_forward
from ..tasks.base import Task
from .config import TrainConfig
from .precision import autocast


class EagerEngine:
    """One model with its own parameters and optimizer: the plain PyTorch step.

    The step uses ``toymech.models.fast.fast_forward`` (the same math from the same Parameters,
    without hook points) where it supports the model; ``TOYMECH_FAST=0`` turns it off."""

    def __init__(self, model: torch.nn.Module, cfg: TrainConfig):
        self.models, self.cfg = [model], cfg
        self.named = {n: p for n, p in model.named_parameters() if p.requires_grad}
        self.params = list(self.named.values())
        flag = os.environ.get("TOYMECH_FAST", "1")
        check(flag in ("0", "1"), "TOYMECH_FAST", flag, "0 (call the model) or 1 (the default)")
        fast = fast_forward(model) if flag == "1" else None
        self.forward = fast or model
        self.eval_forward = fast  # the logged evaluation takes the same route (None: the model)

    def loss(self, tasks: Sequence[Task], batches) -> torch.Tensor:
        with autocast(self.cfg.precision, batches[0].tokens.device):
            logits = self.forward(batches[0].tokens)
        return tasks[0].loss(logits.float(), batches[0])[None]

    def clip(self) -> None:
        torch.nn.utils.clip_grad_norm_(self.params, self.cfg.grad_clip)

    def sync(self) -> None:
        pass

    def hold(self, seed: int) -> None:
        pass  # a single run ends when it stops

    def restore(self) -> None:
        pass

    @torch.no_grad()
    def snapshot(self) -> list[dict[str, torch.Tensor]]:
        return [{n: p.detach().to("cpu", copy=True) for n, p in self.named.items()}]


class StackedEngine:
    """N models of one shape as stacked parameters [N, ...], evaluated under ``torch.vmap``."""

    def __init__(self, models: Sequence[torch.nn.Module], cfg: TrainConfig):
        self.models, self.cfg = list(models), cfg
        base = self.models[0]
        params, self.buffers = stack_module_state(self.models)
        trainable = {n for n, p in base.named_parameters() if p.requires_grad}
        self.named = {n: params[n] for n in sorted(trainable)}
        for n, p in params.items():
            p.requires_grad_(n in trainable)
        self.all_params = params
        self.params = list(self.named.values())
        self.held: dict[int, dict[str, torch.Tensor]] = {}
        self.eval_forward = None  # each model evaluates itself

        def forward(p, b, tokens):
            return functional_call(base, (p, b), (tokens,))

        self.forward = torch.vmap(forward)

    def loss(self, tasks: Sequence[Task], batches) -> torch.Tensor:
        """Each model's loss on its own batch of its own task."""
        with autocast(self.cfg.precision, batches[0].tokens.device):
            logits = self.forward(self.all_params, self.buffers,
                                  torch.stack([b.tokens for b in batches])).float()
        return torch.stack([t.loss(logits[s], b) for s, (t, b) in enumerate(zip(tasks, batches))])

    def clip(self) -> None:
        grads = [p.grad for p in self.params if p.grad is not None]
        norms = torch.sqrt(sum((g.flatten(1) ** 2).sum(1) for g in grads))  # [N]
        scale = (self.cfg.grad_clip / (norms + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(scale.view(-1, *([1] * (g.ndim - 1))))

    @torch.no_grad()
    def hold(self, seed: int) -> None:
        """Keep model ``seed``'s parameters where they are from now on (its run has stopped)."""
        self.held[seed] = {n: p[seed].detach().clone() for n, p in self.named.items()}

    @torch.no_grad()
    def restore(self) -> None:
        """Undo the last update of the held seeds (AdamW moves them even with a zero grad)."""
        for seed, values in self.held.items():
            for n, v in values.items():
                self.named[n][seed].copy_(v)

    @torch.no_grad()
    def sync(self) -> None:
        """Copy the stacked parameters back into each model (before evaluating them)."""
        for s, model in enumerate(self.models):
            for n, p in model.named_parameters():
                p.copy_(self.all_params[n][s])

    @torch.no_grad()
    def snapshot(self) -> list[dict[str, torch.Tensor]]:
        """Each model's own slice of the trained parameters, copied to the CPU."""
        cpu = {n: p.detach().to("cpu", copy=True) for n, p in self.named.items()}
        return [{n: p[s].clone() for n, p in cpu.items()} for s in range(len(self.models))]
