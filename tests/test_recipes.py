"""Study 3's calibrated recipes, the calibration tables read back, and their figures."""

import json
from pathlib import Path

import pandas as pd
import pytest
import torch

from toymech import experiments
from toymech.models import build_model
from toymech.studies.random_transformers import calibration, recipes
from toymech.studies.random_transformers.design import ALGORITHMIC, mode_of, plan


@pytest.mark.parametrize("task", ALGORITHMIC)
@pytest.mark.parametrize("mode", ["normal", "random"])
def test_named_experiments_at_default_are_the_recipes(task, mode):
    r = recipes.recipe(task, mode)
    exp = experiments.get(f"rt-{task}-{mode}", "default", seed=3)
    assert exp.model.d_model == r.width and exp.train.lr == r.lr and exp.train.seed == 3
    assert exp.train.batch_size == r.batch and exp.train.steps == r.steps
    assert exp.train.stop_metric == recipes.ANSWER_METRIC[task]
    assert exp.train.stop_value == r.stop_value and mode_of(exp.train.freeze) == mode
    assert exp.model.variant_options == ({} if r.embed_std is None else
                                         {"embed_std": r.embed_std})
    for key, value in r.task.items():
        assert getattr(exp.task, key) == value
    # smoke and paper keep the study's plan (its widest width, no stop rule)
    smoke = experiments.get(f"rt-{task}-{mode}", "smoke")
    assert smoke.model.d_model == plan("smoke").widths[-1] and smoke.train.stop_metric is None


def test_calibrated_experiment_variants_and_bad_input():
    abl = recipes.calibrated("decimal_addition", "random", freeze_mode="E_token+U", width=32)
    assert mode_of(abl.train.freeze) == "E_token+U" and abl.model.d_model == 32
    assert abl.train.lr == recipes.recipe("decimal_addition", "random").lr
    with pytest.raises(ValueError, match="task='sorting' is not allowed"):
        recipes.recipe("sorting", "normal")
    with pytest.raises(ValueError, match="mode='frozen' is not allowed: normal or random"):
        recipes.recipe("needle", "frozen")


def test_embed_std_rescales_the_token_embedding_only():
    exp = experiments.get("rt-needle-normal", "default")
    plain = build_model(exp.model.replace(variant_options={}))
    wide = build_model(exp.model)
    assert float(wide.embed.W_E.detach().std()) == pytest.approx(recipes.EMBED_STD, rel=1e-4)
    assert float(plain.embed.W_E.detach().std()) == pytest.approx(0.02, rel=0.1)
    # the same draw, scaled; every other parameter identical
    ratio = wide.embed.W_E / plain.embed.W_E
    assert torch.allclose(ratio, ratio.flatten()[0].expand_as(ratio))
    for (name, p), (_, q) in zip(plain.named_parameters(), wide.named_parameters()):
        if name != "embed.W_E":
            assert torch.equal(p, q), name
    # configs without the option keep their dict (and so their zoo keys)
    assert exp.model.replace(variant_options={}).to_dict()["variant_options"] == {}


def test_calibration_table_is_none_without_a_sweep(tmp_path):
    assert calibration.calibration_table(tmp_path) is None
    assert calibration.calibration_curves(tmp_path) is None


@pytest.fixture(scope="module")
def smoke_calibration(tmp_path_factory):
    """Two tiny runs through ``toymech sweep`` into a calibration table."""
    from toymech.grid import run_sweep

    zoo = tmp_path_factory.mktemp("zoo")
    grid = {"name": "rt-calibration-test", "size": "smoke", "seed": [0],
            "experiment": ["rt-decimal_addition-normal", "rt-needle-random"],
            "overrides": {"train.eval_every": [10]}}
    result = run_sweep(grid, cache_dir=zoo, backend="local", progress=False, log=None)
    assert result.count("ok") == 2
    return zoo


def test_calibration_table_reads_the_runs_back(smoke_calibration):
    table = calibration.calibration_table(smoke_calibration)
    assert list(table.columns) == list(calibration.COLUMNS) and len(table) == 2
    dec = table[table["task"] == "decimal_addition"].iloc[0]
    meta = json.loads((smoke_calibration / dec["entry"] / "config.json").read_text())
    last = meta["history"][-1]
    # held-out accuracy is the whole sum, the per-digit accuracy beside it
    assert dec["held_out_acc"] == last["eval_seq_acc"] and dec["digit_acc"] == last["eval_acc"]
    assert dec["mode"] == "normal" and dec["last_step"] == 20 and dec["core_seconds"] > 0
    needle = table[table["task"] == "needle"].iloc[0]
    assert needle["mode"] == "random" and needle["held_out_acc"] == \
        json.loads((smoke_calibration / needle["entry"] / "config.json").read_text())[
            "history"][-1]["eval_first_acc"]
    curves = calibration.calibration_curves(smoke_calibration)
    assert sorted(curves["step"].unique().tolist()) == [10, 20]
    assert len(curves) == 4 and curves["core_seconds"].notna().all()


def test_calibration_figures(smoke_calibration):
    from toymech.plots import calibration as plots

    curves = calibration.calibration_curves(smoke_calibration)
    fig = plots.calibration_curves(curves)
    assert len(fig.data) == 2 and fig.layout.yaxis.title.text.startswith("held-out accuracy")
    assert fig.layout.xaxis.title.text == "training step"
    by_cost = plots.calibration_curves(curves, x="core_seconds")
    assert by_cost.layout.xaxis.title.text == "core-seconds of training"
    with pytest.raises(ValueError, match="x='wall' is not allowed"):
        plots.calibration_curves(curves, x="wall")
    costs = plots.calibration_costs(calibration.calibration_table(smoke_calibration))
    assert len(costs.data) == 2 and costs.layout.xaxis.title.text == "core-seconds of training"


def test_the_recipe_claim_reads_the_recipes_own_run_not_the_best_setting():
    """``acc.<task>.random.recipe`` from a calibration table: the run at the recipe's width,
    learning rate and step budget (the longest one), however well other settings did."""
    from toymech.studies.random_transformers.claims import _recipe_run_accuracy

    r = recipes.recipe("decimal_addition", "random")
    rows = pd.DataFrame([
        # another learning rate at the recipe's width did better: not the recipe's run
        {"width": r.width, "lr": r.lr * 3, "steps": r.steps, "last_step": r.steps,
         "held_out_acc": 0.99},
        # the recipe's settings with a shorter budget
        {"width": r.width, "lr": r.lr, "steps": r.steps // 2, "last_step": r.steps // 2,
         "held_out_acc": 0.8},
        {"width": r.width, "lr": r.lr, "steps": r.steps, "last_step": r.steps,
         "held_out_acc": 0.2},
        {"width": r.width * 2, "lr": r.lr, "steps": r.steps, "last_step": r.steps,
         "held_out_acc": 1.0},
    ])
    assert _recipe_run_accuracy(rows, r) == 0.2
    assert _recipe_run_accuracy(rows.iloc[:2], r) == 0.8      # only a shorter budget: that one
    assert _recipe_run_accuracy(rows.iloc[:1], r) == 0.99     # no run at the recipe's lr
    assert _recipe_run_accuracy(rows.iloc[3:], r) is None     # nothing at the recipe's width
    nan = rows.iloc[2:3].assign(held_out_acc=float("nan"))
    assert _recipe_run_accuracy(nan, r) is None


def test_the_decimal_calibration_grid_trains_the_named_recipe():
    """The 10k-step grid shipped for decimal addition is the named experiment itself, so a
    user's sweep and ``toymech train rt-decimal_addition-random`` share one zoo entry."""
    from toymech.grid import expand_grid, load_grid

    grid = load_grid(Path(__file__).resolve().parents[1] / "specs" / "sweeps" / "rt-calibration-random-decimal_addition-10k.yaml")
    (trial,) = expand_grid(grid)
    named = experiments.get("rt-decimal_addition-random", "default", seed=0)
    assert trial.exp.to_dict() == named.to_dict()


@pytest.mark.parametrize("task", ALGORITHMIC)
@pytest.mark.parametrize("mode", ["normal", "random"])
def test_every_recipe_names_a_shipped_grid_that_trains_its_setting(task, mode):
    """The command a claim names (``Recipe.grid_file``) exists and trains the recipe's task at
    its width, learning rate and token-embedding init."""
    from toymech.grid import expand_grid, load_grid

    r = recipes.recipe(task, mode)
    trials = expand_grid(load_grid(Path(__file__).resolve().parents[1] / r.grid_file(task, mode)))
    assert any(t.exp.task.name == task and t.exp.model.d_model == r.width
               and t.exp.train.lr == pytest.approx(r.lr)
               and mode_of(t.exp.train.freeze) == mode
               and t.exp.model.variant_options.get("embed_std") == r.embed_std
               for t in trials)
