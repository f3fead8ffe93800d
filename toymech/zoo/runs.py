"""How the zoo gets a missing run trained: the training policy beside the store.

* Continuing: a run whose setting the zoo already holds a shorter run of (same model, task, tag
  and training apart from the steps, a constant learning rate, its training state kept) continues
  the longest such run instead of starting from step 0 (``longest_continuable``,
  ``train_or_continue``); the result equals training from step 0, and the entry records where it
  continued from. A run that cannot be continued after all (a damaged training state, say)
  trains from step 0 and says so in one line.
* Stacking: missing runs that share a model shape and differ in training only by their seeds
  train together as one stacked program where that pays (``train_many``); each is then stored
  under its own entry, as a single run would be.

The store (``zoo.store.Zoo``) keeps what is on disk: keys, verified loads, atomic writes, locks,
quarantine. It calls into this module for the training, never the other way round.
"""

from __future__ import annotations

import json
import pickle
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core import jsonable
from ..training import checkpoints, live
from ..training.experiment import Experiment
from ..training.loop import TrainResult, train, train_stacked
from ..training.preflight import preflight
from ..training.resume import extend_refusal
from ..training.stacking import stack_groups, stacking_pays


@dataclass(frozen=True)
class ContinuableRun:
    """A zoo entry a longer run can continue: its folder and the step it stopped at."""
    path: Path
    step: int


def notice(log, line: str) -> None:
    """A line the user must see: through ``log``, else on stderr (quiet never hides it)."""
    (log or (lambda text: print(text, file=sys.stderr, flush=True)))(line)


def longest_continuable(root: Path, exp: Experiment, tag: str = "") -> ContinuableRun | None:
    """The longest shorter run of ``exp``'s setting in the zoo at ``root`` that ``exp`` can
    continue: same model, task and tag, training equal apart from the steps and what only
    schedules evaluation and snapshots, a constant learning rate, its training state kept
    (``resume.extend_refusal``). None if there is none (or the zoo has no folder yet)."""
    if exp.train.schedule != "constant" or not root.is_dir():
        return None
    want = json.loads(json.dumps(jsonable(exp.to_dict())))  # as config.json reads back
    best = None
    for folder in root.iterdir():
        if folder.name.startswith(".") or not (folder / "train_state.pt").is_file():
            continue
        try:
            meta = checkpoints.read_meta(folder)
        except (OSError, ValueError):
            continue
        if (not meta.get("continuable") or meta.get("tag", "") != tag
                or meta.get("model") != want["model"] or meta.get("task") != want["task"]):
            continue
        history = meta.get("history") or [{}]
        step = int(history[-1].get("stop_step", meta.get("train", {}).get("steps", 0)))
        if step >= exp.train.steps or extend_refusal(meta.get("train", {}), step, exp.train):
            continue
        if best is None or step > best.step:
            best = ContinuableRun(folder, step)
    return best


def train_or_continue(root: Path, model, exp: Experiment, tag: str, dev, callbacks, progress: bool,
                      log) -> tuple[TrainResult, dict[str, Any]]:
    """Train ``exp`` on ``model`` (the preflight's), continuing the longest continuable run the
    zoo at ``root`` holds; returns the result and what the entry records of it
    (``continued_from``, ``continued_at``; nothing for a run from step 0)."""
    base = longest_continuable(root, exp, tag)
    if base is not None:
        try:
            result = train(model, exp.task, exp.train, device=dev, callbacks=callbacks,
                           resume_from=base.path, continue_shorter=True, progress=progress, log=log)
            notice(log, f"[toymech] continued {base.path.name} (step {base.step}) to step "
                        f"{exp.train.steps}")
            return result, {"continued_from": base.path.name, "continued_at": base.step}
        except (ValueError, RuntimeError, OSError, KeyError, EOFError,
                pickle.UnpicklingError) as exc:
            notice(log, f"[toymech] could not continue {base.path.name} ({exc}); training "
                        "from step 0")
            model = preflight(exp, dev, extra_metrics=bool(callbacks)).model
    return train(model, exp.task, exp.train, device=dev, callbacks=callbacks,
                 progress=progress, log=log), {}


def train_many(zoo: Any, exps: list[Experiment], cbs: list[list], dev, tag: str,
               stacked: bool | None, progress: bool, log) -> list[Any]:
    """The entries (``ZooEntry``) of ``exps`` in ``zoo`` (a ``Zoo``: the store imports this
    module, so it is not imported here; arguments checked by ``Zoo.get_or_train_many``): the
    missing runs of one ``stack_key`` train as one stacked program when ``stacked`` (None: where
    ``stacking_pays``), every other one through ``Zoo.get_or_train``."""
    missing = [i for i, e in enumerate(exps) if not zoo.has(e, tag)]
    fresh = {}
    for group in stack_groups([exps[i] for i in missing]):
        group = [missing[g] for g in group]
        first = exps[group[0]]
        if len(group) > 1 and (stacked if stacked is not None
                               else stacking_pays(first, dev, len(group))):
            fresh.update(_train_stacked(zoo, [exps[i] for i in group], [cbs[i] for i in group],
                                        group, dev, tag, progress, log))
    return [fresh[i] if i in fresh else
            zoo.get_or_train(e, device=dev, callbacks=cbs[i], tag=tag, progress=progress, log=log)
            for i, e in enumerate(exps)]


def _train_stacked(zoo: Any, todo, cbs, index, dev, tag, progress, log) -> dict[int, Any]:
    """Train ``todo`` (one ``stack_key``) as one stacked program; store each run under its own
    entry's lock. Returns {index: entry}."""
    models = [preflight(e, dev, extra_metrics=bool(c)).model for e, c in zip(todo, cbs)]
    with zoo.writing():
        seeds = ", ".join(str(e.train.seed) for e in todo)
        tasks = {json.dumps(jsonable(e.to_dict()["task"]), sort_keys=True) for e in todo}
        what = (f"seeds {seeds}" if len(tasks) == 1
                else f"{len(todo)} runs ({len(tasks)} task settings)")
        with live.training(f"{todo[0].name or todo[0].task.name} {what} (stacked)"):
            results = train_stacked(models, [e.task for e in todo], [e.train for e in todo],
                                    device=dev, callbacks=cbs, progress=progress, log=log)
        # stored under each entry's lock; the trained models are returned as they are
        return {i: zoo.store(e, r, dev, tag, stacked=len(todo))
                for i, e, r in zip(index, todo, results)}
