"""The bad-input catalogue: every entry point refuses bad input with ONE clear line.

API cases: a ``ValueError`` whose one-line message names the parameter (``name=value is not
allowed: what is``). CLI cases (``toymech.cli.main`` in-process): exit code 2, one line on
stderr naming the option or field, no traceback. In every case nothing is written: the tmp
folder holding the zoo (``$TOYMECH_CACHE``), the reports folder and the configs is unchanged.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from waiting import limit

from toymech import experiments, tasks
from toymech.cli import main
from toymech.core import (
    check_bool,
    check_float,
    check_int,
    check_path_writable_dir,
    check_path_writable_file,
    check_seed,
    check_size,
)
from toymech.models import ModelConfig
from toymech.training import Experiment, TrainConfig

FIXTURES = Path(__file__).parent / "fixtures"
OK_NB = str(FIXTURES / "report_ok.ipynb")
INF, NAN = float("inf"), float("nan")


def snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file and folder under ``root`` with its size and modification time."""
    return {str(p.relative_to(root)): (p.stat().st_size if p.is_file() else -1, p.stat().st_mtime_ns)
            for p in root.rglob("*")}


def assert_one_line(message: str, *fragments: str) -> None:
    assert "\n" not in message.strip() and "Traceback" not in message, message
    for fragment in fragments:
        assert fragment in message, (fragment, message)


# --------------------------------------------------------------------------------------------
# API: (call, fragments the message must hold; the first names the parameter)
# --------------------------------------------------------------------------------------------

def task(name, **kw):
    return lambda: tasks.get(name, **kw)


TASK_CASES = {
    "memorization n_values 10**12 (hung before)": (task("memorization", n_values=10**12), "n_values="),
    "memorization n_keys 0": (task("memorization", n_keys=0), "n_keys="),
    "memorization n_keys True": (task("memorization", n_keys=True), "n_keys=True"),
    "memorization n_keys 3.0": (task("memorization", n_keys=3.0), "n_keys=3.0"),
    "memorization function_seed -1": (task("memorization", function_seed=-1), "function_seed="),
    "memorization function_seed 2**70": (task("memorization", function_seed=2**70), "function_seed="),
    "memorization unknown parameter": (task("memorization", n_vals=3), "n_vals"),
    "char_lm length 10**9": (task("char_lm", length=10**9), "length="),
    "char_lm length '64'": (task("char_lm", length="64"), "length='64'"),
    "char_lm train_frac nan": (task("char_lm", train_frac=NAN), "train_frac=nan"),
    "char_lm train_frac 1.0": (task("char_lm", train_frac=1.0), "train_frac="),
    "char_lm train_frac True": (task("char_lm", train_frac=True), "train_frac=True"),
    "decimal_addition n_digits 19": (task("decimal_addition", n_digits=19), "n_digits="),
    "decimal_addition n_digits '3'": (task("decimal_addition", n_digits="3"), "n_digits="),
    "parentheses max_len 1": (task("parentheses", max_len=1), "max_len="),
    "parentheses max_len 10**7": (task("parentheses", max_len=10**7), "max_len="),
    "repeated_blocks n_blocks False": (task("repeated_blocks", n_blocks=False), "n_blocks="),
    "repeated_blocks n_letters 53": (task("repeated_blocks", n_letters=53), "n_letters="),
    "repeated_blocks huge sequences": (task("repeated_blocks", n_blocks=1000, block_len=1000), "block_len="),
    "repeated_blocks block_len 0": (task("repeated_blocks", block_len=0), "block_len="),
    "needle min_pairs > max_pairs": (task("needle", min_pairs=40), "min_pairs="),
    "needle n_keys < max_pairs": (task("needle", n_keys=5), "n_keys="),
    "needle n_values 10**9": (task("needle", n_values=10**9), "n_values="),
    "needle max_pairs 0": (task("needle", max_pairs=0), "max_pairs="),
    "modular_addition p 10**6": (task("modular_addition", p=10**6), "p="),
    "modular_addition p 1": (task("modular_addition", p=1), "p="),
    "modular_addition train_frac 0": (task("modular_addition", train_frac=0), "train_frac="),
    "modular_addition train_frac inf": (task("modular_addition", train_frac=INF), "train_frac=inf"),
    "modular_addition split_seed True": (task("modular_addition", split_seed=True), "split_seed="),
    "circuit_imitation target_heads not a divisor": (task("circuit_imitation", target_heads=3), "target_heads="),
    "circuit_imitation logit_scale inf": (task("circuit_imitation", logit_scale=INF), "logit_scale="),
    "circuit_imitation logit_scale '2'": (task("circuit_imitation", logit_scale="2"), "logit_scale="),
    "circuit_imitation target_version 2.0": (task("circuit_imitation", target_version=2.0), "target_version="),
    "circuit_imitation n_tokens 10**9": (task("circuit_imitation", n_tokens=10**9), "n_tokens="),
    "bigram_triggers n_triggers True": (task("bigram_triggers", n_triggers=True), "n_triggers="),
    "bigram_triggers n_triggers 1000": (task("bigram_triggers", n_triggers=1000), "n_triggers="),
    "bigram_triggers trigger_mode 'Fixed'": (task("bigram_triggers", trigger_mode="Fixed"), "trigger_mode="),
    "bigram_triggers length 10**9": (task("bigram_triggers", length=10**9), "length="),
    "bigram_triggers corpus missing": (task("bigram_triggers", corpus="/nonexistent/corpus.txt"), "corpus="),
    "bigram_triggers corpus 5": (task("bigram_triggers", corpus=5), "corpus=5"),
    "bigram_triggers unigram strings": (task("bigram_triggers", chars=["a", "b"], unigram=["x", 1],
                                             bigram=[[1, 1], [1, 1]]), "unigram[0]="),
    "bigram_triggers bigram nan": (task("bigram_triggers", chars=["a", "b"], unigram=[1, 1],
                                        bigram=[[1, NAN], [1, 1]]), "bigram[0][1]="),
    "tasks.get unknown task": (task("no_such_task"), "task='no_such_task'"),
    "tasks.get task 5": (lambda: tasks.get(5), "task=5"),
    "tasks.from_dict not a dict": (lambda: tasks.from_dict(5), "task config="),
    "tasks.from_dict without name": (lambda: tasks.from_dict({"p": 7}), "'name'"),
}


def model(**kw):
    return lambda: ModelConfig(**kw)


def _simplified(**options):
    from toymech.studies.birth import design as birth_design
    return birth_design.simplified_config(tasks.get("bigram_triggers"), 16, 0, **options)


MODEL_CASES = {
    "init_range inf (stored a NaN model before)": (model(init_range=INF), "init_range=inf"),
    "init_range nan": (model(init_range=NAN), "init_range=nan"),
    "init_range 0": (model(init_range=0), "init_range=0"),
    "init_range True": (model(init_range=True), "init_range=True"),
    "smear_keys 'no' (turned smearing ON before)": (model(smear_keys="no"), "smear_keys='no'"),
    "smear_keys 1": (model(smear_keys=1), "smear_keys=1"),
    "attn_only 'false'": (model(attn_only="false"), "attn_only='false'"),
    "use_bias 0": (model(use_bias=0), "use_bias=0"),
    "n_layers True": (model(n_layers=True), "n_layers=True"),
    "n_layers 2.0": (model(n_layers=2.0), "n_layers=2.0"),
    "n_layers 10**6": (model(n_layers=10**6), "n_layers="),
    "n_heads 0": (model(n_heads=0), "n_heads="),
    "n_heads not a divisor": (model(n_heads=5), "n_heads=5"),
    "d_model 10**9": (model(d_model=10**9), "d_model="),
    "d_vocab 1": (model(d_vocab=1), "d_vocab="),
    "n_ctx '24'": (model(n_ctx="24"), "n_ctx='24'"),
    "d_head odd with sinusoidal_qk": (model(d_head=7), "d_head=7"),
    "d_head True": (model(d_head=True), "d_head=True"),
    "d_mlp 0": (model(attn_only=False, d_mlp=0), "d_mlp=0"),
    "d_mlp 'big'": (model(attn_only=False, d_mlp="big"), "d_mlp='big'"),
    "d_mlp with attn_only": (model(d_mlp=64), "d_mlp=64"),
    "seed -1": (model(seed=-1), "seed=-1"),
    "seed 2**64 (overflow)": (model(seed=2**64), "seed="),
    "seed True": (model(seed=True), "seed=True"),
    "smear_init 1": (model(smear_init=1.0), "smear_init="),
    "smear_init nan": (model(smear_init=NAN), "smear_init=nan"),
    "act_fn 'tanh'": (model(act_fn="tanh"), "act_fn='tanh'"),
    "positions 5": (model(positions=5), "positions=5"),
    "normalization 'BN'": (model(normalization="BN"), "normalization='BN'"),
    "variant unknown": (model(variant="nope"), "variant='nope'"),
    "variant_options without variant": (model(variant_options={"tied": True}), "variant_options="),
    "variant_options not a dict": (model(variant="gpt2_scaled", variant_options=[1]), "variant_options="),
    "variant_options unknown option": (model(variant="gpt2_scaled", variant_options={"x": 1}), "variant_options key='x'"),
    "birth tied 'no' (turned tying on before)": (
        lambda: _simplified(tied="no"), "variant_options['tied']='no'"),
    "birth option unknown": (lambda: _simplified(bogus=1), "variant_options key='bogus'"),
    "birth emb_std inf": (lambda: _simplified(emb_std=INF), "variant_options['emb_std']=inf"),
    "birth attn_scale nan": (lambda: _simplified(attn_scale=NAN), "variant_options['attn_scale']=nan"),
    "model config unknown key": (lambda: ModelConfig.from_dict({"n_layer": 2}), "model config key='n_layer'"),
    "model config not a dict": (lambda: ModelConfig.from_dict([2]), "model config="),
}


def train(**kw):
    return lambda: TrainConfig(**kw)


TRAIN_CASES = {
    "lr Infinity (trained a NaN model before)": (train(lr=INF), "lr=inf"),
    "lr nan": (train(lr=NAN), "lr=nan"),
    "lr 0": (train(lr=0), "lr=0"),
    "lr -1": (train(lr=-1e-3), "lr="),
    "lr '1e-3' (TypeError before)": (train(lr="1e-3"), "lr='1e-3'"),
    "lr True": (train(lr=True), "lr=True"),
    "weight_decay inf": (train(weight_decay=INF), "weight_decay=inf"),
    "weight_decay -1": (train(weight_decay=-1), "weight_decay=-1"),
    "momentum 1": (train(momentum=1.0), "momentum="),
    "momentum '0.9'": (train(momentum="0.9"), "momentum='0.9'"),
    "momentum nan": (train(momentum=NAN), "momentum=nan"),
    "betas one number": (train(betas=(0.9,)), "betas="),
    "betas 0.9": (train(betas=0.9), "betas=0.9"),
    "betas nan": (train(betas=(0.9, NAN)), "betas[1]=nan"),
    "betas 1.0": (train(betas=(1.0, 0.999)), "betas[0]="),
    "betas strings": (train(betas=("a", "b")), "betas[0]='a'"),
    "steps 10**12": (train(steps=10**12), "steps="),
    "steps 0": (train(steps=0), "steps=0"),
    "steps True": (train(steps=True), "steps=True"),
    "steps '10' (TypeError before)": (train(steps="10"), "steps='10'"),
    "steps 10.0": (train(steps=10.0), "steps=10.0"),
    "batch_size 10**9": (train(batch_size=10**9), "batch_size="),
    "eval_every 0": (train(eval_every=0), "eval_every=0"),
    "eval_size False": (train(eval_size=False), "eval_size=False"),
    "seed -1": (train(seed=-1), "seed=-1"),
    "seed 2**63 (overflow)": (train(seed=2**63), "seed="),
    "seed 1.5": (train(seed=1.5), "seed=1.5"),
    "optimizer 'lion'": (train(optimizer="lion"), "optimizer='lion'"),
    "optimizer None": (train(optimizer=None), "optimizer=None"),
    "schedule 'linear'": (train(schedule="linear"), "schedule='linear'"),
    "warmup_steps >= steps": (train(steps=10, eval_every=5, warmup_steps=10), "warmup_steps=10"),
    "warmup_steps -1": (train(warmup_steps=-1), "warmup_steps=-1"),
    "grad_clip 0": (train(grad_clip=0), "grad_clip=0"),
    "grad_clip inf": (train(grad_clip=INF), "grad_clip=inf"),
    "freeze 'b' (reported as 'b' before)": (train(freeze="blocks.0.*"), "freeze='blocks.0.*'"),
    "freeze element 3": (train(freeze=["blocks.0.*", 3]), "freeze[1]=3"),
    "freeze empty pattern": (train(freeze=[""]), "freeze[0]=''"),
    "train_from not pairs (TypeError before)": (train(train_from=[5]), "train_from[0]=5"),
    "train_from step -1": (train(train_from=[("blocks.0.*", -1)]), "train_from[0] step=-1"),
    "train_from step 'x'": (train(train_from=[("blocks.0.*", "x")]), "train_from[0] step='x'"),
    "checkpoint_every not a multiple": (train(eval_every=10, checkpoint_every=15), "checkpoint_every=15"),
    "checkpoint_every True": (train(checkpoint_every=True), "checkpoint_every=True"),
    "train config unknown key": (lambda: TrainConfig.from_dict({"learning_rate": 1}), "train config key='learning_rate'"),
    "train config not a dict": (lambda: TrainConfig.from_dict("lr=1"), "train config="),
}


def _experiment_dict() -> dict:
    return experiments.get("repeated_blocks", size="smoke").to_dict()


def exp_from(**changes):
    def call():
        d = _experiment_dict()
        d.update(changes)
        return Experiment.from_dict(d)
    return call


EXPERIMENT_CASES = {
    "experiments.get unknown": (lambda: experiments.get("nope"), "experiment='nope'"),
    "experiments.get name 5": (lambda: experiments.get(5), "experiment=5"),
    "experiments.get size 'huge'": (lambda: experiments.get("induction-1l", size="huge"), "size='huge'"),
    "experiments.get seed -1": (lambda: experiments.get("induction-1l", seed=-1), "seed=-1"),
    "experiments.get seed True": (lambda: experiments.get("induction-1l", seed=True), "seed=True"),
    "experiments.get seed 2**62": (lambda: experiments.get("induction-1l", seed=2**62), "seed="),
    "task_experiment size 5": (lambda: experiments.task_experiment("needle", size=5), "size=5"),
    "task_experiment seed '0'": (lambda: experiments.task_experiment("needle", seed="0"), "seed='0'"),
    "Experiment unknown top-level key": (exp_from(steps=10), "experiment key='steps'"),
    "Experiment not a dict": (lambda: Experiment.from_dict([1]), "experiment="),
    "Experiment task 5 (TypeError before)": (exp_from(task=5), "task config="),
    "Experiment model 5": (exp_from(model=5), "model config="),
    "Experiment train lr inf": (exp_from(train={**_experiment_dict()["train"], "lr": INF}), "lr=inf"),
}


def _study(name):
    import importlib

    return importlib.import_module(f"toymech.studies.{name}")


STUDY_CASES = {
    "induction size": (lambda: _study("induction").validate("huge", 0, "cpu"), "size='huge'"),
    "induction seed overflow": (lambda: _study("induction").validate("smoke", 2**62, "cpu"), "seed="),
    "induction cache_dir a file": (lambda: _study("induction").validate("smoke", 0, "cpu", cache_dir=OK_NB), "cache_dir="),
    "birth threads True": (lambda: _study("birth").validate("smoke", 0, "cpu", threads=True), "threads=True"),
    "birth threads 10**9": (lambda: _study("birth").validate("smoke", 0, "cpu", threads=10**9), "threads="),
    "birth n_triggers 0": (lambda: _study("birth").validate("smoke", 0, "cpu", n_triggers=0), "n_triggers="),
    "birth trigger_mode": (lambda: _study("birth").validate("smoke", 0, "cpu", trigger_mode="all"), "trigger_mode="),
    "birth sweep_ks bool": (lambda: _study("birth").validate("smoke", 0, "cpu", sweep_ks=(1, True)), "sweep_ks[1]=True"),
    "birth sweep_steps 0": (lambda: _study("birth").validate("smoke", 0, "cpu", sweep_steps=0), "sweep_steps=0"),
    "birth also unknown run": (lambda: _study("birth").validate("smoke", 0, "cpu", also=("tied", "no")), "also[1]='no'"),
    "birth also a string": (lambda: _study("birth").validate("smoke", 0, "cpu", also="tied"), "also='tied'"),
    "induction also a string": (lambda: _study("induction").validate("smoke", 0, "cpu", also="twins"), "also='twins'"),
    "random transformers also a name": (lambda: _study("random_transformers").validate("smoke", 0, "cpu", also=["twins"]), "also[0]='twins'"),
    "birth cache_dir under a file": (lambda: _study("birth").validate("smoke", 0, "cpu", cache_dir=OK_NB + "/zoo"), "cache_dir="),
    "random_transformers threads 0": (lambda: _study("random_transformers").validate("smoke", 0, "cpu", threads=0), "threads=0"),
    "random_transformers seed '1'": (lambda: _study("random_transformers").validate("smoke", "1", "cpu"), "seed='1'"),
    "random_transformers device": (lambda: _study("random_transformers").validate("smoke", 0, "tpu"), "device='tpu'"),
}


def _report(**kw):
    def call():
        from toymech.report import build_reports

        args = {"notebooks": [OK_NB], "out_dir": os.environ["BAD_INPUT_OUT"], "size": "smoke",
                "device": "cpu", **kw}
        return build_reports(**args)
    return call


REPORT_CASES = {
    "report out_dir a file": (_report(out_dir=OK_NB), "out_dir="),
    "report out_dir under a file": (_report(out_dir=OK_NB + "/out"), "out_dir="),
    "report jobs 0": (_report(jobs=0), "jobs=0"),
    "report jobs 10**6": (_report(jobs=10**6), "jobs="),
    "report jobs True": (_report(jobs=True), "jobs=True"),
    "report seed 2**62": (_report(seed=2**62), "seed="),
    "report seed 1.0": (_report(seed=1.0), "seed=1.0"),
    "report cache_dir a file": (_report(extra_parameters={"cache_dir": OK_NB}), "cache_dir="),
    "report extra parameter nan": (_report(extra_parameters={"x": NAN}), "x=nan"),
}


CORE_CASES = {
    "check_int bool": (lambda: check_int("n", True, 0, 5), "n=True"),
    "check_int numpy bool": (lambda: check_int("n", np.bool_(True), 0, 5), "n="),
    "check_int above": (lambda: check_int("n", 6, 0, 5), "n=6"),
    "check_float inf": (lambda: check_float("x", INF), "x=inf"),
    "check_float string": (lambda: check_float("x", "1.0"), "x='1.0'"),
    "check_bool 'no'": (lambda: check_bool("flag", "no"), "flag='no'"),
    "check_bool 1": (lambda: check_bool("flag", 1), "flag=1"),
    "check_seed numpy negative": (lambda: check_seed(np.int64(-1)), "seed="),
    "check_size 'Smoke'": (lambda: check_size("Smoke"), "size='Smoke'"),
    "check_path_writable_dir file": (lambda: check_path_writable_dir("cache", OK_NB), "cache="),
    "check_path_writable_dir empty": (lambda: check_path_writable_dir("cache", ""), "cache=''"),
    "check_path_writable_file folder": (lambda: check_path_writable_file("dump", str(FIXTURES)), "dump="),
    "check_path_writable_file missing folder": (lambda: check_path_writable_file("dump", "/nonexistent/x.json"), "dump="),
}

API_CASES = {f"{area}: {k}": v for area, cases in (
    ("task", TASK_CASES), ("model", MODEL_CASES), ("train", TRAIN_CASES),
    ("experiment", EXPERIMENT_CASES), ("study", STUDY_CASES), ("report", REPORT_CASES),
    ("core", CORE_CASES)) for k, v in cases.items()}


@pytest.mark.parametrize("case", list(API_CASES))
def test_api_refuses(case, tmp_path, monkeypatch):
    call, *fragments = API_CASES[case]
    monkeypatch.setenv("BAD_INPUT_OUT", str(tmp_path / "out"))
    (tmp_path / "zoo").mkdir()
    before = snapshot(tmp_path)
    with pytest.raises(ValueError) as err:
        call()
    assert_one_line(str(err.value), *fragments)
    assert snapshot(tmp_path) == before


# --------------------------------------------------------------------------------------------
# CLI, in-process: (argv with {tmp} and {file} placeholders, fragments of the stderr line)
# --------------------------------------------------------------------------------------------

CLI_CASES = {
    "train --steps 10**12": (["train", "induction-1l", "--size", "smoke", "--steps", str(10**12)], "--steps"),
    "train --steps 0": (["train", "induction-1l", "--steps", "0"], "--steps", "0 is not allowed"),
    "train --steps abc": (["train", "induction-1l", "--steps", "abc"], "--steps", "'abc'"),
    "train --steps 1.5": (["train", "induction-1l", "--steps", "1.5"], "--steps"),
    "train --seed -1": (["train", "induction-1l", "--seed", "-1"], "--seed", "negative"),
    "train --seed 2**62 (overflow)": (["train", "induction-1l", "--seed", str(2**62)], "--seed"),
    "train --seed 10**30": (["train", "induction-1l", "--seed", str(10**30)], "--seed"),
    "train --size huge": (["train", "induction-1l", "--size", "huge"], "--size", "'huge'"),
    "train --device tpu": (["train", "induction-1l", "--size", "smoke", "--device", "tpu"], "device='tpu'"),
    "train --cache a file": (["train", "induction-1l", "--size", "smoke", "--cache", "{file}"], "--cache="),
    "train --cache under a file": (["train", "induction-1l", "--size", "smoke", "--cache", "{file}/zoo"], "--cache="),
    "train --cache empty": (["train", "induction-1l", "--size", "smoke", "--cache", " "], "--cache="),
    "train --dump-config a folder": (["train", "induction-1l", "--dump-config", "{tmp}"], "--dump-config="),
    "train --dump-config missing folder": (["train", "induction-1l", "--dump-config", "{tmp}/no/x.json"], "--dump-config="),
    "train no experiment": (["train"], "give an experiment name or --config FILE"),
    "train name and --config": (["train", "induction-1l", "--config", "{cfg}"], "give an experiment name or --config FILE"),
    "train unknown experiment": (["train", "no-such", "--dump-config", "-"], "experiment='no-such'"),
    "train --config missing": (["train", "--config", "{tmp}/missing.json"], "--config=", "a file that can be read"),
    "report --out a file": (["report", OK_NB, "--out", "{file}"], "--out="),
    "report --out under a file": (["report", OK_NB, "--out", "{file}/out"], "--out="),
    "report --cache a file": (["report", OK_NB, "--out", "{tmp}/out", "--cache", "{file}"], "--cache="),
    "report --jobs 0": (["report", OK_NB, "--jobs", "0"], "--jobs"),
    "report --jobs 10**6": (["report", OK_NB, "--jobs", str(10**6)], "--jobs"),
    "report --seed -3": (["report", OK_NB, "--seed", "-3"], "--seed", "negative"),
    "report --seed 2**62": (["report", OK_NB, "--out", "{tmp}/out", "--seed", str(2**62)], "--seed"),
    "report --size huge": (["report", OK_NB, "--size", "huge"], "--size"),
    "report --device gpu": (["report", OK_NB, "--out", "{tmp}/out", "--device", "gpu"], "device='gpu'"),
    "report --param not NAME=VALUE": (["report", OK_NB, "--out", "{tmp}/out", "--param", "steps"], "--param 'steps'"),
    "report --param NaN": (["report", OK_NB, "--out", "{tmp}/out", "--param", "x=NaN"], "--param x="),
    "report --param Infinity": (["report", OK_NB, "--out", "{tmp}/out", "--param", "x=Infinity"], "--param x="),
    "report --param size=": (["report", OK_NB, "--out", "{tmp}/out", "--param", "size=smoke"], "'size'"),
    "report --param unknown": (["report", OK_NB, "--out", "{tmp}/out", "--param", "steps=3"], "steps"),
    "report --param cache_dir a file": (["report", OK_NB, "--out", "{tmp}/out", "--param", "cache_dir={file}"], "cache_dir="),
    "report missing notebook": (["report", "{tmp}/missing.ipynb", "--out", "{tmp}/out"], "missing.ipynb"),
    "report not a notebook": (["report", "{file}", "--out", "{tmp}/out"], "notebook"),
    "report --dir missing": (["report", "--dir", "{tmp}/nb", "--out", "{tmp}/out"], "'{tmp}/nb' does not exist"),
    "lab --port 0": (["lab", "--dry-run", "--port", "0"], "--port"),
    "lab --port 70000": (["lab", "--dry-run", "--port", "70000"], "--port"),
    "lab --cache a file": (["lab", "--dry-run", "--cache", "{file}"], "--cache="),
    "lab --dir missing": (["lab", "--dry-run", "--dir", "{tmp}/nb"], "does not exist"),
    "unknown command": (["frobnicate"], "invalid choice: 'frobnicate'"),
    "unknown option": (["train", "induction-1l", "--stepz", "3"], "--stepz"),
}


def _config(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / "cfg" / name
    path.parent.mkdir(exist_ok=True)
    (path.write_bytes if isinstance(text, bytes) else path.write_text)(text)
    return str(path)


def _bad_configs():
    """(name, change to the smoke repeated_blocks experiment or raw file text, fragments)."""
    def at(section, **kw):
        return lambda d: d[section].update(kw)

    def top(**kw):
        return lambda d: d.update(kw)

    return {
        "train.lr Infinity": (at("train", lr=INF), "lr=inf"),
        "train.lr NaN": (at("train", lr=NAN), "lr=nan"),
        "model.init_range Infinity": (at("model", init_range=INF), "init_range=inf"),
        "model.smear_keys 'no'": (at("model", smear_keys="no"), "smear_keys='no'"),
        "model.n_layers true": (at("model", n_layers=True), "n_layers=True"),
        "model.d_mlp with attn_only": (at("model", attn_only=True, d_mlp=64), "d_mlp=64"),
        "model.variant_options without variant": (at("model", variant_options={"a": 1}), "variant_options="),
        "model unknown key": (at("model", layers=2), "model config key='layers'"),
        "model.seed 2**70": (at("model", seed=2**70), "seed="),
        "train.seed 2**70 (overflow)": (at("train", seed=2**70), "seed="),
        "train.momentum '0.9'": (at("train", momentum="0.9"), "momentum='0.9'"),
        "train.betas [0.9]": (at("train", betas=[0.9]), "betas="),
        "train.steps '10' (TypeError before)": (at("train", steps="10"), "steps='10'"),
        "train.steps 10**12": (at("train", steps=10**12), "steps="),
        "train.freeze 'b'": (at("train", freeze="b"), "freeze='b'"),
        "train.train_from [5] (TypeError before)": (at("train", train_from=[5]), "train_from[0]=5"),
        "train unknown key": (at("train", learning_rate=1), "train config key='learning_rate'"),
        "task.n_blocks 10**9": (at("task", n_blocks=10**9), "n_blocks="),
        "task unknown key": (at("task", blocks=3), "'blocks'"),
        "task not an object (TypeError before)": (top(task=5), "task config="),
        "model not an object": (top(model=[1]), "model config="),
        "train not an object": (top(train="fast"), "train config="),
        "unknown top-level key": (top(seed=3), "experiment key='seed'"),
        "name not a string": (top(name=5), "name=5"),
        "task missing": (lambda d: d.pop("task"), "missing 'task'"),
        "invalid JSON names file and line": ("{\n  \"task\": {,\n}", "bad.json", "line 2"),
        "not UTF-8": (b"\xff\xfe{}", "bad.json", "UTF-8"),
        "a JSON list": ("[1, 2]", "bad.json", "JSON object"),
        "empty file": ("", "bad.json", "line 1"),
    }


CONFIG_CASES = _bad_configs()


def _run_cli(argv, tmp_path, capsys):
    bad_file = tmp_path / "a_file.txt"
    bad_file.write_text("not a folder\n")
    (tmp_path / "zoo").mkdir(exist_ok=True)
    argv = [a.replace("{tmp}", str(tmp_path)).replace("{file}", str(bad_file)) for a in argv]
    if any("{cfg}" in a for a in argv):
        good = _config(tmp_path, "good.json", json.dumps(_experiment_dict()))
        argv = [a.replace("{cfg}", good) for a in argv]
    before = snapshot(tmp_path)
    capsys.readouterr()
    code = main(argv)
    out, err = capsys.readouterr()
    assert snapshot(tmp_path) == before, "something was written"
    return code, out, err


@pytest.mark.parametrize("case", list(CLI_CASES))
def test_cli_refuses(case, tmp_path, capsys):
    argv, *fragments = CLI_CASES[case]
    code, out, err = _run_cli(argv, tmp_path, capsys)
    assert code == 2, (code, out, err)
    assert err.startswith("toymech: error: "), err
    assert_one_line(err, *[f.replace("{tmp}", str(tmp_path)) for f in fragments])


@pytest.mark.parametrize("case", list(CONFIG_CASES))
def test_cli_config_refuses(case, tmp_path, capsys):
    change, *fragments = CONFIG_CASES[case]
    if callable(change):
        spec = _experiment_dict()
        change(spec)
        text = json.dumps(spec)  # NaN / Infinity as Python's json writes them
    else:
        text = change
    path = _config(tmp_path, "bad.json", text)
    code, out, err = _run_cli(["train", "--config", path], tmp_path, capsys)
    assert code == 2, (code, out, err)
    assert_one_line(err, *fragments)


def test_catalogue_size():
    assert len(API_CASES) + len(CLI_CASES) + len(CONFIG_CASES) >= 150


# --------------------------------------------------------------------------------------------
# What is fine stays fine: numpy integers are integers
# --------------------------------------------------------------------------------------------

def test_numpy_integers_are_accepted_and_stored_as_ints():
    t = tasks.get("memorization", n_keys=np.int64(8), n_values=np.int32(4))
    assert t.n_keys == 8 and type(t.n_keys) is int and json.dumps(t.to_dict())
    cfg = TrainConfig(steps=np.int64(10), eval_every=np.int64(5), seed=np.int64(3))
    assert (cfg.steps, cfg.seed) == (10, 3) and type(cfg.seed) is int and json.dumps(cfg.to_dict())
    m = ModelConfig(n_layers=np.int64(1), seed=np.uint16(2), smear_keys=np.bool_(True))
    assert type(m.n_layers) is int and m.smear_keys is True and json.dumps(m.to_dict())
    assert experiments.get("induction-1l", size="smoke", seed=np.int64(4)).train.seed == 4
    assert check_float("lr", np.float32(0.5), 0, 1) == 0.5


def test_steps_override_keeps_warmup_valid(tmp_path, capsys):
    # --steps shorter than a study's warm-up shortens the warm-up instead of failing.
    assert experiments.get("rt-decimal_addition-normal", size="smoke").train.warmup_steps > 0
    code = main(["train", "rt-decimal_addition-normal", "--size", "smoke", "--steps", "1",
                 "--dump-config", "-"])
    dumped = json.loads(capsys.readouterr().out)["train"]
    assert code == 0 and (dumped["steps"], dumped["warmup_steps"]) == (1, 0)


# --------------------------------------------------------------------------------------------
# End to end: a real process prints one line and no traceback (unless TOYMECH_DEBUG=1)
# --------------------------------------------------------------------------------------------

def _toymech(*args, env=None):
    return subprocess.run([sys.executable, "-m", "toymech", *args], capture_output=True,
                          text=True, timeout=limit(300), env={**os.environ, **(env or {})})


def test_end_to_end_no_traceback(tmp_path):
    bad = tmp_path / "bad.json"
    spec = _experiment_dict()
    spec["train"]["lr"] = INF
    bad.write_text(json.dumps(spec))
    for args in (["train", "--config", str(bad)],
                 ["train", "induction-1l", "--size", "smoke", "--cache", str(bad)],
                 ["train", "induction-1l", "--steps", str(10**12)]):
        result = _toymech(*args)
        assert result.returncode == 2, result
        assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr
    debug = _toymech("train", "--config", str(bad), env={"TOYMECH_DEBUG": "1"})
    assert debug.returncode != 0 and "Traceback" in debug.stderr and "lr=inf" in debug.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json"]
