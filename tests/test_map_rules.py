"""The rules every map is judged by (fast, nothing trained): the exact interval of a share and the
exact tests that compare shares, against values computed by hand; the one state order; the map's
budget; a prediction judged pair by pair (outcomes, the stratified p, the three-word verdict)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from toymech.analysis.exact import fisher_greater, interval_text, share_interval, stratified_greater
from toymech.maps import summary
from toymech.studies import predictions as pr
from toymech.studies.states import (
    BUDGET_EXHAUSTED,
    LEARNED,
    STILL_LEARNING,
    UNDECIDED,
    UNTRAINED,
    state_of,
)

# ------------------------------------------------------------------------------------------------
# exact intervals and tests
# ------------------------------------------------------------------------------------------------

def test_share_interval_matches_the_clopper_pearson_values():
    # k = n and k = 0 have closed forms: lo = (alpha/2)^(1/n), hi = 1 - (alpha/2)^(1/n)
    assert share_interval(3, 3) == pytest.approx((0.025 ** (1 / 3), 1.0))
    assert share_interval(0, 3) == pytest.approx((0.0, 1 - 0.025 ** (1 / 3)))
    assert interval_text(3, 3) == "[0.29, 1.00]"
    assert interval_text(3, 12) == "[0.05, 0.57]"
    # 1 of 2: symmetric, lo solves 1 - (1 - p)^2 = 0.025
    assert share_interval(1, 2) == pytest.approx((1 - math.sqrt(0.975), math.sqrt(0.975)))
    lo, hi = share_interval(50, 100)
    assert lo == pytest.approx(0.3983, abs=1e-4) and hi == pytest.approx(0.6017, abs=1e-4)
    lo, hi = share_interval(2000, 2048)  # thousands of answers: no overflow
    assert lo < 2000 / 2048 < hi and hi - lo < 0.02


def test_share_interval_refuses_what_is_not_a_count():
    with pytest.raises(ValueError, match="n=0"):
        share_interval(0, 0)
    with pytest.raises(ValueError, match="k=4"):
        share_interval(4, 3)
    with pytest.raises(ValueError, match="level"):
        share_interval(1, 3, level=1.0)


def test_fisher_and_the_stratified_test_against_hand_counts():
    # 3 of 3 vs 0 of 2: the one table as extreme of C(5, 3) = 10 equally likely
    assert fisher_greater(3, 3, 0, 2) == pytest.approx(1 / 10)
    # 3 of 12 vs 0 of 3: P(all 3 successes in the 12) = C(12, 3) / C(15, 3)
    assert fisher_greater(3, 12, 0, 3) == pytest.approx(220 / 455)
    assert fisher_greater(0, 3, 0, 3) == 1.0 == fisher_greater(3, 3, 3, 3)  # ties: no evidence
    assert fisher_greater(0, 3, 3, 3) == 1.0  # against: the upper tail from 0 is everything
    # the Kawata pairs: two in the direction, two ties; the ties add a constant
    pairs = [(3, 3, 0, 2), (3, 12, 0, 3), (0, 3, 0, 3), (3, 3, 3, 3)]
    assert stratified_greater(pairs) == pytest.approx(1 / 10 * 220 / 455)
    assert round(stratified_greater(pairs), 3) == 0.048
    # one stratum is Fisher's test
    assert stratified_greater([(2, 3, 0, 3)]) == pytest.approx(fisher_greater(2, 3, 0, 3))
    with pytest.raises(ValueError, match="pair"):
        stratified_greater([(1, 2, 3)])


# ------------------------------------------------------------------------------------------------
# states: one order, the map's budget
# ------------------------------------------------------------------------------------------------

def test_state_order_is_one_rule():
    assert state_of(learned=True, learning=False) == LEARNED
    assert state_of(learned=False, learning=True) == STILL_LEARNING  # on its way: continue it
    assert state_of(learned=False, learning=False) == UNTRAINED
    assert state_of(learned=False, learning=None) == UNTRAINED  # its level says it, log or not
    assert state_of(learned=True, learning=None) == STILL_LEARNING  # not seen to stop: no label
    assert state_of(learned=True, learning=False, decided=False) == UNDECIDED
    assert state_of(learned=True, learning=True, decided=False) == STILL_LEARNING


def test_budget_state_is_the_map_s():
    assert summary.budget_state(STILL_LEARNING, 4000, None) == BUDGET_EXHAUSTED
    assert summary.budget_state(STILL_LEARNING, 16000, 16000) == BUDGET_EXHAUSTED
    assert summary.budget_state(STILL_LEARNING, 8000, 16000) == STILL_LEARNING  # continued
    assert summary.budget_state(LEARNED, 8000, None) == LEARNED


def test_undecided_and_budget_exhausted_count_in_the_denominator_and_hold_no_label():
    table = pd.DataFrame([{"experiment": "induction-2l", "knob.block_len": "6", "seed": s,
                           "status": "ok", "state": st, "label": lab}
                          for s, st, lab in [(3, LEARNED, "content"), (4, UNDECIDED, ""),
                                             (5, BUDGET_EXHAUSTED, ""),
                                             (6, UNDECIDED, "content")]])
    cell, = summary.cell_groups(table)
    assert cell.n == 4 and cell.held("content") == 1
    assert cell.states() == {UNDECIDED: 2, BUDGET_EXHAUSTED: 1}
    assert cell.share_text("content") == f"1 of 4 {interval_text(1, 4)}"
    row = summary.cells(table).iloc[0]
    assert row["share content"] == 0.25 and row["runs undecided"] == 2
    assert (row["low content"], row["high content"]) == pytest.approx(share_interval(1, 4))
    assert "1 of 4 [0.01, 0.81]" in summary.finding(table, "content")


# ------------------------------------------------------------------------------------------------
# predictions judged pair by pair
# ------------------------------------------------------------------------------------------------

def _pair(k1, n1, k2, n2, conjunct="c"):
    return pr.Pair(conjunct, "content", "a", k1, n1, "b", k2, n2)


def test_pair_outcomes_name_their_ties():
    assert _pair(3, 3, 0, 2).outcome == pr.IN_DIRECTION
    assert _pair(0, 3, 0, 3).outcome == pr.TIE_FLOOR
    assert _pair(3, 3, 2, 2).outcome == pr.TIE_CEILING
    assert _pair(1, 3, 2, 6).outcome == pr.TIE  # equal shares, in between
    assert _pair(1, 3, 2, 3).outcome == pr.AGAINST
    assert _pair(3, 3, 0, 2).p == pytest.approx(0.1)
    with pytest.raises(ValueError, match="runs"):
        _pair(0, 0, 0, 3)


def test_the_verdict_is_three_words():
    assert pr.Judgement((_pair(3, 3, 0, 2), _pair(0, 3, 0, 3))).verdict == pr.CONSISTENT
    assert pr.Judgement((_pair(0, 3, 2, 3),)).verdict == pr.AGAINST_VERDICT
    assert pr.Judgement((_pair(3, 3, 0, 2), _pair(0, 3, 2, 3))).verdict == pr.UNDECIDED
    assert pr.Judgement((_pair(0, 3, 0, 3), _pair(3, 3, 3, 3))).verdict == pr.UNDECIDED  # ties
    assert pr.Judgement(note="no cells").verdict == pr.UNJUDGED
    two = pr.Judgement((_pair(3, 3, 0, 2, "x"), _pair(3, 12, 0, 3, "x"), _pair(1, 1, 0, 1, "y")))
    assert two.p("x") == pytest.approx(1 / 10 * 220 / 455) and two.p("y") == pytest.approx(0.5)
    assert two.counts.startswith("x: 2 pairs (2 in the predicted direction), stratified")
