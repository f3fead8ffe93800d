"""A bootstrap over sequences: how far a mean loss (or a difference of two, or any function of
several) moves when the batch's sequences are drawn again with replacement.

A loss on a set is ``Σ_i sums_i / Σ_i counts_i`` over its sequences ``i`` (each sequence's summed
loss over its scored targets and their number: ``baselines.Prediction.sequence_totals``). A
resample draws the set's sequences again, with replacement, as many as it has; the same draw
is applied to every predictor scored on the set (a paired bootstrap), so a difference between a
model and a predictor moves only by what the sequences do to both. ``resample_counts`` gives the
draws (how often each sequence is drawn in each resample, from a generator seeded by ``seed``
alone: the same draws for every run), ``resampled_losses`` the loss under each,
``percentile_interval`` the interval of any resampled number.
"""

from __future__ import annotations

import torch

from ..core import check

N_RESAMPLES = 1000  # resamples per interval
LEVEL = 0.95  # the interval's coverage


def resample_counts(n_rows: int, n_resamples: int = N_RESAMPLES,
                    generator: torch.Generator | None = None) -> torch.Tensor:
    """[n_resamples, n_rows] float64: how many times each of ``n_rows`` sequences is drawn in
    each resample (``n_rows`` draws with replacement), from ``generator`` (None: seeded 0)."""
    check(isinstance(n_rows, int) and n_rows >= 1, "n_rows", n_rows, "an integer >= 1")
    check(isinstance(n_resamples, int) and n_resamples >= 1, "n_resamples", n_resamples,
          "an integer >= 1")
    gen = generator if generator is not None else torch.Generator().manual_seed(0)
    picks = torch.randint(0, n_rows, (n_resamples, n_rows), generator=gen)
    counts = torch.zeros(n_resamples, n_rows, dtype=torch.float64)
    return counts.scatter_add_(1, picks, torch.ones_like(picks, dtype=torch.float64))


def resampled_losses(sums: torch.Tensor, counts: torch.Tensor, draws: torch.Tensor
                     ) -> torch.Tensor:
    """[n_resamples] the mean loss ``Σ w_i sums_i / Σ w_i counts_i`` under each resample's
    counts ``w`` (``draws``: ``resample_counts``; ``sums``, ``counts``: [n_rows] per sequence,
    ``Prediction.sequence_totals``)."""
    check(sums.shape == counts.shape == draws.shape[1:], "sums", tuple(sums.shape),
          f"one value per sequence of the draws {tuple(draws.shape[1:])}")
    return (draws @ sums.double()) / (draws @ counts.double()).clamp(min=1e-12)


def percentile_interval(values: torch.Tensor, level: float = LEVEL) -> tuple[float, float]:
    """The central ``level`` interval of resampled ``values`` (their percentiles
    ``(1 - level) / 2`` and ``(1 + level) / 2``)."""
    check(0 < level < 1, "level", level, "a coverage strictly between 0 and 1")
    v = values.double().flatten()
    q = torch.tensor([(1 - level) / 2, (1 + level) / 2], dtype=torch.float64)
    lo, hi = torch.quantile(v, q).tolist()
    return float(lo), float(hi)


__all__ = ["LEVEL", "N_RESAMPLES", "percentile_interval", "resample_counts", "resampled_losses"]
