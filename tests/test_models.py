import pytest
import torch

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
    ({"variant": "nope"}, "variant"),
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


# --- every model family loads by path in a fresh interpreter ---------------------------------
FAMILIES = ("induction-1l-smeared", "induction-2l", "birth-simplified", "birth-simplified-tied",
            "rt-parentheses-random", "lstm", "linearised")


def _family(name: str):
    from toymech import experiments
    from toymech.studies import birth, random_transformers

    if name == "birth-simplified-tied":
        return birth.experiment("smoke", tied=True)
    if name in ("lstm", "linearised"):
        return random_transformers.baseline_experiment(name, "parentheses", 8, "smoke", 0)
    return experiments.get(name, "smoke")


@pytest.mark.parametrize("family", FAMILIES)
def test_saved_model_loads_in_a_fresh_interpreter(family, tmp_path):
    import subprocess
    import sys

    from toymech.training import Zoo

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
                          str(tmp_path / "logits.pt")], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "loaded" in out.stdout
