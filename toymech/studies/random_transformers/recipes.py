"""Study 3's calibrated recipes: per algorithmic task and mode, the smallest setting found to
show the paper's claim at ``default`` on a CPU, and the named experiments built from them.

The recipes come from the calibration sweeps (``specs/sweeps/rt-calibration-*.yaml``, run with
``toymech sweep``; tables and learning curves in docs/calibration.md). A recipe fixes the width,
learning rate, batch, the most steps, the task's parameters where they differ from the study's
``default`` instance, and a stop rule: the run ends once its held-out accuracy passes
``stop_value`` (``TrainConfig.stop_metric``), so a recipe's cost is what the run needed, not
its step budget. Everything else is the study's recipe (``experiments.train_config``: AdamW,
wd 1e-3, clip 1, linear warm-up then cosine, N(0, 0.02) init, scaled residual projections).

``rt-<task>-normal`` and ``rt-<task>-random`` (``EXPERIMENTS``) are the recipe at ``default``
(``toymech train rt-needle-normal --size default`` trains it into the zoo) and, at ``smoke``
and ``paper``, the study's plan at its widest width (``paper``: the paper's settings).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ...core import Setting, check, size_name
from ...training import Experiment, Named
from .design import ALGORITHMIC, experiment, plan, table_runs

# The metric that says a task is solved: the whole answer on held-out examples (all digits of
# a decimal sum; the paper's single query of the needle).
ANSWER_METRIC = {"modular_addition": "eval_acc", "needle": "eval_first_acc",
                 "decimal_addition": "eval_seq_acc", "parentheses": "eval_acc"}


EMBED_STD = 0.2  # the needle recipes' token-embedding std at init (see RECIPES)


@dataclass(frozen=True)
class Recipe:
    """One calibrated run at ``default``: the numbers the calibration chose (see the module
    docstring); ``measured`` says what it gave there."""

    width: int
    lr: float
    steps: int                   # the budget; the stop rule usually ends the run before
    batch: int
    eval_every: int
    task: dict[str, Any] = field(default_factory=dict)  # changes to the study's default task
    warmup: int | None = None    # None: the study's rule, min(500, steps // 10)
    stop_value: float = 0.99
    embed_std: float | None = None  # token embedding std at init (None: GPT-2's 0.02)
    measured: str = ""
    grid: str = ""               # the calibration grid that trains this run ("": the task's)

    def grid_file(self, task_name: str, mode: str = "random") -> str:
        """The shipped grid (``toymech sweep <it>``) whose table holds this recipe's run."""
        if self.grid:
            return self.grid
        return (f"specs/sweeps/rt-calibration-random-{task_name}.yaml" if mode == "random"
                else "specs/sweeps/rt-calibration-normal.yaml")

    def train_overrides(self, task_name: str) -> dict[str, Any]:
        """``TrainConfig`` fields of the recipe (``experiments.experiment`` keyword arguments)."""
        out = dict(steps=self.steps, lr=self.lr, batch_size=self.batch,
                   eval_every=self.eval_every, stop_metric=ANSWER_METRIC[task_name],
                   stop_value=self.stop_value)
        if self.warmup is not None:
            out["warmup_steps"] = self.warmup
        return out


# The needle's token embeddings are drawn with std EMBED_STD = 0.2 instead of GPT-2's 0.02
# (the positional embedding keeps 0.02): with both at 0.02 the normal needle model sits on the
# "name a listed value" plateau for thousands of steps; with the token embedding ten times
# larger it solves the task in a few hundred (docs/calibration.md). Only E_token changes,
# which every mode trains, so the random transformer's frozen layers are still GPT-2's random
# initialisation. The other tasks keep GPT-2's init: decimal addition, which must attend by
# position, fails at lr 1e-3 with the larger token embedding and solves with GPT-2's.

# From the calibration (docs/calibration.md); one entry per (task, mode).
RECIPES: dict[tuple[str, str], Recipe] = {
    ("modular_addition", "normal"): Recipe(64, 3e-3, 3000, 512, 100, {"p": 59}),
    ("modular_addition", "random"): Recipe(256, 3e-3, 4000, 512, 100, {"p": 59}),
    ("needle", "normal"): Recipe(64, 3e-3, 3000, 128, 100, embed_std=EMBED_STD),
    ("needle", "random"): Recipe(128, 3e-3, 4000, 128, 100, embed_std=EMBED_STD),
    ("decimal_addition", "normal"): Recipe(64, 1e-3, 3000, 128, 100),
    # 10,000 steps: the whole sum passes 0.95 at step 8,000 and ends at 0.983 (digits 0.994;
    # 30 core-minutes, specs/sweeps/rt-calibration-random-decimal_addition-10k.yaml, which trains
    # exactly this run); at 4,000 steps it was 0.76.
    ("decimal_addition", "random"): Recipe(
        256, 1e-3, 10_000, 128, 500,
        grid="specs/sweeps/rt-calibration-random-decimal_addition-10k.yaml"),
    ("parentheses", "normal"): Recipe(64, 1e-3, 3000, 128, 100),
    ("parentheses", "random"): Recipe(64, 1e-3, 1500, 128, 100),
}


def recipe(task_name: str, mode: str) -> Recipe:
    """The calibrated recipe of ``task_name`` in ``mode`` (``normal`` or ``random``)."""
    check(task_name in ALGORITHMIC, "task", task_name, f"one of {', '.join(ALGORITHMIC)}")
    check(mode in ("normal", "random"), "mode", mode, "normal or random")
    return RECIPES[task_name, mode]


def calibrated(task_name: str, mode: str = "random", size: Setting | str = "default", seed: int = 0,
               width: int | None = None, freeze_mode: str | None = None,
               **train_overrides: Any) -> Experiment:
    """The recipe's experiment at ``default`` (``width``, ``freeze_mode`` and train fields may
    be changed: a width sweep or an ablation with the recipe's schedule); the study's plan at
    its widest width at ``smoke`` and ``paper``.

    ``freeze_mode``: train with another freezing mode (``E_token+U``, ...) on the recipe of
    ``mode``. ``size``: a size name or a ``Setting`` (its ``recipe_width`` knob, on the plan,
    sets ``width`` where none is given: the ladder's rung at that width)."""
    run_mode = freeze_mode or mode
    if width is None:
        width = plan(size).recipe_width or None
    if size_name(size) != "default":
        return experiment(task_name, width or plan(size).widths[-1], run_mode, size, seed,
                          **train_overrides)
    r = recipe(task_name, mode)
    exp = experiment(task_name, width or r.width, run_mode, size, seed, task_overrides=r.task,
                     **{**r.train_overrides(task_name), **train_overrides})
    if r.embed_std is not None:
        exp.model = exp.model.replace(variant_options={"embed_std": r.embed_std})
    return exp


def knob_runs(size: Setting | str) -> list[Experiment]:
    """The runs a knob is judged by (``Study.with_knobs``): the accuracy table's and the named
    recipe runs (``recipe_width`` changes only those)."""
    return [*table_runs(size),
            *(calibrated(t, m, size) for t in ALGORITHMIC for m in ("random", "normal"))]


def _named(task_name: str, mode: str):
    def make(size: Setting | str, seed: int) -> Experiment:
        return calibrated(task_name, mode, size, seed)
    return make


EXPERIMENTS = {
    f"rt-{t}-{m}": Named(f"rt-{t}-{m}", f"random-transformers: {t}, {m}; at default the "
                         "calibrated recipe (docs/calibration.md), else the plan's widest width",
                         _named(t, m), "random_transformers")
    for t in ALGORITHMIC for m in ("normal", "random")}


CAPPED_EVAL_EVERY = 100  # the logging interval of capped table runs, at most


def table_experiment(task_name: str, width: int, mode: str, size: Setting | str, seed: int
                     ) -> Experiment:
    """A run of the study's table, width sweep or ablations (``mode``: a freezing mode). With the
    size's ``plan.table_steps`` set (``default``): the calibrated recipe of the task (the random
    one for every mode but ``normal``) at ``width``, capped at ``table_steps`` steps, except the
    recipe's own run (normal or random at the recipe's width), which keeps the recipe's budget.
    Else the study's plain
    schedule (``design.experiment``)."""
    p = plan(size)
    if p.table_steps is None or task_name not in ALGORITHMIC:
        return experiment(task_name, width, mode, size, seed)
    base = "normal" if mode == "normal" else "random"
    r = recipe(task_name, base)
    # The recipe's own run (its mode, at its width) keeps the recipe's budget (the stop rule
    # ends it once solved); every other run, the ablations included, is capped at table_steps.
    own = mode == base and width == r.width
    steps = r.steps if own else min(r.steps, p.table_steps)
    # a capped run logs at least every CAPPED_EVAL_EVERY steps (its curve, its stop rule)
    every = {} if own else {"eval_every": min(r.eval_every, CAPPED_EVAL_EVERY)}
    return calibrated(task_name, base, size, seed, width=width,
                      freeze_mode=None if mode == base else mode, steps=steps, **every)


def recipe_table() -> pd.DataFrame:
    """The calibrated recipes, one row per (task, mode): width, learning rate, batch, the step
    budget and the stop rule, the task's changes and the token-embedding init."""
    rows = [{"task": t, "mode": m, "width": r.width, "lr": r.lr, "batch": r.batch,
             "steps (at most)": r.steps, "stops at": f"{ANSWER_METRIC[t]} >= {r.stop_value}",
             "task changes": r.task or "", "token embedding std": r.embed_std or 0.02}
            for (t, m), r in RECIPES.items()]
    return pd.DataFrame(rows).set_index(["task", "mode"])
