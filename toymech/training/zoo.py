"""The model zoo: trained models cached on disk under a hash of their full configuration.

An entry is a folder ``<cache>/<task>-<key>/`` holding ``model.safetensors`` and
``config.json`` (task, model and train configs, the metrics history, wall time, device). The
key hashes the task, model and train configs plus a caller-given ``tag`` (use it when
callbacks add to the history), NOT the device: a model trained on a GPU is reused on a laptop.
Entries are written atomically (see ``checkpoints.write_folder_atomically``).

Location: ``cache_dir`` argument, else ``$TOYMECH_CACHE``, else ``~/.cache/toymech``.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import torch
from transformer_lens import HookedTransformer

from ..core import check, jsonable
from ..devices import resolve_device
from ..models import BaselineConfig, ModelConfig, build_model, config_from_dict
from ..tasks import Task, from_dict as task_from_dict
from . import checkpoints
from .config import TrainConfig
from .loop import Callback, TrainResult, train, train_stacked


def default_cache_dir() -> Path:
    env = os.environ.get("TOYMECH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "toymech"


@dataclass
class Experiment:
    """Everything that defines a trained model: a task, a model config and a train config."""

    task: Task
    model: ModelConfig | BaselineConfig
    train: TrainConfig
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task.to_dict(), "model": self.model.to_dict(),
                "train": self.train.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Experiment":
        check(isinstance(d, dict), "experiment", type(d).__name__,
              "a JSON object with task, model and train")
        for key in ("task", "model", "train"):
            if key not in d:
                raise ValueError(f"experiment is missing {key!r}: it needs task, model and train")
        unknown = sorted(set(d) - {"name", "task", "model", "train"})
        check(not unknown, "experiment key", unknown[0] if unknown else None,
              "one of name, task, model, train")
        return cls(task_from_dict(d["task"]), config_from_dict(d["model"]),
                   TrainConfig.from_dict(d["train"]), d.get("name", ""))

    def key(self, tag: str = "") -> str:
        d = self.to_dict()
        d.pop("name")
        blob = json.dumps(jsonable({**d, "tag": tag}), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class Named:
    """A named experiment: ``make(size, seed) -> Experiment`` (see ``toymech.experiments``)."""

    name: str
    description: str
    make: Callable[[str, int], Experiment]
    study: str = ""


@dataclass
class ZooEntry:
    model: HookedTransformer
    meta: dict[str, Any]
    loaded: bool  # True: read from the cache; False: trained now
    path: Path
    history: list[dict[str, float]] = field(default_factory=list)

    @property
    def final(self) -> dict[str, float]:
        return self.history[-1] if self.history else {}


class Zoo:
    def __init__(self, cache_dir: str | Path | None = None):
        self.root = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()

    def path(self, exp: Experiment, tag: str = "") -> Path:
        return self.root / f"{exp.task.name}-{exp.key(tag)}"

    def has(self, exp: Experiment, tag: str = "") -> bool:
        return (self.path(exp, tag) / "config.json").is_file()

    def load(self, exp: Experiment, device: str | torch.device = "auto", tag: str = "",
             log=print) -> ZooEntry:
        path = self.path(exp, tag)
        model, meta = checkpoints.load_model(path, resolve_device(device))
        if log:
            log(f"[toymech] loaded {exp.name or exp.task.name} from the zoo ({path.name}; "
                f"trained on {meta.get('device')} in {meta.get('seconds', 0):.0f} s)")
        return ZooEntry(model, meta, True, path, meta.get("history", []))

    def store(self, exp: Experiment, result: TrainResult, device: torch.device, tag: str = "",
              **extra: Any) -> ZooEntry:
        """Write a trained model into the zoo (the only place models are written)."""
        path = self.path(exp, tag)
        meta = {**exp.to_dict(), "tag": tag, "history": result.history,
                "seconds": result.seconds, "device": str(device), "trainable": result.trainable,
                "frozen": result.frozen, "created": time.strftime("%Y-%m-%dT%H:%M:%S"), **extra}
        checkpoints.save_model(path, result.model, meta)
        return ZooEntry(result.model, meta, False, path, result.history)

    def get_or_train(self, exp: Experiment, *, device: str | torch.device = "auto",
                     callbacks: Iterable[Callback] = (), tag: str = "", retrain: bool = False,
                     progress: bool = True, log=print) -> ZooEntry:
        """Load ``exp`` from the cache, or train it (and store it) if it is not there."""
        dev = resolve_device(device)
        if not retrain and self.has(exp, tag):
            return self.load(exp, dev, tag, log)
        model = build_model(exp.model, dev)
        result = train(model, exp.task, exp.train, device=dev, callbacks=callbacks,
                       progress=progress, log=log)
        return self.store(exp, result, dev, tag)

    def get_or_train_many(self, exps: Sequence[Experiment], *, device: str | torch.device = "auto",
                          callbacks: Sequence[Iterable[Callback]] | None = None, tag: str = "",
                          stacked: bool | None = None, progress: bool = False, log=None
                          ) -> list[ZooEntry]:
        """``get_or_train`` for each experiment; the missing ones that differ only in their seeds
        train together as stacked seeds when ``stacked`` (None: where it was measured to pay,
        see ``stacking_pays``)."""
        dev = resolve_device(device)
        exps = list(exps)
        cbs = [list(c) for c in callbacks] if callbacks is not None else [[] for _ in exps]
        missing = [i for i, e in enumerate(exps) if not self.has(e, tag)]
        stack = stacked if stacked is not None else stacking_pays(exps[0], dev) if exps else False
        if stack and len(missing) > 1 and _same_but_seed([exps[i] for i in missing]):
            todo = [exps[i] for i in missing]
            models = [build_model(e.model, dev) for e in todo]
            results = train_stacked(models, todo[0].task, [e.train for e in todo], device=dev,
                                    callbacks=[cbs[i] for i in missing], progress=progress,
                                    log=log)
            for e, r in zip(todo, results):
                self.store(e, r, dev, tag, stacked=len(todo))
        return [self.get_or_train(e, device=dev, callbacks=cbs[i], tag=tag, progress=progress,
                                  log=log) for i, e in enumerate(exps)]

    def entries(self) -> list[dict[str, Any]]:
        """Metadata of every cached model (newest first)."""
        metas = []
        for cfg in self.root.glob("*/config.json"):
            try:
                meta = json.loads(cfg.read_text())
            except (OSError, json.JSONDecodeError):
                continue  # unreadable entries are skipped, never deleted
            meta["path"] = str(cfg.parent)
            metas.append(meta)
        return sorted(metas, key=lambda m: m.get("created", ""), reverse=True)


def _same_but_seed(exps: Sequence[Experiment]) -> bool:
    """True when the experiments differ only in their seeds (model and train)."""
    def strip(e: Experiment):
        model = {k: v for k, v in e.model.to_dict().items() if k != "seed"}
        return e.task.to_dict(), model, e.train.replace(seed=0)
    first = strip(exps[0])
    return all(strip(e) == first for e in exps[1:])


def stacking_pays(exp: Experiment, device: torch.device) -> bool:
    """Whether stacked seeds beat a loop of single runs for models like ``exp`` on ``device``.

    Measured (benchmarks/bench_multiseed.py, one CPU thread): 1.5x at width 16, none at width
    64. On a GPU one toy model uses a sliver of the device, so stacking always pays there.
    """
    return device.type == "cuda" or getattr(exp.model, "d_model", 10**9) <= 16
