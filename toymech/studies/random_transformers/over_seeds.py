"""Study 3 over seeds: one seed's named numbers from its trained runs (``measure_seed``), the
same measurement on UNTRAINED models (``untrained_numbers``: the null world every claim must
fail), and the run's findings.

``measure_data(size, seed)`` names the seed's runs the claims read (``Run``: the table its row
joins and the ``Experiment``), the plan's widths and the seed; ``measure_seed(runs, data)``
takes ``runs`` = {name: zoo entry or bare model} for those names (a name without a run is not
measured), computes each row with the function the notebook's tables use (``row_for``,
``circuit_row``, ``baseline_row``, ``concentration_rows``, ``memorization_table``; a recipe's
run: the calibration sweeps' ``calibration.run_row`` of its entry) and ends with ``numbers``.
``measure_seeds`` does it for every seed of the run, from the zoo (it trains nothing).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from ...core import Setting, check, size_name
from ...models import build_model, parameter_counts
from ...training import Experiment, apply_freeze
from ...zoo import Zoo, ZooEntry
from ..claims import Measured
from ..findings import Findings, at_setting, misses, opening, scorecard_sentence
from ..protocol import judged_seeds
from .calibration import run_row
from .claims import SETTINGS, TABLE1, W16, numbers, task_solved
from .design import (
    ALGORITHMIC,
    CALIBRATION,
    FREEZE_MODES,
    SIZES,
    experiment,
    plan,
    size_spec,
    task_for,
)
from .measure import (
    BASELINE_KINDS,
    baseline_exp,
    baseline_row,
    circuit_experiments,
    circuit_row,
    concentration_rows,
    plan_seeds,
    row_for,
)
from .recipes import calibrated, recipe, table_experiment
from .tables import memorization_table

PARTS = ("main", "short", "mem", "lm", "circ", "base", "recipe")  # the tables ``numbers`` reads
WHICH = ("table", "sweep", "every")


@dataclass(frozen=True)
class Run:
    """One run a seed's numbers read: ``part`` (one of ``PARTS``: the table its row joins),
    ``exp`` (what it trains), ``kind`` (a baseline's: one of ``BASELINE_KINDS``)."""

    part: str
    exp: Experiment
    kind: str = ""


@dataclass(frozen=True)
class MeasureData:
    """What ``measure_seed`` measures one seed's runs on: the size, the seed, the plan's
    (small, large) widths, the runs by name, and the concentration probe's models by (task,
    mode) -> the name of a run among ``runs``. Each run's evaluation sets come from its own
    ``eval`` stream (``design.eval_sets``), the probe's from the seed's ``probe`` stream."""

    size: Setting | str
    seed: int
    widths: tuple[int, int]
    runs: dict[str, Run]
    conc: dict[tuple[str, str], str]


def recipe_experiment(task: str, mode: str, size: Setting | str, seed: int) -> Experiment:
    """The run a recipe claim reads at ``seed``: the calibrated recipe at ``default`` (the width
    ladder's rung at the recipe's width); at the other sizes the recipe's width on the size's
    own task and schedule (what the null world measures there)."""
    if size_name(size) == "default":
        return calibrated(task, mode, size, seed)
    return experiment(task, recipe(task, mode).width, mode, size, seed)


def measure_data(size: Setting | str, seed: int, which: str = "table") -> MeasureData:
    """The runs of ``seed`` the claims read, by name. ``which``: ``"table"`` (a seed of the
    accuracy table: the table's, ablations', side studies' and baselines' runs, the width
    sweep's and short-budget runs at it), ``"sweep"`` (a seed past the table's ``table_n_seeds``:
    the width sweep and the short-budget runs only), ``"every"`` (the null world: every
    algorithmic task at both widths in every freezing mode, and everything ``"table"`` has).
    The recipes' runs are named in all three (``recipe_experiment``). Only the widths the claims
    read are named (the plan's small and large)."""
    check(which in WHICH, "which", which, f"one of {', '.join(WHICH)}")
    p = plan(size)
    small, large = p.widths
    runs: dict[str, Run] = {}

    def main(task: str, width: int, modes) -> None:
        for mode in modes:
            runs.setdefault(f"main/{task}-w{width}-{mode}",
                            Run("main", table_experiment(task, width, mode, size, seed)))

    if which in ("table", "every"):
        for task in p.table_tasks:
            main(task, small, ("normal", "random"))
            main(task, large, ("normal", "random") if p.normal_large else ("random",))
        for task in p.ablation_tasks:
            main(task, large, p.ablation_modes)
    if which == "every":
        for task in ALGORITHMIC:
            for width in p.widths:
                main(task, width, FREEZE_MODES)
    modes = ("normal", "random") if p.sweep_normal else ("random",)
    for task in p.sweep_tasks:
        for width in p.sweep_widths:
            if width in p.widths:
                main(task, width, modes)
        if large not in p.sweep_widths:
            main(task, large, modes if p.normal_large else ("random",))
    for task, width, lr in p.short_budget:
        runs[f"short/{task}-w{width}-lr{lr:g}"] = Run(
            "short", experiment(task, width, "random", size, seed, lr=lr))
    conc: dict[tuple[str, str], str] = {}
    if which != "sweep":
        for mode in ("normal", "random"):
            for width in p.memorization_widths:
                runs[f"mem/w{width}-{mode}"] = Run(
                    "mem", experiment("memorization", width, mode, size, seed))
            runs[f"lm/{mode}"] = Run("lm", experiment("char_lm", p.lm_width, mode, size, seed))
            conc.update({(t, mode): f"main/{t}-w{small}-{mode}" for t in p.table_tasks})
            conc[("memorization", mode)] = f"mem/w{p.memorization_widths[-1]}-{mode}"
            conc[("char_lm", mode)] = f"lm/{mode}"
        for (tw, mode, _), exp in circuit_experiments(
                p.circuit_target_widths, p.circuit_student_width, ("normal", "random"), [seed],
                size).items():
            runs[f"circ/t{tw}-{mode}"] = Run("circ", exp)
        for kind in BASELINE_KINDS:
            for task in p.baseline_tasks:
                runs[f"base/{kind}-{task}"] = Run(
                    "base", baseline_exp(kind, task, p.baseline_width, size, seed), kind)
    for task in ALGORITHMIC:
        for mode in ("normal", "random"):
            runs[f"recipe/{task}-{mode}"] = Run("recipe",
                                                recipe_experiment(task, mode, size, seed))
    return MeasureData(size, seed, p.widths, runs, conc)


def _model(run: ZooEntry | torch.nn.Module) -> torch.nn.Module:
    return run.model if isinstance(run, ZooEntry) else run


def _row(run: Run, got: ZooEntry | torch.nn.Module, size: Setting | str) -> dict[str, Any]:
    """``run``'s row, by the function of the notebook's table for its part. A bare model is
    measured as a run that never trained (its trainable parameters counted under its
    freezing; a recipe's row at step 0)."""
    exp, model = run.exp, _model(got)
    meta = (got.meta if isinstance(got, ZooEntry) else
            {"trainable": _trainable(exp)} if run.part == "mem" else None)
    if run.part == "circ":
        return circuit_row(exp, model, size, meta)
    if run.part == "base":
        return baseline_row(run.kind, exp, model, size, meta)
    if run.part == "recipe" and isinstance(got, ZooEntry):
        return run_row(got.meta, "", got.path.name)
    row = row_for(exp, model, size, meta)
    if run.part == "short":
        row["lr"] = exp.train.lr
    if run.part == "recipe":  # untrained: the recipe's setting, held-out accuracy at step 0
        r = recipe(row["task"], row["mode"])
        row = {"task": row["task"], "mode": row["mode"], "seed": row["seed"], "width": r.width,
               "lr": r.lr, "steps": r.steps, "last_step": 0, "held_out_acc": row["acc"]}
    return row


@torch.no_grad()
def measure_seed(runs: Mapping[str, ZooEntry | torch.nn.Module], data: MeasureData
                 ) -> dict[str, float]:
    """One seed's ``numbers``. ``runs``: {name: zoo entry or bare model} for names of
    ``data.runs`` (``measure_data``); ``data``: the seed's ``MeasureData``. Each run's row is
    the notebook table's (module docstring); a name without a run is not measured."""
    rows: dict[str, list[dict[str, Any]]] = {part: [] for part in PARTS}
    for name, run in data.runs.items():
        if name in runs:
            rows[run.part].append(_row(run, runs[name], data.size))
    tables: dict[str, pd.DataFrame] = {part: pd.DataFrame(r) for part, r in rows.items() if r}
    if "mem" in tables:
        tables["mem"] = memorization_table(tables["mem"], task_for("memorization", data.size))
    if "recipe" in tables:
        tables["calibration"] = tables.pop("recipe")
    models = {key: _model(runs[name]) for key, name in data.conc.items() if name in runs}
    if models:
        device = next(next(iter(models.values())).parameters()).device
        tables["conc"] = concentration_rows(
            models, {t: task_for(t, data.size) for t, _ in models},
            size_spec(data.size).probe_n, device=device, seed=data.seed)
    return numbers({"widths": data.widths, "seed": data.seed, **tables})


def seed_runs(zoo: Zoo, data: MeasureData, device: str | torch.device = "cpu",
              recorded: pd.DataFrame | None = None) -> dict[str, ZooEntry]:
    """The zoo's entries of ``data``'s runs (what is not in the zoo is left out: nothing
    trains). A recipe's run counts only where ``recorded`` (the calibration sweeps' and the
    ladder's rows: ``ladder.with_ladder``) lists its entry, the run the sweeps measured."""
    listed = (set() if recorded is None or not len(recorded)
              else {Path(str(e)).name for e in recorded["entry"]})
    out = {}
    for name, run in data.runs.items():
        if run.part == "recipe" and zoo.path(run.exp).name not in listed:
            continue
        if zoo.has(run.exp):
            out[name] = zoo.load(run.exp, device, log=None)
    return out


def measure_seeds(zoo: Zoo, size: Setting | str, seed: int, device: str | torch.device = "cpu", *,
                  n_seeds: int | None = None, recorded: pd.DataFrame | None = None
                  ) -> list[dict[str, float]]:
    """``measure_seed`` for every seed of ``seeds_of(size, seed, n_seeds)``, from the zoo's
    entries (``seed_runs``): the table's seeds (``plan_seeds``) measure the table's runs, the
    others the width sweep's."""
    table = plan_seeds(size, seed, "table", n_seeds)
    out = []
    for s in judged_seeds(SIZES, CALIBRATION, size, seed, n_seeds):
        data = measure_data(size, s, "table" if s in table else "sweep")
        out.append(measure_seed(seed_runs(zoo, data, device, recorded), data))
    return out


def untrained_numbers(size: Setting | str, seed: int) -> dict[str, float]:
    """The null world: every run the claims read (``measure_data(size, seed, "every")``) with
    its model left at its initialisation, measured by ``measure_seed``."""
    data = measure_data(size, seed, "every")
    return measure_seed({name: build_model(run.exp.model, "cpu").eval()
                         for name, run in data.runs.items()}, data)


def _trainable(exp: Experiment) -> int:
    """Trainable parameters of ``exp`` under its freezing (as the training loop counts them)."""
    model = build_model(exp.model, "cpu")
    apply_freeze(model, exp.train.freeze)
    return parameter_counts(model)[0]


def solved_label(n: Mapping[str, float], task: str, mode: str, which: str) -> str:
    """One run's label: "solved" when its test accuracy (``acc.<task>.<mode>.<which>``) is at
    least ``claims.SOLVED`` and at least half way from the task's trivial predictor to 1 (the
    claims' own ``task_solved``), "not solved" otherwise, "not measured" without the number."""
    try:
        return "solved" if task_solved(Measured(n), f"acc.{task}.{mode}.{which}", task) \
            else "not solved"
    except KeyError:
        return "not measured"


def label_table(per_seed, seeds=None, modes=("normal", "random"), which: str = "large"
                ) -> pd.DataFrame:
    """One row per seed, one column per (task, mode): the run's ``solved_label`` at the table's
    ``which`` width (the mechanism label of this study: solved or not, per task). ``per_seed``:
    {seed: numbers}, or a list of numbers with their ``seeds``."""
    pairs = (list(per_seed.items()) if isinstance(per_seed, Mapping)
             else list(zip(seeds if seeds is not None else range(len(per_seed)), per_seed)))
    rows = [{"seed": s, **{f"{t.replace('_', ' ')} ({m})": solved_label(n, t, m, which)
                           for t in ALGORITHMIC for m in modes}}
            for s, n in pairs]
    return pd.DataFrame(rows).set_index("seed")


def _solved_tasks(per_seed, mode: str, which: str) -> tuple[list[str], int]:
    """The algorithmic tasks ``mode`` solves at the table's ``which`` width in most of the seeds
    that measured it, and how many tasks were measured."""
    solved, measured = [], 0
    for task in ALGORITHMIC:
        votes = []
        for n in per_seed:
            try:
                votes.append(task_solved(Measured(n), f"acc.{task}.{mode}.{which}", task))
            except KeyError:
                pass
        if votes:
            measured += 1
            if statistics.mean(votes) >= 0.5:
                solved.append(task)
    return solved, measured


def findings(per_seed, card: pd.DataFrame, size: Setting | str):
    """"What this run found": which tasks the normal and the random models solve at this budget
    (over the seeds that trained them), the scorecard's counts, what did not reproduce, and the
    run's budget against the paper's, all computed (``studies.findings``)."""
    lines = []
    # the width is said per sentence (each compares the two kinds at ONE width), so the opening
    # names only the rest of the shortfall (the steps)
    at = at_setting(SETTINGS, size, {k: v for k, v in TABLE1.items() if k != "width"},
                    "the paper's")
    widths = plan(size).widths
    for w, which in ((widths[1], "large"), (widths[0], "small")):
        said = []
        for mode in ("normal", "random"):
            solved, measured = _solved_tasks(per_seed, mode, which)
            if measured:
                kind = ("normal transformers" if mode == "normal" else
                        "random ones (only the embeddings and the unembedding trained)")
                said.append(f"{kind} solve {len(solved)} of the {measured} algorithmic "
                            f"task{'s' if measured != 1 else ''}"
                            f"{' (' + ', '.join(solved) + ')' if solved else ''}")
        if said:
            lines.append(opening(at, f"At width {w} (the paper's Table 1: widths "
                                     f"{W16['small_width']} (added in the rebuttal) and "
                                     f"{TABLE1['width']:,}), " + "; ".join(said) +
                         " (held-out accuracy, whole answers, in most seeds)."))
    lines.append(scorecard_sentence(card))
    lines.append(misses(card))
    if size_spec(size).steps < 50_000:
        lines.append(_budget_sentence(size))
    return Findings(lines, setting=at, size=size)


def _budget_sentence(size: Setting | str) -> str:
    """The step budgets the run's models trained under, from the experiments themselves: the
    accuracy table's (a recipe's own run keeps its budget and stops once solved; the others are
    capped), the plain runs' and the side studies', against the paper's ~50,000."""
    spec, p = size_spec(size), plan(size)
    table = sorted({table_experiment(t, w, m, size, 0).train.steps
                    for t in ALGORITHMIC for w in p.widths for m in ("normal", "random")})
    if p.table_steps is not None and len(table) > 1:
        head = (f"The accuracy table's runs were capped at {min(table):,} steps, except each "
                f"recipe's own run, which keeps its budget (up to {max(table):,}) and stops once "
                "solved")
    else:
        head = f"The accuracy table's runs trained at most {max(table):,} steps"
    return (f"{head}; memorization {spec.steps:,}, language modelling and circuit imitation "
            f"{spec.side_steps:,} (the "
            f"paper: ~50,000), at widths up to {max(p.widths)} (the paper: 1,024).")
