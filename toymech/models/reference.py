"""The reference step: one AdamW step of a plain PyTorch copy of study 1's 2-layer model (the
post's attention-only toy: d_model 32, 4 heads, 24 positions, 26 letters, sinusoids added to q and
k), batch 256, on one CPU thread. Costs are stated in these steps beside the wall time, so a figure
measured on one machine carries to another of a different speed (``reference_step_seconds``
measures it here in about a second); the benchmarks compare toymech's own loop with it.

What a run will cost, before it trains: ``run_cost`` (its steps x batch x positions x layers x
width, the width counted once for the work per element and again, over ``MATMUL_WIDTH``, for the
matrix products, which dominate once the width reaches a few hundred), in reference steps
(``reference_steps``). ``training_cost`` says it in one line with the wall time on this machine
(the reference step measured here now), and refuses, at ``smoke`` (meant to take seconds), runs
above ``SMOKE_MAX_REFERENCE_STEPS`` unless the caller confirms them (``--yes`` on the command line,
``confirm_cost=True`` in Python): knob values at their maxima can make a smoke run take an hour.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
from torch import nn

from ..devices import make_generator, usable_cores
from ..tasks import masked_cross_entropy
from ..tasks.repeated_blocks import RepeatedBlocks
from .build import sinusoid_table

BATCH = 256
MATMUL_WIDTH = 256  # the width at which a layer's matrix products cost its per-element work
# every run of a command at ``smoke`` together, in reference steps, above which it is refused
# unless confirmed: smoke is meant to take seconds, and the shipped smoke maps stay far below it
SMOKE_MAX_REFERENCE_STEPS = 10_000
# Reference steps per second of the machine that measured the shipped costs
# (benchmarks/README.md: the plain loop, 1 thread, quiet 2-core machine, 2026-11-30).
SHIPPED_STEPS_PER_S = 37.7


class PlainAttnOnly(nn.Module):
    """Attention-only transformer, no biases/LayerNorm, sinusoids added to q and k."""

    def __init__(self, n_layers=2, n_heads=4, d_model=32, d_vocab=26, n_ctx=24):
        super().__init__()
        d_head = d_model // n_heads
        self.n_heads, self.d_head = n_heads, d_head
        self.W_E = nn.Parameter(torch.randn(d_vocab, d_model) * 0.1)
        self.W_U = nn.Parameter(torch.randn(d_model, d_vocab) * 0.1)
        self.qkv = nn.ModuleList(nn.Linear(d_model, 3 * d_model, bias=False) for _ in range(n_layers))
        self.out = nn.ModuleList(nn.Linear(d_model, d_model, bias=False) for _ in range(n_layers))
        self.register_buffer("sin", sinusoid_table(n_ctx, d_head))
        self.register_buffer("mask", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool)))

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        B, T = tokens.shape
        x = self.W_E[tokens]
        for qkv, out in zip(self.qkv, self.out):
            q, k, v = qkv(x).view(B, T, 3, self.n_heads, self.d_head).unbind(2)
            q, k = q + self.sin[:T, None], k + self.sin[:T, None]
            scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.d_head)
            scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))
            z = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(B, T, -1)
            x = x + out(z)
        return x @ self.W_U


def bare_loop_seconds(model: nn.Module, forward, task, steps: int, batch_size: int = BATCH,
                      device: torch.device | str = "cpu", seed: int = 0, warmup: int = 5) -> float:
    """Seconds per step of a bare AdamW loop on ``forward``'s logits (``warmup`` steps left out)."""
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-3,
                            weight_decay=1.0)
    gen = make_generator(seed, device)
    t0 = 0.0
    for step in range(steps + warmup):
        if step == warmup:
            if torch.device(device).type == "cuda":
                torch.cuda.synchronize()
            t0 = time.perf_counter()
        batch = task.sample(batch_size, gen)
        loss = masked_cross_entropy(forward(batch.tokens), batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    if torch.device(device).type == "cuda":
        torch.cuda.synchronize()
    return (time.perf_counter() - t0) / steps


def reference_step_seconds(steps: int = 30) -> float:
    """One reference step's seconds on this machine now (one CPU thread; the thread count is
    restored afterwards). About ``steps`` x 27 ms on the machine of the shipped costs."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = PlainAttnOnly()
        return bare_loop_seconds(model, model, RepeatedBlocks(), steps)
    finally:
        torch.set_num_threads(before)


def speed_ratio(seconds_per_step: float) -> float:
    """How much slower this machine is than the one that shipped the costs (>1: slower)."""
    return seconds_per_step * SHIPPED_STEPS_PER_S


def machine_record(reference_step_s: float | None = None) -> dict:
    """What a result was measured on: usable cores, the reference steps per second measured
    now (``reference_step_s`` if already measured), torch's version and whether CUDA was there."""
    seconds = reference_step_s or reference_step_seconds()
    return {"cores": usable_cores(), "reference_steps_per_s": round(1.0 / seconds, 1),
            "torch": torch.__version__, "cuda": torch.cuda.is_available()}


def run_cost(exp: Any) -> float:
    """A run's work: steps x batch x positions x layers x (width + width² / ``MATMUL_WIDTH``)
    (an ``Experiment``, or anything with its ``model``, ``train`` and ``task`` fields)."""
    model, train = exp.model, exp.train
    width = float(getattr(model, "d_model", 1))
    return float(train.steps * train.batch_size * exp.task.seq_len
                 * getattr(model, "n_layers", 1) * (width + width * width / MATMUL_WIDTH))


# run_cost of one reference step (the reference model at its batch: 24 positions, 2 layers,
# width 32)
REFERENCE_STEP_COST = BATCH * 24 * 2 * (32 + 32 * 32 / MATMUL_WIDTH)


def reference_steps(experiments: Iterable[Any]) -> float:
    """What ``experiments`` cost to train, in reference steps (``run_cost`` over the reference
    step's)."""
    return sum(run_cost(e) for e in experiments) / REFERENCE_STEP_COST


@functools.cache
def _step_seconds_now() -> float:
    """A reference step's seconds here, measured once per process (a short measurement)."""
    return reference_step_seconds(steps=10)


def duration_text(seconds: float) -> str:
    """``45 s``, ``12 min``, ``3.2 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def training_cost(experiments: Iterable[Any], size_name: str | None, *, confirmed: bool = False,
                  what: str = "", log: Callable[[str], None] | None = None,
                  step_seconds: Callable[[], float] = _step_seconds_now) -> float:
    """Before ``experiments`` (the runs still to train) train: their cost in reference steps,
    said through ``log`` in one line with the wall time on one core of this machine (a
    reference step measured here now), and returned. At size ``smoke`` (``size_name``; None: no
    size) a cost above ``SMOKE_MAX_REFERENCE_STEPS`` is a ValueError in one line unless
    ``confirmed`` (``--yes``).
    ``what``: what trains, for the line ("map s1: "); nothing to train says nothing."""
    runs = list(experiments)
    if not runs:
        return 0.0
    steps = reference_steps(runs)
    seconds = steps * step_seconds()
    line = (f"{what}{len(runs)} run(s) to train, about {steps:,.0f} reference steps: about "
            f"{duration_text(seconds)} on one core of this machine (a reference step takes "
            f"{1000 * seconds / max(steps, 1e-9):.0f} ms here now)")
    if size_name == "smoke" and steps > SMOKE_MAX_REFERENCE_STEPS and not confirmed:
        raise ValueError(f"size='smoke' is not allowed for these runs without --yes: {line}, above "
                         f"smoke's {SMOKE_MAX_REFERENCE_STEPS:,} reference steps (smoke is meant "
                         "to take seconds); give --yes (confirm_cost=True) to train them anyway, "
                         "or smaller knob values")
    if log is not None:
        log(line)
    return steps
