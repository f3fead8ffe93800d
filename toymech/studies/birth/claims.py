"""Study 2's claims: what the paper says, as data, with verdicts computed from our numbers.

``numbers(...)`` flattens one seed's measurements (the main run's history, the exact bigram
model, the trigger sweep, the freezing comparison, the construction table) into a dict of named
numbers; each ``Claim`` reads from it; ``scorecard(per_seed)`` assesses every claim over seeds
(``toymech.studies.claims``). A number that was not measured is absent from the dict, and a
claim that needs it reads "not measured".

Keys: ``icl_acc`` (final in-context accuracy of the main run, callback batch),
``baseline.icl_acc`` (the exact bigram model), ``half.<memory>`` (half-way steps: bigram_acc,
icl_acc, W_O2, W_K2, W_K1), ``sweep.<fixed|random>.<set>.K<k>`` (in-context accuracy),
``freeze.<freezing>.<icl_acc|probe_wk2|probe_wo2>``, ``construction.<W_K1|W_K2|W_O2|W_F>.<trained|
init>`` (cosine with the construction).
"""

from __future__ import annotations

import math
import re
from typing import Any, Mapping, Sequence

import pandas as pd

from ..claims import Claim, Numbers, scorecard as _scorecard
from .tables import FORMATION_KEYS, half_step

SOURCE = ("A. Bietti, V. Cabannes, D. Bouchacourt, H. Jégou, L. Bottou, \"Birth of a "
          "Transformer: A Memory Viewpoint\", NeurIPS 2023, arXiv:2306.00802, and its code "
          "github.com/albietz/transformer-birth; see docs/sources.md, study 2")

ABOVE_BASELINE = 0.3  # "well above the bigram baseline": in-context accuracy margin
COMPARABLE = 0.1      # "comparable": the no-freeze run within this of the paper's freezing
HALF = {"bigram_acc": "bigram acc", "icl_acc": "in-context acc", "W_O2": "W_O² output copy",
        "W_K2": "W_K² induction key", "W_K1": "W_K¹ previous token"}
FREEZE_KEYS = ("icl_acc", "probe_wk2", "probe_wo2")


def _finite(v: Any) -> bool:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(float(v))


def numbers(history: Sequence[Mapping[str, float]], baseline: Mapping[str, float],
            sweep: pd.DataFrame | None = None, freezing: pd.DataFrame | None = None,
            construction: pd.DataFrame | None = None) -> dict[str, float]:
    """One seed's numbers (see the module docstring); NaNs and unmeasured parts are left out."""
    out: dict[str, float] = {}
    out["icl_acc"] = history[-1].get("cb_icl_acc", float("nan"))
    out["baseline.icl_acc"] = baseline.get("icl_acc", float("nan"))
    for short, label in HALF.items():
        out[f"half.{short}"] = half_step(history, FORMATION_KEYS[label])
    if sweep is not None:
        for r in sweep.itertuples():
            out[f"sweep.{r.triggers}.{r.set}.K{int(r.K)}"] = r.icl_acc
    if freezing is not None:
        for name, row in freezing.iterrows():
            m = re.fullmatch(r"simplified, freeze=(\w+)", str(name))
            if m:
                out.update({f"freeze.{m.group(1)}.{k}": row[k] for k in FREEZE_KEYS if k in row})
    if construction is not None:
        for memory, row in construction.iterrows():
            short = str(memory).split()[0]
            out[f"construction.{short}.trained"] = row["cosine(trained, construction)"]
            out[f"construction.{short}.init"] = row["cosine(init, construction)"]
    return {k: float(v) for k, v in out.items() if _finite(v)}


# --- helpers the verdicts share -------------------------------------------------------------------
def by_k(n: Numbers, prefix: str) -> list[float]:
    """Values of ``<prefix>.K<k>`` sorted by k (KeyError when fewer than two K were measured)."""
    pts = sorted((int(k[len(prefix) + 2:]), v) for k, v in n.items()
                 if k.startswith(prefix + ".K") and k[len(prefix) + 2:].isdigit())
    if len(pts) < 2:
        raise KeyError(prefix)
    return [v for _, v in pts]


def rises(values: Sequence[float]) -> bool:
    """Never falls from one K to the next, and ends above where it started."""
    return all(b >= a for a, b in zip(values, values[1:])) and values[-1] > values[0]


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _shared_gap(n: Numbers) -> float:
    return _mean(by_k(n, "sweep.random.non-top-K")) - _mean(by_k(n, "sweep.fixed.non-top-K"))


def _freeze_gaps(n: Numbers) -> list[float]:
    return [n[f"freeze.none.{k}"] - n[f"freeze.paper.{k}"] for k in FREEZE_KEYS]


def _freezing_harmless(n: Numbers) -> bool | None:
    """None (not measured) unless the paper's frozen run learned the mechanism: two runs that
    both learned nothing agree without saying anything about freezing."""
    if n["freeze.paper.icl_acc"] < n["baseline.icl_acc"] + ABOVE_BASELINE:
        return None
    return min(_freeze_gaps(n)) >= -COMPARABLE


def _memories(n: Numbers) -> list[str]:
    found = sorted({k.split(".")[1] for k in n if k.startswith("construction.")})
    if not found:
        raise KeyError("construction")
    return found


def _cosine_gains(n: Numbers) -> list[float]:
    return [n[f"construction.{m}.trained"] - n[f"construction.{m}.init"] for m in _memories(n)]


CLAIMS: tuple[Claim, ...] = (
    Claim("induction-forms", "the induction mechanism forms: in-context accuracy well above the "
          f"exact bigram model's (by at least {ABOVE_BASELINE})", "the paper, simplified model "
          "on fixed triggers", "in-context outputs predicted (accuracy near 1)",
          value=lambda n: n["icl_acc"],
          holds=lambda n: n["icl_acc"] >= n["baseline.icl_acc"] + ABOVE_BASELINE,
          unit="in-context accuracy"),
    Claim("bigram-first", "the global bigram statistics are learned before the induction head "
          "(half-way step of bigram accuracy before that of in-context accuracy)",
          "the paper, training dynamics", "bigrams first, induction head later",
          value=lambda n: n["half.icl_acc"] - n["half.bigram_acc"],
          holds=lambda n: n["half.bigram_acc"] < n["half.icl_acc"],
          unit="steps (in-context - bigram)"),
    Claim("top-down", "the memories form top-down: W_O² before W_K² before W_K¹ (half-way "
          "steps of the recall probes, ties allowed at the evaluation cadence)",
          "the paper, training dynamics", "W_O² first, then W_K², then W_K¹",
          value=lambda n: n["half.W_K1"] - n["half.W_O2"],
          holds=lambda n: n["half.W_O2"] <= n["half.W_K2"] <= n["half.W_K1"],
          unit="steps (W_K¹ - W_O²)"),
    Claim("random-generalises", "random triggers generalise better than fixed ones on the "
          "shared non-top-K set (mean over K)", "the paper, fixed vs random triggers",
          "random triggers generalise out of distribution, fixed ones less",
          value=_shared_gap, holds=lambda n: _shared_gap(n) > 0,
          unit="accuracy (random - fixed)"),
    Claim("fixed-ood-rises-with-k", "with fixed triggers, OOD in-context accuracy rises with the "
          "number of triggers K", "the paper, number of triggers K",
          "more triggers, better OOD accuracy",
          value=lambda n: by_k(n, "sweep.fixed.ood")[-1] - by_k(n, "sweep.fixed.ood")[0],
          holds=lambda n: rises(by_k(n, "sweep.fixed.ood")),
          unit="accuracy (largest K - smallest K)"),
    Claim("random-shared-rises-with-k", "with random triggers, accuracy on the shared non-top-K "
          "set rises with K", "the paper, number of triggers K",
          "more diverse data generalises better",
          value=lambda n: (by_k(n, "sweep.random.non-top-K")[-1]
                           - by_k(n, "sweep.random.non-top-K")[0]),
          holds=lambda n: rises(by_k(n, "sweep.random.non-top-K")),
          unit="accuracy (largest K - smallest K)"),
    Claim("freezing-harmless", "freezing does not change the mechanism: trained without freezing, "
          f"in-context accuracy and the W_K², W_O² probes are within {COMPARABLE} of the "
          "paper's freezing or above", "the paper, its frozen simplified model",
          "the mechanism is not an artefact of freezing",
          value=lambda n: min(_freeze_gaps(n)),
          holds=_freezing_harmless,
          unit="worst gap (no freezing - paper's)"),
    Claim("toward-construction", "every trained memory matrix moves toward the hand-built "
          "construction (cosine above its initial value)", "the paper, associative-memory "
          "construction", "W_K¹, W_K², W_O², W_F as in the construction",
          value=lambda n: min(_cosine_gains(n)), holds=lambda n: min(_cosine_gains(n)) > 0,
          unit="smallest cosine gain"),
)


def scorecard(per_seed: Sequence[Mapping[str, float]]) -> pd.DataFrame:
    """The study's claims assessed over seeds (one dict of ``numbers`` per seed)."""
    return _scorecard(CLAIMS, per_seed)
