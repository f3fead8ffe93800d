"""Character-level language modelling on Tiny Shakespeare (random-transformers study,
Zhong & Andreas 2024; see docs/sources.md, study 3). The paper used TinyStories, which is not
available offline; the corpus shipped with the package (``toymech/data/tinyshakespeare.txt.gz``,
1.1 M characters, 65 symbols) stands in for it.

Sequences are random windows of ``seq_len`` characters from the first ``train_frac`` of the text
(training) or from the rest (``eval_sets()["test"]``). Every next-character prediction is scored.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import torch

from .base import Batch, Task, check_float, check_int, register, set_checked
from .corpus import read_corpus


@lru_cache(maxsize=1)
def corpus() -> tuple[str, tuple[str, ...], torch.Tensor]:
    """(text, sorted characters, [n_chars] long token ids) of the shipped corpus."""
    text = read_corpus()
    chars = tuple(sorted(set(text)))
    index = {c: i for i, c in enumerate(chars)}
    ids = torch.tensor([index[c] for c in text], dtype=torch.long)
    return text, chars, ids


@register("char_lm")
@dataclass(frozen=True)
class CharLM(Task):
    length: int = 64
    train_frac: float = 0.9

    def __post_init__(self) -> None:
        set_checked(self, length=check_int("length", self.length, 2, 4096),
                    train_frac=check_float("train_frac", self.train_frac, 0.5, 1.0,
                                           hi_open=True))

    @property
    def vocab(self) -> list[str]:
        return list(corpus()[1])

    @property
    def seq_len(self) -> int:
        return self.length

    def _windows(self, batch_size: int, generator: torch.Generator, test: bool) -> Batch:
        ids = corpus()[2]
        cut = int(self.train_frac * len(ids))
        lo, hi = (cut, len(ids)) if test else (0, cut)
        starts = torch.randint(lo, hi - self.length, (batch_size,), generator=generator,
                               device=generator.device).cpu()
        tokens = ids[starts[:, None] + torch.arange(self.length)].to(generator.device)
        scored = torch.ones_like(tokens, dtype=torch.bool)
        scored[:, 0] = False
        return Batch(tokens, scored)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        return self._windows(batch_size, generator, test=False)

    def eval_sets(self, n: int, generator: torch.Generator) -> dict[str, Batch]:
        """``test``: held-out text (the last 1 - train_frac); ``train``: training text."""
        return {"test": self._windows(n, generator, test=True),
                "train": self._windows(n, generator, test=False)}
