"""Every core busy with a study's probes: train_missing rebuilds each run's callbacks in its own
process from a 'module:function' path, so Birth's main runs (probe callback in their history)
train one process per core and equal a run trained in this process."""

import dataclasses

import pytest
import torch

from toymech.studies import birth
from toymech.studies.birth.callbacks import PROBE_TAG
from toymech.studies.birth.over_seeds import probe_callbacks
from toymech.sweep import train_missing
from toymech.zoo import Zoo

PATH = "toymech.studies.birth.over_seeds:probe_callbacks"


def _exps():
    out = []
    for s in (3, 4):
        e = birth.experiment("smoke", s)
        out.append(dataclasses.replace(e, train=e.train.replace(steps=12, eval_every=6)))
    return out


def test_birth_probes_in_spawned_processes_equal_a_run_in_this_process(tmp_path):
    exps = _exps()
    entries = train_missing(Zoo(tmp_path / "a"), exps, workers=2, tag=PROBE_TAG,
                            callbacks=PATH, start_steps=0)
    alone = Zoo(tmp_path / "b").get_or_train(exps[1], device="cpu", tag=PROBE_TAG,
                                             callbacks=probe_callbacks(exps[1]), progress=False,
                                             log=None)
    probe_keys = set(alone.history[-1]) - {"step", "train_loss", "lr", "cpu_seconds"}
    probe_keys = {k for k in probe_keys if not k.startswith(("eval_", "train_"))}
    assert probe_keys, "the probe callback adds its own numbers to the history"
    got = entries[1].history[-1]
    assert probe_keys <= set(got)
    for k in probe_keys:
        assert got[k] == pytest.approx(alone.history[-1][k], abs=1e-5), k
    for p, q in zip(entries[1].model.parameters(), alone.model.parameters()):
        assert torch.allclose(p, q, atol=1e-6)


@pytest.mark.parametrize("bad", ["toymech.studies.birth.over_seeds:nope", "no_such_module:f",
                                 "toymech.studies.birth.over_seeds", ":probe_callbacks"])
def test_a_bad_callbacks_path_is_refused_before_any_work(tmp_path, bad):
    with pytest.raises(ValueError, match=r"callbacks=.* is not allowed: 'package\.module:"):
        train_missing(Zoo(tmp_path / "zoo"), _exps(), workers=2, callbacks=bad)
    assert not (tmp_path / "zoo").exists()
