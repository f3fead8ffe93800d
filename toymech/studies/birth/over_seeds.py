"""Study 2 over seeds: the main run (the paper's simplified model with the probe callback) from
every seed of ``seeds_of(size, seed, n_seeds)``, each seed's numbers, and the per-seed table.

The main-run claims (the mechanism forms, bigrams learned and first, the top-down order of the
memories, the memories move toward the construction) are assessed over every seed; the sweep,
freezing and extremes claims over the seeds that ran them (``measure.controls`` trains them at
every judged seed; ``extremes`` only where asked for). The notebook's seed is the same zoo entry
as ``main_run``'s, so it is never trained twice; the missing seeds train on a CPU as one
one-thread process per free core (``sweep.train_missing``, each process rebuilding the probe
callback with ``probe_callbacks``), elsewhere together as stacked seeds where that was measured to
pay (``Zoo.get_or_train_many``). ``findings`` writes the page's
opening from the same numbers and claims as the scorecard (the memories' order by the order
claim's own rule).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ...core import Setting
from ...devices import initial_threads, resolve_device
from ...models import build_model
from ...sweep import train_missing
from ...zoo import Zoo, ZooEntry
from ..claims import assess, by_key, verdict_table
from ..findings import Findings, at_setting, misses, opening, scorecard_sentence
from ..protocol import judged_seeds, size_of
from .callbacks import PROBE_TAG, birth_callback
from .causal import causal_data, causal_numbers
from .claims import CLAIMS, HALF, MAIN_CLAIMS, MIN_RISE, SETTINGS, numbers, span
from .design import CALIBRATION, PAPER_SETTING, SIZES, experiment
from .dynamics import BirthProbeData, probe_data
from .map_measure import mechanism_label
from .measure import (
    bigram_baseline,
    extremes_experiments,
    extremes_rows,
    freezing_experiments,
    freezing_rows,
    sweep_experiments,
    sweep_rows,
)
from .tables import construction_table


def main_runs(zoo: Zoo, size: Setting | str, seed: int, device="auto", *,
              n_seeds: int | None = None, trigger_mode: str = "fixed", n_triggers: int = 3,
              log=None, optimizer: str | None = None) -> dict[int, ZooEntry]:
    """The main run (``main_run``'s experiment, probe callback) for every seed: {seed: entry};
    ``optimizer`` ("adam" / "sgd"; None: the size's) trains it with another optimizer."""
    dev = resolve_device(device)
    seeds = judged_seeds(SIZES, CALIBRATION, size, seed, n_seeds)
    exps = [experiment(size, s, trigger_mode=trigger_mode, n_triggers=n_triggers,
                       optimizer=optimizer) for s in seeds]
    missing = [e for e in exps if not zoo.has(e, PROBE_TAG)]
    if dev.type == "cpu" and len(missing) > 1:
        # every core busy: one one-thread process per free core, each rebuilding the probe
        # callback from its experiment (``probe_callbacks``); read back below
        train_missing(zoo, missing, workers=max(1, initial_threads()), device=dev, tag=PROBE_TAG,
                      callbacks="toymech.studies.birth.over_seeds:probe_callbacks")
    entries = zoo.get_or_train_many(
        exps, device=dev, tag=PROBE_TAG, log=log,
        callbacks=[[birth_callback(e.task, seed=e.train.seed)] for e in exps])
    return dict(zip(seeds, entries))


def probe_callbacks(exp) -> list:
    """The main run's callbacks, from its experiment alone (what a spawned process rebuilds)."""
    return [birth_callback(exp.task, seed=exp.train.seed)]


def _untrained_history(model: HookedTransformer, data: BirthProbeData) -> list[dict[str, float]]:
    """What the probe callback records on a model that never trains: its values at the first and
    the last step of the size's schedule (the same numbers twice: nothing moves)."""
    cb = birth_callback(data.task, seed=data.seed)
    steps = size_of(SIZES, data.size).steps
    rows = []
    for step in (0, steps):
        with torch.no_grad():
            rows.append({"step": float(step), **cb(step, model.eval())})
    return rows


@torch.no_grad()
def measure_seed(runs: Mapping[str, Any], data: BirthProbeData) -> dict[str, float]:
    """One seed's ``numbers``. ``runs``: ``{"main": ZooEntry}`` (the main run, trained with the
    probe callback; a bare ``HookedTransformer`` is measured as a run that never trained), and
    where they ran ``"sweep"``, ``"freezing"``, ``"extremes"`` (their tables); ``data``: that
    seed's ``probe_data``. The exact bigram model is scored on the seed's own test set; the
    construction table is read where the run kept its initial weights."""
    main = runs["main"]
    if isinstance(main, HookedTransformer):
        history, trained, initial = _untrained_history(main, data), main, main
    else:
        history, trained = main.history, main.model
        initial = main.model_at(0) if 0 in main.snapshot_steps else None
    measured: dict[str, Any] = {
        "history": history, "d_vocab": data.task.d_vocab,
        "baseline": bigram_baseline(data.task, data.size, data.seed, trained.cfg.device),
        "construction": (construction_table(trained, initial, data.task)
                         if initial is not None else None)}
    measured.update({k: runs[k] for k in ("sweep", "freezing", "extremes") if k in runs})
    out = numbers(measured)
    out.update(causal_numbers(trained, causal_data(data.task, data.seed,
                                                   device=trained.cfg.device)))
    return out


def untrained_numbers(size: Setting | str, seed: int) -> dict[str, float]:
    """The null world: every run the claims read (the main run, the trigger sweep, the freezing
    comparison, the extremes) at ``size``'s settings, initialised for ``seed`` and left
    untrained, measured by ``measure_seed``."""
    def bare(exps):
        return {k: build_model(e.model, "cpu").eval() for k, e in exps.items()}
    exp = experiment(size, seed)
    sweep = sweep_experiments(size, seed, ks=size_of(SIZES, size).sweep_ks)
    freezing, extremes = freezing_experiments(size, seed), extremes_experiments(size, seed)
    runs = {"main": build_model(exp.model, "cpu").eval(),
            "sweep": sweep_rows(bare(sweep), sweep, size, seed),
            "freezing": freezing_rows(bare(freezing), freezing, size, seed),
            "extremes": extremes_rows(bare(extremes), extremes, size, seed)}
    return measure_seed(runs, probe_data(exp.task, size, seed))


def _order(n: Mapping[str, float]) -> str:
    """The memories by half-way step, earliest first, read by the order claim's own rule
    (``claims.ordered``): "<" only where the later one crossed more than one probe interval
    after, "≈" where the two crossed within one interval; a memory that rose less than
    ``MIN_RISE`` of its range is left out of the order and named as not rising."""
    memories = ("W_O2", "W_K2", "W_K1")
    if not any(f"half.{m}" in n for m in memories):
        return "n/a"
    name = {m: HALF[m][0].split()[0] for m in memories}
    flat = [m for m in memories if f"half.{m}" not in n
            or n.get(f"rise.{m}", 0.0) < MIN_RISE * span(n, m)]
    steps = sorted((n[f"half.{m}"], name[m]) for m in memories if m not in flat)
    gap = n.get("interval", 0.0)
    out = steps[0][1] if steps else ""
    for (prev, _), (step, label) in zip(steps, steps[1:]):
        out += (" < " if step - prev > gap else " ≈ ") + label
    if flat:
        out += (" (" if out else "") + ", ".join(name[m] for m in flat) + " did not rise" + \
            (")" if out else "")
    return out


def seed_table(per_seed: Mapping[int, Mapping[str, float]]) -> pd.DataFrame:
    """One row per seed: final in-context accuracy beside the exact bigram model's, the half-way
    steps, the memories' order and each main-run claim's verdict for that seed (the claims' own
    tests: yes / no / n/a)."""
    rows = []
    for s, n in per_seed.items():
        row: dict[str, object] = {"seed": s, "mechanism": mechanism_label(n),
                                  "in-context acc": n.get("icl_acc"),
                                  "bigram model": n.get("baseline.icl_acc")}
        row.update({f"half {HALF[m][0]}": n.get(f"half.{m}") for m in HALF})
        row["memories, first to last"] = _order(n)
        rows.append(row)
    table = pd.DataFrame(rows).set_index("seed").round(3)
    main = [by_key(CLAIMS, k) for k in MAIN_CLAIMS]
    return table.join(verdict_table(main, per_seed))


def other_optimizer(size: Setting | str) -> str:
    """The optimizer the comparison trains beside the size's own: Adam beside SGD, or SGD beside
    Adam."""
    return "adam" if size_of(SIZES, size).optimizer == "sgd" else "sgd"


def optimizer_table(per_optimizer: Mapping[str, Mapping[int, Mapping[str, float]]]
                    ) -> pd.DataFrame:
    """Per optimizer: each main-run claim's seeds agreeing (k/n, from ``assess``), the median
    final in-context accuracy and the median half-way step of each memory."""
    rows = []
    for name, per_seed in per_optimizer.items():
        measured = list(per_seed.values())  # each seed's numbers
        row: dict[str, object] = {"optimizer": name, "seeds": len(measured)}
        row["in-context acc (median)"] = _median([n.get("icl_acc") for n in measured])
        for m in ("W_O2", "W_K2", "W_K1"):
            row[f"half {HALF[m][0].split()[0]} (median)"] = _median([n.get(f"half.{m}")
                                                                    for n in measured])
        for key in MAIN_CLAIMS:
            a = assess(by_key(CLAIMS, key), measured)
            row[key] = f"{a.agree}/{a.measured}" + (f" (+{a.unresolved} unresolved)"
                                                      if a.unresolved else "")
        rows.append(row)
    return pd.DataFrame(rows).set_index("optimizer").round(3)


def _median(values) -> float:
    vals = [v for v in values if v is not None and v == v]  # measured, not NaN
    return statistics.median(vals) if vals else float("nan")


PAPER_ORDER = "W_O² < W_K² < W_K¹"


def _order_sentence(orders: list[str], measured: list[Mapping[str, float]]) -> str:
    """The memories' order over seeds, counted by the order claim's rule (``_order``): the most
    common order and in how many seeds, and, when that is not the paper's, how many seeds show
    the paper's. "≈" (within one probe interval) is never counted as an order."""
    shown = [o for o in orders if o != "n/a"]
    top = max(sorted(set(shown)), key=shown.count)
    intervals = [n["interval"] for n in measured if "interval" in n]
    text = (f"The memories crossed half way as {top} in {shown.count(top)} of "
            f"{len(orders)} seeds")
    if top != PAPER_ORDER:
        text += f"; the paper's order, {PAPER_ORDER}, in {shown.count(PAPER_ORDER)}"
    else:
        text += " (the paper's order)"
    if intervals and any("≈" in o for o in shown):
        gap = statistics.median(intervals)
        text += f" (≈: within one probe interval, {gap:g} steps, so no order is shown)"
    return text + "."


def findings(per_seed: Mapping[int, Mapping[str, float]], card: pd.DataFrame, size: Setting | str):
    """"What this run found": whether the induction mechanism formed and in what order its
    memories did over seeds, the scorecard's counts, what did not reproduce, and the run's budget
    against the paper's, all computed (``studies.findings``)."""
    measured = list(per_seed.values())  # each seed's numbers
    lines = []
    at = at_setting(SETTINGS, size, PAPER_SETTING, "the paper's")
    formed = [n for n in measured if "icl_acc" in n and "baseline.icl_acc" in n]
    if formed:
        accs = sorted(n["icl_acc"] for n in formed)
        lines.append(opening(at, f"The induction head's in-context accuracy ends at {statistics.median(accs):.2f}"
                     f" (median of {len(accs)} seeds; range {accs[0]:.2f}-{accs[-1]:.2f}) against "
                     f"{statistics.median(n['baseline.icl_acc'] for n in formed):.2f} for the exact "
                     "bigram model, which knows the global statistics and nothing in context."))
    orders = [_order(n) for n in measured]
    if any(o != "n/a" for o in orders):
        lines.append(opening(at, _order_sentence(orders, measured)))
    lines.append(scorecard_sentence(card))
    lines.append(misses(card))
    spec = size_of(SIZES, size)
    if spec.steps < 10_000:
        lines.append(f"Each main run trained {spec.steps:,} steps of batch {spec.batch} at "
                     f"T={spec.length} with {spec.optimizer}; the paper: 10,000 steps of batch 512 "
                     "at T=256 with SGD.")
    return Findings(lines, setting=at, size=size)
