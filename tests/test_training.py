import json

import pytest
import torch

from toymech import tasks
from toymech.training import checkpoints
from toymech.models import ModelConfig, build_model
from toymech.training import TrainConfig, latest_checkpoint, lr_factor, train

TASK = tasks.get("repeated_blocks")
SMALL = ModelConfig(n_layers=2, d_vocab=26, n_ctx=24)


def _train(cfg: TrainConfig, **kw):
    return train(build_model(SMALL), TASK, cfg, device="cpu", progress=False, log=None, **kw)


def test_short_cpu_run_learns():
    # Uniform guessing costs ln 26 = 3.26 nats and the best context-free rule ("never repeat the
    # current letter") ln 25 = 3.22: a loss below 3.0 after 300 steps means the repeats are used.
    result = _train(TrainConfig(steps=300, batch_size=64, eval_every=100, eval_size=256))
    first, last = result.history[0]["eval_loss"], result.history[-1]["eval_loss"]
    assert last < first - 0.1 and last < 3.0, (first, last)
    assert [r["step"] for r in result.history] == [100, 200, 300]


def test_training_is_bit_for_bit_repeatable_on_cpu():
    cfg = TrainConfig(steps=30, batch_size=32, eval_every=10, eval_size=64)
    a, b = _train(cfg), _train(cfg)
    assert a.history == b.history
    for (n, p), (_, q) in zip(a.model.named_parameters(), b.model.named_parameters()):
        assert torch.equal(p, q), n


def test_resume_from_a_checkpoint_equals_an_uninterrupted_run(tmp_path):
    cfg = TrainConfig(steps=40, batch_size=32, eval_every=10, eval_size=64, checkpoint_every=20,
                      schedule="cosine", warmup_steps=5)
    full = _train(cfg)
    _train(cfg, checkpoint_dir=tmp_path)
    ckpt = tmp_path / "step_0000020"
    assert ckpt.is_dir() and latest_checkpoint(tmp_path).name == "step_0000040"
    resumed = _train(cfg, resume_from=ckpt)
    assert resumed.history == full.history
    for (n, p), (_, q) in zip(full.model.named_parameters(), resumed.model.named_parameters()):
        assert torch.equal(p, q), n


def test_resume_refuses_a_mismatched_checkpoint(tmp_path):
    cfg = TrainConfig(steps=20, batch_size=16, eval_every=10, eval_size=32, checkpoint_every=10)
    _train(cfg, checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match=r"train\.lr is 0\.001 there, 0\.002 here"):
        _train(cfg.replace(lr=2e-3), resume_from=tmp_path / "step_0000010")
    other = build_model(SMALL.replace(d_model=16))
    with pytest.raises(ValueError, match="model.d_"):
        train(other, TASK, cfg, device="cpu", progress=False, log=None,
              resume_from=tmp_path / "step_0000010")


def test_checkpoint_round_trip(tmp_path):
    model = build_model(ModelConfig(n_layers=1, smear_keys=True, seed=5))
    with torch.no_grad():
        model.blocks[0].attn.smear_logit.add_(0.5)  # a trained value, not the init
    path = checkpoints.save_model(tmp_path / "m", model, {"note": "x"})
    loaded, meta = checkpoints.load_model(path)
    assert meta["note"] == "x" and meta["model"]["smear_keys"] is True
    json.loads((path / "config.json").read_text())  # plain JSON, no pickles
    tokens = TASK.sample(4, torch.Generator().manual_seed(0)).tokens
    assert torch.equal(model(tokens), loaded(tokens))


def test_interrupted_write_leaves_no_checkpoint(tmp_path):
    def explode(path):
        path.write_text("partial")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        checkpoints.write_folder_atomically(tmp_path / "ckpt", {"a.json": lambda p: p.write_text("{}"),
                                                                "b.bin": explode})
    assert list(tmp_path.iterdir()) == []
    # an existing checkpoint survives a failed overwrite untouched
    checkpoints.write_folder_atomically(tmp_path / "ckpt", {"a.json": lambda p: p.write_text("1")})
    with pytest.raises(KeyboardInterrupt):
        checkpoints.write_folder_atomically(tmp_path / "ckpt", {"b.bin": explode})
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt"]
    assert (tmp_path / "ckpt" / "a.json").read_text() == "1"


def test_loading_a_mismatched_checkpoint_raises(tmp_path):
    path = checkpoints.save_model(tmp_path / "m", build_model(SMALL), {})
    meta = json.loads((path / "config.json").read_text())
    meta["model"]["d_model"] = 16
    (path / "config.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="does not match the model"):
        checkpoints.load_model(path)
    with pytest.raises(ValueError, match="not a toymech checkpoint"):
        checkpoints.load_model(tmp_path)


def test_freezing_keeps_frozen_tensors_bit_identical():
    model = build_model(SMALL)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    cfg = TrainConfig(steps=5, batch_size=16, eval_every=5, eval_size=32,
                      freeze=("embed.W_E", "blocks.0.attn.*"))
    result = train(model, TASK, cfg, device="cpu", progress=False, log=None)
    after = dict(result.model.named_parameters())
    for name in ("embed.W_E", "blocks.0.attn.W_Q", "blocks.0.attn.W_O"):
        assert torch.equal(before[name], after[name]), name
    assert not torch.equal(before["blocks.1.attn.W_Q"], after["blocks.1.attn.W_Q"])
    assert result.trainable == 9_856 - 26 * 32 - 4 * 4 * 32 * 8


def test_bad_train_config_and_freeze_patterns():
    with pytest.raises(ValueError, match="optimizer='lion'"):
        TrainConfig(optimizer="lion")
    with pytest.raises(ValueError, match="checkpoint_every=15"):
        TrainConfig(eval_every=10, checkpoint_every=15)
    with pytest.raises(ValueError, match="freeze='blocks.9.\\*'"):
        _train(TrainConfig(steps=1, freeze=("blocks.9.*",)))
    with pytest.raises(ValueError, match="task.seq_len=24"):
        train(build_model(SMALL.replace(n_ctx=12)), TASK, TrainConfig(steps=1), device="cpu",
              progress=False, log=None)
    with pytest.raises(ValueError, match="device='tpu'"):
        _train(TrainConfig(steps=1)) if False else train(build_model(SMALL), TASK,
                                                        TrainConfig(steps=1), device="tpu")


def test_warmup_and_cosine_schedule():
    cfg = TrainConfig(steps=100, warmup_steps=10, schedule="cosine")
    assert lr_factor(0, cfg) == pytest.approx(0.1)
    assert lr_factor(9, cfg) == pytest.approx(1.0)
    assert lr_factor(55, cfg) == pytest.approx(0.5)
    assert lr_factor(100, cfg) == pytest.approx(0.0, abs=1e-9)


def test_train_from_keeps_a_parameter_fixed_until_its_step():
    model = build_model(SMALL)
    w0 = model.blocks[0].attn.W_K.detach().clone()
    cfg = TrainConfig(steps=6, batch_size=16, eval_every=3, eval_size=32,
                      train_from=(("blocks.0.attn.W_K", 3),))
    seen = []
    train(model, TASK, cfg, device="cpu", progress=False, log=None,
          callbacks=[lambda step, m: seen.append(
              torch.equal(m.blocks[0].attn.W_K, w0)) or {}])
    assert seen == [True, False]  # unchanged after 3 steps, trained by step 6
    assert TrainConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ValueError, match="train_from='nope'"):
        _train(TrainConfig(steps=1, train_from=(("nope", 2),)))


@pytest.mark.parametrize("name", ["induction-1l-smeared", "induction-2l", "birth-simplified"])
def test_stacked_seeds_match_separate_runs(name):
    """train_stacked is the loop of single runs as one program: same weights and histories."""
    from toymech import experiments
    from toymech.training import train_stacked

    exps = [experiments.get(name, "smoke", seed=s) for s in (0, 1, 2)]
    for e in exps:
        e.train = e.train.replace(steps=12, eval_every=4, grad_clip=1.0)
    single = [train(build_model(e.model), e.task, e.train, device="cpu", progress=False,
                    log=None) for e in exps]
    stacked = train_stacked([build_model(e.model) for e in exps], exps[0].task,
                            [e.train for e in exps], device="cpu", progress=False, log=None)
    for a, b in zip(single, stacked):
        assert [r["step"] for r in a.history] == [r["step"] for r in b.history]
        for ra, rb in zip(a.history, b.history):
            assert ra["eval_loss"] == pytest.approx(rb["eval_loss"], abs=1e-4)
        for (na, pa), (nb, pb) in zip(a.model.named_parameters(), b.model.named_parameters()):
            assert na == nb and torch.allclose(pa, pb, atol=1e-4), na
    assert not torch.allclose(stacked[0].model.W_E, stacked[1].model.W_E)


def test_stacked_refuses_configs_that_differ_beyond_the_seed():
    from toymech.training import train_stacked

    cfg = TrainConfig(steps=2, batch_size=4, eval_every=1, eval_size=4)
    with pytest.raises(ValueError, match="differ only in their seeds"):
        train_stacked([build_model(SMALL), build_model(SMALL)], TASK,
                      [cfg, cfg.replace(lr=1e-2)], device="cpu", progress=False, log=None)


def test_divergence_stops_training_with_a_clear_error():
    cfg = TrainConfig(steps=20, batch_size=8, eval_every=5, eval_size=8, lr=100.0)
    model = build_model(ModelConfig(n_layers=1, d_vocab=26, n_ctx=24, init_range=1e3))
    with pytest.raises(ValueError, match=r"training diverged: train_loss=.* at step \d+.*lr=100"):
        train(model, TASK, cfg, device="cpu", progress=False, log=None)
