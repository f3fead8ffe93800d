"""The studies' causal tests: untrained models (the null world) pass no causal claim, a
source-like input passes each, and the measurements run on every study's models."""

import math

import pytest
import torch

from toymech import tasks
from toymech.models import build_model
from toymech.studies import birth
from toymech.studies import induction as ind
from toymech.studies.birth import causal as BC
from toymech.studies.claims import assess
from toymech.studies.induction import causal as IC
from toymech.studies.induction.design import MAIN as IND_MAIN
from toymech.studies.random_transformers import causal as RC
from toymech.studies.random_transformers import design as RX

SEEDS = (0, 1, 2)


def test_untrained_induction_models_pass_no_causal_claim():
    data = IC.causal_data(tasks.get("repeated_blocks"), seed=0, n=64)
    per_seed = []
    for seed in SEEDS:
        models = {n: build_model(ind.experiment(n, "smoke", seed).model) for n in IND_MAIN}
        numbers = IC.causal_numbers(models, data)
        assert all(math.isfinite(v) for v in numbers.values())
        assert abs(numbers["2l.pref_clean"]) < 0.1  # nothing learned, no preference
        per_seed.append(numbers)
    for claim in IC.CAUSAL_CLAIMS:
        a = assess(claim, per_seed)
        assert a.measured == len(SEEDS) and a.agree == 0, (claim.key, a)


def test_induction_claims_on_source_like_numbers():
    source_like = {"2l.pref_clean": 4.0, "2l.pref_corrupted": 2.5, "2l.share_k": 0.6,
                   "2l.share_q": 0.1, "2l.share_v": 0.7, "2l.layer1_restores": 0.9,
                   "smeared.recent_suppressing": 2.0, "2l.recent_min": -0.5}
    assert all(c.holds(source_like) for c in IC.CAUSAL_CLAIMS)
    q_wins = {**source_like, "2l.share_q": 0.8}
    assert not next(c for c in IC.CAUSAL_CLAIMS if c.key == "causal-k-composition").holds(q_wins)
    nan = {k: float("nan") for k in source_like}
    assert not any(c.holds(nan) for c in IC.CAUSAL_CLAIMS)


def test_option_data_share_the_prefix_and_differ_after_it():
    task = tasks.get("repeated_blocks")
    data = IC.causal_data(task, seed=3, n=32)
    B = task.block_len
    assert torch.equal(data.option1[:, :2 * B], data.option2[:, :2 * B])
    assert torch.equal(data.option1[:, 2 * B:3 * B], data.first)
    assert torch.equal(data.option2[:, 2 * B:3 * B], data.second)
    assert not torch.equal(data.option1, data.unrelated)


def test_untrained_birth_models_pass_no_causal_claim():
    exp = birth.experiment("smoke", 0)
    data = BC.causal_data(exp.task, seed=0, n=64)
    per_seed = [BC.causal_numbers(build_model(birth.experiment("smoke", s).model), data)
                for s in SEEDS]
    for claim in BC.CAUSAL_CLAIMS:
        a = assess(claim, per_seed)
        assert a.measured == len(SEEDS) and a.agree == 0, (claim.key, a)
    source_like = {"causal.head_moves": 0.95, "causal.value_moves": 0.9,
                   "causal.corrupted_moves": 0.01, "causal.k_share": 0.8,
                   "causal.q_share": 0.0, "causal.v_share": 0.1, "causal.clean_logp": -0.2,
                   "causal.corrupted_logp": -4.0}
    assert all(c.holds(source_like) for c in BC.CAUSAL_CLAIMS)


def test_birth_corruptions_change_only_what_they_say():
    exp = birth.experiment("smoke", 0)
    d = BC.causal_data(exp.task, seed=1, n=32)
    rows = torch.arange(len(d.query))
    q = d.clean[rows, d.query]
    assert torch.equal(d.clean[rows, d.query + 1], d.a)  # the query's target is a = output(q)
    assert not (d.a == d.b).any() and not (q == d.b).any()
    changed = d.output_swap != d.clean
    assert bool((d.output_swap[changed] == d.b[changed.nonzero()[:, 0]]).all())
    assert bool(changed.any(1).all())  # q had an earlier output in every sequence
    assert torch.equal(d.trigger_swap[rows, d.query], q)  # the query itself is kept
    earlier = d.trigger_swap == q[:, None]
    assert not (earlier & (torch.arange(d.clean.shape[1]) < d.query[:, None])).any()


def test_answer_pairs_share_scored_positions_and_differ_in_answers():
    for name in RX.ALGORITHMIC:
        task = RX.task_for(name, "smoke")
        pairs = RC.answer_pairs(task, seed=0, n=32)
        assert pairs.mask.any(1).all()
        assert bool((pairs.good[pairs.mask] != pairs.bad[pairs.mask]).all())
        model = build_model(RX.experiment(name, 8, "random", "smoke", 0).model)
        numbers = RC.causal_numbers({(name, "random"): model}, {name: pairs})
        assert {f"{name}.random.top_share", f"{name}.random.attn_L1",
                f"{name}.random.mlp_L0"} <= set(numbers)
        assert 0 < numbers[f"{name}.random.top_share"] <= 1
    table = RC.spread_table(numbers)
    assert list(table.index) == [(name, "random")]
    assert "layer 1 attention: share of the gap restored" in table.columns
    assert not [c for c in table.columns if "_" in c], table.columns  # no internal key


@pytest.mark.parametrize("study", ["induction", "birth", "random_transformers"])
def test_causal_metrics_per_snapshot_are_floats(study):
    if study == "induction":
        model = build_model(ind.experiment("induction-2l", "smoke", 0).model)
        out = IC.causal_metrics(model, IC.causal_data(tasks.get("repeated_blocks"), 0, n=16))
        assert {"pref_clean", "k_drop", "q_drop", "v_drop", "layer1_restored"} <= set(out)
    elif study == "birth":
        exp = birth.experiment("smoke", 0)
        out = BC.causal_metrics(build_model(exp.model), BC.causal_data(exp.task, 0, n=16))
        assert set(out) == {"head_moves", "value_moves", "k_share"}
    else:
        task = RX.task_for("parentheses", "smoke")
        model = build_model(RX.experiment("parentheses", 8, "random", "smoke", 0).model)
        out = RC.causal_metrics(model, RC.answer_pairs(task, 0, n=16))
        assert {"gap", "top_share", "effective_number"} <= set(out)
    assert all(isinstance(v, float) for v in out.values())
