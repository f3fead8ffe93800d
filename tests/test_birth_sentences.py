"""Birth's generated order sentence is bounded by the order claim: the seeds it counts as in the
paper's order are exactly the seeds the claim agrees on (a tie within one probe interval, or a
memory that did not rise, is never an order)."""

from __future__ import annotations

import random
import re

import pytest

from toymech.studies.birth.claims import CLAIMS
from toymech.studies.birth.over_seeds import PAPER_ORDER, _order, _order_sentence
from toymech.studies.claims import assess, by_key

TOP_DOWN = by_key(CLAIMS, "top-down")


def _seed(rng: random.Random) -> dict[str, float]:
    n = {"interval": 10.0, "chance.acc": 0.02}
    for m in ("W_O2", "W_K2", "W_K1"):
        n[f"half.{m}"] = float(rng.choice(range(0, 200, 5)))
        n[f"rise.{m}"] = rng.choice([0.05, 0.5, 0.9])
    return n


def _paper_count(sentence: str, n_seeds: int) -> int:
    if "(the paper's order)" in sentence:
        return int(re.search(r"in (\d+) of", sentence).group(1))
    return int(re.search(r"the paper's order, .*?, in (\d+)", sentence).group(1))


@pytest.mark.parametrize("trial", range(40))
def test_order_sentence_counts_what_the_claim_agrees_on(trial):
    rng = random.Random(trial)
    seeds = [_seed(rng) for _ in range(rng.choice([1, 3, 5]))]
    sentence = _order_sentence([_order(n) for n in seeds], seeds)
    assert _paper_count(sentence, len(seeds)) == assess(TOP_DOWN, seeds).agree, sentence


def test_a_tie_within_one_interval_is_not_an_order():
    n = {"interval": 50.0, "half.W_O2": 0.0, "half.W_K2": 46.25, "half.W_K1": 300.0,
         "rise.W_O2": 0.9, "rise.W_K2": 0.9, "rise.W_K1": 0.9}
    assert _order(n) == "W_O² ≈ W_K² < W_K¹"
    assert not TOP_DOWN.holds(n)


def test_a_memory_that_did_not_rise_is_named_not_ordered():
    n = {"interval": 10.0, "half.W_O2": 0.0, "half.W_K2": 100.0, "half.W_K1": 300.0,
         "rise.W_O2": 0.9, "rise.W_K2": 0.9, "rise.W_K1": 0.01}
    assert _order(n) == "W_O² < W_K² (W_K¹ did not rise)"
    assert PAPER_ORDER not in _order(n)


def test_kcomp_sentence_squares_a_small_score_with_the_probes_only_when_they_are_high():
    from toymech.models import build_model
    from toymech.studies.birth.design import experiment
    from toymech.studies.birth.tables import construction_kcomp, kcomp_summary

    exp = experiment("smoke", 0)
    model = build_model(exp.model, "cpu")
    built = construction_kcomp(model, exp.task)
    base = built - 0.04
    history = [{"step": 0, "kcomp": base, "kcomp_baseline": base},
               {"step": 100, "kcomp": base + 0.01, "kcomp_baseline": base,
                "cb_icl_acc": 0.95, "probe_wk2": 1.0}]
    formed = kcomp_summary(history, model, exp.task)
    assert "covers 25% of that way" in formed and "not because the induction key is missing" in formed
    history[-1].update(cb_icl_acc=0.05, probe_wk2=0.02)  # an untrained-looking run
    assert "missing" not in kcomp_summary(history, model, exp.task)
