"""Predictors without the mechanism, scored exactly on the same batch as a model.

A label such as "copies by content" is a claim that a model does something a simpler predictor
cannot. These are the simpler predictors, each the best of its family on the batch it is scored
on (its free parameters fitted to that very batch), so a model is compared with the strongest
version of the alternative, never a weak one:

* ``context_frequency_loss(batch, n_vocab)``: predicts the next token from the counts of the
  tokens seen so far in the same sequence, with additive smoothing,
  ``p_t(c) = (n_t(c) + a) / (t + V a)`` (``n_t(c)``: how often ``c`` occurs in ``tokens[:t]``),
  ``a`` chosen to minimise the mean loss. It copies *which* letters occur, not *where*: no
  induction, no position.
* ``position_copy_loss(batch, n_vocab)``: predicts the token at position ``t`` by copying the
  token at one fixed earlier position ``s(t)``, with probability ``q_t`` on that token and the
  rest spread evenly over the others. ``s(t)`` and ``q_t`` are fitted per position: the source
  that most often holds the target, and ``q_t`` its hit rate (the loss-minimising choice for that
  source). It copies by position alone (an absolute or a relative offset), never by content.

Both return the mean cross-entropy (nats) over the scored targets (``batch.target_mask``), the
quantity ``analysis.set_losses`` reports for a model on the same batch. Each fits its free
parameters on ``batch`` itself (the strongest member of its family there). Given ``fit_on`` (a
model's training distribution, say), what the predictor learns from data comes from there: the
copier's smoothing, the position copier's sources (where it copies from), while the position
copier's confidence is still the best for ``batch``. That is the predictor a model without the
mechanism would have learned from the same data, at its most favourable calibration.
"""

from __future__ import annotations

import math

import torch

from ..core import check
from ..tasks.base import Batch


def _checked(batch: Batch, n_vocab: int) -> tuple[torch.Tensor, torch.Tensor]:
    check(isinstance(n_vocab, int) and n_vocab >= 2, "n_vocab", n_vocab, "an integer >= 2")
    tokens, scored = batch.tokens.cpu().long(), batch.scored.cpu().bool()
    check(bool(scored.any()), "batch", tuple(tokens.shape), "a batch with scored targets")
    check(int(tokens.min()) >= 0 and int(tokens.max()) < n_vocab, "batch.tokens",
          f"values {int(tokens.min())}..{int(tokens.max())}", f"token ids in 0..{n_vocab - 1}")
    return tokens, scored


def _frequency_terms(tokens: torch.Tensor, scored: torch.Tensor, n_vocab: int
                     ) -> tuple[torch.Tensor, torch.Tensor]:
    """For every scored target: how often the target occurred before it in its row, and how many
    tokens came before it (its position)."""
    onehot = torch.nn.functional.one_hot(tokens, n_vocab).to(torch.float64)  # [B, T, V]
    seen = onehot.cumsum(1) - onehot  # counts in tokens[:t], excluding t itself
    count = seen.gather(2, tokens[..., None])[..., 0]  # [B, T]: n_t(target)
    position = torch.arange(tokens.shape[1], dtype=torch.float64).expand_as(count)
    return count[scored], position[scored]


def context_frequency_loss(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> float:
    """The best in-context frequency copier's mean loss (nats) on ``batch``'s scored targets.

    ``p_t(c) = (n_t(c) + a) / (t + n_vocab * a)``, with the smoothing ``a > 0`` minimising the
    mean loss on this batch (a search over log a in [1e-4, 1e4], refined by golden section; the
    loss is smooth in log a), or on ``fit_on`` and then scored on ``batch``. At the first position
    (nothing seen) it is the uniform ln V.
    """
    count, position = _frequency_terms(*_checked(batch, n_vocab), n_vocab)
    fit = (count, position) if fit_on is None else _frequency_terms(*_checked(fit_on, n_vocab), n_vocab)
    return _frequency_loss(count, position, n_vocab, _best_log_smoothing(*fit, n_vocab))


def _frequency_loss(count: torch.Tensor, position: torch.Tensor, n_vocab: int, log_a: float) -> float:
    a = math.exp(log_a)
    return float(-(torch.log(count + a) - torch.log(position + n_vocab * a)).mean())


def _best_log_smoothing(count: torch.Tensor, position: torch.Tensor, n_vocab: int) -> float:
    """The log smoothing that minimises the copier's mean loss on these targets."""

    def loss(log_a: float) -> float:
        return _frequency_loss(count, position, n_vocab, log_a)

    grid = [-4 * math.log(10) + i * (8 * math.log(10) / 64) for i in range(65)]
    values = [loss(x) for x in grid]
    best = min(range(len(grid)), key=values.__getitem__)
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, len(grid) - 1)]
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(40):  # golden section inside the grid's best bracket
        x1, x2 = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if loss(x1) <= loss(x2):
            hi = x2
        else:
            lo = x1
    middle = (lo + hi) / 2
    return middle if loss(middle) <= values[best] else grid[best]


def position_copy_fit(batch: Batch, n_vocab: int) -> dict[int, tuple[int, float]]:
    """The position-only copier fitted on ``batch``: {target position t: (source s, hit rate q)}
    for every position with scored targets, ``s`` the earlier position whose token equals the
    target most often, the nearest on a tie (so a fixed offset back, which also holds for a
    shifted start, wins over the first block's absolute position), ``q`` that share; ``s = -1``
    where no source beats ``1/V`` (the uniform guess there)."""
    tokens, scored = _checked(batch, n_vocab)
    fit = {}
    for t in range(1, tokens.shape[1]):
        rows = scored[:, t]
        m = int(rows.sum())
        if m == 0:
            continue
        hits = (tokens[rows, :t] == tokens[rows, t][:, None]).sum(0)  # [t]: hits of each source
        k = int(hits.max())
        source = int(torch.nonzero(hits == k).max())  # the nearest of the best sources
        fit[t] = (source, k / m) if k / m > 1 / n_vocab else (-1, 0.0)
    return fit


def position_copy_loss(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> float:
    """The best position-only copier's mean loss (nats) on ``batch``'s scored targets.

    For each target position ``t``: the source ``s < t`` of ``position_copy_fit`` (on ``batch``,
    or on ``fit_on``: the sources a model learns from its training data), then ``p(target) = q``
    when the token at ``s`` is the target and ``(1 - q) / (V - 1)`` otherwise, with ``q`` the
    share of ``batch``'s targets at ``t`` that the source holds (the loss-minimising confidence,
    so a source that stopped working costs no more than a uniform guess); the uniform ``1/V``
    where that share is no better, or where the fit has no source.

    ``n_vocab``: the vocabulary size V.
    """
    tokens, scored = _checked(batch, n_vocab)
    fit = position_copy_fit(fit_on, n_vocab) if fit_on is not None else None
    total, n = 0.0, 0
    for t in range(1, tokens.shape[1]):
        rows = scored[:, t]
        m = int(rows.sum())
        if m == 0:
            continue
        n += m
        target = tokens[rows, t]
        if fit is None:
            hits = (tokens[rows, :t] == target[:, None]).sum(0)
            k = int(hits.max())
        else:
            source = fit.get(t, (-1, 0.0))[0]
            k = int((tokens[rows, source] == target).sum()) if source >= 0 else 0
        q = k / m
        if q <= 1 / n_vocab:
            total += m * math.log(n_vocab)
            continue
        total += k * -math.log(q) + ((m - k) * -math.log((1 - q) / (n_vocab - 1)) if m > k else 0.0)
    return total / n


def baseline_losses(batch: Batch, n_vocab: int, fit_on: Batch | None = None) -> dict[str, float]:
    """Both predictors on one batch (fitted on it, or on ``fit_on``): ``{"copier":
    context_frequency_loss, "position": position_copy_loss}``, and ``"best"``, the lower of the
    two (the bar a mechanism label must clear).

    ``n_vocab``: the vocabulary size V."""
    out = {"copier": context_frequency_loss(batch, n_vocab, fit_on),
           "position": position_copy_loss(batch, n_vocab, fit_on)}
    out["best"] = min(out.values())
    return out
