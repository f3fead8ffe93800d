"""Training dynamics: when each metric moved, from its values at the run's snapshots.

A run trained with ``TrainConfig(snapshots=n)`` keeps its trained parameters at ``n`` log-spaced
steps; ``toymech.studies.trajectory`` measures a study's metrics at each of them (a table of
curves: one row per step). The functions here read such tables:

* ``transition_step(steps, values)``: the step at which a metric has covered half (``frac``) of
  its way from its first value to the value farthest from it over the run (its extreme),
  interpolated between snapshots; a metric that overshoots and settles back is not moved in time
  by the overshoot;
* ``transitions(curves)``: that step for every metric, earliest first: which circuit forms first;
* ``transitions_over_seeds`` / ``order_agreement``: the same over seeds (median step, spread, and
  how often one metric moves before another);
* ``still_learning(steps, losses)``: whether a loss curve was still falling when the run stopped
  (a run that has not converged is a state of the run, never evidence about its mechanism),
  judged the same way for every run length: the slope per 1,000 steps over the run's last
  ``STILL_LEARNING_WINDOW`` steps against ``STILL_LEARNING_SLOPE``;
* ``history_still_learning(history)``: that rule on a run's logged history, which also knows why
  the run stopped (``stop_reason``: its stop rule, its learning-rate schedule reaching zero, or
  its steps).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core import check, check_float

__all__ = ["transition_step", "transitions", "formation_order", "transitions_over_seeds",
           "order_agreement", "still_learning", "history_still_learning", "stop_reason",
           "STILL_LEARNING_WINDOW", "STILL_LEARNING_SLOPE", "STOP_RULE", "SCHEDULE_ENDED",
           "STEPS_RAN_OUT"]

# The rule for "still learning", fixed before any map is judged by it and the same for every run
# length: the least-squares slope of the logged loss over the run's last 1,000 steps, in nats per
# 1,000 steps; a loss falling faster than 0.02 nats per 1,000 steps is still learning. At that
# rate a run needs 5,000 more steps to gain a tenth of a nat; a slope fitted over every logged
# point of the window, not two end points, keeps one noisy evaluation from deciding it. The
# window is in steps, not a share of the run: a share is a looser tolerance per step for a short
# run than for a long one. A study whose judged runs are shorter than the window declares a
# window of its own once, beside its sizes, before any run it judges (never per run).
STILL_LEARNING_WINDOW = 1_000
STILL_LEARNING_SLOPE = 0.02
_MIN_POINTS = 3  # logged points inside the window a slope is fitted on
_LR_ENDED = 1e-3  # a last logged learning rate below this share of the run's peak: run down

STOP_RULE, SCHEDULE_ENDED, STEPS_RAN_OUT = "stop rule", "schedule ended", "steps"


def transition_step(steps: Sequence[float], values: Sequence[float], frac: float = 0.5,
                    tol: float = 1e-6) -> float | None:
    """The first step at which a metric has moved ``frac`` of the way from its first value to its
    extreme (the value farthest from the first over the run), linearly interpolated.

    With ``v_0`` the first value and ``v_x`` the extreme (``argmax |v_i - v_0|``), the progress at
    snapshot i is ``p_i = (v_i - v_0) / (v_x - v_0)``; the answer is the first i with
    ``p_i >= frac``, refined to ``s_{i-1} + (frac - p_{i-1}) / (p_i - p_{i-1}) * (s_i - s_{i-1})``.
    Rising and falling metrics are alike. Scaling by the extreme rather than the last value means a
    metric that peaks at 2.6x its final value transitions half way up its rise, not at the first
    small bump that happens to be half of the (lower) final value. None when
    ``|v_x - v_0| < tol`` (it never moved, or only one snapshot). ``steps`` must increase
    strictly; NaN or inf in ``values`` raises ValueError (drop those rows first: a gap is not
    skipped silently).
    """
    s = np.asarray(steps, dtype=float)
    v = np.asarray(values, dtype=float)
    check(s.ndim == 1 and s.shape == v.shape and len(s) >= 1, "values", len(v),
          f"one value per step ({len(s)} steps), at least one")
    check(bool(np.all(np.diff(s) > 0)), "steps", list(s), "strictly increasing steps")
    bad = np.flatnonzero(~np.isfinite(v))
    check(len(bad) == 0, "values", float(v[bad[0]]) if len(bad) else None,
          f"finite numbers (not finite at step {s[bad[0]]:g}; drop such rows first)"
          if len(bad) else "")
    frac = check_float("frac", frac, 0.0, 1.0, lo_open=True)
    tol = check_float("tol", tol, 0.0)
    if len(v) < 2:
        return None
    delta = v[int(np.argmax(np.abs(v - v[0])))] - v[0]
    if abs(delta) < tol:
        return None
    p = (v - v[0]) / delta
    i = int(np.argmax(p >= frac))  # exists: p at the extreme is 1; i >= 1 as p[0] == 0 < frac
    t = (frac - p[i - 1]) / (p[i] - p[i - 1])
    return float(s[i - 1] + t * (s[i] - s[i - 1]))


def transitions(curves: pd.DataFrame, metrics: Sequence[str] | None = None, frac: float = 0.5,
                tol: float = 1e-6) -> pd.DataFrame:
    """One row per metric of ``curves`` (one row per snapshot step): ``metric``, ``start``,
    ``end`` and ``step`` (``transition_step``; NaN: it never moved), earliest step first and
    NaN last (ties keep the order of ``metrics``): which circuit forms first.

    ``frac``: the share of the way from start to end that marks the step; ``tol``: a metric
    that moved less than this never moved (as ``transition_step``)."""
    check("step" in curves.columns, "curves", list(curves.columns), "a table with a 'step' column")
    names = [c for c in curves.columns if c != "step"] if metrics is None else list(metrics)
    for name in names:
        check(name in curves.columns and name != "step", "metrics", name,
              f"columns of curves: {[c for c in curves.columns if c != 'step']}")
    table = curves.sort_values("step")
    rows = []
    for name in names:
        step = transition_step(table["step"].to_numpy(), table[name].to_numpy(), frac, tol)
        rows.append({"metric": name, "start": float(table[name].iloc[0]),
                     "end": float(table[name].iloc[-1]), "step": math.nan if step is None else step})
    out = pd.DataFrame(rows, columns=["metric", "start", "end", "step"])
    return out.sort_values("step", kind="stable", na_position="last").reset_index(drop=True)


def formation_order(curves: pd.DataFrame, metrics: Sequence[str] | None = None,
                    frac: float = 0.5, tol: float = 1e-6) -> list[str]:
    """The metrics that moved, in the order of their transition steps (``transitions``).

    ``curves``: one row per snapshot step; ``metrics``, ``frac`` and ``tol`` as in
    ``transitions``."""
    table = transitions(curves, metrics, frac, tol)
    return list(table.loc[table["step"].notna(), "metric"])


def _steps_per_seed(per_seed: Sequence[pd.DataFrame], metrics: Sequence[str] | None,
                    frac: float, tol: float) -> tuple[list[str], np.ndarray]:
    """(metrics, transition steps [seed, metric], inf where a metric never moved)."""
    check(len(per_seed) >= 1, "per_seed", len(per_seed), "at least one table of curves")
    names = ([c for c in per_seed[0].columns if c != "step"] if metrics is None
             else list(metrics))
    steps = np.full((len(per_seed), len(names)), np.inf)
    for i, curves in enumerate(per_seed):
        table = transitions(curves, names, frac, tol).set_index("metric")
        steps[i] = table.loc[names, "step"].fillna(np.inf).to_numpy()
    return names, steps


def order_agreement(per_seed: Sequence[pd.DataFrame], first: str, second: str,
                    frac: float = 0.5, tol: float = 1e-6) -> float:
    """The fraction of seeds in which ``first`` transitions strictly before ``second`` (a metric
    that never moved counts as transitioning at infinity; ties are not "before").

    ``per_seed``: one ``metric_curves`` table per seed; ``frac`` and ``tol`` as in
    ``transition_step``."""
    names, steps = _steps_per_seed(per_seed, [first, second], frac, tol)
    return float(np.mean(steps[:, 0] < steps[:, 1]))


def transitions_over_seeds(per_seed: Sequence[pd.DataFrame], metrics: Sequence[str] | None = None,
                           frac: float = 0.5, tol: float = 1e-6) -> pd.DataFrame:
    """Transition steps over seeds (``per_seed``: one ``metric_curves`` table per seed), one row
    per metric: ``median``, ``min``, ``max`` of the step over the seeds where it moved,
    ``moved`` (how many seeds), and ``before_next``: the fraction of seeds in which this metric
    transitions before the next row's (``order_agreement``; NaN on the last row). Rows by median
    step, NaN last.

    ``metrics``: which (None: every metric); ``frac`` and ``tol`` as in ``transition_step``."""
    names, steps = _steps_per_seed(per_seed, metrics, frac, tol)
    rows = []
    for j, name in enumerate(names):
        moved = steps[np.isfinite(steps[:, j]), j]
        rows.append({"metric": name, "median": float(np.median(moved)) if len(moved) else math.nan,
                     "min": float(moved.min()) if len(moved) else math.nan,
                     "max": float(moved.max()) if len(moved) else math.nan,
                     "moved": int(len(moved)), "seeds": len(per_seed)})
    out = pd.DataFrame(rows).sort_values("median", kind="stable", na_position="last")
    order = [names.index(m) for m in out["metric"]]
    out["before_next"] = [float(np.mean(steps[:, a] < steps[:, b]))
                          for a, b in zip(order, order[1:])] + [math.nan]
    return out.reset_index(drop=True)


def still_learning(steps: Sequence[float], losses: Sequence[float],
                   window: int = STILL_LEARNING_WINDOW,
                   slope: float = STILL_LEARNING_SLOPE) -> bool | None:
    """Whether the loss was still falling when the run stopped.

    With ``s_end`` the last step, the window is the logged points with step >= ``s_end -
    window``; ``b`` the least-squares slope of the loss over them, the run is still learning
    when ``1000 b < -slope`` (it fell faster than ``slope`` nats per 1,000 steps). None (cannot
    tell) when the log does not reach back a whole window (the run is shorter than it, or its
    log starts later) or fewer than three logged points fall inside it: log more often, or
    train longer. Non-finite losses raise ValueError (a diverged run is a state of its own,
    decided before this).

    ``steps``: the logged steps, strictly increasing; ``losses``: the loss at each; ``window``:
    steps (``STILL_LEARNING_WINDOW``); ``slope``: nats per 1,000 steps
    (``STILL_LEARNING_SLOPE``)."""
    s = np.asarray(steps, dtype=float)
    v = np.asarray(losses, dtype=float)
    check(s.ndim == 1 and s.shape == v.shape, "losses", len(v),
          f"one loss per step ({len(s)} steps)")
    check(len(s) == 0 or bool(np.all(np.diff(s) > 0)), "steps", list(s)[:8],
          "strictly increasing steps")
    check(bool(np.all(np.isfinite(v))), "losses", "a non-finite value", "finite numbers")
    check(isinstance(window, int) and not isinstance(window, bool) and window >= 1, "window",
          window, "a whole number of steps >= 1")
    slope = check_float("slope", slope, 0.0)
    if len(s) < _MIN_POINTS or s[0] > s[-1] - window:
        return None
    inside = s >= s[-1] - window
    if int(inside.sum()) < _MIN_POINTS:
        return None
    x, y = s[inside], v[inside]
    fitted = float(np.polyfit(x - x.mean(), y, 1)[0])
    return bool(1000.0 * fitted < -slope)


def _stopped(history: Sequence[Mapping[str, float]]) -> bool:
    return any("stop_step" in r for r in history)


def _schedule_ended(history: Sequence[Mapping[str, float]]) -> bool:
    """Whether the learning rate logged last is at most ``_LR_ENDED`` of the largest logged (a
    cosine schedule that ran down to zero); False where the log records no learning rate."""
    rates = [float(r["lr"]) for r in history if "lr" in r]
    return bool(rates) and rates[-1] <= _LR_ENDED * max(rates)


def stop_reason(history: Sequence[Mapping[str, float]] | None) -> str:
    """Why a run with the logged ``history`` (its rows, as the training loop logs them) stopped:
    ``stop rule`` (a row carries ``stop_step``: its stop rule ended it), ``schedule ended`` (its
    learning rate ran down to zero: a cosine schedule's end), ``steps`` (it ran its steps with
    the learning rate still on); ``""`` for a run with no log (it never trained)."""
    if not history:
        return ""
    if _stopped(history):
        return STOP_RULE
    return SCHEDULE_ENDED if _schedule_ended(history) else STEPS_RAN_OUT


def history_still_learning(history: Sequence[Mapping[str, float]], key: str = "train_loss",
                           window: int = STILL_LEARNING_WINDOW,
                           slope: float = STILL_LEARNING_SLOPE) -> bool | None:
    """``still_learning`` of a run's logged ``history`` (its rows ``{"step", key, ...}``, as the
    training loop logs them; rows without ``key`` are passed over), by why it stopped
    (``stop_reason``): False where its stop rule ended it (it reached what the rule asks, and is
    judged where it stopped); None where its learning-rate schedule ran down to zero (a loss
    flattening as the rate reaches zero is the schedule's doing, not a sign it stopped
    learning); else True, False, or None where the log is too short to tell. ``window`` and
    ``slope`` as in ``still_learning``."""
    reason = stop_reason(history)
    if reason == STOP_RULE:
        return False
    if reason == SCHEDULE_ENDED:
        return None
    rows = [r for r in history if key in r and "step" in r]
    return still_learning([float(r["step"]) for r in rows], [float(r[key]) for r in rows],
                          window, slope)
