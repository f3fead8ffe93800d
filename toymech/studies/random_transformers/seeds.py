"""Study 3 over seeds: one seed's named numbers from the run's tables (``measure_seed``), and the
same tables built from UNTRAINED models through the study's own measurement code
(``untrained_runs``): the null world every claim must fail.

``runs`` (the first argument of ``measure_seed``) are the study's tables, as the notebook builds
them: ``main`` (rows of ``run_grid``: the accuracy table, the width sweep, the ablations), and
where measured ``mem`` (``memorization_table``), ``lm``, ``circ`` (``circuit_grid``), ``conc``
(``concentration_rows``), ``base`` (``baseline_grid``), ``short`` (``short_budget_grid``); ``data``
(``measure_data``) says which seed and the plan's widths.
"""

from __future__ import annotations

from typing import Any, Mapping

import statistics

import pandas as pd

from ...models import build_model, parameter_counts
from ...training import apply_freeze
from ..claims import Measured
from ..findings import Findings, at_setting, misses, opening, scorecard_sentence
from .claims import SETTINGS, TABLE1, _solved, numbers
from .design import ALGORITHMIC, FREEZE_MODES, experiment, plan, size_spec, task_for
from .measure import (BASELINE_KINDS, baseline_exp, baseline_row, circuit_experiments,
                      circuit_row, concentration_rows, row_for, size_spec)
from .recipes import recipe, table_experiment
from .tables import memorization_table


def measure_data(size: str, seed: int) -> dict[str, Any]:
    """What ``measure_seed`` needs besides the tables: the seed and the plan's widths."""
    return {"seed": seed, "widths": plan(size).widths}


def measure_seed(runs: Mapping[str, pd.DataFrame | None], data: Mapping[str, Any]
                 ) -> dict[str, float]:
    """One seed's ``numbers`` from the study's tables (module docstring); rows of other seeds
    in the tables are ignored."""
    return numbers({**{k: v for k, v in runs.items() if v is not None}, **data})


def _untrained(exp):
    return build_model(exp.model, "cpu").eval()


def untrained_runs(size: str, seed: int) -> dict[str, pd.DataFrame]:
    """The study's tables for ``seed`` with every model left at its initialisation (no step):
    the accuracy table and every ablation mode on the four algorithmic tasks, memorization,
    language modelling, circuit imitation, concentration, the baselines and the short-budget
    runs, each row computed by the function the notebook's tables use."""
    p = plan(size)
    rows = []
    for task in ALGORITHMIC:
        for width in p.widths:
            for mode in FREEZE_MODES:
                exp = experiment(task, width, mode, size, seed)
                rows.append(row_for(exp, _untrained(exp), size))
    short = [dict(row_for(e, _untrained(e), size), lr=lr) for t, w, lr in p.short_budget
             for e in [experiment(t, w, "random", size, seed, lr=lr)]]
    side = {name: [row_for(e, _untrained(e), size) for mode in ("normal", "random")
                   for e in [experiment(name, width, mode, size, seed)]]
            for name, width in (("memorization", p.memorization_widths[-1]),
                                ("char_lm", p.lm_width))}
    circ = [circuit_row(e, _untrained(e), size) for e in circuit_experiments(
        p.circuit_target_widths, p.circuit_student_width, ("normal", "random"), [seed],
        size).values()]
    conc_models = {(t, m): _untrained(experiment(t, p.widths[0], m, size, seed))
                   for t in ("memorization", "char_lm") for m in ("normal", "random")}
    conc = concentration_rows(conc_models, {t: task_for(t, size) for t, _ in conc_models},
                              size_spec(size).probe_n, seed=seed)
    base = [baseline_row(k, e, _untrained(e), size) for k in BASELINE_KINDS
            for t in ("parentheses", "needle", "decimal_addition")
            for e in [baseline_exp(k, t, p.baseline_width, size, seed)]]
    mem = pd.DataFrame(side["memorization"]).assign(trainable=1.0)
    mem = mem.assign(trainable=[_trainable(experiment("memorization", p.memorization_widths[-1],
                                                      m, size, seed)) for m in mem["mode"]])
    return {"main": pd.DataFrame(rows), "short": pd.DataFrame(short),
            "calibration": _untrained_recipes(size, seed),
            "mem": memorization_table(mem, task_for("memorization", size)),
            "lm": pd.DataFrame(side["char_lm"]), "circ": pd.DataFrame(circ), "conc": conc,
            "base": pd.DataFrame(base)}


def untrained_numbers(size: str, seed: int) -> dict[str, float]:
    """The null world: every table the claims read with its models untrained, at ``size``'s
    settings (``untrained_runs``), measured by ``measure_seed``."""
    return measure_seed(untrained_runs(size, seed), measure_data(size, seed))


def _untrained_recipes(size: str, seed: int) -> pd.DataFrame:
    """The calibration sweeps' rows of the recipes' runs (what the recipe claims read), with the
    models untrained: each task's normal and random recipe at its width, lr and step budget."""
    rows = []
    for task in ALGORITHMIC:
        for mode in ("normal", "random"):
            r = recipe(task, mode)
            exp = experiment(task, r.width, mode, size, seed)
            row = row_for(exp, _untrained(exp), size)
            rows.append({"task": task, "mode": mode, "seed": seed, "width": r.width, "lr": r.lr,
                         "steps": r.steps, "last_step": 0,
                         "held_out_acc": row["seq_acc" if task == "decimal_addition" else "acc"]})
    return pd.DataFrame(rows)


def _trainable(exp) -> int:
    """Trainable parameters of ``exp`` under its freezing (as the training loop counts them)."""
    model = _untrained(exp)
    apply_freeze(model, exp.train.freeze)
    return parameter_counts(model)[0]


def _solved_tasks(per_seed, mode: str, which: str) -> tuple[list[str], int]:
    """The algorithmic tasks ``mode`` solves at the table's ``which`` width in most of the seeds
    that measured it, and how many tasks were measured."""
    solved, measured = [], 0
    for task in ALGORITHMIC:
        votes = []
        for n in per_seed:
            try:
                votes.append(_solved(Measured(n), f"acc.{task}.{mode}.{which}", task))
            except KeyError:
                pass
        if votes:
            measured += 1
            if statistics.mean(votes) >= 0.5:
                solved.append(task)
    return solved, measured


def findings(per_seed, card: pd.DataFrame, size: str):
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
            lines.append(opening(at, f"At width {w} (the paper's Table 1: "
                                     f"{TABLE1['width']:,}), " + "; ".join(said) +
                         " (held-out accuracy, whole answers, in most seeds)."))
    lines.append(scorecard_sentence(card))
    lines.append(misses(card))
    if size_spec(size).steps < 50_000:
        lines.append(_budget_sentence(size))
    return Findings(lines, setting=at)


def _budget_sentence(size: str) -> str:
    """The step budgets the run's models trained under, from the experiments themselves: the
    accuracy table's (a recipe's own run keeps its budget and stops once solved; the others are
    capped), the plain runs' and the side studies', against the paper's ~50,000."""
    spec, p = size_spec(size), plan(size)
    table = sorted({table_experiment(t, w, m, size, 0).train.steps
                    for t in ALGORITHMIC for w in p.widths for m in ("normal", "random")})
    span = f"{table[0]:,}" if len(table) == 1 else f"{table[0]:,} to {table[-1]:,}"
    how = (" (a recipe's own run keeps its budget and stops once solved; the others are capped)"
           if p.table_steps is not None and len(table) > 1 else "")
    return (f"The accuracy table's runs trained at most {span} steps{how}, memorization "
            f"{spec.steps:,}, language modelling and circuit imitation {spec.side_steps:,} (the "
            f"paper: ~50,000), at widths up to {max(p.widths)} (the paper: 1,024).")
