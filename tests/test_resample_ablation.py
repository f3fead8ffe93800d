"""A model's distribution target by target (``analysis.model_prediction``), resample ablation of
layer 0's output in layer 1's keys and queries (``analysis.resample_path_losses``) and the
smallest head set whose mean ablation reaches a loss (``analysis.heads_reaching``): against the
model's own loss, a batch whose resample changes nothing, a silent layer 0, and single-head
ablations computed by hand."""

import math

import pytest
import torch

from toymech import analysis, tasks
from toymech.models import ModelConfig, build_model
from toymech.tasks import Batch

TASK = tasks.get("repeated_blocks")


def test_a_model_s_prediction_is_its_loss_target_by_target():
    model = build_model(ModelConfig(n_layers=2))
    sets = TASK.eval_sets(16, torch.Generator().manual_seed(0))
    p = analysis.model_prediction(model, sets["option1"])
    assert p.loss == pytest.approx(analysis.set_losses(model, {"o": sets["option1"]})["o"], abs=1e-5)
    same = analysis.frequency_prediction(sets["option1"], 26)
    assert torch.equal(p.targets, same.targets) and torch.equal(p.rows, same.rows)


def test_resampling_layer_0_in_layer_1_s_keys_and_queries():
    """Resample ablation of the K/Q paths: the unablated loss is the model's; resampled from
    identical sequences nothing changes (position kept, content the same); from other
    sequences the loss moves; where layer 0 writes nothing, nothing moves either."""
    model = build_model(ModelConfig(n_layers=2)).eval()
    batch = TASK.sample(32, torch.Generator().manual_seed(1))
    cut = analysis.resample_path_losses(model, batch)
    assert set(cut) == {"none", "keys", "queries", "both"}
    assert cut["none"] == pytest.approx(analysis.set_losses(model, {"x": batch})["x"], abs=1e-6)
    assert cut["keys"] != pytest.approx(cut["none"], abs=1e-6)
    same = Batch(batch.tokens[:1].repeat(32, 1), batch.scored[:1].repeat(32, 1))
    for v in analysis.resample_path_losses(model, same).values():
        assert v == pytest.approx(analysis.set_losses(model, {"x": same})["x"], abs=1e-5)
    with torch.no_grad():
        model.blocks[0].attn.W_O.zero_()
        model.blocks[0].attn.b_O.zero_()
    silent = analysis.resample_path_losses(model, batch)
    assert max(abs(v - silent["none"]) for v in silent.values()) < 1e-6
    with pytest.raises(ValueError, match="shift=32"):
        analysis.resample_path_losses(model, batch, shift=32)
    with pytest.raises(ValueError, match="model"):
        analysis.resample_path_losses(build_model(ModelConfig(n_layers=1)), batch)


def test_the_smallest_head_set_whose_mean_ablation_reaches_a_loss():
    model = build_model(ModelConfig(n_layers=2)).eval()
    batch = TASK.sample(32, torch.Generator().manual_seed(2))
    L, H = 2, 4
    means = analysis.mean_head_outputs(model, batch)
    assert means[0].shape == (24, H, model.cfg.d_head)

    def loss(heads):
        hooks = analysis.head_ablation_hooks([(l, h, "mean") for l, h in heads], L, H, means)
        return analysis.set_losses(model, {"x": batch}, hooks)["x"]

    single = {(l, h): loss([(l, h)]) for l in range(L) for h in range(H)}
    top = max(single, key=single.get)
    heads, reached = analysis.heads_reaching(model, batch, single[top])
    assert heads == (top,) and reached == pytest.approx(single[top])
    pair = max(loss([a, b]) for a in single for b in single if a < b)
    assert pair > single[top]  # two heads of a random model cost more than one
    heads, reached = analysis.heads_reaching(model, batch, (single[top] + pair) / 2)
    assert len(heads) == 2 and reached >= (single[top] + pair) / 2
    assert analysis.heads_reaching(model, batch, math.inf)[0] is None
