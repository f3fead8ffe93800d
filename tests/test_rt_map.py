"""Study 3's map rows: the null family (the predictors without the mechanism), the run states and
the label (fast).

The null world over maps: an untrained run, a run still learning, a run whose schedule ran down
to zero, and every member of the null family scored as a run carry no ``solved`` label; a perfect
run that stopped learning is solved where its set can tell."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
import torch

from toymech import experiments
from toymech.maps import summary
from toymech.models import build_model
from toymech.studies.random_transformers import map_measure as mm
from toymech.tasks.base import Batch
from toymech.tasks.parentheses import CLOSE, NO, OPEN, QUERY, YES
from toymech.zoo.store import ZooEntry


class Peek(torch.nn.Module):
    """A perfect model that cheats: at each position it answers the next token of its input."""

    def __init__(self, d_vocab: int):
        super().__init__()
        self.d_vocab = d_vocab
        self.w = torch.nn.Parameter(torch.zeros(()))

    def forward(self, tokens):
        nxt = torch.cat([tokens[:, 1:], tokens[:, -1:]], 1)
        return 20.0 * torch.nn.functional.one_hot(nxt, self.d_vocab).float() + self.w


class Counts(torch.nn.Module):
    """Parentheses by counts alone: "balanced" iff as many ``(`` as ``)`` so far (no order);
    with ``ends``, also opening with ``(`` and the last letter read a ``)`` (the depth read at
    two places: the null family's ``counts_ends``)."""

    def __init__(self, ends: bool = False):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(()))
        self.ends = ends

    def forward(self, tokens):
        equal = (tokens == OPEN).cumsum(1) == (tokens == CLOSE).cumsum(1)
        if self.ends:
            before = torch.cat([tokens[:, :1], tokens[:, :-1]], 1)  # the token before each
            equal &= (tokens[:, :1] == OPEN) & (before == CLOSE)
        out = torch.zeros(*tokens.shape, 6)
        out[..., YES] = 20.0 * equal
        out[..., NO] = 20.0 * ~equal
        return out + self.w


def _entry(name: str, model=None, history=None, size: str = "smoke") -> ZooEntry:
    exp = experiments.get(name, size=size, seed=3)
    meta = exp.to_dict() | ({"history": history} if history is not None else {})
    return ZooEntry(model if model is not None else build_model(exp.model), meta, False, Path("."))


def _history(falling: bool, stopped: bool = False, steps: int = 1500,
             cosine: bool = False) -> list[dict]:
    """A logged history: losses falling or flat, the learning rate constant or run down to zero
    (``cosine``), the stop rule firing at the end or not."""
    rows = [{"step": s, "train_loss": (1.0 - s / steps if falling else 0.01),
             "eval_loss": (1.0 - s / steps if falling else 0.01),
             "lr": 1e-3 * ((1 + math.cos(math.pi * s / steps)) / 2 if cosine else 1.0)}
            for s in range(100, steps + 1, 100)]
    if stopped:
        rows[-1]["stop_step"] = steps
    return rows


@pytest.mark.parametrize("task", ["parentheses", "needle", "modular_addition", "decimal_addition"])
def test_untrained_runs_carry_no_label(task):
    row = mm.map_row(_entry(f"rt-{task}-random"), "smoke", 3)
    assert row["state"] == summary.UNTRAINED and row["label"] == "" and row["solved"] == "no"
    assert row["baseline"] == max(v for k, v in row.items() if k.startswith("baseline."))
    assert row[summary.BEYOND] == pytest.approx(row["acc"] - row["baseline"], abs=2e-4)


def test_a_perfect_run_that_stopped_is_solved_and_one_still_learning_is_not_labelled():
    peek = Peek(6)
    def entry(history):
        return _entry("rt-parentheses-random", peek, history, size="default")

    done = mm.map_row(entry(_history(False, stopped=True)), "default", 3)
    assert done["acc"] == 1.0 and done["state"] == summary.LEARNED
    assert done["label"] == mm.MAP_LABEL and done["solved"] == "yes"
    assert done["stopped_by"] == "stop rule" and done["acc_low"] > done["solve_cut"]
    flat = mm.map_row(entry(_history(False)), "default", 3)
    assert flat["state"] == summary.LEARNED and flat["label"] == mm.MAP_LABEL
    assert flat["stopped_by"] == "steps"
    going = mm.map_row(entry(_history(True)), "default", 3)
    assert going["state"] == summary.STILL_LEARNING and going["label"] == ""
    short = mm.map_row(entry(_history(False, steps=600)), "default", 3)
    assert short["state"] == summary.STILL_LEARNING  # shorter than the window: not shown to stop
    # its learning rate ran down to zero before its stop rule fired: a flat end is the schedule's
    ended = mm.map_row(entry(_history(False, cosine=True)), "default", 3)
    assert ended["stopped_by"] == "schedule ended" and ended["state"] == summary.STILL_LEARNING
    assert ended["label"] == ""


def test_a_perfect_run_is_undecided_where_its_set_cannot_tell():
    """At ``smoke`` the parentheses strings are so short that ``counts_ends`` (no running depth)
    answers every one: no accuracy reaches the cut, so a perfect run carries no label."""
    row = mm.map_row(_entry("rt-parentheses-random", Peek(6), _history(False, stopped=True)),
                     "smoke", 3)
    assert row["acc"] == 1.0 == row["baseline.counts_ends"] and row["solve_cut"] > 1
    assert row["state"] == summary.UNDECIDED and row["label"] == ""


def test_a_run_that_only_counts_is_untrained_on_parentheses():
    """The order-blind predictor scores the counts baseline exactly, so it is not beyond it."""
    row = mm.map_row(_entry("rt-parentheses-random", Counts(), _history(False, stopped=True),
                            size="default"), "default", 3)
    assert row["acc"] == row["baseline.counts"] < row["baseline"] == row["baseline.counts_ends"]
    assert row["state"] == summary.UNTRAINED and row["label"] == ""


def test_a_run_that_reads_the_depth_at_two_places_is_not_solved():
    """A model doing ``counts_ends`` (equal counts, opening ``(``, closing ``)``) learned
    something beyond every trivial predictor, yet it tracks no running depth: not solved."""
    row = mm.map_row(_entry("rt-parentheses-random", Counts(ends=True),
                            _history(False, stopped=True), size="default"), "default", 3)
    assert row["acc"] == row["baseline.counts_ends"] == row["baseline"] > 0.95
    assert row["state"] == summary.LEARNED and row["label"] == "not solved"


TASK_SIZES = [(t, s) for t in mm.NULL_FAMILY for s in ("smoke", "default")]


@pytest.mark.parametrize("task,size", TASK_SIZES)
def test_every_member_of_the_null_family_scored_as_a_run_gets_no_label(task, size):
    """Each member of the task's null family, scored on the run's own sets as a run is (its
    accuracy on the test and the train set, a log that stopped learning), judged by the map's
    rule: never ``solved``. The mechanism itself (a perfect run) is, where the set can tell, so
    the rule is not one that labels nothing."""
    exp = experiments.get(f"rt-{task}-random", size=size, seed=3)
    sets = mm.eval_sets(exp.task, size, 3)
    test = mm.null_scores(exp.task, sets["test"])
    train = mm.null_scores(exp.task, sets["train"]) if "train" in sets else None
    assert set(test) == set(mm.NULL_FAMILY[task]) and "constant" in test
    for member, acc in test.items():
        judged = mm.judge(exp.task, sets, acc, train[member] if train else None,
                          test["constant"], learning=False)
        assert judged["label"] != mm.MAP_LABEL and judged["solved"] == "no", member
    perfect = mm.judge(exp.task, sets, 1.0, 1.0 if train else None, test["constant"], False)
    assert perfect["label"] == mm.MAP_LABEL or perfect["state"] == summary.UNDECIDED
    if size == "default":
        assert perfect["label"] == mm.MAP_LABEL


def test_a_table_of_runs_still_learning_or_untrained_holds_no_label():
    rows = [mm.map_row(_entry("rt-parentheses-random", Peek(6), _history(True)), "smoke", 3),
            mm.map_row(_entry("rt-parentheses-random"), "smoke", 3)]
    table = pd.DataFrame([{"experiment": "rt-parentheses-random", "knob.recipe_width": 16,
                           "seed": s, "status": "ok", **r} for s, r in zip((3, 4), rows)])
    cell, = summary.cell_groups(table)
    assert cell.held(mm.MAP_LABEL) == 0 and cell.held("not solved") == 0
    assert cell.states() == {summary.STILL_LEARNING: 1, summary.UNTRAINED: 1}
    assert "on none in 1" in summary.finding(table, mm.MAP_LABEL)


def test_baselines_are_exact_on_hand_made_sets():
    # parentheses: "()" balanced, ")(" not (equal counts: counts says yes), "((" not
    P = 5  # padding
    toks = torch.tensor([[OPEN, CLOSE, QUERY, YES], [CLOSE, OPEN, QUERY, NO],
                         [OPEN, OPEN, QUERY, NO], [OPEN, CLOSE, QUERY, YES]])
    mask = torch.zeros(4, 4, dtype=torch.bool)
    mask[:, 3] = True
    paren = Batch(toks, mask)
    assert mm.counts_accuracy(paren) == 0.75
    assert mm.counts_accuracy(paren, ends=True) == 1.0
    assert P not in toks
    # needle: keys 0-3, values 4-7, query 8; listed values 4, 4, 5 -> mode 4
    needle = Batch(torch.tensor([[0, 4, 1, 4, 2, 5, 8, 2, 5], [0, 4, 1, 4, 2, 5, 8, 0, 4],
                                 [0, 6, 1, 7, 8, 1, 7, 9, 9]]),
                   torch.tensor([[False] * 8 + [True], [False] * 8 + [True],
                                 [False] * 6 + [True, False, False]]))
    assert mm.query_blind_accuracy(needle, 8) == pytest.approx((0 + 1 + 0.5) / 3)
    # decimal addition, 1 digit: 3+4=7 (carry-free right), 5+6=11 (wrong), 3+4 again
    dec = Batch(torch.tensor([[3, 10, 4, 11, 7, 0], [5, 10, 6, 11, 1, 1], [3, 10, 4, 11, 7, 0]]),
                torch.tensor([[False, False, False, False, True, True]] * 3))
    assert mm.digitwise_accuracy(dec) == pytest.approx(2 / 3)
    assert mm.carry_free_accuracy(dec, 1) == pytest.approx(2 / 3)


def test_margins():
    assert mm.noise_margin(0.5, 2048) == pytest.approx(3 * (0.25 / 2048) ** 0.5)
    assert mm.noise_margin(1.0, 100) == 0.01
    assert mm.solve_margin(0.76, 2048) == pytest.approx(0.12)
    assert mm.solve_margin(0.999, 100) == pytest.approx(0.01)
    with pytest.raises(ValueError, match="n=0"):
        mm.noise_margin(0.5, 0)
    assert mm.map_label(summary.UNTRAINED, 1.0, 0.5) == ""
    assert mm.map_label(summary.LEARNED, 0.96, 0.95) == mm.MAP_LABEL
    assert mm.map_label(summary.LEARNED, 0.94, 0.95) == "not solved"
    assert mm.solve_cut(0.76, 2048, 0.5) == pytest.approx(0.95)  # the claims' floor
    assert mm.solve_cut(0.98, 2048, 0.5) == pytest.approx(0.99)  # half way from 0.98 to 1
    assert mm.accuracy_interval(1.0, 3)[0] == pytest.approx(0.2924, abs=1e-4)


