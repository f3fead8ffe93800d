"""Memorization of a random function f: [n_keys] x [n_keys] -> [n_values]
(Zhong & Andreas 2024, docs/sources.md study 3: 512 x 512 -> 512).

Sequence ``[a, n_keys + b, 2*n_keys + f(a, b)]``: the two key halves live in separate token
ranges (as in the paper: "the first input from 0 to 511 and the second from 512 to 1023"), the
values in a third. Only the value is scored. There is no held-out set: training and evaluation
both use the full table, and what is measured is how much of it the model stores.

Stored information (``memorized_bits``): with V = n_values and the model's cross-entropy H (bits)
on the value of each pair, a model that knows nothing pays log2 V bits per pair; it stores
    bits = sum_pairs max(0, log2 V - H_pair)
and the study divides this by the number of trainable parameters (bits per parameter).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property

import torch

from .base import Batch, Task, check_int, check_seed, register, set_checked


@register("memorization")
@dataclass(frozen=True)
class Memorization(Task):
    n_keys: int = 512
    n_values: int = 512
    function_seed: int = 0

    def __post_init__(self) -> None:
        # Bounded so the vocabulary (2 * n_keys + n_values strings) stays a toy's.
        set_checked(self, n_keys=check_int("n_keys", self.n_keys, 1, 100_000),
                    n_values=check_int("n_values", self.n_values, 2, 100_000),
                    function_seed=check_seed(self.function_seed, "function_seed"))

    @property
    def vocab(self) -> list[str]:
        return ([f"a{i}" for i in range(self.n_keys)] + [f"b{i}" for i in range(self.n_keys)]
                + [f"v{i}" for i in range(self.n_values)])

    @property
    def seq_len(self) -> int:
        return 3

    @property
    def n_pairs(self) -> int:
        return self.n_keys ** 2

    @property
    def total_bits(self) -> float:
        """Information in the table: n_keys^2 * log2(n_values)."""
        return self.n_pairs * math.log2(self.n_values)

    @cached_property
    def table(self) -> torch.Tensor:
        """[n_keys, n_keys] long: f(a, b), uniform and independent, fixed by ``function_seed``."""
        gen = torch.Generator().manual_seed(self.function_seed)
        return torch.randint(0, self.n_values, (self.n_keys, self.n_keys), generator=gen)

    def pairs_to_batch(self, index: torch.Tensor) -> Batch:
        a, b = index // self.n_keys, index % self.n_keys
        value = self.table.to(index.device)[a, b]
        tokens = torch.stack([a, self.n_keys + b, 2 * self.n_keys + value], dim=1)
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[:, 2] = True
        return Batch(tokens, scored)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        index = torch.randint(0, self.n_pairs, (batch_size,), generator=generator,
                              device=generator.device)
        return self.pairs_to_batch(index)

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """``all``: the whole table in order (``n`` ignored); ``test``: ``n`` random pairs."""
        everything = torch.arange(self.n_pairs, device=generator.device)
        return {"test": self.sample(n, generator), "all": self.pairs_to_batch(everything)}

    def metrics(self, logits: torch.Tensor, batch: Batch) -> dict[str, float]:
        """loss, acc, and ``memorized_bits``: the stored information extrapolated to the whole
        table, n_pairs * mean over the batch of max(0, log2 n_values - H) (H in bits)."""
        out = super().metrics(logits, batch)
        per_pair = bits_per_target(logits, batch, self.n_values)
        out["memorized_bits"] = float(per_pair.mean()) * self.n_pairs
        return out


def bits_per_target(logits: torch.Tensor, batch: Batch, n_values: int) -> torch.Tensor:
    """[n_scored]: max(0, log2 n_values - H) for each scored target, H = -log2 p(target)."""
    logp = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    nll_bits = -logp.gather(-1, batch.tokens[:, 1:, None])[..., 0] / math.log(2)
    return (math.log2(n_values) - nll_bits[batch.target_mask]).clamp(min=0)
