"""Chance and trivial-predictor references for a task instance, computed, never typed in.

A claim that a model "solves" a task, or beats another, is compared with what a model that
learned nothing (or only the obvious) scores on the same evaluation batch:

* ``constant_accuracy(batch)``: the best predictor that ignores the input, i.e. always answers
  the most frequent scored target (the share of balanced strings for parenthesis balancing,
  about 1/p for modular addition, 1/n_values for the needle);
* ``sequence_constant_accuracy(batch)``: the same for whole answers (every scored target of a
  sequence right at once: decimal sums);
* ``listed_value_accuracy(batch, n_keys)``: the needle's "pick a listed value" predictor, which
  knows the answer is one of the values in the sequence but not which (E[share of the listed
  values equal to the answer], about E[1/k] with k pairs);
* ``uniform_loss(n)``: ln n, the cross-entropy of a uniform guess over n tokens.

``chance_levels(task, batch)`` collects the ones that apply to a task, by name.
"""

from __future__ import annotations

import math

import torch

from ..core import check
from ..tasks.base import Batch, Task


def _targets(batch: Batch) -> torch.Tensor:
    return batch.tokens[:, 1:][batch.target_mask]


def constant_accuracy(batch: Batch) -> float:
    """Share of the most frequent scored target token: the accuracy of always answering it."""
    t = _targets(batch)
    check(t.numel() > 0, "batch", tuple(batch.tokens.shape), "a batch with scored targets")
    return float(torch.bincount(t.flatten().cpu()).max()) / t.numel()


def sequence_constant_accuracy(batch: Batch) -> float:
    """Share of the most frequent whole answer (the scored targets of a row, in order) among the
    rows that score the same number of targets: the best constant predictor's whole-answer
    accuracy."""
    mask = batch.target_mask.cpu()
    tokens = batch.tokens[:, 1:].cpu()
    counts: dict[tuple[int, ...], int] = {}
    for row in range(len(tokens)):
        key = tuple(tokens[row][mask[row]].tolist())
        counts[key] = counts.get(key, 0) + 1
    check(bool(counts), "batch", tuple(batch.tokens.shape), "a batch with scored targets")
    return max(counts.values()) / len(tokens)


def listed_value_accuracy(batch: Batch, n_keys: int) -> float:
    """Expected accuracy of guessing uniformly among the values listed in each needle sequence
    (tokens >= ``n_keys`` before the query, excluding the markers): for each row, the share of its
    listed values equal to the answer, averaged over rows."""
    check("n_pairs" in batch.extras and "answer" in batch.extras, "batch", "extras",
          "a needle batch (extras n_pairs, answer)")
    k = batch.extras["n_pairs"].cpu()
    answer = batch.extras["answer"].cpu()
    values = batch.tokens[:, 1:2 * int(k.max()):2].cpu()  # odd positions hold the values
    listed = torch.arange(values.shape[1])[None] < k[:, None]
    hits = ((values == answer[:, None]) & listed).sum(1).float()
    return float((hits / k.float()).mean())


def uniform_loss(n: int) -> float:
    """ln n: the cross-entropy (nats) of a uniform guess over ``n`` tokens."""
    check(isinstance(n, int) and n >= 1, "n", n, "an integer >= 1")
    return math.log(n)


def chance_levels(task: Task, batch: Batch) -> dict[str, float]:
    """The references that apply to ``task`` on its evaluation ``batch``:

    ``acc``      best trivial accuracy on the scored targets (the constant predictor, or for the
                 needle the listed-value guess when that is higher);
    ``seq_acc``  (tasks with several scored targets per sequence) the constant predictor's
                 whole-answer accuracy;
    ``loss``     ln(d_vocab), the uniform guess.
    """
    out = {"acc": constant_accuracy(batch), "loss": uniform_loss(task.d_vocab)}
    if task.name == "needle":
        out["acc"] = max(out["acc"], listed_value_accuracy(batch, task.n_keys))
    if int(batch.target_mask.sum(1).max()) > 1:
        out["seq_acc"] = sequence_constant_accuracy(batch)
    return out
