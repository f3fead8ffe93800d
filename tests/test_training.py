import json

import pytest
import torch

from toymech import tasks
from toymech.models import ModelConfig, build_model
from toymech.training import TrainConfig, checkpoints, latest_checkpoint, lr_factor, train

TASK = tasks.get("repeated_blocks")
SMALL = ModelConfig(n_layers=2, d_vocab=26, n_ctx=24)


def _train(cfg: TrainConfig, **kw):
    return train(build_model(SMALL), TASK, cfg, device="cpu", progress=False, log=None, **kw)


def _timeless(history):
    """A history without ``cpu_seconds``, the one key that two identical runs do not share."""
    assert all(r["cpu_seconds"] > 0 for r in history)
    return [{k: v for k, v in r.items() if k != "cpu_seconds"} for r in history]


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
    assert _timeless(a.history) == _timeless(b.history)
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
    assert _timeless(resumed.history) == _timeless(full.history)
    # the resumed run's CPU time goes on from the checkpoint's: it never falls
    cpu = [r["cpu_seconds"] for r in resumed.history]
    assert cpu == sorted(cpu) and resumed.cpu_seconds >= cpu[-1]
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


# --- the logged evaluation and the stop rule ----------------------------------------------------
MODADD = tasks.get("modular_addition", p=13)


def _gpt(task, width=16, seed=0):
    from toymech.studies.random_transformers.design import model_config
    return build_model(model_config(task, width, seed))


def _modadd_cfg(**kw):
    base = dict(steps=6, batch_size=32, eval_every=3, eval_size=512, lr=1e-3, weight_decay=0.0)
    return TrainConfig(**{**base, **kw})


def test_logged_accuracy_is_on_held_out_pairs_where_a_split_exists():
    """eval_* of modular addition are the held-out pairs' metrics, train_* the training pairs':
    recomputed here from the trained model on each part of the split."""
    from toymech.training import evaluate

    result = train(_gpt(MODADD), MODADD, _modadd_cfg(), device="cpu", progress=False, log=None)
    assert result.held_out
    last = result.history[-1]
    train_idx, test_idx = MODADD.split
    held = evaluate(result.model, MODADD, MODADD.pairs_to_batch(test_idx))
    assert last["eval_acc"] == pytest.approx(held["acc"])
    assert last["eval_loss"] == pytest.approx(held["loss"], rel=1e-5)
    # a model that knows the training pairs by heart: eval_acc must not see them
    class Lookup(torch.nn.Module):
        def __init__(self, known):
            super().__init__()
            self.known = known
            self.w = torch.nn.Parameter(torch.zeros(1))
            self.cfg = result.model.cfg

        def forward(self, tokens):
            logits = torch.zeros(len(tokens), 3, MODADD.d_vocab)
            idx = tokens[:, 0] * 13 + tokens[:, 1]
            hit = torch.isin(idx, self.known)
            answer = (tokens[:, 0] + tokens[:, 1]) % 13
            logits[hit, 1, answer[hit]] = 10.0
            logits[~hit, 1, (answer[~hit] + 1) % 13] = 10.0  # wrong where it does not know
            return logits
    from toymech.training.evaluation import LoggedEval
    logged = LoggedEval.for_run(MODADD, _modadd_cfg(), torch.device("cpu"))
    row = logged.row(Lookup(train_idx), MODADD)
    assert row["train_acc"] == 1.0 and row["eval_acc"] == 0.0
    row = logged.row(Lookup(test_idx), MODADD)
    assert row["eval_acc"] == 1.0 and row["train_acc"] == 0.0


def test_tasks_without_a_split_log_what_they_always_logged():
    result = _train(TrainConfig(steps=4, batch_size=8, eval_every=2, eval_size=16))
    assert not result.held_out
    assert not any(k.startswith("train_") and k != "train_loss" for k in result.history[-1])


def test_stop_rule_stops_at_the_first_passing_evaluation_and_records_the_step():
    cfg = _modadd_cfg(steps=12, eval_every=2, stop_metric="train_loss", stop_value=100.0)
    result = train(_gpt(MODADD), MODADD, cfg, device="cpu", progress=False, log=None)
    assert [r["step"] for r in result.history] == [2] and result.stop_step == 2
    assert result.history[-1]["stop_step"] == 2
    # the same run without a stop rule: its first two steps are the stopped run's whole run
    full = train(_gpt(MODADD), MODADD, cfg.replace(stop_metric=None, stop_value=None),
                 device="cpu", progress=False, log=None)
    assert full.stop_step is None and [r["step"] for r in full.history] == [2, 4, 6, 8, 10, 12]
    assert full.history[0]["eval_loss"] == result.history[0]["eval_loss"]
    # a threshold not reached in 12 steps: all the steps; a loss passes by falling, a metric by
    # rising (an accuracy above 1, which no run reaches, is refused: test_bad_input_cli)
    never = train(_gpt(MODADD), MODADD, cfg.replace(stop_metric="eval_acc", stop_value=1.0),
                  device="cpu", progress=False, log=None)
    assert never.stop_step is None and never.history[-1]["step"] == 12
    low = train(_gpt(MODADD), MODADD, cfg.replace(stop_value=1e-3), device="cpu",
                progress=False, log=None)
    assert low.stop_step is None


def test_stop_rule_config_keys_and_errors():
    plain = TrainConfig(steps=10)
    assert "stop_metric" not in plain.to_dict() and "stop_value" not in plain.to_dict()
    rule = plain.replace(stop_metric="eval_acc", stop_value=0.99)
    assert rule.to_dict()["stop_metric"] == "eval_acc"
    assert TrainConfig.from_dict(rule.to_dict()) == rule
    with pytest.raises(ValueError, match="stop_value=None is not allowed: a number when"):
        TrainConfig(stop_metric="eval_acc")
    with pytest.raises(ValueError, match="stop_value=0.5 is not allowed"):
        TrainConfig(stop_value=0.5)
    with pytest.raises(ValueError, match="stop_metric='step' is not allowed"):
        TrainConfig(stop_metric="step", stop_value=1.0)
    with pytest.raises(ValueError, match="stop_value=nan is not allowed"):
        TrainConfig(stop_metric="eval_acc", stop_value=float("nan"))
    with pytest.raises(ValueError, match=r"stop_value=1.01 is not allowed: a number in \[0, 1\]"):
        TrainConfig(stop_metric="eval_acc", stop_value=1.01)
    with pytest.raises(ValueError, match="stop_metric='eval_accuracy' is not allowed: a metric "
                                         "of the logged history, one of train_loss, eval_loss"):
        _train(TrainConfig(steps=2, batch_size=4, eval_every=1, eval_size=4,
                           stop_metric="eval_accuracy", stop_value=0.9))


def test_a_stopped_run_resumes_as_stopped(tmp_path):
    cfg = _modadd_cfg(steps=12, eval_every=2, checkpoint_every=4, stop_metric="train_loss",
                      stop_value=100.0)
    first = train(_gpt(MODADD), MODADD, cfg, device="cpu", progress=False, log=None,
                  checkpoint_dir=tmp_path)
    assert latest_checkpoint(tmp_path).name == "step_0000002"  # saved where it stopped
    again = train(_gpt(MODADD), MODADD, cfg, device="cpu", progress=False, log=None,
                  resume_from=latest_checkpoint(tmp_path))
    assert again.history == first.history  # read back from the checkpoint, not trained again
    for (n, p), (_, q) in zip(first.model.named_parameters(), again.model.named_parameters()):
        assert torch.equal(p, q), n


def test_stacked_seeds_stop_one_by_one_like_single_runs():
    """Seed 0 stops at its first evaluation (a threshold only it passes); the stacked run holds
    its parameters there and trains the others on: every seed matches its own single run."""
    from toymech.training import train_stacked

    cfgs = [_modadd_cfg(steps=8, eval_every=2, seed=s) for s in (0, 1)]
    first = [train(_gpt(MODADD, seed=c.seed), MODADD, c.replace(steps=2), device="cpu",
                   progress=False, log=None).history[0]["eval_loss"] for c in cfgs]
    assert first[0] != first[1]
    # a loss threshold between the two seeds' first eval losses: only the lower one stops there
    cfgs = [c.replace(stop_metric="eval_loss", stop_value=sum(first) / 2) for c in cfgs]
    single = [train(_gpt(MODADD, seed=c.seed), MODADD, c, device="cpu", progress=False,
                    log=None) for c in cfgs]
    stacked = train_stacked([_gpt(MODADD, seed=c.seed) for c in cfgs], MODADD, cfgs,
                            device="cpu", progress=False, log=None)
    low = int(first[1] < first[0])
    assert single[low].stop_step == 2 and single[1 - low].stop_step != 2
    for one, many in zip(single, stacked):
        assert one.stop_step == many.stop_step
        assert [r["step"] for r in one.history] == [r["step"] for r in many.history]
        for (n, p), (_, q) in zip(one.model.named_parameters(), many.model.named_parameters()):
            assert torch.allclose(p, q, atol=1e-4), n


def test_precision_is_checked_and_bf16_only_where_the_hardware_has_it():
    import pytest as _pytest
    import torch as _torch

    from toymech.training import TrainConfig as _TC
    from toymech.training.precision import autocast, bf16_support
    with _pytest.raises(ValueError, match="precision='fp16'"):
        _TC(precision="fp16")
    assert "precision" not in _TC().to_dict() and _TC(precision="bf16").to_dict()["precision"] == "bf16"
    ok, why = bf16_support(_torch.device("cpu"))
    assert isinstance(ok, bool) and why
    if not ok:
        with _pytest.raises(ValueError, match="precision='bf16' is not allowed"):
            autocast("bf16", _torch.device("cpu"))
    else:
        with autocast("bf16", _torch.device("cpu")):
            y = _torch.randn(4, 4) @ _torch.randn(4, 4)
        assert y.dtype == _torch.bfloat16


def test_bf16_autocast_forward_matches_fp32_within_tolerance():
    """The autocast forward (what a bf16 run trains with) against the fp32 hooked forward."""
    import torch as _torch

    from toymech import experiments as _ex
    from toymech.models import build_model as _build
    exp = _ex.get("induction-2l", "smoke", 0)
    model = _build(exp.model)
    tokens = exp.task.sample(4, _torch.Generator().manual_seed(0)).tokens
    ref = model(tokens)
    with _torch.autocast("cpu", dtype=_torch.bfloat16):
        low = model(tokens).float()
    assert (low - ref).abs().max() < 0.05 * ref.abs().max() + 0.05
