"""Named experiments: every study's (``EXPERIMENTS`` of each ``toymech.studies`` package) plus
one for every registered task, so a new task gets a named experiment with no study module.

``toymech.experiments.get("induction-2l", size="default", seed=0)`` -> ``Experiment``.
``size`` is smoke (CI, seconds), default (a laptop CPU, minutes) or paper (the source's full
settings; a GPU helps).

A task's own experiment: a 2-layer, 4-head pre-LN transformer of width 64 with learned
positions, AdamW, trained on the task as it is registered; a task class may adjust it with a
``default_experiment`` class attribute ``{"model": {...}, "train": {...}, "steps": {size: n}}``.
"""

from __future__ import annotations

from typing import Any

from . import studies, tasks
from .core import SIZES, Setting, check, check_seed, size_name, value_text
from .models import ModelConfig
from .training import Experiment, Named, TrainConfig

TASK_STEPS = {"smoke": 20, "default": 1000, "paper": 10_000}
TASK_BATCH = {"smoke": 32, "default": 128, "paper": 256}


def task_experiment(task_name: str, size: Setting | str = "default", seed: int = 0) -> Experiment:
    """The experiment every task gets (see the module docstring): the registered task
    ``task_name`` on a 2-layer transformer, at ``size`` (a size name, or a ``Setting``: a task
    of no study has no knobs) and ``seed``."""
    size, seed = size_name(size), check_seed(seed)
    task = tasks.get(task_name)
    spec: dict[str, Any] = getattr(type(task), "default_experiment", None) or {}
    model = ModelConfig(**{"n_layers": 2, "n_heads": 4, "d_model": 64, "attn_only": False,
                           "normalization": "LN", "positions": "standard",
                           **spec.get("model", {}), "d_vocab": task.d_vocab,
                           "n_ctx": task.seq_len, "seed": seed})
    steps = spec.get("steps", TASK_STEPS)[size]
    train = TrainConfig(**{"steps": steps, "batch_size": TASK_BATCH[size], "lr": 1e-3,
                           "weight_decay": 0.01, "eval_every": max(1, steps // 10),
                           "eval_size": 256 if size == "smoke" else 1024,
                           **spec.get("train", {}), "seed": seed})
    return Experiment(task, model, train, task_name)


def registry() -> dict[str, Named]:
    """Every named experiment: the studies' first, then one per task."""
    out: dict[str, Named] = {}
    for study in studies.all_studies():
        for name, named in study.named_experiments.items():
            check(name not in out, "experiment", name, "a name used once")
            out[name] = named
    for task_name in tasks.names():
        if task_name not in out:
            out[task_name] = Named(
                task_name, f"task {task_name}: a 2-layer transformer on it (no study)",
                lambda size, seed, t=task_name: task_experiment(t, size, seed))
    return out


def check_task_names() -> None:
    """Refuse a task registered from outside the package (a plugin) under the name of a
    study's experiment: its own experiment would be hidden behind the study's (ValueError
    naming the task and its module)."""
    taken = {name: study.name for study in studies.all_studies()
             for name in study.named_experiments}
    for task_name in tasks.names():
        module = tasks.module_of(task_name) or ""
        if task_name in taken and not module.startswith("toymech."):
            check(False, "task", task_name, f"a name no built-in experiment has (study "
                  f"{taken[task_name]!r} has an experiment {task_name!r}; registered by "
                  f"{module})")


def names() -> list[str]:
    """Every named experiment's name, sorted (``toymech list experiments``)."""
    return sorted(registry())


def get(name: str, size: Setting | str = "default", seed: int = 0, variant=None) -> Experiment:
    """The experiment named ``name`` (``names()``) at ``size`` (a size name, or a ``Setting``
    from its study's ``with_knobs``) and ``seed``; ``variant``: its study's knobs on top
    (``{"block_len": "4-8"}``; refused, naming the knobs, for an experiment of no study). Raises
    ``ValueError`` for an unknown name, size, seed or knob. Example:
    ``Zoo().get_or_train(get("induction-2l", size="smoke"))``."""
    return _named(name).make(setting(name, size, variant), check_seed(seed))


def setting(name: str, size: Setting | str = "default", variant=None) -> Setting:
    """The ``Setting`` the experiment named ``name`` is built at: ``size`` (a size name or a
    ``Setting``) with ``variant``'s knobs (a mapping of its study's knob names to values) on top,
    checked by its study's ``with_knobs``; a ValueError for knobs on an experiment of no study.
    What the CLI's ``--size`` and ``--set`` become before anything is built."""
    named, at = _named(name), Setting.of(size)
    if not variant and not at.knobs:
        return at
    check(bool(named.study), "variant", dict(variant or at.knobs), f"no knobs: experiment "
          f"{name!r} belongs to no study (change its fields with a sweep grid's overrides)")
    study = studies.protocol.study(named.study)
    built = study.with_knobs(at, variant)
    check_knobs_reach(name, built)
    return built


def check_knobs_reach(name: str, at: Setting) -> None:
    """A ValueError for a knob of ``at`` that does not change the run of the experiment named
    ``name`` (a knob declared for its study's other experiments: ``n_layers`` on a 1-layer
    model), which would build the plain run while the setting names the variant; as a map
    refuses it."""
    named = _named(name)
    if not at.knobs:
        return
    study = studies.protocol.study(named.study)
    key = named.make(at, 0).key("")
    for k, value in at.knobs.items():
        without = Setting(at.size, {o: v for o, v in at.knobs.items() if o != k})
        try:
            same = named.make(without, 0).key("") == key
        except ValueError:  # the other knobs need this one: it changes the run
            same = False
        check(not same, k, value_text(value),
              f"a knob of experiment {named.name!r}'s run ({k} changes other runs of study "
              f"{study.name!r} only: this run is the same without it); 'toymech list knobs "
              f"{study.name}' says which runs each knob changes")


def _named(name: str) -> Named:
    reg = registry()
    check(isinstance(name, str) and name in reg, "experiment", name,
          f"one of {', '.join(sorted(reg))}")
    return reg[name]


__all__ = ["SIZES", "Named", "Setting", "check_knobs_reach", "check_task_names", "get", "names",
           "registry", "setting", "task_experiment"]
