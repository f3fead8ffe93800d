"""``toymech.explore``: the plain face against a hand-built circuit whose answers are known, the
refusals, snapshots of a smoke run, the widget's callbacks and the static snapshot.

The circuit: one attention-only layer, one head, d_model = 2V + T (token one-hot, position
one-hot, and a block the head writes to). Q reads the query's position, K the key's position
shifted by one, so position p attends to p - 1; OV copies the token it reads into the head's
block, which alone the unembedding reads (x 10). So logits at p are 10 * onehot(x_{p-1}): on
``ABABABAB`` every target x_{p+1} = x_{p-1} is predicted.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from transformer_lens import HookedTransformer, HookedTransformerConfig

import toymech.explore
from toymech.explore import snapshot
from toymech.report import external_loads
from toymech.tasks import RepeatedBlocks
from toymech.tasks import get as get_task
from toymech.zoo import Zoo

TASK = RepeatedBlocks(n_blocks=2, block_len=4, n_letters=5)  # vocabulary ABCDE, 8 positions
V, T = TASK.d_vocab, TASK.seq_len
SCALE = 10.0


def previous_token_model(copy: bool = True) -> HookedTransformer:
    """The circuit of the module docstring (``copy=False``: its OV writes nothing, the null)."""
    d = 2 * V + T
    cfg = HookedTransformerConfig(n_layers=1, n_heads=1, d_model=d, d_head=d, n_ctx=T, d_vocab=V,
                                  attn_only=True, normalization_type=None, act_fn="relu", seed=0)
    model = HookedTransformer(cfg)
    attn = model.blocks[0].attn
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()
        model.W_E[:, :V] = torch.eye(V)
        model.W_pos[:, V:V + T] = torch.eye(T)
        for p in range(T):
            attn.W_Q[0, V + p, V + p] = 30.0  # query: its own position
        for k in range(T - 1):
            attn.W_K[0, V + k, V + k + 1] = 1.0  # key at k answers the query at k + 1
        for i in range(V):
            attn.W_V[0, i, i] = 1.0
            attn.W_O[0, i, V + T + i] = 1.0 if copy else 0.0
            model.W_U[V + T + i, i] = SCALE
    return model.eval()


def check_previous_token_circuit(state: dict) -> None:
    """What a previous-token copier shows on ABABABAB at its last position (6, target 'B')."""
    p = state["position"]
    assert (p, state["target"]) == (6, "B")
    row = state["attention"][0, 0]
    assert row[p - 1] > 0.99 and row.sum() == pytest.approx(1.0, abs=1e-5)
    # the head writes sum_k A[p, k] onehot(x_k): its logit for B is 10 x the attention on B's
    on_target = sum(row[k] for k, t in enumerate(state["tokens"]) if t == "B")
    assert state["attribution"][0, 0] == pytest.approx(SCALE * on_target, rel=1e-4)
    assert state["top"][1:7] == list("ABABAB") and min(state["top_prob"][1:7]) > 0.99
    assert max(state["loss"][q] for q in range(1, 7)) < 0.01


@pytest.fixture
def explorer():
    return toymech.explore(previous_token_model(), TASK)


def test_hand_built_circuit_attention_attribution_and_ablation(explorer):
    state = explorer.set_sequence("ABABABAB")
    check_previous_token_circuit(state)
    ablated = explorer.ablate(0, 0)  # zero: no head output, uniform logits
    assert ablated["ablated"] == [(0, 0, "zero")]
    assert ablated["attribution"][0, 0] == 0.0
    assert ablated["target_prob"] == pytest.approx(1 / V)
    assert min(ablated["loss"].values()) == pytest.approx(np.log(V), rel=1e-4)
    mean = explorer.ablate(0, 0, "mean")  # the mean head output: better than chance on nothing
    assert mean["ablated"] == [(0, 0, "mean")] and 0 < mean["target_prob"] < 0.9
    check_previous_token_circuit(explorer.restore(0, 0))


def test_the_circuit_check_fails_on_a_null_model():
    """The same assertions on the circuit with its OV zeroed (attends the same, copies nothing)."""
    null = toymech.explore(previous_token_model(copy=False), TASK)
    with pytest.raises(AssertionError):
        check_previous_token_circuit(null.set_sequence("ABABABAB"))


def test_position_and_target_move_the_views(explorer):
    explorer.set_sequence("ABCDEABC")
    state = explorer.set_position(3, target="C")  # position 3 copies x_2 = 'C'
    assert state["target"] == "C" and state["attention"][0, 0, 2] > 0.99
    assert state["attribution"][0, 0] > 0.99 * SCALE
    other = explorer.set_position(3, target="A")
    assert 0 <= other["attribution"][0, 0] < 0.01 * SCALE  # only the leftover attention on A


def test_patch_moves_the_gap_only_where_the_head_reads(explorer):
    explorer.set_sequence("ABABABAB")
    table = explorer.patch("ABABACAB")  # x_5 differs: what the head at position 6 copies
    assert table.shape == (1, T) and list(table.index) == ["L0H0"]
    assert table.loc["L0H0", "6:A"] == pytest.approx(1.0, abs=1e-3)
    others = table.drop(columns="6:A").to_numpy()
    assert np.allclose(others, 0.0, atol=1e-3)
    with pytest.raises(ValueError, match=r"source_text=.*length 8"):
        explorer.patch("ABAB")


@pytest.mark.parametrize("bad, why", [
    ("ABZ", "'Z' is not a token"), ("ABCDABCDA", "it has 9 tokens"), ("", "it has 0 tokens"),
    ([0, 7], "7 is not a token id in 0..4"), (3.5, "1..8 characters"),
    (torch.zeros(2, 2, dtype=torch.long), "1..8 characters"),
])
def test_bad_sequences_are_refused_naming_parameter_value_and_alphabet(explorer, bad, why):
    with pytest.raises(ValueError, match=r"^sequence=") as info:
        explorer.set_sequence(bad)
    message = str(info.value)
    assert "'ABCDE'" in message and "1..8" in message and why in message


@pytest.mark.parametrize("call, match", [
    (lambda e: e.ablate(1, 0), r"layer=1 is not allowed: an integer in 0..0"),
    (lambda e: e.ablate(0, 2), r"head=2 is not allowed"),
    (lambda e: e.ablate(0, 0, "half"), r"kind='half' is not allowed: one of zero, mean"),
    (lambda e: e.sample("nope"), r"set='nope' is not allowed: one of sampler, test"),
    (lambda e: e.set_position(8), r"position=8 is not allowed: an integer in 0..7"),
    (lambda e: e.at_step(10), r"step=10 is not allowed: None \(the final weights\): this model has no weight"),
])
def test_bad_calls_are_refused(explorer, call, match):
    with pytest.raises(ValueError, match=match):
        call(explorer)


def test_bad_models_are_refused():
    with pytest.raises(ValueError, match=r"^model='no-such' is not allowed: .*induction-2l"):
        toymech.explore("no-such")
    with pytest.raises(ValueError, match=r"^model='int' is not allowed"):
        toymech.explore(3)
    with pytest.raises(ValueError, match=r"^task=None is not allowed"):
        toymech.explore(previous_token_model())
    with pytest.raises(ValueError, match=r"^size='huge' is not allowed"):
        toymech.explore(previous_token_model(), TASK, size="huge")


def test_sequences_in_other_vocabularies():
    needle = get_task("needle")
    ids = toymech.explore.sequence.encode("k2 v7 k3 v4 ? k3", needle.vocab, needle.seq_len)
    assert needle.decode(ids, " ") == "k2 v7 k3 v4 ? k3"
    birth = get_task("bigram_triggers")
    text = toymech.explore.sequence.encode("To be\n", birth.vocab, birth.seq_len)
    assert birth.decode(text) == "To␣be⏎"


def test_samples_come_from_the_sampler_and_the_named_sets(explorer):
    assert explorer.sets[:3] == ["sampler", "test", "doubled"]
    doubled = explorer.sample("doubled")["tokens"]
    assert doubled[0::2] == doubled[1::2]  # AABB...
    sets = explorer.eval_sets()
    assert doubled == TASK.str_tokens(sets["doubled"].tokens[0])
    assert explorer.sample("doubled")["tokens"] == TASK.str_tokens(sets["doubled"].tokens[1])
    drawn = [explorer.sample()["tokens"] for _ in range(4)]
    assert all(d[:4] == d[4:] and len(d) == T for d in drawn)  # the task's own sampler
    assert len({"".join(d) for d in drawn}) > 1  # fresh draws, not one sequence again


@pytest.fixture(scope="module")
def smoke_entry(tmp_path_factory):
    """Study 1's 2-layer model at smoke (40 steps, snapshots at 0, 1, 6, 40) in a zoo of its own."""
    from toymech import experiments

    zoo = Zoo(tmp_path_factory.mktemp("explore-zoo"))
    return zoo.get_or_train(experiments.get("induction-2l", "smoke", 0), device="cpu",
                            progress=False, log=None)


def test_at_step_reads_the_nearest_snapshot(smoke_entry):
    assert smoke_entry.snapshot_steps == [0, 1, 6, 40]
    x = toymech.explore(smoke_entry)
    x.set_sequence("ABCDEFABCDEFABCDEFABCDEF")
    final = x.state()
    at5 = x.at_step(5)  # nearest: 6
    assert at5["step"] == 6
    direct = toymech.explore(smoke_entry.model_at(6), x.task)
    direct.set_sequence("ABCDEFABCDEFABCDEFABCDEF")
    expected = direct.state()
    assert np.allclose(at5["attention"], expected["attention"], atol=1e-6)
    assert np.allclose(at5["attribution"], expected["attribution"], atol=1e-5)
    assert not np.allclose(x.at_step(0)["attention"], final["attention"], atol=1e-4)
    back = x.at_step(None)
    assert back["step"] is None and np.allclose(back["attribution"], final["attribution"])


def test_experiment_name_loads_from_the_zoo(smoke_entry):
    x = toymech.explore("induction-2l", size="smoke", cache_dir=smoke_entry.path.parent)
    assert x.snapshot_steps == [0, 1, 6, 40] and x.source.study is not None
    assert "option1" in x.sets and x.widget.step is not None


def test_widget_callbacks_redraw_the_views(explorer):
    ui = explorer.widget
    ui.text.value = "ABABABAB"
    assert explorer.text() == "ABABABAB" and ui.position.value == 6
    before = (ui.strip.value, ui.caption.value, ui.heatmap.outputs)
    ui.toggles[(0, 0)].value = True
    assert explorer.ablated == [(0, 0, "zero")]
    assert ui.strip.value != before[0] and "L0H0 (zero)" in ui.caption.value
    assert ui.heatmap.outputs != before[2]
    ui.toggles[(0, 0)].value = False
    assert explorer.ablated == [] and ui.strip.value == before[0]
    ui.text.value = "ABZ"
    assert "sequence=" in ui.error.value and explorer.text() == "ABABABAB"
    ui.set.value = "doubled"
    ui.sample.click()
    assert ui.error.value == "" and explorer.text()[0] == explorer.text()[1]
    html = ui.attention.outputs[0]["data"]["text/html"]
    assert "toymech-circuitsvis" in html and "AttentionHeads" in html


def test_static_snapshot_is_offline_and_says_it_needs_a_kernel(explorer):
    explorer.set_sequence("ABABABAB")
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    page = bundle["text/html"]
    assert snapshot.LIVE_NOTE.split(".")[1].strip()[:20] in page.replace("&#x27;", "'")
    assert "toymech-explore-strip" in page and "toymech-explore-attribution" in page
    assert external_loads(page) == []
    assert "session" not in page.lower().replace("sessioncontext", "")


def test_a_report_shows_the_snapshot_not_the_widget(explorer):
    """A reader's page has no widget manager: ``report.prepare`` keeps the explorer's static
    HTML and drops its widget view (both in reader and in code mode)."""
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    from toymech.report import prepare

    bundle = explorer._repr_mimebundle_()
    cell = new_code_cell("toymech.explore(model)", execution_count=1,
                         outputs=[new_output("execute_result", data=bundle, execution_count=1)])
    for code in (False, True):
        nb, _ = prepare(new_notebook(cells=[new_markdown_cell("# t"), cell]), code=code)
        (output,) = nb.cells[-1].outputs
        assert set(output["data"]) == {"text/html", "text/plain"}
        assert output["data"]["text/html"] == bundle["text/html"]
