"""The answer of Birth's design map in words and in one table per arm, computed from the map's
table (one row per run, ``map_measure.map_row``'s columns), so that the prose quoting the map
(``docs/results.md``) is the map's own (``tests/test_birth_map.py`` checks it).

An arm is a cell of the map (the data, what trains, W_F, its learning rate). Two comparisons
answer the reviewer, seed by seed (both arms of a seed start from the same weights):

* the embeddings (token embeddings and unembedding) trained against frozen, on the paper's mixed
  data, at each W_F placement;
* the reviewer's setting against the paper's frozen model on trigger-only data, both having
  learned the data (in-context accuracy >= ``FORMED``): the token embeddings, unembedding and
  positions trained, and every matrix trained (W_Q, W_V and layer 0's W_O too: the ``attention``
  knob), each at every learning rate both arms ran (a matched pair) and, given the calibration
  table, each arm at its own calibrated learning rate.

What "very different behaviour" rests on (``MEASURES``), never the argmax recall probes, which
read 1.00 in both arms once every target wins and so cannot show a difference: the recall
margins' share of the way from a random memory to the construction, read through each run's own
matrices and through the initial ones (the same in both arms of a seed), the cosines with the
construction in both readings, and the overlap of the token and position embeddings
(``structure``). A measure shows the behaviour on a seed where one of its columns differs by more
than ``COMPARABLE`` (a tenth of the [0, 1] range each column spans from a random matrix to the
construction, or from orthogonal to shared subspaces); its verdict (``verdict``) is ``seen``
where some column differs in the same direction on every judged seed, ``not seen`` where no
column differs on any, ``mixed`` otherwise, ``not judged`` without a seed both arms learned and
measured. Every comparison names the matrices each arm trained.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from ...core import check
from ...sweep.table import knob_column, knob_columns
from ..states import LEARNED
from .claims import COMPARABLE, FORMED
from .design import KNOBS
from .map_measure import calibrated_lr
from .structure import PROBED

SUB = {"W_K2": "W_K²", "W_O2": "W_O²", "W_K1": "W_K¹"}
# measure -> its columns (``structure.structure_row``); each names what it reads through
MEASURES: dict[str, tuple[str, ...]] = {
    "recall margins through own matrices": tuple(f"share.{m}" for m in PROBED),
    "recall margins through initial matrices": tuple(f"share.{m}.init_parts" for m in PROBED),
    "cosines with the construction from own matrices": tuple(f"cosine.{m}" for m in PROBED),
    "cosines with the construction from initial matrices":
        tuple(f"cosine.{m}.init_parts" for m in PROBED),
    "W_E / W_pos subspace overlap": ("overlap.E_pos",),
}
# what the measures' words mean, said once where the answer names them
MEASURES_SAID = ("recall margins: each memory's recall margin as a share of the way from a "
                 "random memory to the hand-built construction (argmax recall at its ceiling "
                 "cannot tell); own matrices: each run's own W_E, W_pos, W_U and layer 0's OV; "
                 "initial matrices: those both runs of a seed started from")
FROZEN = {"embeddings": "frozen", "positions": "frozen_random", "attention": "frozen"}
# the reviewer's settings on trigger-only data: what trains besides the paper's memories
REVIEWER = {"token embeddings, unembedding and positions":
            {"embeddings": "trained", "positions": "learned", "attention": "frozen"},
            "every matrix": {"embeddings": "trained", "positions": "learned",
                             "attention": "trained"}}
VERDICTS = ("seen", "not seen", "mixed", "not judged")


def _value(r: pd.Series, knob: str) -> str:
    """A row's value of ``knob`` as the knob writes it: its column, or the knob's source value
    where the map did not vary it (every run then has it)."""
    column, declared = knob_column(knob), KNOBS[knob]
    raw = r[column] if column in r.index else declared.source
    return declared.text(declared.parse(raw))  # one text per value: lr 3.0 and 3 alike


def _span(values) -> str:
    vals = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    if vals.empty:
        return "–"
    lo, hi = float(vals.min()), float(vals.max())
    return f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f} to {hi:.2f}"


def _state(r: pd.Series) -> str:
    """A run's state: its sweep status where not ok (diverged, failed), else its ``state``."""
    status = r.get("status", "ok")
    return str(status) if isinstance(status, str) and status != "ok" else str(r.get("state"))


def _states(runs: pd.DataFrame) -> str:
    counts = runs.apply(_state, axis=1).value_counts(sort=False)
    return ", ".join(f"{int(n)} {s}" for s, n in counts.items())


def _cells(table: pd.DataFrame) -> list[tuple[dict[str, str], pd.DataFrame]]:
    """({knob: value}, runs) per cell of the map (its knob columns), in the table's order."""
    named = knob_columns(table)  # {knob: its column}
    columns = list(named.values())
    return [(dict(zip(list(named), (k if isinstance(k, tuple) else (k,)))), runs)
            for k, runs in table.astype({c: str for c in columns}).groupby(columns, sort=False)]


def _col(runs: pd.DataFrame, column: str) -> list:
    return list(runs[column]) if column in runs else []


def _trained(runs: pd.DataFrame) -> str:
    return "; ".join(sorted({str(v) for v in _col(runs, "trained") if isinstance(v, str)})) or "–"


def arm_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per arm (cell) of the design map's ``table``: its knobs, its runs' states, the
    steps each run trained (where every row says them), the matrices it trained, the seeds with
    the in-context head (of every run), and over its measured runs the in-context accuracy, its
    gap to the best predictor without the mechanism (``beyond_baseline``, as the row measured it)
    and the null family's best accuracy, the argmax recall probes (which stop at 1.00), per memory
    the recall margin's share of the way to the construction and the cosine with it (each "own
    matrices / initial matrices"), and the W_E / W_pos overlap with its random-subspace null."""
    check(isinstance(table, pd.DataFrame) and "state" in table, "table", type(table).__name__,
          "a Birth map table with a state column (map_measure.map_row)")
    rows = []
    for knobs, runs in _cells(table):
        runs = runs.sort_values("seed", kind="stable") if "seed" in runs else runs
        ok = runs[runs["status"] == "ok"] if "status" in runs else runs
        learned = ok[ok["state"] == LEARNED]
        head = int(learned["label"].astype(str).str.startswith("in-context head").sum())
        row = {**knobs, "runs": _states(runs)}
        if "steps" in runs and runs["steps"].notna().all():  # under a budget policy arms differ
            row["steps"] = ", ".join(str(int(float(s))) for s in runs["steps"])
        row = {**row, "trained": _trained(ok), "in-context head": f"{head} of {len(runs)}",
               "in-context acc": _span(_col(ok, "icl_acc")),
               "beyond baseline": _span(_col(ok, "beyond_baseline")),
               "best null": _span(_col(ok, "null.icl_acc")),
               "argmax recall W_K¹; W_K²; W_O²": "; ".join(
                   _span(_col(ok, f"probe.{m}.final")) for m in PROBED)}
        for m in PROBED:
            row[f"{SUB[m]} margin share (own / initial)"] = (
                f"{_span(_col(ok, f'share.{m}'))} / {_span(_col(ok, f'share.{m}.init_parts'))}")
        for m in PROBED:
            row[f"{SUB[m]} cosine (own / initial)"] = (
                f"{_span(_col(ok, f'cosine.{m}'))} / {_span(_col(ok, f'cosine.{m}.init_parts'))}")
        row["W_E·W_pos overlap (null)"] = (f"{_span(_col(ok, 'overlap.E_pos'))} "
                                           f"({_span(_col(ok, 'overlap.null'))})")
        rows.append(row)
    return pd.DataFrame(rows)


def arm_markdown(table: pd.DataFrame) -> str:
    """``arm_table`` of the map's ``table`` as a markdown table (what the results record quotes)."""
    arms = arm_table(table)
    lines = ["| " + " | ".join(arms.columns) + " |", "| " + " | ".join("---" for _ in arms.columns) + " |"]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in arms.itertuples(index=False)]
    return "\n".join(lines)


def _cell(table: pd.DataFrame, **knobs: str) -> pd.DataFrame:
    if table.empty:
        return table
    mask = table.apply(lambda r: all(_value(r, k) == str(v) for k, v in knobs.items()), axis=1)
    return table[mask.astype(bool)]


def _pairs(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    by_seed = {int(r["seed"]): r for _, r in b.iterrows()}
    return [(r, by_seed[int(r["seed"])]) for _, r in a.iterrows() if int(r["seed"]) in by_seed]


def _learned(r: pd.Series) -> bool:
    return r.get("status", "ok") == "ok" and r.get("state") == LEARNED


def _lr(rows: pd.DataFrame) -> str:
    return "/".join(sorted({_value(r, "lr") for _, r in rows.iterrows()})) or "?"


def _finite(r: pd.Series, columns) -> bool:
    return all(c in r.index and isinstance(r[c], (int, float)) and math.isfinite(float(r[c]))
               for c in columns)


def compare(table: pd.DataFrame, a: dict[str, str], b: dict[str, str], need_formed: bool
            ) -> dict[str, Any]:
    """Seed by seed, arm ``a`` against arm ``b`` (knob values, the learning rate among them or
    not): the seeds both learned (and, with ``need_formed``, both reached in-context accuracy
    >= ``FORMED``); per measure of ``MEASURES`` the seeds judged on it (both runs measured), the
    gaps a - b per column on those, and the verdict (``verdict``). The rest are ``unjudged``
    with the states that kept them out; ``trained_a`` / ``trained_b`` list what each trained."""
    ra, rb = _cell(table, **a), _cell(table, **b)
    pairs = _pairs(ra, rb)
    judged, unjudged = [], []
    for x, y in pairs:
        formed = not need_formed or (_finite(x, ["icl_acc"]) and _finite(y, ["icl_acc"]) and min(
            float(x["icl_acc"]), float(y["icl_acc"])) >= FORMED)
        if _learned(x) and _learned(y) and formed:
            judged.append((x, y))
            continue
        acc = (f", in-context acc {float(x['icl_acc']):.2f} / {float(y['icl_acc']):.2f}"
               if need_formed and _finite(x, ["icl_acc"]) and _finite(y, ["icl_acc"]) else "")
        unjudged.append(f"seed {int(x['seed'])}: {_state(x)} / {_state(y)}{acc}")
    measures = {}
    for name, columns in MEASURES.items():
        on = [(x, y) for x, y in judged if _finite(x, columns) and _finite(y, columns)]
        gaps = {c: [float(x[c]) - float(y[c]) for x, y in on] for c in columns}
        measures[name] = {"seeds": [int(x["seed"]) for x, _ in on], "gaps": gaps,
                          "differ": sum(max(abs(g[i]) for g in gaps.values()) > COMPARABLE
                                        for i in range(len(on))),
                          "verdict": verdict(gaps, len(on))}
    return {"lr_a": _lr(ra), "lr_b": _lr(rb), "pairs": len(pairs),
            "judged": [int(x["seed"]) for x, _ in judged], "unjudged": unjudged,
            "measures": measures, "trained_a": _trained(ra), "trained_b": _trained(rb)}


def verdict(gaps: dict[str, list[float]], n: int) -> str:
    """``seen`` where some column's gap exceeds ``COMPARABLE`` in the same direction on every one
    of the ``n`` judged seeds, ``not seen`` where no gap exceeds it, ``mixed`` otherwise,
    ``not judged`` for ``n`` = 0. ``gaps``: {column: gap per judged seed}."""
    if n == 0:
        return "not judged"
    if any(all(g > COMPARABLE for g in gs) or all(g < -COMPARABLE for g in gs)
           for gs in gaps.values()):
        return "seen"
    if all(abs(g) <= COMPARABLE for gs in gaps.values() for g in gs):
        return "not seen"
    return "mixed"


def _said(c: dict[str, Any]) -> str:
    """The comparison in words: per measure its verdict, the seeds that differ and the gaps."""
    parts = []
    for name, m in c["measures"].items():
        n = len(m["seeds"])
        if not n:
            parts.append(f"{name}: not judged")
            continue
        gaps = ", ".join(f"{_column_name(col)} {_span(g)}" for col, g in m["gaps"].items())
        parts.append(f"{name}: {m['verdict']} ({m['differ']} of {n} seed(s) differ by more "
                     f"than {COMPARABLE}; gaps {gaps})")
    text = "; ".join(parts)
    if c["judged"] and not any(m["seeds"] for m in c["measures"].values()):
        text += " (the runs lack these measures)"
    if c["unjudged"]:
        text += f"; not judged: {len(c['unjudged'])} of {c['pairs']} ({'; '.join(c['unjudged'])})"
    return text


def _column_name(column: str) -> str:
    kind, *rest = column.split(".")
    if kind == "overlap":
        return "overlap"
    return f"{SUB.get(rest[0], rest[0])} {'margin share' if kind == 'share' else kind}"


def _lrs(table: pd.DataFrame, **knobs: str) -> set[str]:
    return {_value(r, "lr") for _, r in _cell(table, **knobs).iterrows()}


def own_lrs(calibration: pd.DataFrame) -> list[tuple[dict[str, str], str]]:
    """Each calibrated arm's knob values (every knob of the calibration ``table`` but ``lr``) and
    its learning rate (``map_measure.calibrated_lr``), as the table's texts."""
    names = [k for k in knob_columns(calibration) if k != "lr"]
    lr = KNOBS["lr"]
    return [(dict(zip(names, arm)), lr.text(lr.parse(rate)))
            for arm, rate in calibrated_lr(calibration).items()]


def _own(calibration: pd.DataFrame | None, knobs: dict[str, str]) -> str | None:
    for arm, lr in own_lrs(calibration) if calibration is not None else []:
        if all(KNOBS[k].text(KNOBS[k].parse(arm.get(k, KNOBS[k].source))) == v
               for k, v in knobs.items()):
            return lr
    return None


def reviewer_comparisons(table: pd.DataFrame, calibration: pd.DataFrame | None = None
                         ) -> list[dict[str, Any]]:
    """The reviewer's settings (``REVIEWER``) against the paper's frozen model on trigger-only
    data (``compare``, both having learned the data): for each setting, at every learning rate
    both arms ran (``matched``) and, where ``calibration`` (the calibration map's table) gives
    both arms a calibrated learning rate the map ran, each at its own (``own``). Each
    comparison's dict has ``setting``, ``how`` and ``compare``'s keys."""
    base = {"data": "only_triggers", **FROZEN}
    out = []
    for setting, knobs in REVIEWER.items():
        arm = {"data": "only_triggers", **knobs}
        pairs = [("matched", lr, lr) for lr in sorted(_lrs(table, **arm) & _lrs(table, **base),
                                                      key=float)]
        own_a, own_b = _own(calibration, arm), _own(calibration, base)
        if own_a and own_b and own_a in _lrs(table, **arm) and own_b in _lrs(table, **base) \
                and own_a != own_b:
            pairs.append(("own", own_a, own_b))
        for how, lr_a, lr_b in pairs:
            c = compare(table, {**arm, "lr": lr_a}, {**base, "lr": lr_b}, need_formed=True)
            out.append({"setting": setting, "how": how, **c})
    return out


def reviewer_headline(table: pd.DataFrame) -> str:
    """The reviewer's row in one clause (what README's study-2 row quotes): every matrix trained
    on trigger-only data against the paper's frozen model at the same learning rate, with the
    matrices each trained and the verdict per measure; "not judged" where the map has no such
    pair."""
    matched = [c for c in reviewer_comparisons(table)
               if c["setting"] == "every matrix" and c["how"] == "matched"]
    if not matched:
        return ("the reviewer's 'very different behaviour' with every matrix trained on "
                "trigger-only data: not judged (no run of that setting beside the paper's "
                "frozen model at the same learning rate on this map)")
    parts = []
    for c in matched:
        said = "; ".join(f"{name}: {m['verdict']}" + (f" ({m['differ']} of {len(m['seeds'])} "
                                                      "seeds differ)" if m["seeds"] else "")
                         for name, m in c["measures"].items())
        parts.append(f"at lr {c['lr_a']} (trained: {c['trained_a']}; the paper's model trained "
                     f"{c['trained_b']}): {said}")
    return ("the reviewer's 'very different behaviour' with every matrix trained on trigger-only "
            "data against the paper's frozen model " + "; ".join(parts))


def design_answer(table: pd.DataFrame, calibration: pd.DataFrame | None = None) -> str:
    """The design map's answer in words from its ``table`` (module docstring): the in-context
    head per arm, then ``comparisons_said`` (with the ``calibration`` table, each reviewer arm
    at its own learning rate too)."""
    arms = arm_table(table)
    knob_names = [k for k in knob_columns(table)]
    head = "In-context head (the claim's cut) per arm: " + "; ".join(
        ", ".join(f"{k} {r[k]}" for k in knob_names) + f": {r['in-context head']} ({r['runs']})"
        for _, r in arms.iterrows()) + "."
    return " ".join(p for p in (head, comparisons_said(table, calibration)) if p)


def comparisons_said(table: pd.DataFrame, calibration: pd.DataFrame | None = None) -> str:
    """The map's comparisons in words (what its page and results section print under the
    table): trained against frozen token embeddings per W_F placement on mixed data, and the
    reviewer's settings against the frozen model on trigger-only data
    (``reviewer_comparisons``), each verdict naming its measure and each arm the matrices it
    trained; "" where the map holds no such pair."""
    parts, mixed = [], []
    data = {_value(r, "data") for _, r in table.iterrows()}
    for ff in sorted({_value(r, "ff") for _, r in _cell(table, data="mixed").iterrows()}
                     if "mixed" in data else [], key=["none", "first", "last", "both"].index):
        c = compare(table, {"data": "mixed", "ff": ff, "embeddings": "trained", "positions":
                            "frozen_random", "attention": "frozen"},
                    {"data": "mixed", "ff": ff, **FROZEN}, need_formed=False)
        if c["pairs"]:
            mixed.append(f"W_F {ff} (lr {c['lr_a']} vs {c['lr_b']}; trained {c['trained_a']} vs "
                         f"{c['trained_b']}): {_said(c)}")
    if mixed:
        parts.append("Token embeddings and unembedding trained minus frozen, mixed data, per seed: "
                     + "; ".join(mixed) + ".")
    reviewer = reviewer_comparisons(table, calibration) if "only_triggers" in data else []
    for c in reviewer:
        how = ("at the same learning rate" if c["how"] == "matched"
               else "each at its own calibrated learning rate")
        parts.append(f"The reviewer's setting with {c['setting']} trained (trained: "
                     f"{c['trained_a']}; lr {c['lr_a']}) minus the paper's frozen model (trained: "
                     f"{c['trained_b']}; lr {c['lr_b']}), {how}, trigger-only data, both having "
                     f"learned the data (in-context accuracy >= {FORMED}): {_said(c)}.")
    if parts:
        parts.append(f"Measures ({MEASURES_SAID}).")
    return " ".join(parts)


__all__ = ["MEASURES", "MEASURES_SAID", "REVIEWER", "VERDICTS", "arm_markdown", "arm_table",
           "comparisons_said", "compare", "design_answer", "own_lrs", "reviewer_comparisons", "reviewer_headline",
           "verdict"]
