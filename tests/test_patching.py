"""Activation and path patching on hand-built circuits whose answer is known exactly, and the
identity "a sender patched into every reader downstream = the sender patched" on every model
family toymech builds (and on snapshot models)."""

import pytest
import torch

from toymech import analysis as A
from toymech import experiments, tasks
from toymech.analysis import patching as P
from toymech.models import ModelConfig, build_model
from toymech.studies.birth.design import simplified_config
from toymech.studies.random_transformers.design import model_config as gpt2_config

V, T = 8, 8          # vocabulary, context
C, SCALE = 10.0, 10.0  # attention sharpness (scores C²/sqrt(d_head)), logit scale


def _layout():
    """Residual dims: const | E (token) | P (position) | PT (previous token) | OUT | JUNK."""
    at, spans = 0, {}
    for name, n in (("const", 1), ("E", V), ("P", T), ("PT", V), ("OUT", V), ("JUNK", V)):
        spans[name] = at
        at += n
    return spans, at


def induction_circuit(prev_head: int = 0, ind_head: int = 0):
    """2-layer attention-only model, 2 heads per layer: layer-0 head ``prev_head`` writes the
    previous token into PT; layer-1 head ``ind_head`` matches the current token (query, from E)
    against PT (key) and copies the attended token into OUT, which alone the unembedding reads.
    The other head of each layer is a decoy: the same pattern, but it writes JUNK (read by
    nobody), so its output changes between clean and corrupted runs without moving the logits."""
    s, d = _layout()
    cfg = ModelConfig(n_layers=2, n_heads=2, d_model=d, d_head=T, d_vocab=V, n_ctx=T,
                      positions="standard")
    m = build_model(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        m.embed.W_E[:, s["const"]] = 1.0
        m.embed.W_E[torch.arange(V), s["E"] + torch.arange(V)] = 1.0
        m.pos_embed.W_pos[torch.arange(T), s["P"] + torch.arange(T)] = 1.0
        a0, a1 = m.blocks[0].attn, m.blocks[1].attn
        for h in range(2):
            # layer 0: query at t reads P_t, key at s reads P_s -> score C² [s == t - 1]
            a0.W_Q[h, s["P"] + torch.arange(T), torch.arange(T)] = C
            a0.W_K[h, s["P"] + torch.arange(T - 1), torch.arange(1, T)] = C
            a0.W_V[h, s["E"] + torch.arange(V), torch.arange(V)] = 1.0
            dest = "PT" if h == prev_head else "JUNK"
            a0.W_O[h, torch.arange(V), s[dest] + torch.arange(V)] = 1.0
        # layer 1, induction head: query E_tok, key PT_tok -> score C² [tok_t == tok_{s-1}]
        a1.W_Q[ind_head, s["E"] + torch.arange(V), torch.arange(V)] = C
        a1.W_K[ind_head, s["PT"] + torch.arange(V), torch.arange(V)] = C
        a1.W_V[ind_head, s["E"] + torch.arange(V), torch.arange(V)] = 1.0
        a1.W_O[ind_head, torch.arange(V), s["OUT"] + torch.arange(V)] = 1.0
        # layer 1, decoy: a duplicate-token head (query E, key E) writing JUNK
        other = 1 - ind_head
        a1.W_Q[other, s["E"] + torch.arange(V), torch.arange(V)] = C
        a1.W_K[other, s["E"] + torch.arange(V), torch.arange(V)] = C
        a1.W_V[other, s["E"] + torch.arange(V), torch.arange(V)] = 1.0
        a1.W_O[other, torch.arange(V), s["JUNK"] + torch.arange(V)] = 1.0
        m.unembed.W_U[s["OUT"] + torch.arange(V), torch.arange(V)] = SCALE
    return m


def induction_pair(n: int = 16, seed: int = 0):
    """Clean: 6 distinct tokens, then the token at position 2 again (the induction target is
    the token at position 3). Corrupted (key side): position 2 holds a token absent elsewhere,
    so no key matches. Returns clean, corrupted, the metric (log-prob of the target at the last
    position)."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.stack([torch.randperm(V, generator=g) for _ in range(n)])
    clean = torch.cat([perm[:, :6], perm[:, 2:3]], 1)
    corrupted = clean.clone()
    corrupted[:, 2] = perm[:, 6]  # unused in the sequence
    mask = torch.zeros(n, 7, dtype=torch.bool)
    mask[:, 6] = True
    target = torch.zeros(n, 7, dtype=torch.long)
    target[:, 6] = clean[:, 3]
    return clean, corrupted, P.target_logprob(target, mask)


@pytest.mark.parametrize("prev_head,ind_head", [(0, 0), (1, 0), (0, 1)])
def test_head_patching_finds_the_previous_token_and_induction_heads(prev_head, ind_head):
    model = induction_circuit(prev_head, ind_head)
    clean, corrupted, metric = induction_pair()
    res = P.patch_heads(model, clean, corrupted, metric)
    assert res.gap > 1.5  # the circuit works: clean predicts the target, corrupted cannot
    effect = res.effect
    expected = torch.zeros(2, 2)
    expected[0, prev_head] = expected[1, ind_head] = 1.0
    assert torch.allclose(effect, expected, atol=0.02), effect
    # noising: the clean run needs exactly those two heads (noising the previous-token head
    # doubles the current letter among the values attended uniformly, so it costs a bit more
    # than the corrupted run's gap: an effect above 1 is right)
    noised = P.patch_heads(model, clean, corrupted, metric, direction="noise").effect
    assert float(noised[0, prev_head]) > 0.95 and float(noised[1, ind_head]) > 0.95, noised
    assert float(noised[0, 1 - prev_head].abs()) < 0.02, noised
    assert float(noised[1, 1 - ind_head].abs()) < 0.02, noised


def test_path_patching_separates_k_from_q_and_v_composition():
    model = induction_circuit(0, 0)
    clean, corrupted, metric = induction_pair()
    eff = {s: float(P.path_patch(model, clean, corrupted, metric, (0, 0), (1, 0, s)).effect)
           for s in "qkv"}
    assert eff["k"] == pytest.approx(1.0, abs=0.02)
    assert abs(eff["q"]) < 0.02 and abs(eff["v"]) < 0.02
    # the decoy sender and the decoy receiver carry nothing
    assert abs(float(P.path_patch(model, clean, corrupted, metric, (0, 1), (1, 0, "k")).effect)) < 0.02
    assert abs(float(P.path_patch(model, clean, corrupted, metric, (0, 0), (1, 1, "k")).effect)) < 0.02
    grid = P.composition_paths(model, clean, corrupted, metric)
    k_effect = (grid["k"] - grid["corrupted"]) / (grid["clean"] - grid["corrupted"])
    assert torch.isclose(k_effect[0, 0, 1, 0], torch.tensor(1.0), atol=0.02)
    assert torch.isnan(grid["k"][1, 0, 0, 0])  # no path backwards


def test_input_patching_finds_the_key_side():
    model = induction_circuit(0, 1)
    clean, corrupted, metric = induction_pair(seed=5)
    eff = {s: float(P.patch_inputs(model, clean, corrupted, metric, (1, 1, s)).effect)
           for s in "qkv"}
    assert eff["k"] == pytest.approx(1.0, abs=0.02), eff
    # noising: the clean run attends sharply, so only its keys can spoil it (denoising the
    # values of the corrupted run, which attends diffusely, moves it a little: -0.15)
    noised = {s: float(P.patch_inputs(model, clean, corrupted, metric, (1, 1, s),
                                      direction="noise").effect) for s in "qkv"}
    assert noised["k"] > 0.95 and abs(noised["q"]) < 0.02 and abs(noised["v"]) < 0.02, noised
    decoy = P.patch_inputs(model, clean, corrupted, metric, [(1, 0, "k"), (1, 0, "q")])
    assert abs(float(decoy.effect)) < 0.02


def test_path_patching_with_a_moved_circuit_moves_the_answer():
    model = induction_circuit(1, 1)
    clean, corrupted, metric = induction_pair(seed=3)
    assert float(P.path_patch(model, clean, corrupted, metric, (0, 1), (1, 1, "k")).effect) == \
        pytest.approx(1.0, abs=0.02)
    assert abs(float(P.path_patch(model, clean, corrupted, metric, (0, 0), (1, 0, "k")).effect)) < 0.02


def copy_circuit(copy_head: int = 2, n_heads: int = 4):
    """1-layer attention-only model: head ``copy_head`` attends to position 0 and copies its
    token into OUT (read by the unembedding); the other heads attend to the current position
    and copy it into OUT too (same token in both runs), so they move nothing."""
    s, d = _layout()
    cfg = ModelConfig(n_layers=1, n_heads=n_heads, d_model=d, d_head=T, d_vocab=V, n_ctx=T,
                      positions="standard")
    m = build_model(cfg)
    with torch.no_grad():
        for p in m.parameters():
            p.zero_()
        m.embed.W_E[:, s["const"]] = 1.0
        m.embed.W_E[torch.arange(V), s["E"] + torch.arange(V)] = 1.0
        m.pos_embed.W_pos[torch.arange(T), s["P"] + torch.arange(T)] = 1.0
        a = m.blocks[0].attn
        for h in range(n_heads):
            if h == copy_head:  # query: const; key: P_0 -> attend to position 0
                a.W_Q[h, s["const"], 0] = C
                a.W_K[h, s["P"], 0] = C
            else:  # query P_t, key P_s -> the current position
                a.W_Q[h, s["P"] + torch.arange(T), torch.arange(T)] = C
                a.W_K[h, s["P"] + torch.arange(T), torch.arange(T)] = C
            a.W_V[h, s["E"] + torch.arange(V), torch.arange(V)] = 1.0
            a.W_O[h, torch.arange(V), s["OUT"] + torch.arange(V)] = 1.0
        m.unembed.W_U[s["OUT"] + torch.arange(V), torch.arange(V)] = SCALE
    return m


def copy_pair(n: int = 12, seed: int = 1):
    """Clean and corrupted differ only in the first token; the last token is neither of the
    two, so the other heads (copying the current token) add the same to both logits."""
    g = torch.Generator().manual_seed(seed)
    perm = torch.stack([torch.randperm(V, generator=g) for _ in range(n)])
    clean = perm[:, :6].clone()
    corrupted = clean.clone()
    corrupted[:, 0] = perm[:, 6]
    mask = torch.zeros(n, 6, dtype=torch.bool)
    mask[:, -1] = True
    good = torch.zeros(n, 6, dtype=torch.long)
    bad = torch.zeros(n, 6, dtype=torch.long)
    good[:, -1], bad[:, -1] = clean[:, 0], corrupted[:, 0]
    return clean, corrupted, P.logit_diff(good, bad, mask)


@pytest.mark.parametrize("copy_head", [0, 2])
def test_copy_head_alone_moves_the_logit_difference(copy_head):
    model = copy_circuit(copy_head)
    clean, corrupted, metric = copy_pair()
    res = P.patch_heads(model, clean, corrupted, metric)
    assert res.clean == pytest.approx(SCALE, rel=0.02)
    assert res.corrupted == pytest.approx(-SCALE, rel=0.02)
    expected = torch.zeros(1, 4)
    expected[0, copy_head] = 1.0
    assert torch.allclose(res.effect, expected, atol=0.01)
    per_pos = P.patch_heads(model, clean, corrupted, metric, per_position=True).effect
    assert per_pos.shape == (1, 4, 6)
    # only the copy head's output at the scored (last) position matters
    assert float(per_pos[0, copy_head, -1]) == pytest.approx(1.0, abs=0.01)
    assert float(per_pos[0, copy_head, :-1].abs().max()) < 0.01
    assert float(P.path_patch(model, clean, corrupted, metric, (0, copy_head), "logits").effect) \
        == pytest.approx(1.0, abs=0.01)
    layer = P.patch_layers(model, clean, corrupted, metric, site="attn_out")
    assert float(layer.effect[0]) == pytest.approx(1.0, abs=0.01)


def test_bad_arguments_are_refused_by_name():
    model = copy_circuit()
    clean, corrupted, metric = copy_pair()
    with pytest.raises(ValueError, match="direction='sideways'"):
        P.patch_heads(model, clean, corrupted, metric, direction="sideways")
    with pytest.raises(ValueError, match="corrupted="):
        P.patch_heads(model, clean, corrupted[:, :4], metric)
    with pytest.raises(ValueError, match="senders="):
        P.path_patch(model, clean, corrupted, metric, (3, 0), "logits")
    with pytest.raises(ValueError, match="receivers="):
        P.path_patch(model, clean, corrupted, metric, (0, 0), (0, 1, "k"))  # not later
    with pytest.raises(ValueError, match="receivers="):
        P.path_patch(model, clean, corrupted, metric, (0, 0), (1, 1, "x"))
    with pytest.raises(ValueError, match="site='mlp_out'"):
        P.patch_layers(model, clean, corrupted, metric, site="mlp_out")
    with pytest.raises(ValueError, match="good="):
        P.logit_diff(torch.zeros(2, 3, dtype=torch.long), torch.zeros(2, 3, dtype=torch.long),
                     torch.zeros(2, 3, dtype=torch.bool))


def _families():
    task = tasks.get("repeated_blocks")
    post = dict(positions="post_sinusoidal_qk", smear="per_position", init="torch_linear")
    base = dict(n_heads=4, d_model=32, d_vocab=task.d_vocab, n_ctx=task.seq_len, seed=5)
    paren = tasks.get("parentheses", max_len=8)
    birth = tasks.get("bigram_triggers", length=16)
    return {
        "post-2l": (ModelConfig(n_layers=2, **base, **post), task.d_vocab, task.seq_len),
        "post-3l-smeared": (ModelConfig(n_layers=3, smear_keys=True, **base, **post),
                            task.d_vocab, task.seq_len),
        "textbook-2l-smeared": (ModelConfig(n_layers=2, smear_keys=True, **base),
                                task.d_vocab, task.seq_len),
        "shortformer-2l": (ModelConfig(n_layers=2, positions="shortformer", **base),
                           task.d_vocab, task.seq_len),
        "gpt2-style": (gpt2_config(paren, 16, seed=2), paren.d_vocab, paren.seq_len),
        "birth-simplified": (simplified_config(birth, 16, seed=3), birth.d_vocab, birth.seq_len),
    }


@pytest.mark.parametrize("family", list(_families()))
def test_patching_a_sender_into_every_reader_equals_patching_the_sender(family):
    cfg, vocab, seq = _families()[family]
    model = build_model(cfg)
    g = torch.Generator().manual_seed(7)
    clean = torch.randint(0, vocab, (6, seq), generator=g)
    corrupted = torch.randint(0, vocab, (6, seq), generator=g)
    target = torch.randint(0, vocab, (6, seq), generator=g)
    metric = P.target_logprob(target, torch.ones(6, seq, dtype=torch.bool))
    heads = P.patch_heads(model, clean, corrupted, metric)
    assert heads.gap != 0
    for sender in [(0, 0), (0, cfg.n_heads - 1)]:
        full = P.path_patch(model, clean, corrupted, metric, sender, P.downstream(model, sender))
        assert float(full.values) == pytest.approx(float(heads.values[sender]), abs=1e-4)
        # one path alone is generally not the whole effect (the paths really are separate)
        if cfg.n_layers > 1:
            k_only = P.path_patch(model, clean, corrupted, metric, sender, (1, 0, "k"))
            assert float(k_only.values) != pytest.approx(float(heads.values[sender]), abs=1e-6)
    # the model's flags are restored
    assert not model.cfg.use_split_qkv_input and not model.cfg.use_hook_mlp_in
    # layer patching of the input residual is the whole source run
    layer0 = P.patch_layers(model, clean, corrupted, metric, site="resid_pre")
    assert float(layer0.values[0]) == pytest.approx(heads.clean, abs=1e-4)


def test_patching_runs_on_snapshot_models(tmp_path):
    from toymech.training import Experiment, TrainConfig
    from toymech.zoo import Zoo
    exp = experiments.get("induction-2l", size="smoke", seed=0)
    exp = Experiment(exp.task, exp.model, TrainConfig(steps=4, batch_size=8, eval_every=4,
                                                      eval_size=16, snapshots=3), "tiny")
    entry = Zoo(tmp_path).get_or_train(exp, device="cpu", progress=False, log=None)
    model = entry.model_at(entry.snapshot_steps[1])
    g = torch.Generator().manual_seed(0)
    clean, corrupted = exp.task.sample(8, g).tokens, exp.task.sample(8, g).tokens
    metric = P.scored_loss(exp.task.sample(8, torch.Generator().manual_seed(0)))
    res = P.patch_heads(model, clean, corrupted, metric)
    assert res.values.shape == (2, 4) and torch.isfinite(res.values).all()
    full = P.path_patch(model, clean, corrupted, metric, (0, 1), P.downstream(model, (0, 1)))
    assert float(full.values) == pytest.approx(float(res.values[0, 1]), abs=1e-4)


def test_spread_of_effects():
    assert P.spread(torch.tensor([1.0, 0.0, 0.0, 0.0])) == {"top_share": 1.0,
                                                            "effective_number": 1.0}
    even = P.spread(torch.tensor([0.5, -0.5, 0.5, 0.5]))
    assert even["top_share"] == pytest.approx(0.25) and even["effective_number"] == pytest.approx(4)
    assert A.patching is P
