"""What defines a trained model: ``Experiment`` (task + model config + train config) and
``Named`` (a named recipe ``make(size, seed) -> Experiment``, see ``toymech.experiments``).

``Experiment.key(tag)`` hashes the task, model and train configs plus a caller-given ``tag``
(never the name or the device): the zoo stores a model under it. ``seedless_key`` is the same
without the seeds: equal for runs that can train together as stacked seeds.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any, Callable

from ..core import check, jsonable
from ..models import BaselineConfig, ModelConfig, config_from_dict
from ..models.config import BASELINE_KINDS
from ..tasks import Task, from_dict as task_from_dict
from .config import TrainConfig

_SECTIONS = ("task", "model", "train")


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
        return {"name": self.name, "task": self.task.to_dict(), "model": self.model.to_dict(),
                "train": self.train.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Experiment":
        check(isinstance(d, dict), "experiment", type(d).__name__,
              "a JSON object with task, model and train")
        for key in _SECTIONS:
            if key not in d:
                raise ValueError(f"experiment is missing {key!r}: it needs task, model and train")
        unknown = sorted(set(d) - {"name", *_SECTIONS})
        check(not unknown, "experiment key", unknown[0] if unknown else None,
              "one of name, task, model, train")
        _check_baseline(d["model"])
        return cls(task_from_dict(d["task"]), config_from_dict(d["model"]),
                   TrainConfig.from_dict(d["train"]), d.get("name", ""))

    def key(self, tag: str = "") -> str:
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
    """A named experiment: ``make(size, seed) -> Experiment`` (see ``toymech.experiments``)."""

    name: str
    description: str
    make: Callable[[str, int], Experiment]
    study: str = ""


def seedless_key(exp: Experiment) -> str:
    """What defines ``exp`` apart from its seeds (and name): equal for runs that differ only in
    their seeds, i.e. that can train together as stacked seeds."""
    d = exp.to_dict()
    d.pop("name", None)
    d["model"].pop("seed", None)
    d["train"].pop("seed", None)
    return json.dumps(jsonable(d), sort_keys=True)
