"""Needle in a haystack: key-value retrieval (Zhong & Andreas 2024;
see docs/sources.md, study 3).

A sequence lists ``k ~ U{min_pairs..max_pairs}`` DISTINCT keys (the haystack), each followed by
its value, then the query marker ``?``, one of the listed keys, and that key's value, then
padding::

    k3 v7 k0 v2 k5 v7 ? k0 v2 . . .

Only the queried value is scored. Keys and values use separate token ranges; values may repeat.
Sequences are right-padded to ``seq_len = 2*max_pairs + 1 + 2*queries`` (padding is never
scored).

``queries > 1`` asks more questions about the same haystack (``? k0 v2 k5 v7``, each key drawn
from the listed ones): denser training signal, one target per query. The first query is the
paper's whole task, position for position (a causal model cannot see what follows it), so
``first_acc`` is the paper's accuracy and ``acc`` the mean over all the queries.

Held-out split (version 2): a fixed ``1 - train_frac`` of all haystacks (``toymech.tasks.held_out_split``
hashes the haystack alone, so a held-out haystack never reaches training under any query) is
never drawn for training; ``held_out`` and ``eval_sets()["test"]`` draw only from it, as the
paper scores its models on a test set that its training stream skips.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from . import held_out_split
from .base import Batch, Task, check_int, register, set_checked


@register("needle")
@dataclass(frozen=True)
class Needle(held_out_split.HeldOutSplit, Task):
    version = 2  # 2: the held-out split (training data and logged evaluation changed)
    max_pairs: int = 30
    min_pairs: int = 1
    n_keys: int = 64
    n_values: int = 64
    train_frac: float = 0.95  # 1.0: no held-out split
    split_seed: int = 0
    queries: int = 1  # questions per haystack (1: the paper's task)

    def __post_init__(self) -> None:
        set_checked(self, max_pairs=check_int("max_pairs", self.max_pairs, 1, 4096))
        set_checked(self, min_pairs=check_int("min_pairs", self.min_pairs, 1, self.max_pairs),
                    # keys are distinct: at least max_pairs of them
                    n_keys=check_int("n_keys", self.n_keys, self.max_pairs, 100_000),
                    n_values=check_int("n_values", self.n_values, 2, 100_000),
                    queries=check_int("queries", self.queries, 1, 4096))
        held_out_split.check_split(self)

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
        return 2 * self.max_pairs + 1 + 2 * self.queries

    def split_key(self, batch: Batch) -> torch.Tensor:
        """[batch, 2*max_pairs]: the haystack (padded), which alone decides the split."""
        listed = torch.arange(2 * self.max_pairs, device=batch.tokens.device)[None]
        inside = listed < 2 * batch.extras["n_pairs"][:, None]
        return torch.where(inside, batch.tokens[:, : 2 * self.max_pairs], self.pad_token)

    def metrics(self, logits: torch.Tensor, batch: Batch) -> dict[str, float]:
        """loss, acc (over every query) and ``first_acc``: the first query's accuracy, the
        paper's single-query task (``acc`` itself when ``queries`` is 1)."""
        out = super().metrics(logits, batch)
        first = batch.extras["n_pairs"] * 2 + 2  # position of the first answer
        rows = torch.arange(len(batch), device=batch.tokens.device)
        hit = logits[rows, first - 1].argmax(-1) == batch.tokens[rows, first]
        out["first_acc"] = float(hit.float().mean())
        return out

    def _draw(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Sequences of the whole task (held-out part included)."""
        dev, B, M = generator.device, batch_size, self.max_pairs
        # Distinct keys: the first M entries of a random permutation of all keys, per row.
        keys = torch.rand(B, self.n_keys, generator=generator, device=dev).argsort(1)[:, :M]
        values = torch.randint(0, self.n_values, (B, M), generator=generator, device=dev)
        k = torch.randint(self.min_pairs, M + 1, (B,), generator=generator, device=dev)
        q = (torch.rand(B, self.queries, generator=generator, device=dev) * k[:, None]).long()
        q = q.clamp(max=(k - 1)[:, None])  # [B, queries]: which listed pair each query asks
        pairs = torch.stack([keys, self.n_keys + values], dim=2).reshape(B, 2 * M)
        tokens = torch.full((B, self.seq_len), self.pad_token, dtype=torch.long, device=dev)
        pos = torch.arange(2 * M, device=dev)
        tokens[:, : 2 * M] = torch.where(pos[None] < 2 * k[:, None], pairs, self.pad_token)
        rows = torch.arange(B, device=dev)
        query_key, answer = keys.gather(1, q), self.n_keys + values.gather(1, q)
        tokens[rows, 2 * k] = self.query_token
        at = 2 * k[:, None] + 1 + 2 * torch.arange(self.queries, device=dev)  # query keys
        tokens.scatter_(1, at, query_key)
        tokens.scatter_(1, at + 1, answer)
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored.scatter_(1, at + 1, True)
        return Batch(tokens, scored, {"n_pairs": k, "answer": answer[:, 0]})
