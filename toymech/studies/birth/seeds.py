"""Study 2 over seeds: the main run (the paper's simplified model with the probe callback) from
``SIZES[size]["seeds"]`` seeds, each seed's numbers, and the per-seed verdicts tabulated.

The main-run claims (the mechanism forms, bigrams first, the top-down order of the memories, the
memories move toward the construction) are assessed over every seed; the sweep and freezing
claims over the seeds that ran them (the notebook's seed). The notebook's seed is the same zoo
entry as ``main_run``'s, so it is never trained twice; the other seeds train together as
stacked seeds where that was measured to pay (``Zoo.get_or_train_many``).
"""

from __future__ import annotations

import statistics
from typing import Mapping

import pandas as pd

from ...core import check_int
from ...devices import resolve_device
from ...training import Zoo, ZooEntry
from .callbacks import PROBE_TAG, birth_callback
from .claims import CLAIMS, HALF, numbers
from .experiments import SIZES, experiment
from .measure import bigram_baseline
from .tables import construction_table

MAIN_CLAIMS = ("induction-forms", "bigram-first", "top-down", "toward-construction")


def seeds_of(size: str, seed: int) -> tuple[int, ...]:
    """The seeds the main-run claims are assessed over: ``seed, seed + 1, ...``."""
    check_int("seed", seed, 0)
    return tuple(range(seed, seed + SIZES[size]["seeds"]))


def main_runs(zoo: Zoo, size: str, seed: int, device="auto", trigger_mode: str = "fixed",
              n_triggers: int = 3, log=None, optimizer: str | None = None
              ) -> dict[int, ZooEntry]:
    """The main run (``main_run``'s experiment, probe callback) for every seed: {seed: entry};
    ``optimizer`` ("adam" / "sgd"; None: the size's) trains it with another optimizer."""
    dev = resolve_device(device)
    seeds = seeds_of(size, seed)
    exps = [experiment(size, s, trigger_mode=trigger_mode, n_triggers=n_triggers,
                       optimizer=optimizer) for s in seeds]
    entries = zoo.get_or_train_many(
        exps, device=dev, tag=PROBE_TAG, log=log,
        callbacks=[[birth_callback(e.task, seed=e.train.seed)] for e in exps])
    return dict(zip(seeds, entries))


def seed_numbers(runs: Mapping[int, ZooEntry], size: str, device="auto",
                 trigger_mode: str = "fixed", n_triggers: int = 3
                 ) -> dict[int, dict[str, float]]:
    """Each seed's ``numbers``: its history, the exact bigram model on its own test set and,
    where the run kept its initial weights, the construction table."""
    dev = resolve_device(device)
    out = {}
    for s, entry in runs.items():
        task = experiment(size, s, trigger_mode=trigger_mode, n_triggers=n_triggers).task
        base = bigram_baseline(task, s, device=dev)
        match = (construction_table(entry.model, entry.model_at(0), task)
                 if 0 in entry.snapshot_steps else None)
        out[s] = numbers(entry.history, base, construction=match)
    return out


def _claim(key: str):
    return next(c for c in CLAIMS if c.key == key)


def _holds(key: str, n: Mapping[str, float]) -> bool | None:
    try:
        return _claim(key).holds(n)
    except KeyError:
        return None


def _order(n: Mapping[str, float]) -> str:
    """The memories by half-way step, earliest first ("=" where two share a step)."""
    steps = sorted((n[f"half.{m}"], HALF[m].split()[0]) for m in ("W_O2", "W_K2", "W_K1")
                   if f"half.{m}" in n)
    if not steps:
        return "n/a"
    out = steps[0][1]
    for (prev, _), (step, name) in zip(steps, steps[1:]):
        out += (" = " if step == prev else " < ") + name
    return out


def seed_table(per_seed: Mapping[int, Mapping[str, float]]) -> pd.DataFrame:
    """One row per seed: final in-context accuracy beside the exact bigram model's, the half-way
    steps, the memories' order and each main-run claim's verdict for that seed."""
    rows = []
    for s, n in per_seed.items():
        row: dict[str, object] = {"seed": s, "in-context acc": n.get("icl_acc"),
                                  "bigram model": n.get("baseline.icl_acc")}
        row.update({f"half {HALF[m]}": n.get(f"half.{m}") for m in HALF})
        row["memories, first to last"] = _order(n)
        for key in MAIN_CLAIMS:
            h = _holds(key, n)
            row[key] = "n/a" if h is None else "yes" if h else "no"
        rows.append(row)
    return pd.DataFrame(rows).set_index("seed").round(3)


def agreement_lines(per_seed: Mapping[int, Mapping[str, float]]) -> list[str]:
    """Each main-run claim as "k/n seeds", computed with the claim's own test."""
    lines = []
    for key in MAIN_CLAIMS:
        held = [h for h in (_holds(key, n) for n in per_seed.values()) if h is not None]
        lines.append(f"{_claim(key).statement}: {sum(held)}/{len(held)} seeds")
    return lines


def other_optimizer(size: str) -> str:
    """The optimizer the comparison trains beside the size's own: SGD beside Adam, or Adam beside
    the paper's SGD (at ``paper``)."""
    return "sgd" if SIZES[size]["optimizer"] == "adam" else "adam"


def optimizer_table(per_optimizer: Mapping[str, Mapping[int, Mapping[str, float]]]
                    ) -> pd.DataFrame:
    """Per optimizer: each main-run claim's seeds agreeing (k/n, the claim's own test), the median
    final in-context accuracy and the median half-way step of each memory."""
    rows = []
    for name, per_seed in per_optimizer.items():
        seeds = list(per_seed.values())
        row: dict[str, object] = {"optimizer": name, "seeds": len(seeds)}
        row["in-context acc (median)"] = _median([n.get("icl_acc") for n in seeds])
        for m in ("W_O2", "W_K2", "W_K1"):
            row[f"half {HALF[m].split()[0]} (median)"] = _median([n.get(f"half.{m}") for n in seeds])
        for key in MAIN_CLAIMS:
            held = [h for h in (_holds(key, n) for n in seeds) if h is not None]
            row[key] = f"{sum(held)}/{len(held)}"
        rows.append(row)
    return pd.DataFrame(rows).set_index("optimizer").round(3)


def _median(values) -> float:
    vals = [v for v in values if v is not None and v == v]  # measured, not NaN
    return statistics.median(vals) if vals else float("nan")
