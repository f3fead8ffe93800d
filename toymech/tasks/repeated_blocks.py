"""Repeated letter blocks (the induction-heads blog post; see docs/sources.md, study 1).

A sequence is one block of ``block_len`` letters, drawn uniformly WITH replacement from
``n_letters``, repeated ``n_blocks`` times: ``ABCDEFABCDEFABCDEFABCDEF``. Every next-token
prediction is scored, so the first ``block_len - 1`` targets are pure guesses and the loss floor is
``(block_len - 1) * ln(n_letters) / (seq_len - 1)`` (0.708 nats for 4 x 6 letters of 26).
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

import torch

from .base import Batch, Task, check, check_int, register, set_checked

LETTERS = string.ascii_uppercase + string.ascii_lowercase


@register("repeated_blocks")
@dataclass(frozen=True)
class RepeatedBlocks(Task):
    n_blocks: int = 4
    block_len: int = 6
    n_letters: int = 26

    def __post_init__(self) -> None:
        set_checked(self, n_blocks=check_int("n_blocks", self.n_blocks, 1, 1024),
                    block_len=check_int("block_len", self.block_len, 1, 1024),
                    n_letters=check_int("n_letters", self.n_letters, 2, len(LETTERS)))
        check(self.n_blocks * self.block_len <= 65_536, "block_len", self.block_len,
              f"at most {65_536 // self.n_blocks} with n_blocks={self.n_blocks} "
              "(sequences of at most 65,536 tokens)")

    @property
    def vocab(self) -> list[str]:
        return list(LETTERS[: self.n_letters])

    @property
    def seq_len(self) -> int:
        return self.n_blocks * self.block_len

    @property
    def loss_floor(self) -> float:
        """Mean cross-entropy of a perfect model over all ``seq_len - 1`` targets (nats)."""
        return (self.block_len - 1) * math.log(self.n_letters) / (self.seq_len - 1)

    def encode(self, text: str) -> torch.Tensor:
        """``"ABC DEF"`` -> token ids (spaces are ignored); unknown letters raise ValueError."""
        text = text.replace(" ", "")
        bad = sorted({c for c in text if c not in self.vocab})
        check(not bad, "text", text, f"letters from {''.join(self.vocab)} (got {''.join(bad)})")
        return torch.tensor([self.vocab.index(c) for c in text], dtype=torch.long)

    # --- sampling --------------------------------------------------------------------------
    def _letters(self, shape: tuple[int, ...], generator: torch.Generator) -> torch.Tensor:
        return torch.randint(0, self.n_letters, shape, generator=generator,
                             device=generator.device)

    def _all_scored(self, batch_size: int, device: torch.device) -> torch.Tensor:
        scored = torch.ones(batch_size, self.seq_len, dtype=torch.bool, device=device)
        scored[:, 0] = False
        return scored

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        block = self._letters((batch_size, self.block_len), generator)
        tokens = block.repeat(1, self.n_blocks)
        return Batch(tokens, self._all_scored(batch_size, tokens.device))

    def periodic(self, batch_size: int, generator: torch.Generator, period: int,
                 offset: int = 0) -> Batch:
        """``offset`` random letters, then a random block of length ``period`` repeated to fill
        ``seq_len``. Scored: only the predictable targets (from the block's second occurrence on).

        With ``period != block_len`` or ``offset > 0`` a model that solved the training task by
        absolute position (attend to t - block_len + 1, or to the first block) fails, while an
        induction head (attend to the token after an earlier copy of the current one) does not.
        """
        self.check_batch_size(batch_size)
        check(isinstance(period, int) and 1 <= period, "period", period, "an integer >= 1")
        check(isinstance(offset, int) and 0 <= offset and offset + period < self.seq_len,
              "offset", offset, f"an integer with 0 <= offset and offset + period < {self.seq_len}")
        prefix = self._letters((batch_size, offset), generator)
        block = self._letters((batch_size, period), generator)
        reps = -(-(self.seq_len - offset) // period)
        tokens = torch.cat([prefix, block.repeat(1, reps)], dim=1)[:, : self.seq_len]
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[:, offset + period:] = True
        return Batch(tokens, scored)

    def doubled(self, batch_size: int, generator: torch.Generator) -> Batch:
        """Blocks made of doubled letters (``AABBCC``), repeated: in distribution, but every
        second target repeats the current letter, which the direct path learns to suppress."""
        self.check_batch_size(batch_size)
        half = self._letters((batch_size, -(-self.block_len // 2)), generator)
        block = half.repeat_interleave(2, dim=1)[:, : self.block_len]
        tokens = block.repeat(1, self.n_blocks)
        return Batch(tokens, self._all_scored(batch_size, tokens.device))

    def two_blocks(self, batch_size: int, generator: torch.Generator, option: int) -> Batch:
        """Prefix ``XYZRST ABCDEF`` (two different blocks), then the remaining blocks copy the
        FIRST block (option 1: ``XYZRST XYZRST``) or the most recent one (option 2:
        ``ABCDEF ABCDEF``). Scored: the letters after the two-block prefix."""
        self.check_batch_size(batch_size)
        check(option in (1, 2), "option", option, "1 (copy the first block) or 2 (the last)")
        check(self.n_blocks >= 3, "n_blocks", self.n_blocks, ">= 3 for the two-block sets")
        first = self._letters((batch_size, self.block_len), generator)
        second = self._letters((batch_size, self.block_len), generator)
        # Redraw second blocks that equal the first, so the two options really differ.
        same = (first == second).all(dim=1)
        second[same] = (first[same] + 1) % self.n_letters
        rest = (first if option == 1 else second).repeat(1, self.n_blocks - 2)
        tokens = torch.cat([first, second, rest], dim=1)
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[:, 2 * self.block_len:] = True
        return Batch(tokens, scored)

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """The post's sets plus the mechanism checks.

        test: the training distribution, all targets (the post's test CE).
        doubled: ``AABBCC`` blocks. option1 / option2: the two-block prefix continued.
        predictable: the training distribution, only the predictable targets (the reference
            for the mechanism sets below, which score the same kind of target).
        shifted: ``block_len // 2`` random letters before the blocks.
        period{block_len-1}, period{block_len+1}: other block lengths.
        """
        sets = {"test": self.sample(n, generator), "doubled": self.doubled(n, generator)}
        if self.n_blocks >= 3:
            sets["option1"] = self.two_blocks(n, generator, 1)
            sets["option2"] = self.two_blocks(n, generator, 2)
        if self.n_blocks >= 2:
            sets["predictable"] = self.periodic(n, generator, self.block_len)
            shift = max(1, self.block_len // 2)
            if shift + self.block_len < self.seq_len:
                sets["shifted"] = self.periodic(n, generator, self.block_len, offset=shift)
            for period in (self.block_len - 1, self.block_len + 1):
                if 1 <= period < self.seq_len:
                    sets[f"period{period}"] = self.periodic(n, generator, period)
        return sets
