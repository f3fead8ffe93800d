"""What the knobs build, checked on the models and runs themselves: study 1's
positions "none", Birth's positional embeddings, their join, the feed-forward layers, the
vocabulary and the data knobs, study 3's width and which parts train."""

import fnmatch
import importlib

import pytest
import torch

from toymech import tasks
from toymech.models import ModelConfig, build_model
from toymech.models.build import sinusoid_table
from toymech.models.fast import fast_forward
from toymech.studies import protocol
from toymech.studies.birth import design as bdesign
from toymech.studies.birth import measure as bmeasure
from toymech.studies.random_transformers import design as rdesign

GEN = torch.Generator().manual_seed(0)


# --- study 1: positions "none" --------------------------------------------------------------------
def test_positions_none_builds_a_model_without_positional_signal():
    model = build_model(ModelConfig(n_layers=1, positions="none", seed=1))
    names = [n for n, _ in model.named_parameters()]
    assert not any("pos" in n for n in names) and not hasattr(model, "pos_embed")
    tokens = torch.randint(0, 26, (3, 24), generator=GEN)
    logits, cache = model.run_with_cache(tokens)
    assert torch.equal(cache["blocks.0.attn.hook_rot_q"], cache["blocks.0.attn.hook_q"])
    assert torch.equal(cache["blocks.0.attn.hook_rot_k"], cache["blocks.0.attn.hook_k"])
    # one layer, no positions: the last query sees its context as a set (only the mask orders it)
    perm = torch.cat([torch.randperm(23, generator=GEN), torch.tensor([23])])
    assert torch.allclose(model(tokens[:, perm])[:, -1], logits[:, -1], atol=1e-5)
    with_table = build_model(ModelConfig(n_layers=1, positions="sinusoidal_qk", seed=1))
    assert not torch.allclose(with_table(tokens[:, perm])[:, -1], with_table(tokens)[:, -1])
    fast = fast_forward(model)
    assert fast is not None and torch.allclose(fast(tokens), logits, atol=1e-5)


def test_induction_positions_knob_reaches_the_posts_models_only():
    st = importlib.import_module("toymech.studies.induction")
    size = st.with_knobs("smoke", {"positions": "none"})
    assert st.experiment("induction-2l", size).model.positions == "none"
    assert st.experiment("induction-2l-textbook", size).model.positions == "sinusoidal_qk"
    model = build_model(st.experiment("induction-1l-smeared", size).model)
    assert not any("pos" in n for n, _ in model.named_parameters())


# --- Birth ----------------------------------------------------------------------------------------
def _birth(variant, seed=0, **kwargs):
    st = importlib.import_module("toymech.studies.birth")
    size = st.with_knobs("smoke", variant)
    exp = st.experiment(size, seed, **kwargs)
    return size, exp, build_model(exp.model)


def test_birth_ff_choices_place_the_feed_forward_layers():
    def w_f(model):
        return sorted(n for n, _ in model.named_parameters() if n.endswith("W_F"))

    _, paper, model = _birth({})
    assert w_f(model) == ["blocks.1.mlp.W_F"]
    assert w_f(_birth({"ff": "none"})[2]) == []
    assert w_f(_birth({"ff": "first"})[2]) == ["blocks.0.mlp.W_F"]
    _, both, two = _birth({"ff": "both"})
    assert w_f(two) == ["blocks.0.mlp.W_F", "blocks.1.mlp.W_F"]
    assert not torch.equal(two.blocks[0].mlp.W_F, torch.zeros_like(two.blocks[0].mlp.W_F))
    for name in ("embed.W_E", "blocks.1.mlp.W_F", "blocks.1.attn.W_K"):  # the paper's draws kept
        assert torch.equal(dict(two.named_parameters())[name],
                           dict(model.named_parameters())[name]), name
    # the former boolean spelling still works, and keeps the former variant's zoo key
    size, off, _ = _birth({"ff": "false"})
    assert size.knobs == {"ff": "none"}
    old = bdesign.experiment("smoke", 0)
    old.model = old.model.replace(variant_options={**old.model.variant_options, "ff": False})
    assert off.key() == old.key()


def test_birth_positions_sinusoidal_and_none():
    _, paper, base = _birth({})
    _, sin_exp, sin = _birth({"positions": "sinusoidal"})
    assert "pos_embed.W_pos" in sin_exp.train.freeze  # frozen, as the paper's random ones
    d = sin_exp.model.d_model
    table = sinusoid_table(sin_exp.model.n_ctx, d)
    expected = table / table.norm(dim=-1, keepdim=True)  # rows of a random row's norm: 1
    assert torch.allclose(sin.pos_embed.W_pos, expected, atol=1e-5)
    _, _, none = _birth({"positions": "none"})
    assert torch.equal(none.pos_embed.W_pos, torch.zeros_like(none.pos_embed.W_pos))
    for model in (sin, none):  # everything else is the paper's model at the same seed
        for name in ("embed.W_E", "unembed.W_U", "blocks.0.attn.W_K", "blocks.1.mlp.W_F"):
            assert torch.equal(dict(model.named_parameters())[name],
                               dict(base.named_parameters())[name]), name


def test_birth_concat_keeps_tokens_and_positions_in_separate_halves():
    _, exp, model = _birth({"position_join": "concat", "embeddings": "trained",
                            "positions": "learned"})
    d, half = exp.model.d_model, exp.model.d_model // 2
    w_e, w_pos = model.embed.W_E, model.pos_embed.W_pos
    assert torch.equal(w_e[:, half:], torch.zeros_like(w_e[:, half:]))
    assert torch.equal(w_pos[:, :half], torch.zeros_like(w_pos[:, :half]))
    assert w_e[:, :half].abs().min() > 0 and w_pos[:, half:].abs().min() > 0
    # a half keeps a whole row's norm (about 1)
    assert 0.5 < float(w_e[:, :half].detach().norm(dim=-1).mean()) < 1.5
    batch = exp.task.sample(4, torch.Generator().manual_seed(1))
    _, cache = model.run_with_cache(batch.tokens)
    resid = cache["blocks.0.hook_resid_pre"]
    n = batch.tokens.shape[1]
    assert torch.allclose(resid[..., :half], w_e[batch.tokens][..., :half])
    assert torch.allclose(resid[..., half:], w_pos[:n, half:].expand(4, n, d - half))
    # trained embeddings stay in their halves: the other half never gets a gradient
    logits = model(batch.tokens)[:, :-1]
    torch.nn.functional.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                                      batch.tokens[:, 1:].reshape(-1)).backward()
    assert w_e.grad is not None and w_pos.grad is not None
    assert torch.equal(w_e.grad[:, half:], torch.zeros_like(w_e.grad[:, half:]))
    assert torch.equal(w_pos.grad[:, :half], torch.zeros_like(w_pos.grad[:, :half]))
    assert w_e.grad[:, :half].abs().sum() > 0


def test_birth_concat_with_an_odd_width_gives_positions_the_larger_half():
    _, exp, model = _birth({"position_join": "concat", "d_model": 17})
    assert torch.equal(model.embed.W_E[:, 8:], torch.zeros(exp.task.d_vocab, 9))
    assert torch.equal(model.pos_embed.W_pos[:, :8], torch.zeros(exp.model.n_ctx, 8))


def test_birth_vocabulary_knob_keeps_task_and_model_consistent():
    size, exp, model = _birth({"vocab": 30})
    full = tasks.get("bigram_triggers", length=16)
    assert exp.task.d_vocab == exp.model.d_vocab == model.embed.W_E.shape[0] == 30
    assert model.unembed.W_U.shape[1] == 30
    keep = torch.argsort(full.pi_u, descending=True, stable=True)[:30]
    assert set(exp.task.vocab) == {full.vocab[int(i)] for i in keep}
    assert torch.allclose(exp.task.pi_b.sum(-1), torch.ones(30))
    assert [exp.task.vocab[int(i)] for i in exp.task.fixed_triggers] == \
        [full.vocab[int(i)] for i in full.fixed_triggers]  # the top K survive the cut
    control = bdesign.experiment(size, 0, model="control", freezing="none")
    assert control.model.d_vocab == 30
    for sweep in bmeasure.sweep_experiments(size, 0).values():
        assert sweep.model.d_vocab == 30


def test_birth_data_knobs_change_the_main_run_not_the_sweep_or_the_extremes():
    variant = {"n_triggers": 5, "trigger_mode": "random", "data": "only_triggers"}
    size, exp, _ = _birth(variant)
    assert (exp.task.n_triggers, exp.task.trigger_mode, exp.task.variant) == \
        (5, "random", "only_triggers")
    control = bdesign.experiment(size, 0, model="control", freezing="none")
    assert control.task == exp.task
    rows = bmeasure.freezing_experiments(size, 0)
    assert {e.task.n_triggers for e in rows.values()} == {5}
    plain = bmeasure.sweep_experiments("smoke", 0)
    assert [e.key() for e in bmeasure.sweep_experiments(size, 0).values()] == \
        [e.key() for e in plain.values()]
    assert [e.key() for e in bmeasure.extremes_experiments(size, 0).values()] == \
        [e.key() for e in bmeasure.extremes_experiments("smoke", 0).values()]


# --- study 3 ---------------------------------------------------------------------------------------
def test_rt_width_sets_the_tables_large_width_only():
    st = importlib.import_module("toymech.studies.random_transformers")
    size = st.with_knobs("default", {"width": 128})
    p, own = rdesign.plan(size), rdesign.plan("default")
    assert p.widths == (own.widths[0], 128) and p.sweep_widths == own.sweep_widths
    widths = {e.model.d_model for e in st.STUDY.experiments(size, [0])}
    assert widths == {own.widths[0], 128}
    assert rdesign.setting(size)["width"] == 128
    exp = rdesign.experiment("parentheses", p.widths[1], "random", size)
    assert exp.model.d_head == 32 and build_model(exp.model).W_E.shape[1] == 128


def test_rt_trains_sets_what_the_random_arm_trains():
    st = importlib.import_module("toymech.studies.random_transformers")
    size = st.with_knobs("default", {"trains": "U"})
    runs = st.STUDY.experiments(size, [0])
    random = [e for e in runs if "-random-" in e.name]
    normal = [e for e in runs if "-normal-" in e.name]
    assert random and all(e.train.freeze == rdesign.FREEZE_MODES["U"] for e in random)
    assert all(e.train.freeze == () for e in normal)
    assert all(rdesign.mode_of(e.train.freeze, size) == "random" for e in random)
    assert rdesign.mode_of(rdesign.FREEZE_MODES["U"]) == "U"  # at the plain size, its own name
    assert "U" not in rdesign.plan(size).ablation_modes  # that run is the random arm itself
    ablation = rdesign.experiment("parentheses", 64, "E_token+U", size)
    assert ablation.train.freeze == rdesign.FREEZE_MODES["E_token+U"]
    model = build_model(random[0].model)
    trainable = [n for n, _ in model.named_parameters()
                 if not any(fnmatch.fnmatchcase(n, pat) for pat in random[0].train.freeze)]
    assert trainable and all(n.startswith("unembed.") for n in trainable)


@pytest.mark.parametrize("variant, fragment", [
    ({"width": 12}, "width=12 is not allowed: a multiple of n_heads=4 above the table's small "
                    "width 16"),
    ({"width": 66}, "width=66 is not allowed"),
    ({"trains": "normal"}, "trains='normal' is not allowed: one of random, E_token+U"),
])
def test_rt_bad_width_and_trains_refused(variant, fragment):
    with pytest.raises(ValueError, match="^" + fragment.replace("+", r"\+")):
        protocol.study("random_transformers").with_knobs("default", variant)


def test_list_knobs_shows_the_new_knobs(tmp_path):
    from catalogue import run_cli

    for study, names in (("birth", ("positions", "position_join", "ff", "vocab", "n_triggers",
                                    "trigger_mode", "data")),
                         ("random_transformers", ("width", "trains")),
                         ("induction", ("positions",))):
        code, out, err = run_cli(["list", "knobs", study, "--cache", str(tmp_path / "zoo")])
        assert code == 0, err
        listed = {line.split()[0] for line in out.splitlines()  # a knob's row: 4 spaces in
                  if line.startswith("    ") and not line.startswith("     ")}
        assert set(names) <= listed, (study, listed)
    assert "rotary, none" in run_cli(["list", "knobs", "induction", "--cache",
                                      str(tmp_path / "zoo")])[1]
