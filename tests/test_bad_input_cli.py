"""Bad-input catalogue, part 1: the command line and experiment config files (``toymech train
--config``). Each case: the exit code, ONE line on stderr naming the option or field, its value
and what is allowed, no traceback, and the zoo folder not created (see ``catalogue``)."""

from __future__ import annotations

import inspect
import json
import os
from pathlib import Path

import pytest
from catalogue import run_cli, stderr_lines, tree

SMOKE = ["--size", "smoke", "--steps", "2", "--device", "cpu"]
TRAIN = ["train", "induction-1l", *SMOKE]


def _places(tmp: Path) -> dict[str, str]:
    """The odd files and folders the cases point at."""
    (tmp / "a_file.txt").write_text("not a folder\n")
    (tmp / "folder.json").mkdir()
    os.mkfifo(tmp / "fifo.json")
    os.symlink(tmp / "loop_b", tmp / "loop_a")
    os.symlink(tmp / "loop_a", tmp / "loop_b")
    os.symlink(tmp / "nowhere", tmp / "dangling")
    os.symlink("/dev/zero", tmp / "zero.json")
    good = json.dumps(_experiment())
    (tmp / "good.json").write_text(good)
    (tmp / "grid.json").write_text(json.dumps({"experiment": "induction-1l", "size": "smoke"}))
    return {"tmp": str(tmp), "file": str(tmp / "a_file.txt"), "dir": str(tmp / "folder.json"),
            "fifo": str(tmp / "fifo.json"), "loop": str(tmp / "loop_a"),
            "dangling": str(tmp / "dangling"), "zero": str(tmp / "zero.json"),
            "cfg": str(tmp / "good.json"), "grid": str(tmp / "grid.json")}


def _experiment() -> dict:
    from toymech import experiments

    return experiments.get("induction-1l", size="smoke").to_dict()


# (argv with {placeholders}, exit code, fragments of the one stderr line[, environment])
CLI_CASES = {
    "--dump-config '' (trained instead of dumping)": (["train", "induction-1l", "--dump-config", ""], 2, ["--dump-config=''"]),
    "--dump-config spaces": (["train", "induction-1l", "--dump-config", "  "], 2, ["--dump-config="]),
    "--dump-config /dev/full": (["train", "induction-1l", "--dump-config", "/dev/full"], 2, ["--dump-config='/dev/full'"]),
    "--config with --size (size ignored)": (["train", "--config", "{cfg}", "--size", "paper"], 2, ["--size", "--config"]),
    "--config with --seed (seed ignored)": (["train", "--config", "{cfg}", "--seed", "7"], 2, ["--seed", "--config"]),
    "--config with --size default spelled out": (["train", "--config", "{cfg}", "--size", "default"], 2, ["--size", "--config"]),
    "--seed Arabic-Indic digit (read as 3)": (["train", "induction-1l", "--seed", "\u0663"], 2, ["--seed", "'\u0663'"]),
    "--seed 1_0 (read as 10)": (["train", "induction-1l", "--seed", "1_0"], 2, ["--seed", "'1_0'"]),
    "--seed +3": (["train", "induction-1l", "--seed", "+3"], 2, ["--seed", "'+3'"]),
    "--seed ' 3'": (["train", "induction-1l", "--seed", " 3"], 2, ["--seed", "' 3'"]),
    "--seed fullwidth digit": (["train", "induction-1l", "--seed", "\uff13"], 2, ["--seed"]),
    "--steps Arabic-Indic digits": (["train", "induction-1l", "--steps", "\u0661\u0660"], 2, ["--steps"]),
    "--steps 1_000": (["train", "induction-1l", "--steps", "1_000"], 2, ["--steps", "'1_000'"]),
    "--threads Devanagari digit": (["train", "induction-1l", "--threads", "\u0968"], 2, ["--threads"]),
    "--threads 0": (["train", "induction-1l", "--threads", "0"], 2, ["--threads"]),
    "--device auto:7": (["train", "induction-1l", *SMOKE[:4], "--device", "auto:7"], 2, ["device='auto:7'", "cuda:N"]),
    "--device cpu:-1 (traceback before)": (["train", "induction-1l", *SMOKE[:4], "--device", "cpu:-1"], 2, ["device='cpu:-1'"]),
    "--device cuda:x": (["train", "induction-1l", *SMOKE[:4], "--device", "cuda:x"], 2, ["device='cuda:x'"]),
    "--device CPU": (["train", "induction-1l", *SMOKE[:4], "--device", "CPU"], 2, ["device='CPU'"]),
    "--device empty": (["train", "induction-1l", *SMOKE[:4], "--device", ""], 2, ["device=''"]),
    "--device cuda:\u0661": (["train", "induction-1l", *SMOKE[:4], "--device", "cuda:\u0661"], 2, ["device="]),
    "--device mps (absent)": (["train", "induction-1l", *SMOKE[:4], "--device", "mps"], 2, ["device='mps'", "not available"]),
    "--cache a symlink loop": ([*TRAIN, "--cache", "{loop}"], 2, ["--cache="]),
    "--cache a dangling symlink": ([*TRAIN, "--cache", "{dangling}"], 2, ["--cache="]),
    "--cache /proc/zoo (cannot be created)": ([*TRAIN, "--cache", "/proc/toymech-zoo"], 2, ["--cache='/proc/toymech-zoo'", "can be created"]),
    "TOYMECH_CACHE a file (train)": (TRAIN, 2, ["zoo=", "a folder"], {"TOYMECH_CACHE": "{file}"}),
    "TOYMECH_CACHE /proc (train)": (TRAIN, 2, ["zoo='/proc'"], {"TOYMECH_CACHE": "/proc"}),
    "TOYMECH_CACHE a symlink loop (train)": (TRAIN, 2, ["zoo=", "symlink"], {"TOYMECH_CACHE": "{loop}"}),
    "TOYMECH_CACHE a file (list)": (["list", "models"], 2, ["zoo=", "a folder"], {"TOYMECH_CACHE": "{file}"}),
    "list --cache a file": (["list", "models", "--cache", "{file}"], 2, ["zoo=", "a folder"]),
    "zoo verify --cache a file": (["zoo", "verify", "--cache", "{file}"], 2, ["zoo=", "a folder"]),
    "zoo verify --fix --adopt --cache a loop": (["zoo", "verify", "--fix", "--adopt", "--cache", "{loop}"], 2, ["zoo="]),
    "--lock-timeout abc": ([*TRAIN, "--lock-timeout", "abc"], 2, ["--lock-timeout", "'abc'"]),
    "--lock-timeout -1": ([*TRAIN, "--lock-timeout", "-1"], 2, ["--lock-timeout", "'-1'"]),
    "TOYMECH_LOCK_TIMEOUT abc": (TRAIN, 2, ["TOYMECH_LOCK_TIMEOUT='abc'"], {"TOYMECH_LOCK_TIMEOUT": "abc"}),
    "TOYMECH_THREADS Arabic-Indic digit": (TRAIN, 2, ["TOYMECH_THREADS="], {"TOYMECH_THREADS": "\u0662"}),
    "TOYMECH_MEMORY_LIMIT_GB lots": (TRAIN, 2, ["TOYMECH_MEMORY_LIMIT_GB='lots'"], {"TOYMECH_MEMORY_LIMIT_GB": "lots"}),
    "--config a folder": (["train", "--config", "{dir}"], 2, ["--config=", "regular file"]),
    "--config a FIFO (hung before)": (["train", "--config", "{fifo}"], 2, ["--config=", "regular file"]),
    "--config /dev/zero (MemoryError before)": (["train", "--config", "{zero}"], 2, ["--config=", "regular file"]),
    "sweep --out under a file": (["sweep", "{grid}", "--out", "{file}/t.csv", "--backend", "local"], 2, ["out="]),
    "sweep --device auto:1": (["sweep", "{grid}", "--device", "auto:1", "--backend", "local"], 2, ["device='auto:1'"]),
    "sweep --retries 1_0": (["sweep", "{grid}", "--retries", "1_0"], 2, ["--retries"]),
    "sweep --lock-timeout x": (["sweep", "{grid}", "--lock-timeout", "x"], 2, ["--lock-timeout"]),
    "sweep a FIFO grid (hung before)": (["sweep", "{fifo}", "--backend", "local"], 2, ["grid=", "regular file"]),
    "sweep a folder grid": (["sweep", "{dir}", "--backend", "local"], 2, ["grid=", "regular file"]),
    "sweep /dev/zero grid": (["sweep", "{zero}", "--backend", "local"], 2, ["grid=", "regular file"]),
    "zoo verify of a folder that does not exist (exit 0, '0 ok' before)": (["zoo", "verify", "--cache", "{tmp}/no-zoo"], 2, ["zoo=", "no-zoo", "does not exist"]),
    "zoo verify TOYMECH_CACHE a folder that does not exist": (["zoo", "verify"], 2, ["zoo=", "no-zoo"], {"TOYMECH_CACHE": "{tmp}/no-zoo"}),
}


def _fill(value, places):
    if isinstance(value, str):
        for k, v in places.items():
            value = value.replace("{" + k + "}", v)
    return value


def _check(case_argv, code, fragments, environ, tmp_path):
    places = _places(tmp_path)
    argv = [_fill(a, places) for a in case_argv]
    environ = {k: _fill(v, places) for k, v in (environ or {}).items()}
    zoo = tmp_path / "zoo"  # the default zoo of every test (conftest): must not be created
    before = tree(tmp_path)
    got, out, err = run_cli(argv, **environ)
    assert got == code, (got, out[-2000:], err[-3000:])
    lines = stderr_lines(err)
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("toymech: error: "), err[-3000:]
    for fragment in fragments:
        assert _fill(fragment, places) in lines[0], (fragment, lines[0])
    assert not zoo.exists() or environ.get("TOYMECH_CACHE"), "a zoo folder was created"
    assert tree(tmp_path) == before, "something was written"


@pytest.mark.parametrize("case", list(CLI_CASES), ids=[f"cli: {c}" for c in CLI_CASES])
def test_cli(case, tmp_path):
    argv, code, fragments, *environ = CLI_CASES[case]
    _check(argv, code, fragments, environ[0] if environ else None, tmp_path)


# --------------------------------------------------------------------------------------------
# config JSON: train --config FILE
# --------------------------------------------------------------------------------------------


def _at(section, **kw):
    def change(d):
        d[section].update(kw)
    return change


def _nested(depth):
    return "{\"task\": " + "[" * depth + "]" * depth + "}"


def _dup(text_key):
    def raw():
        d = _experiment()
        body = json.dumps(d)[1:-1]
        return "{" + body + f", {text_key}" + "}"
    return raw


# (a change to the smoke induction-1l experiment, or a raw text maker; exit code; fragments)
CONFIG_CASES = {
    "duplicate top-level key (last won before)": (_dup('"name": "other"'), 2, ["each key once", "'name'"]),
    "duplicate key in task": (lambda: json.dumps(_experiment()).replace('"name": "repeated_blocks"', '"name": "repeated_blocks", "name": "needle"', 1), 2, ["each key once", "'name'"]),
    "duplicate key in model": (lambda: json.dumps(_experiment()).replace('"n_layers": 1', '"n_layers": 1, "n_layers": 2', 1), 2, ["each key once", "'n_layers'"]),
    "duplicate key in train": (lambda: json.dumps(_experiment()).replace('"lr": ', '"lr": 0.5, "lr": ', 1), 2, ["each key once", "'lr'"]),
    "nested 100k deep (RecursionError before)": (lambda: _nested(100_000), 2, ["nested"]),
    "nested 5k deep": (lambda: _nested(5_000), 2, ["nested"]),
    "a 20 MB file": (lambda: " " * (20 * 2**20) + "{}", 2, ["--config=", "at most"]),
    "a UTF-8 BOM": (lambda: "\ufeff" + json.dumps(_experiment()), 2, ["--config=", "valid JSON"]),
    "trailing text": (lambda: json.dumps(_experiment()) + " x", 2, ["--config=", "valid JSON"]),
    "model kind lstm without sizes (TypeError before)": (lambda: json.dumps({**_experiment(), "model": {"kind": "lstm"}}), 2, ["baseline config is missing 'd_model'"]),
    "model kind gru": (lambda: json.dumps({**_experiment(), "model": {"kind": "gru", "d_model": 8, "d_vocab": 26, "n_ctx": 24}}), 2, ["model kind='gru'"]),
    "model.n_ctx 10 < sequence 24 (failed mid-run before)": (_at("model", n_ctx=10), 2, ["model.n_ctx=10", "24"]),
    "model.d_vocab 10 < task's 26": (_at("model", d_vocab=10), 2, ["model.d_vocab=10", "26"]),
    "task.block_len 12 with model.n_ctx 24": (_at("task", block_len=12), 2, ["model.n_ctx=24", "48"]),
    "train.freeze matches nothing": (_at("train", freeze=["nothing.*"]), 2, ["train.freeze[0]='nothing.*'"]),
    "train.freeze freezes everything": (_at("train", freeze=["*"]), 2, ["train.freeze=", "something to train"]),
    "train.train_from beyond steps (never trained before)": (_at("train", train_from=[["blocks.0.attn.W_Q", 10**6]]), 2, ["train.train_from[0] step=1000000"]),
    "train.train_from at the last step": (lambda: _raw(lambda d: d["train"].update(train_from=[["blocks.0.attn.W_Q", d["train"]["steps"]]])), 2, ["train.train_from[0] step="]),
    "train.train_from matches nothing": (_at("train", train_from=[["nothing", 1]]), 2, ["train.train_from[0]='nothing'"]),
    "train.train_from a frozen matrix": (_at("train", freeze=["blocks.0.attn.W_Q"], train_from=[["blocks.0.attn.W_Q", 1]]), 2, ["train.train_from[0]='blocks.0.attn.W_Q'"]),
    "d_model 16384 x 64 layers (allocator traceback before)": (_at("model", d_model=16384, n_layers=64, n_heads=64), 2, ["d_model=16384", "memory limit"]),
    "train.batch_size 1,000,000 (allocator traceback before)": (_at("train", batch_size=10**6), 2, ["train.batch_size=1000000", "memory limit"]),
    "train.eval_size 1,000,000": (_at("train", eval_size=10**6), 2, ["eval_size=1000000", "memory limit"]),
    "model.n_ctx 65536 x 64 layers of masks": (_at("model", n_ctx=65536, n_layers=64), 2, ["model.n_ctx=65536", "memory limit"]),
    "rotary with d_head 3 (RuntimeError mid-training before)": (_at("model", positions="rotary", d_model=12, n_heads=4, d_head=None), 2, ["model=", "d_head: 3", "rotary"]),
    "init_range 1e6 diverges (stored as good before)": (_at("model", init="transformer_lens", init_range=1e6), 1, ["training diverged"]),
    "model.seed '3'": (_at("model", seed="3"), 2, ["seed='3'"]),
    "train.seed 3.0": (_at("train", seed=3.0), 2, ["seed=3.0"]),
    "train.steps 1000.0": (_at("train", steps=1000.0), 2, ["steps=1000.0"]),
    "train.snapshots 20000": (_at("train", snapshots=20000), 2, ["snapshots=20000"]),
    "name a list": (lambda: json.dumps({**_experiment(), "name": ["a"]}), 2, ["name=['a']"]),
    "task.name 5": (lambda: json.dumps({**_experiment(), "task": {"name": 5}}), 2, ["task=5"]),
    "an empty object": (lambda: "{}", 2, ["missing 'task'"]),
    "null": (lambda: "null", 2, ["--config=", "JSON object"]),
    "a JSON string": (lambda: "\"induction-1l\"", 2, ["--config=", "JSON object"]),
    "train.stop_value 2.0 for eval_acc (never stopped before)": (_at("train", stop_metric="eval_acc", stop_value=2.0), 2, ["stop_value=2.0", "[0, 1]"]),
    "train.stop_metric naming no metric (failed at the first evaluation before)": (_at("train", stop_metric="eval_nothing", stop_value=0.5), 2, ["stop_metric='eval_nothing'", "eval_loss"]),
    "task version 1 of a version-2 task (trained as version 2 before)": (lambda: _versioned(1), 2, ["task version=1", "2"]),
    "Latin-1 text": (lambda: json.dumps(_experiment()).replace("induction-1l", "induction-\xe91l").encode("latin-1"), 2, ["--config=", "UTF-8"]),
}


def _versioned(version: int) -> str:
    """A smoke modular-addition config (its task is at version 2) that records ``version``."""
    from toymech import experiments

    d = experiments.get("modular_addition", size="smoke").to_dict()
    d["task"]["version"] = version
    d["train"].update(steps=2, eval_every=2)
    return json.dumps(d)


def _raw(change):
    d = _experiment()
    change(d)
    return json.dumps(d)


@pytest.mark.parametrize("case", list(CONFIG_CASES), ids=[f"config JSON: {c}" for c in CONFIG_CASES])
def test_config_json(case, tmp_path):
    make, code, fragments = CONFIG_CASES[case]
    # a maker of the file's text, or a change to the experiment's dict
    text = make() if not inspect.signature(make).parameters else _raw(make)
    path = tmp_path / "bad.json"
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    _check(["train", "--config", str(path), "--device", "cpu", "-q"], code, fragments, None, tmp_path)


def test_catalogue_part_1_size():
    assert len(CLI_CASES) >= 40 and len(CONFIG_CASES) >= 35
