import json

import pytest
import torch

from toymech import experiments
from toymech.training import Experiment
from toymech.zoo import Zoo


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


# --------------------------------------------------------------------------------------------
# where the time went: zoo_stats
# --------------------------------------------------------------------------------------------


def test_zoo_stats_count_what_this_process_trained_and_loaded(tmp_path):
    from toymech.zoo import add_zoo_stats, reset_zoo_stats, zoo_stats

    reset_zoo_stats()
    zoo = Zoo(tmp_path)
    exp = experiments.get("induction-1l", "smoke")
    first = zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    zoo.load(exp, "cpu", log=None)
    stats = zoo_stats()
    # trained here: reading it back again is not a model read from the zoo
    assert (stats["trained"], stats["loaded"]) == (1, 0)
    assert stats["train_seconds"] == pytest.approx(first.meta["seconds"])
    other = experiments.get("induction-1l", "smoke", 1)
    zoo.get_or_train(other, device="cpu", progress=False, log=None)
    reset_zoo_stats()  # a later process: both entries are read from the zoo
    zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    zoo.load(other, "cpu", log=None)
    stats = zoo_stats()
    assert (stats["trained"], stats["loaded"]) == (0, 2)
    add_zoo_stats(trained=2, loaded=1, train_seconds=1.5)  # what a sweep's Ray workers did
    assert zoo_stats() == {"trained": 2, "loaded": 3, "train_seconds": pytest.approx(stats["train_seconds"] + 1.5)}
    with pytest.raises(ValueError, match="trained=-1"):
        add_zoo_stats(trained=-1)
    with pytest.raises(ValueError, match="train_seconds=nan"):
        add_zoo_stats(train_seconds=float("nan"))
    assert reset_zoo_stats()["trained"] == 2 and zoo_stats()["trained"] == 0


def test_a_sweep_adds_the_trials_its_ray_workers_ran(tmp_path, monkeypatch):
    """The Ray runner's trials ran in other processes: the sweep adds them from its results (a
    stand-in runner answers like Ray would, without starting it); the in-process runner's
    trials are counted by the zoo itself, once."""
    from toymech.sweep import backends as runner_module
    from toymech.zoo import reset_zoo_stats, zoo_stats

    class FakeRay(runner_module.LocalRunner):
        name, remote = "ray", True

        def __init__(self, *args, **kwargs):
            super().__init__()

        def wait(self):
            job, args, kwargs = self.queue.pop(0)
            before = zoo_stats()
            out = runner_module.run_job(*args, **kwargs)
            reset_zoo_stats()  # as if it had run elsewhere: forget what this process counted
            from toymech.zoo import add_zoo_stats
            add_zoo_stats(before["trained"], before["loaded"], before["train_seconds"])
            return [(job, out)]

    monkeypatch.setattr(runner_module, "RayRunner", FakeRay)
    grid = {"experiment": "modular_addition", "size": "smoke", "seed": [0, 1],
            "overrides": {"train.steps": [2]}}
    from toymech.grid import run_sweep

    reset_zoo_stats()
    result = run_sweep(grid, cache_dir=tmp_path, backend="ray", device="cpu", progress=False, log=None)
    stats = zoo_stats()
    assert result.count("ok") == 2 and stats["trained"] == 2 and stats["loaded"] == 0
    assert stats["train_seconds"] == pytest.approx(result.table["seconds"].sum())
    reset_zoo_stats()
    again = run_sweep(grid, cache_dir=tmp_path, backend="local", progress=False, log=None)
    assert again.loaded == 2 and zoo_stats() == {"trained": 0, "loaded": 2, "train_seconds": 0.0}


# --------------------------------------------------------------------------------------------
# the preflight, divergence, lock timeouts
# --------------------------------------------------------------------------------------------


def test_parameter_estimate_matches_the_built_models():
    from toymech.models import build_model
    from toymech.models.config import parameter_estimate

    for name in experiments.names():
        exp = experiments.get(name, "smoke")
        real = sum(p.numel() for p in build_model(exp.model).parameters())
        est = parameter_estimate(exp.model)
        # exact up to a few extras; the Birth variant drops matrices: an over-estimate is safe
        assert est >= 0.98 * real, (name, est, real)
        if not exp.model.to_dict().get("variant"):
            assert est <= 1.02 * real, (name, est, real)


def test_preflight_builds_once_and_states_its_limit(monkeypatch):
    from toymech.training import memory_limit, preflight

    exp = experiments.get("induction-1l", "smoke")
    plan = preflight(exp, "cpu")
    assert plan.model is not None and plan.parameters == sum(p.numel() for p in plan.model.parameters())
    assert 0 < plan.total < plan.limit and set(plan.memory) >= {"activations", "buffers"}
    monkeypatch.setenv("TOYMECH_MEMORY_LIMIT_GB", "0.001")
    assert memory_limit("cpu") == (10**6, "TOYMECH_MEMORY_LIMIT_GB")
    with pytest.raises(ValueError, match=r"memory limit of 0.001 GB \(TOYMECH_MEMORY_LIMIT_GB\)"):
        preflight(exp, "cpu")


def test_a_run_far_above_chance_is_diverged_and_stores_nothing(tmp_path):
    from toymech.training import TrainingDiverged

    exp = experiments.get("induction-1l", "smoke")
    d = exp.to_dict()
    d["model"].update(init="transformer_lens", init_range=1e3)
    bad = Experiment.from_dict(d)
    with pytest.raises(TrainingDiverged, match=r"training diverged: train_loss=.* above 1000 nats"):
        Zoo(tmp_path / "zoo").get_or_train(bad, device="cpu", progress=False, log=None)
    assert not (tmp_path / "zoo").exists()  # the folder the run's lock made is gone again


def test_lock_waits_end_and_name_the_holder(tmp_path, capsys):
    import json as _json
    import os

    from toymech.devices import HOST, process_start
    from toymech.zoo import LockTimeout
    from toymech.zoo.locks import EntryLock

    held = EntryLock(tmp_path, "entry")
    assert held.try_acquire()
    waiter = EntryLock(tmp_path, "entry", timeout=0.5, poll_s=0.05)
    with pytest.raises(LockTimeout, match=rf"locked by pid {os.getpid()} .*waited 0.5 s"):
        waiter.acquire()
    assert "waiting for the writer of zoo entry entry" in capsys.readouterr().err  # no log: stderr
    held.release()
    # no start time recorded (a lock written elsewhere): stale once older than the timeout
    lock = tmp_path / ".entry.lock"
    lock.write_text(_json.dumps({"pid": 1, "host": HOST}))
    assert not EntryLock(tmp_path, "entry", timeout=3600).try_acquire()
    os.utime(lock, (0, 0))
    assert EntryLock(tmp_path, "entry", timeout=3600).try_acquire()
    # a pid reused by another process (its start time differs) is stale at once
    lock.write_text(_json.dumps({"pid": os.getpid(), "host": HOST, "start": "1"}))
    assert process_start(os.getpid()) != "1" and EntryLock(tmp_path, "entry").try_acquire()
