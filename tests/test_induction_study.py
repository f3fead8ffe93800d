import math

import pytest
import torch

from toymech.studies import induction as study
from toymech.studies.induction.design import MAIN
from toymech.studies.induction.measure import Model, mechanism_verdict

CHANCE = math.log(26)


@pytest.mark.parametrize("losses, expected", [
    ({"predictable": 0.1, "shifted": 0.2, "shorter": 0.3, "longer": 0.3}, "content-based"),
    ({"predictable": 0.1, "shifted": 0.2, "shorter": 4.0, "longer": 6.0}, "relative position"),
    ({"predictable": 0.1, "shifted": 2.6, "shorter": 5.0, "longer": 6.0}, "absolute position"),
    ({"predictable": 2.5, "shifted": 2.6, "shorter": 2.5, "longer": 2.5}, "not solved"),
])
def test_mechanism_verdict(losses, expected):
    assert mechanism_verdict(losses, CHANCE).startswith(expected)


def test_validate_rejects_bad_parameters():
    with pytest.raises(ValueError, match="size='huge'"):
        study.validate("huge", 0, "cpu")
    with pytest.raises(ValueError, match="seed=-1"):
        study.validate("smoke", -1, "cpu")
    with pytest.raises(ValueError, match="device='gpu0'"):
        study.validate("smoke", 0, "gpu0")
    assert study.validate("smoke", 0, "cpu") == torch.device("cpu")


def test_seeds_train_once_and_are_measured_per_seed(tmp_path):
    """smoke: two seeds of the post's models; the notebook's seed is the same zoo entry as a
    single run's, and each seed's numbers are its own (its own evaluation stream)."""
    from toymech.tasks import RepeatedBlocks

    dev = torch.device("cpu")
    assert study.seeds_of("smoke", 3) == (3, 4)
    # default's calibration seeds (0-2) are passed over: the judged seeds are others
    assert study.seeds_of("default", 0) == (3, 4, 5)
    assert study.seeds_of("default", 0, n_seeds=5) == (3, 4, 5, 6, 7)
    assert study.seeds_of("default", 2) == (3, 4, 5) and study.seeds_of("default", 4) == (4, 5, 6)
    runs = study.load_seeds("smoke", 3, dev, tmp_path)
    assert list(runs) == [3, 4] and set(runs[3]) == set(MAIN)
    again = study.load_models(MAIN, "smoke", 3, dev, tmp_path, progress=False)
    assert all(m.entry.loaded for m in again.values())  # the same entries: nothing retrained
    more = study.load_seeds("smoke", 3, dev, tmp_path, n_seeds=3)
    assert all(m.entry.loaded for s in (3, 4) for m in more[s].values())  # reused
    assert not any(m.entry.loaded for m in more[5].values())
    task = RepeatedBlocks()
    per_seed = study.measure_seeds(runs, task, "smoke", dev)
    assert per_seed[3]["2l.option1"] != per_seed[4]["2l.option1"]
    assert per_seed[3]["smeared.copying_heads"] + per_seed[3]["smeared.suppressing_heads"] <= 4
    assert per_seed[3]["2l.test"] == pytest.approx(
        study.measure_seed(again, study.probe_data(task, "smoke", 3, dev))["2l.test"], abs=1e-6)
    table = study.seed_table(per_seed)
    assert list(table.index) == [3, 4] and "2l-option1" in table.columns


def test_attention_view_names_its_model():
    from toymech.models import build_model
    from toymech.tasks import RepeatedBlocks

    exp = study.experiment("induction-2l", "smoke", 0)
    model, task = build_model(exp.model), RepeatedBlocks()
    tokens = task.sample(1, torch.Generator().manual_seed(0)).tokens[0]
    view = study.attention_view(model, task, tokens, name="induction-2l")
    assert view.caption == "Model: induction-2l."
    assert study.attention_view(model, task, tokens).caption is None
    with pytest.raises(ValueError, match="^name='' is not allowed"):
        study.attention_view(model, task, tokens, name="")


def test_measure_returns_a_new_model_and_leaves_its_input_as_it_was():
    import dataclasses

    from toymech.models import build_model
    from toymech.tasks import RepeatedBlocks

    exp = study.experiment("induction-2l", "smoke", 0)
    loaded = Model("induction-2l", None, module=build_model(exp.model).eval())
    sets = study.eval_sets(RepeatedBlocks(), "smoke", 0)
    [measured] = study.measure_all({"induction-2l": loaded}, sets).values()
    assert measured is not loaded and measured.model is loaded.model
    assert loaded.losses == {} and loaded.head_copy is None and loaded.paths == {}  # untouched
    assert set(study.POST_SETS) <= set(measured.losses) and "K and Q" in measured.paths
    assert measured.head_copy.shape == (2, 4) and "none" in measured.ablations
    with pytest.raises(dataclasses.FrozenInstanceError):
        measured.losses = {}
    data = study.probe_data(RepeatedBlocks(), "smoke", 0)
    assert study.measure_seed({"induction-2l": measured}, data) == study.measure_seed({"induction-2l": loaded}, data)
