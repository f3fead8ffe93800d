import math

import pytest

from toymech.studies.claims import Claim, assess, scorecard, verdict


@pytest.mark.parametrize("agree, measured, expected", [
    (0, 0, "not measured"), (0, 3, "not reproduced"), (1, 1, "consistent (1 seed)"),
    (3, 3, "reproduced"),
    (2, 3, "mixed"), (4, 5, "reproduced"), (3, 5, "mixed"), (8, 10, "reproduced"),
    (7, 10, "mixed"), (1, 10, "mixed"),
])
def test_verdict_thresholds(agree, measured, expected):
    assert verdict(agree, measured) == expected


def test_verdict_rejects_impossible_counts():
    with pytest.raises(ValueError, match="agree=4"):
        verdict(4, 3)


CLAIM = Claim("gap", "a is below b", "somewhere", "a < b", value=lambda n: n["b"] - n["a"],
              holds=lambda n: n["a"] < n["b"], unit="nats",
              setting={"steps": 2000, "width": 64, "data": "d"})


def test_assess_median_spread_and_missing_seeds():
    per_seed = [{"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.5}, {"a": 3.0, "b": 1.0}, {"a": 1.0}]
    a = assess(CLAIM, per_seed)
    assert (a.agree, a.measured) == (2, 3)  # the seed without "b" measured nothing
    assert a.median == 0.5 and (a.low, a.high) == (-2.0, 2.0)
    assert a.ours == "0.5 [-2, 2]" and a.verdict == "mixed"
    empty = assess(CLAIM, [])
    assert math.isnan(empty.median) and empty.ours == "n/a" and empty.verdict == "not measured"


def test_scorecard_rows():
    card = scorecard([CLAIM], [{"a": 0.0, "b": 1.0}], "default", None, SETTINGS)
    row = card.loc["a is below b"]
    assert row["ours"] == "1 nats" and row["seeds agreeing"] == "1/1"
    assert row["verdict"] == "consistent (1 seed)" and row["source's number"] == "a < b"
    card = scorecard([CLAIM], [{"a": 0.0, "b": 1.0}] * 3, "paper", [0, 1, 2], SETTINGS)
    assert card.loc["a is below b", "verdict"] == "reproduced"


def test_a_scorecard_always_knows_its_size_and_settings():
    n = [{"a": 0.0, "b": 1.0}]
    with pytest.raises(ValueError, match="size=None"):
        scorecard([CLAIM], n, None, None, SETTINGS)
    with pytest.raises(ValueError, match="settings=None"):
        scorecard([CLAIM], n, "default")


def test_a_claim_that_rests_on_some_seed_needs_it_among_the_judged():
    """``some``: the rebuttal's perfect runs. Without one, no seed agrees, however many are
    within the other mode's bounds; with one, the others count as usual."""
    split = Claim("split", "perfect or at most 0.675", "s", "4 of 10 perfect",
                  value=lambda n: n["acc"], holds=lambda n: n["acc"] >= 0.9995 or
                  0.2 <= n["acc"] <= 0.675, some=lambda n: n["acc"] >= 0.9995,
                  setting={"steps": 1, "width": 16, "digits": 10})
    half = [{"acc": 0.5}] * 10
    assert assess(split, half).verdict == "not reproduced"
    assert assess(split, [{"acc": 1.0}] * 4 + [{"acc": 0.5}] * 6).verdict == "reproduced"
    assert assess(split, [{"acc": 1.0}] + [{"acc": 0.9}] * 9).verdict == "mixed"


# --- every seed counts; distinct seeds; calibration seeds apart ---------------------------------
@pytest.mark.parametrize("agree, measured, unresolved, requested, expected", [
    (3, 3, 7, 10, "mixed"),            # 3 True + 7 unresolved is not "reproduced"
    (3, 3, 0, 5, "mixed"),             # 3 of 5 requested, 2 not measured
    (4, 4, 0, 5, "reproduced"),        # 4 of 5 = 80 %
    (3, 5, 0, 5, "mixed"),             # 3 passes and 2 failures
    (2, 2, 0, 3, "consistent (2 seeds)"),
    (0, 2, 1, 3, "not reproduced (2 seeds)"),
    (0, 0, 3, 3, "unresolved"),
])
def test_verdict_counts_every_requested_seed(agree, measured, unresolved, requested, expected):
    assert verdict(agree, measured, unresolved, requested=requested) == expected


def test_assess_counts_unmeasured_seeds_against_reproduced():
    per_seed = [{"a": 0.0, "b": 1.0}] * 3 + [{}] * 2
    a = assess(CLAIM, per_seed)
    assert (a.agree, a.measured, a.requested) == (3, 3, 5) and a.verdict == "mixed"
    card = scorecard([CLAIM], per_seed, "default", None, SETTINGS)
    assert card.loc["a is below b", "seeds agreeing"] == "3/3 (2 not measured)"


def test_scorecard_refuses_repeated_and_calibration_seeds():
    n = {"a": 0.0, "b": 1.0}
    with pytest.raises(ValueError, match="distinct"):
        scorecard([CLAIM], [n] * 3, "default", [4, 4, 5], SETTINGS)
    with pytest.raises(ValueError, match="calibrated"):
        scorecard([SET], [n] * 3, "default", [1, 3, 4], SETTINGS)
    assert scorecard([SET], [n] * 3, "default", [3, 4, 5], SETTINGS).attrs["caption"].endswith(
        "Calibration seeds at default (never judged): 0, 1, 2.")


# --- settings: below the source's setting, scaled --------------------------------------------
from toymech.studies.settings import StudySettings, shortfall  # noqa: E402

SIZE_SETTING = {"width": 64, "data": "d"}
SETTINGS = StudySettings({"smoke": {"steps": 10, **SIZE_SETTING},
                          "default": {"steps": 2000, "modulus": 23, **SIZE_SETTING},
                          "paper": {"steps": 10_000, "modulus": 199, **SIZE_SETTING}},
                         {"smoke": "seconds", "default": "minutes", "paper": "hours"},
                         {"default": (0, 1, 2)},
                         evidence={"default": frozenset({"gap-scaled"})},
                         evidence_record="a recorded run (this test's)")
SET = Claim("gap-set", "a is below b at the source's setting", "somewhere", "a < b",
            value=lambda n: n["b"] - n["a"], holds=lambda n: n["a"] < n["b"],
            setting={"steps": 10_000, "modulus": 199, "width": 64})
SCALED = Claim("gap-scaled", "a is below b, qualitatively", "somewhere", "a < b",
               value=lambda n: n["b"] - n["a"], holds=lambda n: n["a"] < n["b"],
               setting={"steps": 10_000, **SIZE_SETTING}, numeric=False,
               scaled="a direction, not a size")


def test_shortfall_reads_budgets_as_at_least_and_task_sizes_as_equal():
    assert shortfall({"steps": 10_000, "modulus": 199}, {"steps": 20_000, "modulus": 199}) == ()
    assert shortfall({"steps": 10_000}, {"steps": 2000}) == (("steps", 2000, 10_000),)
    assert shortfall({"modulus": 199}, {"modulus": 401}) == (("modulus", 401, 199),)
    assert shortfall({"width": 1024}, {}) == (("width", "not stated", 1024),)


def test_a_run_below_the_source_setting_is_not_judged():
    n = {"a": 0.0, "b": 1.0}
    card = scorecard([SET, SCALED], [n] * 3, "default", [3, 4, 5], SETTINGS)
    below = card.loc[SET.statement, "verdict"]
    assert below.startswith("below the source's setting") and "steps 2,000 vs the source's " \
        "10,000" in below and "modulus 23 vs the source's 199" in below
    # the command and its cost are said once, in the caption, not in every row (12 times before)
    assert "./run.sh report" not in below
    assert card.attrs["caption"].count("reached by `./run.sh report --size paper` (hours)") == 1
    assert card.loc[SET.statement, "ours"] == "1"  # our number is still shown
    assert card.loc[SCALED.statement, "verdict"] == \
        "reproduced (scaled: steps 2,000 vs the source's 10,000)"
    card = scorecard([SET, SCALED], [n] * 3, "paper", [0, 1, 2], SETTINGS)
    assert list(card["verdict"]) == ["reproduced", "reproduced"]


def test_a_numeric_claim_is_never_scaled_and_a_reference_names_its_null():
    with pytest.raises(ValueError, match="scaled"):
        Claim("x", "x", "s", "v", value=lambda n: 0, holds=lambda n: True, scaled="why",
              setting=CLAIM.setting)
    with pytest.raises(ValueError, match="null"):
        Claim("x", "x", "s", "v", value=lambda n: 0, holds=lambda n: True,
              reference=lambda n: 0, setting=CLAIM.setting)


def test_a_claims_own_calibration_seeds_are_left_out():
    own = Claim("own", "a is below b (a recipe)", "s", "a < b", value=lambda n: n["b"],
                holds=lambda n: n["a"] < n["b"], calibration=(0,), setting=CLAIM.setting)
    per_seed = [{"a": 0.0, "b": 1.0}, {}, {}]  # seed 0 (calibration) passed, 1 and 2 missing
    a = assess(own, per_seed, seeds=[0, 1, 2])
    assert (a.agree, a.requested, a.verdict) == (0, 2, "not measured")


def test_summaries_keep_the_seed_count_and_count_below_apart():
    from toymech.report.scorecards import verdict_word
    from toymech.studies.findings import scorecard_sentence
    assert verdict_word("consistent (1 seed)") == "consistent (1 seed)"
    assert verdict_word("below the source's setting: steps 2,000 vs ...") == \
        "below the source's setting"
    assert verdict_word("reproduced (scaled: steps 2,000 vs the source's 10,000)") == \
        "reproduced (scaled)"
    n = {"a": 0.0, "b": 1.0}
    card = scorecard([CLAIM, SET, SCALED], [n], "default", [3], SETTINGS)
    said = scorecard_sentence(card)
    assert "1 consistent (1 seed)" in said and "1 below the source's setting" in said
    assert "consistent (1 seed) at a scaled setting" in said


OUR_TEST = Claim("ours", "a is below b (our test)", "ours: the source never ran it", "a < b",
                 value=lambda n: n["b"] - n["a"], holds=lambda n: n["a"] < n["b"],
                 setting={"steps": 2000, "width": 64, "data": "d"}, ours=True)


@pytest.mark.parametrize("per_seed, expected", [
    ([{"a": 0.0, "b": 1.0}] * 3, "holds (our test)"),
    ([{"a": 1.0, "b": 0.0}] * 3, "does not hold (our test)"),
    ([{"a": 1.0, "b": 0.0}] * 2, "does not hold (our test) (2 seeds)"),
    ([{"a": 0.0, "b": 1.0}] * 2, "consistent (2 seeds)"),
    ([{"a": 0.0, "b": 1.0}, {"a": 1.0, "b": 0.0}, {"a": 1.0, "b": 0.0}], "mixed"),
])
def test_a_test_of_ours_never_reads_reproduced(per_seed, expected):
    """A claim of ours (``ours``: a test the source never ran) reads "holds (our test)" /
    "does not hold (our test)", in ``assess`` and in the scorecard, at the source's setting and
    at a scaled one; the same numbers on a source's claim read "reproduced"."""
    assert assess(OUR_TEST, per_seed).verdict == expected
    card = scorecard([OUR_TEST, CLAIM], per_seed, "paper", list(range(len(per_seed))), SETTINGS)
    said = card.loc["a is below b (our test)", "verdict"]
    assert said == expected and "reproduced" not in said
    if expected == "holds (our test)":
        assert card.loc["a is below b", "verdict"] == "reproduced"


def test_no_study_claim_of_ours_reads_reproduced_on_source_like_numbers():
    import importlib

    from toymech.studies import protocol
    for name in protocol.STUDIES:
        cl = importlib.import_module(f"toymech.studies.{name}.claims")
        n = cl.source_like()
        for c in protocol.study(name).claims:
            v = assess(c, [n] * 3).verdict
            assert ("reproduced" in v) != c.ours, (c.key, v)
