"""The hook-free training forward (toymech.models.fast) against the HookedTransformer's own."""

import pytest
import torch

from toymech import tasks
from toymech.devices import make_generator
from toymech.models import ModelConfig, build_model, fast_forward
from toymech.studies.birth.design import simplified_config
from toymech.studies.induction.design import MODELS, experiment
from toymech.studies.random_transformers.design import model_config
from toymech.training import TrainConfig, train
from toymech.training.loop import _Eager


def _batch(task, n=32, seed=0):
    return task.sample(n, make_generator(seed, torch.device("cpu")))


def _check_same(model, task, tol=1e-5):
    forward = fast_forward(model)
    assert forward is not None
    batch = _batch(task)
    ours, theirs = forward(batch.tokens), model(batch.tokens)
    assert ours.shape == theirs.shape
    torch.testing.assert_close(ours, theirs, atol=tol, rtol=tol)
    params = [p for p in model.parameters() if p.requires_grad]
    g_ours = torch.autograd.grad(task.loss(ours, batch), params)
    g_theirs = torch.autograd.grad(task.loss(theirs, batch), params)
    names = [n for n, p in model.named_parameters() if p.requires_grad]
    for name, a, b in zip(names, g_ours, g_theirs):
        torch.testing.assert_close(a, b, atol=tol, rtol=tol, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("name", list(MODELS))
def test_fast_forward_matches_every_induction_model(name):
    exp = experiment(name, "smoke", 0)
    model = build_model(exp.model)
    with torch.no_grad():  # move off the initial values (smear alphas all equal at init)
        g = torch.Generator().manual_seed(1)
        for p in model.parameters():
            if p.requires_grad:
                p.add_(0.1 * torch.randn(p.shape, generator=g))
    _check_same(model, exp.task)


@pytest.mark.parametrize("positions", ["standard", "shortformer", "post_sinusoidal_qk"])
def test_fast_forward_with_trained_biases(positions):
    task = tasks.get("repeated_blocks")
    cfg = ModelConfig(n_layers=2, d_vocab=task.d_vocab, n_ctx=task.seq_len, positions=positions,
                      use_bias=True, smear_keys=positions != "standard", smear="per_position")
    model = build_model(cfg)
    with torch.no_grad():
        g = torch.Generator().manual_seed(2)
        for name, p in model.named_parameters():
            if name.split(".")[-1].startswith("b_"):
                p.copy_(0.5 * torch.randn(p.shape, generator=g))
    _check_same(model, task)


def test_fast_forward_shorter_sequences():
    task = tasks.get("repeated_blocks")
    model = build_model(experiment("induction-1l-smeared", "smoke", 0).model)
    tokens = _batch(task).tokens[:, :10]
    torch.testing.assert_close(fast_forward(model)(tokens), model(tokens), atol=1e-5, rtol=0)


def test_unsupported_models_give_none():
    task = tasks.get("repeated_blocks")
    assert fast_forward(build_model(model_config(task, 32))) is None  # GPT-2 style: LN, MLP
    assert fast_forward(build_model(simplified_config(task, 16))) is None  # Birth variant
    assert fast_forward(build_model(ModelConfig(positions="rotary"))) is None
    assert fast_forward(build_model(ModelConfig(normalization="LN"))) is None
    assert fast_forward(torch.nn.Linear(2, 2)) is None
    hooked = build_model(ModelConfig())
    hooked.blocks[0].attn.hook_pattern.add_hook(lambda x, hook: x)
    assert fast_forward(hooked) is None  # a forward without hooks would skip it
    hooked.reset_hooks()
    assert fast_forward(hooked) is not None


@pytest.mark.parametrize("name", ["induction-1l-smeared", "induction-2l-learned"])
def test_training_with_and_without_the_fast_path_agree(name, monkeypatch):
    exp = experiment(name, "smoke", 0)
    cfg = TrainConfig(steps=20, batch_size=32, eval_every=10, eval_size=64, seed=0)
    finals = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("TOYMECH_FAST", flag)
        model = build_model(exp.model)
        assert (_Eager(model, cfg).forward is model) == (flag == "0")
        result = train(model, exp.task, cfg, device="cpu", progress=False, log=None)
        finals[flag] = (dict(result.model.named_parameters()), result.history)
    weights, history = finals["1"]
    for name_, p in finals["0"][0].items():
        torch.testing.assert_close(weights[name_], p, atol=1e-4, rtol=0)
    assert [r["step"] for r in history] == [r["step"] for r in finals["0"][1]]


def test_a_bad_toymech_fast_value_is_refused(monkeypatch):
    from toymech.studies.induction import experiment
    from toymech.training import train

    exp = experiment("induction-1l", "smoke", 0)
    monkeypatch.setenv("TOYMECH_FAST", "yes")
    with pytest.raises(ValueError, match="TOYMECH_FAST='yes' is not allowed: 0 .* or 1"):
        train(build_model(exp.model), exp.task, exp.train.replace(steps=2, eval_every=2),
              device="cpu", progress=False, log=None)
