"""Claims that can fail: every claim of the three studies against a null world (untrained
models through the study's own measurement code), NaN / missing / subset / at-chance numbers, and
a synthetic source-like seed on which every claim holds."""

import math
from collections.abc import Mapping

import pandas as pd
import pytest
import torch

from toymech.models import build_model
from toymech.studies import birth, induction
from toymech.studies import random_transformers as rt
from toymech.studies.claims import Measured, assess, scorecard, verdict

STUDIES = {"induction": induction, "birth": birth, "random_transformers": rt}
PASSING = ("reproduced", "consistent")


# --- source-like numbers: one seed that agrees with every claim ----------------------------------
def _induction_like():
    n = {"chance.loss": math.log(26), "floor.loss": 0.708}
    for short, test, doubled in (("1l", 2.6, 3.4), ("smeared", 1.24, 2.31), ("2l", 1.40, 2.31)):
        n.update({f"{short}.test": test, f"{short}.doubled": doubled,
                  f"{short}.direct_copy": -0.99, f"{short}.predictable": 0.1,
                  f"{short}.shifted": 0.2, f"{short}.period5": 0.3, f"{short}.period7": 0.3})
    n.update({"smeared.option1": 0.99, "smeared.option2": 0.73, "2l.option1": 0.73,
              "2l.option2": 6.42, "2l.copy_max.L0": -0.93, "2l.copy_min.L0": -1.0,
              "2l.copy_max.L1": 1.0, "2l.copy_min.L1": 0.9, "smeared.copying_heads": 2.0,
              "smeared.suppressing_heads": 2.0, "1l.copying_heads": 4.0,
              "2l.prev_token_max.L0": 0.9, "2l.path.direct": 3.12, "2l.path.k": 2.52,
              "2l.path.q": 2.62, "2l.path.both": 1.39})
    return n


def _birth_like():
    n = {"icl_acc": 0.97, "bigram_acc": 0.29, "baseline.icl_acc": 0.05,
         "baseline.bigram_acc": 0.30, "chance.acc": 1 / 65, "interval": 5.0,
         "half.bigram_acc": 20.0, "half.icl_acc": 200.0, "half.W_O2": 100.0, "half.W_K2": 150.0,
         "half.W_K1": 180.0, "half.W_F": 15.0}
    n.update({f"rise.{m}": 0.8 for m in ("icl_acc", "W_O2", "W_K2", "W_K1")})
    n.update({"rise.bigram_acc": 0.25, "rise.W_F": 1.0,
              "freeze.paper.icl_acc": 0.9, "freeze.none.icl_acc": 0.95,
              "freeze.paper.probe_wk2": 0.8, "freeze.none.probe_wk2": 0.75,
              "freeze.paper.probe_wo2": 0.9, "freeze.none.probe_wo2": 1.0,
              "extremes.frozen.icl_acc": 0.95, "extremes.frozen.probe_wk2": 0.9,
              "extremes.frozen.probe_wo2": 0.9, "extremes.unfrozen.icl_acc": 0.97,
              "extremes.unfrozen.probe_wk2": 0.85, "extremes.unfrozen.probe_wo2": 0.95})
    for mode, shared in (("fixed", (0.1, 0.2, 0.3)), ("random", (0.5, 0.6, 0.7))):
        for k, v in zip((1, 3, 5), shared):
            n[f"sweep.{mode}.non-top-K.K{k}"] = v
            n[f"sweep.{mode}.ood.K{k}"] = v / 2
    for m in ("W_K1", "W_K2", "W_O2", "W_F"):
        n[f"construction.{m}.trained"], n[f"construction.{m}.init"] = 0.3, 0.01
    return n


def _rt_like():
    chance = {"modular_addition": 1 / 23, "needle": 0.5, "decimal_addition": 0.01,
              "parentheses": 0.56}
    n = {f"chance.{t}": c for t, c in chance.items()}
    for t in rt.ALGORITHMIC:
        n.update({f"acc.{t}.normal.small": 1.0, f"acc.{t}.normal.large": 1.0,
                  f"acc.{t}.random.large": 1.0, f"acc.{t}.random.small": 0.6,
                  f"acc.{t}.E_token+U.large": 1.0, f"acc.{t}.U.large": 0.1,
                  f"acc.{t}.E_token+E_pos.large": 1.0})
    n.update({"acc.decimal_addition.E_token+U.large": 0.485,
              "acc.modular_addition.E_token+E_pos.large": 0.05,
              "acc.decimal_addition.normal.small": 0.35, "acc.modular_addition.random.short": 1.0,
              "mem.bits.normal": 2.88, "mem.bits.random": 0.41, "lm.loss.normal": 1.5,
              "lm.loss.random": 2.2, "lm.chance": math.log(65), "conc.memorization.random": 0.8,
              "conc.memorization.normal": 0.5, "conc.char_lm.random": 0.7,
              "conc.char_lm.normal": 0.4, "circuit.gap.narrowest": 0.01,
              "circuit.gap.widest": 0.3, "circuit.random.widest": 0.35,
              "baseline.linearised.parentheses": 0.973, "baseline.linearised.needle": 0.5,
              "baseline.linearised.decimal_addition": 0.05, "baseline.lstm.parentheses": 0.99,
              "baseline.lstm.decimal_addition": 0.02, "baseline.lstm-frozen.needle": 0.55})
    return n


LIKE = {"induction": _induction_like, "birth": _birth_like, "random_transformers": _rt_like}


class _Recorder(Mapping):
    """A seed's numbers that remember which keys a claim read."""

    def __init__(self, numbers):
        self.numbers, self.read = numbers, set()

    def __getitem__(self, key):
        self.read.add(key)
        return self.numbers[key]

    def __iter__(self):
        return iter(self.numbers)

    def __len__(self):
        return len(self.numbers)


def _claims():
    return [(name, c) for name, study in STUDIES.items() for c in study.CLAIMS]


@pytest.mark.parametrize("name, claim", _claims(), ids=lambda x: getattr(x, "key", x))
def test_each_claim_holds_on_source_like_numbers(name, claim):
    n = LIKE[name]()
    assert claim.holds(Measured(n)) is True
    assert math.isfinite(claim.value(Measured(n)))
    a = assess(claim, [n] * 3)
    assert a.verdict == "reproduced" and a.agree == 3


@pytest.mark.parametrize("name, claim", _claims(), ids=lambda x: getattr(x, "key", x))
def test_nan_or_missing_numbers_are_not_measured(name, claim):
    n = LIKE[name]()
    rec = _Recorder(n)
    claim.holds(Measured(rec))
    assert rec.read, "the claim reads no number"
    for key in sorted(rec.read):
        # A sweep over the Ks a user chose, or the memories a model has, may legitimately lack
        # one of them: there only NaN and inf must read "not measured".
        optional = key.startswith(("sweep.", "construction."))
        variants = [{**n, key: float("nan")}, {**n, key: float("inf")}]
        if not optional:
            variants.append({k: v for k, v in n.items() if k != key})
        for broken in variants:
            a = assess(claim, [broken] * 3)
            assert a.measured == 0 and a.verdict in ("not measured", "unresolved"), key
    assert assess(claim, [{}]).verdict == "not measured"


@pytest.mark.parametrize("name", STUDIES)
def test_at_chance_numbers_pass_no_trained_claim(name):
    """Every number moved to what a model at chance gives: losses at the uniform guess, copy
    metrics 0, accuracies at their chance, nothing moved through training."""
    n = LIKE[name]()
    chance = {}
    for k, v in n.items():
        if k.startswith(("chance.", "floor.", "baseline.icl", "baseline.bigram", "interval",
                         "lm.chance")):
            chance[k] = v
        elif name == "induction":
            chance[k] = (n["chance.loss"] if k.split(".")[1] in (
                "test", "doubled", "option1", "option2", "predictable", "shifted", "period5",
                "period7") or ".path." in k else 0.0 if "heads" in k or "copy" in k else 0.16)
        elif name == "birth":
            chance[k] = (0.0 if k.startswith(("rise.", "half.")) else n["chance.acc"]
                         if "acc" in k or "probe" in k or k.startswith("sweep.")
                         else 0.01 if k.startswith("construction.") else v)
        else:
            task = next((t for t in (*rt.ALGORITHMIC,) if f".{t}." in f".{k}."), None)
            chance[k] = (n[f"chance.{task}"] if task else n["lm.chance"] if k.startswith("lm.")
                         else 0.0)
    card = scorecard(STUDIES[name].CLAIMS, [chance] * 3, "default", [0, 1, 2])
    trained = [c.statement for c in STUDIES[name].CLAIMS if c.trained]
    assert not card.loc[trained, "verdict"].str.startswith(PASSING).any(), card["verdict"]


# --- the null world: untrained models through the studies' own measurement code ------------------
def _untrained(exp):
    return build_model(exp.model, "cpu").eval()


def test_null_world_induction():
    from toymech.tasks import RepeatedBlocks
    task = RepeatedBlocks()
    per_seed = [induction.measure_seed({n: _untrained(induction.experiment(n, "smoke", s))
                                        for n in induction.MAIN},
                                       induction.probe_data(task, "smoke", s))
                for s in (0, 1, 2)]
    _no_trained_claim_passes(induction, per_seed)


def test_null_world_birth():
    per_seed = []
    for s in (0, 1, 2):
        exp = birth.experiment("smoke", s)
        runs = {"main": _untrained(exp)}
        sweep = birth.sweep_experiments("smoke", s, ks=(1, 3))
        runs["sweep"] = birth.sweep_rows({k: _untrained(e) for k, e in sweep.items()}, sweep,
                                         "smoke", s)
        freezing = birth.freezing_experiments("smoke", s)
        runs["freezing"] = birth.freezing_rows({k: _untrained(e) for k, e in freezing.items()},
                                               freezing, "smoke", s)
        extremes = birth.extremes_experiments("smoke", s)
        runs["extremes"] = birth.extremes_rows({k: _untrained(e) for k, e in extremes.items()},
                                               extremes, "smoke", s)
        per_seed.append(birth.measure_seed(runs, birth.probe_data(exp.task, "smoke", s)))
    _no_trained_claim_passes(birth, per_seed)


def test_null_world_random_transformers():
    per_seed = [rt.measure_seed(rt.untrained_runs("smoke", s), rt.measure_data("smoke", s))
                for s in (0, 1, 2)]
    _no_trained_claim_passes(rt, per_seed)


def _no_trained_claim_passes(study, per_seed):
    card = study.scorecard(per_seed, "default", [0, 1, 2])
    trained = [c.statement for c in study.CLAIMS if c.trained]
    passing = card.loc[trained][card.loc[trained, "verdict"].str.startswith(PASSING)]
    assert passing.empty, passing[["ours", "verdict"]].to_string()
    measured = card["seeds agreeing"].str.endswith("/0") == False  # noqa: E712
    assert measured.sum() >= len(study.CLAIMS) // 3, "the null world measured too little"


# --- the verdict's strength --------------------------------------------------------------------
@pytest.mark.parametrize("agree, measured, unresolved, expected", [
    (0, 0, 0, "not measured"), (0, 0, 2, "unresolved"), (1, 1, 0, "consistent (1 seed)"),
    (2, 2, 0, "consistent (2 seeds)"), (0, 1, 0, "not reproduced (1 seed)"),
    (1, 2, 0, "mixed (2 seeds)"), (3, 3, 0, "reproduced"), (4, 5, 0, "reproduced"),
    (2, 3, 0, "mixed"), (0, 3, 1, "not reproduced"), (8, 10, 0, "reproduced"), (7, 10, 0, "mixed"),
])
def test_verdict_needs_three_seeds_to_say_reproduced(agree, measured, unresolved, expected):
    assert verdict(agree, measured, unresolved) == expected


def test_smoke_scorecard_is_a_pipeline_check():
    n = _induction_like()
    card = induction.scorecard([n, n], "smoke", [0, 1])
    assert card.attrs["title"].startswith("Pipeline check")
    words = " ".join(card["verdict"])
    assert "reproduced" not in words and "consistent" not in words
    assert set(card["verdict"]) == {"pipeline check: holds 2/2"}
    card = induction.scorecard([n] * 3, "default", [4, 5, 6])
    assert "over 3 seeds (4, 5, 6)" in card.attrs["title"]


def test_measured_view_hides_nan_and_missing():
    m = Measured({"a": 1.0, "b": float("nan"), "c": "text"})
    assert "a" in m and "b" not in m and m.get("b") is None and list(m) == ["a", "c"]
    with pytest.raises(KeyError):
        m["b"]
    assert len(m) == 2


def test_claims_are_documented_one_row_each():
    """docs/sources.md has the generated claims table, current: one row per claim key of the
    three studies, each with our test and why (``python -m toymech.studies.docs`` rewrites it)."""
    from pathlib import Path

    from toymech.studies.docs import with_table
    text = (Path(__file__).parents[1] / "docs" / "sources.md").read_text()
    assert with_table(text) == text, "run: python -m toymech.studies.docs"
    for name, study in STUDIES.items():
        for c in study.CLAIMS:
            assert f"| `{c.key}` |" in text, (name, c.key)
            assert c.test and c.why, c.key


def test_claim_keys_are_unique():
    for study in STUDIES.values():
        keys = [c.key for c in study.CLAIMS]
        assert len(keys) == len(set(keys))


def test_reference_is_shown_beside_ours():
    card = induction.scorecard([_induction_like()] * 3, "default", [0, 1, 2])
    row = card.loc[next(c.statement for c in induction.CLAIMS if c.key == "2l-test-near-source")]
    assert float(row["chance / null"]) == pytest.approx(math.log(26), rel=1e-3)
    assert isinstance(card, pd.DataFrame) and torch.is_tensor(torch.tensor(0))
