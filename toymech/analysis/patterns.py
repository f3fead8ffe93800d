"""Attention-pattern scores per head, using TransformerLens' head-detector patterns.

For a head's attention A [q, k] and a detection pattern D (previous-token: the sub-diagonal;
duplicate-token: earlier copies of the current token; induction: the token right after an
earlier copy of the current token), the score is Σ(A ⊙ D) / ΣA, averaged over sequences.
``detect_head`` itself needs a tokenizer, so its pattern builders are used directly.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from transformer_lens import HookedTransformer
from transformer_lens.head_detector import (
    get_duplicate_token_head_detection_pattern,
    get_induction_head_detection_pattern,
    get_previous_token_head_detection_pattern,
)

from ..core import check

DETECTORS = {
    "previous_token": get_previous_token_head_detection_pattern,
    "duplicate_token": get_duplicate_token_head_detection_pattern,
    "induction": get_induction_head_detection_pattern,
}


def detection_patterns(tokens: torch.Tensor, kind: str) -> Float[torch.Tensor, "batch q k"]:
    """TransformerLens' detection pattern of ``kind`` for each sequence of ``tokens`` [batch, pos]."""
    check(kind in DETECTORS, "kind", kind, f"one of {tuple(DETECTORS)}")
    check(tokens.ndim == 2, "tokens", tuple(tokens.shape), "[batch, pos]")
    fn = DETECTORS[kind]
    return torch.stack([fn(t.cpu()) for t in tokens])


def pattern_scores(patterns: Float[torch.Tensor, "batch n_heads q k"],
                   detection: Float[torch.Tensor, "batch q k"],
                   mask: torch.Tensor | None = None) -> Float[torch.Tensor, "n_heads"]:  # noqa: F821 (jaxtyping)
    """Σ(A ⊙ D) / ΣA per head over the query rows that count (the 'mul' measure of
    TransformerLens), averaged over the batch.

    ``mask`` [batch, q] (bool) keeps only the query positions where the pattern matters (e.g.
    the positions whose next token is predictable from context); None = every position. A head
    attending 0.9 where it matters but uniformly elsewhere scores 0.9 with the mask, and far less
    averaged over every row.

    ``patterns``: the heads' attention [batch, n_heads, q, k]; ``detection``: the ideal pattern
    of one kind [batch, q, k] (``detection_patterns``).
    """
    check(patterns.ndim == 4 and patterns.shape[0] == detection.shape[0]
          and patterns.shape[-2:] == detection.shape[-2:], "patterns", tuple(patterns.shape),
          f"[batch, n_heads, q, k] matching detection {tuple(detection.shape)}")
    detection = detection.to(patterns.device, patterns.dtype)[:, None]
    rows = (patterns * detection).sum(-1) / patterns.sum(-1)  # [batch, heads, q]
    if mask is None:
        mask = torch.ones(rows.shape[0], rows.shape[-1], dtype=torch.bool)
    check(tuple(mask.shape) == (rows.shape[0], rows.shape[-1]) and bool(mask.any()), "mask",
          tuple(mask.shape), f"None or a bool [batch, q] = {(rows.shape[0], rows.shape[-1])} "
          "with at least one True")
    m = mask.to(rows.device, rows.dtype)[:, None]  # [batch, 1, q]
    return ((rows * m).sum((0, -1)) / m.sum((0, -1))).cpu()


@torch.no_grad()
def head_pattern_scores(model: HookedTransformer, tokens: torch.Tensor,
                        kinds: tuple[str, ...] = tuple(DETECTORS),
                        mask: torch.Tensor | None = None
                        ) -> dict[str, Float[torch.Tensor, "n_layers n_heads"]]:
    """Previous-token, duplicate-token and induction scores of every head on ``tokens``;
    ``mask`` [batch, pos] keeps only the query positions that count (see ``pattern_scores``).

    ``model`` is run once on ``tokens`` [batch, pos]; ``kinds``: which of ``DETECTORS`` to
    score."""
    _, cache = model.run_with_cache(tokens.to(model.cfg.device),
                                    names_filter=lambda n: n.endswith("hook_pattern"))
    out: dict[str, torch.Tensor] = {}
    for kind in kinds:
        det = detection_patterns(tokens, kind)
        out[kind] = torch.stack([pattern_scores(cache["pattern", layer], det, mask)
                                 for layer in range(model.cfg.n_layers)])
    return out


@torch.no_grad()
def attention_patterns(model: HookedTransformer, tokens: torch.Tensor
                       ) -> Float[torch.Tensor, "n_layers n_heads q k"]:
    """Attention patterns of every head for ONE sequence ``tokens`` [pos].

    ``model`` is run once, with only the pattern hooks cached."""
    check(tokens.ndim == 1, "tokens", tuple(tokens.shape), "one sequence [pos]")
    _, cache = model.run_with_cache(tokens[None].to(model.cfg.device),
                                    names_filter=lambda n: n.endswith("hook_pattern"))
    return torch.stack([cache["pattern", layer][0] for layer in range(model.cfg.n_layers)]).cpu()
