"""Study 1's predictions from other work, judged on its map (``studies.predictions``), read
from its cells (``toymech.maps.summary.cell_groups``).

Kawata, Song, Bietti et al. (2025) train a 1-layer transformer in a trigger setting and find that
varied distances between the trigger and its target give an induction head, a fixed distance a
positional shortcut. That is their setting, not ours: here it is a prediction for our 2-layer
model (``induction-2l``) on repeated letter blocks, where the block length plays the distance.
It has two conjuncts, each judged pair by pair (``studies.predictions``: each pair's outcome,
its exact p, a stratified exact p over the conjunct's pairs, one verdict over both):

* **varied lengths give content**: a cell with a varied block length (a range, ``4-8``) carries
  the label ``content`` on a larger share of its labelled runs than each fixed-length cell at
  the same other knobs (the offset, the width: like with like);
* **a fixed length gives the shortcut**: a fixed-length cell carries ``position`` on a larger
  share than the varied-length cell at the same other knobs, judged only where the start is
  fixed (a single ``offset``). Their shortcut reads the target's absolute position, which a
  random start (an offset range) removes by design: there the conjunct cannot hold or fail, so
  those pairs are left out and said to be.

A pair compares shares among a cell's labelled runs (``measured``: learned, stopped learning,
label decided), and only cells where most runs carry a label are compared: a run untrained,
still learning, out of budget or undecided says nothing of which mechanism its cell gives. A
cell left out is named with its states.
"""

from __future__ import annotations

from ...display.prose import NAMED_AT_MOST
from ..predictions import Judgement, MapPrediction, Pair
from .design import KNOBS

KAWATA_SOURCE = "Kawata, Song, Bietti et al. 2025, From Shortcut to Induction Head, arXiv 2512.18634"
PREDICTED_ON = "induction-2l"  # the model the prediction is judged on
KNOB = "block_len"
START = "offset"  # the knob whose single value is a fixed start (the shortcut's condition)
CONTENT, SHORTCUT = "varied lengths give content", "a fixed length at a fixed start gives position"


def _varied(knob: str, value: str) -> bool:
    """Whether ``value`` of ``knob`` (as the table writes it) draws several values per sequence."""
    parsed = KNOBS[knob].parse(value)
    return isinstance(parsed, tuple) and len(set(parsed)) > 1


def _start_of(cell) -> str:
    """The cell's offset as the table writes it (the study's own where the map leaves it)."""
    return cell.knobs.get(START, KNOBS[START].text(KNOBS[START].source))


def _cell_name(knobs: dict[str, str]) -> str:
    return "(" + ", ".join(f"{k} {v}" for k, v in knobs.items()) + ")"


def _judgeable(cell) -> bool:
    """A cell is compared only where most of its runs carry a label (``measured``): its label
    shares are then over those runs."""
    return len(cell.measured) > cell.n / 2


def _unjudged(cells) -> str:
    """The ``cells`` left out for want of labelled runs: each named with its states where they
    are at most ``NAMED_AT_MOST``, else counted, their runs summed by state."""
    cells = list(cells)
    if len(cells) <= NAMED_AT_MOST:
        return "; ".join(f"{_cell_name(c.knobs)} {c.n - len(c.measured)} of {c.n} without a "
                         f"label ({c.states_text() or 'not measured'})" for c in cells)
    by_state: dict[str, int] = {}
    for c in cells:
        for state, n in c.states().items():
            by_state[state] = by_state.get(state, 0) + n
    return (f"{len(cells)} cells, {sum(c.n - len(c.measured) for c in cells)} of "
            f"{sum(c.n for c in cells)} runs without a label "
            f"({', '.join(f'{n} {s}' for s, n in by_state.items())})")


def _pair(conjunct: str, label: str, higher, lower) -> Pair:
    return Pair(conjunct, label, _cell_name(higher.knobs), higher.held(label),
                len(higher.measured), _cell_name(lower.knobs), lower.held(label),
                len(lower.measured))


def varied_lengths_give_content(cells) -> Judgement:
    """The Kawata prediction's pairs on a map's ``cells`` (the module docstring): for
    ``induction-2l``, every varied-length cell against every fixed-length cell at the same
    other knobs, once for ``content`` (varied predicted higher) and, at a fixed start only, once
    for ``position`` (fixed predicted higher). ``cells``: the map's cells
    (``toymech.maps.summary.Cell``: ``experiment``, ``knobs``, ``n``, ``measured``,
    ``held(label)``, ``states_text()``).

    A pair with a cell whose runs mostly carry no label is left out, the cell named with its
    states; pairs at a random start are left out of the shortcut conjunct, said so. No pair
    left: not judged, with why."""
    mine = [c for c in cells if c.experiment == PREDICTED_ON and KNOB in c.knobs]
    if not mine:
        return Judgement(note=f"no {PREDICTED_ON} runs with a block length on this map")
    by_others: dict[tuple, list] = {}
    for c in mine:
        by_others.setdefault(tuple((k, v) for k, v in c.knobs.items() if k != KNOB), []).append(c)
    content, shortcut, skipped, random_start = [], [], {}, []
    for group in by_others.values():
        fixed = [c for c in group if not _varied(KNOB, c.knobs[KNOB])]
        for v in (c for c in group if _varied(KNOB, c.knobs[KNOB])):
            for f in fixed:
                if not (_judgeable(v) and _judgeable(f)):
                    skipped.update({_cell_name(c.knobs): c for c in (v, f) if not _judgeable(c)})
                    continue
                content.append(_pair(CONTENT, "content", v, f))
                if _varied(START, _start_of(f)):
                    random_start.append(f"{_cell_name(f.knobs)} vs {_cell_name(v.knobs)}")
                else:
                    shortcut.append(_pair(SHORTCUT, "position", f, v))
    left_out = []
    if random_start:
        named = ("; ".join(random_start) if len(random_start) <= NAMED_AT_MOST
                 else f"{len(random_start)} pairs")
        left_out.append(f"the shortcut conjunct at a random start, where no absolute-position "
                        f"shortcut exists ({named})")
    if skipped:
        left_out.append("cells whose runs mostly carry no label: " + _unjudged(skipped.values()))
    if not content:
        return Judgement(left_out="; ".join(left_out), note=(
            "not judged: " + ("; ".join(left_out) if left_out else
                              f"no varied and fixed block length at the same other knobs for "
                              f"{PREDICTED_ON}")))
    return Judgement(tuple(content + shortcut), "; ".join(left_out))


KAWATA = MapPrediction(
    name="varied-lengths-give-induction",
    statement=(f"On {PREDICTED_ON}, a varied block length gives induction by content on a larger "
               "share of its labelled runs than the fixed length at the same other knobs, and, "
               "at a fixed start, the fixed length gives the position shortcut on a larger share "
               "than the varied one (their 1-layer trigger setting: varied distances give an "
               "induction head, a fixed one the positional shortcut)"),
    source=KAWATA_SOURCE,
    rule=varied_lengths_give_content,
    not_computed=("their threshold in how varied the distances must be (we compare one fixed "
                  "length with one range), their 1-layer model and trigger task, and their "
                  "training dynamics; only the direction of the effect on our 2-layer model"),
)

MAP_PREDICTIONS = (KAWATA,)  # judged on every map of this study (its page, toymech results --maps)
