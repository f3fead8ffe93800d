import math

import pytest
import torch

from toymech.studies import induction as study

CHANCE = math.log(26)


@pytest.mark.parametrize("losses, expected", [
    ({"predictable": 0.1, "shifted": 0.2, "period5": 0.3, "period7": 0.3}, "content-based"),
    ({"predictable": 0.1, "shifted": 0.2, "period5": 4.0, "period7": 6.0}, "relative position"),
    ({"predictable": 0.1, "shifted": 2.6, "period5": 5.0, "period7": 6.0}, "absolute position"),
    ({"predictable": 2.5, "shifted": 2.6, "period5": 2.5, "period7": 2.5}, "not solved"),
])
def test_mechanism_verdict(losses, expected):
    assert study.mechanism_verdict(losses, CHANCE).startswith(expected)


def test_validate_rejects_bad_parameters():
    with pytest.raises(ValueError, match="preset='huge'"):
        study.validate("huge", 0, "cpu")
    with pytest.raises(ValueError, match="seed=-1"):
        study.validate("smoke", -1, "cpu")
    with pytest.raises(ValueError, match="device='gpu0'"):
        study.validate("smoke", 0, "gpu0")
    assert study.validate("smoke", 0, "cpu") == torch.device("cpu")
