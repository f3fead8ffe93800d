"""Repeated letter blocks (the induction-heads blog post; see docs/sources.md, study 1).

A sequence is one block of ``block_len`` letters, drawn uniformly WITH replacement from
``n_letters``, repeated ``n_blocks`` times: ``ABCDEFABCDEFABCDEFABCDEF``. Every next-token
prediction is scored, so the first ``block_len - 1`` targets are pure guesses and the loss floor is
``(block_len - 1) * ln(n_letters) / (seq_len - 1)`` (0.708 nats for 4 x 6 letters of 26).

Variants (the study's knobs): ``block_len`` may be a tuple of lengths, one drawn per sequence
(uniformly), and ``offset`` an int or a tuple: that many random letters come before the first
block. Then ``length`` fixes the sequence length (required when the block length varies; by
default ``n_blocks * block_len``) and the blocks repeat to fill it, the last one cut where the
sequence ends. The fields added for variants are written by ``to_dict`` only when set, so the
post's task (and every zoo entry trained on it) keeps its key.
"""

from __future__ import annotations

import math
import string
from dataclasses import dataclass
from typing import Any

import torch

from .base import Batch, Task, check, check_int, register, set_checked

LETTERS = string.ascii_uppercase + string.ascii_lowercase
MAX_TOKENS = 65_536


def _int_or_tuple(name: str, value: Any, lo: int, hi: int) -> int | tuple[int, ...]:
    """An int in lo..hi, or a non-empty tuple (list) of distinct ones, sorted; a one-value list
    is that int."""
    if isinstance(value, (list, tuple)):
        check(len(value) > 0, name, value, "an integer or a non-empty list of integers")
        vals = [check_int(f"{name}[{i}]", v, lo, hi) for i, v in enumerate(value)]
        check(len(set(vals)) == len(vals), name, list(value), "each value once")
        return vals[0] if len(vals) == 1 else tuple(sorted(vals))
    return check_int(name, value, lo, hi)


def _choices(value: int | tuple[int, ...]) -> tuple[int, ...]:
    return value if isinstance(value, tuple) else (value,)


@register("repeated_blocks")
@dataclass(frozen=True)
class RepeatedBlocks(Task):
    n_blocks: int = 4
    block_len: int | tuple[int, ...] = 6
    n_letters: int = 26
    offset: int | tuple[int, ...] = 0       # random letters before the first block
    length: int | None = None               # the sequence length (None: n_blocks * block_len)

    def __post_init__(self) -> None:
        set_checked(self, n_blocks=check_int("n_blocks", self.n_blocks, 1, 1024),
                    block_len=_int_or_tuple("block_len", self.block_len, 1, 1024),
                    n_letters=check_int("n_letters", self.n_letters, 2, len(LETTERS)),
                    offset=_int_or_tuple("offset", self.offset, 0, MAX_TOKENS))
        if self.length is not None:
            set_checked(self, length=check_int("length", self.length, 2, MAX_TOKENS))
            if isinstance(self.block_len, int) and self.length == self.n_blocks * self.block_len:
                set_checked(self, length=None)  # one form per task: the post's keeps its key
        else:
            check(isinstance(self.block_len, int), "length", None,
                  f"a sequence length when block_len varies (block_len={self.block_len})")
            check(self.n_blocks * self.block_len <= MAX_TOKENS, "block_len", self.block_len,
                  f"at most {MAX_TOKENS // self.n_blocks} with n_blocks={self.n_blocks} "
                  f"(sequences of at most {MAX_TOKENS:,} tokens)")
        longest = max(self.offsets) + max(self.block_lens)
        check(longest < self.seq_len, "block_len" if self.offsets == (0,) else "offset",
              self.block_len if self.offsets == (0,) else self.offset,
              f"the largest offset plus the largest block length below the sequence length "
              f"{self.seq_len} (got {longest}): every sequence must repeat its block at least "
              "once")

    # --- what the sequences are ------------------------------------------------------------
    @property
    def block_lens(self) -> tuple[int, ...]:
        """The block lengths a sequence draws from."""
        return _choices(self.block_len)

    @property
    def offsets(self) -> tuple[int, ...]:
        """The numbers of random letters before the first block a sequence draws from."""
        return _choices(self.offset)

    @property
    def varied(self) -> bool:
        """Whether this is a variant of the post's sequences (a block length or offset drawn per
        sequence, a start offset, or a length of its own)."""
        return (len(self.block_lens) > 1 or self.offsets != (0,) or
                (self.length is not None and self.length != self.n_blocks * self.block_lens[0]))

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        for key, unset in (("offset", 0), ("length", None)):
            if d[key] == unset:
                del d[key]  # the post's task keeps its key (fields added for variants)
        for key in ("block_len", "offset"):
            if isinstance(d.get(key), tuple):
                d[key] = list(d[key])
        return d

    @property
    def vocab(self) -> list[str]:
        return list(LETTERS[: self.n_letters])

    @property
    def seq_len(self) -> int:
        return self.length if self.length is not None else self.n_blocks * self.block_lens[0]

    @property
    def loss_floor(self) -> float:
        """Mean cross-entropy of a perfect model over all ``seq_len - 1`` targets (nats): the
        offset letters and the first block's letters after the first are guesses, averaged over
        the block lengths and offsets drawn."""
        guesses = (sum(self.offsets) / len(self.offsets)
                   + sum(self.block_lens) / len(self.block_lens) - 1)
        return guesses * math.log(self.n_letters) / (self.seq_len - 1)

    def encode(self, text: str) -> torch.Tensor:
        """``text`` such as ``"ABC DEF"`` -> token ids (spaces are ignored); unknown letters
        raise ValueError."""
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

    def _pick(self, values: tuple[int, ...], batch_size: int, generator: torch.Generator
              ) -> torch.Tensor:
        """One of ``values`` per sequence, uniformly (no draw when there is one value)."""
        options = torch.tensor(values, device=generator.device)
        if len(values) == 1:
            return options.expand(batch_size)
        return options[torch.randint(0, len(values), (batch_size,), generator=generator,
                                     device=generator.device)]

    def _repeat(self, block: torch.Tensor, lens: torch.Tensor, offsets: torch.Tensor,
                generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
        """Sequences of ``offsets`` random letters, then ``block[:, :lens]`` repeated to
        ``seq_len``; and which targets are predictable (from the block's second occurrence)."""
        batch = block.shape[0]
        t = torch.arange(self.seq_len, device=block.device).expand(batch, -1)
        start, period = offsets[:, None], lens[:, None]
        inside = torch.remainder(t - start, period)
        tokens = torch.gather(block, 1, inside)
        prefix = self._letters((batch, self.seq_len), generator)
        tokens = torch.where(t < start, prefix, tokens)
        return tokens, t >= start + period

    def _varied(self, batch_size: int, generator: torch.Generator, doubled: bool = False
                ) -> tuple[torch.Tensor, torch.Tensor]:
        lens = self._pick(self.block_lens, batch_size, generator)
        offsets = self._pick(self.offsets, batch_size, generator)
        longest = max(self.block_lens)
        if doubled:
            half = self._letters((batch_size, -(-longest // 2)), generator)
            block = half.repeat_interleave(2, dim=1)[:, :longest]
        else:
            block = self._letters((batch_size, longest), generator)
        return self._repeat(block, lens, offsets, generator)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        if self.varied:
            tokens, _ = self._varied(batch_size, generator)
            return Batch(tokens, self._all_scored(batch_size, tokens.device))
        block = self._letters((batch_size, self.block_len), generator)
        tokens = block.repeat(1, self.n_blocks)
        return Batch(tokens, self._all_scored(batch_size, tokens.device))

    def periodic(self, batch_size: int, generator: torch.Generator, period: int,
                 offset: int = 0) -> Batch:
        """``batch_size`` sequences drawn from ``generator``: ``offset`` random letters, then a
        random block of length ``period`` repeated to fill
        ``seq_len``. Scored: only the predictable targets (from the block's second occurrence on).

        With a ``period`` or an ``offset`` the task never trains on, a model that solved the
        training task by absolute position (attend to t - block_len + 1, or to the first block)
        fails, while an induction head (attend to the token after an earlier copy of the current
        one) does not.
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

    def predictable(self, batch_size: int, generator: torch.Generator) -> Batch:
        """``batch_size`` sequences of the training distribution drawn from ``generator``,
        scoring only the predictable targets (the reference of
        the mechanism sets)."""
        if not self.varied:
            return self.periodic(batch_size, generator, self.block_len)
        self.check_batch_size(batch_size)
        tokens, scored = self._varied(batch_size, generator)
        return Batch(tokens, scored)

    def doubled(self, batch_size: int, generator: torch.Generator) -> Batch:
        """``batch_size`` sequences drawn from ``generator`` whose blocks are made of doubled
        letters (``AABBCC``), repeated: in distribution, but every
        second target repeats the current letter, which the direct path learns to suppress."""
        self.check_batch_size(batch_size)
        if self.varied:
            tokens, _ = self._varied(batch_size, generator, doubled=True)
            return Batch(tokens, self._all_scored(batch_size, tokens.device))
        half = self._letters((batch_size, -(-self.block_len // 2)), generator)
        block = half.repeat_interleave(2, dim=1)[:, : self.block_len]
        tokens = block.repeat(1, self.n_blocks)
        return Batch(tokens, self._all_scored(batch_size, tokens.device))

    @property
    def option_block(self) -> int:
        """The block length of the two-block sets (the middle one of a varied task's)."""
        lens = self.block_lens
        return lens[(len(lens) - 1) // 2]

    def two_blocks(self, batch_size: int, generator: torch.Generator, option: int) -> Batch:
        """``batch_size`` sequences drawn from ``generator``: the prefix ``XYZRST ABCDEF`` (two
        different blocks), then the rest of the sequence copies
        the FIRST block (option 1: ``XYZRST XYZRST``) or the most recent one (option 2:
        ``ABCDEF ABCDEF``). Scored: the letters after the two-block prefix."""
        self.check_batch_size(batch_size)
        check(option in (1, 2), "option", option, "1 (copy the first block) or 2 (the last)")
        n = self.option_block
        check(self.seq_len >= 3 * n, "n_blocks", self.n_blocks,
              ">= 3 for the two-block sets (room for three blocks)")
        first = self._letters((batch_size, n), generator)
        second = self._letters((batch_size, n), generator)
        # Redraw second blocks that equal the first, so the two options really differ.
        same = (first == second).all(dim=1)
        second[same] = (first[same] + 1) % self.n_letters
        reps = -(-(self.seq_len - 2 * n) // n)
        rest = (first if option == 1 else second).repeat(1, reps)
        tokens = torch.cat([first, second, rest], dim=1)[:, : self.seq_len]
        scored = torch.zeros_like(tokens, dtype=torch.bool)
        scored[:, 2 * n:] = True
        return Batch(tokens, scored)

    # --- the mechanism check ---------------------------------------------------------------
    @property
    def shift(self) -> int:
        """The offset of the ``shifted`` set: past every offset the task trains on."""
        return max(self.offsets) + max(1, self.option_block // 2)

    def mechanism_sets(self) -> dict[str, tuple[int, int]]:
        """The sets that tell content from position, each as (period, offset): ``shifted``
        (the middle block length after more random letters than training ever puts first),
        ``shorter`` and ``longer`` (one letter shorter than the shortest block trained on, one
        longer than the longest). All outside the training distribution; a set that does not fit
        the sequence is left out."""
        start = min(self.offsets)
        sets = {"shifted": (self.option_block, self.shift),
                "shorter": (min(self.block_lens) - 1, start),
                "longer": (max(self.block_lens) + 1, start)}
        return {k: (p, o) for k, (p, o) in sets.items() if p >= 1 and o + p < self.seq_len}

    def in_distribution(self, period: int, offset: int) -> bool:
        """Whether a block of ``period`` letters after ``offset`` random ones is a sequence this
        task trains on."""
        return period in self.block_lens and offset in self.offsets

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """The post's sets plus the mechanism checks, ``n`` sequences each, drawn from
        ``generator``.

        test: the training distribution, all targets (the post's test CE).
        doubled: ``AABBCC`` blocks. option1 / option2: the two-block prefix continued.
        predictable: the training distribution, only the predictable targets (the reference
            for the mechanism sets below, which score the same kind of target).
        shifted, shorter, longer: ``mechanism_sets`` (a shifted start, shorter and longer
            blocks), each outside the training distribution.
        """
        sets = {"test": self.sample(n, generator), "doubled": self.doubled(n, generator)}
        if self.seq_len >= 3 * self.option_block:
            sets["option1"] = self.two_blocks(n, generator, 1)
            sets["option2"] = self.two_blocks(n, generator, 2)
        if self.seq_len >= 2 * max(self.block_lens) + max(self.offsets):
            sets["predictable"] = self.predictable(n, generator)
            for name, (period, offset) in self.mechanism_sets().items():
                sets[name] = self.periodic(n, generator, period, offset)
        return sets
