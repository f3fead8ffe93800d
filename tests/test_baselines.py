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


# --- the family of issue 63 and the mechanism's own predictor ------------------------------------
from toymech.analysis.baselines import (  # noqa: E402
    Prediction,
    agreement,
    attention_prediction,
    attention_weights,
    copy_back_prediction,
    frequency_prediction,
    induction_prediction,
    position_prediction,
    recency_prediction,
    recency_window,
)


def _uniform(n=1024, seed=1):
    tokens = torch.randint(0, V, (n, 24), generator=torch.Generator().manual_seed(seed))
    scored = torch.ones_like(tokens, dtype=torch.bool)
    scored[:, 0] = False
    return Batch(tokens, scored)


def test_every_prediction_is_a_distribution_on_the_batch_s_targets_in_order():
    gen = torch.Generator().manual_seed(3)
    batch = RepeatedBlocks(block_len=(4, 8), offset=(0, 3), length=24).predictable(64, gen)
    rows, col = torch.nonzero(batch.target_mask, as_tuple=True)
    for p in (frequency_prediction(batch, V), position_prediction(batch, V),
              recency_prediction(batch, V, k=3), attention_prediction(batch, V),
              induction_prediction(batch, V), copy_back_prediction(batch, V, 4)):
        assert torch.equal(p.targets, batch.tokens[rows, col + 1]) and torch.equal(p.rows, rows)
        assert torch.allclose(p.log_probs.double().exp().sum(1), torch.ones(len(rows), dtype=torch.float64))
        sums, counts = p.sequence_totals()
        assert float(sums.sum() / counts.sum()) == pytest.approx(p.loss)
    # the loss functions are the predictions' losses
    assert context_frequency_loss(batch, V) == frequency_prediction(batch, V).loss
    assert position_copy_loss(batch, V) == position_prediction(batch, V).loss


def test_the_recency_copier_with_no_window_is_the_frequency_copier():
    """With no window the recency copier is the frequency copier (its smoothing searched over a
    wider range, so never worse)."""
    batch = RepeatedBlocks(block_len=5).predictable(256, torch.Generator().manual_seed(4))
    recency, frequency = recency_prediction(batch, V, k=0).loss, context_frequency_loss(batch, V)
    assert frequency - 1e-3 < recency <= frequency + 1e-9


def test_the_recency_copier_suppresses_the_rest_of_a_trained_block():
    """On 6-letter blocks the target is never among the 5 letters before it (unless the block
    repeats a letter): the fitted window is 5, and suppressing those letters leaves the target
    the likeliest seen letter; on uniform letters it gains nothing (the null)."""
    gen = torch.Generator().manual_seed(5)
    train = RepeatedBlocks(block_len=6).predictable(512, gen)
    assert recency_window(train, V) == 5
    assert recency_prediction(train, V, k=5).loss < context_frequency_loss(train, V) / 4
    null = _uniform()
    assert recency_prediction(null, V).loss > 0.98 * math.log(V)


def test_position_only_attention_copies_the_trained_distance_back():
    gen = torch.Generator().manual_seed(6)
    train = RepeatedBlocks(block_len=6).predictable(512, gen)
    weights = attention_weights(train, V)
    assert tuple(weights.shape) == (24, 24) and float(weights.triu().abs().max()) == 0.0
    for t in (6, 11, 17, 23):  # the strongest source of every predictable target: a block back
        assert (t - int(weights[t].argmax())) % 6 == 0
    assert attention_prediction(train, V, weights=weights).loss < 0.05
    # on 5-letter blocks the trained distance is wrong: no better than the frequency copier
    other = RepeatedBlocks(block_len=6).periodic(512, gen, 5)
    assert attention_prediction(other, V, weights=weights).loss > context_frequency_loss(other, V) - 0.1
    assert attention_prediction(_uniform(), V, fit_on=_uniform(seed=2)).loss > 0.98 * math.log(V)


def test_induction_copies_the_letter_after_an_earlier_copy_of_the_current_one():
    # ABCAB: after the second A comes B (what followed the first A); C and the first letters are
    # not predictable by induction (no earlier copy of the current letter): the copier's guess
    batch = _batch([[0, 1, 2, 0, 1], [3, 4, 5, 3, 4]], first_scored=4)
    p = induction_prediction(batch, 8)
    assert p.log_probs.argmax(1).tolist() == [1, 4] and p.loss < 1e-6
    gen = torch.Generator().manual_seed(7)
    for period in (3, 9):  # any block length: induction needs no trained distance
        block = RepeatedBlocks(block_len=6).periodic(1024, gen, period)
        assert induction_prediction(block, V).loss < 0.6 < context_frequency_loss(block, V) - 0.5
    assert induction_prediction(_uniform(), V).loss > 0.98 * math.log(V)


def test_copy_k_back_and_agreement():
    gen = torch.Generator().manual_seed(8)
    block = RepeatedBlocks(block_len=6).periodic(512, gen, 6)
    six, five = copy_back_prediction(block, V, 6), copy_back_prediction(block, V, 5)
    assert six.loss < 1e-6 and five.loss > 0.9 * math.log(V)
    # induction agrees except where it has no earlier copy to read, or a block repeats a letter
    assert agreement(six, induction_prediction(block, V)) > 0.75
    assert agreement(six, six) == 1.0 and agreement(five, six) < 0.1
    # a tie among the other's letters counts as a random pick among them
    one = Prediction(torch.log(torch.tensor([[0.7, 0.2, 0.1]])), torch.tensor([0]), torch.tensor([0]), 1)
    tie = Prediction(torch.log(torch.tensor([[0.5, 0.5, 0.0]])), torch.tensor([0]), torch.tensor([0]), 1)
    assert agreement(one, tie) == pytest.approx(0.5) and agreement(tie, one) == 1.0
    with pytest.raises(ValueError, match="other"):
        agreement(six, Prediction(tie.log_probs, tie.targets, tie.rows, 1))
    with pytest.raises(ValueError, match="k=0"):
        copy_back_prediction(block, V, 0)
