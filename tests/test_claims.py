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
              holds=lambda n: n["a"] < n["b"], unit="nats")


def test_assess_median_spread_and_missing_seeds():
    per_seed = [{"a": 1.0, "b": 3.0}, {"a": 2.0, "b": 2.5}, {"a": 3.0, "b": 1.0}, {"a": 1.0}]
    a = assess(CLAIM, per_seed)
    assert (a.agree, a.measured) == (2, 3)  # the seed without "b" measured nothing
    assert a.median == 0.5 and (a.low, a.high) == (-2.0, 2.0)
    assert a.ours == "0.5 [-2, 2]" and a.verdict == "mixed"
    empty = assess(CLAIM, [])
    assert math.isnan(empty.median) and empty.ours == "n/a" and empty.verdict == "not measured"


def test_scorecard_rows():
    card = scorecard([CLAIM], [{"a": 0.0, "b": 1.0}])
    row = card.loc["a is below b"]
    assert row["ours"] == "1 nats" and row["seeds agreeing"] == "1/1"
    assert row["verdict"] == "consistent (1 seed)" and row["source's number"] == "a < b"
    card = scorecard([CLAIM], [{"a": 0.0, "b": 1.0}] * 3, "default", [0, 1, 2])
    assert card.loc["a is below b", "verdict"] == "reproduced"
