"""Sweeps: a grid of experiments trained through the one loop into the zoo, plus a results table.

A grid spec (a dict, or a JSON/YAML file holding one)::

    {"experiment": "modular_addition",          # a name of toymech.experiments, or a list
     "size": "smoke", "seed": [0, 1, 2],        # a value or a list each
     "overrides": {"model.d_model": [16, 32],   # dotted task./model./train. keys, each a list
                   "train.freeze": [[], ["blocks.*"]]},
     "stack_seeds": false,  # true: the seeds of one grid point are one job, trained stacked
                            # where that pays (zoo.stacking_pays); "always": stacked
     "retries": 1,          # a failing job is tried 1 + retries times
     "tag": "",             # the zoo tag of every trial
     "name": "widths"}      # the table's name: <zoo>/sweeps/<name>.csv (default: a hash)

or, from Python, explicit experiments instead of a named one and its axes:
``{"experiments": [Experiment, ...], "stack_seeds": true, "name": ...}`` (``run_experiments``:
how the studies send their grids through the sweep).

The cartesian product gives the trials: each is ``experiments.get(name, size, seed)`` with the
overrides applied through ``to_dict`` -> ``from_dict`` (so every config check applies; derived
fields follow their inputs as in ``ModelConfig.replace``: ``d_head``/``d_mlp`` follow
``d_model``, the model's vocabulary and context follow a changed task, ``eval_every`` and
``warmup_steps`` shrink with ``train.steps``). Every check runs before any training.

Each trial is ``Zoo.get_or_train`` (its lock makes concurrent workers and a re-run after a
kill safe); a trial whose entry exists is done and read back, never run again, so a sweep is
resumable. Backends: Ray core (``pip install 'toymech[sweep]'``; an embedded local Ray started
for the sweep, or an existing cluster by ``address``) or the in-process runner (``local``, or
``auto`` without Ray), which give the same table. The table (one row per model; see
``COLUMNS``) is rewritten atomically after every finished job.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import importlib.util
import itertools
import json
import logging
import math
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ..core import (check, check_float, check_int, check_path_writable_dir,
                    check_path_writable_file, check_seed, is_int, check_size, check_str, jsonable)
from ..devices import DEVICE_CHOICES, choose_threads, resolve_device
from .zoo import Experiment, Zoo, ZooEntry, seedless_key

BACKENDS = ("auto", "ray", "local")
STATUSES = ("ok", "failed", "cancelled", "pending")  # pending: only in a table of a live sweep
SPEC_KEYS = ("experiment", "size", "seed", "overrides", "stack_seeds", "retries", "tag", "name",
             "experiments")
SECTIONS = ("task", "model", "train")
# Set by the seed axis or the experiment itself, never by an override.
NOT_OVERRIDABLE = ("task.name", "model.seed", "train.seed")
COLUMNS = ("trial", "experiment", "size", "seed")  # then the overrides, RESULT_COLUMNS, metrics
RESULT_COLUMNS = ("status", "error", "attempts", "seconds", "loaded", "device", "entry")


# ----------------------------------------------------------------------------------------------
# the grid
# ----------------------------------------------------------------------------------------------


@dataclass(eq=False)
class Trial:
    """One model of the sweep (one table row). Trials with the same ``group`` train as one job
    (the seeds of a grid point with ``stack_seeds``)."""

    index: int
    experiment: str
    size: str
    seed: int
    overrides: dict[str, Any]
    exp: Experiment
    tag: str = ""
    group: int = 0

    @property
    def id(self) -> str:
        """Stable across runs and machines: the name, size, seed and a hash of the overrides."""
        if not self.size:  # an explicit experiment: its name and its zoo key
            return f"{self.experiment}-{self.key}"
        blob = json.dumps(jsonable(self.overrides), sort_keys=True)
        return (f"{self.experiment}-{self.size}-s{self.seed}-"
                f"{hashlib.sha256(blob.encode()).hexdigest()[:8]}")

    @property
    def key(self) -> str:
        return self.exp.key(self.tag)


def load_grid(path: str | Path) -> dict[str, Any]:
    """A grid spec read from a ``.json`` file, or ``.yaml``/``.yml`` (needs PyYAML)."""
    p = Path(path).expanduser()
    check(p.suffix.lower() in (".json", ".yaml", ".yml"), "grid", str(path),
          "a .json, .yaml or .yml file")
    check(p.is_file(), "grid", str(path), "an existing file")
    text = p.read_text(encoding="utf-8")
    if p.suffix.lower() == ".json":
        try:
            spec = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"grid={str(path)!r} is not valid JSON: line {exc.lineno}, column "
                             f"{exc.colno}: {exc.msg}") from None
    else:
        try:
            import yaml
        except ImportError:  # pragma: no cover - pyyaml is a dependency
            raise ValueError(f"grid={str(path)!r} is YAML, but PyYAML is not installed: "
                             "pip install pyyaml, or give the grid as JSON") from None
        try:
            spec = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ValueError(f"grid={str(path)!r} is not valid YAML: "
                             f"{' '.join(str(exc).split())}") from None
    check(isinstance(spec, dict), "grid", str(path), "a file holding one mapping (JSON object)")
    return spec


def _axis(name: str, value: Any, scalar_ok: bool = True) -> list[Any]:
    """A grid axis: a non-empty list of distinct values (a single value when ``scalar_ok``)."""
    if not isinstance(value, (list, tuple)):
        check(scalar_ok, name, value, "a non-empty list of values, e.g. [16, 32]")
        return [value]
    check(len(value) > 0, name, value, "a non-empty list (an empty axis gives no trials)")
    seen = [json.dumps(jsonable(v), sort_keys=True) for v in value]
    dup = next((v for i, v in enumerate(value) if seen[i] in seen[:i]), None)
    check(len(set(seen)) == len(seen), name, dup, "each value once in its list")
    return list(value)


def apply_overrides(exp: Experiment, overrides: dict[str, Any]) -> Experiment:
    """``exp`` with dotted ``section.field`` values replaced (checked by ``from_dict``)."""
    d = exp.to_dict()
    given: dict[str, set[str]] = {s: set() for s in SECTIONS}
    for key, value in overrides.items():
        section, field = key.split(".", 1)
        d[section][field] = copy.deepcopy(value)
        given[section].add(field)
    model, train = d["model"], d["train"]
    if "kind" not in model:  # a ModelConfig: derived fields follow their inputs unless given
        if given["model"] & {"d_model", "n_heads"} and "d_head" not in given["model"]:
            model["d_head"] = None
        if given["model"] & {"d_model", "attn_only"} and "d_mlp" not in given["model"]:
            model["d_mlp"] = None
    if given["task"]:  # the model's vocabulary and context follow the task they were made for
        from ..tasks import from_dict as task_from_dict

        task = task_from_dict(d["task"])
        for field, old, new in (("d_vocab", exp.task.d_vocab, task.d_vocab),
                                ("n_ctx", exp.task.seq_len, task.seq_len)):
            if field not in given["model"] and model.get(field) == old:
                model[field] = new
    if "steps" in given["train"] and is_int(train["steps"]):
        if "eval_every" not in given["train"]:
            train["eval_every"] = min(train["eval_every"], train["steps"])
        if "warmup_steps" not in given["train"]:
            train["warmup_steps"] = max(0, min(train["warmup_steps"], train["steps"] - 1))
    return Experiment.from_dict(d)


def expand_grid(spec: dict[str, Any]) -> list[Trial]:
    """The trials of a grid spec, every value checked (ValueError naming it) before any work."""
    from .. import experiments  # experiments sit above training: imported when used

    check(isinstance(spec, dict), "grid", type(spec).__name__, "a dict (JSON object)")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    check(not unknown, "grid key", unknown[0] if unknown else None, f"one of {', '.join(SPEC_KEYS)}")
    if "experiments" in spec:
        return _explicit_trials(spec)
    check("experiment" in spec, "grid", sorted(spec), "a mapping with an 'experiment' key")
    registry = experiments.registry()
    names = _axis("experiment", spec["experiment"])
    for name in names:
        check(isinstance(name, str) and name in registry, "experiment", name,
              f"one of {', '.join(sorted(registry))} ('toymech list experiments')")
    sizes = [check_size(s) for s in _axis("size", spec.get("size", "default"))]
    seeds = [check_seed(s) for s in _axis("seed", spec.get("seed", 0))]
    overrides = spec.get("overrides") or {}
    check(isinstance(overrides, dict), "overrides", overrides,
          "a mapping of dotted keys to lists of values, e.g. {'model.d_model': [16, 32]}")
    stack = check_stack(spec.get("stack_seeds", False))
    check_retries(spec.get("retries", 1))
    tag = check_str("tag", spec.get("tag", ""), empty=True)
    if "name" in spec:
        check_name(spec["name"])
    axes = {}
    for key, values in overrides.items():
        section, _, field = str(key).partition(".")
        check(isinstance(key, str) and section in SECTIONS and field != "", "overrides key", key,
              "a dotted key task.<field>, model.<field> or train.<field>, e.g. 'model.d_model'")
        check(key not in NOT_OVERRIDABLE, "overrides key", key,
              "not task.name, model.seed or train.seed (use the experiment and seed axes)")
        axes[key] = _axis(f"overrides[{key!r}]", values, scalar_ok=False)
    for name in names:  # unknown fields, named against what the experiment has
        base = registry[name].make(sizes[0], seeds[0])
        for key in axes:
            section, field = key.split(".", 1)
            known = _fields(base, section)
            allowed = sorted(f"{section}.{f}" for f in known
                             if f"{section}.{f}" not in NOT_OVERRIDABLE)
            check(field in known, "overrides key", key,
                  f"a field of experiment {name!r}: one of {', '.join(allowed)}")
    trials: list[Trial] = []
    points = itertools.product(names, sizes, itertools.product(*axes.values()))
    for group, (name, size, values) in enumerate(points):
        point = dict(zip(axes, values))
        for seed in seeds:
            try:
                exp = apply_overrides(registry[name].make(size, seed), point)
            except ValueError as exc:
                raise ValueError(f"grid point experiment={name!r}, size={size!r}, seed={seed}, "
                                 f"overrides={jsonable(point)}: {exc}") from None
            trials.append(Trial(len(trials), name, size, seed, point, exp, tag,
                                group if stack else len(trials)))
    return trials


def _explicit_trials(spec: dict[str, Any]) -> list[Trial]:
    """The trials of ``{"experiments": [...]}``: each an ``Experiment`` (or its dict); with
    ``stack_seeds``, those that differ only in their seeds form one job."""
    both = sorted(set(spec) & {"experiment", "size", "seed", "overrides"})
    check(not both, "grid key", both[0] if both else None,
          "not with 'experiments' (explicit experiments carry their own size, seed and settings)")
    items = spec["experiments"]
    check(isinstance(items, (list, tuple)) and len(items) > 0, "experiments",
          type(items).__name__, "a non-empty list of Experiment objects or their dicts")
    exps = [e if isinstance(e, Experiment) else Experiment.from_dict(e) for e in items]
    stack = check_stack(spec.get("stack_seeds", False))
    check_retries(spec.get("retries", 1))
    tag = check_str("tag", spec.get("tag", ""), empty=True)
    if "name" in spec:
        check_name(spec["name"])
    groups: dict[str, int] = {}
    trials = []
    for i, exp in enumerate(exps):
        group = groups.setdefault(seedless_key(exp), len(groups)) if stack else i
        trials.append(Trial(i, exp.name or exp.task.name, "", exp.train.seed, {}, exp, tag, group))
    keys = [t.key for t in trials]
    dup = next((k for i, k in enumerate(keys) if k in keys[:i]), None)
    check(dup is None, "experiments", dup, "each experiment once (two have the same zoo key)")
    return trials


def _fields(exp: Experiment, section: str) -> set[str]:
    """What an override may set in ``section``: its saved keys and its dataclass's fields
    (a field at its default may be left out of ``to_dict``, e.g. ``train.snapshots``)."""
    obj = getattr(exp, section)
    names = set(exp.to_dict()[section])
    if dataclasses.is_dataclass(obj):
        names |= {f.name for f in dataclasses.fields(obj) if f.init}
    return names


def check_stack(value: Any) -> bool | str:
    """``stack_seeds``: false, true (stacked where ``zoo.stacking_pays``) or "always"."""
    check(isinstance(value, bool) or value == "always", "stack_seeds", value,
          "false, true (the seeds of a grid point train as one stacked job where that pays) "
          "or 'always'")
    return value


def check_retries(value: Any) -> int:
    return check_int("retries", value, 0, 100)


def check_name(value: Any) -> str:
    check(isinstance(value, str) and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", value)
          is not None, "name", value, "letters, digits, '_', '.' and '-' (a file name)")
    return value


def sweep_name(spec: dict[str, Any], stem: str = "sweep") -> str:
    """The spec's ``name``, else ``stem`` (the grid file's) and a hash of what defines its
    trials, so two different grids never share a table."""
    if spec.get("name"):
        return spec["name"]
    keys = ("experiment", "size", "seed", "overrides", "stack_seeds", "tag")
    what = {k: spec.get(k) for k in keys}
    if "experiments" in spec:  # explicit experiments: their zoo keys define the sweep
        what["experiments"] = [e.key() if isinstance(e, Experiment) else
                               Experiment.from_dict(e).key() for e in spec["experiments"]]
    blob = json.dumps(jsonable(what), sort_keys=True)
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", stem)[:60] or "sweep"
    return f"{stem}-{hashlib.sha256(blob.encode()).hexdigest()[:10]}"


# ----------------------------------------------------------------------------------------------
# one job, in a Ray worker or in this process
# ----------------------------------------------------------------------------------------------


def run_job(exp_dicts: list[dict[str, Any]], cache_dir: str, device: str, tag: str,
            stacked: bool | None, threads: int | None = None) -> list[dict[str, Any]]:
    """Train or load one job's experiments through the zoo; one outcome per experiment:
    ``{"ok": True, "final", "seconds", "device", "entry", "loaded"}`` or
    ``{"ok": False, "error"}`` (the exception in one line). Never raises an ``Exception``."""
    started = time.perf_counter()
    try:
        if threads is not None:
            import torch

            torch.set_num_threads(threads)
        exps = [Experiment.from_dict(d) for d in exp_dicts]
        zoo = Zoo(cache_dir)
        if len(exps) == 1:
            entries = [zoo.get_or_train(exps[0], device=device, tag=tag, progress=False, log=None)]
        else:
            entries = zoo.get_or_train_many(exps, device=device, tag=tag, stacked=stacked,
                                            progress=False, log=None)
    except Exception as exc:  # reported in the table, not raised: the other trials go on
        error = {"ok": False, "error": one_line(exc), "device": str(device),
                 "seconds": time.perf_counter() - started}
        return [dict(error) for _ in exp_dicts]
    return [outcome(e) for e in entries]


def outcome(entry: ZooEntry) -> dict[str, Any]:
    final = {k: float(v) for k, v in entry.final.items() if isinstance(v, (int, float))}
    return {"ok": True, "final": final, "seconds": float(entry.meta.get("seconds") or 0.0),
            "device": str(entry.meta.get("device", "")), "entry": entry.path.name,
            "loaded": bool(entry.loaded)}


def one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or "(no message)"
    return f"{type(exc).__name__}: {text}"[:500]


class LocalRunner:
    """Runs the jobs one after another in this process (``wait`` runs the next one)."""

    name = "local"

    def __init__(self, threads: int | None = None):
        self.threads, self.queue = threads, []

    def submit(self, job: int, args: tuple) -> None:
        self.queue.append((job, args))

    def pending(self) -> int:
        return len(self.queue)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        job, args = self.queue.pop(0)
        return [(job, run_job(*args, threads=self.threads))]

    def cancel(self) -> None:
        self.queue.clear()

    def close(self) -> None:
        pass


class RayRunner:
    """Ray core tasks (``num_cpus=1``, a GPU fraction on CUDA, ``max_retries=0``: the driver
    retries, keeping each error). Starts an embedded local Ray, or joins ``address``; shuts down
    only a Ray it started itself."""

    name = "ray"

    def __init__(self, address: str | None, workers: int, gpu_fraction: float, device: str):
        import ray

        self.ray, self.started, self.refs = ray, False, {}
        if not ray.is_initialized():
            options = dict(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                           ignore_reinit_error=True)
            if address:
                ray.init(address=address, **options)
            else:  # "local": a fresh instance, never a cluster someone else started here
                # results are a few rows: a small object store (Ray's default reserves 30 % of
                # the memory, per notebook when several run at once)
                ray.init(address="local", num_cpus=workers, object_store_memory=128 * 2**20,
                         **options)
            self.started = True
        gpus = ray.cluster_resources().get("GPU", 0) > 0
        self.device = ("cuda" if device.startswith("cuda") or (device == "auto" and gpus)
                       else "cpu" if device == "auto" else device)
        self.task = ray.remote(run_job).options(
            num_cpus=1, max_retries=0, num_gpus=gpu_fraction if self.device.startswith("cuda") else 0)

    def submit(self, job: int, args: tuple) -> None:
        args = (*args[:2], self.device, *args[3:])
        self.refs[self.task.remote(*args, threads=1)] = (job, len(args[0]))

    def pending(self) -> int:
        return len(self.refs)

    def wait(self) -> list[tuple[int, list[dict[str, Any]]]]:
        done, _ = self.ray.wait(list(self.refs), num_returns=1)
        out = []
        for ref in done:
            job, n = self.refs.pop(ref)
            try:
                out.append((job, self.ray.get(ref)))
            except Exception as exc:  # the worker died (killed, out of memory): a failed attempt
                out.append((job, [{"ok": False, "error": one_line(exc)} for _ in range(n)]))
        return out

    def cancel(self) -> None:
        for ref in list(self.refs):
            try:
                self.ray.cancel(ref)
            except Exception:
                pass
        self.refs.clear()

    def close(self) -> None:
        if self.started and self.ray.is_initialized():
            self.ray.shutdown()
        self.started = False


# ----------------------------------------------------------------------------------------------
# the sweep
# ----------------------------------------------------------------------------------------------


@dataclass
class SweepResult:
    """``table``: one row per trial (also at ``path``); ``trials``: the Trial objects, in the
    table's order; ``entry(i)`` loads trial i's model from the zoo."""

    table: pd.DataFrame
    trials: list[Trial]
    path: Path
    cache_dir: Path
    backend: str

    def count(self, status: str) -> int:
        return int((self.table["status"] == status).sum())

    @property
    def loaded(self) -> int:
        return int(self.table["loaded"].sum())

    def summary(self) -> str:
        return (f"{self.count('ok')} ok ({self.loaded} loaded from the zoo), "
                f"{self.count('failed')} failed, {self.count('cancelled')} cancelled of "
                f"{len(self.trials)} trials ({self.backend}); table: {self.path}")

    def entry(self, i: int, device: str = "auto") -> ZooEntry:
        trial = self.trials[check_int("trial", i, 0, len(self.trials) - 1)]
        return Zoo(self.cache_dir).load(trial.exp, device=device, tag=trial.tag, log=None)


def _row(trial: Trial, status: str, result: dict[str, Any] | None = None,
         attempts: int = 0) -> dict[str, Any]:
    result = result or {}
    row = {"trial": trial.id, "experiment": trial.experiment, "size": trial.size, "seed": trial.seed}
    for key, value in trial.overrides.items():  # lists (freeze patterns) as JSON text
        row[key] = json.dumps(jsonable(value)) if isinstance(value, (list, tuple, dict)) else value
    row.update(status=status, error=result.get("error", ""), attempts=attempts,
               seconds=result.get("seconds", math.nan), loaded=bool(result.get("loaded", False)),
               device=result.get("device", ""),
               entry=result.get("entry", f"{trial.exp.task.name}-{trial.key}"))
    for name, value in result.get("final", {}).items():
        row[name if name not in row else f"final_{name}"] = value
    return row


def write_table(rows: dict[int, dict[str, Any]], path: Path) -> pd.DataFrame:
    """The rows as a DataFrame, written to ``path`` atomically (a complete CSV at all times)."""
    records = [rows[i] for i in sorted(rows)]
    fixed = list(records[0])[:list(records[0]).index("entry") + 1]
    metrics = sorted({k for r in records for k in r} - set(fixed), key=lambda k: (k != "step", k))
    table = pd.DataFrame(records, columns=fixed + metrics)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    table.to_csv(tmp, index=False)
    os.replace(tmp, path)
    return table


def _choose_backend(backend: str, address: str | None) -> str:
    check_str("backend", backend, BACKENDS)
    has_ray = importlib.util.find_spec("ray") is not None
    if backend == "ray" or address:
        check(has_ray, "backend" if backend == "ray" else "address", backend if backend == "ray"
              else address, "the ray backend needs ray: pip install 'toymech[sweep]'")
    check(not (address and backend == "local"), "address", address,
          "None with backend='local' (an address is for the ray backend)")
    return "ray" if backend == "ray" or (backend == "auto" and has_ray) else "local"


def run_sweep(grid: dict[str, Any] | str | Path, *, cache_dir: str | Path | None = None,
              backend: str = "auto", address: str | None = None, out: str | Path | None = None,
              retries: int | None = None, device: str = "auto", progress: bool = True,
              workers: int | None = None, gpu_fraction: float = 0.25,
              keep_ray: bool = False, log: Callable[[str], None] | None = print) -> SweepResult:
    """Run every trial of ``grid`` (a spec dict or a JSON/YAML file) into the zoo at
    ``cache_dir`` and write the table (``out``, default ``<zoo>/sweeps/<name>.csv``).

    ``backend``: auto (Ray when installed, else local), ray or local. ``address``: join that Ray
    cluster ('auto', 'host:6379', 'ray://host:10001') instead of starting one. ``retries``
    overrides the spec's. ``workers``: trials at once on an embedded Ray (default: the free cores,
    ``devices.choose_threads``). ``gpu_fraction``: the GPU share each Ray task asks for on CUDA.
    ``keep_ray``: leave an embedded Ray this call started running for the next sweep of this
    process (a notebook's several grids start it once; it stops when the process exits).
    Ctrl-C cancels the pending trials, writes the table (``cancelled`` rows) and re-raises.
    """
    spec = load_grid(grid) if isinstance(grid, (str, Path)) else grid
    stem = Path(grid).stem if isinstance(grid, (str, Path)) else "sweep"
    trials = expand_grid(spec)
    retries = check_retries(spec.get("retries", 1) if retries is None else retries)
    which = _choose_backend(backend, address)
    check(address is None or (isinstance(address, str) and address.strip() != ""), "address",
          address, "None or a Ray address: 'auto', 'host:6379' or 'ray://host:10001'")
    check(isinstance(device, str) and device.split(":")[0] in DEVICE_CHOICES, "device", device,
          f"one of {', '.join(DEVICE_CHOICES)} (cuda:N also works)")
    if not address:  # the trials run on this machine: the device must exist here
        device = str(resolve_device(device)) if which == "local" or device != "auto" else device
    check_float("gpu_fraction", gpu_fraction, 0.0, 1.0, lo_open=True)
    if workers is not None:
        check_int("workers", workers, 1, 4096)
    zoo = Zoo(cache_dir)
    check_path_writable_dir("cache_dir", zoo.root)
    path = (check_path_writable_file("out", out) if out is not None
            else zoo.root / "sweeps" / f"{sweep_name(spec, stem)}.csv")

    rows, todo = {}, {}  # todo: job -> indices of its trials not yet in the zoo
    for trial in trials:
        entry = _load_done(zoo, trial)
        rows[trial.index] = _row(trial, "ok", outcome(entry)) if entry else _row(trial, "pending")
        if entry is None:
            todo.setdefault(trial.group, []).append(trial.index)
    attempts = {job: 0 for job in todo}

    from tqdm.auto import tqdm

    bar = tqdm(total=len(trials), initial=len(trials) - sum(map(len, todo.values())),
               desc="sweep", unit="trial", disable=not progress)
    runner = None
    try:
        if todo:
            runner = (RayRunner(address, workers or max(1, min(choose_threads(), len(todo))),
                                gpu_fraction, device) if which == "ray" else LocalRunner())
        stack = spec.get("stack_seeds", False)
        stacked = True if stack == "always" else None if stack else False

        def submit(job: int) -> None:
            exps = [trials[i].exp.to_dict() for i in todo[job]]
            runner.submit(job, (exps, str(zoo.root), device, trials[todo[job][0]].tag, stacked))

        for job in todo:
            submit(job)
        write_table(rows, path)
        while runner is not None and runner.pending():
            for job, outcomes in runner.wait():
                attempts[job] += 1
                if not all(o["ok"] for o in outcomes) and attempts[job] <= retries:
                    if log:  # above the bar, not through it
                        say = bar.write if progress and log is print else log
                        say(f"[toymech] sweep: {trials[todo[job][0]].id} failed (attempt "
                            f"{attempts[job]} of {retries + 1}): {outcomes[0]['error']}; retrying")
                    submit(job)
                    continue
                for i, o in zip(todo[job], outcomes):
                    rows[i] = _row(trials[i], "ok" if o["ok"] else "failed", o, attempts[job])
                bar.update(len(todo[job]))
                write_table(rows, path)
    except KeyboardInterrupt:
        if runner is not None:
            runner.cancel()
        for i, row in rows.items():
            if row["status"] == "pending":
                rows[i] = _row(trials[i], "cancelled", attempts=attempts.get(trials[i].group, 0))
        write_table(rows, path)
        raise
    finally:
        bar.close()
        if runner is not None and not keep_ray:
            runner.close()
    table = write_table(rows, path)
    return SweepResult(table, trials, path, zoo.root, runner.name if runner else "none")


def _load_done(zoo: Zoo, trial: Trial) -> ZooEntry | None:
    """The trial's entry when the zoo has it and it is sound (a damaged one is run again:
    ``get_or_train`` quarantines it)."""
    if not zoo.has(trial.exp, trial.tag):
        return None
    try:
        return zoo.load(trial.exp, device="cpu", tag=trial.tag, log=None)
    except ValueError:
        return None


__all__ = ["BACKENDS", "COLUMNS", "RESULT_COLUMNS", "STATUSES", "SweepResult", "Trial",
           "apply_overrides", "expand_grid", "load_grid", "run_job", "run_sweep", "sweep_name",
           "write_table", "run_experiments"]


def run_experiments(experiments: list[Experiment], *, cache_dir: str | Path | None = None,
                    name: str | None = None, stacked: bool | None = None,
                    backend: str = "auto", device: str = "auto", retries: int = 1,
                    tag: str = "", progress: bool = False, keep_ray: bool = True,
                    workers: int | None = None, log: Callable[[str], None] | None = None
                    ) -> SweepResult:
    """A sweep of explicit experiments (a study's grid): ``run_sweep`` of
    ``{"experiments": experiments}``. Those that differ only in their seeds train as one job,
    stacked where that pays (``stacked``: None), always (True) or never (False)."""
    spec: dict[str, Any] = {"experiments": list(experiments), "retries": retries, "tag": tag,
                            "stack_seeds": "always" if stacked else stacked is None}
    if name:
        spec["name"] = name
    return run_sweep(spec, cache_dir=cache_dir, backend=backend, device=device,
                     progress=progress, keep_ray=keep_ray, workers=workers, log=log)
