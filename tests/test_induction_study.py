import math

import pytest
import torch

from toymech.studies import induction as study
from toymech.studies.induction.design import MAIN
from toymech.studies.induction.measure import Model, mechanism_verdict

CHANCE = math.log(26)
# The predictors on a run's own mechanism sets (as ``mechanism_baselines`` gives them, figures of
# a 6-letter task): the best member of the null family is exact on the trained block length
# (predictable, shifted), a little below the frequency copier on the others (recency
# suppression), induction (the oracle) far below it everywhere.
BASE = {"predictable": {"copier": 1.85, "best": 0.0, "oracle": 0.3},
        "shifted": {"copier": 2.0, "best": 0.0, "oracle": 0.55},
        "shorter": {"copier": 1.65, "best": 1.5, "oracle": 0.2},
        "longer": {"copier": 2.0, "best": 1.7, "oracle": 0.5}}
# A block_len=3 variant: its 2- and 4-letter sets are easy for the frequency copier, below half a
# uniform guess (1.63), the old "solved" line.
SHORT_BASE = {"predictable": {"copier": 1.2, "best": 0.0, "oracle": 0.2},
              "shifted": {"copier": 1.35, "best": 0.0, "oracle": 0.3},
              "shorter": {"copier": 0.75, "best": 0.7, "oracle": 0.1},
              "longer": {"copier": 1.15, "best": 1.1, "oracle": 0.2}}


@pytest.mark.parametrize("losses, expected", [
    ({"predictable": 0.1, "shifted": 0.2, "shorter": 0.3, "longer": 0.3}, "content-based"),
    ({"predictable": 0.1, "shifted": 0.2, "shorter": 4.0, "longer": 6.0}, "position"),
    ({"predictable": 0.1, "shifted": 2.6, "shorter": 5.0, "longer": 6.0}, "position"),
    ({"predictable": 0.1, "shifted": 2.6, "shorter": 0.3, "longer": 0.3}, "partial"),
    ({"predictable": 0.1, "shifted": 0.2, "shorter": 0.3, "longer": 1.65}, "partial"),
    ({"predictable": 2.5, "shifted": 2.6, "shorter": 2.5, "longer": 2.5}, "not solved"),
    # below the old line (ln 26 / 2) everywhere, yet no better than the frequency copier
    ({"predictable": 1.8, "shifted": 0.2, "shorter": 0.3, "longer": 0.3}, "not solved"),
    # the copier's own losses, and a margin short of MARGIN, solve nothing
    ({k: b["copier"] for k, b in BASE.items()}, "not solved"),
    ({"predictable": 0.1, "shifted": 0.2, "shorter": 1.41, "longer": 0.3}, "partial"),
])
def test_mechanism_verdict(losses, expected):
    assert mechanism_verdict(losses, BASE).startswith(expected)


def test_the_verdict_says_where_a_position_run_copies_from():
    shifted_ok = {"predictable": 0.1, "shifted": 0.2, "shorter": 4.0, "longer": 6.0}
    assert "a fixed offset back" in mechanism_verdict(shifted_ok, BASE)
    assert "absolute position" in mechanism_verdict({**shifted_ok, "shifted": 2.6}, BASE)
    assert mechanism_verdict(shifted_ok, BASE, learning=True).startswith("still learning")


def test_the_old_half_line_is_no_longer_content():
    """Losses of 1.2 on 2- and 4-letter blocks pass half a uniform guess (1.63) but not a
    frequency copier at 0.75 / 1.15: no content; 0.5 and 0.9 beat the best predictor by more
    than MARGIN."""
    from toymech.studies.induction.measure import mechanism_label

    losses = {"predictable": 0.05, "shifted": 0.1, "shorter": 1.2, "longer": 1.2}
    assert all(v < CHANCE / 2 for v in losses.values())  # what the old cut called content
    assert mechanism_label(losses, SHORT_BASE) == "position"
    assert mechanism_verdict(losses, SHORT_BASE).startswith("position")
    assert mechanism_label({**losses, "shorter": 0.5, "longer": 0.9}, SHORT_BASE) == "content"
    assert mechanism_label({**losses, "shorter": 0.5, "longer": 1.05}, SHORT_BASE) == "partial"


def _numbers(losses, base, shorts=("2l", "smeared"), width=0.02):
    """One seed's numbers with the models ``shorts`` at ``losses``, the predictors ``base`` and
    margins' intervals ``width`` either side of each margin."""
    n = {"chance.loss": CHANCE, "floor.loss": 0.7}
    for s, b in base.items():
        n[f"base.{s}"], n[f"base.{s}.copier"], n[f"base.{s}.oracle"] = b["best"], b["copier"], b["oracle"]
    for short in shorts:
        n.update({f"{short}.{k}": v for k, v in losses.items()})
        for s in ("shifted", "shorter", "longer"):
            beyond, gain = base[s]["best"] - losses[s], base[s]["copier"] - losses[s]
            n.update({f"{short}.{s}.beyond_low": beyond - width, f"{short}.{s}.beyond_high": beyond + width,
                      f"{short}.{s}.gain_low": gain - width, f"{short}.{s}.gain_high": gain + width})
    return n


@pytest.mark.parametrize("key", ["2l-copies-by-content", "smeared-copies-by-content"])
def test_the_content_claims_are_judged_against_the_predictors_without_induction(key):
    from toymech.studies.claims import Measured, assess
    from toymech.studies.induction.panel import MARGIN

    claim = next(c for c in study.STUDY.claims if c.key == key)
    strong = _numbers({"predictable": 0.05, "shifted": 0.1, "shorter": 0.3, "longer": 0.4}, BASE)
    assert claim.holds(Measured(strong)) and claim.value(Measured(strong)) == pytest.approx(1.2)
    assert claim.reference(Measured(strong)) == MARGIN and claim.null == "threshold"
    # a model as good as the frequency copier on every set: no content
    copier = _numbers({k: b["copier"] for k, b in BASE.items()}, BASE)
    assert not claim.holds(Measured(copier)) and claim.value(Measured(copier)) < 0
    # the old half-line case: below 1.63 everywhere, not below the copier on short blocks
    half = _numbers({"predictable": 0.05, "shifted": 0.1, "shorter": 1.2, "longer": 1.2},
                    SHORT_BASE)
    assert not claim.holds(Measured(half)) and claim.value(Measured(half)) < 0
    # strong out of distribution but not learned in distribution: no content either
    unlearned = {**strong, f"{key.split('-')[0]}.predictable": 1.8}
    assert not claim.holds(Measured(unlearned))
    # a margin whose interval straddles the cut: undecided (unresolved), neither content nor
    # evidence against it
    close = _numbers({"predictable": 0.05, "shifted": 0.1, "shorter": 0.3, "longer": 1.58}, BASE,
                     width=0.05)
    assert claim.holds(Measured(close)) is None
    assert assess(claim, [close] * 3).verdict == "unresolved"
    # one block-length set that can tell (the other's predictor gets half of induction's gain):
    # undecided too, however far the model is beyond on the one set
    one_set = {**BASE, "longer": {**BASE["longer"], "best": 0.9}}  # gains 1.1 of the oracle's 1.5
    lone = _numbers({"predictable": 0.05, "shifted": 0.1, "shorter": 0.3, "longer": 0.4}, one_set)
    assert claim.holds(Measured(lone)) is None and claim.value(Measured(lone)) > MARGIN
    assert claim.holds(Measured(_numbers({"predictable": 0.05, "shifted": 0.1, "shorter": 0.3,
                                           "longer": 1.58}, BASE, width=0.01)))
    # failing a shifted start rules content out, though a predictor solves that set too
    failing = _numbers({"predictable": 0.05, "shifted": 1.95, "shorter": 0.3, "longer": 0.4}, BASE)
    assert not claim.holds(Measured(failing))
    # over three seeds: the copier's losses do not hold, the strong model does
    assert assess(claim, [copier] * 3).agree == 0 and assess(claim, [strong] * 3).agree == 3
    # no predictor measured, or no interval: not measured (never judged on a missing bar)
    for gone in ("base.shorter", f"{key.split('-')[0]}.longer.beyond_low"):
        bare = {k: v for k, v in strong.items() if not k.startswith(gone)}
        assert assess(claim, [bare] * 3).verdict == "not measured"


def test_untrained_models_are_untrained_and_their_bars_are_measured_once_per_seed():
    from toymech.studies.induction.over_seeds import labels

    n = study.STUDY.untrained_numbers("smoke", 0)
    for s in study.MECHANISM_SETS:
        assert 0 <= n[f"base.{s}"] <= n[f"base.{s}.copier"] < CHANCE
        assert n[f"base.{s}.oracle"] < n[f"base.{s}.copier"]
    assert set(labels(n).values()) == {"untrained"}
    for key in ("2l-copies-by-content", "smeared-copies-by-content"):
        claim = next(c for c in study.STUDY.claims if c.key == key)
        from toymech.studies.claims import Measured
        assert not claim.holds(Measured(n)) and claim.value(Measured(n)) < 0


def test_validate_rejects_bad_parameters():
    with pytest.raises(ValueError, match="size='huge'"):
        study.validate("huge", 0, "cpu")
    with pytest.raises(ValueError, match="seed=-1"):
        study.validate("smoke", -1, "cpu")
    with pytest.raises(ValueError, match="device='gpu0'"):
        study.validate("smoke", 0, "gpu0")
    assert study.validate("smoke", 0, "cpu") == torch.device("cpu")


def test_seeds_train_once_and_are_measured_per_seed(tmp_path):
    """smoke: two seeds of the post's models; the notebook's seed is the same zoo entry as a
    single run's, and each seed's numbers are its own (its own evaluation stream)."""
    from toymech.tasks import RepeatedBlocks

    dev = torch.device("cpu")
    assert study.seeds_of("smoke", 3) == (3, 4)
    # default's calibration seeds (0-2) are passed over: the judged seeds are others
    assert study.seeds_of("default", 0) == (3, 4, 5)
    assert study.seeds_of("default", 0, n_seeds=5) == (3, 4, 5, 6, 7)
    assert study.seeds_of("default", 2) == (3, 4, 5) and study.seeds_of("default", 4) == (4, 5, 6)
    runs = study.load_seeds("smoke", 3, dev, tmp_path)
    assert list(runs) == [3, 4] and set(runs[3]) == set(MAIN)
    again = study.load_models(MAIN, "smoke", 3, dev, tmp_path, progress=False)
    assert all(m.entry.loaded for m in again.values())  # the same entries: nothing retrained
    more = study.load_seeds("smoke", 3, dev, tmp_path, n_seeds=3)
    assert all(m.entry.loaded for s in (3, 4) for m in more[s].values())  # reused
    assert not any(m.entry.loaded for m in more[5].values())
    task = RepeatedBlocks()
    per_seed = study.measure_seeds(runs, task, "smoke", dev)
    assert per_seed[3]["2l.option1"] != per_seed[4]["2l.option1"]
    assert per_seed[3]["smeared.copying_heads"] + per_seed[3]["smeared.suppressing_heads"] <= 4
    assert per_seed[3]["2l.test"] == pytest.approx(
        study.STUDY.measure_seed(again, study.probe_data(task, "smoke", 3, dev))["2l.test"], abs=1e-6)
    table = study.seed_table(per_seed)
    assert list(table.index) == [3, 4] and "2l-option1" in table.columns


def test_attention_view_names_its_model():
    from toymech.models import build_model
    from toymech.tasks import RepeatedBlocks

    exp = study.experiment("induction-2l", "smoke", 0)
    model, task = build_model(exp.model), RepeatedBlocks()
    tokens = task.sample(1, torch.Generator().manual_seed(0)).tokens[0]
    view = study.attention_view(model, task, tokens, name="induction-2l")
    assert view.caption == "Model: induction-2l."
    assert study.attention_view(model, task, tokens).caption is None
    with pytest.raises(ValueError, match="^name='' is not allowed"):
        study.attention_view(model, task, tokens, name="")


def test_measure_returns_a_new_model_and_leaves_its_input_as_it_was():
    import dataclasses

    from toymech.models import build_model
    from toymech.tasks import RepeatedBlocks

    exp = study.experiment("induction-2l", "smoke", 0)
    loaded = Model("induction-2l", None, module=build_model(exp.model).eval())
    sets = study.eval_sets(RepeatedBlocks(), "smoke", 0)
    [measured] = study.measure_all({"induction-2l": loaded}, sets).values()
    assert measured is not loaded and measured.model is loaded.model
    assert loaded.losses == {} and loaded.head_copy is None and loaded.paths == {}  # untouched
    assert set(study.POST_SETS) <= set(measured.losses) and "K and Q" in measured.paths
    assert measured.head_copy.shape == (2, 4) and "none" in measured.ablations
    with pytest.raises(dataclasses.FrozenInstanceError):
        measured.losses = {}
    data = study.probe_data(RepeatedBlocks(), "smoke", 0)
    assert study.STUDY.measure_seed({"induction-2l": measured}, data) == study.STUDY.measure_seed({"induction-2l": loaded}, data)
    # the notebook's mechanism check on it, against the bars of its sets: untrained, no verdict
    bars = study.mechanism_baselines(RepeatedBlocks(), sets)
    text = study.algorithms_text({"induction-2l": measured}, bars, None)
    assert "Mechanism check: not solved in distribution yet." in text
    table = study.mechanism_table({"induction-2l": measured}, bars)
    assert table.loc["induction-2l", "verdict"] == "not solved in distribution yet"
    assert table.iloc[-1]["shorter"] == round(bars["shorter"]["best"], 3)
    assert table.iloc[-1]["shifted"] == round(bars["shifted"]["copier"], 3)
