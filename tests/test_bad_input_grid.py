"""Bad-input catalogue, part 2: sweep grids (``toymech sweep GRID``). Each case: exit code 2,
ONE line naming the grid key or field, its value and what is allowed, no traceback, no zoo
folder created and no trial trained: every value, and every trial's experiment, is checked
before the first trial trains (see ``catalogue``)."""

from __future__ import annotations

import json
import os

import pytest
from catalogue import refused, run_cli, tree

IND = {"experiment": "induction-1l", "size": "smoke"}
MOD = {"experiment": "modular_addition", "size": "smoke"}


def over(base, **overrides):
    return {**base, "overrides": overrides}


def text(raw):
    return ("raw", raw)


MILLION = {**MOD, "seed": list(range(1000)), "overrides": {"train.lr": [1e-4 * (i + 1) for i in range(1000)]}}

# (grid: a dict, or ("raw", file text); file suffix; fragments of the one line[, extra argv])
GRID_CASES = {
    "model.n_ctx 10 < sequence 24 (failed at run time before)": (over(IND, **{"model.n_ctx": [10]}), ".json", ["model.n_ctx=10"]),
    "task.block_len 12 with model.n_ctx 24": (over(IND, **{"task.block_len": [12], "model.n_ctx": [24]}), ".json", ["model.n_ctx=24"]),
    "freeze pattern matching nothing (retried at run time before)": (over(MOD, **{"train.freeze": [["nothing.*"]]}), ".json", ["train.freeze[0]='nothing.*'"]),
    "freeze everything": (over(MOD, **{"train.freeze": [["*"]]}), ".json", ["train.freeze=", "something to train"]),
    "train_from beyond steps": (over(IND, **{"train.train_from": [[["blocks.0.attn.W_Q", 100000]]]}), ".json", ["train.train_from[0] step=100000"]),
    "train_from matching nothing": (over(IND, **{"train.train_from": [[["nothing", 1]]]}), ".json", ["train.train_from[0]='nothing'"]),
    "d_model 16384 x 64 layers": (over(MOD, **{"model.d_model": [16384], "model.n_layers": [64], "model.n_heads": [64]}), ".json", ["d_model=16384", "memory limit"]),
    "batch_size 1,000,000": (over(MOD, **{"train.batch_size": [10**6]}), ".json", ["train.batch_size=1000000", "memory limit"]),
    "rotary with d_head 3": (over(IND, **{"model.positions": ["rotary"], "model.d_model": [12], "model.n_heads": [4]}), ".json", ["d_head: 3", "rotary"]),
    "one bad trial among good ones": (over(IND, **{"model.n_ctx": [24, 10]}), ".json", ["model.n_ctx=10"]),
    "1,000,000 trials (201 s of expansion before)": (MILLION, ".json", ["grid='1,000,000 trials'", "at most"]),
    "bad --out with 1,000,000 trials (reported after expansion before)": (MILLION, ".json", ["out="], ["--out", "{tmp}/a_file.txt/t.csv"]),
    "10,001 seeds": ({**MOD, "seed": list(range(10_001))}, ".json", ["seed=", "at most"]),
    "duplicate key in JSON (last won before)": (text('{"experiment": "induction-1l", "size": "smoke", "size": "paper"}'), ".json", ["each key once", "'size'"]),
    "duplicate key in YAML (last won before)": (text("experiment: induction-1l\nsize: smoke\nsize: paper\n"), ".yaml", ["each key once", "'size'"]),
    "duplicate override key in YAML": (text("experiment: modular_addition\nsize: smoke\noverrides:\n  train.lr: [0.1]\n  train.lr: [0.2]\n"), ".yml", ["each key once", "'train.lr'"]),
    "YAML python tag": (text("experiment: !!python/object/apply:os.getcwd []\n"), ".yaml", ["grid=", "valid YAML"]),
    "JSON nested 100k deep": (text('{"experiment": ' + "[" * 100_000 + "]" * 100_000 + "}"), ".json", ["grid=", "nested"]),
    "YAML nested 10k deep": (text("experiment: " + "[" * 10_000 + "]" * 10_000 + "\n"), ".yaml", ["grid="]),
    "an empty YAML file": (text(""), ".yaml", ["grid=", "mapping"]),
    "a JSON list": (text("[1, 2]"), ".json", ["grid=", "mapping"]),
    "a .txt grid": (text("{}"), ".txt", ["grid=", ".json"]),
    "seed '\u0663'": ({**IND, "seed": ["\u0663"]}, ".json", ["seed='\u0663'"]),
    "seed 1.0": ({**IND, "seed": [1.0]}, ".json", ["seed=1.0"]),
    "seed true": ({**IND, "seed": [True]}, ".json", ["seed=True"]),
    "size Smoke": ({**IND, "size": "Smoke"}, ".json", ["size='Smoke'"]),
    "d_model 16 and 16.0": (over(MOD, **{"model.d_model": [16, 16.0]}), ".json", ["d_model=16.0"]),
    "lr 1e-3 twice": (over(MOD, **{"train.lr": [1e-3, 0.001]}), ".json", ["each value once"]),
    "retries 1.0": ({**IND, "retries": 1.0}, ".json", ["retries=1.0"]),
    "tag null": ({**IND, "tag": None}, ".json", ["tag=None"]),
    "name with a slash": ({**IND, "name": "../x"}, ".json", ["name='../x'"]),
    "no experiments": ({**IND, "experiment": []}, ".json", ["experiment=[]"]),
    "explicit experiment with task 5": ({"experiments": [{"task": 5, "model": {}, "train": {}}]}, ".json", ["task config="]),
    "override model.kind": (over(MOD, **{"model.kind": ["lstm"]}), ".json", ["overrides key='model.kind'"]),
    "override train.steps 0": (over(MOD, **{"train.steps": [0]}), ".json", ["steps=0"]),
    "override task.p 1": (over(MOD, **{"task.p": [1]}), ".json", ["p=1"]),
    "overrides a string": ({**MOD, "overrides": "model.d_model"}, ".json", ["overrides="]),
    "train.stop_metric naming no metric (retried at run time before)": (over(MOD, **{"train.stop_metric": ["eval_accuracy"], "train.stop_value": [0.9]}), ".json", ["stop_metric='eval_accuracy'", "eval_acc"]),
    "train.stop_value 2.0 for an accuracy (never triggered before)": (over(MOD, **{"train.stop_metric": ["eval_acc"], "train.stop_value": [2.0]}), ".json", ["stop_value=2.0", "[0, 1]"]),
    "train.stop_value -1 for a loss": (over(MOD, **{"train.stop_metric": ["eval_loss"], "train.stop_value": [-1]}), ".json", ["stop_value=-1"]),
}


def _cpu_has_bf16() -> bool:
    try:
        from toymech.training.precision import bf16_support
    except ImportError:
        return False
    import torch
    return bf16_support(torch.device("cpu"))[0]


if not _cpu_has_bf16():  # the case exists where bf16 cannot run: on this machine's CPU
    GRID_CASES["train.precision bf16 on a CPU without bf16 (retried at run time before)"] = (
        over(MOD, **{"train.precision": ["bf16"]}), ".json", ["precision='bf16'", "fp32"])


@pytest.mark.parametrize("case", list(GRID_CASES), ids=[f"sweep grids: {c}" for c in GRID_CASES])
def test_sweep_grid(case, tmp_path):
    grid, suffix, fragments, *extra = GRID_CASES[case]
    (tmp_path / "a_file.txt").write_text("x")
    path = tmp_path / f"grid{suffix}"
    path.write_text(grid[1] if isinstance(grid, tuple) else json.dumps(grid))
    zoo = tmp_path / "zoo"
    argv = ["sweep", str(path), "--backend", "local", "--device", "cpu", "--cache", str(zoo),
            "--no-progress", *[a.replace("{tmp}", str(tmp_path)) for a in (extra[0] if extra else [])]]
    before = tree(tmp_path)
    refused(*run_cli(argv), fragments)
    assert not zoo.exists(), "a zoo folder was created"
    assert tree(tmp_path) == before, "something was written"


def test_catalogue_part_2_size():
    assert len(GRID_CASES) >= 28


def test_a_good_grid_still_runs(tmp_path):
    """The checks refuse only what cannot run: a small grid with a freeze pattern trains."""
    grid = over(MOD, **{"train.steps": [2], "train.freeze": [[], ["blocks.0.attn.*"]]})
    (tmp_path / "g.json").write_text(json.dumps(grid))
    code, out, err = run_cli(["sweep", str(tmp_path / "g.json"), "--backend", "local", "--device",
                              "cpu", "--cache", str(tmp_path / "zoo"), "--no-progress"])
    assert code == 0 and "2 ok" in out, err[-2000:]
    assert os.path.isdir(tmp_path / "zoo" / "sweeps")
