"""A held-out split for tasks that draw fresh sequences (needle, decimal addition, parentheses).

Such a task has no list of examples to cut, so the split is a fixed function of the sequence
itself: with ``f = 1 - train_frac``, a sequence x (its tokens x_0..x_{T-1}) is held out iff

    h(x) = (sum_t w_t * x_t) mod P  <  f * P,        P = 2^31 - 1,

with weights w_t drawn once from ``split_seed`` (uniform in 1..P-1); x is the task's
``split_key`` of the sequence (all of it, or the part that defines the problem: the needle's
haystack). A linear hash with random
coefficients modulo a prime is a universal family, so two different sequences fall on either
side independently of their structure; about a fraction f of the task's sequences are held
out, at every size. Training never draws them (``training_rows``); ``held_out_rows`` draws only
them. This is the paper's protocol in closed form: its stream tasks skip every sequence that
is in their fixed test set (Zhong & Andreas 2024; docs/sources.md, study 3).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch

from .base import Batch, check, check_float, check_seed, set_checked

PRIME = 2**31 - 1


def check_split(task) -> None:
    """Validate a split task's ``train_frac`` (in (0, 1]; 1 = no split) and ``split_seed``."""
    set_checked(task, train_frac=check_float("train_frac", task.train_frac, 0.0, 1.0,
                                             lo_open=True),
                split_seed=check_seed(task.split_seed, "split_seed"))


def _weights(seq_len: int, split_seed: int, device: torch.device) -> torch.Tensor:
    gen = torch.Generator().manual_seed(split_seed)
    return torch.randint(1, PRIME, (seq_len,), generator=gen, dtype=torch.long).to(device)


def held_out_mask(tokens: torch.Tensor, train_frac: float, split_seed: int) -> torch.Tensor:
    """[batch] bool: which sequences of ``tokens`` [batch, seq] (a task's ``split_key``: the
    whole sequence, or the part of it that defines the problem) belong to the held-out part.

    Token ids stay below 2^18 and sequences below 2^13 positions, so the sum stays below 2^62:
    no int64 overflow."""
    w = _weights(tokens.shape[1], split_seed, tokens.device)
    h = (tokens * w).sum(1) % PRIME
    return h < round((1.0 - train_frac) * PRIME)


def take(batch: Batch, rows: torch.Tensor) -> Batch:
    """The rows ``rows`` of ``batch`` (extras included)."""
    return Batch(batch.tokens[rows], batch.scored[rows],
                 {k: v[rows] for k, v in batch.extras.items()})


def _all(batch: Batch) -> torch.Tensor:
    return batch.tokens


def training_rows(draw: Callable[[int], Batch], batch_size: int, train_frac: float,
                  split_seed: int, key: Callable[[Batch], torch.Tensor] = _all) -> Batch:
    """``batch_size`` sequences from ``draw(n)`` outside the held-out part.

    Draws a margin more (the mean number held out plus four standard deviations) and keeps the
    first rows that are not held out, with no host sync. If the margin ever falls short, the
    held-out rows that remain are left unscored (they add no loss and no gradient), so training
    still never learns from a held-out sequence."""
    if train_frac >= 1.0:
        return draw(batch_size)
    odds = (1.0 - train_frac) / train_frac
    extra = math.ceil(batch_size * odds + 4.0 * math.sqrt(batch_size * odds) + 4)
    raw = draw(batch_size + extra)
    held = held_out_mask(key(raw), train_frac, split_seed)
    rows = torch.argsort(held.to(torch.int8), stable=True)[:batch_size]  # kept rows first
    out = take(raw, rows)
    return Batch(out.tokens, out.scored & ~held[rows, None], out.extras)


def held_out_rows(draw: Callable[[int], Batch], n: int, train_frac: float, split_seed: int,
                  what: str = "task", key: Callable[[Batch], torch.Tensor] = _all
                  ) -> Batch | None:
    """``n`` sequences of the held-out part, drawn from ``draw`` as the task draws them (so with
    the task's own distribution restricted to that part); None when ``train_frac`` is 1."""
    if train_frac >= 1.0:
        return None
    frac, found, count = 1.0 - train_frac, [], 0
    chunk = max(256, math.ceil(1.2 * n / frac))
    for _ in range(64):
        raw = draw(chunk)
        keep = held_out_mask(key(raw), train_frac, split_seed).nonzero()[:, 0]
        found.append(take(raw, keep))
        count += len(keep)
        if count >= n:
            break
    check(count > 0, "train_frac", train_frac,
          f"a fraction that leaves some sequences of {what} held out (none found in "
          f"{64 * chunk:,} draws: the task has too few distinct sequences)")
    rows = torch.arange(min(n, count), device=found[0].tokens.device)
    merged = Batch(torch.cat([b.tokens for b in found]), torch.cat([b.scored for b in found]),
                   {k: torch.cat([b.extras[k] for b in found]) for k in found[0].extras})
    return take(merged, rows)



class HeldOutSplit:
    """Mixin of the split tasks: they declare ``train_frac`` and ``split_seed`` fields and a
    ``_draw(batch_size, generator)`` of the whole task; this gives ``sample`` (training rows),
    ``held_out`` and ``eval_sets`` (``test`` held out, ``train`` drawn as for training; with no
    split, ``test`` alone, drawn as for training)."""

    def split_key(self, batch: Batch) -> torch.Tensor:
        """[batch, L] int64: what decides a sequence's side of the split (default: all of it)."""
        return batch.tokens

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Training sequences: never one of the held-out part."""
        self.check_batch_size(batch_size)
        return training_rows(lambda b: self._draw(b, generator), batch_size, self.train_frac,
                             self.split_seed, self.split_key)

    def held_out(self, n: int, generator: torch.Generator) -> Batch | None:
        return held_out_rows(lambda b: self._draw(b, generator), n, self.train_frac,
                             self.split_seed, str(self), self.split_key)

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        test = self.held_out(n, generator)
        if test is None:
            return {"test": self.sample(n, generator)}
        return {"test": test, "train": self.sample(n, generator)}
