import math

import pytest
import torch
from transformer_lens import FactoredMatrix

from toymech import analysis, tasks
from toymech.models import ModelConfig, build_model

TASK = tasks.get("repeated_blocks")


def rotation(theta: float) -> torch.Tensor:
    return torch.tensor([[math.cos(theta), -math.sin(theta)], [math.sin(theta), math.cos(theta)]])


def test_copy_score_on_hand_built_matrices():
    assert float(analysis.copy_score(torch.eye(5))) == pytest.approx(1.0)
    assert float(analysis.copy_score(-torch.eye(5))) == pytest.approx(-1.0)
    assert float(analysis.copy_score(rotation(1.0))) == pytest.approx(math.cos(1.0), abs=1e-6)
    # eigenvalues 3, 3, -1 -> (3 + 3 - 1) / 7
    assert float(analysis.copy_score(torch.diag(torch.tensor([3.0, 3.0, -1.0])))) == \
        pytest.approx(5 / 7, abs=1e-6)
    # batched
    batch = torch.stack([torch.eye(3), -torch.eye(3)])
    assert analysis.copy_score(batch).tolist() == pytest.approx([1.0, -1.0])


def test_copy_score_of_a_factored_matrix_equals_the_dense_one():
    g = torch.Generator().manual_seed(0)
    A, B = torch.randn(10, 4, generator=g), torch.randn(4, 10, generator=g)
    assert float(analysis.copy_score(FactoredMatrix(A, B))) == \
        pytest.approx(float(analysis.copy_score(A @ B)), abs=1e-4)


def test_copy_score_rejects_non_square():
    with pytest.raises(ValueError, match="M=\\(3, 4\\)"):
        analysis.copy_score(torch.zeros(3, 4))


def test_model_copy_scores_match_an_explicit_computation():
    model = build_model(ModelConfig(n_layers=2, seed=1))
    W_E, W_U = model.W_E.detach(), model.W_U.detach()
    assert analysis.direct_path_copy_score(model) == \
        pytest.approx(float(analysis.copy_score(W_E @ W_U)), abs=1e-4)
    scores = analysis.ov_copy_scores(model)
    assert scores.shape == (2, 4)
    for layer in range(2):
        for head in range(4):
            attn = model.blocks[layer].attn
            dense = W_E @ attn.W_V[head].detach() @ attn.W_O[head].detach() @ W_U
            assert float(scores[layer, head]) == \
                pytest.approx(float(analysis.copy_score(dense)), abs=1e-4)


def test_composition_scores_match_an_independent_computation():
    model = build_model(ModelConfig(n_layers=2, seed=2))
    k = analysis.composition_scores(model, "K")
    q = analysis.composition_scores(model, "Q")
    v = analysis.composition_scores(model, "V")
    assert k.shape == (2, 4, 2, 4)
    a0, a1 = model.blocks[0].attn, model.blocks[1].attn
    for h1 in range(4):
        ov = (a0.W_V[h1] @ a0.W_O[h1]).detach()
        for h2 in range(4):
            qk = (a1.W_Q[h2] @ a1.W_K[h2].T).detach()
            ov2 = (a1.W_V[h2] @ a1.W_O[h2]).detach()

            def score(L, R):
                return float(torch.linalg.norm(L @ R) / torch.linalg.norm(L) / torch.linalg.norm(R))

            assert float(q[0, h1, 1, h2]) == pytest.approx(score(ov, qk), rel=1e-4)
            assert float(k[0, h1, 1, h2]) == pytest.approx(score(ov, qk.T), rel=1e-4)
            assert float(v[0, h1, 1, h2]) == pytest.approx(score(ov, ov2), rel=1e-4)
    assert torch.all(k[1] == 0) and torch.all(k[:, :, 0] == 0)  # no later -> earlier pairs
    with pytest.raises(ValueError, match="mode='X'"):
        analysis.composition_scores(model, "X")


def test_composition_baseline_is_below_a_built_in_composition():
    model = build_model(ModelConfig(n_layers=2, seed=3))
    mean, std = analysis.composition_baseline(model, "K", n_samples=100)
    assert 0 < mean < 1 and std > 0
    # Make head L1H0's key read exactly what L0H0 writes: W_K(L1H0) spans the OV output space.
    a0, a1 = model.blocks[0].attn, model.blocks[1].attn
    with torch.no_grad():
        a1.W_K[0] = (a0.W_O[0].T).clone()
        a1.W_Q[0] = (a0.W_O[0].T).clone()
    assert float(analysis.composition_scores(model, "K")[0, 0, 1, 0]) > mean + 3 * std


def test_pattern_scores_on_hand_built_patterns():
    tokens = torch.tensor([[0, 1, 2, 0, 1, 2]])
    T = 6
    prev = torch.zeros(1, 1, T, T)
    prev[0, 0, 0, 0] = 1
    for i in range(1, T):
        prev[0, 0, i, i - 1] = 1
    det = analysis.detection_patterns(tokens, "previous_token")
    assert float(analysis.pattern_scores(prev, det)[0]) == pytest.approx(5 / 6)
    # an induction head: at 3 (token 0) attend to 1 (after the earlier 0), etc.
    ind = torch.zeros(1, 1, T, T)
    for i in range(T):
        ind[0, 0, i, i - 2 if i >= 3 else 0] = 1
    det = analysis.detection_patterns(tokens, "induction")
    assert float(analysis.pattern_scores(ind, det)[0]) == pytest.approx(3 / 6)
    # only the positions where an induction head can act (an earlier copy exists) count
    where = torch.tensor([[False, False, False, True, True, True]])
    assert float(analysis.pattern_scores(ind, det, where)[0]) == pytest.approx(1.0)
    assert float(analysis.pattern_scores(ind, det, ~where)[0]) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="mask=\\(1, 5\\)"):
        analysis.pattern_scores(ind, det, where[:, :5])
    with pytest.raises(ValueError, match="kind='copy'"):
        analysis.detection_patterns(tokens, "copy")


def test_head_pattern_scores_shapes_and_ranges():
    model = build_model(ModelConfig(n_layers=2))
    toks = TASK.sample(4, torch.Generator().manual_seed(0)).tokens
    scores = analysis.head_pattern_scores(model, toks)
    assert set(scores) == {"previous_token", "duplicate_token", "induction"}
    for s in scores.values():
        assert s.shape == (2, 4) and (s >= 0).all() and (s <= 1).all()
    pats = analysis.attention_patterns(model, toks[0])
    assert pats.shape == (2, 4, 24, 24)
    assert torch.allclose(pats.sum(-1), torch.ones(2, 4, 24))


def test_behavioural_evaluation():
    model = build_model(ModelConfig(n_layers=2))
    gen = torch.Generator().manual_seed(0)
    sets = TASK.eval_sets(32, gen)
    losses = analysis.set_losses(model, sets)
    assert set(losses) == set(sets)
    ppl = analysis.per_position_loss(model, sets["option1"])
    assert ppl.shape == (23,) and torch.isnan(ppl[:11]).all() and not torch.isnan(ppl[11:]).any()
    abl = analysis.ablation_losses(model, {"test": sets["test"]})
    assert set(abl) == {"none"} | {f"L{l}H{h}" for l in range(2) for h in range(4)}
    assert abl["L1H0"]["test"] != abl["none"]["test"]
    paths = analysis.composition_path_losses(model, sets["test"])
    assert paths["K and Q"] == pytest.approx(losses["test"], abs=1e-5)
    assert paths["direct only"] != pytest.approx(paths["K and Q"], abs=1e-6)
    with pytest.raises(ValueError, match="head=\\(2, 0\\)"):
        analysis.head_ablation_hooks([(2, 0)], 2, 4)


# --- recall margins and subspace overlap (Birth) ------------------------------------------------
def test_recall_margin_on_hand_built_scores():
    from toymech.analysis import probes

    # right 3, wrong (1, -1, 1, -1): spread 1, best wrong 1 -> margin 2; a right target below
    # its best competitor is negative, by how many spreads
    scores = torch.tensor([[3.0, 1, -1, 1, -1], [0.0, 1, -1, 1, -1], [5.0, 1, 1, 1, 1]])
    m = probes.row_margins(scores, torch.tensor([0, 0, 0]))
    assert m[:2].tolist() == pytest.approx([2.0, -1.0])
    assert m[2] == math.inf  # identical competitors: above all of them by any number of spreads
    # argmax recall is the sign of the margin, and the margin keeps going past the ceiling
    assert probes.recall_margin(scores[:1] * torch.tensor([[2.0, 1, 1, 1, 1]]), torch.tensor([0])) \
        > probes.recall_margin(scores[:1], torch.tensor([0])) > 0
    # invariant to a positive scale and a shift per row (norms of trained vs frozen parts)
    g = torch.Generator().manual_seed(0)
    s = torch.randn(20, 30, generator=g)
    y = torch.randint(0, 30, (20,), generator=g)
    assert torch.allclose(probes.row_margins(7 * s + 3, y), probes.row_margins(s, y), atol=1e-5)
    # masked (causal) candidates are no candidates; fewer than two wrong ones give NaN
    masked = torch.tensor([[1.0, 0.0, -math.inf], [2.0, 0.0, 1.0]])
    assert math.isnan(probes.row_margins(masked, torch.tensor([0, 0]))[0])
    with pytest.raises(ValueError, match="target"):
        probes.row_margins(masked, torch.tensor([0, 5]))


def test_recall_margin_of_a_random_memory_is_the_expected_maximum_below_zero():
    """The null: for i.i.d. scores the right target is one draw among n - 1 competitors, so the
    median margin is about -E[max of 64 standard normals] (2.4), far below a built memory's."""
    from toymech.analysis import probes

    g = torch.Generator().manual_seed(1)
    random = [probes.recall_margin(torch.randn(65, 65, generator=g), torch.arange(65))
              for _ in range(20)]
    assert -2.9 < sum(random) / len(random) < -1.9
    E = torch.randn(65, 128, generator=g) / 128 ** 0.5
    U = torch.randn(128, 65, generator=g) / 128 ** 0.5
    built = probes.output_copy_margin(E.T @ U.T, E, U)  # the construction Σ_k e_kᵀ u_kᵀ
    assert built > 3.0 and probes.output_copy_probe(E.T @ U.T, E, U) > 0.9


def test_memory_reading_puts_a_memory_between_the_null_and_the_construction():
    from toymech.analysis import probes
    from toymech.studies.birth.design import experiment

    exp = experiment("default", 3)
    model = build_model(exp.model)
    parts = probes.memory_parts(model)
    assert torch.allclose(parts["W_E"], model.W_E.detach())  # added join: the raw embeddings
    built = probes.construction_from(parts, exp.task.pi_b, exp.task.fixed_triggers)
    with torch.no_grad():  # write the construction into the model: it is its own reference
        model.blocks[1].attn.W_O.copy_(built["W_O2 (output copy)"][None])
    read = probes.memory_reading(model, pi_b=exp.task.pi_b, triggers=exp.task.fixed_triggers)
    assert read["W_O2"]["share"] == pytest.approx(1.0)
    assert read["W_O2"]["cosine"] == pytest.approx(1.0)
    for m in ("W_K1", "W_K2"):  # random memories: near the null, unrelated to the construction
        assert abs(read[m]["share"]) < 0.25 and abs(read[m]["cosine"]) < 0.05
        assert read[m]["built"] > 3.0 > -1.0 > read[m]["null"]
    assert "kl" in read["W_F"]


def test_subspace_overlap_on_hand_built_spans_and_its_random_null():
    eye = torch.eye(8)
    assert analysis.subspace_overlap(eye[:3], 5 * eye[:3], 3) == pytest.approx(1.0)
    assert analysis.subspace_overlap(eye[:3], eye[4:7], 3) == pytest.approx(0.0)
    half = torch.stack([eye[0], (eye[1] + eye[5]) / 2 ** 0.5])  # one shared axis, one at 45°
    assert analysis.subspace_overlap(eye[:2], half, 2) == pytest.approx(0.75)
    g = torch.Generator().manual_seed(0)
    draws = [analysis.subspace_overlap(torch.randn(65, 128, generator=g),
                                       torch.randn(64, 128, generator=g), 16) for _ in range(10)]
    assert sum(draws) / len(draws) == pytest.approx(analysis.overlap_null(16, 128), abs=0.02)
    with pytest.raises(ValueError, match="k="):
        analysis.subspace_overlap(eye[:3], eye[:3], 4)
