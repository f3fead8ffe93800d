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

from claims_like import _birth_like, _induction_like, _rt_like

STUDIES = {"induction": induction, "birth": birth, "random_transformers": rt}
PASSING = ("reproduced", "consistent")


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
            chance[k] = (0.0 if k.startswith(("rise.", "half.", "causal.")) else n["chance.acc"]
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
