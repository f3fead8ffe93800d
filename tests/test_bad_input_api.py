"""Bad-input catalogue, part 4: the Python API. Each case: a ValueError whose message is ONE
line naming the parameter, the value and what is allowed, raised before any work (no model
trained, the zoo folder not created: see ``catalogue``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from catalogue import no_hang, tree


def _exp(seed=0, **train):
    from toymech import experiments

    exp = experiments.get("induction-1l", "smoke", seed=seed)
    exp.train = exp.train.replace(steps=2, eval_every=2, **train)
    return exp


def _zoo(root):
    from toymech.zoo import Zoo

    return Zoo(root)


def _get(root, **kw):
    return lambda: _zoo(root).get_or_train(kw.pop("exp", None) or _exp(), progress=False, log=None,
                                           **{"device": "cpu", **kw})


def _many(root, **kw):
    return lambda: _zoo(root).get_or_train_many([_exp(0), _exp(1)], **{"device": "cpu", **kw})


def _sweep(root, grid=None, **kw):
    def call():
        from toymech.grid import run_sweep
        return run_sweep(grid or {"experiment": "induction-1l", "size": "smoke"}, cache_dir=root,
                         **{"backend": "local", "progress": False, "log": None, **kw})
    return call


def _experiment(**changes):
    def call():
        from toymech.training import Experiment
        exp = _exp()
        return Experiment(**{"task": exp.task, "model": exp.model, "train": exp.train, **changes})
    return call


def _model_change(**changes):
    def call():
        from toymech.models import ModelConfig  # noqa: F401
        exp = _exp()
        d = exp.to_dict()
        d["model"].update(changes)
        from toymech.training import Experiment
        return Experiment.from_dict(d)
    return call


def _diverging():
    exp = _exp()
    d = exp.to_dict()
    d["model"].update(init="transformer_lens", init_range=1e6)
    d["train"].update(steps=4, eval_every=2)
    from toymech.training import Experiment
    return Experiment.from_dict(d)


def _store_nan(root):
    def call():
        from toymech.models import build_model
        from toymech.training import TrainResult
        exp = _exp()
        result = TrainResult(build_model(exp.model), [{"step": 2, "train_loss": float("nan")}], 1, 0, 0.1)
        return _zoo(root).store(exp, result, torch.device("cpu"))
    return call


MILLION = {"experiment": "modular_addition", "size": "smoke", "seed": list(range(1000)),
           "overrides": {"train.lr": [1e-4 * (i + 1) for i in range(1000)]}}


def _cases(root: Path, tmp: Path) -> dict:
    a_file = tmp / "a_file.txt"
    return {
        "Zoo('') used the default zoo": (lambda: _zoo(""), ["cache_dir=''"]),
        "Zoo('  ')": (lambda: _zoo("  "), ["cache_dir='  '"]),
        "Zoo(123)": (lambda: _zoo(123), ["cache_dir=123"]),
        "Zoo(b'zoo')": (lambda: _zoo(b"zoo"), ["cache_dir=b'zoo'"]),
        "Zoo(lock_timeout=-1)": (lambda: __import__("toymech.zoo", fromlist=["Zoo"]).Zoo(root, lock_timeout=-1), ["lock_timeout=-1"]),
        "Zoo(lock_timeout='1')": (lambda: __import__("toymech.zoo", fromlist=["Zoo"]).Zoo(root, lock_timeout="1"), ["lock_timeout='1'"]),
        "get_or_train retrain='no' (retrained before)": (_get(root, retrain="no"), ["retrain='no'"]),
        "get_or_train retrain=1": (_get(root, retrain=1), ["retrain=1"]),
        "get_or_train progress='yes'": (lambda: _zoo(root).get_or_train(_exp(), device="cpu", progress="yes", log=None), ["progress='yes'"]),
        "get_or_train tag=None (accepted before)": (_get(root, tag=None), ["tag=None"]),
        "get_or_train tag=5": (_get(root, tag=5), ["tag=5"]),
        "get_or_train callbacks=[1] (failed after training before)": (_get(root, callbacks=[1]), ["callbacks[0]=1"]),
        "get_or_train callbacks=5": (_get(root, callbacks=5), ["callbacks=5"]),
        "get_or_train device='auto:7'": (_get(root, device="auto:7"), ["device='auto:7'"]),
        "get_or_train device='cpu:-1'": (_get(root, device="cpu:-1"), ["device='cpu:-1'"]),
        "get_or_train device=5": (_get(root, device=5), ["device=5"]),
        "get_or_train log=5": (lambda: _zoo(root).get_or_train(_exp(), device="cpu", progress=False, log=5), ["log=5"]),
        "get_or_train of a name": (lambda: _zoo(root).get_or_train("induction-1l", device="cpu"), ["experiment='induction-1l'"]),
        "get_or_train n_ctx below the task's": (_get(root, exp=_model_change(n_ctx=10)()), ["model.n_ctx=10"]),
        "get_or_train train_from beyond steps": (_get(root, exp=_exp(train_from=(("blocks.0.attn.W_Q", 1000),))), ["train.train_from[0] step=1000"]),
        "get_or_train a freeze pattern matching nothing": (_get(root, exp=_exp(freeze=("nothing.*",))), ["train.freeze[0]='nothing.*'"]),
        "get_or_train a diverging run (stored as good before)": (_get(root, exp=_diverging()), ["training diverged"]),
        "store a result with a NaN loss": (_store_nan(root), ["training diverged"]),
        "get_or_train_many stacked='yes' (accepted before)": (_many(root, stacked="yes"), ["stacked='yes'"]),
        "get_or_train_many callbacks=[[1], []]": (_many(root, callbacks=[[1], []]), ["callbacks[0]=1"]),
        "get_or_train_many progress=1": (_many(root, progress=1), ["progress=1"]),
        "load tag=None": (lambda: _zoo(root).load(_exp(), "cpu", tag=None), ["tag=None"]),
        "load of a zoo that is a file": (lambda: _zoo(a_file).load(_exp(), "cpu"), ["zoo=", "a folder"]),
        "entries of a zoo that is a file": (lambda: _zoo(a_file).entries(), ["zoo=", "a folder"]),
        "verify fix='yes'": (lambda: _zoo(root).verify(fix="yes"), ["fix='yes'"]),
        "verify adopt=1": (lambda: _zoo(root).verify(adopt=1), ["adopt=1"]),
        "Experiment task=5": (_experiment(task=5), ["task=5"]),
        "Experiment name=['a'] (broke the listing before)": (_experiment(name=["a"]), ["name=['a']"]),
        "Experiment name=None": (_experiment(name=None), ["name=None"]),
        "Experiment model a dict": (_experiment(model={"d_model": 16}), ["model="]),
        "Experiment train a dict": (_experiment(train={"lr": 1}), ["train="]),
        "Experiment.from_dict baseline without sizes (TypeError before)": (lambda: __import__("toymech.training", fromlist=["Experiment"]).Experiment.from_dict({**_exp().to_dict(), "model": {"kind": "lstm"}}), ["baseline config is missing 'd_model'"]),
        "Experiment.from_dict transformer fields on a baseline": (_model_change(kind="lstm"), ["baseline config key='act_fn'"]),
        "run_sweep progress='no'": (_sweep(root, progress="no"), ["progress='no'"]),
        "run_sweep keep_ray='yes'": (_sweep(root, keep_ray="yes"), ["keep_ray='yes'"]),
        "run_sweep device='auto:7'": (_sweep(root, device="auto:7"), ["device='auto:7'"]),
        "run_sweep workers=0": (_sweep(root, workers=0), ["workers=0"]),
        "run_sweep log=5": (_sweep(root, log=5), ["log=5"]),
        "run_sweep bad out with 1,000,000 trials": (_sweep(root, MILLION, out=str(a_file / "t.csv")), ["out="]),
        "run_sweep 1,000,000 trials": (_sweep(root, MILLION), ["1,000,000 trials"]),
        "run_experiments stacked='yes'": (lambda: __import__("toymech.sweep", fromlist=["run_experiments"]).run_experiments([_exp()], cache_dir=root, backend="local", stacked="yes"), ["stacked='yes'"]),
        "resolve_device('auto:7')": (lambda: __import__("toymech.devices", fromlist=["x"]).resolve_device("auto:7"), ["device='auto:7'"]),
        "resolve_device('cuda:1x')": (lambda: __import__("toymech.devices", fromlist=["x"]).resolve_device("cuda:1x"), ["device='cuda:1x'"]),
        "resolve_device('cpu:0:0')": (lambda: __import__("toymech.devices", fromlist=["x"]).resolve_device("cpu:0:0"), ["device='cpu:0:0'"]),
    }


CASE_NAMES = list(_cases(Path("/nonexistent/zoo"), Path("/nonexistent")))


@pytest.mark.parametrize("case", CASE_NAMES, ids=[f"Python API: {c}" for c in CASE_NAMES])
def test_python_api(case, tmp_path):
    (tmp_path / "a_file.txt").write_text("x")
    root = tmp_path / "zoo-api"
    call, fragments = _cases(root, tmp_path)[case]
    before = tree(tmp_path)
    with no_hang(), pytest.raises(ValueError) as info:
        call()
    message = str(info.value)
    assert "\n" not in message.strip(), message
    for fragment in fragments:
        assert fragment in message, (fragment, message)
    assert not root.exists(), "a zoo folder was created"
    assert tree(tmp_path) == before, "something was written"


def test_catalogue_part_4_size():
    assert len(CASE_NAMES) >= 35


def test_the_good_calls_still_work(tmp_path):
    zoo = _zoo(tmp_path / "zoo")
    entry = zoo.get_or_train(_exp(), device="cpu", progress=False, log=None, retrain=False, tag="")
    assert not entry.loaded and zoo.get_or_train(_exp(), device="cpu", progress=False, log=None).loaded
    assert json.loads((entry.path / "config.json").read_text())["format"] == 1
