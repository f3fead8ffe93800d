"""The answer of Birth's design map in words and in one table per arm, computed from the map's
table (one row per run, ``map_measure.map_row``'s columns), so that the prose quoting the map
(``docs/results.md``) is the map's own (``tests/test_birth_map.py`` checks it).

An arm is a cell of the map (the data, what trains, W_F, its learning rate). Two comparisons
answer the reviewer:

* the embeddings (token embeddings and unembedding) trained against frozen, on the paper's mixed
  data, at each W_F placement, each arm at its own learning rate;
* the reviewer's own setting (token embeddings, unembedding and positions trained, trigger-only
  data) against the paper's frozen model on the same data: the claim ``only-triggers-differ``'s
  test per seed (both learned the data, in-context accuracy >= ``FORMED``, and a W_K² or W_O²
  probe more than ``COMPARABLE`` apart).

A pair is judged only where both runs learned (``state`` learned); else it says how many of its
seeds could not be judged and why.
"""

from __future__ import annotations

import pandas as pd

from ...core import check
from ...sweep.table import knob_column, knob_columns
from ..states import LEARNED
from .claims import COMPARABLE, FORMED

PROBES = ("W_K2", "W_O2")
SUB = {"W_K2": "W_K²", "W_O2": "W_O²", "W_K1": "W_K¹"}


def _span(values) -> str:
    vals = pd.to_numeric(pd.Series(list(values)), errors="coerce").dropna()
    if vals.empty:
        return "–"
    lo, hi = float(vals.min()), float(vals.max())
    return f"{lo:.2f}" if round(lo, 2) == round(hi, 2) else f"{lo:.2f} to {hi:.2f}"


def _arm(knobs: dict[str, str]) -> str:
    who = {"frozen": "frozen", "trained": "trained"}[knobs.get("embeddings", "frozen")]
    pos = " and positions" if knobs.get("positions") == "learned" else ""
    return (f"{knobs.get('data', 'mixed')} data, W_F {knobs.get('ff', 'last')}, embeddings{pos} "
            f"{who}, lr {knobs.get('lr', '?')}")


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


def arm_table(table: pd.DataFrame) -> pd.DataFrame:
    """One row per arm (cell) of the design map's ``table``: its knobs, its runs' states, the
    steps each run trained (where every row says them), the seeds with the in-context head (of
    every run), and over its measured runs the in-context accuracy, its gap to the best
    baseline, the best baseline (the trigger-blind predictor), the W_K² and W_O² probes with how
    many tokens each recalls of those it reads (per-run lists in seed order), the W_K¹ probe and
    the matrices the probes read through."""
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
        row = {**row, "in-context head": f"{head} of {len(runs)}",
               "in-context acc": _span(ok.get("icl_acc", [])),
               "beyond baseline": _span(ok.get("beyond_baseline", [])),
               "trigger-blind": _span(ok.get("blind.icl_acc", []))}
        for m in PROBES:
            row[f"{SUB[m]} probe"] = _span(ok.get(f"probe.{m}.final", []))
            if f"probe.{m}.recalled" in table:  # "–" where no run of the arm was measured
                row[f"{SUB[m]} recalls"] = "–"
            if f"probe.{m}.recalled" in ok and len(ok):
                reads = int(ok[f"probe.{m}.reads"].iloc[0])
                got = ", ".join(str(int(v)) for v in ok[f"probe.{m}.recalled"])
                row[f"{SUB[m]} recalls"] = f"{got} of {reads}"
        row["W_K¹ probe"] = _span(ok.get("probe.W_K1.final", []))
        row["probes read through"] = "; ".join(sorted({str(v) for v in ok.get("probes.through", [])}))
        rows.append(row)
    return pd.DataFrame(rows)


def arm_markdown(table: pd.DataFrame) -> str:
    """``arm_table`` of the map's ``table`` as a markdown table (what the results record quotes)."""
    arms = arm_table(table)
    lines = ["| " + " | ".join(arms.columns) + " |", "| " + " | ".join("---" for _ in arms.columns) + " |"]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in arms.itertuples(index=False)]
    return "\n".join(lines)


def _cell(table: pd.DataFrame, **knobs: str) -> pd.DataFrame:
    mask = pd.Series(True, index=table.index)
    for k, v in knobs.items():
        mask &= table[knob_column(k)].astype(str) == v
    return table[mask]


def _pairs(a: pd.DataFrame, b: pd.DataFrame) -> list[tuple[pd.Series, pd.Series]]:
    by_seed = {int(r["seed"]): r for _, r in b.iterrows()}
    return [(r, by_seed[int(r["seed"])]) for _, r in a.iterrows() if int(r["seed"]) in by_seed]


def _learned(r: pd.Series) -> bool:
    return r.get("status", "ok") == "ok" and r.get("state") == LEARNED


def _lr(rows: pd.DataFrame) -> str:
    return "/".join(sorted({str(v) for v in rows[knob_column("lr")]}))


def compare(table: pd.DataFrame, a: dict[str, str], b: dict[str, str], need_formed: bool
            ) -> dict[str, object]:
    """Seed by seed, arm ``a`` against arm ``b`` (knob values; the learning rate left to each
    arm): the seeds both learned (and, with ``need_formed``, both reached in-context accuracy
    >= ``FORMED``), the W_K² and W_O² probe gaps (a - b) on those, and the seeds whose largest
    gap exceeds ``COMPARABLE`` ("very different"). The rest are ``unjudged`` with the states
    that kept them out."""
    ra, rb = _cell(table, **a), _cell(table, **b)
    judged, unjudged, gaps = [], [], {m: [] for m in PROBES}
    differ = 0
    for x, y in _pairs(ra, rb):
        ok = _learned(x) and _learned(y) and (not need_formed or min(
            float(x["icl_acc"]), float(y["icl_acc"])) >= FORMED)
        if not ok:
            unjudged.append(f"seed {int(x['seed'])}: {_state(x)} / {_state(y)}"
                            + (f", in-context acc {float(x['icl_acc']):.2f} / {float(y['icl_acc']):.2f}"
                               if need_formed and x.get("status") == y.get("status") == "ok" else ""))
            continue
        judged.append(int(x["seed"]))
        g = {m: float(x[f"probe.{m}.final"]) - float(y[f"probe.{m}.final"]) for m in PROBES}
        for m in PROBES:
            gaps[m].append(g[m])
        differ += max(abs(v) for v in g.values()) > COMPARABLE
    return {"lr_a": _lr(ra), "lr_b": _lr(rb), "pairs": len(_pairs(ra, rb)), "judged": judged,
            "unjudged": unjudged, "gaps": gaps, "differ": differ}


def _verdict(c: dict[str, object]) -> str:
    n, k = len(c["judged"]), c["differ"]
    if n == 0:
        return "not judged"
    return "holds" if k == n else "does not hold" if k == 0 else "mixed"


def _said(c: dict[str, object]) -> str:
    n = len(c["judged"])
    text = f"{c['differ']} of {n} judged seed(s) differ by more than {COMPARABLE}"
    if n:
        text += " (" + ", ".join(f"{SUB[m]} gap {_span(c['gaps'][m])}" for m in PROBES) + ")"
    if c["unjudged"]:
        text += f"; not judged: {len(c['unjudged'])} of {c['pairs']} ({'; '.join(c['unjudged'])})"
    return text


def design_answer(table: pd.DataFrame) -> str:
    """The design map's answer in words from its ``table`` (module docstring): the in-context
    head per arm, trained against frozen embeddings per W_F placement, and the reviewer's
    setting against the frozen model on trigger-only data, with the verdict on "very different
    behaviour"."""
    arms = arm_table(table)
    parts = ["In-context head (the claim's cut) per arm: " + "; ".join(
        f"{_arm(dict(r))}: {r['in-context head']} ({r['runs']})"
        for _, r in arms.iterrows()) + "."]
    mixed = []
    for ff in sorted(set(_cell(table, data="mixed")[knob_column("ff")].astype(str)),
                     key=["none", "first", "last", "both"].index):
        c = compare(table, {"data": "mixed", "ff": ff, "embeddings": "trained"},
                    {"data": "mixed", "ff": ff, "embeddings": "frozen"}, need_formed=False)
        if c["pairs"]:
            mixed.append(f"W_F {ff} (lr {c['lr_a']} vs {c['lr_b']}): {_said(c)}")
    if mixed:
        parts.append("Embeddings trained minus frozen, mixed data, per seed: " + "; ".join(mixed)
                     + ".")
    c = compare(table, {"data": "only_triggers", "embeddings": "trained", "positions": "learned"},
                {"data": "only_triggers", "embeddings": "frozen", "positions": "frozen_random"},
                need_formed=True)
    if c["pairs"]:
        parts.append(f"The reviewer's setting (token embeddings, unembedding and positions "
                     f"trained, trigger-only data, lr {c['lr_a']}) minus the paper's frozen model "
                     f"on the same data (lr {c['lr_b']}), both having learned the data "
                     f"(in-context accuracy >= {FORMED}): {_said(c)}. The reviewer's 'very "
                     f"different behaviour': {_verdict(c)} on this map.")
    return " ".join(parts)


__all__ = ["arm_markdown", "arm_table", "compare", "design_answer"]
