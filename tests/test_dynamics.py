"""Training dynamics: snapshots in the loop, checkpoints and zoo; metric curves, transition
steps, their order over seeds; the scrubber figure."""

import json
import math
import shutil

import numpy as np
import pandas as pd
import pytest
import torch

from toymech import experiments, tasks
from toymech.analysis import (
    formation_order,
    order_agreement,
    transition_step,
    transitions,
    transitions_over_seeds,
)
from toymech.models import ModelConfig, build_model
from toymech.plots import scrubber
from toymech.training import Experiment, TrainConfig, train
from toymech.training.checkpoints import SNAPSHOTS, DamagedCheckpoint
from toymech.training.config import log_spaced_steps
from toymech.zoo import Zoo

STEPS = 12


def _exp(seed=0, **train):
    exp = experiments.get("induction-1l", "smoke", seed=seed)
    exp.train = exp.train.replace(**{"steps": STEPS, "eval_every": 4, "snapshots": 5, **train})
    return exp


def _params(model):
    return {n: p.detach().cpu() for n, p in model.named_parameters()}


def _same(a, b, atol=0.0):
    return a.keys() == b.keys() and all(torch.allclose(a[k], b[k], atol=atol, rtol=0) for k in a)


# --------------------------------------------------------------------------------------------
# config
# --------------------------------------------------------------------------------------------


def test_log_spaced_steps():
    s = log_spaced_steps(10_000, 20)
    assert s[0] == 0 and s[-1] == 10_000 and len(s) == 20 and list(s) == sorted(set(s))
    gaps = np.diff(s)
    assert gaps[0] <= gaps[len(gaps) // 2] <= gaps[-1]  # denser early
    assert log_spaced_steps(5, 10) == (0, 1, 2, 3, 4, 5)
    assert log_spaced_steps(3, 2) == (0, 3) and log_spaced_steps(7, 0) == ()
    with pytest.raises(ValueError, match="n=1 is not allowed"):
        log_spaced_steps(10, 1)


def test_snapshots_leave_existing_zoo_keys_alone():
    cfg = TrainConfig(steps=100)
    assert "snapshots" not in cfg.to_dict() and TrainConfig.from_dict(cfg.to_dict()) == cfg
    # The key this experiment had before TrainConfig knew about snapshots.
    exp = Experiment(tasks.get("repeated_blocks"), ModelConfig(n_layers=2, d_vocab=26, n_ctx=24),
                     cfg)
    assert exp.key() == "12a027a492b6eb2f"
    with_snaps = cfg.replace(snapshots=5)
    assert with_snaps.to_dict()["snapshots"] == 5 and TrainConfig.from_dict(with_snaps.to_dict()) == with_snaps
    assert Experiment(exp.task, exp.model, with_snaps).key() != exp.key()
    listed = cfg.replace(snapshots=[50, 0, 50])
    assert listed.snapshots == (0, 50) and TrainConfig.from_dict(json.loads(json.dumps(listed.to_dict()))) == listed
    assert cfg.replace(snapshots=5).snapshot_steps == log_spaced_steps(100, 5)


@pytest.mark.parametrize("bad", [1, -1, True, 2.0, [101], [], ["a"], 10**6])
def test_bad_snapshots_are_refused_by_name(bad):
    with pytest.raises(ValueError, match=r"snapshots=.* is not allowed: 0 \(none\), .* 0\.\.100"):
        TrainConfig(steps=100, snapshots=bad)


# --------------------------------------------------------------------------------------------
# the loop, the zoo, checkpoints
# --------------------------------------------------------------------------------------------


def test_snapshots_through_training_and_the_zoo(tmp_path):
    exp = _exp(0)
    zoo = Zoo(tmp_path / "zoo")
    entry = zoo.get_or_train(exp, device="cpu", progress=False, log=None)
    steps = list(log_spaced_steps(STEPS, 5))
    assert entry.snapshot_steps == steps and steps[0] == 0 and steps[-1] == STEPS
    assert _same(_params(entry.model_at(0)), _params(build_model(exp.model)))  # the init
    assert _same(_params(entry.model_at(STEPS)), _params(entry.model))  # the final model
    assert not _same(_params(entry.model_at(steps[1])), _params(entry.model_at(0)))
    absent = next(s for s in range(STEPS) if s not in steps)
    with pytest.raises(ValueError, match=rf"step={absent} is not allowed: one of the snapshot steps \{steps}"):
        entry.model_at(absent)
    # a fresh Zoo reads them back from disk, lazily
    loaded = Zoo(tmp_path / "zoo").load(exp, "cpu", log=None)
    assert loaded.loaded and loaded.snapshot_steps == steps and loaded.snapshots == {}
    for s in steps:
        assert _same(_params(loaded.model_at(s)), _params(entry.model_at(s)))
    assert (entry.path / SNAPSHOTS).is_file()
    # without snapshots: no file, no steps, a clear error
    plain = zoo.get_or_train(_exp(0, snapshots=0), device="cpu", progress=False, log=None)
    assert plain.snapshot_steps == [] and not (plain.path / SNAPSHOTS).exists()
    with pytest.raises(ValueError, match="step=0 is not allowed: nothing: this run recorded no"):
        plain.model_at(0)


def test_only_trained_parameters_are_snapshotted():
    exp = _exp(0, freeze=("embed.W_E", "blocks.0.attn.W_V"))
    result = train(build_model(exp.model), exp.task, exp.train, device="cpu", progress=False,
                   log=None)
    trained = {n for n, p in result.model.named_parameters() if p.requires_grad}
    assert sorted(result.snapshots) == list(log_spaced_steps(STEPS, 5))
    assert all(set(p) == trained for p in result.snapshots.values())
    assert "embed.W_E" not in trained and all(v.device.type == "cpu"
                                              for p in result.snapshots.values() for v in p.values())


def test_stacked_snapshots_match_separate_runs(tmp_path):
    exps = [_exp(s, grad_clip=1.0) for s in (0, 1)]
    single = [Zoo(tmp_path / "a").get_or_train(e, device="cpu", progress=False, log=None)
              for e in exps]
    stacked = Zoo(tmp_path / "b").get_or_train_many(exps, device="cpu", stacked=True)
    assert all(e.meta.get("stacked") == 2 for e in stacked)
    for a, b in zip(single, stacked):
        assert a.snapshot_steps == b.snapshot_steps
        for s in a.snapshot_steps:
            assert _same(a.snapshots[s], b.snapshots[s], atol=1e-4), s
    assert not _same(stacked[0].snapshots[STEPS], stacked[1].snapshots[STEPS], atol=1e-4)
    reread = Zoo(tmp_path / "b").load(exps[1], "cpu", log=None)
    assert _same(_params(reread.model_at(0)), _params(build_model(exps[1].model)))


def test_resumed_run_keeps_the_snapshots_taken_before(tmp_path):
    exp = _exp(0, snapshots=(0, 2, 6, 10, 12), checkpoint_every=4)
    full = train(build_model(exp.model), exp.task, exp.train, device="cpu", progress=False, log=None)
    train(build_model(exp.model), exp.task, exp.train, device="cpu", progress=False, log=None,
          checkpoint_dir=tmp_path)
    resumed = train(build_model(exp.model), exp.task, exp.train, device="cpu", progress=False,
                    log=None, resume_from=tmp_path / "step_0000008")
    assert sorted(resumed.snapshots) == [0, 2, 6, 10, 12]
    # within float rounding: two plain runs of this model differ by ~1e-8 on CPU already
    assert all(_same(full.snapshots[s], resumed.snapshots[s], atol=1e-6) for s in full.snapshots)


def _meta(path):
    return json.loads((path / "config.json").read_text())


SNAPSHOT_DAMAGE = {  # name -> (damage(path, other entry's path), what the message says)
    "snapshots deleted": (lambda p, o: (p / SNAPSHOTS).unlink(), "snapshots.safetensors is missing"),
    "snapshots truncated": (
        lambda p, o: (p / SNAPSHOTS).write_bytes((p / SNAPSHOTS).read_bytes()[:200]),
        "snapshots.safetensors is not the file saved"),
    "snapshots from another seed": (lambda p, o: shutil.copy(o / SNAPSHOTS, p / SNAPSHOTS),
                                    "sha256 differs"),
    "snapshot hash stripped from the record": (
        lambda p, o: (p / "config.json").write_text(json.dumps(
            {**_meta(p), "integrity": {k: v for k, v in _meta(p)["integrity"].items()
                                       if k != "snapshots_sha256"}})),
        "has no snapshots_sha256"),
}


@pytest.fixture(scope="module")
def snap_zoo(tmp_path_factory):
    root = tmp_path_factory.mktemp("snapzoo")
    for seed in (0, 1):
        Zoo(root).get_or_train(_exp(seed), device="cpu", progress=False, log=None)
    return root


@pytest.mark.parametrize("kind", list(SNAPSHOT_DAMAGE))
def test_damaged_snapshots_are_found_and_retrained(snap_zoo, tmp_path, kind, capsys):
    shutil.copytree(snap_zoo, tmp_path / "zoo")
    zoo = Zoo(tmp_path / "zoo")
    path = zoo.path(_exp(0))
    damage, says = SNAPSHOT_DAMAGE[kind]
    damage(path, zoo.path(_exp(1)))
    with pytest.raises(DamagedCheckpoint, match=says) as info:
        zoo.load(_exp(0), "cpu", log=None)
    assert path.name in str(info.value) and "\n" not in str(info.value)
    rows = {r["path"]: r for r in zoo.verify()}
    assert rows[str(path)]["status"] == "damaged" and says in rows[str(path)]["problem"]
    entry = zoo.get_or_train(_exp(0), device="cpu", progress=False, log=None)
    assert not entry.loaded and path.name in capsys.readouterr().err
    assert [r["status"] for r in zoo.verify()] == ["ok", "ok"]


def test_snapshots_replaced_after_loading_are_refused_lazily(snap_zoo, tmp_path):
    shutil.copytree(snap_zoo, tmp_path / "zoo")
    zoo = Zoo(tmp_path / "zoo")
    entry = zoo.load(_exp(0), "cpu", log=None)
    shutil.copy(zoo.path(_exp(1)) / SNAPSHOTS, entry.path / SNAPSHOTS)
    with pytest.raises(DamagedCheckpoint, match="sha256 differs"):
        entry.model_at(0)


# --------------------------------------------------------------------------------------------
# analysis
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("values, expected", [
    ([0.0, 0.2, 0.8, 1.0], 15.0),   # up: half way between steps 10 (0.2) and 20 (0.8)
    ([3.0, 2.8, 2.2, 2.0], 15.0),   # down, the same shape
    ([0.0, 3.0, 0.5, 1.0], 5.0),    # overshoot: half way to its extreme (3.0), not to the end
    ([0.0, 0.6, 3.0, 1.0], 10 + 10 * 0.9 / 2.4),  # a bump at 0.6 (past half the END value) is
                                                  # not the transition: half of the peak is
    ([1.0, 1.0, 1.0, 1.0], None),   # flat: never moved
    ([0.0, 1.0, 0.5, 0.0], 5.0),    # a rise and a fall back: it moved (half way to the peak)
    ([0.0, 0.5, 0.5, 1.0], 10.0),   # reaching frac exactly at a snapshot
])
def test_transition_step(values, expected):
    got = transition_step([0, 10, 20, 30], values)
    assert got == pytest.approx(expected) if expected is not None else got is None


def test_transition_step_edge_cases():
    assert transition_step([7], [1.0]) is None  # one point cannot move
    assert transition_step([0, 10], [0, 1], frac=0.25) == pytest.approx(2.5)
    assert transition_step([0, 10], [0, 1e-9]) is None and transition_step([0, 10], [0, 1e-9], tol=0) == 5
    with pytest.raises(ValueError, match=r"values=nan is not allowed: finite numbers \(not finite at step 10"):
        transition_step([0, 10, 20], [0, float("nan"), 1])
    with pytest.raises(ValueError, match="strictly increasing"):
        transition_step([0, 10, 10], [0, 1, 2])
    with pytest.raises(ValueError, match="one value per step"):
        transition_step([0, 10], [0, 1, 2])
    with pytest.raises(ValueError, match="frac=0"):
        transition_step([0, 10], [0, 1], frac=0)


CURVES = pd.DataFrame({"step": [0, 10, 100, 1000],
                       "late": [0.0, 0.0, 0.1, 1.0],      # transitions at 100 + 0.4 / 0.9 * 900 = 500
                       "early": [2.0, 1.0, 0.5, 0.0],     # at 10
                       "flat": [0.3, 0.3, 0.3, 0.3]})     # never


def test_transitions_and_formation_order():
    table = transitions(CURVES)
    assert list(table["metric"]) == ["early", "late", "flat"]
    assert table["step"].iloc[0] == pytest.approx(10) and table["step"].iloc[1] == pytest.approx(500)
    assert math.isnan(table["step"].iloc[2]) and table["start"].iloc[0] == 2.0 and table["end"].iloc[0] == 0.0
    assert formation_order(CURVES) == ["early", "late"]
    assert list(transitions(CURVES.iloc[::-1], ["late"])["step"]) == pytest.approx([500])  # any row order
    with pytest.raises(ValueError, match="metrics='nope'"):
        transitions(CURVES, ["nope"])


def test_transitions_over_seeds():
    swapped = CURVES.rename(columns={"late": "early", "early": "late"})  # one seed disagrees
    per_seed = [CURVES, CURVES, swapped]
    table = transitions_over_seeds(per_seed, ["late", "early", "flat"])
    assert list(table["metric"]) == ["early", "late", "flat"]
    row = table.set_index("metric").loc["early"]
    assert (row["median"], row["min"], row["max"], row["moved"]) == pytest.approx((10, 10, 500, 3))
    assert table["before_next"].iloc[0] == pytest.approx(2 / 3)
    assert table.set_index("metric").loc["flat", "moved"] == 0
    assert order_agreement(per_seed, "early", "late") == pytest.approx(2 / 3)
    assert order_agreement(per_seed, "late", "flat") == 1.0  # a metric that never moved is last


# --------------------------------------------------------------------------------------------
# the scrubber
# --------------------------------------------------------------------------------------------


def _figure(n_steps=4, heads=3, T=5, **kw):
    rng = np.random.default_rng(0)
    steps = [0, 1, 3, 10, 30, 100][:n_steps] if n_steps <= 6 else list(range(n_steps))
    patterns = [rng.random((heads, T, T)) for _ in steps]
    curves = pd.DataFrame({"step": steps, "a": np.linspace(0, 1, len(steps)) ** 2,
                           "b": np.linspace(1, 0, len(steps))})
    fig = scrubber(steps, patterns, [f"L0H{h}" for h in range(heads)], curves=curves,
                   transitions=transitions(curves), token_labels=list("abcde")[:T], **kw)
    return fig, steps, patterns


def test_scrubber_slider_carries_every_step():
    fig, steps, patterns = _figure()
    [slider] = fig.layout.sliders
    assert [s.label for s in slider.steps] == [str(s) for s in steps] and slider.active == len(steps) - 1
    heat = [i for i, t in enumerate(fig.data) if t.type == "heatmap"]
    assert len(heat) == 3
    xs = []
    for _, pattern, s in zip(steps, patterns, slider.steps):
        data, layout, traces = s.args
        assert s.method == "update" and list(traces) == heat
        for h, z in enumerate(data["z"]):
            assert np.allclose(z, pattern[h], atol=1e-3)
        xs.append(layout["shapes[0].x0"])
    assert xs == [s + 1 for s in steps]  # the marker moves with the step (log axis: step + 1)
    assert fig.layout.shapes[0].x0 == steps[-1] + 1
    assert np.allclose(fig.data[heat[1]].z, patterns[-1][1], atol=1e-3)  # starts at the last step
    marks = [t for t in fig.data if t.type == "scatter" and t.marker.symbol == "x"]
    assert len(marks) == 2  # both metrics moved: each has its transition marked


def test_scrubber_caps_its_size():
    fig, steps, _ = _figure(n_steps=100, max_steps=30)
    labels = [s.label for s in fig.layout.sliders[0].steps]
    assert len(labels) == 30 and labels[0] == "0" and labels[-1] == "99"
    fig, _, _ = _figure(n_steps=100, max_values=3 * 25 * 10)
    assert len(fig.layout.sliders[0].steps) == 10
    with pytest.raises(ValueError, match=r"patterns\[0\]"):
        scrubber([0], [np.zeros((2, 3, 3))], ["L0H0"])


# ------------------------------------------------------------------------------------------------
# still_learning: a curve still falling at the end, a converged one, and too short a log
# ------------------------------------------------------------------------------------------------

def test_still_learning_tells_a_falling_curve_from_a_flat_one():
    from toymech.analysis import dynamics

    steps = list(range(0, 2001, 100))
    falling = [3.0 * math.exp(-s / 1500) for s in steps]  # ~0.5 nats per 1,000 steps at the end
    flat = [max(0.5, 3.0 - s / 200) for s in steps]  # reached its floor at step 500
    assert dynamics.still_learning(steps, falling) is True
    assert dynamics.still_learning(steps, flat) is False
    assert dynamics.still_learning(steps[:2], flat[:2]) is None  # too few points to tell
    assert dynamics.still_learning([0, 1000, 2000], [3.0, 2.0, 1.0]) is None  # two in the window
    assert dynamics.still_learning(steps[:6], falling[:6]) is None  # shorter than the window
    # the null: noise on a flat curve (below the stated slope) is not learning
    wobble = [1.0 + 0.004 * (-1) ** i for i in range(len(steps))]
    assert dynamics.still_learning(steps, wobble) is False


def test_still_learning_is_the_same_rule_for_every_run_length():
    """A loss falling at one rate per step is judged alike in a short run and a long one: the
    window is in steps, not a share of the run (a last-fifth rule calls the long run still
    learning and the short one not, or the reverse, at the same rate)."""
    from toymech.analysis import dynamics

    rate = 0.03 / 1000  # nats per step: just above the stated slope
    for end in (2000, 4000, 16000):
        steps = list(range(0, end + 1, 100))
        assert dynamics.still_learning(steps, [5.0 - rate * s for s in steps]) is True, end
        slow = [5.0 - 0.01 / 1000 * s for s in steps]  # below it
        assert dynamics.still_learning(steps, slow) is False, end


def test_history_still_learning_knows_why_the_run_stopped():
    """A stop rule that fired: judged where it stopped (not learning); a learning rate run down
    to zero: cannot tell (the flat end is the schedule's); constant: the slope decides."""
    from toymech.analysis import dynamics

    falling = [{"step": s, "train_loss": 3.0 - s / 1000, "lr": 1e-3} for s in range(0, 2001, 100)]
    assert dynamics.history_still_learning(falling) is True
    assert dynamics.stop_reason(falling) == dynamics.STEPS_RAN_OUT
    stopped = [*falling[:-1], {**falling[-1], "stop_step": 2000}]
    assert dynamics.history_still_learning(stopped) is False
    assert dynamics.stop_reason(stopped) == dynamics.STOP_RULE
    flat_cosine = [{"step": s, "train_loss": 0.5, "lr": 1e-3 * (1 + math.cos(math.pi * s / 2000)) / 2}
                   for s in range(0, 2001, 100)]
    assert dynamics.stop_reason(flat_cosine) == dynamics.SCHEDULE_ENDED
    assert dynamics.history_still_learning(flat_cosine) is None
    assert dynamics.stop_reason([]) == ""


def test_still_learning_refuses_what_it_cannot_read():
    from toymech.analysis import dynamics

    with pytest.raises(ValueError, match="losses"):
        dynamics.still_learning([0, 1, 2, 3], [1.0, float("nan"), 1.0, 1.0])
    with pytest.raises(ValueError, match="steps"):
        dynamics.still_learning([0, 2, 1, 3], [1.0, 1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="window"):
        dynamics.still_learning([0, 1, 2, 3], [1.0] * 4, window=0)
    with pytest.raises(ValueError, match="slope"):
        dynamics.still_learning([0, 1, 2, 3], [1.0] * 4, slope=-1.0)
