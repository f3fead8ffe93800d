"""Birth's measurement for maps (``toymech.maps``): one run's row, its state and its label.

A run is scored on its own test set (its training distribution, the 'eval' stream of its seed:
``icl_acc``, ``bigram_acc``), and so is every predictor without the in-context mechanism it is
held against:

* the exact bigram model (``tasks.bigram_triggers.bigram_predictor_metrics``: knows pi_b and the
  current token, nothing in context; ``baseline.*`` columns, the claims' trivial predictor);
* the null family (``nulls.NULL_FAMILY``, Birth's one list of them: chance, unigram, bigram,
  the context and recency caches, the copier k back), each member at its best parameter on that
  very set; ``null.icl_acc`` is the best member's, ``null.member`` names it.

``beyond_baseline`` is the run's in-context accuracy minus the better of the two (accuracy
points; positive: better than every predictor without the mechanism).

The rule (``judge``), written before the map it judges was run:

* the states come in the one order every study uses (``studies.states.state_of``):
  ``still learning`` where the run's held-out loss (``eval_loss``, logged every ``eval_every``
  steps on a fixed batch) was still falling when it stopped
  (``analysis.dynamics.history_still_learning`` over the study's ``STILL_LEARNING_WINDOW`` of
  steps, the generic tolerance per 1,000 steps); then ``untrained``: ``beyond_baseline`` below
  ``UNTRAINED_MARGIN`` = 0.05, the run did not beat the best predictor without the mechanism on
  its own training distribution (0.05 is five standard errors of an accuracy on the ~3,000
  in-context targets of a ``default`` test set, at most sqrt(0.25 / 3,000) = 0.009 each: the
  claims' own ``MARGIN``); then ``still learning`` again where the log cannot show the run
  stopped (too short a log); a bare model that never trained is judged on its level alone;
* ``learned`` otherwise, and only then a label (``mechanism_label``): "in-context head" when the
  in-context accuracy passes the claim ``induction-forms``' own cut, >= ``FORMED`` (0.8) and
  >= the best baseline + ``ABOVE_BASELINE`` (0.3) (the claim's baseline is the bigram model,
  never above the null family's best, which holds it: a map head implies the claim
  holds on that seed), else "no in-context head"; then the memories whose recall probe rose.

The structural columns (``structure.structure_row``: recall margins and their share of the way
to the construction, cosines with it, read through the run's own and its initial matrices; the
overlap of the token and position embeddings; the exact lists of matrices trained and frozen)
are what the design map's comparisons read (``design_map``); the label does not.

The argmax probes and what they cover (columns, per row): the W_K² probe reads the triggers
only when the triggers are fixed (``probe.W_K2.reads``: 3 tokens of 65 at K = 3, so one trigger
is a third of its range) and every token otherwise; W_O² every token; W_K¹ every position. Each
reads through matrices the run may have trained (``probes.through``): W_K² through W_E and OV¹
(layer 0's W_V W_O), W_O² through W_E and W_U, W_K¹ through W_pos. ``probe.<m>.recalled`` is
how many of the tokens (positions) it reads are recalled at the end.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ...analysis.dynamics import history_still_learning
from ...core import Setting
from ...models import build_model
from ...sweep.table import knob_column, knob_columns
from ...training import Experiment
from ...zoo import ZooEntry
from ..protocol import size_of
from ..states import BEYOND, LEARNED, STILL_LEARNING, state_of
from .callbacks import birth_callback, trigger_sets
from .claims import ABOVE_BASELINE, FORMED, HALF, MARGIN, MIN_RISE, numbers, span
from .design import SIZES, eval_sets, experiment
from .measure import bigram_baseline
from .nulls import best_null
from .structure import structure_row

MEMORIES = ("W_O2", "W_K2", "W_K1")
UNTRAINED_MARGIN = MARGIN  # accuracy points beyond the best baseline (module docstring)
STILL_LEARNING_KEY = "eval_loss"  # the logged loss the still-learning rule reads
# The study's runs are shorter than the generic 1,000-step window (400 steps at default): its
# window, fixed once for every run it judges (the tolerance per 1,000 steps is the generic one)
STILL_LEARNING_WINDOW = 200
# what each probe reads through: {memory: {matrix: parameter names}}
THROUGH = {"W_K2": {"W_E": ("embed.W_E",), "OV¹": ("blocks.0.attn.W_V", "blocks.0.attn.W_O")},
           "W_O2": {"W_E": ("embed.W_E",), "W_U": ("unembed.W_U",)},
           "W_K1": {"W_pos": ("pos_embed.W_pos",)}}


def head_formed(n: Mapping[str, float]) -> bool | None:
    """Whether the in-context head formed, by the claim ``induction-forms``' cut over the best
    baseline: ``icl_acc >= FORMED`` and ``>= best + ABOVE_BASELINE``, ``best`` the larger of
    ``baseline.icl_acc`` (bigram model) and ``null.icl_acc`` (the null family's best, where
    measured). None without those numbers."""
    icl, best = n.get("icl_acc"), best_baseline(n)
    if icl is None or best is None or icl != icl:
        return None
    return icl >= FORMED and icl >= best + ABOVE_BASELINE


def best_baseline(n: Mapping[str, float]) -> float | None:
    """The best in-context accuracy of a predictor without the mechanism in ``n`` (None: none)."""
    vals = [n[k] for k in ("baseline.icl_acc", "null.icl_acc") if k in n and n[k] == n[k]]
    return max(vals) if vals else None


def mechanism_label(n: Mapping[str, float]) -> str:
    """The label of a learned run from its numbers ``n``: "in-context head" or "no in-context
    head" (``head_formed``; "not measured" without the numbers), then the memories (W_O², W_K²,
    W_K¹) whose recall probe rose at least ``MIN_RISE`` of its range over training
    (``rise.<m>``, the order claim's own rule), or "no memory rose"."""
    formed = head_formed(n)
    if formed is None:
        return "not measured"
    head = "in-context head" if formed else "no in-context head"
    rose = [HALF[m][0].split()[0] for m in MEMORIES if _rose(n, m)]
    return f"{head}; " + (f"memories {', '.join(rose)}" if rose else "no memory rose")


def _rose(n: Mapping[str, float], m: str) -> bool:
    return n.get(f"rise.{m}", 0.0) >= MIN_RISE * span(n, m)


def judge(n: Mapping[str, float], still: bool | None) -> tuple[str, str]:
    """(state, label) of a run (the module's rule): ``n`` its numbers (``icl_acc`` and the
    baselines' ``baseline.icl_acc`` / ``null.icl_acc``, the rises), ``still`` whether its
    logged loss was still falling (None: cannot tell, or no log). The label is empty unless the
    state is ``LEARNED``."""
    best, icl = best_baseline(n), n.get("icl_acc")
    if best is None or icl is None or icl != icl:
        return (STILL_LEARNING, "") if still is True else (LEARNED, "not measured")
    state = state_of(learned=icl - best >= UNTRAINED_MARGIN, learning=still)
    return state, (mechanism_label(n) if state == LEARNED else "")


# The label of a map row that says the paper's mechanism holds: the in-context head formed and
# every memory of the induction circuit rose (``mechanism_label``'s own words)
MAP_LABEL = "in-context head; memories " + ", ".join(HALF[m][0].split()[0] for m in MEMORIES)


def _experiment_of(entry: ZooEntry) -> Experiment:
    return Experiment.from_dict({k: entry.meta[k] for k in ("name", "task", "model", "train")
                                 if k in entry.meta})


def through(freeze: Sequence[str]) -> str:
    """The matrices the probes read through, trained or frozen under the freeze patterns
    ``freeze``: ``trained W_E, W_U; frozen W_pos, OV¹`` (``THROUGH``)."""
    names = {m: ps for per in THROUGH.values() for m, ps in per.items()}
    frozen = [m for m, ps in names.items()
              if all(any(fnmatch.fnmatchcase(p, f) for f in freeze) for p in ps)]
    trained = [m for m in names if m not in frozen]
    parts = ([f"trained {', '.join(trained)}"] if trained else []) + (
        [f"frozen {', '.join(frozen)}"] if frozen else [])
    return "; ".join(parts)


def coverage(task, final: Mapping[str, float]) -> dict[str, Any]:
    """Per probe, how many tokens (positions, for W_K¹) it reads on ``task`` and how many of
    them are recalled at the end (``final``: the probes' values, shares in [0, 1])."""
    triggers, _ = trigger_sets(task)
    reads = {"W_K2": task.d_vocab if triggers is None else len(triggers), "W_O2": task.d_vocab,
             "W_K1": task.seq_len - 1}
    out: dict[str, Any] = {}
    for m, count in reads.items():
        out[f"probe.{m}.reads"] = int(count)
        v = final.get(m)
        if v is not None and v == v:
            out[f"probe.{m}.recalled"] = int(round(v * count))
    return out


def _still(history: Sequence[Mapping[str, float]] | None) -> bool | None:
    if not history:  # a bare model that never trained: nothing to continue
        return False
    try:
        return history_still_learning(history, STILL_LEARNING_KEY, STILL_LEARNING_WINDOW)
    except ValueError:  # a non-finite loss: a diverged run, which the sweep calls so
        return None


def calibrated_lr(table: pd.DataFrame, knob: str = "lr") -> dict[tuple, float]:
    """Each arm's learning rate from a calibration map's ``table`` (one row per run, on
    calibration seeds only): an arm is a value of every knob but ``knob``; its learning rate is
    the one whose runs (those that did not diverge or fail) reach the highest median final
    in-context accuracy on their own test sets, the smaller learning rate where two are within
    ``UNTRAINED_MARGIN`` of each other (further from divergence). Where the table has a
    ``state`` column, only learning rates whose runs all learned and stopped learning
    (``LEARNED``) are candidates, if any are (the budget must train the arm to the end, or the
    judged runs read "still learning"). Returns {arm: lr}, the arm as the tuple of its knob
    columns' values in the table's order (``lr`` excluded); an arm every run of which diverged
    is left out."""
    column = knob_column(knob)
    arms = [c for c in knob_columns(table).values() if c != column]
    ok = table[(table["status"] == "ok") & table["icl_acc"].notna()] if "status" in table \
        else table[table["icl_acc"].notna()]
    out: dict[tuple, float] = {}
    for arm, runs in ok.groupby(arms, sort=False):
        arm = arm if isinstance(arm, tuple) else (arm,)
        if "state" in runs:
            done = runs.groupby(column)["state"].agg(lambda v: bool((v == LEARNED).all()))
            if done.any():
                runs = runs[runs[column].map(done)]
        acc = runs.groupby(column)["icl_acc"].median()
        lrs = sorted(((float(lr), float(a)) for lr, a in acc.items()), key=lambda p: p[0])
        top = max(a for _, a in lrs)
        out[tuple(str(v) for v in arm)] = next(lr for lr, a in lrs
                                              if a >= top - UNTRAINED_MARGIN and math.isfinite(a))
    return out


@torch.no_grad()
def map_row(run, size: Setting | str, seed: int) -> dict[str, object]:
    """One map run's row (``toymech.maps``), see the module docstring: the final in-context and
    bigram accuracy on the run's test set beside the bigram model's and the null family's best
    (``null.icl_acc``, ``null.member``), ``beyond_baseline``, the learning rate, each memory's
    argmax recall probe at initialisation and at the end (``probe.<m>.init`` / ``.final``, on the
    seed's probe batch: ``birth_callback``) with its coverage and what it reads through, the
    structural columns (``structure.structure_row``), whether the in-context head formed and each
    memory rose, ``still_learning`` (yes / no / unknown), the run's ``state`` and its ``label``
    (``judge``). ``run``: a zoo entry (its own task; its initial weights rebuilt from its
    config) or a bare model (a run that never trained, on the main experiment's task at
    ``size``); ``size``: the run's size (a variant too); ``seed``: its seed (the streams of its
    test set and probe batch)."""
    if isinstance(run, HookedTransformer):
        exp, final, initial, log = experiment(size, seed), run, run, None
    else:
        exp = _experiment_of(run)
        final, log = run.model, run.meta.get("history")
        initial = (run.model_at(0) if 0 in run.snapshot_steps
                   else build_model(exp.model, final.cfg.device))
    final, initial, task = final.eval(), initial.eval(), exp.task
    cb = birth_callback(task, seed=seed, linear_probes=False)
    steps = float(size_of(SIZES, size).steps)
    history = [{"step": 0.0, **cb(0, initial)}, {"step": steps, **cb(int(steps), final)}]
    test = eval_sets(task, size, seed, final.cfg.device)["test"]
    scored = task.metrics(final(test.tokens), test)  # the run on the set its nulls are scored on
    null = best_null(task, test)
    n = numbers({"history": history, "d_vocab": task.d_vocab,
                 "baseline": bigram_baseline(task, size, seed, final.cfg.device)})
    n.update({k: scored[k] for k in ("icl_acc", "bigram_acc")})
    if null["icl_acc"] == null["icl_acc"]:
        n["null.icl_acc"] = null["icl_acc"]
    n = {k: v for k, v in n.items() if v == v}
    row: dict[str, object] = {k: round(n[k], 4) for k in ("icl_acc", "bigram_acc",
                                                            "baseline.icl_acc",
                                                            "baseline.bigram_acc",
                                                            "null.icl_acc") if k in n}
    row["null.member"] = null["member"]
    best = best_baseline(n)
    row[BEYOND] = round(n["icl_acc"] - best, 4) if best is not None and "icl_acc" in n else float("nan")
    row["lr"] = float(exp.train.lr)
    finals = {}
    for m in MEMORIES:
        key = HALF[m][1]
        row[f"probe.{m}.init"] = round(float(history[0].get(key, float("nan"))), 4)
        row[f"probe.{m}.final"] = finals[m] = round(float(history[-1].get(key, float("nan"))), 4)
    row.update(coverage(task, finals))
    row["probes.through"] = through(exp.train.freeze)
    triggers, non_triggers = trigger_sets(task)
    row.update(structure_row(final, initial, task.pi_b, triggers, non_triggers, exp.train.freeze))
    still = _still(log)
    state, label = judge(n, still)
    row["in_context_head"] = "yes" if head_formed(n) else "no"
    row.update({f"rose.{m}": "yes" if _rose(n, m) else "no" for m in MEMORIES})
    row["still_learning"] = {True: "yes", False: "no", None: "unknown"}[still]
    row["state"] = state
    row["label"] = label
    return row
