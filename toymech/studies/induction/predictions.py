"""Study 1's predictions from other work, judged on its map (``studies.predictions``), read
from its cells (``toymech.maps.summary.cell_groups``).

Kawata, Song, Bietti et al. (2025) train a 1-layer transformer in a trigger setting and find that
varied distances between the trigger and its target give an induction head, a fixed distance a
positional shortcut. That is their setting, not ours: here it is a prediction for our 2-layer
model (``induction-2l``) on repeated letter blocks, where the block length plays the distance.
A varied block length (a range, ``4-8``) should carry the label ``content`` on more seeds than
the fixed length at the same other knobs (the offset), and a fixed length should be labelled
``position`` on most of its seeds.
"""

from __future__ import annotations

from ..predictions import Judgement, MapPrediction

KAWATA_SOURCE = "Kawata, Song, Bietti et al. 2025, From Shortcut to Induction Head, arXiv 2512.18634"
PREDICTED_ON = "induction-2l"  # the model the prediction is judged on
KNOB = "block_len"


def _varied(value: str) -> bool:
    return "-" in value  # a range of lengths, "4-8"; a fixed one is a single number, "6"


def _cell_name(knobs: dict[str, str]) -> str:
    return "(" + ", ".join(f"{k} {v}" for k, v in knobs.items()) + ")"


def _judgeable(cell) -> bool:
    """A cell is compared only where most of its runs learned and stopped learning: its label
    shares are then over those runs (a run untrained or still learning holds no label)."""
    return len(cell.measured) > cell.n / 2


def _share(cell, label: str) -> float:
    return cell.held(label) / len(cell.measured)


def _unjudged(cells) -> str:
    return "; ".join(f"{_cell_name(c.knobs)} {c.n - len(c.measured)} of {c.n} "
                     f"({c.states_text() or 'no label'})" for c in cells)


def varied_lengths_give_content(cells) -> Judgement:
    """Whether, for ``induction-2l``, every cell with a varied block length has a larger share of
    ``content`` among its learned runs than each fixed-length cell at the same other knobs (the
    offset, the width, every other knob: like with like), and every such fixed-length cell is
    labelled ``position`` on more than half its learned runs. ``cells``: the map's cells
    (``toymech.maps.summary.Cell``: ``experiment``, ``knobs``, ``n``, ``measured``,
    ``held(label)``, ``states_text()``).

    Judged only on cells where most runs learned and stopped learning (``_judgeable``); a pair
    with a cell that is not is left out and named. Not judged (None) where no pair is left, with
    how many runs of each cell are untrained or still learning."""
    mine = [c for c in cells if c.experiment == PREDICTED_ON and KNOB in c.knobs]
    if not mine:
        return Judgement(None, f"no {PREDICTED_ON} runs with a block length on this map")
    by_others: dict[tuple, list] = {}
    for c in mine:
        by_others.setdefault(tuple((k, v) for k, v in c.knobs.items() if k != KNOB), []).append(c)
    pairs, fixed_cells, skipped = [], {}, {}
    for others, group in by_others.items():
        fixed = [c for c in group if not _varied(c.knobs[KNOB])]
        for v in (c for c in group if _varied(c.knobs[KNOB])):
            for f in fixed:
                if _judgeable(v) and _judgeable(f):
                    pairs.append((v, f))
                    fixed_cells[_cell_name(f.knobs)] = f
                else:
                    skipped.update({_cell_name(c.knobs): c for c in (v, f) if not _judgeable(c)})
    if not pairs:
        if skipped:
            return Judgement(None, "not judged: most runs without a label in "
                             + _unjudged(skipped.values()) + ".")
        return Judgement(None, f"no varied and fixed block length at the same other knobs for "
                               f"{PREDICTED_ON}")
    more = all(_share(v, "content") > _share(f, "content") for v, f in pairs)
    shortcut = all(f.held("position") > len(f.measured) / 2 for f in fixed_cells.values())
    counts = ("learned runs labelled content, varied vs fixed: "
              + "; ".join(f"{_cell_name(v.knobs)} {v.held('content')} of {len(v.measured)} vs "
                          f"{_cell_name(f.knobs)} {f.held('content')} of {len(f.measured)}"
                          for v, f in pairs)
              + ". Learned runs labelled position in fixed cells: "
              + "; ".join(f"{n} {f.held('position')} of {len(f.measured)}"
                          for n, f in fixed_cells.items()) + "."
              + (" Not judged (most runs without a label): " + _unjudged(skipped.values())
                 + "." if skipped else ""))
    return Judgement(more and shortcut, counts)


KAWATA = MapPrediction(
    name="varied-lengths-give-induction",
    statement=(f"On {PREDICTED_ON}, a varied block length gives induction by content on a larger "
               "share of its learned runs than the fixed length at the same other knobs, and a "
               "fixed length gives the position shortcut (their 1-layer trigger setting: varied "
               "distances give an induction head, a fixed one the shortcut)"),
    source=KAWATA_SOURCE,
    rule=varied_lengths_give_content,
    not_computed=("their threshold in how varied the distances must be (we compare one fixed "
                  "length with one range), their 1-layer model and trigger task, and their "
                  "training dynamics; only the direction of the effect on our 2-layer model"),
)

MAP_PREDICTIONS = (KAWATA,)  # judged on every map of this study (its page, toymech results --maps)
