"""Study 1's claims: what the post says, as data, with verdicts computed from our numbers.

``numbers(models)`` flattens one seed's measured models into a dict of named numbers; each
``Claim`` reads from it; ``scorecard(per_seed)`` assesses every claim over seeds
(``toymech.studies.claims``).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pandas as pd

from ... import analysis
from ..claims import Claim, scorecard as _scorecard

SOURCE = ("the induction-heads blog post on repeated letter blocks and its code, "
          "github.com/CG80499/Attention-only-transformers (2023); see docs/sources.md, study 1")

# The post's figures (cross-entropy in nats) and its code's comments.
POST: dict[str, dict[str, float]] = {
    "induction-1l": {"test": 2.6},
    "induction-1l-smeared": {"test": 1.24, "doubled": 2.31, "option1": 0.99, "option2": 0.73},
    "induction-2l": {"test": 1.40, "doubled": 2.31, "option1": 0.73, "option2": 6.42},
}
POST_PATHS = {"direct only": 3.12, "K-composition": 2.52, "Q-composition": 2.62, "K and Q": 1.39}
NEAR = 0.2  # nats: "near the post's loss"
SHORT = {"induction-1l": "1l", "induction-1l-smeared": "smeared", "induction-2l": "2l"}


def numbers(models: Mapping[str, Any]) -> dict[str, float]:
    """One seed's numbers, keyed ``<model>.<quantity>`` (model: 1l, smeared, 2l)."""
    out: dict[str, float] = {}
    for name, m in models.items():
        short = SHORT.get(name)
        if short is None:
            continue
        out.update({f"{short}.{k}": float(v) for k, v in m.losses.items()})
        out[f"{short}.direct_copy"] = float(m.direct_copy)
        if m.head_copy is not None:
            out[f"{short}.last_layer_copy_max"] = float(m.head_copy[-1].max())
        if m.model.cfg.n_layers == 2:
            out[f"{short}.kcomp_max"] = float(analysis.composition_scores(m.model, "K").max())
            out[f"{short}.kcomp_baseline"] = float(analysis.composition_baseline(m.model, "K")[0])
    return out


def _near(key: str, target: float):
    return Claim(f"{key}-near-post", f"{key.split('.')[0]} model: test loss near the post's "
                 f"(within {NEAR} nats)", "the post, test losses", f"{target:.2f} nats",
                 value=lambda n: n[key], holds=lambda n: abs(n[key] - target) <= NEAR, unit="nats")


CLAIMS: tuple[Claim, ...] = (
    _near("2l.test", POST["induction-2l"]["test"]),
    _near("smeared.test", POST["induction-1l-smeared"]["test"]),
    Claim("1l-worst", "the plain 1-layer model is the worst in distribution",
          "the post, test losses", "2.6 vs 1.24 (smeared) and 1.40 (2-layer)",
          value=lambda n: n["1l.test"],
          holds=lambda n: n["1l.test"] > max(n["smeared.test"], n["2l.test"]), unit="nats"),
    Claim("2l-option1", "out of distribution the 2-layer model prefers option 1 (copy the first "
          "block)", "the post, OOD losses", "option 1 0.73 < option 2 6.42",
          value=lambda n: n["2l.option2"] - n["2l.option1"],
          holds=lambda n: n["2l.option1"] < n["2l.option2"], unit="nats (option 2 - option 1)"),
    Claim("smeared-option2", "out of distribution the 1-layer smeared model prefers option 2 "
          "(copy the most recent block)", "the post, OOD losses", "option 2 0.73 < option 1 0.99",
          value=lambda n: n["smeared.option1"] - n["smeared.option2"],
          holds=lambda n: n["smeared.option2"] < n["smeared.option1"],
          unit="nats (option 1 - option 2)"),
    Claim("doubled-costs", "doubled letters cost both models loss", "the post, doubled letters",
          "+86 % (smeared), +65 % (2-layer)",
          value=lambda n: 100 * (n["2l.doubled"] / n["2l.test"] - 1),
          holds=lambda n: n["2l.doubled"] > n["2l.test"] and n["smeared.doubled"] > n["smeared.test"],
          unit="% (2-layer)"),
    Claim("direct-suppresses", "the 2-layer model's direct path suppresses the current letter",
          "the post, copy metrics", "about -1.0",
          value=lambda n: n["2l.direct_copy"], holds=lambda n: n["2l.direct_copy"] < -0.5),
    Claim("layer1-copies", "a layer-1 head of the 2-layer model copies what it attends to",
          "the post, copy metrics", "positive copy metric",
          value=lambda n: n["2l.last_layer_copy_max"],
          holds=lambda n: n["2l.last_layer_copy_max"] > 0.5),
    Claim("k-composition", "layer-1 keys read layer 0 (K-composition well above random)",
          "the post, composition", "K-composition matters (path losses)",
          value=lambda n: n["2l.kcomp_max"],
          holds=lambda n: n["2l.kcomp_max"] > 2 * n["2l.kcomp_baseline"]),
)


def scorecard(per_seed: Sequence[Mapping[str, float]]) -> pd.DataFrame:
    """The study's claims assessed over seeds (one dict of ``numbers`` per seed)."""
    return _scorecard(CLAIMS, per_seed)
