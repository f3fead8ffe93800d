"""A sequence typed or given by a researcher, read in a task's vocabulary and checked.

Accepted forms of ``sequence``:

* a string. When every token of the vocabulary is one character (letters, Shakespeare's
  characters, parentheses, digits), each character is a token; a space or a newline that the
  vocabulary writes as ``␣`` / ``⏎`` is read as that token, and spaces are skipped when the
  vocabulary has neither. Otherwise (``k3``, ``v12``, ``17``) tokens are separated by spaces.
* a list of token strings, a list of token ids, or a 1-D integer tensor.

Refused, in one ValueError naming ``sequence``, the value and what is allowed: an unknown token,
an id outside the vocabulary, an empty sequence, one longer than the model's context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ..core import check, is_int

# A character the reader types -> the readable token some vocabularies write it as.
ALIASES = {" ": "␣", "\n": "⏎"}
SHOWN = 24  # vocabulary tokens listed in an error message before "..."


def alphabet(vocab: Sequence[str]) -> str:
    """The vocabulary as an error message lists it: the first ``SHOWN`` tokens, then a count."""
    sep = "" if all(len(t) == 1 for t in vocab) else " "
    head = sep.join(vocab[:SHOWN])
    return head if len(vocab) <= SHOWN else f"{head}{sep}... ({len(vocab)} tokens)"


def allowed_text(vocab: Sequence[str], n_ctx: int) -> str:
    """What ``sequence`` may hold, in words."""
    how = ("characters" if all(len(t) == 1 for t in vocab) else "space-separated tokens")
    return f"1..{n_ctx} {how} of the task's vocabulary {alphabet(vocab)!r} (or their ids)"


def _split(text: str, vocab: Sequence[str]) -> list[str]:
    """A string -> token strings (see the module docstring)."""
    if all(len(t) == 1 for t in vocab):
        known = set(vocab)
        out = []
        for char in text:
            if char in known:
                out.append(char)
            elif ALIASES.get(char) in known:
                out.append(ALIASES[char])
            elif not char.isspace():
                out.append(char)  # unknown: reported by ``encode``
        return out
    return text.split()


def encode(sequence: Any, vocab: Sequence[str], n_ctx: int) -> torch.Tensor:
    """``sequence`` (any accepted form) -> token ids [T] (int64), checked against ``vocab`` and
    the context length ``n_ctx``."""
    allowed = allowed_text(vocab, n_ctx)
    if isinstance(sequence, torch.Tensor):
        check(sequence.ndim == 1 and not sequence.is_floating_point()
              and sequence.dtype != torch.bool, "sequence", sequence, allowed)
        sequence = sequence.tolist()
    if isinstance(sequence, str):
        sequence = _split(sequence, vocab)
    check(isinstance(sequence, (list, tuple)), "sequence", sequence, allowed)
    index = {t: i for i, t in enumerate(vocab)}
    ids = []
    for item in sequence:
        if isinstance(item, str):
            check(item in index, "sequence", sequence,
                  f"{allowed}; {item!r} is not a token of it")
            ids.append(index[item])
        else:
            check(is_int(item) and 0 <= int(item) < len(vocab), "sequence", sequence,
                  f"{allowed}; {item!r} is not a token id in 0..{len(vocab) - 1}")
            ids.append(int(item))
    check(1 <= len(ids) <= n_ctx, "sequence", sequence,
          f"{allowed}; it has {len(ids)} tokens")
    return torch.tensor(ids, dtype=torch.long)
