"""Study 3: train or load the runs of a grid and measure them.

Seeds: a run's evaluation sets come from its own ``eval`` stream (``seed_for(seed, "eval")``),
the concentration probe from the ``probe`` stream and the sequences shown from ``example``;
training streams are the zoo's (``init``/``data``/``train_eval``), untouched here.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd
import torch

from ...analysis.chance import chance_levels
from ...analysis.subspace import concentration
from ...core import Setting, check, seed_for
from ...devices import make_generator, resolve_device
from ...tasks.base import Task
from ...training import Experiment, evaluate
from ...zoo import Zoo, ZooEntry
from ..grid_training import train_grid
from ..protocol import judged_seeds
from .claims import PAPER_LINEARISED_W512
from .design import (
    CALIBRATION,
    SIZES,
    Plan,
    baseline_experiment,
    eval_sets,
    experiment,
    mode_of,
    plan,
    size_spec,
    task_for,
)
from .recipes import table_experiment


@torch.no_grad()
def evaluate_sets(model, task: Task, size: Setting | str, seed: int,
                  device: str | torch.device | None = None
                  ) -> dict[str, dict[str, float]]:
    """The task's metrics on each of its evaluation sets (``eval_sets``; device: the model's)."""
    dev = next(model.parameters()).device if device is None else torch.device(device)
    return {name: evaluate(model, task, batch)
            for name, batch in eval_sets(task, size, seed, dev).items()}


def load(zoo: Zoo, exp: Experiment, device: str | torch.device = "cpu"):
    """The trained model of ``exp`` (trained now if the zoo lacks it)."""
    return zoo.get_or_train(exp, device=device, progress=False, log=None).model


def row_for(exp: Experiment, model, size: Setting | str, meta: dict | None = None,
            loaded: bool | None = None) -> dict[str, Any]:
    """One table row for ``model`` (trained, or untrained for a null): held-out metrics on the
    run's own evaluation sets (seed ``exp.train.seed``; ``acc`` on the whole answer, per digit in
    ``digit_acc`` where a task scores several tokens), the task's chance on the same test set
    (``chance``: the best trivial predictor, ``analysis.chance``; whole answers for tasks scored
    on several tokens), and where ``meta`` (the zoo entry's) is given parameter counts and time."""
    dev = next(model.parameters()).device
    sets = eval_sets(exp.task, size, exp.train.seed, dev)
    metrics = {name: evaluate(model, exp.task, batch) for name, batch in sets.items()}
    levels = chance_levels(exp.task, sets["test"])
    row = {"task": exp.task.name, "width": exp.model.d_model, "mode": mode_of(exp.train.freeze, size),
           "seed": exp.model.seed, "chance": levels.get("seq_acc", levels["acc"]),
           "chance_loss": levels["loss"]}
    if meta is not None:
        row.update({"trainable": meta.get("trainable"), "seconds": meta.get("seconds"),
                    "loaded": loaded})
    for set_name, values in metrics.items():
        for key, value in values.items():
            row[key if set_name == "test" else f"{set_name}_{key}"] = value
    if "seq_acc" in row:  # several scored tokens: ``acc`` is the whole answer, as the claims read
        row["digit_acc"], row["acc"] = row["acc"], row["seq_acc"]
    return row


def run(exp: Experiment, zoo: Zoo, size: Setting | str, device: str | torch.device = "cpu",
        log=None, entry: ZooEntry | None = None, loaded: bool | None = None) -> dict[str, Any]:
    """Train (or load) ``exp`` and return its table row (``row_for``). ``entry``: the zoo entry if
    the caller already has it; ``loaded``: whether it was in the zoo before (default: the
    entry's own flag)."""
    entry = entry or zoo.get_or_train(exp, device=device, progress=False, log=log)
    return row_for(exp, entry.model, size, entry.meta,
                   entry.loaded if loaded is None else loaded)


def run_grid(task_names: Iterable[str], widths: Iterable[int], modes: Iterable[str],
             seeds: Iterable[int], size: Setting | str, zoo: Zoo,
             device: str | torch.device = "cpu", log=None, stacked: bool | None = None,
             maker=None, **train_overrides: Any) -> pd.DataFrame:
    """Every (task, width, mode, seed) combination, one row each (see ``run``).

    The grid runs as one sweep (``studies.grid_training.train_grid``: Ray workers or in-process, every
    run a zoo entry, a table under ``<zoo>/sweeps/``); the seeds of each setting train together
    as stacked seeds where that pays (``stacked`` forces it on or off). ``loaded`` says whether
    a run was in the zoo before this call. ``maker(task, width, mode, size, seed)`` builds each
    run (default: ``design.experiment`` with ``train_overrides``; the plan's parts pass
    ``recipes.table_experiment``).
    """
    make = maker or (lambda t, w, m, z, s: experiment(t, w, m, z, s, **train_overrides))
    exps = [make(task_name, width, mode, size, seed)
            for task_name in task_names for width in widths for mode in modes for seed in seeds]
    had = [zoo.has(e) for e in exps]
    result = train_grid(exps, zoo, device, stacked=stacked, log=log)
    return pd.DataFrame([run(exp, zoo, size, device,
                             entry=result.entry(i, str(device)), loaded=was)
                         for i, (exp, was) in enumerate(zip(exps, had))])


def plan_seeds(size: Setting | str, seed: int, which: str = "table", n_seeds: int | None = None
               ) -> list[int]:
    """The seeds a part of the plan trains: every seed of ``seeds_of(size, seed, n_seeds)`` for
    the width sweep and the short-budget runs (``which="sweep"``), the first ``table_n_seeds`` of
    them for the accuracy table, the ablations and the side studies (``"table"``)."""
    check(which in ("table", "sweep"), "which", which, "'table' or 'sweep'")
    seeds = list(judged_seeds(SIZES, CALIBRATION, size, seed, n_seeds))
    return seeds if which == "sweep" else seeds[:plan(size).table_n_seeds]


def run_table(p: Plan, size: Setting | str, zoo: Zoo, device="cpu", seed: int = 0, log=None,
              n_seeds: int | None = None) -> pd.DataFrame:
    """The accuracy table's runs: normal and random at the small width, random (and normal if
    ``p.normal_large``) at the large width; seeds ``plan_seeds(size, seed, "table")``."""
    seeds = plan_seeds(size, seed, "table", n_seeds)
    small, large = p.widths
    parts = [run_grid(p.table_tasks, [small], ["normal", "random"], seeds, size, zoo, device, log,
                      maker=table_experiment),
             run_grid(p.table_tasks, [large], ["normal", "random"] if p.normal_large
                      else ["random"], seeds, size, zoo, device, log, maker=table_experiment)]
    return pd.concat(parts, ignore_index=True)


def ablation_grid(p: Plan, size: Setting | str, zoo: Zoo, device="cpu", seed: int = 0,
                  n_seeds: int | None = None) -> pd.DataFrame:
    """The ablation modes at the large width on the plan's ablation tasks."""
    return run_grid(p.ablation_tasks, [p.widths[-1]], p.ablation_modes,
                    plan_seeds(size, seed, "table", n_seeds), size, zoo, device,
                    maker=table_experiment)


def sweep_grid(p: Plan, size: Setting | str, zoo: Zoo, device="cpu", seed: int = 0,
               n_seeds: int | None = None) -> pd.DataFrame:
    """Random (and normal, with ``p.sweep_normal``) over the sweep widths, plus the table's large
    width (normal there too where the plan trains it), over every seed of the run."""
    seeds = plan_seeds(size, seed, "sweep", n_seeds)
    modes = ["normal", "random"] if p.sweep_normal else ["random"]
    parts = [run_grid(p.sweep_tasks, p.sweep_widths, modes, seeds, size, zoo,
                      device, maker=table_experiment)]
    large = p.widths[-1]
    if large not in p.sweep_widths:
        parts.append(run_grid(p.sweep_tasks, [large], modes if p.normal_large else ["random"],
                              seeds, size, zoo, device, maker=table_experiment))
    return pd.concat(parts, ignore_index=True)


def short_budget_grid(p: Plan, size: Setting | str, zoo: Zoo, device="cpu", seed: int = 0,
                      n_seeds: int | None = None) -> pd.DataFrame:
    """The plan's ``short_budget`` runs: random transformers on (task, width) with a raised
    learning rate, over every seed of the run; one row each, with its ``lr`` (empty without
    any)."""
    seeds = plan_seeds(size, seed, "sweep", n_seeds)
    parts = [run_grid([task_name], [width], ["random"], seeds, size, zoo, device, lr=lr)
             .assign(lr=lr) for task_name, width, lr in p.short_budget]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(
        columns=["task", "width", "mode", "seed", "acc", "lr"])


def summarize(df: pd.DataFrame, value: str = "acc",
              by: tuple[str, ...] = ("task", "width", "mode")) -> pd.DataFrame:
    """Median, min, max and count of ``value`` over seeds, per group."""
    g = df.groupby(list(by))[value]
    return pd.DataFrame({"median": g.median(), "min": g.min(), "max": g.max(),
                         "runs": g.count()}).reset_index()


def circuit_experiments(target_widths: Iterable[int], student_width: int, modes: Iterable[str],
                        seeds: Iterable[int], size: Setting | str, **train_overrides
                        ) -> dict[tuple[int, str, int], Experiment]:
    """The circuit-imitation runs: {(target width, mode, seed): Experiment}."""
    return {(tw, mode, seed): experiment("circuit_imitation", student_width, mode, size, seed,
                                         task_overrides={"target_width": tw}, **train_overrides)
            for tw in target_widths for mode in modes for seed in seeds}


def circuit_row(exp: Experiment, model, size: Setting | str, meta: dict | None = None
                ) -> dict[str, Any]:
    """One circuit-imitation row: KL(target || student) on fresh inputs, top-1 agreement."""
    row = row_for(exp, model, size, meta)
    return {"target_width": exp.task.target_width,
            "student": f"{row['mode']}, width {exp.model.d_model}", "mode": row["mode"],
            "seed": row["seed"], "kl": row["kl"], "agree": row["acc"],
            "trainable": row.get("trainable")}


def circuit_grid(target_widths: Iterable[int], student_width: int, modes: Iterable[str],
                 seeds: Iterable[int], size: Setting | str, zoo: Zoo, device="cpu",
                 **train_overrides) -> pd.DataFrame:
    """KL(target || student) on fresh inputs for each target width and student mode (the runs
    train as one sweep, ``train_grid``)."""
    exps = circuit_experiments(target_widths, student_width, modes, seeds, size,
                               **train_overrides)
    train_grid(list(exps.values()), zoo, device)
    rows = []
    for exp in exps.values():
        entry = zoo.get_or_train(exp, device=device, progress=False, log=None)
        rows.append(circuit_row(exp, entry.model, size, entry.meta))
    return pd.DataFrame(rows)


def top_k(width: int) -> int:
    """The k of EV_k: an eighth of the width (at least 2). The paper reads the top 10 directions
    at widths of 512 and more (about 2 % of them); at the laptop's widths 16-64 a fixed 10 would
    be most of the space and every model would look concentrated, so the share is kept fixed
    instead, well below the width."""
    return max(2, int(width) // 8)


def concentration_rows(models: dict[tuple[str, str], Any], task_of: dict[str, Task],
                       n: int = 512, k: int | None = None, device="cpu", seed: int = 0
                       ) -> pd.DataFrame:
    """EV_k per (task, mode, layer, basis) for trained models keyed by (task, mode) (``k``: None,
    ``top_k`` of the model's width); hidden states at every position of ``n`` test sequences
    drawn from the ``probe`` stream of ``seed``."""
    rows = []
    dev = torch.device(device)
    for (task_name, mode), model in models.items():
        task = task_of[task_name]
        batch = task.eval_sets(n, make_generator(seed_for(seed, "probe"), dev))["test"]
        kk = top_k(model.cfg.d_model) if k is None else k
        for (layer, basis), ev in concentration(model, batch.tokens[:n], kk).items():
            rows.append({"task": task_name, "mode": mode, "seed": seed, "layer": layer,
                         "basis": basis, "k": kk, "ev": ev})
    return pd.DataFrame(rows)


def concentration_grid(p: Plan, size: Setting | str, zoo: Zoo, device="cpu", seed: int = 0,
                       n_seeds: int | None = None) -> pd.DataFrame:
    """Concentration of normal and random models: the algorithmic tasks at the small width,
    memorization at its widest width and language modelling at the plan's width, at every seed
    the table trains (``plan_seeds``: never a calibration seed), one block of rows per seed."""
    width = {"memorization": p.memorization_widths[-1], "char_lm": p.lm_width}
    names = [*p.table_tasks, "memorization", "char_lm"]
    task_of = {name: task_for(name, size) for name in names}
    parts = []
    for s in plan_seeds(size, seed, "table", n_seeds):
        models = {(name, mode): load(zoo, table_experiment(name, width.get(name, p.widths[0]),
                                                           mode, size, s), device)
                  for name in names for mode in ("normal", "random")}
        parts.append(concentration_rows(models, task_of, size_spec(size).probe_n,
                                        device=device, seed=s))
    return pd.concat(parts, ignore_index=True)


BASELINE_KINDS = ("lstm", "linearised", "lstm-frozen")  # lstm-frozen: only embed/unembed train


def baseline_exp(kind: str, task_name: str, width: int, size: Setting | str, seed: int,
                 lr: float = 1e-3) -> Experiment:
    """A baseline run: ``lstm``, ``linearised``, or ``lstm-frozen`` (the LSTM with its recurrent
    layers frozen at random init: the rebuttal's random LSTM)."""
    check(kind in BASELINE_KINDS, "kind", kind, f"one of {', '.join(BASELINE_KINDS)}")
    if kind == "lstm-frozen":
        return baseline_experiment("lstm", task_name, width, size, seed, lr, freeze=("lstm.*",))
    return baseline_experiment(kind, task_name, width, size, seed, lr)


def baseline_row(kind: str, exp: Experiment, model, size: Setting | str, meta: dict | None = None
                 ) -> dict[str, Any]:
    """One baseline row: held-out accuracy (``seq_acc`` too where the task scores several
    tokens), the task's chance on the same test set, the paper's linearised number."""
    sets = eval_sets(exp.task, size, exp.model.seed, next(model.parameters()).device)
    metrics = evaluate(model, exp.task, sets["test"])
    levels = chance_levels(exp.task, sets["test"])
    row = {"model": kind, "task": exp.task.name, "width": exp.model.d_model,
           "seed": exp.model.seed, "acc": metrics["acc"],
           "chance": levels.get("seq_acc", levels["acc"]),
           "paper_w512": PAPER_LINEARISED_W512.get(exp.task.name) if kind == "linearised"
           else None}
    if "seq_acc" in metrics:  # the whole answer, as the claims read it
        row["seq_acc"], row["digit_acc"], row["acc"] = (metrics["seq_acc"], metrics["acc"],
                                                        metrics["seq_acc"])
    if meta is not None:
        row.update({"trainable": meta.get("trainable"), "seconds": meta.get("seconds")})
    return row


def baseline_grid(kinds: Iterable[str], task_names: Iterable[str], width: int, size: Setting | str,
                  seeds: Iterable[int], zoo: Zoo, device="cpu", lr: float = 1e-3
                  ) -> pd.DataFrame:
    """Held-out accuracy of the plain-PyTorch baselines (same tasks, schedule and clipping),
    trained and stored by the zoo like any model (the runs train as one sweep, ``train_grid``)."""
    dev = resolve_device(device)
    kinds, task_names, seeds = list(kinds), list(task_names), list(seeds)
    exps = {(k, t, s): baseline_exp(k, t, width, size, s, lr)
            for k in kinds for t in task_names for s in seeds}
    train_grid(list(exps.values()), zoo, dev)
    rows = []
    for (kind, _, _), exp in exps.items():
        entry = zoo.get_or_train(exp, device=dev, progress=False, log=None)
        rows.append(baseline_row(kind, exp, entry.model, size, entry.meta))
    return pd.DataFrame(rows)


@torch.no_grad()
def needle_example(model, task: Task, seed: int = 0, min_pairs: int = 4):
    """One needle sequence with at least ``min_pairs`` pairs, drawn from the ``example`` stream
    of ``seed``: (token strings up to the answer, [n_layers] patterns [n_heads, n, n], whether
    the model answers it right)."""
    gen = make_generator(seed_for(seed, "example"), next(model.parameters()).device)
    batch = task.sample(64, gen)
    row = int((batch.extras["n_pairs"] >= min(min_pairs, task.max_pairs)).float().argmax())
    end = int(batch.scored[row].nonzero().max()) + 1
    tokens = batch.tokens[row: row + 1, :end]
    logits, cache = model.run_with_cache(tokens)
    right = bool(logits[0, -2].argmax() == tokens[0, -1])
    patterns = [cache["pattern", layer][0] for layer in range(model.cfg.n_layers)]
    return task.str_tokens(tokens[0]), patterns, right
