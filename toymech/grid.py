"""Named grids: a grid spec expanded into trials of named experiments (``toymech.experiments``:
this module sits beside the registry, above ``toymech.sweep``, so that the sweep package never
imports experiments or studies), and ``run_sweep``.

A grid spec (a dict, or a JSON/YAML file holding one)::

    {"experiment": "modular_addition",          # a name of toymech.experiments, or a list
     "size": "smoke", "seed": [0, 1, 2],        # a value or a list each
     "overrides": {"model.d_model": [16, 32],   # dotted task./model./train. keys, each a list
                   "train.freeze": [[], ["blocks.*"]]},
     "knobs": {"block_len": [6, "4-8"]},        # the experiment's study's knobs, each a list
                                                # (``toymech list knobs``; the table's columns
                                                # ``knob.<name>``)
     "stack_seeds": false,  # true: the seeds of one grid point are one job, trained stacked
                            # where that pays (zoo.stacking_pays); "always": stacked
     "retries": 1,          # a failing job is tried 1 + retries times
     "tag": "",             # the zoo tag of every trial
     "name": "widths"}      # the table's name: <zoo>/sweeps/<name>.csv (default: a hash)

or explicit experiments instead of a named one and its axes: ``{"experiments": [Experiment,
...], "stack_seeds": true, "name": ...}`` (``runner.run_experiments``).

The cartesian product gives the trials (at most ``MAX_TRIALS``, counted before anything is
expanded): each carries the ``Setting`` of its size and knobs (``Trial.setting``: the study's
``with_knobs``, built once per grid point) and is its experiment at that setting and its seed
with the overrides applied through ``to_dict`` -> ``from_dict`` (so every config check
applies; derived fields follow their inputs as in ``ModelConfig.replace``: ``d_head``/``d_mlp``
follow ``d_model``, the model's vocabulary and context follow a changed task, ``eval_every``
and ``warmup_steps`` shrink with ``train.steps``).
Files are read strictly (``training.specfiles``: duplicate keys are an error). Every option is
checked before the grid is read, every grid value before any trial is made, and every trial's
experiment passes the preflight before the first trains (``runner``).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import experiments
from .core import Setting, check, check_bool, check_seed, check_size, jsonable
from .models.reference import training_cost
from .studies import knobs as study_knobs
from .studies import protocol as study_protocol
from .sweep.runner import check_options, check_retries, preflight_all, run_trials
from .sweep.table import MAX_TRIALS, SweepResult, Trial, check_common, explicit_trials, sweep_name
from .training import Experiment
from .training.experiment import SECTIONS, apply_overrides
from .training.specfiles import read_mapping

SPEC_KEYS = ("experiment", "size", "seed", "overrides", "knobs", "stack_seeds", "retries", "tag",
             "name", "experiments")
# Set by the seed axis or the experiment itself, never by an override.
NOT_OVERRIDABLE = ("task.name", "model.seed", "train.seed")


def load_grid(path: str | Path) -> dict[str, Any]:
    """The grid spec in the file at ``path``: a ``.json`` file, or ``.yaml``/``.yml`` (strictly:
    see ``training.specfiles``)."""
    return read_mapping(path, "grid")


def _axis(name: str, value: Any, scalar_ok: bool = True) -> list[Any]:
    """A grid axis: a non-empty list of distinct values (a single value when ``scalar_ok``)."""
    if not isinstance(value, (list, tuple)):
        check(scalar_ok, name, value, "a non-empty list of values, e.g. [16, 32]")
        return [value]
    check(len(value) > 0, name, value, "a non-empty list (an empty axis gives no trials)")
    check(len(value) <= MAX_TRIALS, name, f"{len(value):,} values",
          f"at most {MAX_TRIALS:,} (the trials of one sweep)")
    seen: set[str] = set()
    for v in value:
        text = json.dumps(jsonable(v), sort_keys=True)
        check(text not in seen, name, v, "each value once in its list")
        seen.add(text)
    return list(value)


def expand_grid(spec: dict[str, Any]) -> list[Trial]:
    """The trials of a grid spec, every value checked (ValueError naming it) before any work."""
    check(isinstance(spec, dict), "grid", type(spec).__name__, "a dict (JSON object)")
    unknown = sorted(set(spec) - set(SPEC_KEYS))
    check(not unknown, "grid key", unknown[0] if unknown else None, f"one of {', '.join(SPEC_KEYS)}")
    if "experiments" in spec:
        return explicit_trials(spec)
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
    stack, tag = check_common(spec)
    axes = {}
    for key, values in overrides.items():
        section, _, field = str(key).partition(".")
        check(isinstance(key, str) and section in SECTIONS and field != "", "overrides key", key,
              "a dotted key task.<field>, model.<field> or train.<field>, e.g. 'model.d_model'")
        check(key not in NOT_OVERRIDABLE, "overrides key", key,
              "not task.name, model.seed or train.seed (use the experiment and seed axes)")
        axes[key] = _axis(f"overrides[{key!r}]", values, scalar_ok=False)
    knob_axes = _knob_axes(spec.get("knobs"), names, registry)
    count = (len(names) * len(sizes) * len(seeds) * math.prod(len(v) for v in axes.values())
             * math.prod(len(v) for v in knob_axes.values()))
    check(count <= MAX_TRIALS, "grid", f"{count:,} trials",
          f"at most {MAX_TRIALS:,} trials in one sweep (split it into several)")
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
    points = itertools.product(names, sizes, itertools.product(*axes.values()),
                               itertools.product(*knob_axes.values()))
    for group, (name, size, values, knob_values) in enumerate(points):
        point = dict(zip(axes, values))
        knobs = dict(zip(knob_axes, knob_values))
        at = (study_protocol.study(registry[name].study).with_knobs(size, knobs) if knobs
              else Setting(size))  # every knob and combination checked before any trial is made
        for seed in seeds:
            trial = Trial(len(trials), name, at, seed, point, None, tag,
                          group if stack else len(trials), knobs)
            try:
                trial.exp = apply_overrides(registry[name].make(at, seed), point)
            except ValueError as exc:
                raise ValueError(f"grid point experiment={name!r}, size={size!r}, seed={seed}, "
                                 f"overrides={jsonable(trial.columns)}: {exc}") from None
            trials.append(trial)
    return trials


def check_one_row_per_run(trials: list[Trial]) -> None:
    """A ValueError, before any work, for two trials that build the same run (one zoo key): a
    knob or override that does not change an experiment (``d_model`` on ``birth-control``)
    would write one run as two rows, each under a value it was not trained at."""
    seen: dict[str, Trial] = {}
    for t in trials:
        other = seen.setdefault(t.key, t)
        if other is not t:
            raise ValueError(
                f"grid points {jsonable(other.columns)} and {jsonable(t.columns)} are not allowed "
                f"together: they build the same run of {t.experiment} (zoo key {t.key}), which "
                "would be two rows; leave out the knob or override that does not change it "
                "('toymech list knobs' says which runs each knob changes)")


def _knob_axes(given: Any, names: list[str], registry) -> dict[str, list[Any]]:
    """A grid's ``knobs``: {knob: [values]}, for experiments of one study (checked by the
    study's ``with_knobs`` per grid point)."""
    if not given:
        return {}
    check(isinstance(given, dict), "knobs", given,
          "a mapping of knob names to lists of values, e.g. {'block_len': [6, '4-8']}")
    owners = {registry[n].study for n in names}
    check(len(owners) == 1 and "" not in owners, "knobs", sorted(given),
          "knobs of one study: every experiment of the grid from the same study "
          f"(these are of {sorted(o or 'no study' for o in owners)})")
    study_name = owners.pop()
    study = study_protocol.study(study_name)
    for key in given:
        if key not in study.knobs:
            study_knobs.parse_variant(study.knobs, {key: None}, study_name,
                                      study_protocol.every_study_knobs())
    return {k: _axis(f"knobs[{k!r}]", v, scalar_ok=False) for k, v in given.items()}


def _fields(exp: Experiment, section: str) -> set[str]:
    """What an override may set in ``section``: its saved keys and its dataclass's fields
    (a field at its default may be left out of ``to_dict``, e.g. ``train.snapshots``)."""
    obj = getattr(exp, section)
    names = set(exp.to_dict()[section])
    if dataclasses.is_dataclass(obj):
        names |= {f.name for f in dataclasses.fields(obj) if f.init}
    return names


def run_sweep(grid: dict[str, Any] | str | Path, *, cache_dir: str | Path | None = None,
              backend: str = "auto", address: str | None = None, out: str | Path | None = None,
              retries: int | None = None, device: str = "auto", progress: bool = True,
              workers: int | None = None, gpu_fraction: float = 0.25,
              keep_ray: bool = False, lock_timeout: float | None = None,
              confirm_cost: bool = False,
              log: Callable[[str], None] | None = print) -> SweepResult:
    """Run every trial of ``grid`` (a spec dict or a JSON/YAML file) into the zoo at
    ``cache_dir`` and write the table (``out``, default ``<zoo>/sweeps/<name>.csv``).

    ``backend``: auto (Ray when installed, else local; an embedded Ray that cannot start falls
    back to local processes, with one line), ray (a Ray that cannot start fails) or local. ``address``: join that Ray
    cluster ('auto', 'host:6379', 'ray://host:10001') instead of starting one. ``retries``
    overrides the spec's. ``workers``: trials at once on an embedded Ray (default: the free cores,
    ``devices.choose_threads``). ``gpu_fraction``: the GPU share each Ray task asks for on CUDA.
    ``keep_ray``: leave an embedded Ray this call started running for the next sweep of this
    process (a notebook's several grids start it once; it stops when the process exits).
    ``lock_timeout``: the longest wait for another process's lock on a trial's entry.
    ``confirm_cost``: train the trials at ``smoke`` even above its budget (the cost of the
    trials to train is said first: ``models.reference.training_cost``).
    ``device``: where the trials train (``"auto"``: CUDA, else MPS, else CPU); ``progress``: a
    live line; ``log``: a print-like function for the run's lines (None: quiet).
    Ctrl-C cancels the pending trials, writes the table (``cancelled`` rows) and re-raises.
    Returns the ``SweepResult`` (``.table``: one row per trial); raises ``ValueError`` for a bad
    option or grid value, or a trial the preflight refuses, before any trial trains.
    """
    which, device, zoo, out = check_options(cache_dir=cache_dir, backend=backend, address=address,
                                            out=out, retries=retries, device=device,
                                            gpu_fraction=gpu_fraction, workers=workers,
                                            grid=grid if isinstance(grid, (str, Path)) else None)
    spec = load_grid(grid) if isinstance(grid, (str, Path)) else grid
    stem = Path(grid).stem if isinstance(grid, (str, Path)) else "sweep"
    trials = expand_grid(spec)
    for name, at in {(t.experiment, t.setting) for t in trials if t.knobs}:
        experiments.check_knobs_reach(name, at)  # a knob reaching no run: its rows would lie
    check_one_row_per_run(trials)
    retries = check_retries(spec.get("retries", 1) if retries is None else retries)
    path = out if out is not None else zoo.root / "sweeps" / f"{sweep_name(spec, stem)}.csv"
    missing = {str(zoo.path(t.exp, t.tag)): t for t in trials if not zoo.has(t.exp, t.tag)}
    confirm_cost = check_bool("confirm_cost", confirm_cost)
    check(log is None or callable(log), "log", log, "None or a callable taking one line")
    preflight_all(list(missing.values()), device if not address else "cpu")  # then the cost
    training_cost([t.exp for t in missing.values() if t.size == "smoke"], "smoke",
                  confirmed=confirm_cost)  # smoke's budget: refused before any work
    training_cost([t.exp for t in missing.values()], None, log=log)
    return run_trials(trials, spec, which=which, device=device, zoo=zoo, path=path,
                      retries=retries, address=address, progress=progress, workers=workers,
                      gpu_fraction=gpu_fraction, keep_ray=keep_ray, lock_timeout=lock_timeout,
                      log=log, fallback=backend == "auto")
