"""Resuming a single run: the training checkpoints the loop writes and reads back.

A checkpoint (``save_training_checkpoint``) holds the weights, the optimizer and scheduler
states, the data generator's state, the history and the snapshots so far: with it a run
resumes bit-for-bit on CPU (``train(..., resume_from=folder)``).
"""

from __future__ import annotations

from pathlib import Path

import torch

from ..tasks.base import Task
from . import checkpoints
from .config import TrainConfig


def _resume(folder, model, task: Task, cfg: TrainConfig, opt, sched, gen, dev):
    state = checkpoints.load_train_state(Path(folder))
    saved = checkpoints.read_meta(Path(folder))
    for key, ours in (("model", model.toymech_config.to_dict()), ("train", cfg.to_dict()),
                      ("task", task.to_dict())):
        theirs = saved.get(key, {})
        diff = [k for k in set(ours) | set(theirs)
                if checkpoints.jsonable(ours.get(k)) != theirs.get(k)]
        if diff:
            k = sorted(diff)[0]
            raise ValueError(f"resume_from={str(folder)!r} does not match this run: "
                             f"{key}.{k} is {theirs.get(k)!r} there, {ours.get(k)!r} here")
    weights = checkpoints.load_file_state(Path(folder))
    checkpoints.load_state_checked(model, {k: v.to(dev) for k, v in weights.items()}, str(folder))
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    gen.set_state(state["generator"].to(gen.get_state().device))
    return state["history"], int(state["step"]), dict(state.get("snapshots", {}))


def save_training_checkpoint(folder: Path, model, task: Task, cfg: TrainConfig, opt, sched,
                             data_gen: torch.Generator, history, step: int, *,
                             snapshots: dict[int, dict[str, torch.Tensor]] | None = None) -> Path:
    train_state = {"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                   "generator": data_gen.get_state().cpu(), "history": history, "step": step}
    if snapshots:  # those taken so far, so that a resumed run ends with all of them
        train_state["snapshots"] = snapshots
    meta = {"task": task.to_dict(), "train": cfg.to_dict(), "step": step,
            "metrics": history[-1] if history else {}}
    return checkpoints.save_model(folder, model, meta, train_state)


def latest_checkpoint(checkpoint_dir: str | Path) -> Path | None:
    """The newest complete ``step_*`` folder (temporary folders are hidden and skipped)."""
    folders = sorted(Path(checkpoint_dir).glob("step_*"))
    return folders[-1] if folders else None
