import json

import pytest
import torch

from toymech import experiments
from toymech.training import Experiment, Zoo


def test_experiments_registry_and_errors():
    assert {"induction-1l", "induction-1l-smeared", "induction-2l"} <= set(experiments.names())
    exp = experiments.get("induction-2l", "paper")
    assert exp.train.steps == 10_000 and exp.train.batch_size == 256
    assert exp.train.lr == 1e-3 and exp.train.weight_decay == 1.0
    with pytest.raises(ValueError, match="size='huge' is not allowed"):
        experiments.get("induction-2l", "huge")
    with pytest.raises(ValueError, match="experiment='induction-9l'"):
        experiments.get("induction-9l")
    with pytest.raises(ValueError, match="seed=True is not allowed"):
        experiments.get("induction-2l", "smoke", True)


def test_every_task_gets_a_named_experiment_without_a_study():
    from toymech import tasks
    names = experiments.names()
    for task_name in tasks.names():
        assert task_name in names
    exp = experiments.get("parentheses", "smoke", seed=3)
    assert exp.task.name == "parentheses" and exp.model.seed == 3 and exp.train.seed == 3
    assert exp.model.d_vocab == exp.task.d_vocab and exp.model.n_ctx == exp.task.seq_len


def test_experiment_round_trip_and_key():
    exp = experiments.get("induction-1l-smeared", "smoke", seed=2)
    back = Experiment.from_dict(json.loads(json.dumps(exp.to_dict())))
    assert back.key() == exp.key()
    assert experiments.get("induction-1l-smeared", "smoke", seed=3).key() != exp.key()
    assert exp.key("with-probes") != exp.key()


def test_zoo_trains_once_then_loads(tmp_path):
    zoo = Zoo(tmp_path)
    exp = experiments.get("induction-1l", "smoke")
    first = zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    assert not first.loaded and (first.path / "model.safetensors").is_file()
    second = zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    assert second.loaded and second.history == first.history
    tokens = exp.task.sample(4, torch.Generator().manual_seed(0)).tokens
    assert torch.equal(first.model(tokens), second.model(tokens))
    [entry] = zoo.entries()
    assert entry["name"] == "induction-1l" and entry["history"][-1]["step"] == exp.train.steps
    # nothing else (temporary folders) is left in the cache
    assert [p.name for p in tmp_path.iterdir()] == [first.path.name]


def test_zoo_location_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("TOYMECH_CACHE", str(tmp_path / "elsewhere"))
    assert Zoo().root == tmp_path / "elsewhere"
