"""What defines a trained model: ``Experiment`` (task + model config + train config) and
``Named`` (a named recipe ``make(size, seed) -> Experiment``, see ``toymech.experiments``).

``Experiment.key(tag)`` hashes the task, model and train configs plus a caller-given ``tag``
(never the name or the device): the zoo stores a model under it. ``seedless_key`` is the same
without the seeds: equal for runs that can train together as stacked seeds.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import check, is_int, jsonable
from ..models import BaselineConfig, ModelConfig, config_from_dict
from ..models.config import BASELINE_KINDS
from ..tasks import Task
from ..tasks import from_dict as task_from_dict
from .config import TrainConfig

SECTIONS = ("task", "model", "train")


@dataclass
class Experiment:
    """Everything that defines a trained model: a task, a model config and a train config."""

    task: Task
    model: ModelConfig | BaselineConfig
    train: TrainConfig
    name: str = ""

    def __post_init__(self) -> None:
        check(isinstance(self.task, Task), "task", self.task, "a toymech Task (toymech.tasks.get)")
        check(isinstance(self.model, (ModelConfig, BaselineConfig)), "model", self.model,
              "a ModelConfig or BaselineConfig")
        check(isinstance(self.train, TrainConfig), "train", self.train, "a TrainConfig")
        check(isinstance(self.name, str), "name", self.name, "a string ('' for none)")

    def to_dict(self) -> dict[str, Any]:
        """The experiment as JSON-ready data (name, task, model and train configs)."""
        return {"name": self.name, "task": self.task.to_dict(), "model": self.model.to_dict(),
                "train": self.train.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Experiment:
        """The experiment ``to_dict`` wrote (``d``); ``ValueError`` naming a missing or bad
        section."""
        check(isinstance(d, dict), "experiment", type(d).__name__,
              "a JSON object with task, model and train")
        for key in SECTIONS:
            if key not in d:
                raise ValueError(f"experiment is missing {key!r}: it needs task, model and train")
        unknown = sorted(set(d) - {"name", *SECTIONS})
        check(not unknown, "experiment key", unknown[0] if unknown else None,
              "one of name, task, model, train")
        _check_baseline(d["model"])
        return cls(task_from_dict(d["task"]), config_from_dict(d["model"]),
                   TrainConfig.from_dict(d["train"]), d.get("name", ""))

    def key(self, tag: str = "") -> str:
        """The zoo key: a hash of the task, model and train configs and ``tag`` (not the name,
        not the device)."""
        d = self.to_dict()
        d.pop("name")
        blob = json.dumps(jsonable({**d, "tag": tag}), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


def _check_baseline(d: Any) -> None:
    """A baseline model config (one with a ``kind``) names its missing fields (the dataclass
    would fail with a TypeError)."""
    if not isinstance(d, dict) or "kind" not in d:
        return  # config_from_dict names what is wrong
    check(d["kind"] in BASELINE_KINDS, "model kind", d["kind"],
          f"one of {', '.join(BASELINE_KINDS)} (or no kind: a transformer)")
    need = [f.name for f in dataclasses.fields(BaselineConfig)
            if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]
    missing = [n for n in need if n not in d]
    if missing:
        raise ValueError(f"baseline config is missing {missing[0]!r}: it needs {', '.join(need)}")


@dataclass(frozen=True)
class Named:
    """A named experiment: ``make(setting, seed) -> Experiment`` (see ``toymech.experiments``;
    ``setting``: a size name or a ``core.Setting``, whose knobs its study applies), and the
    name of the ``study`` it belongs to ("" for none)."""

    name: str
    description: str
    make: Callable[[Any, int], Experiment]
    study: str = ""


def seedless_key(exp: Experiment) -> str:
    """What defines ``exp`` apart from its seeds (and name): equal for runs that differ only in
    their seeds, i.e. that can train together as stacked seeds."""
    d = exp.to_dict()
    d.pop("name", None)
    d["model"].pop("seed", None)
    d["train"].pop("seed", None)
    return json.dumps(jsonable(d), sort_keys=True)


def apply_overrides(exp: Experiment, overrides: dict[str, Any]) -> Experiment:
    """``exp`` with dotted ``section.field`` values replaced (checked by ``from_dict``): the one
    way a sweep grid, a map or a study's knobs change an experiment. Derived fields follow their
    inputs unless given: ``d_head``/``d_mlp`` follow ``d_model`` (and ``n_heads``), the model's
    vocabulary and context follow a changed task, ``eval_every`` and ``warmup_steps`` shrink with
    ``train.steps``. Values equal to the experiment's own give back the same experiment (the same
    zoo key)."""
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
