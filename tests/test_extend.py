"""Steps as a resumed axis: a longer constant-lr run continues the zoo's shorter run of its
setting (weights, optimizer state, data stream), and equals training it from step 0."""

import dataclasses

import pytest
import torch

from toymech.models import build_model
from toymech.studies import induction
from toymech.training import train
from toymech.zoo import Zoo


def _exp(steps, **train):
    e = induction.experiment("induction-2l", "smoke", 3)
    return dataclasses.replace(e, train=e.train.replace(steps=steps, eval_every=10, snapshots=4,
                                                        **train))


def _same(a, b):
    return all(torch.equal(p.detach().cpu(), q.detach().cpu())
               for p, q in zip(a.parameters(), b.parameters()))


def test_a_longer_run_continues_the_shorter_one_and_equals_a_fresh_run(tmp_path):
    zoo = Zoo(tmp_path / "zoo")
    short = zoo.get_or_train(_exp(20), device="cpu", progress=False, log=None)
    assert short.meta["continuable"] and (short.path / "train_state.pt").is_file()
    assert zoo.longest_continuable(_exp(40)).path == short.path and zoo.longest_continuable(_exp(40)).step == 20
    lines = []
    long = zoo.get_or_train(_exp(40), device="cpu", progress=False, log=lines.append)
    assert long.meta["continued_from"] == short.path.name and long.meta["continued_at"] == 20
    assert any("continued" in line for line in lines)
    fresh = Zoo(tmp_path / "fresh").get_or_train(_exp(40), device="cpu", progress=False,
                                                 log=None)
    assert "continued_from" not in fresh.meta
    assert _same(long.model, fresh.model)  # bit for bit on the CPU
    assert long.history[-1]["eval_loss"] == fresh.history[-1]["eval_loss"]
    assert [r["step"] for r in long.history][:2] == [10, 20]
    # the continued entry keeps the shorter run's early snapshots and adds its own later ones
    assert 0 in long.snapshot_steps and max(long.snapshot_steps) == 40
    # a still longer run continues the longest shorter one
    assert zoo.longest_continuable(_exp(60)).step == 40


def test_what_cannot_continue_trains_from_step_zero(tmp_path):
    zoo = Zoo(tmp_path)
    zoo.get_or_train(_exp(20), device="cpu", progress=False, log=None)
    assert zoo.longest_continuable(_exp(40, lr=2e-3)) is None          # another setting
    assert zoo.longest_continuable(_exp(10)) is None                   # not longer
    cos = _exp(20, schedule="cosine")
    zoo.get_or_train(cos, device="cpu", progress=False, log=None)
    assert zoo.longest_continuable(_exp(40, schedule="cosine")) is None  # its lr depends on the total
    other_seed = dataclasses.replace(_exp(40), train=_exp(40).train.replace(seed=4))
    assert zoo.longest_continuable(other_seed) is None
    e = zoo.get_or_train(_exp(40, lr=2e-3), device="cpu", progress=False, log=None)
    assert "continued_from" not in e.meta


def test_a_damaged_training_state_falls_back_to_a_fresh_run(tmp_path):
    zoo = Zoo(tmp_path)
    short = zoo.get_or_train(_exp(20), device="cpu", progress=False, log=None)
    (short.path / "train_state.pt").write_bytes(b"not a state")
    lines = []
    long = zoo.get_or_train(_exp(40), device="cpu", progress=False, log=lines.append)
    assert "continued_from" not in long.meta
    assert any("could not continue" in line and "from step 0" in line for line in lines)
    fresh = Zoo(tmp_path / "fresh").get_or_train(_exp(40), device="cpu", progress=False,
                                                 log=None)
    assert _same(long.model, fresh.model)


def test_extend_refuses_what_would_not_equal_a_fresh_run(tmp_path):
    a = _exp(20)
    a.train = a.train.replace(checkpoint_every=20)
    train(build_model(a.model), a.task, a.train, device="cpu", progress=False, log=None,
          checkpoint_dir=tmp_path)
    ckpt = tmp_path / "step_0000020"
    b = _exp(40, schedule="cosine")
    with pytest.raises(ValueError, match=r"cannot be continued.*schedule='cosine'"):
        train(build_model(b.model), b.task, b.train, device="cpu", progress=False, log=None,
              resume_from=ckpt, continue_shorter=True)
    c = _exp(40, lr=2e-3)
    with pytest.raises(ValueError, match=r"train\.lr is 0\.001 there, 0\.002 here"):
        train(build_model(c.model), c.task, c.train, device="cpu", progress=False, log=None,
              resume_from=ckpt, continue_shorter=True)
    d = _exp(40)  # without continue_shorter, another step count is refused as before
    with pytest.raises(ValueError, match=r"train\.(eval_every|snapshots|steps|checkpoint_every)"):
        train(build_model(d.model), d.task, d.train, device="cpu", progress=False, log=None,
              resume_from=ckpt)


def test_train_missing_chains_a_settings_step_counts_shortest_first(tmp_path):
    from toymech.sweep import train_missing
    from toymech.sweep.pool import _chains

    runs = [_exp(40), _exp(20), _exp(60), _exp(30, lr=2e-3), _exp(20, schedule="cosine"),
            _exp(40, schedule="cosine")]
    chains = _chains(runs)
    assert [1, 0, 2] in chains and [3] in chains and [4] in chains and [5] in chains
    assert len(chains) == 4
    zoo = Zoo(tmp_path)
    entries = train_missing(zoo, runs[:3], workers=2, start_steps=0)
    by_steps = {e.meta["train"]["steps"]: e for e in entries}
    assert "continued_from" not in by_steps[20].meta
    assert by_steps[40].meta["continued_at"] == 20 and by_steps[60].meta["continued_at"] == 40
    fresh = Zoo(tmp_path / "fresh").get_or_train(_exp(60), device="cpu", progress=False,
                                                 log=None)
    assert _same(by_steps[60].model, fresh.model)


def test_a_diverging_run_in_process_does_not_stop_the_others(tmp_path):
    from toymech.sweep import train_missing

    good = _exp(20)
    bad = _exp(20, lr=100.0)
    with pytest.raises(RuntimeError, match=r"1 of 2 runs failed; first: .*training diverged"):
        train_missing(Zoo(tmp_path), [bad, good], workers=1)
    assert Zoo(tmp_path).has(good) and not Zoo(tmp_path).has(bad)
