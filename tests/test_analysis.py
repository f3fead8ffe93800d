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
