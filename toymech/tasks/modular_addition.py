"""Modular addition ``[a, b, (a+b) mod p]`` on a FIXED split of all p^2 pairs
(Zhong & Andreas 2024, docs/sources.md study 3: p = 199, 95 % train / 5 % test).

Tokens 0..p-1 are the numbers themselves. Only the answer (position 2) is scored. Training
batches draw pairs (with replacement) from the training part; ``eval_sets`` returns the whole
held-out part as ``test`` (the paper's test accuracy) and a sample of training pairs as ``train``.
The split is a pure function of ``(p, train_frac, split_seed)``, so a model reloaded from the zoo
is scored on exactly the pairs it never saw. ``held_out`` gives the held-out pairs to the
training loop, whose logged ``eval_*`` are measured on them (version 2; version 1 logged a
batch of training pairs there).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from .base import Batch, Task, check, check_float, check_int, check_seed, register, set_checked


def _answer_mask(batch_size: int, device: torch.device) -> torch.Tensor:
    scored = torch.zeros(batch_size, 3, dtype=torch.bool, device=device)
    scored[:, 2] = True
    return scored


@register("modular_addition")
@dataclass(frozen=True)
class ModularAddition(Task):
    version = 2  # 2: the logged evaluation is on held-out pairs
    p: int = 199
    train_frac: float = 0.95
    split_seed: int = 0

    def __post_init__(self) -> None:
        # p <= 2000: the p**2 pairs are held in memory (the paper uses the prime 199).
        set_checked(self, p=check_int("p", self.p, 2, 2000),
                    train_frac=check_float("train_frac", self.train_frac, 0.0, 1.0,
                                           lo_open=True, hi_open=True))
        n_train = round(self.train_frac * self.p ** 2)
        check(1 <= n_train < self.p ** 2, "train_frac", self.train_frac,
              f"a fraction leaving at least one pair on each side of the split of {self.p ** 2}")
        set_checked(self, split_seed=check_seed(self.split_seed, "split_seed"))

    @property
    def vocab(self) -> list[str]:
        return [str(i) for i in range(self.p)]

    @property
    def seq_len(self) -> int:
        return 3

    @cached_property
    def split(self) -> tuple[torch.Tensor, torch.Tensor]:
        """(train, test) pair indices i = a*p + b: a permutation of all p^2 pairs, cut once."""
        gen = torch.Generator().manual_seed(self.split_seed)
        perm = torch.randperm(self.p ** 2, generator=gen)
        n_train = round(self.train_frac * self.p ** 2)
        return perm[:n_train], perm[n_train:]

    def pairs_to_batch(self, index: torch.Tensor) -> Batch:
        """Pair indices ``a*p + b`` -> sequences ``[a, b, (a+b) mod p]``."""
        a, b = index // self.p, index % self.p
        tokens = torch.stack([a, b, (a + b) % self.p], dim=1)
        return Batch(tokens, _answer_mask(len(index), index.device))

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        train = self.split[0].to(generator.device)
        pick = torch.randint(0, len(train), (batch_size,), generator=generator,
                             device=generator.device)
        return self.pairs_to_batch(train[pick])

    def held_out(self, n: int, generator: torch.Generator) -> Batch:
        """Every held-out pair when there are at most ``n`` of them, else ``n`` of them drawn
        without replacement."""
        test = self.split[1].to(generator.device)
        if len(test) > n:
            pick = torch.randperm(len(test), generator=generator, device=generator.device)[:n]
            test = test[pick]
        return self.pairs_to_batch(test)

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """``test``: every held-out pair (``n`` is ignored: the test set is fixed);
        ``train``: ``n`` training pairs."""
        test = self.split[1].to(generator.device)
        return {"test": self.pairs_to_batch(test), "train": self.sample(n, generator)}
