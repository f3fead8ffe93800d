"""Parenthesis balancing (Zhong & Andreas 2024; see docs/sources.md, study 3).

A string of up to ``max_len`` parentheses, then ``?``, then the answer ``Y`` (balanced) or ``N``,
right-padded with ``.`` to ``seq_len = max_len + 2``. Only the answer is scored.

Strings come in three kinds, so that about half are balanced and the rest are near misses:
* 50 % balanced: m opening and m closing parentheses shuffled, then rotated to start just after
  the first minimum of the running depth (the cycle lemma: the rotation of a zero-sum walk that
  starts after its minimum never goes below zero), so they are balanced and deep;
* 25 % shuffled with equal counts (balanced only by chance, ~1/(m+1)): counting cannot tell;
* 25 % balanced with one parenthesis flipped (the counts differ by two).
The label is always computed from the string (depth never negative and ending at zero).

Held-out split (version 2): a fixed ``1 - train_frac`` of all sequences (``toymech.tasks.held_out_split``)
is never drawn for training; ``held_out`` and ``eval_sets()["test"]`` draw only from it, as the
paper scores its models on a test set that its training stream skips.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import held_out_split
from .base import Batch, Task, check_int, register, set_checked

OPEN, CLOSE, QUERY, YES, NO, PAD = range(6)


def is_balanced(steps: torch.Tensor, length: torch.Tensor) -> torch.Tensor:
    """steps: [B, L] in {+1, -1, 0 (padding)}; balanced iff every prefix depth >= 0 and the
    depth at ``length`` is 0."""
    depth = steps.cumsum(1)
    rows = torch.arange(len(steps), device=steps.device)
    return (depth >= 0).all(1) & (depth[rows, length - 1] == 0)


@register("parentheses")
@dataclass(frozen=True)
class Parentheses(held_out_split.HeldOutSplit, Task):
    version = 2  # 2: the held-out split (training data and logged evaluation changed)
    max_len: int = 60
    train_frac: float = 0.95  # 1.0: no held-out split
    split_seed: int = 0

    def __post_init__(self) -> None:
        set_checked(self, max_len=check_int("max_len", self.max_len, 2, 4096))
        held_out_split.check_split(self)

    @property
    def vocab(self) -> list[str]:
        return ["(", ")", "?", "Y", "N", "."]

    @property
    def seq_len(self) -> int:
        return self.max_len + 2

    def _draw(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Sequences of the whole task (held-out part included)."""
        dev, B, W = generator.device, batch_size, 2 * (self.max_len // 2)
        m = torch.randint(1, self.max_len // 2 + 1, (B,), generator=generator, device=dev)
        L = 2 * m
        pos = torch.arange(W, device=dev)[None].expand(B, W)
        inside = pos < L[:, None]
        # Shuffle m opens and m closes inside the first L positions: rank random keys.
        keys = torch.rand(B, W, generator=generator, device=dev).masked_fill(~inside, 2.0)
        rank = keys.argsort(1).argsort(1)
        shuffled = torch.where(rank < m[:, None], 1, -1).masked_fill(~inside, 0)
        # Rotate to start after the first minimum of the running depth.
        depth = shuffled.cumsum(1).masked_fill(~inside, W + 1)
        start = depth.argmin(1) + 1
        src = (start[:, None] + pos) % L[:, None]
        balanced = shuffled.gather(1, src).masked_fill(~inside, 0)
        flip_at = (torch.rand(B, generator=generator, device=dev) * L).long()
        flipped = balanced.clone()
        flipped[torch.arange(B, device=dev), flip_at] *= -1
        kind = torch.rand(B, generator=generator, device=dev)
        steps = torch.where((kind < 0.5)[:, None], balanced,
                            torch.where((kind < 0.75)[:, None], shuffled, flipped))
        label = is_balanced(steps, L)
        tokens = torch.full((B, self.seq_len), PAD, dtype=torch.long, device=dev)
        tokens[:, :W] = torch.where(steps == 1, OPEN, torch.where(steps == -1, CLOSE, PAD))
        rows = torch.arange(B, device=dev)
        tokens[rows, L] = QUERY
        tokens[rows, L + 1] = torch.where(label, YES, NO)
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[rows, L + 1] = True
        return Batch(tokens, scored, {"balanced": label, "length": L})
