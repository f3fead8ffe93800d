"""Where an explorer's model comes from: a ``HookedTransformer`` (with its task), a zoo entry, or
an experiment name (loaded from the zoo, trained there first when absent, with the usual
progress), and the named evaluation sets its study draws for that task."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import torch
from transformer_lens import HookedTransformer

from .. import experiments, studies, tasks
from ..core import Setting, check, check_seed, is_int, seed_for
from ..devices import make_generator
from ..tasks import Batch, Task
from ..zoo import Zoo, ZooEntry

N_SET = 64  # sequences drawn per named set when the study is unknown


@dataclass
class Source:
    """The model to explore and what it was trained on.

    entry: the zoo entry (its snapshots feed ``at_step``), None for a bare model.
    study: the study package whose experiment made it, None when unknown.
    """

    model: HookedTransformer
    task: Task
    entry: ZooEntry | None
    study: Any  # the run's study (a ``studies.protocol.Study``), None for a task's own
    size: Setting  # the run's size, with its variant's knobs
    seed: int

    @property
    def snapshot_steps(self) -> list[int]:
        """The steps of the zoo entry's weight snapshots; empty for a bare model."""
        return self.entry.snapshot_steps if self.entry is not None else []

    @property
    def last_step(self) -> int:
        """The run's last training step (0 when unknown: a bare model)."""
        if self.entry is None:
            return 0
        steps = self.entry.meta.get("train", {}).get("steps", 0)
        return int(steps) if is_int(steps) else 0

    def eval_sets(self) -> dict[str, Batch]:
        """The named evaluation sets of the run's ``eval`` stream: the study's ``eval_sets``
        where the study is known (test, ood, doubled, option1, ...), else the task's own."""
        dev = torch.device("cpu")
        if self.study is not None:
            return self.study.eval_sets(self.task, self.size, self.seed, dev)
        return self.task.eval_sets(N_SET, make_generator(seed_for(self.seed, "eval"), dev))


def study_of(name: str) -> studies.protocol.Study | None:
    """The registered study whose named experiments hold ``name`` (None: a task's own); a
    variant's run (``induction-2l [block_len=4-8]``) belongs to its experiment's study."""
    name = name.split(" [", 1)[0]
    return next((s for s in studies.all_studies() if name in s.named_experiments), None)


def resolve(model: Any, task: Any, size: Any, seed: int, cache_dir: Any,
            variant: Any = None) -> Source:
    """``explore``'s arguments -> a ``Source`` (checked: a ValueError names the bad one).
    ``size``: a size name or a ``Setting``; ``variant``: the experiment's study's knobs on top
    of it (an experiment name only)."""
    size, seed = Setting.of(size), check_seed(seed)
    check(variant is None or isinstance(model, str), "variant", variant,
          "None unless the model is an experiment name (an entry or a model is what it is)")
    check(task is None or isinstance(task, Task), "task", task,
          "None (the model's own) or a toymech Task (toymech.tasks.get)")
    if isinstance(model, str):
        check(model in experiments.names(), "model", model,
              f"a HookedTransformer, a ZooEntry or an experiment name "
              f"({', '.join(experiments.names())})")
        size = experiments.setting(model, size, variant)  # the study's evaluation sets: its own
        exp = experiments.get(model, size, seed)
        entry = Zoo(cache_dir).get_or_train(exp, device="cpu", progress=True)
        return _from_entry(entry, task, size, seed)
    if isinstance(model, ZooEntry):
        return _from_entry(model, task, size, seed)
    check(isinstance(model, HookedTransformer), "model", type(model).__name__,
          "a HookedTransformer, a ZooEntry or an experiment name (toymech list experiments)")
    check(task is not None, "task", task,
          "the model's Task (a bare HookedTransformer does not say what it was trained on)")
    _check_fits(model, task)
    return Source(model.eval(), task, None, None, size, seed)


def _from_entry(entry: ZooEntry, task: Task | None, size: Setting, seed: int) -> Source:
    meta = entry.meta
    task = task if task is not None else tasks.from_dict(meta["task"])
    _check_fits(entry.model, task)
    run_seed = int(meta.get("train", {}).get("seed", seed))
    return Source(entry.model.eval(), task, entry, study_of(meta.get("name", "")), size, run_seed)


def _check_fits(model: HookedTransformer, task: Task) -> None:
    check(model.cfg.d_vocab >= task.d_vocab, "task", task.name,
          f"a task of at most the model's d_vocab={model.cfg.d_vocab} tokens "
          f"(it has {task.d_vocab})")
    check(task.seq_len <= model.cfg.n_ctx, "task", task.name,
          f"a task whose sequences fit the model's context n_ctx={model.cfg.n_ctx} "
          f"(its sequences have seq_len={task.seq_len} tokens)")
    warn_if_not_finite(model, "the model")


def warn_if_not_finite(model: HookedTransformer, what: str) -> bool:
    """Warn (``RuntimeWarning``, naming the parameters) when ``model`` has a NaN or infinite
    weight: every view computed from it (probabilities, losses, attention, attributions) is
    then meaningless. Returns whether all its weights are finite."""
    bad = [name for name, p in model.named_parameters() if not torch.isfinite(p).all()]
    if bad:
        more = f" and {len(bad) - 3} more" if len(bad) > 3 else ""
        warnings.warn(f"{what} has weights that are not finite (NaN or inf) in {', '.join(bad[:3])}"
                      f"{more}: every probability, loss, attention row and attribution shown "
                      "from it is meaningless (a diverged or damaged run)", RuntimeWarning,
                      stacklevel=4)
    return not bad
