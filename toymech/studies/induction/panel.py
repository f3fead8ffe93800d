"""One test panel for a whole map of study 1, the predictors a run is judged against, and the
rule that judges it (``judge``); the notebook's per-seed label and the copies-by-content claims
read a run's own sets by the same rule (``own_sets.own_judge``), so notebook, scorecard and maps share one
label vocabulary: ``content`` / ``partial`` / ``position``, or a state (``untrained``, ``still
learning``, ``undecided``; ``toymech.studies.states``).

**The panel.** A map's cells train on different data (block lengths, offsets), so sets built
from each cell's own task differ from cell to cell and their labels cannot be compared. The panel
is built once per map, from every cell's task, outside the training range of every cell, and
drawn from one generator, so every run of the map is scored on the very same sequences:

* ``shifted``: a block length that every cell trains on where there is one (else the middle of
  all of them), after more random letters than any cell ever puts first;
* ``shorter``: blocks one letter shorter than the shortest any cell trains on (at least 2);
* ``longer``: blocks one letter longer than the longest any cell trains on;
* ``far``: longer blocks after a longer start, both outside every cell.

Each set scores only the predictable letters (from the block's second occurrence on). A set that
does not fit the shortest sequence of the map is left out and named in ``Panel.left_out`` (the
map's row says so in its ``panel`` column).

**The predictors.** ``NULL_FAMILY`` is every algorithm without induction the rule tests a run
against, each fitted on the run's own training data (``analysis.baselines``): the in-context
frequency copier (``copier``), the position-only copier (``position``), the recency-weighted
frequency copier (``recency``: suppresses or favours the last k letters, k fitted) and
position-only attention (``attention``: copies and suppresses by absolute and relative position,
weights fitted). A 1-layer attention-only model can implement each of them without induction.
The bar of a set is the best of them there (``"best"``). ``MECHANISM`` is induction by content
itself (``analysis.baselines.induction_prediction``: the letters that followed earlier copies of
the current letter), the oracle a set's difficulty is read against.

**The rule** (``judge``), with every cut fixed here before a map is judged by it:

* The run's state comes first, in the one order of every study (``states.state_of``): ``still
  learning`` where its loss was still falling when it stopped (the map's ``map_row`` also calls
  a run whose label changed between half its steps and its end still learning); ``untrained``
  where its loss on its own training distribution (predictable letters) is not below the
  frequency copier's by ``MARGIN`` (not having learned is never evidence of a mechanism);
  ``undecided`` (below); only a ``learned`` run carries a label.
* A set **can tell** content from the predictors for a run (``telling``) when the mechanism
  solves it (the oracle below the frequency copier by ``MARGIN``) and no member of the family
  gets half of the oracle's gain over the frequency copier there (``TELLS``): copying 6 back
  solves 3-letter blocks, so a run trained on 6-letter blocks is not judged on them (there a
  predictor without induction is as good as content copying); recency suppression gains a
  little on 9-letter blocks, far from what induction gains, so they tell. Only the block-length
  sets (``shorter``, ``longer``, ``far``) are candidates: a shifted start keeps a trained
  block length, which copying a trained distance back solves. The rule reads the predictors
  only, never the run's losses. A label never rests on a single set: a learned run with fewer
  than ``MIN_SETS`` sets that can tell is ``undecided`` (``judged_on`` names them).
* The run **beats** a set that can tell when its loss is below the best member's by ``MARGIN``.
* The run **fails** a panel set (any of them, whether it can tell or not; ``failed_on``) when
  the mechanism solves the set and the run does not: its loss is not below the frequency
  copier's by ``MARGIN`` there, the test the run's own training distribution must pass to be
  learned at all. A null solving the set as well changes nothing: content copying would have
  solved it, so a run that fails it does not copy by content (evidence against counts).
* ``content``: every set that can tell beaten and no set failed; ``position``: none beaten;
  ``partial``: anything between (some beaten, or all beaten with a set failed).
* **Intervals.** Each margin (the best member's loss minus the run's, and the frequency
  copier's minus the run's) has a 95 % bootstrap interval over the set's sequences
  (``margin_bounds``: ``analysis.bootstrap``, ``N_RESAMPLES`` paired resamples from a generator
  seeded per set by ``BOOTSTRAP_SEED`` alone). A test whose interval straddles ``MARGIN`` may go
  either way; a run whose label would change with any of them is ``undecided``
  (``undecided_because`` names the sets), never a label.
* ``MARGIN`` = 0.1 nats: a likelihood gain of e^0.1 = 1.1 per letter, the smallest we call using
  the mechanism. It is well above the noise of the bar itself: each predictor's loss moves by far
  less than a third of it between two panels of 512 sequences drawn independently
  (``tests/test_induction_panel.py`` measures that spread and fails if it reaches a third).

The family and the evidence against were added for issue 63, after the maps judged by the
earlier rule (bar: the better of the frequency and position-only copiers; ``telling``: where the
position-only copier does not beat the frequency copier by ``MARGIN``; no failures, no
intervals) had run: ``earlier_label`` keeps that rule's label for a row beside the new one.
"""

from __future__ import annotations

import itertools
import math
import statistics
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from ...analysis.baselines import (
    Prediction,
    attention_prediction,
    attention_weights,
    frequency_prediction,
    induction_prediction,
    position_prediction,
    recency_prediction,
    recency_window,
)
from ...analysis.bootstrap import (
    N_RESAMPLES,
    percentile_interval,
    resample_counts,
    resampled_losses,
)
from ...core import check
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks
from ..states import LEARNED, UNDECIDED, state_of

MARGIN = 0.1
TELLS = 0.5  # a member with this share of the oracle's gain over the copier explains a set
MIN_SETS = 2  # the fewest sets that can tell a label may rest on
FIT_N = 512  # the training sequences a member is fitted on (the first of the run's own)
BOOTSTRAP_SEED = 0
PANEL_SETS = ("shifted", "shorter", "longer", "far")
BLOCK_LENGTH_SETS = ("shorter", "longer", "far")  # the sets a position-only copier cannot solve
MECHANISM = "oracle"  # the key of the mechanism's own predictor in a set's predictors


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


@dataclass(frozen=True)
class NullMember:
    """A member of the null family: an algorithm without induction. ``name``: its key in a set's
    predictors; ``meaning``: what it does, in a sentence; ``fit(trained_on, n_vocab)``: what it
    learns from the run's own training data; ``predict(batch, n_vocab, fitted)``: its
    ``Prediction`` on a batch, given that."""

    name: str
    meaning: str
    fit: Callable[[Batch, int], Any]
    predict: Callable[[Batch, int, Any], Prediction]


NULL_FAMILY: tuple[NullMember, ...] = (
    NullMember("copier", "the in-context frequency copier: which letters occur, not where",
               lambda train, V: None, lambda b, V, fitted: frequency_prediction(b, V)),
    NullMember("position", "the position-only copier: one source position per target position, "
               "fitted on the run's own data", lambda train, V: train,
               lambda b, V, train: position_prediction(b, V, fit_on=train)),
    NullMember("recency", "the recency-weighted frequency copier: suppresses (or favours) the "
               "last k letters, k fitted on the run's own data", recency_window,
               lambda b, V, k: recency_prediction(b, V, k=k)),
    NullMember("attention", "position-only attention: copies and suppresses letters by their "
               "absolute and relative positions, weights fitted on the run's own data",
               attention_weights, lambda b, V, w: attention_prediction(b, V, weights=w)),
)
MEMBERS = tuple(m.name for m in NULL_FAMILY)


def _cut(batch: Batch, length: int) -> Batch:
    """The panel's sequences are as long as the map's shortest; a cell's own are never shorter."""
    return batch if batch.tokens.shape[1] <= length else Batch(batch.tokens[:, :length], batch.scored[:, :length])


def set_predictions(sets: Mapping[str, Batch], trained_on: Batch, n_vocab: int
                    ) -> dict[str, dict[str, Prediction]]:
    """Every member of ``NULL_FAMILY`` and the mechanism (``MECHANISM``) on each of ``sets``
    (batches no longer than ``trained_on``'s sequences; longer ones are cut): {set: {name:
    Prediction}}, each member fitted once on the first ``FIT_N`` sequences of ``trained_on`` (the
    run's own predictable letters). ``n_vocab``: the letters they spread over (the task's
    ``n_letters``)."""
    fit_on = Batch(trained_on.tokens[:FIT_N], trained_on.scored[:FIT_N])
    fitted = {m.name: m.fit(fit_on, n_vocab) for m in NULL_FAMILY}
    out = {}
    for name, batch in sets.items():
        batch = _cut(batch, trained_on.tokens.shape[1])
        preds = {m.name: m.predict(batch, n_vocab, fitted[m.name]) for m in NULL_FAMILY}
        preds[MECHANISM] = induction_prediction(batch, n_vocab)
        out[name] = {k: _compact(p) for k, p in preds.items()}
    return out


def _compact(p: Prediction) -> Prediction:
    """``p`` with its log-probabilities in single precision (a map keeps every cell's; the
    losses read from them differ by far less than the printed digits)."""
    return Prediction(p.log_probs.float(), p.targets, p.rows, p.n_rows)


def bars(predictions: Mapping[str, Mapping[str, Prediction]]) -> dict[str, dict[str, float]]:
    """{set: {member: its loss, ..., "best": the lowest member's, "oracle": the mechanism's}}
    from ``set_predictions``: what a run's losses are judged against (``judge``)."""
    out = {}
    for name, preds in predictions.items():
        row = {m: preds[m].loss for m in MEMBERS}
        out[name] = {**row, "best": min(row.values()), MECHANISM: preds[MECHANISM].loss}
    return out


def set_baselines(sets: Mapping[str, Batch], trained_on: Batch, n_vocab: int
                  ) -> dict[str, dict[str, float]]:
    """``bars(set_predictions(sets, trained_on, n_vocab))``: each member's loss, the best and
    the mechanism's on each of ``sets``, the members fitted on ``trained_on`` (the run's own
    predictable letters); ``n_vocab``: the task's ``n_letters``."""
    return bars(set_predictions(sets, trained_on, n_vocab))


def panel_sets(panel: Panel, trained_on: Batch) -> dict[str, Batch]:
    """The run's own training distribution (``"train"``, ``trained_on``) and every set of
    ``panel``: what a map run is scored on."""
    return {"train": trained_on, **panel.sets}


def baselines(panel: Panel, trained_on: Batch, n_vocab: int) -> dict[str, dict[str, float]]:
    """``set_baselines`` on the run's training distribution (``"train"``) and every set of
    ``panel``, the members fitted on ``trained_on`` (the cell's predictable letters);
    ``n_vocab``: the task's ``n_letters``."""
    return set_baselines(panel_sets(panel, trained_on), trained_on, n_vocab)


# --- the tests of the rule ------------------------------------------------------------------
def beaten(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
           names: Sequence[str], margin: float = MARGIN, against: str = "best") -> list[str]:
    """The sets of ``names`` on which the run's loss (``losses``) is below ``base[set]
    [against]`` (``"best"``: the best member of the family; or one member's name) by more
    than ``margin``; a set not measured (in ``losses`` or ``base``) or NaN is not beaten."""
    check(against in ("best", *MEMBERS), "against", against, f"'best' or one of {MEMBERS}")
    return [k for k in names if k in losses and k in base
            and bool(losses[k] < base[k][against] - margin)]


def learned(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
            name: str = "train", margin: float = MARGIN) -> bool:
    """Whether a run learned its own training distribution: its loss on ``name`` (the training
    distribution's predictable letters) below the frequency copier's there by more than
    ``margin``. ``losses``: {set: the run's loss}; ``base``: ``baselines`` / ``set_baselines``.
    A set not measured (or NaN) has not been learned."""
    return beaten(losses, base, [name], margin, against="copier") == [name]


def _finite(base: Mapping[str, float], *keys: str) -> bool:
    return all(k in base and not math.isnan(base[k]) for k in keys)


def solvable(base: Mapping[str, Mapping[str, float]], names: Sequence[str] = PANEL_SETS,
             margin: float = MARGIN) -> list[str]:
    """The sets of ``names`` the mechanism solves: the oracle's loss below the frequency
    copier's by more than ``margin`` (``base``: ``set_baselines``)."""
    return [k for k in names if k in base and _finite(base[k], "copier", MECHANISM)
            and base[k][MECHANISM] < base[k]["copier"] - margin]


def telling(base: Mapping[str, Mapping[str, float]], names: Sequence[str] = BLOCK_LENGTH_SETS,
            margin: float = MARGIN) -> list[str]:
    """The sets of ``names`` that can tell content from the predictors without it for a run
    (module docstring): the mechanism solves them (``solvable``) and the best member of the
    family (fitted on the run's own training data) gains less than ``TELLS`` of the oracle's
    gain over the frequency copier there. ``base``: ``baselines`` / ``set_baselines``; a set
    whose predictors are NaN is left out."""
    return [k for k in solvable(base, names, margin) if _finite(base[k], "best")
            and base[k]["copier"] - base[k]["best"]
            < TELLS * (base[k]["copier"] - base[k][MECHANISM])]


def failed(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
           names: Sequence[str] = PANEL_SETS, margin: float = MARGIN) -> list[str]:
    """The sets of ``names`` the run fails (module docstring): the mechanism solves them
    (``solvable``) and the run's loss (``losses``) is not below the frequency copier's by more
    than ``margin``. A set the run was not measured on (or NaN) shows no failure."""
    return [k for k in solvable(base, names, margin) if k in losses
            and not math.isnan(losses[k]) and not losses[k] < base[k]["copier"] - margin]


def _label(won: set, lost: set, tested: Sequence[str]) -> str:
    if len(won) == len(tested) and not lost:
        return "content"
    return "position" if not won else "partial"


def judge(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
          learning: bool | None = False, margin: float = MARGIN,
          bounds: Mapping[str, Mapping[str, tuple[float, float]]] | None = None
          ) -> dict[str, object]:
    """A run's verdict by the module's rule, its state decided in the one order of every study
    (``states.state_of``: still learning, untrained, undecided, learned): ``{"state": learned |
    untrained | still learning | undecided, "label": content | partial | position | None,
    "judged_on": the sets that can tell, "failed_on": the sets it fails, "undecided_because":
    why an undecided run has no label ("" otherwise), "gap.<set>": its loss minus the best
    member's, per set}``.

    ``losses``: the run's loss on ``"train"`` (its predictable letters) and on each set;
    ``base``: ``baselines`` / ``set_baselines`` of the same sets; ``learning``: whether its
    logged loss was still falling (``analysis.dynamics.history_still_learning``: True, or None
    where the log cannot tell, is ``still learning``); ``margin``: the cut; ``bounds``:
    ``margin_bounds`` of the run (None: the point estimates alone decide, nothing is
    undecided for its intervals)."""
    gaps = {f"gap.{k}": losses[k] - base[k]["best"] for k in base if k in losses}
    tested = telling(base, BLOCK_LENGTH_SETS, margin)
    checked = [k for k in base if k != "train"]
    lost = failed(losses, base, checked, margin)
    shown = {"judged_on": tuple(tested), "failed_on": tuple(lost), "undecided_because": "",
             **gaps}

    def verdict(label, why: str = "") -> dict[str, object]:
        state = state_of(learned=learned(losses, base, "train", margin), learning=learning,
                         decided=not why)
        return {"state": state, "label": label if state == LEARNED else None, **shown,
                "undecided_because": why if state == UNDECIDED else ""}

    if len(tested) < MIN_SETS:
        return verdict(None, f"{len(tested)} set(s) can tell, fewer than {MIN_SETS}")
    won = set(beaten(losses, base, tested, margin))
    label = _label(won, set(lost), tested)
    unsure = _unsure(losses, base, tested, solvable(base, checked, margin), margin, bounds)
    labels = {label}
    for flips in itertools.product((False, True), repeat=len(unsure)):
        w, f = set(won), set(lost)
        for (kind, k), flip in zip(unsure, flips):
            if flip:
                (w if kind == "beaten" else f).symmetric_difference_update({k})
        labels.add(_label(w, f, tested))
    if len(labels) > 1:
        why = ", ".join(f"{k} ({kind})" for kind, k in unsure)
        return verdict(None, f"margin interval straddles the cut on {why}")
    return verdict(label)


def _unsure(losses, base, tested, checked, margin, bounds) -> list[tuple[str, str]]:
    """The tests (``("beaten", set)`` / ``("failed", set)``) whose interval in ``bounds``
    straddles ``margin``: either outcome is within the interval."""
    if not bounds:
        return []
    out = [("beaten", k) for k in tested if k in bounds and k in losses
           and bounds[k]["best"][0] <= margin < bounds[k]["best"][1]]
    return out + [("failed", k) for k in checked if k in bounds and k in losses
                  and bounds[k]["copier"][0] <= margin < bounds[k]["copier"][1]]


def margin_draws(run: Mapping[str, Prediction], predictions: Mapping[str, Mapping[str, Prediction]],
                 n_resamples: int = N_RESAMPLES, seed: int = BOOTSTRAP_SEED
                 ) -> dict[str, dict[str, torch.Tensor]]:
    """The run's margins under ``n_resamples`` paired resamples of each set's sequences
    (``analysis.bootstrap``): {set: {"best": the best member's loss minus the run's, "copier":
    the frequency copier's minus the run's}}, each [n_resamples]; the best member is chosen
    again in every resample. ``run``: {set: the run's ``Prediction``}; ``predictions``:
    ``set_predictions`` of the same sets; a set's draws come from a generator seeded by ``seed``
    and the set's name alone, so every run of a map is resampled alike."""
    out = {}
    for name, preds in predictions.items():
        if name not in run:
            continue
        gen = torch.Generator().manual_seed(seed * 1_000_003 + zlib.crc32(name.encode()))
        draws = resample_counts(run[name].n_rows, n_resamples, gen)
        mine = resampled_losses(*run[name].sequence_totals(), draws)
        members = torch.stack([resampled_losses(*preds[m].sequence_totals(), draws)
                               for m in MEMBERS])
        out[name] = {"best": members.min(0).values - mine,
                     "copier": members[MEMBERS.index("copier")] - mine}
    return out


def margin_bounds(draws: Mapping[str, Mapping[str, torch.Tensor]]
                  ) -> dict[str, dict[str, tuple[float, float]]]:
    """{set: {"best": (low, high), "copier": (low, high)}}: the 95 % percentile intervals of
    ``margin_draws`` (``draws``), what ``judge`` reads as ``bounds``."""
    return {k: {kind: percentile_interval(v) for kind, v in d.items()} for k, d in draws.items()}


def beyond_interval(draws: Mapping[str, Mapping[str, torch.Tensor]], sets: Sequence[str]
                    ) -> tuple[float, float]:
    """The 95 % interval of the smallest margin over ``sets`` (the run's ``beyond_baseline``:
    how far below the best member it is on its worst set that can tell), from
    ``margin_draws`` (``draws``); NaN where no set is given."""
    present = [draws[k]["best"] for k in sets if k in draws]
    if not present:
        return math.nan, math.nan
    return percentile_interval(torch.stack(present).min(0).values)


def earlier_label(losses: Mapping[str, float], base: Mapping[str, Mapping[str, float]],
                  margin: float = MARGIN) -> str | None:
    """The label of the rule before issue 63 (module docstring) for a learned run (None where
    that rule gave none): the bar the better of the frequency and position-only copiers, the
    block-length sets where the position-only copier does not beat the frequency copier by
    ``margin`` judged, content on all / position on none / partial between. ``losses``,
    ``base``: as ``judge`` reads them."""
    if not learned(losses, base, "train", margin):
        return None
    tested = [k for k in BLOCK_LENGTH_SETS if k in base
              and not base[k]["position"] < base[k]["copier"] - margin]
    won = [k for k in tested if k in losses
           and losses[k] < min(base[k]["copier"], base[k]["position"]) - margin]
    if not tested:
        return None
    return "content" if len(won) == len(tested) else "position" if not won else "partial"


def median_gap(rows: Sequence[Mapping[str, object]], name: str) -> float | None:
    """The median of ``gap.<name>`` over a cell's rows (None when no row has it): how far below
    (negative) or above the best predictor without the mechanism the cell's runs sit."""
    values = [float(r[f"gap.{name}"]) for r in rows if r.get(f"gap.{name}") is not None]
    return statistics.median(values) if values else None
