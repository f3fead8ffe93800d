"""The predictors without the mechanism (toymech.analysis.baselines): each against a brute-force
reference on hand-built batches, on the repeated-block task where its answer is known, and the
null (uniform random letters: neither beats a uniform guess by more than the fit's noise)."""

from __future__ import annotations

import math

import pytest
import torch

from toymech.analysis.baselines import baseline_losses, context_frequency_loss, position_copy_loss
from toymech.tasks import Batch
from toymech.tasks.repeated_blocks import RepeatedBlocks

V = 26


def _batch(rows: list[list[int]], first_scored: int = 1) -> Batch:
    tokens = torch.tensor(rows)
    scored = torch.zeros_like(tokens, dtype=torch.bool)
    scored[:, first_scored:] = True
    return Batch(tokens, scored)


def _frequency_by_hand(batch: Batch, n_vocab: int, a: float) -> float:
    losses = []
    for row, mask in zip(batch.tokens.tolist(), batch.scored.tolist()):
        for t, (token, is_scored) in enumerate(zip(row, mask)):
            if is_scored:
                losses.append(-math.log((row[:t].count(token) + a) / (t + n_vocab * a)))
    return sum(losses) / len(losses)


def test_frequency_copier_is_the_best_smoothing_of_the_counts():
    batch = _batch([[0, 1, 0, 1, 0, 2], [3, 3, 3, 4, 3, 3], [5, 6, 7, 5, 6, 7]])
    best = context_frequency_loss(batch, 8)
    by_hand = [_frequency_by_hand(batch, 8, a) for a in (1e-3, 0.01, 0.1, 0.3, 1.0, 3.0, 100.0)]
    assert best <= min(by_hand) + 1e-9
    fine = min(_frequency_by_hand(batch, 8, a) for a in [10 ** (k / 200) for k in range(-800, 801)])
    assert abs(best - fine) < 1e-5  # the search lands on the minimum a fine grid finds


def test_position_copier_fits_a_source_and_a_hit_rate_per_position():
    # position 2 copies position 0 in 3 of 4 rows; position 1 has no useful source (1 of 4 < ... )
    batch = _batch([[1, 2, 1], [3, 4, 3], [5, 6, 5], [7, 0, 2]])
    h = 3 / 4
    pos2 = -(3 * math.log(h) + math.log((1 - h) / 7)) / 4
    pos1 = math.log(8)  # no source does better than uniform at position 1 (0 hits)
    assert position_copy_loss(batch, 8) == pytest.approx((4 * pos1 + 4 * pos2) / 8)


def test_on_repeated_blocks_each_predictor_solves_what_it_should():
    gen = torch.Generator().manual_seed(0)
    fixed = RepeatedBlocks(block_len=6).predictable(2048, gen)
    short = RepeatedBlocks(block_len=3, n_blocks=8).predictable(2048, gen)
    mixed = RepeatedBlocks(block_len=(5, 7), length=24).predictable(2048, gen)
    # the position copier copies six back: it solves the fixed block length, not a mixture
    assert position_copy_loss(fixed, V) < 0.05
    assert position_copy_loss(mixed, V) > 0.5
    # the frequency copier knows which letters occur, not where: about ln(block length), so on
    # 3-letter blocks it is below half a uniform guess (ln 26 / 2) with no induction at all
    assert context_frequency_loss(short, V) < math.log(V) / 2
    assert context_frequency_loss(fixed, V) > math.log(V) / 2
    assert context_frequency_loss(short, V) < context_frequency_loss(fixed, V)
    both = baseline_losses(mixed, V)
    assert both["best"] == min(both["copier"], both["position"])


def test_null_uniform_letters_give_neither_predictor_an_edge():
    gen = torch.Generator().manual_seed(1)
    tokens = torch.randint(0, V, (2048, 24), generator=gen)
    scored = torch.ones_like(tokens, dtype=torch.bool)
    scored[:, 0] = False
    batch = Batch(tokens, scored)
    assert position_copy_loss(batch, V) > 0.98 * math.log(V)
    assert context_frequency_loss(batch, V) > 0.98 * math.log(V)


@pytest.mark.parametrize("n_vocab", [1, 2.5, "26"])
def test_bad_vocabulary_size_is_refused_by_name(n_vocab):
    with pytest.raises(ValueError, match="n_vocab"):
        context_frequency_loss(_batch([[0, 1, 0]]), n_vocab)


def test_tokens_outside_the_vocabulary_are_refused():
    with pytest.raises(ValueError, match="batch.tokens"):
        position_copy_loss(_batch([[0, 9, 0]]), 8)


def test_fitted_on_the_training_distribution_the_position_copier_fails_other_block_lengths():
    gen = torch.Generator().manual_seed(2)
    task = RepeatedBlocks(block_len=6)
    train = task.predictable(2048, gen)
    shifted, shorter = task.periodic(2048, gen, 6, offset=3), task.periodic(2048, gen, 5)
    assert position_copy_loss(shifted, V, fit_on=train) < 0.01  # six back, whatever the start
    assert position_copy_loss(shorter, V, fit_on=train) > 0.8 * math.log(V)
    assert position_copy_loss(shorter, V) < 0.01  # the oracle fitted on the set itself solves it
    # the copier's smoothing fitted elsewhere is never better than fitted on the set itself
    assert context_frequency_loss(shorter, V, fit_on=train) >= context_frequency_loss(shorter, V) - 1e-9
    assert context_frequency_loss(train, V, fit_on=train) == pytest.approx(context_frequency_loss(train, V))
