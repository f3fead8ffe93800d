"""Study 3's measurement for maps (``toymech.maps``): one run's row, its state and its label.

**The null family: every predictor without the mechanism the label is judged against**, declared
once in ``NULL_FAMILY`` (per task; ``null_scores`` scores each exactly on a set, in the row's own
unit, ``acc``: the whole answer). The mechanism is the algorithm the task asks for (a running
depth for parentheses, a look-up by the query key for the needle, the carry for decimal
addition, the sum itself for modular addition); each member does without it, and each is an
algorithm a small model of the map's family can implement:

* ``constant``: always the most frequent whole answer on the set (``analysis.chance``), every
  task;
* parentheses, ``counts``: balanced iff the string holds as many ``(`` as ``)``. Among the
  predictors that read the string as a bag of tokens (blind to order, so blind to the running
  depth the task is about) it is the best for this task's strings: unequal counts are never
  balanced, and of the strings with equal counts more than half are (the balanced half of the
  draw against the equal-count quarter that is balanced by chance);
* parentheses, ``counts_ends``: equal counts, opening with ``(`` and closing with ``)``: the
  depth read at two places, never followed along the string;
* needle, ``listed`` (a value listed in the sequence, uniformly: ``analysis.chance``) and
  ``query_blind``: the most frequent listed value (ties split evenly). The query names each
  listed pair with the same chance, so no predictor that does not read the query key scores
  more in expectation than the share of the commonest listed value: it is the best one;
* decimal addition, ``digitwise``: each digit of the sum the most frequent one at its place;
  ``carry_free``: each digit ``a_i + b_i mod 10``, no carry;
* modular addition: the constant alone. On held-out pairs ``(a + b) mod p`` is uniform given
  either operand alone, so every one-operand predictor scores ``1/p`` in expectation, at most
  the constant's share of the set.

The ``TRIVIAL`` members (the constant, the bag-of-tokens and input-blind predictors) say whether a
run learned anything (its state); the whole family is the label's bar. ``baseline`` is the
family's best on the run's test set and ``beyond_baseline`` (``summary.BEYOND``) the run's test
accuracy minus it; ``tests/test_rt_map.py`` scores every member as a run would be scored and
finds none labelled ``solved``.

**Margins, fixed before any map used them.** ``noise_margin(b, n)`` is ``Z_NOISE = 3`` binomial
standard errors of an accuracy ``b`` over ``n`` answers, ``3 sqrt(b (1 - b) / n)``, at least
``1/n``: a run no better than the baseline exceeds it by that with a chance of about one in 700
(normal approximation). ``solve_margin(b, n)`` is the larger of it and half the way from ``b``
to 1 (the claims' own ``task_solved`` rule, "half way from chance to 1", with the best baseline
for chance). On 2,048 answers: about 3.3 points at ``b = 0.5``, 2.8 at 0.76.

**The cut and its interval.** A run is ``solved`` when its test accuracy reaches ``solve_cut``:
the claims' ``solved_floor`` (at least 0.95 and half way from the constant to 1) and the
family's best plus ``solve_margin``, whichever is higher. ``acc_low`` / ``acc_high`` are the
exact 95 % interval of the run's accuracy over its test answers (Clopper-Pearson,
``analysis.exact.share_interval``); a run whose interval holds the cut strictly above its low
end (``acc_low < solve_cut <= acc_high``) could read either way on another draw of its test
set: ``undecided``. So is every learned run on a set where the cut lies above 1: the family's
best leaves no room for the margin there, so the set cannot show the label either way (at
``smoke`` the parentheses strings are short enough that ``counts_ends`` answers all of them).

**Why a run stopped** (``stopped_by``, ``analysis.dynamics.stop_reason``): ``stop rule`` (the
recipe's rule fired: its held-out accuracy reached the rule's value), ``schedule ended`` (its
cosine learning rate ran down to zero before the rule fired), ``steps`` (it ran its steps with
the learning rate on). A run whose schedule ended is not shown to have converged: its loss
flattens because the learning rate reaches zero, so ``history_still_learning`` cannot tell
(None), and such a run carries no label: it is ``still learning``, which the map turns into
``budget exhausted`` (``maps.summary.budget_state``: the map gives it no more steps), unless it
is ``untrained``.

**States**, in the one order of ``studies.states.state_of``:

1. ``still learning``: one of its logged losses (``train_loss``, ``eval_loss``) was still falling
   at the end (``analysis.dynamics.history_still_learning``: faster than 0.02 nats per 1,000
   steps over its last 1,000 steps). A run that never trained (no history) is not learning;
2. ``untrained``: its accuracy on a set drawn from its training distribution (the ``train``
   set; ``test`` where a task has none) is not beyond that set's best ``TRIVIAL`` predictor by
   ``noise_margin``;
3. ``still learning``: its log cannot show that it stopped (its schedule ran down to zero, or
   the log is too short); the map makes it ``budget exhausted``;
4. ``undecided``: its accuracy's interval straddles the cut, or the cut lies above 1;
5. ``learned`` otherwise.

**Label** (learned runs only, ``""`` for every other): ``solved`` when the test accuracy reaches
``solve_cut``; ``not solved`` otherwise.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ...analysis.chance import listed_value_accuracy, sequence_constant_accuracy
from ...analysis.dynamics import history_still_learning, stop_reason
from ...analysis.exact import share_interval
from ...core import Setting, check
from ...tasks.base import Batch, Task
from ...tasks.parentheses import CLOSE, OPEN, QUERY, YES
from ...training import Experiment
from ..states import BEYOND, LEARNED, state_of
from .claims import solved_floor
from .design import eval_sets
from .measure import row_for

MAP_LABEL = "solved"  # the label of a map row that says the run solved its task
Z_NOISE = 3.0  # standard errors a run must clear beyond a baseline (see the module docstring)
LOSS_KEYS = ("train_loss", "eval_loss")  # the logged losses the still-learning rule reads
# The null family (module docstring), per task: every predictor without the mechanism that the
# label is judged against; a task not named has the constant alone.
NULL_FAMILY: dict[str, tuple[str, ...]] = {
    "parentheses": ("constant", "counts", "counts_ends"),
    "needle": ("constant", "listed", "query_blind"),
    "decimal_addition": ("constant", "digitwise", "carry_free"),
    "modular_addition": ("constant",),
}
TRIVIAL = ("constant", "counts", "listed", "query_blind", "digitwise")  # the untrained bar


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


def family(task: Task) -> tuple[str, ...]:
    """The null family's members for ``task`` (``NULL_FAMILY``; the constant alone for a task
    it does not name)."""
    return NULL_FAMILY.get(task.name, ("constant",))


def null_scores(task: Task, batch: Batch) -> dict[str, float]:
    """{member: whole-answer accuracy} of every member of ``task``'s null family (the module
    docstring), computed exactly on ``batch``."""
    scorers = {
        "constant": lambda: sequence_constant_accuracy(batch),
        "counts": lambda: counts_accuracy(batch),
        "counts_ends": lambda: counts_accuracy(batch, ends=True),
        "listed": lambda: listed_value_accuracy(batch, task.n_keys),
        "query_blind": lambda: query_blind_accuracy(batch, task.query_token),
        "digitwise": lambda: digitwise_accuracy(batch),
        "carry_free": lambda: carry_free_accuracy(batch, task.n_digits),
    }
    return {name: scorers[name]() for name in family(task)}


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


def learning_of(history: Sequence[Mapping[str, float]] | None) -> bool | None:
    """Whether a run with the logged ``history`` (its rows, as the training loop logs them; None
    or empty: it never trained, so it is not learning) was still learning at its end: True
    where one of ``LOSS_KEYS`` was still falling (``history_still_learning``), None where one
    cannot tell (its schedule ran down to zero, or too short a log), False otherwise."""
    if not history:
        return False
    verdicts = [history_still_learning(history, key) for key in LOSS_KEYS
                if any(key in r for r in history)]
    if not verdicts or None in verdicts:
        return True if True in verdicts else None
    return any(verdicts)


def solve_cut(best: float, n: int, chance: float) -> float:
    """The least test accuracy that is ``solved``: the claims' ``solved_floor(chance)`` and the
    family's ``best`` (over ``n`` answers) plus ``solve_margin``, whichever is higher."""
    return max(solved_floor(chance), best + solve_margin(best, n))


def accuracy_interval(acc: float, n: int) -> tuple[float, float]:
    """The exact 95 % interval of a whole-answer accuracy ``acc`` over ``n`` answers."""
    check(isinstance(n, int) and n >= 1, "n", n, "a number of answers >= 1")
    return share_interval(int(round(acc * n)), n)


def map_label(state: str, acc: float, cut: float) -> str:
    """A learned run's label, ``""`` for any other ``state``: ``solved`` when its test accuracy
    ``acc`` reaches ``cut`` (``solve_cut``), ``not solved`` otherwise."""
    if state != LEARNED:
        return ""
    return MAP_LABEL if acc >= cut else "not solved"


def judge(task: Task, sets: Mapping[str, Batch], acc: float, acc_train: float | None,
          chance: float, learning: bool | None) -> dict[str, object]:
    """A run's scores against the null family, its state and its label (the module
    docstring), from what it scored: ``acc`` (whole answers on ``sets["test"]``) and
    ``acc_train`` (on ``sets["train"]``; None where the task has no train set: the test set is
    its training distribution), ``chance`` (the constant's share of the test set) and
    ``learning`` (``learning_of`` its log). A null member is judged by passing its own scores:
    ``tests/test_rt_map.py`` does, for each.

    ``task``: the run's task; ``sets``: its evaluation sets (``design.eval_sets``)."""
    test = null_scores(task, sets["test"])
    best, n_test = max(test.values()), len(sets["test"])
    own = "train" if "train" in sets and acc_train is not None else "test"
    trivial = {k: v for k, v in (null_scores(task, sets[own]) if own == "train" else test).items()
               if k in TRIVIAL}
    train_best, train_acc = max(trivial.values()), float(acc_train if own == "train" else acc)
    train_margin = noise_margin(train_best, len(sets[own]))
    cut = solve_cut(best, n_test, chance)
    low, high = accuracy_interval(acc, n_test)
    state = state_of(learned=train_acc - train_best > train_margin, learning=learning,
                     decided=cut <= 1.0 and not low < cut <= high)
    label = map_label(state, acc, cut)
    return {**{f"baseline.{k}": round(v, 4) for k, v in test.items()},
            "baseline": round(best, 4), BEYOND: round(acc - best, 4),
            "solve_margin": round(solve_margin(best, n_test), 4), "solve_cut": round(cut, 4),
            "acc_low": round(low, 4), "acc_high": round(high, 4),
            "acc_train": round(train_acc, 4), "baseline_train": round(train_best, 4),
            "noise_margin_train": round(train_margin, 4),
            "state": state, "solved": "yes" if label == MAP_LABEL else "no", "label": label}


def _whole(got: Mapping[str, Any], prefix: str) -> float | None:
    """The whole-answer accuracy ``row_for`` measured on one set (``prefix``: "" or "train_")."""
    if prefix == "":
        return got.get("acc")
    return got.get(f"{prefix}seq_acc", got.get(f"{prefix}acc"))


@torch.no_grad()
def map_row(run, size: Setting | str, seed: int) -> dict[str, object]:
    """One map run's row (``toymech.maps``): its task and freezing mode, its accuracy and loss on
    its own held-out test set, every member of the null family on that set (``baseline.*``, the
    best in ``baseline``, the run's distance beyond it in ``beyond_baseline``), the margins, the
    cut and the exact interval of the run's accuracy (``solve_cut``, ``acc_low``,
    ``acc_high``), why it stopped (``stopped_by``), its ``state`` and its ``label`` (the module
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
    history = run.meta.get("history")
    judged = judge(exp.task, sets, float(got["acc"]), _whole(got, "train_"),
                   float(got["chance"]), learning_of(history))
    row: dict[str, object] = {"task": got["task"], "mode": got["mode"], "width": got["width"]}
    row.update({k: round(float(got[k]), 4) for k in ("acc", "loss", "chance", "chance_loss",
                                                     "digit_acc") if k in got})
    row["stopped_by"] = stop_reason(history)
    row.update(judged)
    return row
