"""Decimal addition with reversed digits (Zhong & Andreas 2024;
see docs/sources.md, study 3).

Two ``n_digits``-digit numbers (uniform in 0..10^n - 1, leading zeros kept), each written least
significant digit first, then their sum with ``n_digits + 1`` digits, also reversed::

    a = 472, b = 915:   2 7 4 + 5 1 9 = 7 8 3 1      (472 + 915 = 1387)

Reversal lets the model emit the sum in the order the carries are computed. Scored: the
``n_digits + 1`` digits of the sum. ``acc`` is per digit; ``seq_acc`` counts sums entirely right.

Held-out split (version 2): a fixed ``1 - train_frac`` of all sequences (``toymech.tasks.held_out_split``)
is never drawn for training; ``held_out`` and ``eval_sets()["test"]`` draw only from it, as the
paper scores its models on a test set that its training stream skips.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import held_out_split
from .base import (
    Batch,
    Task,
    check_int,
    masked_accuracy,
    masked_cross_entropy,
    register,
    set_checked,
)

PLUS, EQUALS = 10, 11


@register("decimal_addition")
@dataclass(frozen=True)
class DecimalAddition(held_out_split.HeldOutSplit, Task):
    version = 2  # 2: the held-out split (training data and logged evaluation changed)
    n_digits: int = 10
    train_frac: float = 0.95  # 1.0: no held-out split
    split_seed: int = 0

    def __post_init__(self) -> None:
        # 18 digits: sums must fit in int64.
        set_checked(self, n_digits=check_int("n_digits", self.n_digits, 1, 18))
        held_out_split.check_split(self)

    @property
    def vocab(self) -> list[str]:
        return [str(d) for d in range(10)] + ["+", "="]

    @property
    def seq_len(self) -> int:
        return 3 * self.n_digits + 3

    @property
    def answer_start(self) -> int:
        return 2 * self.n_digits + 2

    def _draw(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Sequences of the whole task (held-out part included)."""
        dev, n = generator.device, self.n_digits
        a = torch.randint(0, 10, (batch_size, n), generator=generator, device=dev)  # reversed
        b = torch.randint(0, 10, (batch_size, n), generator=generator, device=dev)
        digits, carry = [], torch.zeros(batch_size, dtype=torch.long, device=dev)
        for i in range(n):  # schoolbook addition from the least significant digit
            s = a[:, i] + b[:, i] + carry
            digits.append(s % 10)
            carry = s // 10
        digits.append(carry)
        col = lambda v: torch.full((batch_size, 1), v, dtype=torch.long, device=dev)  # noqa: E731
        tokens = torch.cat([a, col(PLUS), b, col(EQUALS), torch.stack(digits, 1)], dim=1)
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[:, self.answer_start:] = True
        return Batch(tokens, scored)

    def metrics(self, logits: torch.Tensor, batch: Batch) -> dict[str, float]:
        hit = (logits[:, :-1].argmax(-1) == batch.tokens[:, 1:]) | ~batch.target_mask
        return {"loss": float(masked_cross_entropy(logits, batch)),
                "acc": float(masked_accuracy(logits, batch)),
                "seq_acc": float(hit.all(dim=1).float().mean())}
