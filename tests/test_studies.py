"""Every study has the same public surface (the template included)."""

import importlib

import pytest

from toymech import core, experiments
from toymech.studies import all_studies

SURFACE = ("TITLE", "SOURCE", "SIZES", "EXPERIMENTS", "validate", "CLAIMS", "numbers",
           "scorecard")
STUDIES = [m.__name__ for m in all_studies()] + ["toymech.studies._template"]


def test_the_three_studies_are_found():
    names = {m.__name__.rsplit(".", 1)[-1] for m in all_studies()}
    assert {"induction", "birth", "random_transformers"} <= names and "_template" not in names


@pytest.mark.parametrize("name", STUDIES)
def test_same_surface(name):
    study = importlib.import_module(name)
    missing = [a for a in SURFACE if not hasattr(study, a)]
    assert not missing, missing
    assert set(study.SIZES) == set(core.SIZES)
    assert study.CLAIMS and all(c.statement and c.source_value for c in study.CLAIMS)
    for exp_name, named in study.EXPERIMENTS.items():
        assert named.name == exp_name
        assert named.make("smoke", 1).train.seed == 1
    with pytest.raises(ValueError, match="size='huge'"):
        study.validate("huge", 0, "cpu")


def test_study_experiments_are_registered_by_name():
    registry = experiments.registry()
    for study in all_studies():
        for exp_name in study.EXPERIMENTS:
            assert registry[exp_name].study


def test_template_runs_at_smoke(tmp_path):
    import torch

    from toymech.studies import _template as t
    dev = t.validate("smoke", 0, "cpu")
    metrics = t.run("smoke", 0, dev, tmp_path)
    card = t.scorecard([t.numbers(metrics)])
    assert 0.0 <= metrics["acc"] <= 1.0 and card["seeds agreeing"].iloc[0] in ("0/1", "1/1")
    assert dev == torch.device("cpu")
