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
from toymech.training.loop import EagerEngine


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
        torch.testing.assert_close(a, b, atol=tol, rtol=tol, msg=lambda m, name=name: f"{name}: {m}")


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


@pytest.mark.parametrize("name", ["induction-1l", "induction-2l", "induction-1l-smeared",
                                  "induction-2l-learned"])
def test_training_with_and_without_the_fast_path_agree(name, monkeypatch):
    """100 steps of each family: the same losses and parameters as the hooked forward's, to
    float rounding (the hand-written attention of the fast path included)."""
    from toymech.models import fast

    calls = []
    real = fast._AttentionLayer.apply
    monkeypatch.setattr(fast._AttentionLayer, "apply",
                        lambda *a: calls.append(1) or real(*a))
    exp = experiment(name, "smoke", 0)
    cfg = TrainConfig(steps=100, batch_size=32, eval_every=10, eval_size=64, seed=0)
    finals = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("TOYMECH_FAST", flag)
        model = build_model(exp.model)
        assert (EagerEngine(model, cfg).forward is model) == (flag == "0")
        result = train(model, exp.task, cfg, device="cpu", progress=False, log=None)
        finals[flag] = (dict(result.model.named_parameters()), result.history)
    assert len(calls) >= 100 * exp.model.n_layers  # the fast run took the hand-written attention
    weights, history = finals["1"]
    for name_, p in finals["0"][0].items():
        torch.testing.assert_close(weights[name_], p, atol=1e-4, rtol=1e-4)
    assert [r["step"] for r in history] == [r["step"] for r in finals["0"][1]]
    for ours, theirs in zip(history, finals["0"][1]):
        assert ours["train_loss"] == pytest.approx(theirs["train_loss"], rel=1e-4, abs=1e-5)
        assert ours["eval_loss"] == pytest.approx(theirs["eval_loss"], rel=1e-4, abs=1e-5)


@pytest.mark.parametrize("n", [1, 2, 7, 24])
@pytest.mark.parametrize("smear", [None, "per_head", "per_position"])
@pytest.mark.parametrize("with_table", [False, True])
def test_the_hand_written_attention_against_autograd(n, smear, with_table):
    """_AttentionLayer's values and gradients (qkv and the smear weights) against the plain
    attention by autograd, in float64 (gradcheck), at every length parity of the tree maximum."""
    from toymech.models.fast import _AttentionLayer

    g = torch.Generator().manual_seed(n)
    b, heads, dh = 2, 3, 4
    dt = torch.float64
    qkv = torch.randn(b * n, 3 * heads * dh, generator=g, dtype=dt, requires_grad=True)
    s = None
    if smear == "per_head":
        s = torch.rand(heads, 1, 1, generator=g, dtype=dt).requires_grad_()
    elif smear == "per_position":
        s = torch.cat([torch.ones(heads, 1, 1, dtype=dt),
                       torch.rand(heads, n - 1, 1, generator=g, dtype=dt)], 1).requires_grad_()
    table = torch.randn(n, dh, generator=g, dtype=dt) if with_table else None
    mask_t = torch.tril(torch.full((n, n), float("-inf"), dtype=dt), -1)
    alpha = 0.7

    def plain(qkv, s, a=alpha):
        q, k, v = qkv.view(b, n, 3, heads, dh).permute(2, 0, 3, 1, 4).unbind(0)
        if s is not None:
            k = s * k + (1 - s) * torch.cat([k[:, :, :1], k[:, :, :-1]], 2)
        if table is not None:
            q, k = q + table, k + table
        z = (q @ k.transpose(-1, -2) * a + mask_t.T).softmax(-1) @ v
        return z.transpose(1, 2).reshape(b * n, heads * dh)

    def ours(qkv, s, a=alpha):
        return _AttentionLayer.apply(qkv, s, table, mask_t, a, heads)

    torch.testing.assert_close(ours(qkv, s), plain(qkv, s))
    inputs = (qkv,) if s is None else (qkv, s)
    assert torch.autograd.gradcheck(lambda *t: ours(*t, *([None] * (2 - len(t)))), inputs)
    if n == 1:
        return  # one position: the softmax is 1 whatever the scale
    # a null: a wrong scale is caught
    assert not torch.allclose(ours(qkv, s, 2 * alpha), plain(qkv, s), atol=1e-3)


def test_the_embedding_gradient_against_autograd():
    """_Embedding's gradient (one index_add_) equals embedding's, repeated tokens summed."""
    from toymech.models.fast import _Embedding

    g = torch.Generator().manual_seed(3)
    table = torch.randn(5, 3, generator=g, dtype=torch.float64, requires_grad=True)
    tokens = torch.tensor([[0, 2, 2, 4], [4, 4, 1, 0]])  # 3 never drawn: its row gets zeros
    assert torch.autograd.gradcheck(lambda t: _Embedding.apply(t, tokens), (table,))
    up = torch.randn(2, 4, 3, generator=g, dtype=torch.float64)
    ours, = torch.autograd.grad((_Embedding.apply(table, tokens) * up).sum(), table)
    theirs, = torch.autograd.grad((torch.nn.functional.embedding(tokens, table) * up).sum(), table)
    torch.testing.assert_close(ours, theirs, atol=1e-12, rtol=0)
    assert ours[3].abs().max() == 0 and ours[4].abs().max() > 0


def test_the_fused_optimizer_is_the_same_update(monkeypatch):
    """The loop's AdamW takes the fused kernel on a CPU; 50 steps with it equal 50 steps with
    the unfused one to float rounding (and differ from a run with another learning rate, the
    null)."""
    from toymech.training import loop

    exp = experiment("induction-2l", "smoke", 0)
    cfg = TrainConfig(steps=50, batch_size=32, eval_every=25, eval_size=64, seed=0)
    made = []
    real = loop._optimizer
    monkeypatch.setattr(loop, "_optimizer", lambda p, c: made.append(real(p, c)) or made[-1])

    def run(cfg):
        return dict(train(build_model(exp.model), exp.task, cfg, device="cpu", progress=False,
                          log=None).model.named_parameters())

    fused = run(cfg)
    assert made[-1].param_groups[0]["fused"] is True
    monkeypatch.setattr(loop, "_optimizer", lambda p, c: torch.optim.AdamW(
        p, lr=c.lr, betas=c.betas, weight_decay=c.weight_decay, foreach=True))
    plain = run(cfg)
    for name, p in plain.items():
        torch.testing.assert_close(fused[name], p, atol=1e-5, rtol=1e-5)
    other = run(cfg.replace(lr=2 * cfg.lr))
    assert max((other[n] - p).abs().max().item() for n, p in plain.items()) > 1e-3


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("name", ["induction-2l", "induction-1l-smeared"])
def test_fast_forward_on_cuda(name, monkeypatch):
    """On CUDA the fast path keeps the autograd attention: the same logits as the hooked forward
    there, and 30 training steps with the same losses as the hooked forward's on that device
    (the data stream of a CUDA generator differs from the CPU's)."""
    exp = experiment(name, "smoke", 0)
    model = build_model(exp.model).to("cuda")
    batch = exp.task.sample(32, make_generator(0, torch.device("cuda")))
    forward = fast_forward(model)
    assert forward is not None
    torch.testing.assert_close(forward(batch.tokens), model(batch.tokens), atol=1e-4, rtol=1e-4)
    cfg = TrainConfig(steps=30, batch_size=32, eval_every=10, eval_size=64, seed=0)
    runs = {}
    for flag in ("1", "0"):
        monkeypatch.setenv("TOYMECH_FAST", flag)
        result = train(build_model(exp.model), exp.task, cfg, device="cuda", progress=False,
                       log=None)
        runs[flag] = [r["train_loss"] for r in result.history]
    assert runs["1"] == pytest.approx(runs["0"], rel=1e-3, abs=1e-4)
