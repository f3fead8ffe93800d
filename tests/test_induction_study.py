import math

import pytest
import torch

from toymech.studies import induction as study

CHANCE = math.log(26)


@pytest.mark.parametrize("losses, expected", [
    ({"predictable": 0.1, "shifted": 0.2, "period5": 0.3, "period7": 0.3}, "content-based"),
    ({"predictable": 0.1, "shifted": 0.2, "period5": 4.0, "period7": 6.0}, "relative position"),
    ({"predictable": 0.1, "shifted": 2.6, "period5": 5.0, "period7": 6.0}, "absolute position"),
    ({"predictable": 2.5, "shifted": 2.6, "period5": 2.5, "period7": 2.5}, "not solved"),
])
def test_mechanism_verdict(losses, expected):
    assert study.mechanism_verdict(losses, CHANCE).startswith(expected)


def test_validate_rejects_bad_parameters():
    with pytest.raises(ValueError, match="size='huge'"):
        study.validate("huge", 0, "cpu")
    with pytest.raises(ValueError, match="seed=-1"):
        study.validate("smoke", -1, "cpu")
    with pytest.raises(ValueError, match="device='gpu0'"):
        study.validate("smoke", 0, "gpu0")
    assert study.validate("smoke", 0, "cpu") == torch.device("cpu")


# One seed's numbers as the post reports them (a seed that agrees with every claim) ...
POST_LIKE = {
    "1l.test": 2.6, "smeared.test": 1.24, "2l.test": 1.40,
    "smeared.doubled": 2.31, "2l.doubled": 2.31,
    "smeared.option1": 0.99, "smeared.option2": 0.73, "2l.option1": 0.73, "2l.option2": 6.42,
    "2l.direct_copy": -1.0, "2l.last_layer_copy_max": 0.9,
    "2l.kcomp_max": 0.4, "2l.kcomp_baseline": 0.1,
}
# ... and one that disagrees with every claim.
CONTRARY = {
    "1l.test": 0.8, "smeared.test": 2.0, "2l.test": 0.72,
    "smeared.doubled": 1.0, "2l.doubled": 0.5,
    "smeared.option1": 0.5, "smeared.option2": 3.0, "2l.option1": 3.35, "2l.option2": 0.71,
    "2l.direct_copy": 0.2, "2l.last_layer_copy_max": 0.1,
    "2l.kcomp_max": 0.15, "2l.kcomp_baseline": 0.1,
}


@pytest.mark.parametrize("claim", study.CLAIMS, ids=lambda c: c.key)
def test_each_claim_holds_and_fails_on_synthetic_numbers(claim):
    assert claim.holds(POST_LIKE) is True
    assert claim.holds(CONTRARY) is False
    assert isinstance(claim.value(POST_LIKE), float)


def test_scorecard_counts_seeds():
    card = study.scorecard([POST_LIKE, POST_LIKE, CONTRARY])
    assert len(card) == len(study.CLAIMS)
    assert set(card["seeds agreeing"]) == {"2/3"} and set(card["verdict"]) == {"mixed"}
    card = study.scorecard([POST_LIKE] * 5)
    assert set(card["verdict"]) == {"reproduced"}
    card = study.scorecard([{}])  # nothing measured
    assert set(card["verdict"]) == {"not measured"}


def test_two_seeds_give_different_evaluation_batches():
    task = study.experiment("induction-2l", "smoke").task
    a = study.eval_sets(task, "smoke", 0, torch.device("cpu"))
    b = study.eval_sets(task, "smoke", 1, torch.device("cpu"))
    assert set(a) == set(b)
    for name in a:
        assert not torch.equal(a[name].tokens, b[name].tokens), name
    again = study.eval_sets(task, "smoke", 0, torch.device("cpu"))
    assert torch.equal(a["test"].tokens, again["test"].tokens)


def _seed_numbers(two_option1, smeared_option2, suppressing):
    """Synthetic per-seed numbers: which option each model prefers and the smeared head counts."""
    return {"1l.test": 2.6, "smeared.test": 1.3, "2l.test": 1.5,
            "2l.option1": 0.7 if two_option1 else 6.0, "2l.option2": 6.0 if two_option1 else 0.7,
            "smeared.option1": 1.3 if smeared_option2 else 0.8,
            "smeared.option2": 0.8 if smeared_option2 else 1.3,
            "smeared.copying_heads": 4.0 - suppressing, "smeared.suppressing_heads": float(suppressing),
            "smeared.heads": 4.0, "2l.copying_heads": 4.0, "2l.suppressing_heads": 4.0,
            "2l.direct_copy": -0.99}


def test_agreement_lines_and_seed_table_count_seeds_from_the_numbers():
    per_seed = {0: _seed_numbers(True, True, 2), 1: _seed_numbers(True, False, 0),
                2: _seed_numbers(False, True, 1)}
    lines = study.agreement_lines(per_seed)
    assert lines[0] == "2-layer prefers option 1 (copy the first block) in 2/3 seeds"
    assert lines[1] == "1-layer smeared prefers option 2 (copy the most recent block) in 2/3 seeds"
    assert lines[2] == "the post's disagreement (both at once) in 1/3 seeds"
    assert "per seed: 2, 0, 1 (of 4 heads)" in lines[3]
    assert lines[4].endswith("in 3/3 seeds")
    table = study.seed_table(per_seed)
    assert list(table.index) == [0, 1, 2]
    assert list(table["2l prefers"]) == ["option 1", "option 1", "option 2"]
    assert list(table["smeared heads copy/suppress"]) == ["2/2", "4/0", "3/1"]
    card = study.scorecard(list(per_seed.values()))
    row = card.loc[next(c.statement for c in study.CLAIMS if c.key == "2l-option1")]
    assert row["seeds agreeing"] == "2/3" and row["verdict"] == "mixed"


def test_seeds_train_once_and_are_measured_per_seed(tmp_path):
    """smoke: two seeds of the post's models; the notebook's seed is the same zoo entry as a
    single run's, and each seed's numbers are its own."""
    from toymech.tasks import RepeatedBlocks

    dev = torch.device("cpu")
    assert study.seeds_of("smoke", 3) == (3, 4) and len(study.seeds_of("default", 0)) >= 5
    runs = study.load_seeds("smoke", 3, dev, tmp_path)
    assert list(runs) == [3, 4] and set(runs[3]) == set(study.MAIN)
    again = study.load_models(study.MAIN, "smoke", 3, dev, tmp_path, progress=False)
    assert all(m.entry.loaded for m in again.values())  # the same entries: nothing retrained
    sets = study.eval_sets(RepeatedBlocks(), "smoke", 3, dev)
    per_seed = study.measure_seeds(runs, sets)
    assert per_seed[3]["2l.option1"] != per_seed[4]["2l.option1"]
    assert per_seed[3]["smeared.heads"] == 4.0
    assert per_seed[3]["2l.test"] == pytest.approx(
        float(study.measure_claims(again, sets)["2l.test"]), abs=1e-6)
