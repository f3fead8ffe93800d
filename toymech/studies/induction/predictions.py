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


def varied_lengths_give_content(cells) -> Judgement:
    """Whether, for ``induction-2l``, every cell with a varied block length has more seeds
    labelled ``content`` than each fixed-length cell at the same other knobs, and every such
    fixed-length cell is labelled ``position`` on more than half its seeds (of all its runs: a
    run without a label holds neither). ``cells``: the map's cells (``toymech.maps.summary.Cell``:
    ``experiment``, ``knobs``, ``n``, ``held(label)``). Not judged (None) where the map has no
    varied and fixed cell sharing the other knobs."""
    mine = [c for c in cells if c.experiment == PREDICTED_ON and KNOB in c.knobs]
    if not mine:
        return Judgement(None, f"no {PREDICTED_ON} runs with a block length on this map")
    by_others: dict[tuple, list] = {}
    for c in mine:
        by_others.setdefault(tuple((k, v) for k, v in c.knobs.items() if k != KNOB), []).append(c)
    pairs, fixed_cells = [], {}
    for others, group in by_others.items():
        name = {c.knobs[KNOB]: _cell_name({KNOB: c.knobs[KNOB], **dict(others)}) for c in group}
        fixed = [c for c in group if not _varied(c.knobs[KNOB])]
        fixed_cells.update({name[c.knobs[KNOB]]: c for c in fixed})
        pairs += [(name[v.knobs[KNOB]], v, name[f.knobs[KNOB]], f)
                  for v in group if _varied(v.knobs[KNOB]) for f in fixed]
    if not pairs:
        return Judgement(None, f"no varied and fixed block length at the same offset for {PREDICTED_ON}")
    more = all(v.held("content") > f.held("content") for _, v, _, f in pairs)
    shortcut = all(f.held("position") > f.n / 2 for f in fixed_cells.values())
    counts = ("seeds labelled content, varied vs fixed: "
              + "; ".join(f"{vn} {v.held('content')} of {v.n} vs {fn} {f.held('content')} of {f.n}"
                          for vn, v, fn, f in pairs)
              + ". Seeds labelled position in fixed cells: "
              + "; ".join(f"{n} {f.held('position')} of {f.n}" for n, f in fixed_cells.items()) + ".")
    return Judgement(more and shortcut, counts)


KAWATA = MapPrediction(
    name="varied-lengths-give-induction",
    statement=(f"On {PREDICTED_ON}, a varied block length gives induction by content on more seeds "
               "than the fixed length at the same offset, and a fixed length gives the position "
               "shortcut (their 1-layer trigger setting: varied distances give an induction head, "
               "a fixed one the shortcut)"),
    source=KAWATA_SOURCE,
    rule=varied_lengths_give_content,
)

MAP_PREDICTIONS = (KAWATA,)  # judged on every map of this study (its page, toymech results --maps)
