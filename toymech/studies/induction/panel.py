"""One test panel for a whole map of study 1, and the rule that judges a run on it.

A map's cells train on different data (block lengths, offsets), so sets built from each cell's
own task (``RepeatedBlocks.mechanism_sets``) differ from cell to cell and their labels cannot be
compared. The panel is built once per map, from every cell's task, outside the training range of
every cell, and drawn from one generator, so every run of the map is scored on the very same
sequences:

* ``shifted``: a block length that every cell trains on where there is one (else the middle of
  all of them), after more random letters than any cell ever puts first;
* ``shorter``: blocks one letter shorter than the shortest any cell trains on (at least 2);
* ``longer``: blocks one letter longer than the longest any cell trains on;
* ``far``: longer blocks after a longer start, both outside every cell (a held-out pattern no
  single change of the training data reaches).

Each set scores only the predictable letters (from the block's second occurrence on). A set that
does not fit the shortest sequence of the map is left out and named in ``Panel.left_out``.

Judging a run (``judge``), with the cut fixed here before any map is run:

* a run's state comes first: ``untrained`` when its loss on its own training distribution
  (predictable letters) is not below the in-context frequency copier's by ``MARGIN``
  (``analysis.baselines``: a predictor with no induction and no position);
* a run that learned is ``content`` when, on every panel set that changes the block length
  (``shorter``, ``longer``, ``far``) and can tell for it (below), its loss is below BOTH
  predictors without the mechanism by ``MARGIN``: the frequency copier and the position-only
  copier fitted on the run's own training data (a model that learned where the repeats are, not
  what they are); ``position`` when it beats them on none of those sets; ``partial`` in between.
* a set can tell content from position for a run only where the position-only copier fitted on
  the run's own training data does not solve it, i.e. does not beat the frequency copier there by
  ``MARGIN`` (``telling``). Copying a trained distance back solves every block length that
  divides it (copying 6 back solves blocks of 3 and of 2), so a run trained on 6-letter blocks
  is not judged on a 3-letter set: there a position-only model is already at 0.47 nats, and a
  run that copies by content for every other block length could fail that bar while still being
  no position copier. The rule reads the predictors only, never a run's losses; a learned run
  with no set that can tell gets no label (its row says ``judged_on`` is empty). This rule was
  added after the first study-1 maps ran (their fixed-6 cells showed the 3-letter set cannot
  tell): the record says so where it reads them.
* a run whose loss was still falling when it stopped (``analysis.dynamics.still_learning``) is
  ``still learning`` and gets no label either: train it longer (the map's steps axis continues it).
* ``MARGIN`` = 0.1 nats: a likelihood gain of e^0.1 = 1.1 per letter, the smallest we call using
  the mechanism. It is well above the noise of the bar itself: either predictor's loss moves by
  far less than a third of it between two panels of 512 sequences drawn independently
  (``tests/test_induction_panel.py`` measures that spread and fails if it reaches a third).

The same tests (``learned``: below the frequency copier on the training distribution; ``beaten``:
below a predictor without the mechanism on a set, each by ``MARGIN``; ``telling``: only the
block-length sets that can tell) judge a single run's own sets (``set_baselines`` on the task's
``eval_sets``; ``solved`` and ``OWN_SETS``): the notebook's
mechanism check (``measure.mechanism_verdict``), the per-seed labels (``measure.mechanism_label``)
and the copies-by-content claims (``claims``), so notebook, scorecard and maps use one rule.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Mapping, Sequence

import torch

from ...analysis.baselines import context_frequency_loss, position_copy_loss
from ...core import check
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks

MARGIN = 0.1
PANEL_SETS = ("shifted", "shorter", "longer", "far")
BLOCK_LENGTH_SETS = ("shorter", "longer", "far")  # the sets a position-only copier cannot solve


@dataclass(frozen=True)
class Panel:
    """The map's common sets: {name: Batch}, what each is (period, offset), the shortest sequence
    length and letter count of the map's cells, and the sets that did not fit."""

    sets: dict[str, Batch]
    shapes: dict[str, tuple[int, int]]
    seq_len: int
    n_letters: int
    left_out: tuple[str, ...] = field(default=())


def panel_shapes(tasks: Sequence[RepeatedBlocks]) -> tuple[dict[str, tuple[int, int]], tuple[str, ...]]:
    """The panel's sets as (period, offset) from every cell's task, and the names left out
    because they do not fit the shortest sequence (a set needs its block twice and one more
    letter)."""
    check(len(tasks) > 0 and all(isinstance(t, RepeatedBlocks) for t in tasks), "tasks",
          [type(t).__name__ for t in tasks][:4], "one or more repeated-block tasks (the map's cells)")
    lens = sorted({b for t in tasks for b in t.block_lens})
    common = set.intersection(*(set(t.block_lens) for t in tasks))
    period = max(common) if common else lens[(len(lens) - 1) // 2]
    start = max(o for t in tasks for o in t.offsets) + 1
    seq_len = min(t.seq_len for t in tasks)
    wanted = {"shifted": (period, start + max(0, period // 2 - 1)),
              "shorter": (max(2, lens[0] - 1), 0),
              "longer": (lens[-1] + 1, 0),
              "far": (lens[-1] + 1, start)}
    if wanted["shorter"][0] in lens:
        del wanted["shorter"]  # blocks of 2 are trained on: no shorter block is left to test
    fits = {k: v for k, v in wanted.items() if v[1] + 2 * v[0] < seq_len}
    return fits, tuple(k for k in PANEL_SETS if k not in fits)


def build_panel(tasks: Sequence[RepeatedBlocks], n: int, seed: int) -> Panel:
    """The panel for a map whose cells train on ``tasks``: ``n`` sequences per set, drawn from a
    generator seeded by ``seed`` alone (the map's, not a run's), so every cell gets the same
    letters."""
    check(isinstance(n, int) and n >= 1, "n", n, "an integer >= 1")
    shapes, left_out = panel_shapes(tasks)
    seq_len, n_letters = min(t.seq_len for t in tasks), min(t.n_letters for t in tasks)
    frame = RepeatedBlocks(block_len=2, n_letters=n_letters, length=seq_len)
    gen = torch.Generator().manual_seed(seed)
    sets = {k: frame.periodic(n, gen, period, offset) for k, (period, offset) in shapes.items()}
    return Panel(sets, shapes, seq_len, n_letters, left_out)


def baselines(panel: Panel, trained_on: Batch, n_vocab: int) -> dict[str, dict[str, float]]:
    """Both predictors without the mechanism on every panel set and on the run's own training
    distribution (``"train"``): {set: {"copier", "position", "best"}}; the position copier is
    fitted on ``trained_on`` (the cell's predictable letters), the frequency copier on each set.
    ``n_vocab``: the letters the predictors spread over (the task's ``n_letters``)."""
    sets = {"train": trained_on, **{k: _cut(b, trained_on.tokens.shape[1]) for k, b in panel.sets.items()}}
    return set_baselines(sets, trained_on, n_vocab)


def set_baselines(sets: Mapping[str, Batch], trained_on: Batch, n_vocab: int
                  ) -> dict[str, dict[str, float]]:
    """Both predictors without the mechanism on each of ``sets`` (batches as long as
    ``trained_on``'s): {set: {"copier", "position", "best"}}, the in-context frequency copier
    fitted on each set, the position-only copier's sources fitted on ``trained_on`` (the run's
    own predictable letters), ``"best"`` the lower loss of the two. ``n_vocab``: the letters the
    predictors spread over (the task's ``n_letters``)."""
    out = {}
    for name, batch in sets.items():
        copier = context_frequency_loss(batch, n_vocab)
        position = position_copy_loss(batch, n_vocab, fit_on=trained_on)
        out[name] = {"copier": copier, "position": position, "best": min(copier, position)}
    return out


def learned(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
            name: str = "train", margin: float = MARGIN) -> bool:
    """Whether a run learned its own training distribution: its loss on ``name`` (the training
    distribution's predictable letters) below the frequency copier's there (``base[name]
    ["copier"]``) by more than ``margin``. ``losses``: {set: the run's loss}; ``base``:
    ``baselines`` / ``set_baselines``. A set not measured (or NaN) has not been learned."""
    return beaten(losses, base, [name], margin, against="copier") == [name]


def beaten(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
           names: Sequence[str], margin: float = MARGIN, against: str = "best") -> list[str]:
    """The sets of ``names`` on which the run's loss (``losses``) is below the predictor
    ``against`` of ``base[set]`` (``"best"``: the better predictor without the mechanism;
    ``"copier"``: the frequency copier) by more than ``margin``; a set not measured (in
    ``losses`` or ``base``) or NaN is not beaten."""
    check(against in ("best", "copier", "position"), "against", against,
          "'best', 'copier' or 'position'")
    return [k for k in names if k in losses and k in base
            and bool(losses[k] < base[k][against] - margin)]


# A run's own mechanism sets (``RepeatedBlocks.eval_sets``) and the predictor each is judged
# against. ``predictable`` and ``shifted`` keep a trained block length: the position-only copier
# (a fixed offset back, fitted on the training data) predicts them, so there the bar is the
# frequency copier (the run predicts from where letters repeat, and a shifted start did not
# break it); ``shorter`` and ``longer`` change the block length, where only content copying
# beats both: the bar is the better of the two (as ``judge``'s block-length sets).
OWN_SETS = {"predictable": "copier", "shifted": "copier", "shorter": "best", "longer": "best"}


def solved(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
           margin: float = MARGIN) -> dict[str, bool]:
    """Which of a run's own mechanism sets (``OWN_SETS``) it solves: {set: its loss is below the
    set's predictor by more than ``margin``}. ``losses``: {set: the run's loss};
    ``base``: ``set_baselines`` of the same sets (a set missing from either is not solved). A
    block-length set (judged against the better predictor) that cannot tell content from
    position for the run (``telling``: the position-only copier fitted on its training data
    solves it) judges nothing and is left out, as ``judge`` leaves it out on a map's panel."""
    return {k: bool(beaten(losses, base, [k], margin, against)) for k, against in OWN_SETS.items()
            if against != "best" or k not in base or telling(base, [k], margin)}


def own_bars(base: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """The loss each of a run's own mechanism sets is judged against (``OWN_SETS``; ``base``:
    ``set_baselines``): solved ``MARGIN`` below it."""
    return {k: base[k][against] for k, against in OWN_SETS.items() if k in base}


def telling(base: Mapping[str, Mapping[str, float]], names: Sequence[str] = BLOCK_LENGTH_SETS,
            margin: float = MARGIN) -> list[str]:
    """The sets of ``names`` that can tell content from position for a run (module docstring):
    those of ``base`` (``baselines`` / ``set_baselines``, the position copier fitted on the
    run's own training data) where the position-only copier does not beat the frequency copier
    by more than ``margin``. Read from ``"best"`` and ``"copier"`` (the better predictor is the
    position copier exactly when it beats the frequency copier), so baselines recorded without
    the position copier's own loss are read the same way. A set whose predictors are NaN is left
    out."""
    return [k for k in names if k in base
            and not math.isnan(base[k]["best"]) and not math.isnan(base[k]["copier"])
            and not base[k]["best"] < base[k]["copier"] - margin]


def _cut(batch: Batch, length: int) -> Batch:
    """The panel's sequences are as long as the map's shortest; a cell's own are never shorter."""
    return batch if batch.tokens.shape[1] <= length else Batch(batch.tokens[:, :length], batch.scored[:, :length])


def judge(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
          learning: bool | None = False, margin: float = MARGIN) -> dict[str, object]:
    """A run's verdict on the panel: ``{"state": "learned" | "untrained" | "still learning",
    "label": "content" | "partial" | "position" | None, "gap.<set>": loss minus the best
    baseline, per set}``.

    ``losses``: the run's loss on ``"train"`` (its predictable letters) and on each panel set;
    ``base``: ``baselines(...)``. A run that did not learn gets no label (None): not learning is
    a state of the run, never evidence of a mechanism; nor does one still ``learning``
    (``analysis.dynamics.still_learning`` of its logged loss: True, or None where the log cannot
    tell). A panel set the run was not measured on counts as not beaten. Only the block-length
    sets that can tell for the run (``telling``) are judged; ``"judged_on"`` names them (a learned
    run with none gets no label)."""
    gaps = {f"gap.{k}": losses[k] - base[k]["best"] for k in base if k in losses}
    tested = telling(base, BLOCK_LENGTH_SETS, margin)
    shown = {"judged_on": tuple(tested), **gaps}
    if not learned(losses, base, "train", margin):
        return {"state": "untrained", "label": None, **shown}
    if learning is not False:
        return {"state": "still learning", "label": None, **shown}
    won = beaten(losses, base, tested, margin)
    label = (None if not tested else "content" if len(won) == len(tested)
             else "position" if not won else "partial")
    return {"state": "learned", "label": label, **shown}


def median_gap(rows: Sequence[Mapping[str, object]], name: str) -> float | None:
    """The median of ``gap.<name>`` over a cell's rows (None when no row has it): how far below
    (negative) or above the best predictor without the mechanism the cell's runs sit."""
    values = [float(r[f"gap.{name}"]) for r in rows if r.get(f"gap.{name}") is not None]
    return statistics.median(values) if values else None
