"""Checkpoints: a folder with ``model.safetensors`` + ``config.json`` (+ ``train_state.pt`` for
resuming), written atomically: everything goes to a hidden temporary folder beside the target,
which is renamed into place only once complete, so an interrupted run never leaves a half-written
checkpoint where a reader would find it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable

import torch
from safetensors.torch import load_file, save_file

import toymech

from ..core import jsonable
from ..models import build_model, config_from_dict, move


def write_folder_atomically(target: Path, writers: dict[str, Callable[[Path], None]]) -> Path:
    """Write each ``name -> writer(path)`` into a temporary folder, then rename it to ``target``.

    An existing ``target`` is replaced only after the new folder is complete.
    """
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}.tmp-", dir=target.parent))
    try:
        for name, writer in writers.items():
            writer(tmp / name)
        if target.exists():
            old = target.with_name(f".{target.name}.old-{os.getpid()}")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target


def _write_json(obj: Any) -> Callable[[Path], None]:
    def write(path: Path) -> None:
        path.write_text(json.dumps(jsonable(obj), indent=1, sort_keys=True))
    return write


def _state_dict(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    # safetensors refuses shared or non-contiguous tensors; copies are cheap for toy models.
    return {k: v.detach().cpu().contiguous().clone() for k, v in model.state_dict().items()}


def save_model(target: Path, model: torch.nn.Module, meta: dict[str, Any],
               train_state: dict[str, Any] | None = None) -> Path:
    """Save weights + JSON metadata (which must hold the model config under ``"model"``)."""
    cfg = model.toymech_config
    meta = {"toymech_version": toymech.__version__, **meta, "model": cfg.to_dict()}
    hooked = getattr(model, "cfg", None)
    if hasattr(hooked, "to_dict"):
        meta["hooked_config"] = hooked.to_dict()
    writers: dict[str, Callable[[Path], None]] = {
        "model.safetensors": lambda p: save_file(_state_dict(model), str(p)),
        "config.json": _write_json(meta),
    }
    if train_state is not None:
        writers["train_state.pt"] = lambda p: torch.save(train_state, p)
    return write_folder_atomically(Path(target), writers)


def read_meta(folder: Path) -> dict[str, Any]:
    path = Path(folder) / "config.json"
    if not path.is_file():
        raise ValueError(f"checkpoint={str(folder)!r} is not a toymech checkpoint: no config.json")
    return json.loads(path.read_text())


def load_model(folder: Path, device: str | torch.device = "cpu"):
    """Rebuild the model from its saved config and load its weights. Returns (model, meta)."""
    meta = read_meta(folder)
    cfg = config_from_dict(meta["model"])
    model = build_model(cfg)
    state = load_file(str(Path(folder) / "model.safetensors"))
    load_state_checked(model, state, str(folder))
    return move(model, device), meta


def load_state_checked(model: torch.nn.Module, state: dict[str, torch.Tensor], source: str) -> None:
    """``load_state_dict`` with a ValueError naming the first mismatched tensor."""
    own = model.state_dict()
    missing = sorted(set(own) - set(state))
    unexpected = sorted(set(state) - set(own))
    if missing or unexpected:
        raise ValueError(f"checkpoint={source!r} does not match the model: missing "
                         f"{missing[:3]}, unexpected {unexpected[:3]}")
    for k, v in state.items():
        if tuple(v.shape) != tuple(own[k].shape):
            raise ValueError(f"checkpoint={source!r} does not match the model: {k} has shape "
                             f"{tuple(v.shape)}, the model expects {tuple(own[k].shape)}")
    model.load_state_dict(state, strict=False)  # non-persistent buffers are not in the file


def load_train_state(folder: Path) -> dict[str, Any]:
    path = Path(folder) / "train_state.pt"
    if not path.is_file():
        raise ValueError(f"checkpoint={str(folder)!r} has no train_state.pt: it cannot be resumed")
    return torch.load(path, map_location="cpu", weights_only=True)


def load_file_state(folder: Path) -> dict[str, torch.Tensor]:
    return load_file(str(Path(folder) / "model.safetensors"))
