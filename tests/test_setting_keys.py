"""Zoo keys do not move: every named experiment at smoke, default and paper, a few knob settings,
and each study's main runs (study 3's accuracy table too), computed before ``Setting`` replaced
the size-name string subclass (``tests/data/zoo_keys_before_setting.json``), are the keys the
code computes now, so a zoo written before the change loads and extends unchanged."""

import json
from pathlib import Path

import pytest

from toymech import experiments
from toymech.studies import protocol

FIXTURE = json.loads((Path(__file__).parent / "data" / "zoo_keys_before_setting.json").read_text())


def test_the_fixture_holds_every_named_experiment_at_every_size():
    """The recorded keys cover the registry as it is (a new experiment adds its own keys here)."""
    recorded = {k.split("|")[0] for k in FIXTURE["named"]}
    assert recorded == set(experiments.names())
    assert len(FIXTURE["named"]) > 200 and len(FIXTURE["study_runs"]) > 40


@pytest.mark.parametrize("size", ["smoke", "default", "paper"])
def test_named_experiments_keep_their_zoo_keys(size):
    changed = []
    for key, want in FIXTURE["named"].items():
        name, at, seed, *variant = key.split("|")
        if at != size:
            continue
        knobs = json.loads(variant[0]) if variant else None
        try:
            got = experiments.get(name, at, int(seed), knobs).key()
        except ValueError as exc:  # a knob that does not change this run is refused now:
            assert "the same without it" in str(exc), exc  # its key was the plain run's
            got = experiments.get(name, at, int(seed)).key()
        if got != want:
            changed.append(key)
    assert not changed, changed[:5]


def test_each_studys_runs_keep_their_zoo_keys_with_and_without_knobs():
    from toymech.studies.random_transformers.design import table_runs

    changed = []
    for key, want in FIXTURE["study_runs"].items():
        name, what, size, variant = key.split("|")
        study = protocol.study(name)
        setting = study.with_knobs(size, json.loads(variant))
        runs = (study.experiments(setting, (0, 1)) if what == "experiments"
                else table_runs(setting))
        if [e.key() for e in runs] != want:
            changed.append(key)
    assert not changed, changed[:5]
