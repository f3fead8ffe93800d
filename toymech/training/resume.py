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

# What a longer run may change when it continues a shorter one (``continue_shorter``): none of them moves
# the weights of a constant-lr run (evaluation and snapshots draw no training data).
EXTENDABLE = ("steps", "eval_every", "snapshots", "checkpoint_every")


def extend_refusal(saved_train: dict, saved_step: int, cfg: TrainConfig) -> str | None:
    """Why a run saved at ``saved_step`` with ``saved_train`` cannot be continued into ``cfg``
    (None: it can). The continued run must equal training ``cfg`` from step 0: the same
    settings apart from ``EXTENDABLE``, a constant learning rate whose warm-up is over by the
    saved step, and no more steps saved than ``cfg`` runs."""
    if cfg.schedule != "constant":
        return f"schedule={cfg.schedule!r}: only a constant learning rate continues unchanged"
    if cfg.warmup_steps > saved_step:
        return f"warmup_steps={cfg.warmup_steps} is not over by the saved step {saved_step}"
    if saved_step > cfg.steps:
        return f"the saved run is at step {saved_step}, past this run's steps={cfg.steps}"
    ours = cfg.to_dict()
    diff = sorted(k for k in set(ours) | set(saved_train) if k not in EXTENDABLE
                  and checkpoints.jsonable(ours.get(k)) != saved_train.get(k))
    if diff:
        return f"train.{diff[0]} is {saved_train.get(diff[0])!r} there, {ours.get(diff[0])!r} here"
    return None


def resume_state(folder, model, task: Task, cfg: TrainConfig, opt, sched, gen, dev,
            continue_shorter: bool = False):
    saved, weights, state = checkpoints.load_for_resume(Path(folder))
    if continue_shorter:
        why = extend_refusal(saved.get("train", {}), int(state["step"]), cfg)
        if why:
            raise ValueError(f"resume_from={str(folder)!r} cannot be continued into this run: "
                             f"{why}")
    for key, ours in (("model", model.toymech_config.to_dict()), ("train", cfg.to_dict()),
                      ("task", task.to_dict())):
        theirs = saved.get(key, {})
        diff = [k for k in set(ours) | set(theirs)
                if checkpoints.jsonable(ours.get(k)) != theirs.get(k)
                and not (continue_shorter and key == "train" and k in EXTENDABLE)]
        if diff:
            k = sorted(diff)[0]
            raise ValueError(f"resume_from={str(folder)!r} does not match this run: "
                             f"{key}.{k} is {theirs.get(k)!r} there, {ours.get(k)!r} here")
    checkpoints.load_state_checked(model, {k: v.to(dev) for k, v in weights.items()}, str(folder))
    opt.load_state_dict(state["optimizer"])
    sched.load_state_dict(state["scheduler"])
    gen.set_state(state["generator"].to(gen.get_state().device))
    snapshots = state.get("snapshots")
    if snapshots is None and saved.get("snapshot_steps"):  # a zoo entry keeps them beside
        snapshots = checkpoints.load_snapshots(Path(folder), saved)
    return state["history"], int(state["step"]), dict(snapshots or {})


def save_training_checkpoint(folder: Path, model, task: Task, cfg: TrainConfig, opt, sched,
                             data_gen: torch.Generator, history, step: int, *,
                             snapshots: dict[int, dict[str, torch.Tensor]] | None = None) -> Path:
    """Write a resumable checkpoint of a run at ``step`` into ``folder`` (``step_<step>``,
    atomically): ``model``'s weights, the ``task`` and ``cfg``, the optimizer ``opt`` and
    scheduler ``sched`` states, the data generator ``data_gen``'s state, the ``history`` so far
    and the weight ``snapshots`` kept; returns the checkpoint's folder."""
    train_state = {"optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                   "generator": data_gen.get_state().cpu(), "history": history, "step": step}
    if snapshots:  # those taken so far, so that a resumed run ends with all of them
        train_state["snapshots"] = snapshots
    meta = {"task": task.to_dict(), "train": cfg.to_dict(), "step": step,
            "metrics": history[-1] if history else {}}
    return checkpoints.save_model(folder, model, meta, train_state)


def latest_checkpoint(checkpoint_dir: str | Path) -> Path | None:
    """The newest complete ``step_*`` folder of ``checkpoint_dir`` (temporary folders are hidden
    and skipped); None when there is none."""
    folders = sorted(Path(checkpoint_dir).glob("step_*"))
    return folders[-1] if folders else None
