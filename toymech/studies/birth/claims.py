"""Study 2's claims: what the paper (and its reviewers) say, as data, with verdicts computed
from our numbers.

``numbers(measured)`` flattens one seed's measurements into a dict of named numbers; each
``Claim`` reads from it; ``scorecard(per_seed, size, seeds)`` assesses every claim over seeds
(``toymech.studies.claims``). A number that was not measured is absent from the dict, and a claim
that needs it reads "not measured". Keys:

    icl_acc, bigram_acc            final in-context / bigram accuracy of the main run (its
                                   callback batch)
    baseline.icl_acc, baseline.bigram_acc   the exact bigram model on the run's test set (it knows
                                   pi_b and nothing in context: the trivial predictor here)
    chance.acc                     1 / N, a uniform guess
    half.<m>, rise.<m>             the half-way step (``analysis.dynamics.transition_step``: half of
                                   the way to the metric's extreme) and the size of that move, in
                                   the metric's good direction, for m in bigram_acc, icl_acc, W_O2,
                                   W_K2, W_K1 (recall probes, accuracies in [0, 1]) and W_F (KL)
    interval                       steps between two probe rows (the order's resolution)
    sweep.<fixed|random>.<set>.K<k>     in-context accuracy of the trigger sweep
    freeze.<freezing>.<icl_acc|probe_wk2|probe_wo2>
    construction.<W_K1|W_K2|W_O2|W_F>.<trained|init>   cosine with the hand-built construction
    extremes.<frozen|unfrozen>.<probe_wk2|probe_wo2|icl_acc>   only-trigger data

Order claims are decided only where each metric moved by at least ``MIN_RISE`` of its range and
the half-way steps are further apart than the probe interval; otherwise the seed is
"unresolved" (counted apart, never as agreement).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from ...analysis.dynamics import transition_step
from ..claims import Claim, Numbers, need, scorecard as _scorecard
from .causal import CAUSAL_CLAIMS

SOURCE = ("A. Bietti, V. Cabannes, D. Bouchacourt, H. Jégou, L. Bottou, \"Birth of a "
          "Transformer: A Memory Viewpoint\", NeurIPS 2023, arXiv:2306.00802, and its code "
          "github.com/albietz/transformer-birth; see docs/sources.md, study 2")
REVIEWS = "the paper's public reviews (NeurIPS 2023, OpenReview)"

# Thresholds, each with its reason.
FORMED = 0.8          # in-context accuracy of a formed induction head (the paper: close to 1)
ABOVE_BASELINE = 0.3  # ... and this far above the exact bigram model's at those positions
BIGRAM_GAP = 0.05     # bigrams learned: within this of the exact bigram model (the ceiling)
MIN_RISE = 0.2        # an order claim needs each metric to move >= 20 % of its attainable range
MARGIN = 0.05         # "better" / "rises" in the sweeps: accuracy on ~10^3 targets has a
                      # standard error near 0.01; 0.05 is five of them
DROP = 0.02           # "rises": no step down from one K to the next larger than this
COMPARABLE = 0.1      # "comparable": the no-freeze run within this of the paper's freezing
COSINE_GAIN = 0.05    # "toward the construction": an untrained model gains exactly 0

# label, history key, +1 if the metric grows as the memory forms (-1: KL, falls)
HALF: dict[str, tuple[str, str, int]] = {
    "bigram_acc": ("bigram acc", "cb_bigram_acc", 1),
    "icl_acc": ("in-context acc", "cb_icl_acc", 1),
    "W_O2": ("W_O² output copy", "probe_wo2", 1),
    "W_K2": ("W_K² induction key", "probe_wk2", 1),
    "W_K1": ("W_K¹ previous token", "probe_wk1", 1),
    "W_F": ("W_F bigram KL", "probe_wf_kl", -1),
}
FREEZE_KEYS = ("icl_acc", "probe_wk2", "probe_wo2")
EXTREME_KEYS = ("icl_acc", "probe_wk2", "probe_wo2")


def _finite(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v))


def curve(history: Sequence[Mapping[str, float]], key: str) -> tuple[list[float], list[float]]:
    """(steps, values) of ``key`` in a training history (rows with a finite value)."""
    pts = [(float(r["step"]), float(r[key])) for r in history if _finite(r.get(key))]
    return [s for s, _ in pts], [v for _, v in pts]


def half_and_rise(history: Sequence[Mapping[str, float]], key: str, sign: int = 1
                  ) -> tuple[float, float]:
    """(half-way step, rise): ``transition_step`` of ``key`` (NaN when it never moved) and how
    far it moved toward its extreme, times ``sign`` (so a memory forming is a positive rise)."""
    steps, values = curve(history, key)
    if len(steps) < 2:
        return math.nan, math.nan
    step = transition_step(steps, values)
    extreme = max(values, key=lambda v: abs(v - values[0]))
    return (math.nan if step is None else step), sign * (extreme - values[0])


def numbers(measured: Mapping[str, Any]) -> dict[str, float]:
    """One seed's numbers (see the module docstring) from ``measured``: ``history`` (the main
    run's), ``baseline`` (``bigram_baseline``), ``d_vocab``, and where measured ``sweep``
    (``trigger_sweep``), ``freezing`` (``freezing_comparison``), ``construction``
    (``construction_table``), ``extremes`` (``extremes_table``). NaNs are left out."""
    history, base = measured["history"], measured["baseline"]
    out: dict[str, float] = {"icl_acc": history[-1].get("cb_icl_acc", math.nan),
                             "bigram_acc": history[-1].get("cb_bigram_acc", math.nan),
                             "baseline.icl_acc": base.get("icl_acc", math.nan),
                             "baseline.bigram_acc": base.get("bigram_acc", math.nan),
                             "chance.acc": 1.0 / measured["d_vocab"]}
    steps = sorted({float(r["step"]) for r in history})
    if len(steps) >= 2:
        out["interval"] = min(b - a for a, b in zip(steps, steps[1:]))
    for short, (_, key, sign) in HALF.items():
        out[f"half.{short}"], out[f"rise.{short}"] = half_and_rise(history, key, sign)
    if (sweep := measured.get("sweep")) is not None:
        for r in sweep.itertuples():
            out[f"sweep.{r.triggers}.{r.set}.K{int(r.K)}"] = r.icl_acc
    if (freezing := measured.get("freezing")) is not None:
        for name, row in freezing.iterrows():
            freeze = row.get("freezing") if "freezing" in row else None
            if isinstance(freeze, str):
                out.update({f"freeze.{freeze}.{k}": row[k] for k in FREEZE_KEYS if k in row})
    if (match := measured.get("construction")) is not None:
        for memory, row in match.iterrows():
            short = str(memory).split()[0]
            out[f"construction.{short}.trained"] = row["cosine(trained, construction)"]
            out[f"construction.{short}.init"] = row["cosine(init, construction)"]
    if (ext := measured.get("extremes")) is not None:
        for name, row in ext.iterrows():
            if str(name).startswith("only_triggers"):
                which = "unfrozen" if "unfrozen" in str(name) else "frozen"
                out.update({f"extremes.{which}.{k}": row[k] for k in EXTREME_KEYS if k in row})
    return {k: float(v) for k, v in out.items() if _finite(v)}


# --- helpers the verdicts share -------------------------------------------------------------------
def by_k(n: Numbers, prefix: str) -> list[float]:
    """Values of ``<prefix>.K<k>`` sorted by k (KeyError when fewer than two K were measured)."""
    keys = n.all_keys() if hasattr(n, "all_keys") else list(n)  # a NaN at one K: KeyError below
    pts = sorted((int(k[len(prefix) + 2:]), n[k]) for k in keys
                 if k.startswith(prefix + ".K") and k[len(prefix) + 2:].isdigit())
    if len(pts) < 2:
        raise KeyError(prefix)
    return [v for _, v in pts]


def rises(values: Sequence[float], margin: float = MARGIN, drop: float = DROP) -> bool:
    """Ends at least ``margin`` above where it started, and never falls by more than ``drop``
    from one K to the next."""
    return values[-1] - values[0] >= margin and all(b - a >= -drop
                                                    for a, b in zip(values, values[1:]))


def span(n: Numbers, metric: str) -> float:
    """The attainable range of a metric: bigram accuracy from chance to the exact bigram model's
    (its ceiling), in-context accuracy from chance to 1, a recall probe from 0 to 1."""
    if metric == "bigram_acc":
        return n["baseline.bigram_acc"] - n["chance.acc"]
    if metric == "icl_acc":
        return 1.0 - n["chance.acc"]
    return 1.0


def ordered(n: Numbers, names: Sequence[str]) -> bool | None:
    """Whether the metrics ``names`` cross half way in that order: True when each consecutive
    pair is further apart than the probe interval in that order, False when a pair is that far
    apart the other way, None (unresolved) otherwise or when a metric moved less than
    ``MIN_RISE`` of its attainable range (``span``)."""
    if any(n[f"rise.{m}"] < MIN_RISE * span(n, m) for m in names):
        return None
    steps, gap = need(n, [f"half.{m}" for m in names]), n["interval"]
    diffs = [b - a for a, b in zip(steps, steps[1:])]
    if all(d > gap for d in diffs):
        return True
    return False if any(d < -gap for d in diffs) else None


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _shared_gap(n: Numbers) -> float:
    return _mean(by_k(n, "sweep.random.non-top-K")) - _mean(by_k(n, "sweep.fixed.non-top-K"))


def _freeze_gaps(n: Numbers) -> list[float]:
    return [n[f"freeze.none.{k}"] - n[f"freeze.paper.{k}"] for k in FREEZE_KEYS]


def _freezing_harmless(n: Numbers) -> bool | None:
    """None (unresolved) unless the paper's frozen run learned the mechanism: two runs that both
    learned nothing agree without saying anything about freezing."""
    if n["freeze.paper.icl_acc"] < n["baseline.icl_acc"] + ABOVE_BASELINE:
        return None
    return min(_freeze_gaps(n)) >= -COMPARABLE


def _memories(n: Numbers) -> list[str]:
    keys = n.all_keys() if hasattr(n, "all_keys") else list(n)
    found = sorted({k.split(".")[1] for k in keys if k.startswith("construction.")})
    if not found:
        raise KeyError("construction")
    return found


def _cosine_gains(n: Numbers) -> list[float]:
    return [n[f"construction.{m}.trained"] - n[f"construction.{m}.init"] for m in _memories(n)]


def _extremes_gap(n: Numbers) -> float:
    return min(n[f"extremes.unfrozen.{k}"] - n[f"extremes.frozen.{k}"]
               for k in ("probe_wk2", "probe_wo2"))


def _extremes_agree(n: Numbers) -> bool | None:
    if n["extremes.frozen.icl_acc"] < FORMED:
        return None  # the frozen model did not learn the only-trigger data: nothing to compare
    return _extremes_gap(n) >= -COMPARABLE


CLAIMS: tuple[Claim, ...] = (
    Claim("induction-forms", "the induction mechanism forms: in-context outputs are predicted "
          "(accuracy near 1, far above the exact bigram model's)", "the paper, section 5 "
          "(simplified model, fixed triggers)", "in-context accuracy close to 1",
          value=lambda n: n["icl_acc"],
          holds=lambda n: (n["icl_acc"] >= FORMED
                           and n["icl_acc"] >= n["baseline.icl_acc"] + ABOVE_BASELINE),
          unit="in-context accuracy", reference=lambda n: n["baseline.icl_acc"],
          test=f"in-context accuracy >= {FORMED} and >= the bigram model's + {ABOVE_BASELINE}",
          why="the exact bigram model (the trivial predictor here) scores what knowing pi_b "
              "gives; an untrained model ~1/N"),
    Claim("bigrams-learned", "the global bigram statistics are learned", "the paper, section 5 "
          "(the W_F memory)", "bigram accuracy near the bigram model's",
          value=lambda n: n["bigram_acc"],
          holds=lambda n: (n["bigram_acc"] >= n["baseline.bigram_acc"] - BIGRAM_GAP
                           and n["rise.bigram_acc"] >= MIN_RISE * span(n, "bigram_acc")),
          unit="bigram accuracy", reference=lambda n: n["baseline.bigram_acc"],
          test=f"bigram accuracy within {BIGRAM_GAP} of the exact bigram model and risen by "
               f">= {MIN_RISE:.0%} of the way from chance to it",
          why="the exact bigram model is the ceiling at those positions; an untrained model "
              "scores ~1/N and does not rise"),
    Claim("bigram-first", "the global bigram statistics are learned before the induction head",
          "the paper, training dynamics (section 5)", "bigrams first and fast, induction later",
          value=lambda n: n["half.icl_acc"] - n["half.bigram_acc"],
          holds=lambda n: ordered(n, ("bigram_acc", "icl_acc")),
          unit="steps (in-context - bigram half-way)",
          test=f"half-way steps in that order, further apart than the probe interval; each "
               f"accuracy risen by >= {MIN_RISE:.0%} of its range, chance to ceiling (else "
               "unresolved)",
          why="ties within one probe interval say nothing about order"),
    Claim("top-down", "the induction head's memories form top-down: W_O² first, then W_K², then "
          "W_K¹", "the paper, training dynamics (section 5, figure 4)",
          "W_O² first, then W_K², then W_K¹",
          value=lambda n: n["half.W_K1"] - n["half.W_O2"],
          holds=lambda n: ordered(n, ("W_O2", "W_K2", "W_K1")),
          unit="steps (W_K¹ - W_O² half-way)",
          test=f"half-way steps of the recall probes strictly in that order, each gap above the "
               f"probe interval, each probe risen by >= {MIN_RISE} (else unresolved)",
          why="probes that never rose, or half-way steps within one probe interval, cannot "
              "order anything"),
    Claim("random-generalises", "random triggers generalise better than fixed ones (shared "
          "non-top-K set, mean over K)", "the paper, fixed vs random triggers (figure 5)",
          "random triggers generalise out of distribution, fixed ones less",
          value=_shared_gap, holds=lambda n: _shared_gap(n) >= MARGIN,
          unit="accuracy (random - fixed)",
          test=f"random - fixed >= {MARGIN}", why="accuracy noise ~0.01 per set"),
    Claim("fixed-ood-rises-with-k", "with fixed triggers, OOD in-context accuracy rises with the "
          "number of triggers K", "the paper, number of triggers K (figure 5)",
          "more triggers, better OOD accuracy",
          value=lambda n: by_k(n, "sweep.fixed.ood")[-1] - by_k(n, "sweep.fixed.ood")[0],
          holds=lambda n: rises(by_k(n, "sweep.fixed.ood")),
          unit="accuracy (largest K - smallest K)",
          test=f"rises by >= {MARGIN}, never falls by > {DROP} between Ks",
          why="accuracy noise ~0.01 per set"),
    Claim("random-shared-rises-with-k", "with random triggers, accuracy on the shared non-top-K "
          "set rises with K", "the paper, number of triggers K (figure 5)",
          "more diverse data generalises better",
          value=lambda n: (by_k(n, "sweep.random.non-top-K")[-1]
                           - by_k(n, "sweep.random.non-top-K")[0]),
          holds=lambda n: rises(by_k(n, "sweep.random.non-top-K")),
          unit="accuracy (largest K - smallest K)",
          test=f"rises by >= {MARGIN}, never falls by > {DROP} between Ks",
          why="accuracy noise ~0.01 per set"),
    Claim("freezing-harmless", "freezing does not change the mechanism: trained without freezing, "
          "in-context accuracy and the W_K², W_O² probes stay as high", REVIEWS + ", freezing "
          "questions; the paper's frozen simplified model", "the mechanism is not an artefact "
          "of freezing", value=lambda n: min(_freeze_gaps(n)), holds=_freezing_harmless,
          unit="worst gap (no freezing - paper's)",
          test=f"every gap >= -{COMPARABLE}, if the frozen run learned (else unresolved)",
          why="two runs that learned nothing agree without evidence"),
    Claim("only-triggers-unfrozen", "with only triggers, training every matrix keeps the "
          "memories of the frozen model (a reviewer found 'very different behavior')",
          REVIEWS + ", question 3", "disputed by a reviewer",
          value=_extremes_gap, holds=_extremes_agree, unit="worst probe gap (unfrozen - frozen)",
          test=f"W_K², W_O² probes of the unfrozen model >= the frozen model's - {COMPARABLE}, "
               f"if the frozen one learned (accuracy >= {FORMED})",
          why="probes are argmax recall accuracies in [0, 1]"),
    Claim("toward-construction", "every trained memory matrix moves toward the hand-built "
          "construction", "the paper, associative-memory construction (section 4)",
          "W_K¹, W_K², W_O², W_F as in the construction",
          value=lambda n: min(_cosine_gains(n)), holds=lambda n: min(_cosine_gains(n)) >= COSINE_GAIN,
          unit="smallest cosine gain",
          test=f"cosine(trained, construction) - cosine(init, construction) >= {COSINE_GAIN} "
               "for every memory", why="an untrained matrix gains exactly 0"),
)
CLAIMS = (*CLAIMS, *CAUSAL_CLAIMS)
MAIN_CLAIMS = ("induction-forms", "bigrams-learned", "bigram-first", "top-down",
               "toward-construction", *(c.key for c in CAUSAL_CLAIMS))


def scorecard(per_seed: Sequence[Mapping[str, float]], size: str | None = None,
              seeds: Sequence[int] | None = None) -> pd.DataFrame:
    """The study's claims assessed over seeds (one dict of ``numbers`` per seed)."""
    return _scorecard(CLAIMS, per_seed, size, seeds)
