"""Study 3's claims: what the paper says, as data, with verdicts computed from our numbers.

``numbers(...)`` flattens one seed's tables (or the whole run's, as medians over seeds) into a
dict of named numbers; each ``Claim`` reads from it; ``scorecard(per_seed)`` assesses every
claim over seeds (``toymech.studies.claims``). Keys (accuracies are fractions in [0, 1]):

    acc.<task>.<mode>.small|large   test accuracy at the plan's small / large width
    acc.<task>.random.short         test accuracy of the plan's ``short_budget`` run (a random
                                    transformer with a raised learning rate; widest such run)
    mem.bits.<mode>                 memorized bits per trainable parameter (median over widths)
    lm.loss.<mode>                  language-modelling test loss (nats per character)
    conc.<task>.<mode>              EV of the top-10 principal directions after layers 1..L
    circuit.gap.narrowest|widest    KL(random student) - KL(normal student) at the narrowest /
                                    widest target
    baseline.<kind>.<task>          test accuracy of the lstm / linearised baselines

Thresholds: a model "solves" a task at accuracy >= 0.95; a freezing mode "fails" a task when
its accuracy is more than 0.10 below the random model's (E_token + E_pos + U) at the same width,
so a budget too short for the random model itself does not count as the ablation failing.
"""

from __future__ import annotations

import statistics
from typing import Any, Mapping, Sequence

import pandas as pd

from ..claims import Claim, Numbers, scorecard as _scorecard
from .experiments import ALGORITHMIC, Plan

SOURCE = ('Z. Zhong, J. Andreas, "Algorithmic Capabilities of Random Transformers", NeurIPS 2024 '
          "(arXiv:2410.04368) and its code; see docs/sources.md, study 3")

# --- the paper's numbers (only the figures the sources state) -----------------
PAPER_ACCURACY = {  # (task, setting) -> accuracy in %, None where the sources give no number
    ("modular_addition", "random, width 1024"): 100.0,
    ("needle", "random, width 1024"): 100.0,
    ("decimal_addition", "random, width 1024"): 100.0,
    ("parentheses", "random, width 1024"): 100.0,
    ("decimal_addition", "normal, width 16"): 67.5,
}
PAPER_RANDOM_W16_RANGE = (1.3, 87.3)  # random width-16 accuracies across the four tasks, %
PAPER_ABLATIONS = {
    "E_token+U": "fails decimal addition only (48.5 %)",
    "E_token+E_pos": "fails modular addition",
    "U": "fails all four tasks",
}
PAPER_BITS_PER_PARAM = {"normal": 2.88, "random": 0.41}
PAPER_LINEARISED_W512 = {"parentheses": 97.32, "needle": 17.67, "decimal_addition": 26.39}

SOLVED = 0.95   # accuracy at which a task counts as solved
FAILS_BY = 0.10  # a freezing mode fails a task this far below the random model
HARD = ("memorization", "char_lm")  # where the paper finds random states more concentrated


# --- numbers: one seed's (or the run's) tables -> named numbers -----------------------------------
def _rows(df: pd.DataFrame | None, seed: int | None) -> pd.DataFrame | None:
    if df is None or not len(df):
        return None
    return df[df["seed"] == seed] if seed is not None and "seed" in df else df


def numbers(main: pd.DataFrame, widths: tuple[int, int], *, abl: pd.DataFrame | None = None,
            mem: pd.DataFrame | None = None, lm: pd.DataFrame | None = None,
            circ: pd.DataFrame | None = None, conc: pd.DataFrame | None = None,
            base: pd.DataFrame | None = None, short: pd.DataFrame | None = None,
            seed: int | None = None) -> dict[str, float]:
    """The named numbers (module docstring) of the run's tables, restricted to ``seed`` (None:
    medians over every seed). Tables: rows of ``run_grid`` (main, abl, lm; ``main`` may also
    hold the width sweep's rows), ``memorization_table``, ``circuit_grid``,
    ``concentration_rows``, ``baseline_grid``, ``short_budget_grid`` (short)."""
    out: dict[str, float] = {}
    label = {widths[0]: "small", widths[1]: "large"}
    for df in (_rows(main, seed), _rows(abl, seed)):
        if df is not None:
            for (task, width, mode), acc in df.groupby(["task", "width", "mode"])["acc"].median().items():
                if width in label:
                    out[f"acc.{task}.{mode}.{label[width]}"] = float(acc)
    if (s := _rows(short, seed)) is not None and len(s):
        for task, rows in s.groupby("task"):
            widest = rows[rows["width"] == rows["width"].max()]
            out[f"acc.{task}.random.short"] = float(widest["acc"].median())
    if (m := _rows(mem, seed)) is not None:
        out.update({f"mem.bits.{k}": float(v)
                    for k, v in m.groupby("mode")["bits_per_param"].median().items()})
    if (m := _rows(lm, seed)) is not None:
        out.update({f"lm.loss.{k}": float(v) for k, v in m.groupby("mode")["loss"].median().items()})
    if (c := _rows(circ, seed)) is not None:
        kl = c.groupby(["target_width", "mode"])["kl"].median().unstack()
        if {"normal", "random"} <= set(kl.columns):
            gap = (kl["random"] - kl["normal"]).sort_index()
            out["circuit.gap.narrowest"], out["circuit.gap.widest"] = float(gap.iloc[0]), float(
                gap.iloc[-1])
    if (c := _rows(conc, seed)) is not None:
        c = c[(c["basis"] == "principal") & (c["layer"] != "embedding")]
        out.update({f"conc.{t}.{m}": float(v)
                    for (t, m), v in c.groupby(["task", "mode"])["ev"].mean().items()})
    if (b := _rows(base, seed)) is not None:
        out.update({f"baseline.{k}.{t}": float(v)
                    for (k, t), v in b.groupby(["model", "task"])["acc"].median().items()})
    return out


# --- the claims ------------------------------------------------------------------------------
def _fails(n: Numbers, task: str, mode: str) -> bool:
    return n[f"acc.{task}.{mode}.large"] < n[f"acc.{task}.random.large"] - FAILS_BY


def _normal_ref(n: Numbers, task: str) -> float:
    """Normal accuracy at the large width where it was trained, else at the small width."""
    return n.get(f"acc.{task}.normal.large", n[f"acc.{task}.normal.small"])


def _all_or_none(values: list[bool]) -> bool | None:
    return all(values) if values else None


def _solves(task: str) -> Claim:
    key = f"acc.{task}.random.large"
    return Claim(f"random-solves-{task}", f"a random transformer solves {task} at the large width",
                 "the paper, accuracy table", "100 % at width 1024",
                 value=lambda n: 100 * n[key], holds=lambda n: n[key] >= SOLVED, unit="%")


# The claims over all four tasks read a seed only where it measured all four (a seed that only
# the width sweep trained has parenthesis balancing alone, which would make an easier claim).
def _width_gain(n: Numbers) -> float:
    return 100 * statistics.mean(n[f"acc.{t}.random.large"] - n[f"acc.{t}.random.small"]
                                 for t in ALGORITHMIC)


def _gap_to_normal(n: Numbers) -> float:
    return 100 * min(n[f"acc.{t}.random.large"] - _normal_ref(n, t) for t in ALGORITHMIC)


def _ablation(key: str, statement: str, source_value: str, mode: str, tasks: Sequence[str],
              fails: bool) -> Claim:
    def measured(n: Numbers) -> list[str]:
        return [t for t in tasks if f"acc.{t}.{mode}.large" in n and f"acc.{t}.random.large" in n]

    def value(n: Numbers) -> float | None:
        ts = measured(n)
        vals = [100 * n[f"acc.{t}.{mode}.large"] for t in ts]
        return (max(vals) if fails else min(vals)) if vals else None

    return Claim(key, statement, "the paper, embedding ablations", source_value, value=value,
                 holds=lambda n: _all_or_none([_fails(n, t, mode) == fails for t in measured(n)]),
                 unit=f"% ({'best' if fails else 'worst'} {mode} accuracy)")


def _concentration_gap(n: Numbers) -> float | None:
    ts = [t for t in HARD if f"conc.{t}.random" in n and f"conc.{t}.normal" in n]
    return min(n[f"conc.{t}.random"] - n[f"conc.{t}.normal"] for t in ts) if ts else None


def _solves_short(task: str) -> Claim:
    key = f"acc.{task}.random.short"
    return Claim(f"random-solves-{task}-short", f"a random transformer solves {task} once a "
                 "raised learning rate makes up for the short step budget (plan's short_budget)",
                 "the paper, accuracy table", "100 % at width 1024 (lr 1e-3, ~50k steps)",
                 value=lambda n: 100 * n[key], holds=lambda n: n[key] >= SOLVED, unit="%")


CLAIMS: tuple[Claim, ...] = (
    *(_solves(t) for t in ALGORITHMIC),
    _solves_short("modular_addition"),
    Claim("width-helps-random", "widening a random transformer raises its accuracy",
          "the paper, accuracy table", f"{PAPER_RANDOM_W16_RANGE[0]}-{PAPER_RANDOM_W16_RANGE[1]} % "
          "at width 16 -> 100 % at width 1024",
          value=_width_gain, holds=lambda n: _width_gain(n) > 0,
          unit="points (large - small, mean over tasks)"),
    Claim("random-close-to-normal", "at the large width random is within 5 points of normal on "
          "every algorithmic task", "the paper, accuracy table", "both 100 % at width 1024",
          value=_gap_to_normal, holds=lambda n: _gap_to_normal(n) >= -5,
          unit="points (worst random - normal)"),
    _ablation("E_token+U-fails-decimal", "without E_pos (E_token+U) decimal addition fails",
              "48.5 %", "E_token+U", ("decimal_addition",), fails=True),
    _ablation("E_token+U-keeps-others", "without E_pos (E_token+U) the other tasks still train",
              "fails decimal addition only", "E_token+U",
              ("modular_addition", "needle", "parentheses"), fails=False),
    _ablation("E_token+E_pos-fails-modular", "without U (E_token+E_pos) modular addition fails",
              "fails modular addition", "E_token+E_pos", ("modular_addition",), fails=True),
    _ablation("U-fails-all", "training U alone fails every task", "fails all four tasks", "U",
              ALGORITHMIC, fails=True),
    Claim("bits-normal-above-random", "normal transformers store more bits per trainable "
          "parameter than random ones", "the paper, memorization",
          f"{PAPER_BITS_PER_PARAM['normal']} vs {PAPER_BITS_PER_PARAM['random']} bits/param",
          value=lambda n: n["mem.bits.normal"] - n["mem.bits.random"],
          holds=lambda n: n["mem.bits.normal"] > n["mem.bits.random"],
          unit="bits/param (normal - random)"),
    Claim("lm-random-behind", "on language modelling random transformers stay behind normal ones",
          "the paper, language modelling", "random well behind normal",
          value=lambda n: n["lm.loss.random"] - n["lm.loss.normal"],
          holds=lambda n: n["lm.loss.random"] > n["lm.loss.normal"],
          unit="nats (random - normal)"),
    Claim("concentration-hard-tasks", "random hidden states are more concentrated than normal "
          "ones on memorization and language modelling", "the paper, subspace table",
          "random > normal (top-10 explained variance)", value=_concentration_gap,
          holds=lambda n: None if _concentration_gap(n) is None else _concentration_gap(n) > 0,
          unit="(worst random - normal EV)"),
    Claim("circuit-gap-widens", "random students fall further behind normal ones as the target "
          "circuit gets wider", "the paper, circuit imitation", "gap opens beyond width ~16-32",
          value=lambda n: n["circuit.gap.widest"] - n["circuit.gap.narrowest"],
          holds=lambda n: n["circuit.gap.widest"] > n["circuit.gap.narrowest"] + 0.01,
          unit="nats (KL gap widest - narrowest)"),
    Claim("linearised-parentheses-not-needle", "a linearised transformer (no softmax attention) "
          "does parentheses far better than needle retrieval", "the paper (rebuttal), baselines",
          f"{PAPER_LINEARISED_W512['parentheses']} % vs {PAPER_LINEARISED_W512['needle']} % "
          "at width 512",
          value=lambda n: 100 * (n["baseline.linearised.parentheses"]
                                 - n["baseline.linearised.needle"]),
          holds=lambda n: n["baseline.linearised.parentheses"]
          > n["baseline.linearised.needle"] + 0.10, unit="points (parentheses - needle)"),
)


def per_seed_numbers(p: Plan, seed: int, main: pd.DataFrame, sweep: pd.DataFrame | None = None,
                     **tables: pd.DataFrame | None) -> list[dict[str, float]]:
    """``numbers`` for each of the run's seeds (the table's, then the sweep's: ``seed`` plus the
    plan's offsets), the table's rows joined with the width sweep's (a run in both counts once).
    A seed that only the sweep trained has the sweep's tasks and the ``short`` runs; the
    scorecard counts each claim over the seeds that measured it."""
    rows = main if sweep is None or not len(sweep) else pd.concat([main, sweep], ignore_index=True)
    rows = rows.drop_duplicates(subset=["task", "width", "mode", "seed"])
    seeds = dict.fromkeys(seed + s for s in (*p.table_seeds, *p.sweep_seeds))
    return [numbers(rows, p.widths, seed=s, **tables) for s in seeds]


def scorecard(per_seed: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The study's claims assessed over seeds (one dict of ``numbers`` per seed)."""
    return _scorecard(CLAIMS, per_seed)
