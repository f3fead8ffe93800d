"""Study 3's reader notes: a number at its task's trivial predictor, a memorization run near
guessing and a needle model whose heads attend uniformly are said so beside the table, each
computed from the rows and checked against a model that learned something."""

from __future__ import annotations

import pandas as pd
import pytest
import torch

from toymech.studies.random_transformers.tables import (
    memorization_note,
    needle_caption,
    trivial_notes,
)
from toymech.tasks.memorization import Memorization


def _rows(acc, chance=0.514, task="parentheses", mode="random"):
    return pd.DataFrame([{"task": task, "mode": mode, "width": 16, "seed": s, "acc": a,
                          "chance": chance} for s, a in enumerate(acc)])


def test_a_run_at_the_trivial_predictor_is_named_with_it():
    text = trivial_notes(_rows([0.486, 0.485, 0.503]))
    assert "parentheses: random width 16 (48.6 %)" in text
    assert "51.4 % for always the more common answer" in text


def test_a_run_that_learned_is_not_flagged():
    assert trivial_notes(_rows([0.99, 0.98, 0.97])).startswith("Every run here scores more")
    # within two points of the predictor is still flagged; three points above is not
    assert "learned nothing" in trivial_notes(_rows([0.53]))
    assert "learned nothing" not in trivial_notes(_rows([0.545]))


def test_trivial_notes_reads_baseline_rows_by_model():
    rows = pd.DataFrame([{"task": "needle", "model": "lstm", "acc": 0.1, "chance": 0.6},
                         {"task": "needle", "model": "linearised", "acc": 0.9, "chance": 0.6}])
    text = trivial_notes(rows)
    assert "needle: lstm (10.0 %)" in text and "linearised" not in text
    assert "a value listed in the context" in text
    with pytest.raises(ValueError, match="rows"):
        trivial_notes(pd.DataFrame({"task": ["needle"]}))


def test_memorization_note_says_when_the_fit_is_unfinished():
    task = Memorization(n_keys=48, n_values=48)
    table = pd.DataFrame({"mode": ["normal", "random"], "all_acc": [0.06, 0.03],
                          "trainable": [11_392, 4_800], "table_bits": [task.total_bits] * 2})
    assert "unfinished fit" in memorization_note(table, task)
    table["all_acc"] = [0.95, 0.6]
    assert "unfinished fit" not in memorization_note(table, task)


def test_needle_caption_says_when_no_head_singles_out_a_position():
    tokens = ["k1", "v2", "k3", "v4", "?", "k1", "v2"]
    summary = pd.DataFrame({"task": ["needle"], "width": [64], "mode": ["random"],
                            "median": [0.19]})
    n = len(tokens)
    flat = torch.tril(torch.ones(n, n)) / torch.arange(1, n + 1)[:, None]
    uniform = needle_caption(tokens, False, summary, 64, [flat[None].repeat(2, 1, 1)])
    assert "in effect averages its context" in uniform
    sharp = flat.clone()
    sharp[n - 2] = 0
    sharp[n - 2, 0] = 1.0  # the query attends to the matching key
    assert "averages" not in needle_caption(tokens, True, summary, 64, [sharp[None]])
    assert "19.0 %" in uniform


def test_spread_note_says_when_the_shares_divide_by_no_gap():
    from toymech.studies.random_transformers.causal import spread_note

    assert "has not learned the retrieval" in spread_note({"needle.random.gap": -0.134,
                                                           "needle.random.top_share": 0.18})
    assert spread_note({"needle.random.gap": 2.5}).startswith("Every model here prefers")
