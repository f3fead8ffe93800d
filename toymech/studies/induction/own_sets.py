"""Study 1's rule on a run's own sets: the notebook's per-seed label (``measure.mechanism_label``)
and the copies-by-content claims (``claims``) judge a run by the maps' rule (``panel.judge``) on
the sets its own task draws (``RepeatedBlocks.eval_sets``: ``predictable``, ``shifted``,
``shorter``, ``longer``), so notebook, scorecard and maps share one rule and one vocabulary;
and that rule read from one seed's named numbers (``claims.numbers``: ``base.<set>``,
``base.<set>.copier``, ``base.<set>.oracle`` and a model's ``<set>.beyond_low`` ... keys).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..claims import Numbers, need
from .panel import MARGIN, judge

# A run's own mechanism sets (``RepeatedBlocks.eval_sets``) as the rule reads them:
# ``predictable`` is its training distribution (``"train"``), ``shifted`` keeps a trained block
# length (it can only count against the run: ``failed``), ``shorter`` and ``longer`` change the
# block length (they can tell). What each is judged against, for a table: the frequency copier
# on the first two, the best member of the family on the others.
OWN_SETS = {"predictable": "copier", "shifted": "copier", "shorter": "best", "longer": "best"}


def _own(values: Mapping[str, Any]) -> dict[str, Any]:
    return {("train" if k == "predictable" else k): v for k, v in values.items()}


def own_judge(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
              learning: bool | None = False,
              bounds: Mapping[str, Mapping[str, tuple[float, float]]] | None = None
              ) -> dict[str, object]:
    """``judge`` on a run's own mechanism sets (``OWN_SETS``; ``predictable`` read as its
    training distribution): ``losses`` {set: loss}, ``base`` ``set_baselines`` of the same
    sets, ``learning`` and ``bounds`` as ``judge`` reads them (``bounds`` keyed by the own
    sets' names)."""
    return judge(_own(losses), _own(base), learning, MARGIN, _own(bounds) if bounds else None)


def own_bars(base: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The loss each of a run's own mechanism sets is judged against (``OWN_SETS``; ``base``:
    ``set_baselines``): learned, not failed or beaten ``MARGIN`` below it."""
    return {k: base[k][against] for k, against in OWN_SETS.items() if k in base}


SETS = tuple(OWN_SETS)  # a run's own mechanism sets, in order
OUTSIDE = SETS[1:]  # the sets outside the training distribution (their margins' intervals)


def baselines_of(n: Numbers) -> dict[str, dict[str, float]]:
    """The predictors of one seed's numbers ``n`` (``base.<set>``: the best predictor without
    induction; ``base.<set>.copier``: the in-context frequency copier; ``base.<set>.oracle``:
    induction), shaped as ``panel.set_baselines`` gives them: {set: {"best", "copier",
    "oracle"}} for the mechanism sets that have all three (a set not measured is left out)."""
    return {s: {"best": n[f"base.{s}"], "copier": n[f"base.{s}.copier"],
                "oracle": n[f"base.{s}.oracle"]} for s in SETS
            if all(f"base.{s}{c}" in n for c in ("", ".copier", ".oracle"))}


def bounds_of(n: Numbers, short: str) -> dict[str, dict[str, tuple[float, float]]]:
    """The model ``short``'s margin intervals in one seed's numbers ``n``, as
    ``panel.margin_bounds`` gives them: {set: {"best": (low, high), "copier": (low, high)}}
    for the sets outside training that have them."""
    keys = ("beyond_low", "beyond_high", "gain_low", "gain_high")
    return {s: {"best": (n[f"{short}.{s}.beyond_low"], n[f"{short}.{s}.beyond_high"]),
                "copier": (n[f"{short}.{s}.gain_low"], n[f"{short}.{s}.gain_high"])}
            for s in OUTSIDE if all(f"{short}.{s}.{k}" in n for k in keys)}


def verdict_of(n: Numbers, short: str) -> dict[str, object]:
    """The model ``short``'s verdict by the maps' rule on its own sets (``own_judge``,
    with its margins' intervals), judged as stopped: a claim is judged at its size's steps (the
    scorecard names the setting), so it reads whether the run copies by content there; the
    seed table's label says whether it was still learning. KeyError (not measured) where a
    loss, a predictor or an interval is missing or NaN."""
    need(n, [f"base.{s}{c}" for s in SETS for c in ("", ".copier", ".oracle")])
    need(n, [f"{short}.{s}.{k}" for s in OUTSIDE
             for k in ("beyond_low", "beyond_high", "gain_low", "gain_high")])
    losses = dict(zip(SETS, need(n, [f"{short}.{s}" for s in SETS])))
    return own_judge(losses, baselines_of(n), False, bounds_of(n, short))
