"""A run through training, the same way for every study: the study's metrics at every snapshot,
each metric's transition step, and the attention patterns for the scrubber figure.

A study supplies two pure functions of a model (its ``dynamics_metrics(model, data) -> {name:
value}`` and ``dynamics_patterns(model, data) -> ([heads, T, T], head labels, token labels)``,
by default ``example_patterns``) and the names whose transition steps are compared
(``Study.dynamics_names``: its ``DYNAMICS_METRICS``); ``Study.through_training`` calls
``trajectory`` with them. ``trajectory`` walks the
entry's snapshots once (``ZooEntry.model_at``) and computes both; ``over_seeds`` summarises the
transition steps of several seeds (median, spread, how often the order holds).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from ..analysis import attention_patterns, dynamics
from ..analysis.heads import head_labels
from ..core import check
from ..plots.labels import label
from ..plots.scrubber import scrubber


@dataclass
class Trajectory:
    """One run through training.

    curves: one row per snapshot step (``step`` plus every metric);
    transitions: ``dynamics.transitions`` of ``metrics`` (earliest first);
    patterns: one ``[heads, T, T]`` array per snapshot step, on one fixed example;
    shown: metrics drawn and given transition steps beside ``metrics`` but not compared over
        seeds (``over_seeds``): the causal patching effects.
    """

    name: str
    metrics: tuple[str, ...]
    curves: pd.DataFrame
    transitions: pd.DataFrame
    steps: list[int]
    patterns: list[np.ndarray]
    head_labels: list[str]
    token_labels: list[str]
    shown: tuple[str, ...] = ()

    @property
    def order(self) -> list[str]:
        """The metrics that moved, in the order they crossed half way."""
        return [m for m, s in zip(self.transitions["metric"], self.transitions["step"]) if s == s]

    def sentence(self) -> str:
        """The order in words, each metric by its readable name with its half-way step (numbers
        only; no verdict)."""
        parts = [f"{label(m)} (step {s:,.0f})" for m, s in zip(self.transitions["metric"],
                                                               self.transitions["step"]) if s == s]
        still = [label(m) for m, s in zip(self.transitions["metric"], self.transitions["step"])
                 if s != s]
        text = f"{self.name}: half way first " + ", then ".join(parts) if parts else \
            f"{self.name}: no metric moved"
        return text + (f"; did not move: {', '.join(still)}" if still else "")

    def figure(self, title: str | None = None, normalize: bool = True) -> go.Figure:
        """The scrubber: every head's attention at the selected step, the metric curves with a
        marker there, and the transition steps (``plots.scrubber``)."""
        return scrubber(self.steps, self.patterns, self.head_labels,
                        curves=self.curves[["step", *self.metrics, *self.shown]],
                        transitions=self.transitions, token_labels=self.token_labels,
                        title=title or f"{self.name} through training (move the slider)",
                        normalize=normalize)


def trajectory(entry: Any, name: str, metrics_fn: Callable[[Any, Any], Mapping[str, float]],
               patterns_fn: Callable[[Any, Any], tuple], data: Any,
               metrics: Sequence[str], tol: float = 1e-3, shown: Sequence[str] = ()
               ) -> Trajectory:
    """``entry``'s metrics and patterns at each of its snapshots (see the module docstring);
    ``metrics``: the names whose transitions are compared (those the model lacks are dropped);
    ``shown``: more names drawn with their transition steps (see ``Trajectory``); a metric whose
    first and last values differ by less than ``tol`` did not move."""
    steps = list(getattr(entry, "snapshot_steps", []) or [])
    check(len(steps) >= 2, "entry", getattr(entry, "path", name),
          "a zoo entry trained with snapshots (TrainConfig(snapshots=n), n >= 2)")
    rows, patterns, heads, tokens = [], [], [], []
    for step in steps:
        model = entry.model_at(step)
        model.eval()
        rows.append({"step": step, **{k: float(v) for k, v in metrics_fn(model, data).items()}})
        pattern, heads, tokens = patterns_fn(model, data)
        patterns.append(np.asarray(pattern))
    curves = pd.DataFrame(rows)
    keep = tuple(m for m in metrics if m in curves.columns)
    extra = tuple(m for m in shown if m in curves.columns and m not in keep)
    return Trajectory(name, keep, curves,
                      dynamics.transitions(curves, [*keep, *extra], tol=tol), steps,
                      patterns, list(heads), list(tokens), extra)


def flat_patterns(model: Any, task: Any, tokens: Any) -> tuple[np.ndarray, list[str], list[str]]:
    """Every head's attention on one sequence ``tokens`` [T]: (float32 [n_layers * n_heads, T,
    T] (query, key), head labels ``"L0H1"``, the task's token strings)."""

    pats = attention_patterns(model, tokens)  # [L, H, T, T]
    n_layers, n_heads = pats.shape[:2]
    labels = head_labels(n_layers, n_heads)
    return (pats.reshape(n_layers * n_heads, *pats.shape[2:]).float().numpy(), labels,
            task.str_tokens(tokens))


def example_patterns(model: Any, data: Any) -> tuple[np.ndarray, list[str], list[str]]:
    """Every head's attention on ``data.example``, the one sequence of a study's probe data
    shown through training (``flat_patterns`` with ``data.task``): a ``Study``'s default
    ``dynamics_patterns``."""
    return flat_patterns(model, data.task, data.example)


def over_seeds(trajectories: Sequence[Trajectory], tol: float = 1e-3) -> pd.DataFrame:
    """Transition steps over seeds (``dynamics.transitions_over_seeds``): per metric the median,
    min and max half-way step, how many seeds it moved in, and the share of seeds in which it
    moves before the next row's metric."""
    check(len(trajectories) >= 1, "trajectories", len(trajectories), "at least one run")
    metrics = [m for m in trajectories[0].metrics
               if all(m in t.curves.columns for t in trajectories)]
    return dynamics.transitions_over_seeds([t.curves for t in trajectories], metrics, tol=tol)
