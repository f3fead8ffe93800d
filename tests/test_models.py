import math

import pytest
import torch
from waiting import limit

from toymech.models import ModelConfig, build_model, parameter_counts, sinusoid_table


@pytest.mark.parametrize("n_layers, expected", [(1, 5_760), (2, 9_856)])
def test_parameter_counts_match_the_post(n_layers, expected):
    trainable, _ = parameter_counts(build_model(ModelConfig(n_layers=n_layers)))
    assert trainable == expected


def test_smeared_keys_add_one_parameter_per_head():
    trainable, _ = parameter_counts(build_model(ModelConfig(n_layers=1, smear_keys=True)))
    assert trainable == 5_760 + 4


@pytest.mark.parametrize("kwargs, field", [
    ({"n_heads": 5}, "n_heads"), ({"positions": "alibi"}, "positions"),
    ({"normalization": "RMS"}, "normalization"), ({"d_vocab": 1}, "d_vocab"),
    ({"smear_init": 1.0}, "smear_init"), ({"attn_only": True, "d_mlp": 64}, "d_mlp"),
    ({"variant": "nope"}, "variant"), ({"smear": "per_layer"}, "smear"),
    ({"init": "xavier"}, "init"), ({"init": "torch_linear", "init_range": 0.1}, "init_range"),
])
def test_bad_config_names_the_field(kwargs, field):
    with pytest.raises(ValueError, match=rf"{field}=.* is not allowed"):
        ModelConfig(**kwargs)


def test_config_round_trip_and_determinism():
    cfg = ModelConfig(n_layers=2, smear_keys=True, seed=3)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg
    a, b = build_model(cfg), build_model(cfg)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), n
    with pytest.raises(ValueError, match="model config key"):
        ModelConfig.from_dict({**cfg.to_dict(), "n_layer": 2})


def test_sinusoidal_positions_are_added_to_q_and_k_after_projection():
    model = build_model(ModelConfig(n_layers=1))
    tokens = torch.randint(0, 26, (2, 24), generator=torch.Generator().manual_seed(0))
    _, cache = model.run_with_cache(tokens)
    table = sinusoid_table(24, 8)
    for x in ("q", "k"):
        raw, rot = cache[f"blocks.0.attn.hook_{x}"], cache[f"blocks.0.attn.hook_rot_{x}"]
        assert torch.allclose(rot - raw, table[None, :, None, :].expand_as(raw), atol=1e-6)
    # positions never enter the residual stream
    assert torch.allclose(cache["blocks.0.hook_resid_pre"], model.W_E[tokens])


def test_smeared_keys_follow_the_formula_and_are_hookable():
    model = build_model(ModelConfig(n_layers=1, smear_keys=True, smear_init=0.6))
    tokens = torch.randint(0, 26, (2, 24), generator=torch.Generator().manual_seed(0))
    _, cache = model.run_with_cache(tokens)
    k, ks = cache["blocks.0.attn.hook_k"], cache["blocks.0.attn.hook_k_smeared"]
    expected = 0.6 * k[:, 1:] + 0.4 * k[:, :-1]
    assert torch.allclose(ks[:, 1:], expected, atol=1e-6)
    assert torch.allclose(ks[:, 0], k[:, 0])
    # a hook on the smeared keys changes the output: they are really used
    base = model(tokens)
    patched = model.run_with_hooks(tokens, fwd_hooks=[
        ("blocks.0.attn.hook_k_smeared", lambda x, hook: torch.zeros_like(x))])
    assert not torch.allclose(base, patched)


def test_learned_shortformer_positions_enter_only_q_and_k():
    model = build_model(ModelConfig(n_layers=1, positions="shortformer"))
    tokens = torch.randint(0, 26, (1, 24), generator=torch.Generator().manual_seed(0))
    _, cache = model.run_with_cache(tokens)
    assert torch.allclose(cache["blocks.0.hook_resid_pre"], model.W_E[tokens])
    assert "pos_embed.W_pos" in dict(model.named_parameters())


# --- the induction post's exact model: its q/k table, per-position smear, nn.Linear init ---------
POST = dict(positions="post_sinusoidal_qk", smear="per_position", init="torch_linear")
TOKENS = torch.randint(0, 26, (2, 24), generator=torch.Generator().manual_seed(0))


def test_post_table_row_zero_parity_and_frequencies():
    from toymech.models.build import post_sinusoid_table

    table = post_sinusoid_table(24, 8)
    assert table.shape == (24, 8) and torch.equal(table[0], torch.zeros(8))
    for p in range(1, 24):
        for i in range(8):
            angle = p / 10000 ** (2 * i / 8)  # column i itself, not i // 2
            expected = math.sin(angle) if i % 2 == 0 else math.cos(angle)
            assert abs(table[p, i].item() - expected) < 1e-6, (p, i)
    # not the textbook table: its column 1 is cos at column 0's frequency
    assert not torch.allclose(table[1:], sinusoid_table(24, 8)[1:], atol=1e-3)


@pytest.mark.parametrize("smear", [False, True])
def test_post_table_is_added_to_q_and_k_after_projection_and_smearing(smear):
    from toymech.models.build import post_sinusoid_table

    model = build_model(ModelConfig(n_layers=1, smear_keys=smear, **POST))
    _, cache = model.run_with_cache(TOKENS)
    table = post_sinusoid_table(24, 8)[None, :, None, :]
    k = cache["blocks.0.attn.hook_k_smeared" if smear else "blocks.0.attn.hook_k"]
    assert torch.allclose(cache["blocks.0.attn.hook_rot_k"] - k, table.expand_as(k), atol=1e-6)
    q = cache["blocks.0.attn.hook_q"]
    assert torch.allclose(cache["blocks.0.attn.hook_rot_q"] - q, table.expand_as(q), atol=1e-6)
    assert torch.allclose(cache["blocks.0.hook_resid_pre"], model.W_E[TOKENS])


def test_scores_are_scaled_by_one_over_sqrt_d_head_with_a_causal_mask():
    model = build_model(ModelConfig(n_layers=1, **POST))
    assert model.blocks[0].attn.attn_scale == pytest.approx(math.sqrt(8))
    _, cache = model.run_with_cache(TOKENS)
    q, k = cache["blocks.0.attn.hook_rot_q"], cache["blocks.0.attn.hook_rot_k"]
    scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(8)
    causal = torch.ones(24, 24, dtype=torch.bool).tril()
    got = cache["blocks.0.attn.hook_attn_scores"]
    assert torch.allclose(got[..., causal], scores[..., causal], atol=1e-5)
    assert torch.all(cache["blocks.0.attn.hook_pattern"][..., ~causal] == 0)


def test_per_position_smear_has_one_alpha_per_head_and_key_position():
    model = build_model(ModelConfig(n_layers=1, smear_keys=True, **POST,
                                    smear_init=1 / (1 + math.exp(-1.0))))
    attn = model.blocks[0].attn
    assert attn.smear_logit.shape == (4, 23)
    assert torch.allclose(attn.smear_logit, torch.ones(4, 23))  # the post's alpha = 1.0
    with torch.no_grad():
        attn.smear_logit.copy_(torch.randn(4, 23, generator=torch.Generator().manual_seed(1)))
    _, cache = model.run_with_cache(TOKENS)
    k, ks = cache["blocks.0.attn.hook_k"], cache["blocks.0.attn.hook_k_smeared"]
    for h in range(4):
        for t in range(1, 24):
            s = torch.sigmoid(attn.smear_logit[h, t - 1])
            assert torch.allclose(ks[:, t, h], s * k[:, t, h] + (1 - s) * k[:, t - 1, h], atol=1e-6)
    assert torch.equal(ks[:, 0], k[:, 0])  # the first key is unchanged
    with torch.no_grad():
        attn.smear_logit.fill_(50.0)  # alpha -> +inf: no smearing
    _, cache = model.run_with_cache(TOKENS)
    assert torch.allclose(cache["blocks.0.attn.hook_k_smeared"], cache["blocks.0.attn.hook_k"])
    patched = model.run_with_hooks(TOKENS, fwd_hooks=[
        ("blocks.0.attn.hook_k_smeared", lambda x, hook: torch.zeros_like(x))])
    assert not torch.allclose(model(TOKENS), patched)


@pytest.mark.parametrize("n_layers, smear, expected", [
    (1, False, 5_760), (2, False, 9_856), (1, True, 5_760 + 92), (2, True, 9_856 + 2 * 92)])
def test_post_parameter_counts(n_layers, smear, expected):
    trainable, _ = parameter_counts(build_model(ModelConfig(n_layers=n_layers, smear_keys=smear,
                                                            **POST)))
    assert trainable == expected


def test_torch_linear_init_bounds_are_one_over_sqrt_fan_in():
    model = build_model(ModelConfig(n_layers=2, **POST))
    fan_in = {"W_E": 26, "W_U": 32, "W_Q": 32, "W_K": 32, "W_V": 32, "W_O": 32}
    seen = set()
    for name, param in model.named_parameters():
        kind = name.split(".")[-1]
        if kind.startswith("b_"):
            assert torch.all(param == 0), name
        elif kind in fan_in:
            bound = 1 / math.sqrt(fan_in[kind])
            assert 0.95 * bound < param.abs().max().item() <= bound, name
            assert abs(param.mean().item()) < 0.1 * bound, name  # centred, not one-sided
            seen.add(kind)
    assert seen == set(fan_in)


def test_torch_linear_init_is_deterministic_given_the_seed():
    cfg = ModelConfig(n_layers=2, smear_keys=True, seed=3, **POST)
    torch.manual_seed(123)  # the global RNG plays no part
    a = build_model(cfg)
    torch.manual_seed(456)
    b = build_model(cfg)
    for (n, p), (_, q) in zip(a.named_parameters(), b.named_parameters()):
        assert torch.equal(p, q), n
    c = build_model(cfg.replace(seed=4))
    assert not torch.equal(a.W_Q, c.W_Q)
    assert ModelConfig.from_dict(cfg.to_dict()) == cfg


def test_old_configs_without_the_new_keys_load_as_before():
    old = ModelConfig(n_layers=1, smear_keys=True).to_dict()
    for key in ("smear", "init"):
        old.pop(key)
    cfg = ModelConfig.from_dict(old)
    assert (cfg.positions, cfg.smear, cfg.init) == ("sinusoidal_qk", "per_head", "transformer_lens")
    model = build_model(cfg)
    assert model.blocks[0].attn.smear_logit.shape == (4,)
    # TransformerLens' init: W_Q ~ N(0, (0.8/sqrt(d_model))^2), not bounded by 1/sqrt(32)
    assert model.W_Q.abs().max().item() > 1 / math.sqrt(32)


def test_study_models_use_the_post_code_and_keep_textbook_twins():
    from toymech.studies.induction import design as ex

    for name in ex.MAIN:
        m = ex.experiment(name, "smoke").model
        assert (m.positions, m.smear, m.init) == ("post_sinusoidal_qk", "per_position",
                                                  "torch_linear")
    for name in ex.TEXTBOOK:
        m = ex.experiment(name, "smoke").model
        assert (m.positions, m.smear, m.init) == ("sinusoidal_qk", "per_head", "transformer_lens")
    assert ex.experiment("induction-1l-smeared", "smoke").model.smear_keys


# --- every model family loads by path in a fresh interpreter ---------------------------------
FAMILIES = ("induction-1l-smeared", "induction-2l", "birth-simplified", "birth-simplified-tied",
            "rt-parentheses-random", "lstm", "linearised")


def _family(name: str):
    from toymech import experiments
    from toymech.studies import birth
    from toymech.studies.random_transformers import design as rt_design

    if name == "birth-simplified-tied":
        return birth.experiment("smoke", tied=True)
    if name in ("lstm", "linearised"):
        return rt_design.baseline_experiment(name, "parentheses", 8, "smoke", 0)
    return experiments.get(name, "smoke")


@pytest.mark.parametrize("family", FAMILIES)
def test_saved_model_loads_in_a_fresh_interpreter(family, tmp_path):
    import subprocess
    import sys

    from toymech.zoo import Zoo

    exp = _family(family)
    exp.train = exp.train.replace(steps=2, eval_every=1, warmup_steps=0)
    entry = Zoo(tmp_path).get_or_train(exp, device="cpu", progress=False, log=None)
    tokens = exp.task.sample(2, torch.Generator().manual_seed(0)).tokens
    torch.save(tokens, tmp_path / "tokens.pt")
    torch.save(entry.model(tokens).detach(), tmp_path / "logits.pt")
    # The subprocess imports the checkpoint loader and nothing else of toymech.
    code = ("import sys, torch\n"
            "from toymech.training.checkpoints import load_model\n"
            "model, meta = load_model(sys.argv[1])\n"
            "tokens = torch.load(sys.argv[2])\n"
            "assert torch.allclose(model(tokens), torch.load(sys.argv[3]), atol=1e-6)\n"
            "print('loaded', meta['name'])\n")
    out = subprocess.run([sys.executable, "-c", code, str(entry.path), str(tmp_path / "tokens.pt"),
                          str(tmp_path / "logits.pt")], capture_output=True, text=True, timeout=limit(300))
    assert out.returncode == 0, out.stderr[-2000:]
    assert "loaded" in out.stdout
