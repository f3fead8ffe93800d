import math

import pytest
import torch

from toymech import tasks
from toymech.tasks import Batch, masked_accuracy, masked_cross_entropy


def test_registry_lists_and_rejects_unknown():
    assert "repeated_blocks" in tasks.names()
    with pytest.raises(ValueError, match="task='nope'.*repeated_blocks"):
        tasks.get("nope")
    with pytest.raises(ValueError, match="no parameter 'block_size'"):
        tasks.get("repeated_blocks", block_size=3)


@pytest.mark.parametrize("params, field", [
    ({"block_len": 0}, "block_len"), ({"n_blocks": 0}, "n_blocks"),
    ({"n_letters": 1}, "n_letters"), ({"n_letters": 100}, "n_letters"),
    ({"block_len": 2.5}, "block_len"),
])
def test_bad_parameters_name_field_and_value(params, field):
    with pytest.raises(ValueError, match=rf"{field}=.* is not allowed"):
        tasks.get("repeated_blocks", **params)


def test_sample_is_deterministic_under_a_generator():
    task = tasks.get("repeated_blocks")
    a = task.sample(16, torch.Generator().manual_seed(7)).tokens
    b = task.sample(16, torch.Generator().manual_seed(7)).tokens
    c = task.sample(16, torch.Generator().manual_seed(8)).tokens
    assert torch.equal(a, b) and not torch.equal(a, c)


def test_sample_structure(gen):
    task = tasks.get("repeated_blocks", n_blocks=3, block_len=5, n_letters=7)
    batch = task.sample(200, gen)
    assert batch.tokens.shape == (200, 15) and batch.tokens.dtype == torch.long
    assert batch.tokens.min() >= 0 and batch.tokens.max() < 7
    for t in batch.tokens:
        assert torch.equal(t[:5], t[5:10]) and torch.equal(t[:5], t[10:])
    assert not batch.scored[:, 0].any() and batch.scored[:, 1:].all()
    # letters are drawn uniformly: every one of the 7 letters appears
    assert set(batch.tokens.unique().tolist()) == set(range(7))


def test_loss_floor_matches_reference():
    assert tasks.get("repeated_blocks").loss_floor == pytest.approx(5 * math.log(26) / 23)
    assert round(tasks.get("repeated_blocks").loss_floor, 3) == 0.708


def test_encode_decode_round_trip():
    task = tasks.get("repeated_blocks")
    toks = task.encode("XYZRST ABCDEF")
    assert task.decode(toks) == "XYZRSTABCDEF"
    with pytest.raises(ValueError, match="text="):
        task.encode("abc")


def test_out_of_distribution_sets(gen):
    task = tasks.get("repeated_blocks")
    sets = task.eval_sets(50, gen)
    assert {"test", "doubled", "option1", "option2", "shifted", "shorter", "longer",
            "predictable"} <= set(sets)
    d = sets["doubled"].tokens
    assert torch.equal(d[:, 0::2], d[:, 1::2])  # AABBCC...
    for name, copy_of in (("option1", 0), ("option2", 6)):
        toks, scored = sets[name].tokens, sets[name].scored
        assert (toks[:, :6] != toks[:, 6:12]).any(1).all()  # two different blocks
        src = toks[:, copy_of:copy_of + 6]
        assert torch.equal(toks[:, 12:18], src) and torch.equal(toks[:, 18:], src)
        assert scored[:, 12:].all() and not scored[:, :12].any()
    s = sets["shifted"]
    assert torch.equal(s.tokens[:, 3:9], s.tokens[:, 9:15])
    assert s.scored[:, 9:].all() and not s.scored[:, :9].any()
    p = sets["shorter"]
    assert torch.equal(p.tokens[:, 5:], p.tokens[:, :-5])
    assert p.scored[:, 5:].all() and not p.scored[:, :5].any()


def test_masked_losses_on_a_known_case():
    tokens = torch.tensor([[0, 1, 2]])
    scored = torch.tensor([[False, False, True]])
    logits = torch.zeros(1, 3, 3)
    logits[0, 1, 2] = 100.0  # position 1 predicts token 2 with certainty
    batch = Batch(tokens, scored)
    assert float(masked_cross_entropy(logits, batch)) == pytest.approx(0.0, abs=1e-6)
    assert float(masked_accuracy(logits, batch)) == 1.0
    logits[0, 1, 2] = 0.0
    assert float(masked_cross_entropy(logits, batch)) == pytest.approx(math.log(3))


def test_batch_validation():
    with pytest.raises(ValueError, match="scored\\[:, 0\\]"):
        Batch(torch.zeros(1, 3, dtype=torch.long), torch.ones(1, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="shape"):
        Batch(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, 2, dtype=torch.bool))
