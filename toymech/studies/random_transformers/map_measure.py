"""Study 3's measurement for maps (``toymech.maps``): one run's row, its state and its label.

**Baselines: the predictors without the mechanism.** Each is computed exactly on the run's own
sets (the ones ``row_for`` scores it on), in the row's own unit (``acc``: the whole answer):

* ``constant``: always the most frequent whole answer (``analysis.chance``), every task;
* parentheses, ``counts``: balanced iff the string holds as many ``(`` as ``)``. Among the
  predictors that read the string as a bag of tokens (blind to order, so blind to the running
  depth the task is about) it is the best for this task's strings: unequal counts are never
  balanced, and of the strings with equal counts more than half are (the balanced half of the
  draw against the equal-count quarter that is balanced by chance);
* needle, ``listed`` (a value listed in the sequence, uniformly: ``analysis.chance``) and
  ``query_blind``: the most frequent listed value (ties split evenly). The query names each
  listed pair with the same chance, so no predictor that does not read the query key scores
  more in expectation than the share of the commonest listed value: it is the best one;
* decimal addition, ``digitwise``: each digit of the sum the most frequent one at its place;
* modular addition: the constant alone. On held-out pairs ``(a + b) mod p`` is uniform given
  either operand alone, so every one-operand predictor scores ``1/p`` in expectation, at most
  the constant's share of the set.

``baseline`` is the best of them and ``beyond_baseline`` (``summary.BEYOND``) the run's test
accuracy minus it. Two predictors that do part of the task are reported beside it, never used as
its baseline (a reader weighs them): ``partial.counts_ends`` (parentheses: equal counts, opening
with ``(`` and closing with ``)``, the depth checked at two of its places) and
``partial.carry_free`` (decimal addition: each digit ``a_i + b_i mod 10``, no carry).

**Margins, fixed before any map used them.** ``noise_margin(b, n)`` is ``Z_NOISE = 3`` binomial
standard errors of an accuracy ``b`` over ``n`` answers, ``3 sqrt(b (1 - b) / n)``, at least
``1/n``: a run no better than the baseline exceeds it by that with a chance of about one in 700
(normal approximation). ``solve_margin(b, n)`` is the larger of it and half the way from ``b``
to 1 (the claims' own ``task_solved`` rule, "half way from chance to 1", with the best baseline
for chance). On 2,048 answers: about 3.3 points at ``b = 0.5``, 2.8 at 0.76.

**States** (``toymech.maps.summary``), in this order:

1. ``still learning``: the run logged a history, its stop rule never fired (no row carries
   ``stop_step``) and its training loss or its held-out loss (``train_loss``, ``eval_loss``)
   was still falling at the end by ``analysis.dynamics.history_still_learning`` (more than
   0.02 nats over the last fifth of its steps), or its log is too short to tell: it has not
   shown that it stopped learning. A run that never trained (no history) is not learning;
2. ``untrained``: its accuracy on a set drawn from its training distribution (the ``train``
   set; ``test`` where a task has none) is not beyond that set's best baseline by
   ``noise_margin``;
3. ``learned`` otherwise.

**Label** (learned runs only, ``""`` for every other): ``solved`` when the test accuracy passes
the claims' ``task_solved`` (``over_seeds.solved_label``: at least 0.95 and half way from the
constant to 1) and is beyond the best baseline by ``solve_margin``; ``not solved`` otherwise.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Mapping, Sequence

import torch

from ...analysis.chance import listed_value_accuracy, sequence_constant_accuracy
from ...analysis.dynamics import history_still_learning
from ...core import check
from ..states import BEYOND, LEARNED, STILL_LEARNING, UNTRAINED
from ...sweep.table import knob_columns
from ...tasks.base import Batch, Task
from ...tasks.parentheses import CLOSE, OPEN, QUERY, YES
from ...training import Experiment
from .design import eval_sets
from .measure import row_for
from .over_seeds import solved_label

MAP_LABEL = "solved"  # the label of a map row that says the run solved its task
Z_NOISE = 3.0  # standard errors a run must clear beyond a baseline (see the module docstring)
LOSS_KEYS = ("train_loss", "eval_loss")  # the logged losses the still-learning rule reads


def _answers(batch: Batch) -> list[tuple[int, ...]]:
    """Each row's scored targets, in order (its whole answer)."""
    tokens, mask = batch.tokens[:, 1:].cpu(), batch.target_mask.cpu()
    return [tuple(tokens[r][mask[r]].tolist()) for r in range(len(tokens))]


def counts_accuracy(batch: Batch, ends: bool = False) -> float:
    """Parentheses: the accuracy of answering "balanced" iff the string has as many ``(`` as
    ``)`` (the best order-blind predictor, see the module docstring) on ``batch``; with ``ends``
    also requiring it to open with ``(`` and close with ``)`` (a partial balance check)."""
    tokens = batch.tokens.cpu()
    guess = (tokens == OPEN).sum(1) == (tokens == CLOSE).sum(1)
    if ends:
        length = (tokens == QUERY).int().argmax(1)
        rows = torch.arange(len(tokens))
        guess &= (tokens[:, 0] == OPEN) & (tokens[rows, (length - 1).clamp(min=0)] == CLOSE)
    answer = torch.tensor([a[0] for a in _answers(batch)]) == YES
    return float((guess == answer).float().mean())


def query_blind_accuracy(batch: Batch, query_token: int) -> float:
    """Needle: the expected accuracy of answering the most frequent value listed before the
    query marker ``query_token`` (ties split evenly), over every scored answer of ``batch``."""
    tokens = batch.tokens.cpu().tolist()
    hits, scored = 0.0, 0
    for row, answer in zip(tokens, _answers(batch)):
        listed = row[1:row.index(query_token):2]  # the values follow their keys
        counts = Counter(listed)
        top = max(counts.values(), default=0)
        modes = {v for v, c in counts.items() if c == top}
        hits += sum(1.0 / len(modes) for a in answer if a in modes)
        scored += len(answer)
    check(scored > 0, "batch", tuple(batch.tokens.shape), "a needle batch with scored answers")
    return hits / scored


def digitwise_accuracy(batch: Batch) -> float:
    """Decimal addition: the share of rows whose every scored digit is the most frequent digit at
    its place in ``batch`` (the best input-blind predictor digit by digit, on whole answers)."""
    answers = torch.tensor(_answers(batch))
    best = torch.mode(answers, dim=0).values
    return float((answers == best).all(1).float().mean())


def carry_free_accuracy(batch: Batch, n_digits: int) -> float:
    """Decimal addition: the share of rows whose sum is each place's ``a_i + b_i mod 10`` with a
    top digit 0 (addition without the carry; ``n_digits`` per operand)."""
    tokens = batch.tokens.cpu()
    a, b = tokens[:, :n_digits], tokens[:, n_digits + 1: 2 * n_digits + 1]
    guess = torch.cat([(a + b) % 10, torch.zeros(len(tokens), 1, dtype=torch.long)], 1)
    return float((guess == torch.tensor(_answers(batch))).all(1).float().mean())


def baselines(task: Task, batch: Batch) -> dict[str, float]:
    """{name: whole-answer accuracy} of the predictors without the mechanism that exist for
    ``task`` (see the module docstring), computed exactly on ``batch``."""
    out = {"constant": sequence_constant_accuracy(batch)}
    if task.name == "parentheses":
        out["counts"] = counts_accuracy(batch)
    elif task.name == "needle":
        out["listed"] = listed_value_accuracy(batch, task.n_keys)
        out["query_blind"] = query_blind_accuracy(batch, task.query_token)
    elif task.name == "decimal_addition":
        out["digitwise"] = digitwise_accuracy(batch)
    return out


def partials(task: Task, batch: Batch) -> dict[str, float]:
    """{name: whole-answer accuracy} of the predictors that do part of ``task`` (reported beside
    the baselines, never one of them), computed exactly on ``batch``."""
    if task.name == "parentheses":
        return {"counts_ends": counts_accuracy(batch, ends=True)}
    if task.name == "decimal_addition":
        return {"carry_free": carry_free_accuracy(batch, task.n_digits)}
    return {}


def noise_margin(baseline: float, n: int) -> float:
    """``Z_NOISE`` binomial standard errors of an accuracy ``baseline`` over ``n`` answers, at
    least ``1/n``: how far beyond a baseline a run must be to have beaten it."""
    check(isinstance(n, int) and n >= 1, "n", n, "a number of answers >= 1")
    check(0.0 <= baseline <= 1.0, "baseline", baseline, "an accuracy in [0, 1]")
    return max(Z_NOISE * math.sqrt(baseline * (1.0 - baseline) / n), 1.0 / n)


def solve_margin(baseline: float, n: int) -> float:
    """How far beyond the best ``baseline`` (over ``n`` answers) a solved run must be: the larger
    of ``noise_margin`` and half the way from it to 1."""
    return max(noise_margin(baseline, n), (1.0 - baseline) / 2)


def still_learning_at_end(history: Sequence[Mapping[str, float]] | None) -> bool:
    """Whether a run with the logged ``history`` (its rows, as the training loop logs them; None
    or empty: it never trained) had not stopped learning: its stop rule never fired and one of
    ``LOSS_KEYS`` was still falling at the end (``history_still_learning``), or the log is too
    short to tell."""
    if not history:
        return False
    if any("stop_step" in r for r in history):
        return False
    verdicts = [history_still_learning(history, key) for key in LOSS_KEYS
                if any(key in r for r in history)]
    return not verdicts or any(v is None or v for v in verdicts)


def map_state(history: Sequence[Mapping[str, float]] | None, acc: float, baseline: float,
              n: int) -> str:
    """The run's state (the module docstring's rule): ``still learning`` by its ``history``
    (``still_learning_at_end``), else ``untrained`` where ``acc`` (on its training distribution)
    is not beyond that set's best ``baseline`` by ``noise_margin(baseline, n)`` (``n``: the
    set's answers), else ``learned``."""
    if still_learning_at_end(history):
        return STILL_LEARNING
    if acc - baseline <= noise_margin(baseline, n):
        return UNTRAINED
    return LEARNED


def map_label(state: str, numbers: Mapping[str, float], task: str, mode: str, beyond: float,
              margin: float) -> str:
    """A learned run's label, ``""`` for any other ``state``: ``solved`` when ``numbers``
    (``acc.<task>.<mode>.run``, ``chance.<task>``) pass the claims' rule (``solved_label``) and
    the run is ``beyond`` the best baseline by at least ``margin``; ``not solved`` otherwise."""
    if state != LEARNED:
        return ""
    label = solved_label(numbers, task, mode, "run")
    return "solved" if label == "solved" and beyond >= margin else "not solved"


def _whole(got: Mapping[str, Any], prefix: str) -> float | None:
    """The whole-answer accuracy ``row_for`` measured on one set (``prefix``: "" or "train_")."""
    if prefix == "":
        return got.get("acc")
    return got.get(f"{prefix}seq_acc", got.get(f"{prefix}acc"))


@torch.no_grad()
def map_row(run, size: str, seed: int) -> dict[str, object]:
    """One map run's row (``toymech.maps``): its task and freezing mode, its accuracy and loss on
    its own held-out test set, each baseline without the mechanism on that set (``baseline.*``,
    the best in ``baseline``, the run's distance beyond it in ``beyond_baseline``; the partial
    predictors in ``partial.*``), the margins, the run's ``state`` and its ``label`` (the module
    docstring's rules; ``""`` unless learned), and ``solved`` (yes / no).

    ``run``: a zoo entry (its own experiment: the task, the mode and the logged history are the
    run's), or a model with ``meta`` (e.g. an untrained ``ZooEntry``: the null); ``size``: the
    map's size (its evaluation sets' sizes); ``seed``: the run's seed (its evaluation sets are its
    ``eval`` stream's, as ``row_for`` draws them)."""
    check(hasattr(run, "meta") and hasattr(run, "model"), "run", type(run).__name__,
          "a zoo entry (a bare model does not say the task it was trained on)")
    exp = Experiment.from_dict({k: run.meta[k] for k in ("name", "task", "model", "train")
                                if k in run.meta})
    model = run.model.eval()
    got = row_for(exp, model, size)
    sets = eval_sets(exp.task, size, exp.train.seed, next(model.parameters()).device)
    task, mode = got["task"], got["mode"]
    test = baselines(exp.task, sets["test"])
    best = max(test.values())
    n_test = len(sets["test"])
    beyond = float(got["acc"]) - best
    own = "train" if "train" in sets and _whole(got, "train_") is not None else "test"
    train_best = max(baselines(exp.task, sets[own]).values()) if own == "train" else best
    train_acc = float(_whole(got, "train_" if own == "train" else ""))
    state = map_state(run.meta.get("history"), train_acc, train_best, len(sets[own]))
    margin = solve_margin(best, n_test)
    numbers_ = {f"acc.{task}.{mode}.run": got["acc"], f"chance.{task}": got["chance"]}
    label = map_label(state, numbers_, task, mode, beyond, margin)
    row: dict[str, object] = {"task": task, "mode": mode, "width": got["width"]}
    row.update({k: round(float(got[k]), 4) for k in ("acc", "loss", "chance", "chance_loss",
                                                     "digit_acc") if k in got})
    row.update({f"baseline.{k}": round(v, 4) for k, v in test.items()})
    row.update({f"partial.{k}": round(v, 4) for k, v in partials(exp.task, sets["test"]).items()})
    row.update({"baseline": round(best, 4), BEYOND: round(beyond, 4),
                "solve_margin": round(margin, 4), "acc_train": round(train_acc, 4),
                "baseline_train": round(train_best, 4),
                "noise_margin_train": round(noise_margin(train_best, len(sets[own])), 4),
                "state": state, "solved": "yes" if label == "solved" else "no", "label": label})
    return row


def state_table(table) -> str:
    """A study-3 map ``table`` (one row per run, as ``toymech map`` writes it: its ``knob.*``
    columns, ``mode``, ``acc``, ``baseline``, ``state`` and ``label``) as a markdown table, one
    row per cell (the runs of one experiment at one value of every knob, in the table's order):
    its knobs and mode, the test accuracy of every run (min / median / max, whatever its state),
    the best baseline's median, the runs labelled ``solved`` and each state's runs (a run without
    a ``state``, or a sweep status other than ``ok``, is counted by its status). The record quotes
    it (tested against the table)."""
    named = knob_columns(table)  # {knob: its column}
    knobs = list(named.values())
    lines = ["| " + " | ".join([*named, "mode",
                                 "acc min / median / max", "baseline", "solved", "states"]) + " |",
             "| " + " | ".join(["---"] * (len(knobs) + 5)) + " |"]
    for _, runs in table.groupby(["experiment", *knobs], sort=False, dropna=False):
        acc = runs["acc"].astype(float)
        status = runs["status"] if "status" in runs else ["ok"] * len(runs)
        states = Counter(str(st) if ok == "ok" else str(ok)
                         for ok, st in zip(status, runs["state"]))
        said = ", ".join(f"{n} {st}" for st, n in sorted(states.items()))
        solved = int((runs["label"].astype(str) == MAP_LABEL).sum())
        lines.append("| " + " | ".join([*(str(runs[k].iloc[0]) for k in knobs),
                                        str(runs["mode"].iloc[0]),
                                        f"{acc.min():.3f} / {acc.median():.3f} / {acc.max():.3f}",
                                        f"{runs['baseline'].astype(float).median():.3f}",
                                        f"{solved} of {len(runs)}", said]) + " |")
    return "\n".join(lines)
