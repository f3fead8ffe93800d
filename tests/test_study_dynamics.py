"""Each study's metrics and attention patterns through training (``studies/<s>/dynamics.py``):
promised keys, finite values, patterns that are causal distributions, a loss that falls with
training, and known answers on hand-built weights."""

import copy
import math

import numpy as np
import pytest
import torch

from toymech import tasks
from toymech.analysis import attention_patterns, probes
from toymech.models import build_model
from toymech.studies import protocol
from toymech.studies.birth import dynamics as bdyn
from toymech.studies.birth import example_batch
from toymech.studies.birth import experiment as birth_experiment
from toymech.studies.birth.design import simplified_config
from toymech.studies.birth.measure import evaluate_sets
from toymech.studies.induction import dynamics as idyn
from toymech.studies.induction import experiment as induction_experiment
from toymech.studies.random_transformers import dynamics as rdyn
from toymech.studies.random_transformers.design import experiment as rt_experiment
from toymech.studies.trajectory import example_patterns
from toymech.training import train


def trained(model, exp, **changes):
    """A copy of ``model`` after a short training run of ``exp`` (``changes`` to its config)."""
    model = copy.deepcopy(model)
    steps = changes.get("steps", exp.train.steps)
    cfg = exp.train.replace(eval_every=steps, eval_size=16, **changes)  # one small evaluation
    train(model, exp.task, cfg, device="cpu", progress=False, log=None)
    return model


def setup(dyn, exp, probe_kwargs, train_kwargs):
    """(probe data of seed 0, the untrained model, a briefly trained copy)."""
    model = build_model(exp.model)
    return (dyn.probe_data(exp.task, "smoke", 0, **probe_kwargs), model,
            trained(model, exp, **train_kwargs))


def before_after(dyn, fixture, keys, drop):
    """Metrics of the untrained and the trained model: the promised keys, finite floats, the
    compared names among them, the test loss lower by ``drop`` after training."""
    data, model, after = fixture
    before, late = dyn.dynamics_metrics(model, data), dyn.dynamics_metrics(after, data)
    for m in (before, late):
        check_metrics(m, keys)
        assert set(dyn.DYNAMICS_METRICS) <= set(m)
    assert late["test_loss"] < before["test_loss"] - drop
    return before, late


def check_metrics(metrics, keys):
    assert set(metrics) == set(keys)
    for key, value in metrics.items():
        assert isinstance(value, float) and math.isfinite(value), (key, value)


def check_patterns(result, n_heads, length, tokens=None):
    pats, heads, labels = result
    assert isinstance(pats, np.ndarray) and pats.dtype == np.float32
    assert pats.shape == (n_heads, length, length)
    assert len(heads) == n_heads and heads[0] == "L0H0" and len(set(heads)) == n_heads
    assert len(labels) == length and all(isinstance(t, str) for t in labels)
    if tokens is not None:
        assert labels == tokens
    np.testing.assert_allclose(pats.sum(-1), 1.0, atol=1e-5)  # each query: a distribution
    assert np.all(np.triu(pats, k=1) == 0)                   # causal: no later key
    assert np.all(pats >= 0)


# --- induction ----------------------------------------------------------------------------------
IND_EXP = induction_experiment("induction-2l", "smoke", 0)
IND_KEYS = ({f"{s}_loss" for s in ("test", "doubled", "option1", "option2")}
            | {"direct_copy", "prev_token_max", "induction_max", "kcomp_max", "kcomp_baseline",
               "qcomp_max", "qcomp_baseline", "first_block_loss", "repeat_loss"}
            | {f"copy_{m}_L{layer}" for m in ("max", "min") for layer in (0, 1)}
            | {"causal_pref", "causal_recent_min", "causal_q_drop", "causal_k_drop",
               "causal_v_drop", "causal_layer1_restored"})


@pytest.fixture(scope="module")
def ind():
    return setup(idyn, IND_EXP, dict(eval_n=64), dict(lr=1e-2, steps=20, batch_size=32))


def test_induction_metrics_keys_and_training(ind):
    data, model, _ = ind
    before, late = before_after(idyn, ind, IND_KEYS, 0.05)
    assert late["kcomp_baseline"] == before["kcomp_baseline"]  # a reference line: constant
    assert late["qcomp_baseline"] == before["qcomp_baseline"]
    # the per-position split averages back to the test loss (5 first-block + 18 repeat targets)
    assert math.isclose((5 * late["first_block_loss"] + 18 * late["repeat_loss"]) / 23,
                        late["test_loss"], rel_tol=1e-4)
    assert idyn.dynamics_metrics(model, data) == before  # a pure function of the model


def test_induction_metrics_on_hand_built_weights(ind):
    data, model, _ = ind
    model = copy.deepcopy(model)
    with torch.no_grad():
        model.unembed.W_U.copy_(model.W_E.T)  # W_E W_U = W_E W_Eᵀ: PSD, every λ >= 0
    assert idyn.dynamics_metrics(model, data)["direct_copy"] > 0.99
    with torch.no_grad():
        model.unembed.W_U.copy_(-model.W_E.T)  # the post's suppression: every λ <= 0
        a0, a1 = model.blocks[0].attn, model.blocks[1].attn
        a1.W_K[0] = a0.W_O[0].T.clone()  # L1H0's keys read exactly what L0H0 writes
    m = idyn.dynamics_metrics(model, data)
    assert m["direct_copy"] < -0.99
    assert m["kcomp_max"] > 2 * m["kcomp_baseline"]


def test_induction_patterns_and_probe_data(ind):
    data, model, after = ind
    T = IND_EXP.task.seq_len
    check_patterns(example_patterns(after, data), 8, T,
                   IND_EXP.task.str_tokens(data.example))
    pats = example_patterns(after, data)[0]
    np.testing.assert_allclose(pats[5], attention_patterns(after, data.example)[1, 1].numpy())
    block = data.example[:IND_EXP.task.block_len].tolist()
    assert len(set(block)) == len(block)  # an unambiguous example: distinct letters
    again = idyn.probe_data(IND_EXP.task, "smoke", 0, eval_n=64)
    other = idyn.probe_data(IND_EXP.task, "smoke", 1, eval_n=64)
    assert torch.equal(again.sets["test"].tokens, data.sets["test"].tokens)
    assert torch.equal(again.example, data.example)
    assert not torch.equal(other.sets["test"].tokens, data.sets["test"].tokens)
    assert {"test", "doubled", "option1", "option2"} <= set(data.sets)  # + the mechanism sets
    assert len(data.sets["option1"]) == 64 and data.pattern_tokens.shape == (64, T)


# --- birth --------------------------------------------------------------------------------------
BIRTH_EXP = birth_experiment("smoke", 0)
BIRTH_KEYS = {"test_loss", "test_acc", "icl_loss", "icl_acc", "bigram_loss", "bigram_acc",
              "ood_icl_acc", "probe_wk1", "probe_wk2", "probe_wo2", "probe_wf_kl", "attn_prev",
              "attn_induction", "kcomp", "causal_head_moves", "causal_value_moves",
              "causal_k_share"}


@pytest.fixture(scope="module")
def birth():
    return setup(bdyn, BIRTH_EXP, dict(), dict(steps=20))


def test_birth_metrics_keys_training_and_tables(birth):
    _, _, after = birth
    _, late = before_after(bdyn, birth, BIRTH_KEYS, 0.05)
    # the last snapshot reads what the study's tables read: same sets, same functions
    ref = evaluate_sets(after, BIRTH_EXP.task, "smoke", 0)
    assert late["icl_acc"] == pytest.approx(ref["test"]["icl_acc"])
    assert late["ood_icl_acc"] == pytest.approx(ref["ood"]["icl_acc"])
    triggers = BIRTH_EXP.task.fixed_triggers
    assert late["probe_wk2"] == probes.model_probes(after, BIRTH_EXP.task.pi_b, triggers)[
        "probe_wk2"]


def test_birth_output_memory_probe_on_the_papers_construction():
    # The paper's output memory W_O² = Σ_k e_kᵀ u_kᵀ recalls every token when d is large enough
    # for random embeddings to be nearly orthogonal; a random W_O² recalls about 1/N of them.
    model = build_model(simplified_config(BIRTH_EXP.task, d_model=64, seed=0))
    data = bdyn.probe_data(BIRTH_EXP.task, "smoke", 0, eval_n=16)
    assert bdyn.dynamics_metrics(model, data)["probe_wo2"] < 0.2
    built = probes.construction(model, BIRTH_EXP.task.pi_b)["W_O2 (output copy)"]
    with torch.no_grad():
        model.blocks[1].attn.W_O[0] = built  # W_V = I in the simplified model: OV₂ = W_O²
    assert bdyn.dynamics_metrics(model, data)["probe_wo2"] > 0.9


def test_birth_patterns_window_and_example(birth):
    data, model, after = birth
    T = BIRTH_EXP.task.seq_len  # 16 at smoke: the whole sequence
    check_patterns(example_patterns(after, data), 2, T,
                   BIRTH_EXP.task.str_tokens(data.example))
    # longer sequences: the first 64 positions, the patterns of the full sequence's first rows
    task = tasks.get("bigram_triggers", length=100)
    long = bdyn.probe_data(task, "smoke", 0, eval_n=8)
    assert long.example.shape == (bdyn.WINDOW,)
    model = build_model(simplified_config(task, d_model=16, seed=0))
    pats = example_patterns(model, long)[0]
    check_patterns((pats, [f"L{i}H0" for i in range(2)], ["x"] * 64), 2, 64)
    full = example_batch(task, 0, 8).tokens
    row = next(i for i in range(8) if torch.equal(full[i, :64], long.example))
    np.testing.assert_allclose(
        pats, attention_patterns(model, full[row])[:, 0, :64, :64].numpy(), atol=1e-6)
    again = bdyn.probe_data(BIRTH_EXP.task, "smoke", 0, )
    assert torch.equal(again.test.tokens, data.test.tokens)
    assert torch.equal(again.example, data.example)


# --- random transformers ------------------------------------------------------------------------
RT_EXP = rt_experiment("parentheses", 16, "random", "smoke", 0)
EV_KEYS = {f"ev_{b}_{layer}" for b in ("principal", "neuron")
           for layer in ("embedding", "layer1", "layer2")} | {"ev_principal_mean"}


@pytest.fixture(scope="module")
def rt():
    return setup(rdyn, RT_EXP, dict(eval_n=128, probe_n=64), dict(steps=20, lr=1e-2))


def test_random_transformer_metrics_keys_and_training(rt):
    _, model, after = rt
    before, late = before_after(rdyn, rt, {"test_loss", "test_acc", "train_loss", "train_acc"} | EV_KEYS, 0.1)
    assert late["test_acc"] > before["test_acc"]
    # random mode: the frozen layers are untouched, only the embeddings moved
    assert torch.equal(after.blocks[0].attn.W_Q, model.blocks[0].attn.W_Q)
    assert late["ev_principal_embedding"] != before["ev_principal_embedding"]


def test_random_transformer_concentration_known_cases(rt):
    data, model, _ = rt
    # k is an eighth of the width (at least 2): a share of the directions, not a fixed 10
    from toymech.studies.random_transformers.measure import top_k
    assert (top_k(8), top_k(64), top_k(1024)) == (2, 8, 128)
    narrow = build_model(rt_experiment("parentheses", 8, "random", "smoke", 0).model)
    assert all(0 < v <= 1 + 1e-6 for k, v in rdyn.dynamics_metrics(narrow, data).items()
               if k.startswith("ev_"))
    # embeddings on one line (every token a multiple of one vector, no positions): EV_1 = 1
    assert rdyn.dynamics_metrics(model, data)["ev_principal_embedding"] < 0.999
    model = copy.deepcopy(model)
    with torch.no_grad():
        direction = torch.randn(16, generator=torch.Generator().manual_seed(0))
        model.embed.W_E.copy_(torch.arange(1.0, model.cfg.d_vocab + 1)[:, None] * direction)
        model.pos_embed.W_pos.zero_()
    m = rdyn.dynamics_metrics(model, data)
    assert m["ev_principal_embedding"] == pytest.approx(1.0)


def test_random_transformer_patterns_and_example(rt):
    data, _, after = rt
    check_patterns(example_patterns(after, data), 8, len(data.example),
                   RT_EXP.task.str_tokens(data.example))
    assert data.example[-2] == RT_EXP.task.vocab.index("?")  # cut right after the answer
    needle = rt_experiment("needle", 16, "random", "smoke", 0).task
    nd = rdyn.probe_data(needle, "smoke", 0, eval_n=8, probe_n=8)
    assert needle.str_tokens(nd.example)[-3] == "?"  # query marker, key, value: no padding
    again = rdyn.probe_data(RT_EXP.task, "smoke", 0, eval_n=128, probe_n=64)
    other = rdyn.probe_data(RT_EXP.task, "smoke", 1, eval_n=128, probe_n=64)
    assert torch.equal(again.probe_tokens, data.probe_tokens)
    assert torch.equal(again.example, data.example)
    assert not torch.equal(other.sets["test"].tokens, data.sets["test"].tokens)


# The run each study's through-training test trains: one cheap run of the study's own smoke
# experiments; a study not named here (a new one, the template) is covered by the first of
# ``experiments("smoke", (0,))`` that keeps snapshots.
THROUGH_TRAINING_RUN = {
    "induction": lambda: induction_experiment("induction-2l", "smoke", 0),
    "birth": lambda: birth_experiment("smoke", 0),
    "random_transformers": lambda: rt_experiment("parentheses", 16, "random", "smoke", 0),
}


def _through_training_run(name):
    study = protocol.study(name)
    if name in THROUGH_TRAINING_RUN:
        return study, THROUGH_TRAINING_RUN[name]()
    return study, next(e for e in study.experiments("smoke", (0,)) if e.train.snapshots)


@pytest.mark.parametrize("study", [*protocol.STUDIES, protocol.TEMPLATE])
def test_through_training_walks_the_zoo_snapshots(tmp_path, study):
    """A study's smoke experiment keeps snapshots; ``through_training`` measures each, the last
    row equals the final model's metrics, the transitions are among the study's metrics, and the
    scrubber has one slider step per snapshot (over ``protocol.STUDIES`` and the template)."""
    from toymech.studies.trajectory import over_seeds
    from toymech.zoo import Zoo

    mod, exp = _through_training_run(study)
    assert exp.train.snapshots, "the study's runs keep snapshots"
    entry = Zoo(tmp_path).get_or_train(exp, device="cpu", progress=False, log=None)
    data = mod.probe_data(exp.task, "smoke", 0, "cpu")
    path = mod.through_training(entry, data, "run")
    assert path.steps == list(exp.train.snapshot_steps) == list(path.curves["step"])
    final = mod.dynamics_metrics(entry.model, data)
    last = path.curves.iloc[-1]
    assert all(math.isclose(last[k], v, rel_tol=1e-5, abs_tol=1e-6) for k, v in final.items())
    assert set(path.transitions["metric"]) <= set(mod.dynamics_names) | set(path.shown)
    assert set(path.shown) == set(mod.dynamics_shown) & set(path.curves)
    assert path.sentence().startswith("run:")
    fig = path.figure()
    assert len(fig.layout.sliders[0].steps) == len(path.steps)
    table = over_seeds([path, path])
    compared = [m for m in path.transitions["metric"] if m in path.metrics]  # not the shown ones
    assert set(table["seeds"]) == {2} and list(table["metric"]) == compared


def test_birth_patching_effects_at_a_snapshot_match_the_causal_module(birth):
    """The per-snapshot effects are ``causal.causal_metrics`` on the probe data's sequences;
    without them (``n_causal=None``) the metrics lack them; an untrained model moves almost no
    prediction to the patched output."""
    from toymech.studies.birth import causal as bcausal

    data, model, after = birth
    assert data.causal.clean.shape[0] == bdyn.N_CAUSAL
    m = bdyn.dynamics_metrics(after, data)
    ref = bcausal.causal_metrics(after, data.causal)
    assert {k: m[f"causal_{k}"] for k in ref} == pytest.approx(ref)
    bare = bdyn.probe_data(BIRTH_EXP.task, "smoke", 0, n_causal=None)
    assert not any(k.startswith("causal_") for k in bdyn.dynamics_metrics(after, bare))
    assert bdyn.dynamics_metrics(model, data)["causal_head_moves"] < 0.3
    # a task with no triggers has nothing to patch: no causal data, no error
    none = tasks.get("bigram_triggers", length=16, variant="no_triggers")
    assert bdyn.probe_data(none, "smoke", 0, eval_n=8).causal is None


@pytest.mark.parametrize("dyn", [idyn, bdyn], ids=["induction", "birth"])
def test_the_scrubber_draws_the_patching_effects_with_their_transitions(dyn):
    """``through_training`` shows each study's CAUSAL_SHOWN: curves in the figure and rows in
    the transition table, beside (not among) the compared metrics."""
    from toymech.studies.trajectory import trajectory

    exp = IND_EXP if dyn is idyn else BIRTH_EXP
    model = build_model(exp.model)

    class Snapshots:  # two snapshots: the untrained model and a briefly trained copy
        snapshot_steps = [0, 20]
        meta = {"name": "test"}
        models = {0: model, 20: trained(model, exp, steps=20)}

        def model_at(self, step):
            return self.models[step]

    data = dyn.probe_data(exp.task, "smoke", 0)
    path = trajectory(Snapshots(), "test", dyn.dynamics_metrics, example_patterns, data,
                      dyn.DYNAMICS_METRICS, shown=dyn.CAUSAL_SHOWN)
    assert path.shown == dyn.CAUSAL_SHOWN and not set(path.shown) & set(path.metrics)
    assert set(dyn.CAUSAL_SHOWN) <= set(path.transitions["metric"])
    from toymech.plots.labels import label
    names = {trace.name for trace in path.figure().data if trace.name}
    # each shown effect is drawn (a rescaled curve's legend adds its raw range after the label)
    assert all(any(n == label(k) or n.startswith(label(k) + " (") for n in names)
               for k in dyn.CAUSAL_SHOWN), names
