"""Birth's measurement for maps (``toymech.maps``): one run's row and its mechanism label."""

from __future__ import annotations

from typing import Mapping

import torch
from transformer_lens import HookedTransformer

from ...models import build_model
from ...training import Experiment
from ...zoo import ZooEntry
from ..protocol import size_of
from .callbacks import birth_callback
from .claims import HALF, MIN_RISE, numbers, span
from .design import SIZES, experiment
from .measure import bigram_baseline

MEMORIES = ("W_O2", "W_K2", "W_K1")


def mechanism_label(n: Mapping[str, float]) -> str:
    """The main run's label from its numbers: whether an in-context (induction) head formed, and
    which associative memories rose.

    * "in-context head" when the final in-context accuracy ``icl_acc`` is more than half way from
      the exact bigram model's (``baseline.icl_acc``, the best a model without the in-context
      mechanism does) to 1; else "no in-context head" ("not measured" without those numbers);
    * the memories (W_O², W_K², W_K¹) whose recall probe rose at least ``MIN_RISE`` of its range
      over training (``rise.<m>``, the order claim's own rule), or "no memory rose".
    """
    icl, base = n.get("icl_acc"), n.get("baseline.icl_acc")
    if icl is None or base is None or icl != icl or base != base:
        return "not measured"
    head = "in-context head" if icl > base + (1.0 - base) / 2 else "no in-context head"
    rose = [HALF[m][0].split()[0] for m in MEMORIES
            if n.get(f"rise.{m}", 0.0) >= MIN_RISE * span(n, m)]
    return f"{head}; " + (f"memories {', '.join(rose)}" if rose else "no memory rose")


# The label of a map row that says the paper's mechanism holds: the in-context head formed and
# every memory of the induction circuit rose (``mechanism_label``'s own words)
MAP_LABEL = "in-context head; memories " + ", ".join(HALF[m][0].split()[0] for m in MEMORIES)


def _experiment_of(entry: ZooEntry) -> Experiment:
    return Experiment.from_dict({k: entry.meta[k] for k in ("name", "task", "model", "train")
                                 if k in entry.meta})


@torch.no_grad()
def map_row(run, size: str, seed: int) -> dict[str, object]:
    """One map run's row (``toymech.maps``): the final in-context and bigram accuracy beside the
    exact bigram model's on the run's test set, each memory's recall probe at initialisation and
    at the end (``probe.<m>.init`` / ``.final``, on the seed's probe batch: ``birth_callback``),
    whether the in-context head formed and each memory rose (yes / no, ``mechanism_label``'s
    rules) and the run's ``mechanism_label``. ``run``: a zoo entry (its own task; its initial
    weights rebuilt from its config) or a bare model (measured as a run that never trained, on
    the main experiment's task at ``size``)."""
    if isinstance(run, HookedTransformer):
        task, final, initial = experiment(size, seed).task, run, run
    else:
        exp = _experiment_of(run)
        task, final = exp.task, run.model
        initial = (run.model_at(0) if 0 in run.snapshot_steps
                   else build_model(exp.model, final.cfg.device))
    cb = birth_callback(task, seed=seed, linear_probes=False)
    steps = float(size_of(SIZES, size).steps)
    history = [{"step": 0.0, **cb(0, initial.eval())}, {"step": steps, **cb(int(steps), final.eval())}]
    n = numbers({"history": history, "d_vocab": task.d_vocab,
                 "baseline": bigram_baseline(task, size, seed, final.cfg.device)})
    row: dict[str, object] = {k: round(n[k], 4) for k in ("icl_acc", "bigram_acc",
                                                            "baseline.icl_acc",
                                                            "baseline.bigram_acc") if k in n}
    for m in MEMORIES:
        key = HALF[m][1]
        row[f"probe.{m}.init"] = round(float(history[0].get(key, float("nan"))), 4)
        row[f"probe.{m}.final"] = round(float(history[-1].get(key, float("nan"))), 4)
    label = mechanism_label(n)
    row["in_context_head"] = "yes" if label.startswith("in-context head") else "no"
    row.update({f"rose.{m}": "yes" if n.get(f"rise.{m}", 0.0) >= MIN_RISE * span(n, m) else "no"
                for m in MEMORIES})
    row["label"] = label
    return row
