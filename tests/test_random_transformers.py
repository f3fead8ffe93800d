"""The random-transformers study: configs, freezing modes, analysis, baselines, notebook."""

import math
from pathlib import Path

import numpy as np
import pytest
import torch

from toymech import presets
from toymech.analysis.subspace import concentration, explained_variance, hidden_states
from toymech.baselines import BaselineConfig, build_baseline, train_baseline
from toymech.models import build_model
from toymech.studies import random_transformers as rt
from toymech.training import train
from toymech.zoo import Zoo

NOTEBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "03_random_transformers.ipynb"


def test_unknown_modes_sizes_and_widths_raise():
    with pytest.raises(ValueError, match="mode='frozen' is not allowed.*normal, random"):
        rt.freeze_patterns("frozen")
    with pytest.raises(ValueError, match=r"mode=.E\+U. is not allowed"):
        rt.experiment("needle", 16, "E+U", "smoke")
    with pytest.raises(ValueError, match="preset='huge'"):
        rt.experiment("needle", 16, "random", "huge")
    with pytest.raises(ValueError, match="width=10 is not allowed"):
        rt.experiment("needle", 10, "random", "smoke")
    with pytest.raises(ValueError, match="task='sorting'"):
        rt.task_for("sorting", "smoke")


def test_gpt2_config_and_scaled_init():
    exp = rt.experiment("decimal_addition", 64, "normal", "smoke", seed=3)
    cfg = exp.model
    assert (cfg.n_layers, cfg.n_heads, cfg.d_mlp, cfg.normalization, cfg.act_fn) == \
        (2, 4, 256, "LN", "gelu")
    model = build_model(cfg)
    std = lambda name: float(dict(model.named_parameters())[name].detach().std())  # noqa: E731
    assert std("embed.W_E") == pytest.approx(0.02, rel=0.15)
    assert std("blocks.0.attn.W_Q") == pytest.approx(0.02, rel=0.15)
    assert std("blocks.1.mlp.W_out") == pytest.approx(0.02 / math.sqrt(4), rel=0.15)
    assert std("blocks.0.attn.W_O") == pytest.approx(0.02 / math.sqrt(4), rel=0.15)


@pytest.mark.parametrize("mode, trained", [
    ("normal", None),
    ("random", {"embed.W_E", "pos_embed.W_pos", "unembed.W_U", "unembed.b_U"}),
    ("E_token+U", {"embed.W_E", "unembed.W_U", "unembed.b_U"}),
    ("E_token+E_pos", {"embed.W_E", "pos_embed.W_pos"}),
    ("U", {"unembed.W_U", "unembed.b_U"}),
])
def test_freezing_leaves_frozen_tensors_bit_identical(mode, trained):
    exp = rt.experiment("parentheses", 16, mode, "smoke", steps=15, eval_every=15, eval_size=32)
    model = build_model(exp.model)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    train(model, exp.task, exp.train, device="cpu", progress=False, log=None)
    after = dict(model.named_parameters())
    changed = {n for n in before if not torch.equal(before[n], after[n])}
    if trained is None:  # normal: everything with a gradient moves
        assert {"blocks.0.attn.W_Q", "blocks.1.mlp.W_in", "ln_final.w", "embed.W_E"} <= changed
    else:
        assert changed == trained


def test_presets_registered():
    names = presets.names()
    for task in rt.ALGORITHMIC:
        assert f"rt-{task}-random" in names and f"rt-{task}-normal" in names
    exp = presets.get("rt-needle-random", "smoke", seed=2)
    assert exp.train.freeze == rt.FREEZE_MODES["random"] and exp.model.seed == 2


def test_explained_variance_against_numpy():
    rng = np.random.default_rng(0)
    # known matrix: 3 strong directions in 20 dimensions plus small noise, mixed by a rotation
    latent = rng.normal(size=(500, 20)) * np.array([10, 5, 3] + [0.1] * 17)
    q, _ = np.linalg.qr(rng.normal(size=(20, 20)))
    x = latent @ q.T + 4.0
    xc = x - x.mean(0)
    eig = np.sort(np.linalg.eigvalsh(np.cov(xc, rowvar=False)))[::-1]
    for k in (1, 3, 10):
        ours = explained_variance(torch.tensor(x), k, "principal")
        assert ours == pytest.approx(eig[:k].sum() / eig.sum(), rel=1e-9)
        var = np.sort(xc.var(0))[::-1]
        assert explained_variance(torch.tensor(x), k, "neuron") == \
            pytest.approx(var[:k].sum() / var.sum(), rel=1e-9)
    assert explained_variance(torch.tensor(x), 3) > 0.99  # rotated: principal basis finds it
    assert explained_variance(torch.tensor(x), 3, "neuron") < 0.5  # the neuron basis does not
    assert explained_variance(torch.tensor(x), 25) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="basis='pca'"):
        explained_variance(torch.tensor(x), 3, "pca")
    with pytest.raises(ValueError, match="zero variance"):
        explained_variance(torch.ones(5, 3), 1)


def test_hidden_states_and_concentration():
    exp = rt.experiment("needle", 16, "random", "smoke")
    model = build_model(exp.model)
    batch = exp.task.sample(8, torch.Generator().manual_seed(0))
    states = hidden_states(model, batch.tokens)
    assert list(states) == ["embedding", "layer 1", "layer 2"]
    assert states["layer 2"].shape == (8 * exp.task.seq_len, 16)
    emb = model.W_E[batch.tokens] + model.W_pos[: batch.tokens.shape[1]]
    assert torch.allclose(states["embedding"], emb.reshape(-1, 16), atol=1e-6)
    table = concentration(model, batch.tokens, k=4)
    assert set(table) == {(l, b) for l in states for b in ("principal", "neuron")}
    assert all(0 < v <= 1 for v in table.values())


@pytest.mark.parametrize("kind", ["lstm", "linearised"])
def test_baselines_shapes_causality_and_training(kind, tmp_path):
    cfg = BaselineConfig(kind, 16, 10, 12, seed=0)
    model = build_baseline(cfg)
    toks = torch.randint(0, 10, (3, 12), generator=torch.Generator().manual_seed(0))
    out = model(toks)
    assert out.shape == (3, 12, 10)
    changed = toks.clone()
    changed[:, 7:] = (changed[:, 7:] + 1) % 10
    assert torch.allclose(model(changed)[:, :7], out[:, :7], atol=1e-5)  # causal
    task = rt.task_for("parentheses", "smoke")
    tcfg = rt.train_config("smoke", "normal", steps=40, eval_every=20, eval_size=64, lr=3e-3)
    trained, meta = train_baseline(kind, task, 16, tcfg, cache_dir=tmp_path)
    hist = meta["history"]
    assert hist[-1]["train_loss"] < hist[0]["train_loss"] and not meta["loaded"]
    again, meta2 = train_baseline(kind, task, 16, tcfg, cache_dir=tmp_path)
    assert meta2["loaded"]
    for a, b in zip(trained.parameters(), again.parameters()):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="kind='gru'"):
        BaselineConfig("gru", 16, 10, 12)


def test_linearised_attention_is_a_prefix_sum():
    cfg = BaselineConfig("linearised", 8, 5, 6, n_layers=1)
    block = build_baseline(cfg).blocks[0]
    x = torch.randn(2, 6, 8, generator=torch.Generator().manual_seed(1))
    v = block.W_V(block.ln1(x))
    ones = torch.tril(torch.ones(6, 6))
    expected = x + block.W_O(ones @ v)
    expected = expected + block.mlp(block.ln2(expected))
    assert torch.allclose(block(x), expected, atol=1e-5)


def test_run_grid_rows_and_summary(tmp_path):
    df = rt.run_grid(["parentheses"], [8], ["normal", "random"], [0, 1], "smoke",
                     Zoo(tmp_path), steps=10, eval_every=10)
    assert len(df) == 4 and set(df["mode"]) == {"normal", "random"}
    assert (df.loc[df["mode"] == "random", "trainable"] <
            df.loc[df["mode"] == "normal", "trainable"].values).all()
    summary = rt.summarize(df)
    assert list(summary["runs"]) == [2, 2]
    again = rt.run_grid(["parentheses"], [8], ["normal"], [0], "smoke", Zoo(tmp_path),
                        steps=10, eval_every=10)
    assert bool(again["loaded"].iloc[0])


def test_notebook_runs_at_smoke(tmp_path):
    papermill = pytest.importorskip("papermill")
    out = tmp_path / "out.ipynb"
    papermill.execute_notebook(str(NOTEBOOK), str(out), parameters=dict(threads=1, 
        preset="smoke", cache_dir=str(tmp_path / "zoo")), kernel_name="python3")
    text = out.read_text()
    assert "Traceback" not in text and "accuracy" in text


def test_multiseed_matches_sequential_training(tmp_path):
    from toymech.multiseed import get_or_train_seeds, train_seeds
    exps = [rt.experiment("parentheses", 8, "random", "smoke", s, steps=6, eval_every=3)
            for s in (0, 1)]
    stacked = train_seeds(exps, "cpu")
    for exp, (model, history, _) in zip(exps, stacked):
        ref = build_model(exp.model)
        result = train(ref, exp.task, exp.train, device="cpu", progress=False, log=None)
        for (name, a), b in zip(ref.named_parameters(), model.parameters()):
            assert torch.allclose(a, b, atol=1e-5), name
        assert [r["step"] for r in history] == [r["step"] for r in result.history]
        assert history[-1]["eval_loss"] == pytest.approx(result.history[-1]["eval_loss"], abs=1e-4)
    with pytest.raises(ValueError, match="differ only in their seeds"):
        train_seeds([exps[0], rt.experiment("parentheses", 16, "random", "smoke", 1)], "cpu")
    zoo = Zoo(tmp_path)
    entries = get_or_train_seeds(exps, zoo, "cpu")
    assert all(e.loaded for e in entries)  # trained together, then read back from the zoo
    row = rt.run(exps[1], zoo)
    assert row["loaded"]


def test_claims_table_verdicts_follow_the_numbers():
    import pandas as pd
    summary = pd.DataFrame([
        {"task": "needle", "width": 16, "mode": "random", "median": 0.4},
        {"task": "needle", "width": 64, "mode": "random", "median": 0.97},
        {"task": "needle", "width": 64, "mode": "normal", "median": 1.0},
        {"task": "parentheses", "width": 16, "mode": "random", "median": 0.6},
        {"task": "parentheses", "width": 64, "mode": "random", "median": 0.6},
        {"task": "parentheses", "width": 64, "mode": "normal", "median": 0.9},
    ])
    mem = pd.DataFrame({"mode": ["normal", "random"], "bits_per_param": [1.0, 2.0]})
    circ = pd.DataFrame({"target_width": [4, 4, 64, 64], "mode": ["normal", "random"] * 2,
                         "kl": [0.1, 0.1, 0.2, 0.5]})
    table = rt.claims_table(summary, (16, 64), mem, circ)
    verdicts = dict(zip(table["claim"], table["verdict"]))
    assert verdicts["random transformers solve needle"].startswith("reproduced")
    assert verdicts["random transformers solve parentheses"].startswith("not reproduced")
    assert verdicts["normal stores more bits per trainable parameter than random"] == \
        "not reproduced"
    assert verdicts["random students fall behind as the target gets wider"] == "reproduced"


def test_run_grid_stacked_equals_sequential_rows(tmp_path):
    kw = dict(steps=6, eval_every=6)
    a = rt.run_grid(["needle"], [8], ["random"], [0, 1], "smoke", Zoo(tmp_path / "a"),
                    stacked=True, **kw)
    b = rt.run_grid(["needle"], [8], ["random"], [0, 1], "smoke", Zoo(tmp_path / "b"),
                    stacked=False, **kw)
    assert list(a["seed"]) == [0, 1] and bool(a["loaded"].all())
    assert a["acc"].tolist() == pytest.approx(b["acc"].tolist(), abs=0.02)
    assert a["loss"].tolist() == pytest.approx(b["loss"].tolist(), abs=1e-3)


@pytest.mark.parametrize("size", ["smoke", "default", "paper"])
def test_every_plan_builds_valid_experiments(size):
    p = rt.plan(size)
    names = set()
    for task in p.table_tasks:
        for width in p.widths:
            for mode in ("normal", "random"):
                names.add(rt.experiment(task, width, mode, size).name)
    for task in p.ablation_tasks:
        for mode in p.ablation_modes:
            rt.experiment(task, p.widths[-1], mode, size)
    for task in p.sweep_tasks:
        for width in p.sweep_widths:
            rt.experiment(task, width, "random", size)
    for width in p.memorization_widths:
        rt.experiment("memorization", width, "normal", size)
    for tw in p.circuit_target_widths:
        exp = rt.experiment("circuit_imitation", p.circuit_student_width, "random", size,
                            task_overrides={"target_width": tw})
        assert exp.train.steps == rt.SIDE_STEPS[size]
    rt.experiment("char_lm", p.lm_width, "normal", size)
    assert len(names) == 4 * 2 * 2
    if size == "paper":
        exp = rt.experiment("modular_addition", 1024, "random", "paper")
        assert (exp.task.p, exp.train.steps, exp.train.warmup_steps) == (199, 50_000, 500)
        assert exp.train.batch_size == 1000 and exp.train.grad_clip == 1.0
