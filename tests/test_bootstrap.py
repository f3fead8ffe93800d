"""The bootstrap over sequences (toymech.analysis.bootstrap): draws of the right shape and sum,
fixed by their generator, the loss under the identity draw is the loss, and a percentile
interval that covers what it should (and shrinks with more sequences)."""

import pytest
import torch

from toymech.analysis.bootstrap import percentile_interval, resample_counts, resampled_losses


def test_draws_resample_every_sequence_with_replacement_from_a_fixed_generator():
    draws = resample_counts(50, 200, torch.Generator().manual_seed(3))
    assert draws.shape == (200, 50) and bool((draws.sum(1) == 50).all())
    again = resample_counts(50, 200, torch.Generator().manual_seed(3))
    assert torch.equal(draws, again)
    assert not torch.equal(draws, resample_counts(50, 200, torch.Generator().manual_seed(4)))
    assert float(draws.mean()) == pytest.approx(1.0)


def test_resampled_losses_weigh_sequences_by_their_targets():
    sums, counts = torch.tensor([2.0, 6.0, 0.0]), torch.tensor([1.0, 3.0, 2.0])
    identity = torch.ones(1, 3, dtype=torch.float64)
    assert float(resampled_losses(sums, counts, identity)[0]) == pytest.approx(8 / 6)
    only_second = torch.tensor([[0.0, 3.0, 0.0]], dtype=torch.float64)
    assert float(resampled_losses(sums, counts, only_second)[0]) == pytest.approx(2.0)
    with pytest.raises(ValueError, match="sums"):
        resampled_losses(sums[:2], counts[:2], identity)


def test_the_interval_covers_the_mean_and_narrows_with_more_sequences():
    gen = torch.Generator().manual_seed(0)
    widths = []
    for n in (64, 1024):
        per = torch.rand(n, generator=gen, dtype=torch.float64)
        ones = torch.ones(n, dtype=torch.float64)
        lo, hi = percentile_interval(resampled_losses(per, ones, resample_counts(n)))
        assert lo < float(per.mean()) < hi
        widths.append(hi - lo)
    assert widths[1] < widths[0] / 2  # about 1 / sqrt(n): 4 times narrower
    with pytest.raises(ValueError, match="level"):
        percentile_interval(torch.zeros(3), 1.5)
    with pytest.raises(ValueError, match="n_rows"):
        resample_counts(0)
