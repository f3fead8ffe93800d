"""Needle in a haystack: key-value retrieval (Zhong & Andreas 2024;
see docs/sources.md, study 3).

A sequence lists ``k ~ U{min_pairs..max_pairs}`` DISTINCT keys, each followed by its value, then
the query marker ``?``, one of the listed keys, and that key's value, then padding::

    k3 v7 k0 v2 k5 v7 ? k0 v2 . . .

Only the queried value is scored. Keys and values use separate token ranges; values may repeat.
Sequences are right-padded to ``seq_len = 2*max_pairs + 3`` (padding is never scored).

Held-out split (version 2): a fixed ``1 - train_frac`` of all sequences (``toymech.tasks._split``)
is never drawn for training; ``held_out`` and ``eval_sets()["test"]`` draw only from it, as the
paper scores its models on a test set that its training stream skips.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import _split
from .base import Batch, Task, check_int, register, set_checked


@register("needle")
@dataclass(frozen=True)
class Needle(_split.HeldOutSplit, Task):
    version = 2  # 2: the held-out split (training data and logged evaluation changed)
    max_pairs: int = 30
    min_pairs: int = 1
    n_keys: int = 64
    n_values: int = 64
    train_frac: float = 0.95  # 1.0: no held-out split
    split_seed: int = 0

    def __post_init__(self) -> None:
        set_checked(self, max_pairs=check_int("max_pairs", self.max_pairs, 1, 4096))
        set_checked(self, min_pairs=check_int("min_pairs", self.min_pairs, 1, self.max_pairs),
                    # keys are distinct: at least max_pairs of them
                    n_keys=check_int("n_keys", self.n_keys, self.max_pairs, 100_000),
                    n_values=check_int("n_values", self.n_values, 2, 100_000))
        _split.check_split(self)

    @property
    def vocab(self) -> list[str]:
        return ([f"k{i}" for i in range(self.n_keys)] + [f"v{i}" for i in range(self.n_values)]
                + ["?", "."])

    @property
    def query_token(self) -> int:
        return self.n_keys + self.n_values

    @property
    def pad_token(self) -> int:
        return self.n_keys + self.n_values + 1

    @property
    def seq_len(self) -> int:
        return 2 * self.max_pairs + 3

    def _draw(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Sequences of the whole task (held-out part included)."""
        dev, B, M = generator.device, batch_size, self.max_pairs
        # Distinct keys: the first M entries of a random permutation of all keys, per row.
        keys = torch.rand(B, self.n_keys, generator=generator, device=dev).argsort(1)[:, :M]
        values = torch.randint(0, self.n_values, (B, M), generator=generator, device=dev)
        k = torch.randint(self.min_pairs, M + 1, (B,), generator=generator, device=dev)
        q = (torch.rand(B, generator=generator, device=dev) * k).long().clamp(max=k - 1)
        pairs = torch.stack([keys, self.n_keys + values], dim=2).reshape(B, 2 * M)
        tokens = torch.full((B, self.seq_len), self.pad_token, dtype=torch.long, device=dev)
        pos = torch.arange(2 * M, device=dev)
        tokens[:, : 2 * M] = torch.where(pos[None] < 2 * k[:, None], pairs, self.pad_token)
        rows = torch.arange(B, device=dev)
        query_key, answer = keys[rows, q], self.n_keys + values[rows, q]
        tokens[rows, 2 * k] = self.query_token
        tokens[rows, 2 * k + 1] = query_key
        tokens[rows, 2 * k + 2] = answer
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[rows, 2 * k + 2] = True
        return Batch(tokens, scored, {"n_pairs": k, "answer": answer})
