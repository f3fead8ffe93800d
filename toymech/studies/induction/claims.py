"""Study 1's claims: what the post says, as data, with verdicts computed from our numbers.

``numbers(measured)`` flattens one seed's measurements (``seeds.measure_seed``) into a dict of
named numbers; each ``Claim`` reads from it; ``scorecard(per_seed, size, seeds)`` assesses every
claim over seeds (``toymech.studies.claims``). Keys, per model ``m`` in 1l, smeared, 2l:

    m.test, m.doubled, m.option1, m.option2     cross-entropy (nats) on the post's four sets
    m.predictable, m.shifted, m.period5, m.period7   the mechanism sets (predictable targets only)
    m.direct_copy                               copy metric of the direct path W_E W_U
    m.copy_max.L<l>, m.copy_min.L<l>            max / min OV copy metric over layer l's heads
    m.copying_heads, m.suppressing_heads        heads with copy metric > COPYING / < SUPPRESSING
    2l.prev_token_max.L0                        best previous-token pattern score in layer 0
    2l.path.<direct|k|q|both>                   loss with layer-1 Q/K inputs cut from layer 0
    chance.loss, floor.loss                     ln 26 (a uniform guess) and the task's floor

The post numbers its layers and heads from 1 ("layer 1" of the 2-layer model is our layer 0,
"head 2" our head 1). Tolerances are in ``TOL`` with the reason for each (docs/sources.md lists
every claim, its test and why).
"""

from __future__ import annotations

import math
from typing import Any, Mapping, Sequence

import pandas as pd

from ..claims import Claim, Numbers, need, scorecard as _scorecard
from .causal import CAUSAL_CLAIMS
from .design import SHORT

SOURCE = ("the induction-heads blog post on repeated letter blocks and its code, "
          "github.com/CG80499/Attention-only-transformers (2023); see docs/sources.md, study 1")
CODE = "the post's public code, comment in toy_transformers.py"

# The post's figures (cross-entropy in nats) and its code's comments (the 1-layer model's 2.6).
POST: dict[str, dict[str, float]] = {
    "induction-1l": {"test": 2.6},
    "induction-1l-smeared": {"test": 1.24, "doubled": 2.31, "option1": 0.99, "option2": 0.73},
    "induction-2l": {"test": 1.40, "doubled": 2.31, "option1": 0.73, "option2": 6.42},
}
POST_PATHS = {"direct only": 3.12, "K-composition": 2.52, "Q-composition": 2.62, "K and Q": 1.39}
MODELS = tuple(SHORT.values())

# A head's OV copy metric above COPYING copies what it attends to, below SUPPRESSING suppresses
# it (the one definition: tables, sentences and claims read these).
COPYING, SUPPRESSING = 0.5, -0.5

# Tolerances, each with its reason (nats unless stated).
TOL = {
    # A loss "near the post's": the post trains 10,000 steps, default 2,000 (measured over 3
    # seeds: 2-layer 1.71 [1.68, 1.73], still falling; smeared 1.33; 1-layer 2.64). Half a nat is
    # about a quarter of the way from the post's 2-layer loss to the uniform guess (3.26).
    "near": 0.5,
    # "Nearly identically in distribution": the post's two models differ by 0.16.
    "tie": 0.3,
    # Preferences out of distribution: untrained models differ between options by < 0.01 nats
    # (measured on 4 seeds); trained seeds' evaluation noise is ~0.01 (2,048 sequences). The
    # post's gaps are 5.69 (2-layer) and 0.26 (smeared): a tenth of a nat for the smeared model
    # and one nat for the 2-layer model are far above both and well below the post's.
    "option_smeared": 0.1,
    "option_2l": 1.0,
    # "Much higher loss" on doubled letters: the post's +86 % / +65 %; untrained models' doubled
    # and test losses are the same (both ln 26), so +25 % is far above noise.
    "doubled_pct": 25.0,
    # "Very close to -1.0" (direct path) and "fairly close to -1.0" (heads): untrained copy
    # metrics are near 0 (random W_E W_U); -0.8 and -0.5 keep the post's words with room.
    "direct": -0.8,
    # The 1-layer model worst in distribution: 2.6 vs 1.40 in the post; a third of a nat.
    "worst": 0.3,
    # The K-composition path: cutting layer 0 out of layer-1 keys costs 1.23 nats in the post's
    # code (2.62 vs 1.39); untrained models lose < 0.01. Half a nat.
    "path": 0.5,
    # A previous-token head: the share of attention on the previous position; uniform causal
    # attention gives ~0.16 on 24 positions.
    "prev_token": 0.5,
}


def numbers(measured: Mapping[str, Any]) -> dict[str, float]:
    """One seed's named numbers (see the module docstring) from ``measured``:
    ``{"models": {name: Model}, "chance": ln 26, "floor": the task's floor}``, each ``Model``
    with its losses, copy scores and (2-layer) pattern scores and path losses filled in."""
    out: dict[str, float] = {"chance.loss": float(measured["chance"]),
                             "floor.loss": float(measured["floor"])}
    for name, m in measured["models"].items():
        short = SHORT.get(name)
        if short is None:
            continue
        out.update({f"{short}.{k}": float(v) for k, v in m.losses.items()})
        out[f"{short}.direct_copy"] = float(m.direct_copy)
        if m.head_copy is not None:
            for layer in range(m.head_copy.shape[0]):
                out[f"{short}.copy_max.L{layer}"] = float(m.head_copy[layer].max())
                out[f"{short}.copy_min.L{layer}"] = float(m.head_copy[layer].min())
            out[f"{short}.copying_heads"] = float((m.head_copy > COPYING).sum())
            out[f"{short}.suppressing_heads"] = float((m.head_copy < SUPPRESSING).sum())
        prev = m.pattern_scores.get("previous_token")
        if prev is not None:
            out[f"{short}.prev_token_max.L0"] = float(prev[0].max())
        for path, key in (("direct only", "direct"), ("K-composition", "k"),
                          ("Q-composition", "q"), ("K and Q", "both")):
            if path in m.paths:
                out[f"{short}.path.{key}"] = float(m.paths[path])
    return out


# --- claim builders -------------------------------------------------------------------------
def _chance(n: Numbers) -> float:
    return n["chance.loss"]


def _near(short: str, target: float, source: str) -> Claim:
    key = f"{short}.test"
    return Claim(f"{short}-test-near-source",
                 f"{_label(short)}: test loss near the source's", source, f"{target:.2f} nats",
                 value=lambda n: n[key], holds=lambda n: abs(n[key] - target) <= TOL["near"],
                 unit="nats", reference=_chance,
                 test=f"|test loss - {target:.2f}| <= {TOL['near']} nats",
                 why="the post trains 10,000 steps, default 2,000 (the 2-layer model is still "
                     "falling there); seeds spread by ~0.05 nats; a uniform guess is 3.26")


def _label(short: str) -> str:
    return {"1l": "1-layer model", "smeared": "1-layer smeared model",
            "2l": "2-layer model"}[short]


def _gap(n: Numbers, short: str, worse: str, better: str) -> float:
    return n[f"{short}.{worse}"] - n[f"{short}.{better}"]


def _doubled_pct(n: Numbers, short: str) -> float:
    return 100 * (n[f"{short}.doubled"] / n[f"{short}.test"] - 1)


def _doubled(short: str, source_value: str) -> Claim:
    return Claim(f"{short}-doubled-costs", f"{_label(short)}: sequences of doubled letters "
                 "(AABBCC) have a much higher loss than average", "the post, 2A and its table",
                 source_value, value=lambda n: _doubled_pct(n, short),
                 holds=lambda n: _doubled_pct(n, short) >= TOL["doubled_pct"],
                 unit="% over the test loss",
                 test=f"doubled loss >= test loss x (1 + {TOL['doubled_pct']:.0f} %)",
                 why="untrained models score both sets alike (ln 26); the post: +65 % and more")


def _content_based(n: Numbers, short: str) -> bool:
    """The mechanism check: solved (below half of ln 26) with a shifted start AND with other
    block lengths, as an induction head does and a positional shortcut does not."""
    half = n["chance.loss"] / 2
    return all(n[f"{short}.{s}"] < half for s in ("predictable", "shifted", "period5", "period7"))


def _mechanism(short: str) -> Claim:
    sets = ("predictable", "shifted", "period5", "period7")
    return Claim(f"{short}-copies-by-content",
                 f"{_label(short)}: predicts the repeats by induction (content), so a shifted "
                 "start and other block lengths are solved too",
                 "the post, 3) algorithms in words / 2B", "induction heads ('copy the letter "
                 "5 back', 'the first instance of the next token')",
                 value=lambda n: max(need(n, [f"{short}.{s}" for s in sets[1:]])),
                 holds=lambda n: _content_based(n, short), unit="nats (worst mechanism set)",
                 reference=lambda n: n["chance.loss"] / 2,
                 test="loss on shifted, 5- and 7-letter blocks each below ln 26 / 2",
                 why="a model copying by absolute position fails the shifted and the other "
                     "lengths (loss near or above chance); an untrained model is at chance",
                 ours=True)


CLAIMS: tuple[Claim, ...] = (
    _near("2l", POST["induction-2l"]["test"], "the post, table of 2A"),
    _near("smeared", POST["induction-1l-smeared"]["test"], "the post, table of 2A"),
    _near("1l", POST["induction-1l"]["test"], CODE),
    Claim("1l-worst", "the plain 1-layer model is the worst in distribution", CODE,
          "2.6 vs 1.24 (smeared) and 1.40 (2-layer)",
          value=lambda n: n["1l.test"] - max(n["smeared.test"], n["2l.test"]),
          holds=lambda n: n["1l.test"] - max(n["smeared.test"], n["2l.test"]) >= TOL["worst"],
          unit="nats (1-layer - best other)",
          test=f"1-layer test loss >= the others' + {TOL['worst']} nats",
          why="the post's code: 2.6 vs 1.40; untrained models tie"),
    Claim("tie-in-distribution", "the smeared and the 2-layer models perform nearly identically "
          "in distribution", "the post, 2B", "1.24 vs 1.40 nats",
          value=lambda n: abs(n["smeared.test"] - n["2l.test"]),
          holds=lambda n: (abs(n["smeared.test"] - n["2l.test"]) <= TOL["tie"]
                           and max(n["smeared.test"], n["2l.test"])
                           <= (n["chance.loss"] + n["floor.loss"]) / 2),
          unit="nats apart", reference=lambda n: (n["chance.loss"] + n["floor.loss"]) / 2,
          test=f"|difference| <= {TOL['tie']} nats, both below the midpoint of floor and chance",
          why="untrained models tie at chance: both must have learned (midpoint 1.98)"),
    Claim("2l-option1", "out of distribution the 2-layer model prefers option 1 (copy the "
          "first block)", "the post, table of 2B", "option 1 0.73 < option 2 6.42",
          value=lambda n: _gap(n, "2l", "option2", "option1"),
          holds=lambda n: _gap(n, "2l", "option2", "option1") >= TOL["option_2l"],
          unit="nats (option 2 - option 1)",
          test=f"option 2 loss - option 1 loss >= {TOL['option_2l']} nat",
          why="untrained: < 0.01; the post: 5.69"),
    Claim("smeared-option2", "out of distribution the 1-layer smeared model prefers option 2 "
          "(copy the most recent block)", "the post, table of 2B",
          "option 2 0.73 < option 1 0.99",
          value=lambda n: _gap(n, "smeared", "option1", "option2"),
          holds=lambda n: _gap(n, "smeared", "option1", "option2") >= TOL["option_smeared"],
          unit="nats (option 1 - option 2)",
          test=f"option 1 loss - option 2 loss >= {TOL['option_smeared']} nats",
          why="untrained: < 0.01; the post: 0.26"),
    Claim("behave-differently", "yet out of distribution the two behave completely differently "
          "(each prefers its own option)", "the post, 2B",
          "smeared: option 2; 2-layer: option 1",
          value=lambda n: min(_gap(n, "2l", "option2", "option1"),
                              _gap(n, "smeared", "option1", "option2")),
          holds=lambda n: (_gap(n, "2l", "option2", "option1") >= TOL["option_2l"]
                           and _gap(n, "smeared", "option1", "option2") >= TOL["option_smeared"]),
          unit="nats (smaller of the two gaps)",
          test="both preferences above, in the same seed", why="as the two claims above"),
    *(_doubled(short, pct) for short, pct in (("smeared", "+86 %"), ("2l", "+65 %"),
                                                  ("1l", "'much higher' (no number)"))),
    Claim("direct-suppresses-all", "the direct path of all three models never repeats the "
          "current letter (copy metric very close to -1)", "the post, 1A / evidence",
          "very close to -1.0",
          value=lambda n: max(n[f"{s}.direct_copy"] for s in MODELS),
          holds=lambda n: max(n[f"{s}.direct_copy"] for s in MODELS) <= TOL["direct"],
          test=f"every model's direct-path copy metric <= {TOL['direct']}",
          why="random W_E W_U scores near 0"),
    Claim("2l-layer0-suppresses", "all the heads of the 2-layer model's first layer suppress "
          "what they attend to", "the post, evidence (its 'layer 1')", "fairly close to -1.0",
          value=lambda n: n["2l.copy_max.L0"],
          holds=lambda n: n["2l.copy_max.L0"] < SUPPRESSING,
          test=f"largest layer-0 head copy metric < {SUPPRESSING}",
          why="the threshold every table uses for 'suppresses'; random heads score near 0"),
    Claim("smeared-two-copy-two-suppress", "in the 1-layer smeared model two heads copy (the "
          "letter 5 back) and two suppress (anti-induction)", "the post, 1B and 3)",
          "heads 2 and 3 copy; heads 1 and 4 suppress",
          value=lambda n: n["smeared.suppressing_heads"],
          holds=lambda n: n["smeared.copying_heads"] == 2 and n["smeared.suppressing_heads"] == 2,
          unit="suppressing heads",
          test=f"exactly 2 heads with copy metric > {COPYING} and 2 with < {SUPPRESSING}",
          why="the post's count; random heads score near 0 (neither)"),
    Claim("1l-heads-copy", "the plain 1-layer model's heads copy recent letters",
          "the post, 3) algorithm 1", "copy the last ~10 letters (heads)",
          value=lambda n: n["1l.copying_heads"],
          holds=lambda n: n["1l.copying_heads"] >= 1, unit="copying heads",
          test=f"at least one head with copy metric > {COPYING}", why="random heads score near 0"),
    Claim("2l-previous-token-head", "a first-layer head of the 2-layer model attends to the "
          "previous letter (the head K-composition reads)", "the post, 2B",
          "head 2 of layer 1 shifts the tokens back",
          value=lambda n: n["2l.prev_token_max.L0"],
          holds=lambda n: n["2l.prev_token_max.L0"] >= TOL["prev_token"],
          unit="previous-token score",
          test=f"best layer-0 previous-token score >= {TOL['prev_token']}",
          why="uniform causal attention scores ~0.16 on 24 positions"),
    Claim("2l-needs-k-composition", "the 2-layer model needs K-composition: cutting layer 0 out "
          "of layer-1 keys costs loss", CODE, "2.62 (Q only) vs 1.39 (both)",
          value=lambda n: n["2l.path.q"] - n["2l.path.both"],
          holds=lambda n: n["2l.path.q"] - n["2l.path.both"] >= TOL["path"],
          unit="nats (keys cut - both)",
          test=f"loss with layer-1 keys cut from layer 0 >= full loss + {TOL['path']}",
          why="the post's code: +1.23; untrained models lose < 0.01"),
    Claim("2l-needs-q-composition", "and Q-composition: cutting layer 0 out of layer-1 queries "
          "costs loss too", CODE, "2.52 (K only) vs 1.39 (both)",
          value=lambda n: n["2l.path.k"] - n["2l.path.both"],
          holds=lambda n: n["2l.path.k"] - n["2l.path.both"] >= TOL["path"],
          unit="nats (queries cut - both)",
          test=f"loss with layer-1 queries cut from layer 0 >= full loss + {TOL['path']}",
          why="the post's code: +1.13; untrained models lose < 0.01"),
    _mechanism("2l"),
    _mechanism("smeared"),
    *CAUSAL_CLAIMS,
)


def scorecard(per_seed: Sequence[Mapping[str, float]], size: str | None = None,
              seeds: Sequence[int] | None = None) -> pd.DataFrame:
    """The study's claims assessed over seeds (one dict of ``numbers`` per seed)."""
    return _scorecard(CLAIMS, per_seed, size, seeds)


def floor_and_chance(task) -> tuple[float, float]:
    """(the task's loss floor, ln n_letters): the references of every loss claim."""
    return task.loss_floor, math.log(task.n_letters)
