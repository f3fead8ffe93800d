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
from typing import Any, Iterable

import torch
from transformer_lens import HookedTransformer

from . import checkpoints
from .devices import resolve_device
from .models import ModelConfig, build_model
from .tasks import Task, from_dict as task_from_dict
from .training import Callback, TrainConfig, train


def default_cache_dir() -> Path:
    env = os.environ.get("TOYMECH_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "toymech"


@dataclass
class Experiment:
    """Everything that defines a trained model: a task, a model config and a train config."""

    task: Task
    model: ModelConfig
    train: TrainConfig
    name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "task": self.task.to_dict(), "model": self.model.to_dict(),
                "train": self.train.to_dict()}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Experiment":
        for key in ("task", "model", "train"):
            if key not in d:
                raise ValueError(f"experiment is missing {key!r}: it needs task, model and train")
        return cls(task_from_dict(d["task"]), ModelConfig.from_dict(d["model"]),
                   TrainConfig.from_dict(d["train"]), d.get("name", ""))

    def key(self, tag: str = "") -> str:
        d = self.to_dict()
        d.pop("name")
        blob = json.dumps(checkpoints.jsonable({**d, "tag": tag}), sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]


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

    def get_or_train(self, exp: Experiment, *, device: str | torch.device = "auto",
                     callbacks: Iterable[Callback] = (), tag: str = "", retrain: bool = False,
                     progress: bool = True, log=print) -> ZooEntry:
        """Load ``exp`` from the cache, or train it (and store it) if it is not there."""
        dev = resolve_device(device)
        path = self.path(exp, tag)
        if not retrain and (path / "config.json").is_file():
            model, meta = checkpoints.load_model(path, dev)
            if log:
                log(f"[toymech] loaded {exp.name or exp.task.name} from the zoo ({path.name}; "
                    f"trained on {meta.get('device')} in {meta.get('seconds', 0):.0f} s)")
            return ZooEntry(model, meta, True, path, meta.get("history", []))
        model = build_model(exp.model, dev)
        result = train(model, exp.task, exp.train, device=dev, callbacks=callbacks,
                       progress=progress, log=log)
        meta = {**exp.to_dict(), "tag": tag, "history": result.history,
                "seconds": result.seconds, "device": str(dev), "trainable": result.trainable,
                "frozen": result.frozen, "created": time.strftime("%Y-%m-%dT%H:%M:%S")}
        checkpoints.save_model(path, result.model, meta)
        return ZooEntry(result.model, meta, False, path, result.history)

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
