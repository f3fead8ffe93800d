"""The SGLD estimator of the local learning coefficient where the answer is known: a regular
linear regression with d free parameters has λ = d/2; a model whose 2d parameters only enter
as d sums has λ = d/2, half what its parameter count says.

Tolerance: 10 %. Measured with these settings (lr 2e-4, γ 1, 4 chains x 1,500 draws, batches
of 100 of n = 2,000 samples, nβ = n / log n) over seeds 0-4: d = 4 gave 1.97-2.03, d = 8 gave
3.87-4.20 and the redundant 4 + 4 model 2.01-2.12 (the sum moves with twice the step, so its
discretisation bias is larger)."""

import math

import numpy as np
import pandas as pd
import pytest
import torch

from toymech import analysis as A
from toymech.analysis import llc as L

TOL = 0.10
SETTINGS = L.SGLDSettings(lr=2e-4, gamma=1.0, chains=4, draws=1500, burnin=100, batch_size=100)


class Linear(torch.nn.Module):
    """y = x·w, or with ``redundant`` y = x·(w + v): 2d parameters, d directions that matter."""

    def __init__(self, d: int, redundant: bool = False):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(d))
        self.v = torch.nn.Parameter(torch.zeros(d)) if redundant else None

    def forward(self, x):
        return x @ (self.w if self.v is None else self.w + self.v)


def squared_loss(model, batch):
    x, y = batch
    return 0.5 * ((model(x) - y) ** 2).mean()  # the Gaussian NLL (unit noise) up to a constant


def fitted(d: int, seed: int = 0, redundant: bool = False, n: int = 2000):
    """A model at the least-squares fit w* of n noisy samples, and the samples."""
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, d, generator=g)
    y = x @ torch.randn(d, generator=g) + torch.randn(n, generator=g)
    w = torch.linalg.lstsq(x, y[:, None]).solution[:, 0]
    model = Linear(d, redundant)
    with torch.no_grad():
        if redundant:
            model.w.copy_(0.3 * w)
            model.v.copy_(0.7 * w)
        else:
            model.w.copy_(w)
    return model, (x, y)


@pytest.mark.parametrize("d", [4, 8])
def test_a_regular_model_has_half_its_dimension(d):
    model, data = fitted(d, seed=d)
    before = model.w.detach().clone()
    r = L.estimate_llc(model, squared_loss, data, SETTINGS.replace(seed=d))
    assert r.llc == pytest.approx(d / 2, rel=TOL)
    assert r.healthy and r.parameters == d and r.n == 2000
    assert r.n_beta == pytest.approx(2000 / math.log(2000))
    assert torch.equal(model.w, before)  # the chains ran on a copy


def test_a_redundant_parameter_lowers_the_coefficient():
    model, data = fitted(4, seed=1, redundant=True)
    r = L.estimate_llc(model, squared_loss, data, SETTINGS.replace(seed=1))
    assert r.parameters == 8
    assert r.llc == pytest.approx(2.0, rel=TOL)  # the 4 sums, not the 8 parameters
    assert r.llc < 0.6 * r.parameters / 2


def test_frozen_parameters_stay_at_w_star():
    model, data = fitted(3, seed=4, redundant=True)
    r = L.estimate_llc(model, squared_loss, data, SETTINGS.replace(chains=1, draws=48, burnin=0),
                       freeze=("v",))
    assert r.parameters == 3 and r.finite


def test_a_step_too_large_diverges_and_the_sweep_avoids_it():
    model, data = fitted(2, seed=2)
    small = SETTINGS.replace(chains=2, draws=240, burnin=20)
    table = L.calibrate(model, squared_loss, data, lrs=[2e-4, 0.5], gammas=[1.0], settings=small)
    bad = table[table["lr"] == 0.5].iloc[0]
    assert not bad["finite"] and not bad["healthy"]
    assert L.choose(table) == {"lr": 2e-4, "gamma": 1.0}
    assert L.choose(table[table["lr"] == 0.5]) is None


def test_settings_and_inputs_are_checked_by_name():
    with pytest.raises(ValueError, match="lr=0"):
        L.SGLDSettings(lr=0)
    with pytest.raises(ValueError, match="chains=0"):
        L.SGLDSettings(chains=0)
    frozen, data = fitted(2)
    for p in frozen.parameters():
        p.requires_grad_(False)
    with pytest.raises(ValueError, match="model="):
        L.estimate_llc(frozen, squared_loss, data, SETTINGS)
    with pytest.raises(ValueError, match="data="):
        L.estimate_llc(fitted(2)[0], squared_loss, [torch.zeros(3), torch.zeros(4)], SETTINGS)


def test_stage_boundaries_are_the_turns_of_the_curve():
    steps = [0, 1, 2, 4, 8, 16, 32, 64, 128, 256]
    llc = [0, 1, 3, 6, 9, 7, 4, 4.1, 6, 8]  # rises to a peak at 8, falls to 32, rises again
    assert L.stage_boundaries(steps, llc) == [8.0, 32.0]
    wiggle = [0, 1, 2, 3, 4, 3.9, 5, 6, 7, 8]  # a dip of 1 % of the range is noise
    assert L.stage_boundaries(steps, wiggle) == []
    table = L.boundary_table([8.0, 32.0], pd.DataFrame({"metric": ["a", "b"],
                                                        "step": [10.0, float("nan")]}))
    assert table["nearest LLC boundary"].iloc[0] == 8.0
    assert table["decades apart"].iloc[0] == pytest.approx(math.log10(10 / 8))
    assert np.isnan(table["nearest LLC boundary"].iloc[1])
    # a monotone curve has no turn, but a half-way step (unhealthy snapshots left out)
    curve = pd.DataFrame({"step": [0, 10, 100, 1000], "llc": [-5.0, 10.0, 20.0, 30.0],
                          "healthy": [False, True, True, True]})
    lc = L.LLCCurve(curve, {}, [], SETTINGS)
    assert lc.half_step == pytest.approx(100.0)
    row = lc.table(pd.DataFrame({"metric": ["m"], "step": [1000.0]})).iloc[0]
    assert row["decades from LLC half-way"] == pytest.approx(1.0)


def test_task_llc_over_snapshots(tmp_path):
    from toymech import experiments
    from toymech.training import Experiment, TrainConfig
    from toymech.zoo import Zoo
    exp = experiments.get("induction-2l", size="smoke", seed=0)
    exp = Experiment(exp.task, exp.model, TrainConfig(steps=4, batch_size=8, eval_every=4,
                                                      eval_size=16, snapshots=2), "tiny")
    entry = Zoo(tmp_path).get_or_train(exp, device="cpu", progress=False, log=None)
    pool = exp.task.sample(64, torch.Generator().manual_seed(0))
    settings = L.SGLDSettings(lr=1e-5, gamma=100.0, chains=2, draws=24, burnin=4, batch_size=8)
    through = L.llc_through_training(entry, pool, settings)
    curve, results = through.curve, list(through.results.values())
    assert list(curve["step"]) == entry.snapshot_steps
    assert all(r.finite for r in results) and results[0].trace.shape == (2, 28)
    assert results[0].n == int(pool.target_mask.sum())
    assert A.llc is L
