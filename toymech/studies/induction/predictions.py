"""Study 1's predictions from other work, judged on its map (``studies.predictions``).

Kawata, Song, Bietti et al. (2025) train a 1-layer transformer in a trigger setting and find that
varied distances between the trigger and its target give an induction head, a fixed distance a
positional shortcut. That is their setting, not ours: here it is a prediction for our 2-layer
model (``induction-2l``) on repeated letter blocks, where the block length plays the distance.
A varied block length (a range, ``4-8``) should carry the label ``content`` on more seeds than
the fixed length at the same other knobs (the offset), and a fixed length should be labelled
``position`` on most of its seeds.
"""

from __future__ import annotations

import pandas as pd

from ..predictions import Judgement, MapPrediction

KAWATA_SOURCE = "Kawata, Song, Bietti et al. 2025, From Shortcut to Induction Head, arXiv 2512.18634"
PREDICTED_ON = "induction-2l"  # the model the prediction is judged on
KNOB = "knob.block_len"


def _varied(value: str) -> bool:
    return "-" in value  # a range of lengths, "4-8"; a fixed one is a single number, "6"


def _cell_name(values: dict[str, str]) -> str:
    return "(" + ", ".join(f"{k.removeprefix('knob.')} {v}" for k, v in values.items()) + ")"


def varied_lengths_give_content(table: pd.DataFrame) -> Judgement:
    """Whether, for ``induction-2l``, every cell with a varied block length has more seeds
    labelled ``content`` than each fixed-length cell at the same other knobs, and every such
    fixed-length cell is labelled ``position`` on more than half its seeds. Not judged (None)
    where the table has no varied and fixed cell sharing the other knobs."""
    runs = table[table["experiment"].astype(str) == PREDICTED_ON] if "experiment" in table else table.iloc[:0]
    if KNOB not in runs or "label" not in runs or runs.empty:
        return Judgement(None, f"no {PREDICTED_ON} runs with a block length on this map")
    knobs = [c for c in runs.columns if c.startswith("knob.")]
    runs = runs.astype({c: str for c in knobs})
    others = [c for c in knobs if c != KNOB]
    pairs, fixed_cells = [], {}
    for _, group in (runs.groupby(others, sort=False) if others else [((), runs)]):
        cells = {b: g["label"].astype(str) for b, g in group.groupby(KNOB, sort=False)}
        fixed = [b for b in cells if not _varied(b)]
        where = {c: group[c].iloc[0] for c in others}
        for b in fixed:
            fixed_cells[_cell_name({KNOB: b, **where})] = cells[b]
        pairs += [(_cell_name({KNOB: v, **where}), cells[v], _cell_name({KNOB: f, **where}), cells[f])
                  for v in cells if _varied(v) for f in fixed]
    if not pairs:
        return Judgement(None, f"no varied and fixed block length at the same offset for {PREDICTED_ON}")

    def content(labels):
        return int((labels == "content").sum())

    def position(labels):
        return int((labels == "position").sum())

    more = all(content(v) > content(f) for _, v, _, f in pairs)
    shortcut = all(position(f) > len(f) / 2 for f in fixed_cells.values())
    counts = ("seeds labelled content, varied vs fixed: "
              + "; ".join(f"{vn} {content(v)} of {len(v)} vs {fn} {content(f)} of {len(f)}"
                          for vn, v, fn, f in pairs)
              + ". Seeds labelled position in fixed cells: "
              + "; ".join(f"{n} {position(f)} of {len(f)}" for n, f in fixed_cells.items()) + ".")
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
