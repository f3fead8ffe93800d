"""Study 3: train or load the runs of a grid and measure them.

Seeds: a run's evaluation sets come from its own ``eval`` stream (``seed_for(seed, "eval")``),
the concentration probe from the ``probe`` stream and the sequences shown from ``example``;
training streams are the zoo's (``init``/``data``/``train_eval``), untouched here.
"""

from __future__ import annotations

from typing import Any, Iterable

import pandas as pd
import torch

from ...core import seed_for
from ...devices import make_generator, resolve_device
from ...tasks.base import Batch, Task
from ..grids import train_grid
from ...training import Experiment, Zoo, ZooEntry, evaluate
from .claims import PAPER_LINEARISED_W512
from .experiments import Plan, baseline_experiment, experiment, mode_of, size_spec, task_for


def eval_sets(task: Task, n: int, seed: int, device: str | torch.device = "cpu"
              ) -> dict[str, Batch]:
    """The task's evaluation sets for a run with seed ``seed`` (its ``eval`` stream)."""
    return task.eval_sets(n, make_generator(seed_for(seed, "eval"), torch.device(device)))


@torch.no_grad()
def evaluate_sets(model, task: Task, n: int, seed: int, device: str | torch.device | None = None
                  ) -> dict[str, dict[str, float]]:
    """The task's metrics on each of its evaluation sets (``eval_sets``; device: the model's)."""
    dev = next(model.parameters()).device if device is None else torch.device(device)
    return {name: evaluate(model, task, batch)
            for name, batch in eval_sets(task, n, seed, dev).items()}


def load(zoo: Zoo, exp: Experiment, device: str | torch.device = "cpu"):
    """The trained model of ``exp`` (trained now if the zoo lacks it)."""
    return zoo.get_or_train(exp, device=device, progress=False, log=None).model


def run(exp: Experiment, zoo: Zoo, device: str | torch.device = "cpu", eval_n: int = 2048,
        log=None, entry: ZooEntry | None = None, loaded: bool | None = None) -> dict[str, Any]:
    """Train (or load) ``exp`` and return one table row: test metrics, parameter counts, time.

    Metrics are measured on the run's own evaluation sets (seed ``exp.train.seed``). ``entry``:
    the zoo entry if the caller already has it; ``loaded``: whether it was in the zoo before
    (default: the entry's own flag)."""
    entry = entry or zoo.get_or_train(exp, device=device, progress=False, log=log)
    metrics = evaluate_sets(entry.model, exp.task, eval_n, exp.train.seed, device)
    row = {"task": exp.task.name, "width": exp.model.d_model, "mode": mode_of(exp.train.freeze),
           "seed": exp.model.seed, "trainable": entry.meta.get("trainable"),
           "seconds": entry.meta.get("seconds"),
           "loaded": entry.loaded if loaded is None else loaded}
    for set_name, values in metrics.items():
        for key, value in values.items():
            row[key if set_name == "test" else f"{set_name}_{key}"] = value
    return row


def run_grid(task_names: Iterable[str], widths: Iterable[int], modes: Iterable[str],
             seeds: Iterable[int], size: str, zoo: Zoo, device: str | torch.device = "cpu",
             log=None, stacked: bool | None = None, **train_overrides: Any) -> pd.DataFrame:
    """Every (task, width, mode, seed) combination, one row each (see ``run``).

    The grid runs as one sweep (``studies.grids.train_grid``: Ray workers or in-process, every
    run a zoo entry, a table under ``<zoo>/sweeps/``); the seeds of each setting train together
    as stacked seeds where that pays (``stacked`` forces it on or off). ``loaded`` says whether
    a run was in the zoo before this call.
    """
    exps = [experiment(task_name, width, mode, size, seed, **train_overrides)
            for task_name in task_names for width in widths for mode in modes for seed in seeds]
    had = [zoo.has(e) for e in exps]
    result = train_grid(exps, zoo, device, stacked=stacked, log=log)
    return pd.DataFrame([run(exp, zoo, device, size_spec(size).eval_n,
                             entry=result.entry(i, str(device)), loaded=was)
                         for i, (exp, was) in enumerate(zip(exps, had))])


def seeds_of(p: Plan, seed: int, which: str = "table") -> list[int]:
    """The run's seeds: the notebook's ``seed`` plus the plan's offsets (``table`` / ``sweep``)."""
    return [seed + s for s in (p.table_seeds if which == "table" else p.sweep_seeds)]


def run_table(p: Plan, size: str, zoo: Zoo, device="cpu", seed: int = 0, log=None
              ) -> pd.DataFrame:
    """The accuracy table's runs: normal and random at the small width, random (and normal if
    ``p.normal_large``) at the large width; seeds ``seed + p.table_seeds``."""
    seeds = seeds_of(p, seed)
    small, large = p.widths
    parts = [run_grid(p.table_tasks, [small], ["normal", "random"], seeds, size, zoo, device, log),
             run_grid(p.table_tasks, [large], ["normal", "random"] if p.normal_large
                      else ["random"], seeds, size, zoo, device, log)]
    return pd.concat(parts, ignore_index=True)


def ablation_grid(p: Plan, size: str, zoo: Zoo, device="cpu", seed: int = 0) -> pd.DataFrame:
    """The ablation modes at the large width on the plan's ablation tasks."""
    return run_grid(p.ablation_tasks, [p.widths[-1]], p.ablation_modes, seeds_of(p, seed), size,
                    zoo, device)


def sweep_grid(p: Plan, size: str, zoo: Zoo, device="cpu", seed: int = 0) -> pd.DataFrame:
    """Normal and random over the sweep widths, plus the table's large width for random (and
    for normal where the plan trains it), with the sweep's restarts."""
    seeds = seeds_of(p, seed, "sweep")
    parts = [run_grid(p.sweep_tasks, p.sweep_widths, ["normal", "random"], seeds, size, zoo,
                      device)]
    large = p.widths[-1]
    if large not in p.sweep_widths:
        parts.append(run_grid(p.sweep_tasks, [large], ["normal", "random"] if p.normal_large
                              else ["random"], seeds, size, zoo, device))
    return pd.concat(parts, ignore_index=True)


def short_budget_grid(p: Plan, size: str, zoo: Zoo, device="cpu", seed: int = 0
                      ) -> pd.DataFrame:
    """The plan's ``short_budget`` runs: random transformers on (task, width) with a raised
    learning rate, over the sweep's restarts; one row each, with its ``lr`` (empty without any)."""
    seeds = seeds_of(p, seed, "sweep")
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


def circuit_grid(target_widths: Iterable[int], student_width: int, modes: Iterable[str],
                 seeds: Iterable[int], size: str, zoo: Zoo, device="cpu", **train_overrides
                 ) -> pd.DataFrame:
    """KL(target || student) on fresh inputs for each target width and student mode (the runs
    train as one sweep, ``train_grid``)."""
    seeds, modes, target_widths = list(seeds), list(modes), list(target_widths)
    train_grid([experiment("circuit_imitation", student_width, mode, size, seed,
                           task_overrides={"target_width": tw}, **train_overrides)
                for tw in target_widths for mode in modes for seed in seeds], zoo, device)
    rows = []
    for tw in target_widths:
        for mode in modes:
            for seed in seeds:
                exp = experiment("circuit_imitation", student_width, mode, size, seed,
                                 task_overrides={"target_width": tw}, **train_overrides)
                row = run(exp, zoo, device, size_spec(size).eval_n)
                rows.append({"target_width": tw, "student": f"{mode}, width {student_width}",
                             "mode": mode, "seed": seed, "kl": row["kl"], "agree": row["acc"],
                             "trainable": row["trainable"]})
    return pd.DataFrame(rows)


def concentration_rows(models: dict[tuple[str, str], Any], task_of: dict[str, Task],
                       n: int = 512, k: int = 10, device="cpu", seed: int = 0) -> pd.DataFrame:
    """EV_k per (task, mode, layer, basis) for trained models keyed by (task, mode); hidden
    states at every position of ``n`` test sequences drawn from the ``probe`` stream of
    ``seed``."""
    from ...analysis.subspace import concentration
    rows = []
    dev = torch.device(device)
    for (task_name, mode), model in models.items():
        task = task_of[task_name]
        batch = task.eval_sets(n, make_generator(seed_for(seed, "probe"), dev))["test"]
        for (layer, basis), ev in concentration(model, batch.tokens[:n], k).items():
            rows.append({"task": task_name, "mode": mode, "seed": seed, "layer": layer,
                         "basis": basis, "ev": ev})
    return pd.DataFrame(rows)


def concentration_grid(p: Plan, size: str, zoo: Zoo, device="cpu", seed: int = 0
                       ) -> pd.DataFrame:
    """Concentration of normal and random models: the algorithmic tasks at the small width,
    memorization at its widest width and language modelling at the plan's width."""
    models, task_of = {}, {}
    width = {"memorization": p.memorization_widths[-1], "char_lm": p.lm_width}
    for name in [*p.table_tasks, "memorization", "char_lm"]:
        task_of[name] = task_for(name, size)
        for mode in ("normal", "random"):
            exp = experiment(name, width.get(name, p.widths[0]), mode, size, seed)
            models[name, mode] = load(zoo, exp, device)
    return concentration_rows(models, task_of, size_spec(size).probe_n, device=device, seed=seed)


def baseline_grid(kinds: Iterable[str], task_names: Iterable[str], width: int, size: str,
                  seeds: Iterable[int], zoo: Zoo, device="cpu", lr: float = 1e-3
                  ) -> pd.DataFrame:
    """Test accuracy of the plain-PyTorch baselines (same tasks, schedule and clipping), trained
    and stored by the zoo like any model (the runs train as one sweep, ``train_grid``)."""
    rows = []
    dev = resolve_device(device)
    kinds, task_names, seeds = list(kinds), list(task_names), list(seeds)
    train_grid([baseline_experiment(kind, task_name, width, size, seed, lr) for kind in kinds
                for task_name in task_names for seed in seeds], zoo, dev)
    for kind in kinds:
        for task_name in task_names:
            for seed in seeds:
                exp = baseline_experiment(kind, task_name, width, size, seed, lr)
                entry = zoo.get_or_train(exp, device=dev, progress=False, log=None)
                metrics = evaluate_sets(entry.model, exp.task, size_spec(size).eval_n, seed,
                                        dev)["test"]
                rows.append({"model": kind, "task": task_name, "width": width, "seed": seed,
                             "acc": metrics["acc"], "trainable": entry.meta["trainable"],
                             "seconds": entry.meta["seconds"],
                             "paper_w512": PAPER_LINEARISED_W512.get(task_name)
                             if kind == "linearised" else None})
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
