"""Study 1's claims: what the post says, as data, with verdicts computed from our numbers.

``numbers(measured)`` flattens one seed's measurements (``seeds.measure_seed``) into a dict of
named numbers; each ``Claim`` reads from it; ``Study.scorecard`` assesses every
claim over seeds (``toymech.studies.claims``). Keys, per model ``m`` in 1l, smeared, 2l:

    m.test, m.doubled, m.option1, m.option2     cross-entropy (nats) on the post's four sets
    m.predictable, m.shifted, m.shorter, m.longer   the mechanism sets (predictable targets only)
    m.direct_copy                               copy metric of the direct path W_E W_U
    m.copy_max.L<l>, m.copy_min.L<l>            max / min OV copy metric over layer l's heads
    m.copying_heads, m.suppressing_heads        heads with copy metric > COPYING / < SUPPRESSING
    2l.prev_token_max.L0                        best previous-token pattern score in layer 0
    2l.path.<direct|k|q|both>                   loss with layer-1 Q/K inputs cut from layer 0
    base.<set>, base.<set>.copier, base.<set>.oracle
                                                per mechanism set: the best predictor without
                                                induction (``panel.NULL_FAMILY``), the in-context
                                                frequency copier and induction itself (the
                                                oracle; ``measure.mechanism_baselines``)
    m.<set>.beyond_low, m.<set>.beyond_high     95 % bootstrap interval of the best predictor's
                                                loss minus the model's (``panel.margin_bounds``)
    m.<set>.gain_low, m.<set>.gain_high         the same for the frequency copier's loss minus
                                                the model's (shifted, shorter, longer)
    m.still_learning                            1 where its logged loss was still falling at
                                                the end, 0 where not (NaN: the log cannot tell)
    chance.loss, floor.loss                     ln 26 (a uniform guess) and the task's floor

The post numbers its layers and heads from 1 ("layer 1" of the 2-layer model is our layer 0,
"head 2" our head 1). Tolerances are in ``TOL`` with the reason for each (docs/sources.md lists
every claim, its test and why).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from ..claims import Claim, Numbers
from ..settings import StudySettings
from ..states import UNDECIDED
from .causal import CAUSAL_CLAIMS
from .design import CALIBRATION, COST, POST_SETTING, SHORT, setting
from .own_sets import OUTSIDE, baselines_of, verdict_of
from .panel import MARGIN

# The study's settings per size, what reaching each costs, and its calibration seeds.
# The scaled claims whose verdict at default (2,000 steps) was the verdict at the post's setting
# (paper, 10,000 steps, 10 seeds) in the recorded runs (docs/results/data: default seeds 3-5,
# paper seeds 3-12); tests/test_scaled_evidence.py re-reads those records, so this set cannot
# claim more than they show. The other scaled claims read "below the source's setting" at
# default.
SCALED_SHOWN = frozenset({
    "2l-option1", "smeared-option2", "behave-differently", "direct-suppresses-all",
    "2l-layer0-suppresses", "smeared-two-copy-two-suppress", "1l-heads-copy",
    "2l-previous-token-head", "2l-needs-k-composition",
    "causal-layer1-copies-first-block", "causal-anti-induction"})
SETTINGS = StudySettings.of_sizes(setting, COST, CALIBRATION,
    evidence={"default": SCALED_SHOWN},
    evidence_record="at default only where the default run's verdict was the paper run's (the "
                    "results records of notebook 01 at default and at paper, docs/results/data; "
                    "the results page compares them claim by claim)",
    calibrated="at default, the causal thresholds (seen seed 0) and the tolerances these replaced "
               "(seeds 0-2); at paper the same seeds, whose first 2,000 steps are those default "
               "runs",
    judged="default 3-5 and paper 3-12 (seeds_of passes over 0-2 at both sizes)")

SOURCE = ("the induction-heads blog post on repeated letter blocks and its code, "
          "github.com/CG80499/Attention-only-transformers (2023); see docs/sources.md, study 1")
CODE = "the post's public code, comment in run_inference.py"

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

# Tolerances, fixed from the post's own numbers before any run at its setting existed (no paper
# run had finished): each value beside its derivation, printed in docs/sources.md. The post
# gives one run per model, so no seed spread of the source is known; ours at 10,000 steps had
# not been measured when these were written.
TOL: dict[str, float] = {
    "near": 0.165, "near_1l": 0.21, "tie": 0.32, "option_2l": 2.845, "option_smeared": 0.13,
    "doubled_pct": 32.5, "direct": -0.8, "worst": 0.6, "path_k": 0.615, "path_q": 0.565,
    "prev_token": 0.5,
}
DERIVATION = {
    "near": "the post calls its two models' 0.16-nat gap (1.24 vs 1.40) 'very similar': a loss "
            "within that gap of the post's, plus half the last digit it prints (0.005), is near "
            "it: 0.165 nats",
    "near_1l": "as for the others, 0.16 nats, plus half the last digit of the code's 2.6 (0.05): "
               "0.21 nats",
    "tie": "the post's own gap (0.16 nats) doubled: 0.32, about a sixth of the distance from "
           "the post's losses to a uniform guess (3.26 - 1.40 = 1.86 nats; 3.26 - 1.24 = 2.02); "
           "both models must also be below the midpoint of the task's floor and chance, which "
           "untrained models are not",
    "option_2l": "half the post's preference (6.42 - 0.73 = 5.69 nats): 2.845; untrained models "
                 "differ between the options by < 0.01 nats",
    "option_smeared": "half the post's preference (0.99 - 0.73 = 0.26 nats): 0.13; untrained "
                      "models differ by < 0.01 nats",
    "doubled_pct": "half the smaller of the post's increases (+65 %, +86 %): +32.5 %; untrained "
                   "models score both sets alike (ln 26)",
    "direct": "'very close to -1.0': within the last tenth of the metric's range [-1, 1], i.e. "
              "<= -0.8; random W_E W_U scores about 0",
    "worst": "half the post's gap between the plain 1-layer model and the worse of the other "
             "two (2.6 - 1.40 = 1.2 nats): 0.6; untrained models tie",
    "path_k": "half the cost the post's code gives for cutting layer 0 out of layer-1 keys "
              "(2.62 - 1.39 = 1.23 nats): 0.615; untrained models lose < 0.01",
    "path_q": "half the cost the post's code gives for cutting layer 0 out of layer-1 queries "
              "(2.52 - 1.39 = 1.13 nats): 0.565; untrained models lose < 0.01",
    "prev_token": "ours, not the post's: the post gives no score, only that layer 1 uses layer "
                  "0's head 2 'to shift the tokens back'; we read that as most of the head's "
                  "attention (more than all other positions together) on the previous letter, "
                  "> 0.5; uniform causal attention scores about 0.16 on 24 positions",
    "heads": f"'fairly close to -1.0' / copying: closer to -1 (+1) than to 0, i.e. < "
             f"{SUPPRESSING} (> {COPYING}); random heads score near 0",
}
# The source column of a row that is our test of how we read the post, not the post's claim.
OURS = "ours: a test of the post's reading"

# Why a qualitative claim may be judged below the post's 10,000 steps (the row says "scaled").
SCALED = ("a mechanism's presence (which way a circuit's metric points, which block a model "
          "copies), not its size, read on the post's architecture and batch; the row is marked "
          "scaled where our run trains fewer steps than the post")


def numbers(measured: Mapping[str, Any]) -> dict[str, float]:
    """One seed's named numbers (see the module docstring) from ``measured``:
    ``{"models": {name: Model}, "chance": ln 26, "floor": the task's floor, "base": the
    predictors without induction on the mechanism sets, "bounds": {name: the model's
    ``panel.margin_bounds`` there}, "learning": {name: still learning at its end}}`` (``base``,
    ``bounds`` and ``learning`` optional: ``measure.mechanism_baselines``), each ``Model`` with
    its losses, copy scores and (2-layer) pattern scores and path losses filled in."""
    out: dict[str, float] = {"chance.loss": float(measured["chance"]),
                             "floor.loss": float(measured["floor"])}
    for s, b in measured.get("base", {}).items():
        out[f"base.{s}"], out[f"base.{s}.copier"] = float(b["best"]), float(b["copier"])
        out[f"base.{s}.oracle"] = float(b["oracle"])
    for name, m in measured["models"].items():
        short = SHORT.get(name)
        if short is None:
            continue
        out.update({f"{short}.{k}": float(v) for k, v in m.losses.items()})
        for s, b in measured.get("bounds", {}).get(name, {}).items():
            out[f"{short}.{s}.beyond_low"], out[f"{short}.{s}.beyond_high"] = b["best"]
            out[f"{short}.{s}.gain_low"], out[f"{short}.{s}.gain_high"] = b["copier"]
        learning = measured.get("learning", {}).get(name, False)
        out[f"{short}.still_learning"] = math.nan if learning is None else float(learning)
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


def _post(key: str, *args, scaled: bool = False, **kw) -> Claim:
    """A claim the post states at its setting (``POST_SETTING``); ``scaled``: a qualitative
    claim that may be judged at fewer steps (``SCALED``)."""
    if scaled:
        kw.update(numeric=False, scaled=SCALED)
    return Claim(key, *args, setting=POST_SETTING, **kw)


def _near(short: str, target: float, source: str) -> Claim:
    key, tol = f"{short}.test", TOL["near_1l" if short == "1l" else "near"]
    return _post(f"{short}-test-near-source",
                 f"{_label(short)}: test loss near the source's", source,
                 f"{target:.2f} nats" if short != "1l" else f"{target} nats",
                 value=lambda n: n[key], holds=lambda n: abs(n[key] - target) <= tol,
                 unit="nats", reference=_chance, null="chance",
                 null_detail="a uniform guess over the 26 letters, ln 26",
                 test=f"|test loss - {target:.2f}| <= {tol} nats",
                 why=DERIVATION["near_1l" if short == "1l" else "near"])


def _label(short: str) -> str:
    return {"1l": "1-layer model", "smeared": "1-layer smeared model",
            "2l": "2-layer model"}[short]


def _gap(n: Numbers, short: str, worse: str, better: str) -> float:
    return n[f"{short}.{worse}"] - n[f"{short}.{better}"]


def _doubled_pct(n: Numbers, short: str) -> float:
    return 100 * (n[f"{short}.doubled"] / n[f"{short}.test"] - 1)


def _doubled(short: str, source_value: str) -> Claim:
    return _post(f"{short}-doubled-costs", f"{_label(short)}: sequences of doubled letters "
                 "(AABBCC) have a much higher loss than average", "the post, 2A and its table",
                 source_value, value=lambda n: _doubled_pct(n, short),
                 holds=lambda n: _doubled_pct(n, short) >= TOL["doubled_pct"],
                 unit="% over the test loss",
                 test=f"doubled loss >= test loss x (1 + {TOL['doubled_pct']} %)",
                 why=DERIVATION["doubled_pct"])


def _worst_margin(n: Numbers, short: str) -> float:
    """The smallest margin (nats) by which the model beats the best predictor without induction
    on the block-length sets that can tell (``panel.telling``); negative where a predictor does
    better; minus infinity where no set can tell."""
    verdict = verdict_of(n, short)
    base = baselines_of(n)
    return min((base[s]["best"] - n[f"{short}.{s}"] for s in verdict["judged_on"]),
               default=-math.inf)


def _content_based(n: Numbers, short: str) -> bool | None:
    """The maps' rule (``panel.judge`` on the model's own sets): learned, beyond the best
    predictor without induction by ``MARGIN`` on every block-length set that can tell (two at
    least), no set failed, and no margin whose interval could change that. None (the seed is
    *unresolved*) where the rule is ``undecided``: fewer sets can tell than it needs, or a
    margin's interval straddles the cut. The panel could not decide; that is no evidence that
    the model lacks the mechanism."""
    verdict = verdict_of(n, short)
    if verdict["state"] == UNDECIDED:
        return None
    return verdict["label"] == "content"


def _mechanism(short: str) -> Claim:
    return _post(f"{short}-copies-by-content",
                 f"{_label(short)}: copies by content (induction): beyond the predictors "
                 "without induction with a shifted start and other block lengths",
                 f"{OURS} (the post, 3) algorithms in words / 2B; the post never evaluates a "
                 "shifted start or another block length)", "induction heads ('copy the letter "
                 "5 back', 'the first instance of the next token')",
                 value=lambda n: _worst_margin(n, short),
                 holds=lambda n: _content_based(n, short),
                 unit="nats beyond the predictors without induction (worst mechanism set)",
                 reference=lambda n: MARGIN, null="threshold",
                 null_detail=f"{MARGIN} nats beyond the best predictor without induction "
                             "(panel.NULL_FAMILY: the in-context frequency copier, the "
                             "position-only copier, the recency-weighted frequency copier and "
                             "position-only attention, each fitted on the run's own "
                             "predictable letters)",
                 test=f"the maps' label 'content' on the model's own sets: loss on the "
                      f"predictable letters below the in-context frequency copier's by > "
                      f"{MARGIN} nats; on shorter and longer blocks (both must be able to tell) "
                      f"below the best predictor without induction by > {MARGIN} nats; no set "
                      f"failed (a shifted start included: not below the frequency copier by "
                      f"{MARGIN} nats where induction is); no margin's 95 % bootstrap interval "
                      "straddling a cut that would change it (a seed whose sets cannot decide, "
                      "fewer than two that can tell or an interval across the cut, is "
                      "unresolved, not a failure)",
                 why="the maps' rule (study 1's panel): a model with no induction does at best "
                     "what one of these algorithms does, each fitted to the run's own data, so "
                     "beating the best of them says more than any can do; a set where one of "
                     "them gets half of what induction gains cannot tell, and a set induction "
                     "solves and the model does not counts against it; "
                     f"{MARGIN} nats is a likelihood gain of e^0.1 = 1.1 per letter, the "
                     "smallest we call using the mechanism, well above the predictors' own "
                     "spread between independent sets; an untrained model is near a uniform "
                     "guess, above every predictor", ours=True, scaled=True)


def _option(short: str, worse: str, better: str, n: Numbers) -> bool:
    return _gap(n, short, worse, better) >= TOL["option_2l" if short == "2l" else
                                                "option_smeared"]


CLAIMS: tuple[Claim, ...] = (
    _near("2l", POST["induction-2l"]["test"], "the post, table of 2A"),
    _near("smeared", POST["induction-1l-smeared"]["test"], "the post, table of 2A"),
    _near("1l", POST["induction-1l"]["test"], CODE),
    _post("1l-worst", "the plain 1-layer model is the worst in distribution", CODE,
          "2.6 vs 1.24 (smeared) and 1.40 (2-layer)",
          value=lambda n: n["1l.test"] - max(n["smeared.test"], n["2l.test"]),
          holds=lambda n: n["1l.test"] - max(n["smeared.test"], n["2l.test"]) >= TOL["worst"],
          unit="nats (1-layer - best other)",
          test=f"1-layer test loss >= the others' + {TOL['worst']} nats",
          why=DERIVATION["worst"]),
    _post("tie-in-distribution", "the smeared and the 2-layer models perform nearly identically "
          "in distribution", "the post, 2B", "1.24 vs 1.40 nats",
          value=lambda n: abs(n["smeared.test"] - n["2l.test"]),
          holds=lambda n: (abs(n["smeared.test"] - n["2l.test"]) <= TOL["tie"]
                           and max(n["smeared.test"], n["2l.test"])
                           <= (n["chance.loss"] + n["floor.loss"]) / 2),
          unit="nats apart", reference=lambda n: (n["chance.loss"] + n["floor.loss"]) / 2,
          null="threshold", null_detail="the midpoint of the loss floor and a uniform guess",
          test=f"|difference| <= {TOL['tie']} nats, both below the midpoint of floor and chance",
          why=DERIVATION["tie"] + " (the reference shown: that midpoint, 1.98)"),
    _post("2l-option1", "out of distribution the 2-layer model prefers option 1 (copy the "
          "first block)", "the post, table of 2B", "option 1 0.73 < option 2 6.42",
          value=lambda n: _gap(n, "2l", "option2", "option1"),
          holds=lambda n: _option("2l", "option2", "option1", n),
          unit="nats (option 2 - option 1)",
          test=f"option 2 loss - option 1 loss >= {TOL['option_2l']} nats",
          why=DERIVATION["option_2l"], scaled=True),
    _post("smeared-option2", "out of distribution the 1-layer smeared model prefers option 2 "
          "(copy the most recent block)", "the post, table of 2B",
          "option 2 0.73 < option 1 0.99",
          value=lambda n: _gap(n, "smeared", "option1", "option2"),
          holds=lambda n: _option("smeared", "option1", "option2", n),
          unit="nats (option 1 - option 2)",
          test=f"option 1 loss - option 2 loss >= {TOL['option_smeared']} nats",
          why=DERIVATION["option_smeared"], scaled=True),
    _post("behave-differently", "yet out of distribution the two behave completely differently "
          "(each prefers its own option)", "the post, 2B",
          "smeared: option 2; 2-layer: option 1",
          value=lambda n: min(_gap(n, "2l", "option2", "option1"),
                              _gap(n, "smeared", "option1", "option2")),
          holds=lambda n: (_option("2l", "option2", "option1", n)
                           and _option("smeared", "option1", "option2", n)),
          unit="nats (smaller of the two gaps)",
          test="both preferences above, in the same seed",
          why="as the two claims above (half of each of the post's preferences)", scaled=True),
    *(_doubled(short, pct) for short, pct in (("smeared", "+86 %"), ("2l", "+65 %"),
                                                  ("1l", "'much higher' (no number)"))),
    _post("direct-suppresses-all", "the direct path of all three models never repeats the "
          "current letter (copy metric very close to -1)", "the post, 1A / evidence",
          "very close to -1.0",
          value=lambda n: max(n[f"{s}.direct_copy"] for s in MODELS),
          holds=lambda n: max(n[f"{s}.direct_copy"] for s in MODELS) <= TOL["direct"],
          test=f"every model's direct-path copy metric <= {TOL['direct']}",
          why=DERIVATION["direct"], scaled=True),
    _post("2l-layer0-suppresses", "all the heads of the 2-layer model's first layer suppress "
          "what they attend to, as the direct path does", "the post, evidence (its 'layer 1')",
          "'all the heads in layer 1 of the 2-layer model perform a similar function' (to the "
          "direct path's, very close to -1.0)",
          value=lambda n: n["2l.copy_max.L0"],
          holds=lambda n: n["2l.copy_max.L0"] < SUPPRESSING,
          test=f"largest layer-0 head copy metric < {SUPPRESSING}",
          why=DERIVATION["heads"], scaled=True),
    _post("smeared-two-copy-two-suppress", "in the 1-layer smeared model two heads copy (the "
          "letter 5 back) and two suppress (anti-induction)", "the post, 1B and 3)",
          "heads 2 and 3 copy; heads 1 and 4 suppress (copy metric 'fairly close to -1.0')",
          value=lambda n: n["smeared.suppressing_heads"],
          holds=lambda n: n["smeared.copying_heads"] == 2 and n["smeared.suppressing_heads"] == 2,
          unit="suppressing heads",
          test=f"exactly 2 heads with copy metric > {COPYING} and 2 with < {SUPPRESSING}",
          why="the post's count; " + DERIVATION["heads"], scaled=True),
    _post("1l-heads-copy", "the plain 1-layer model's heads copy recent letters",
          "the post, 3) algorithm 1", "copy the last ~10 letters (heads)",
          value=lambda n: n["1l.copying_heads"],
          holds=lambda n: n["1l.copying_heads"] >= 1, unit="copying heads",
          test=f"at least one head with copy metric > {COPYING}", why=DERIVATION["heads"],
          scaled=True),
    _post("2l-previous-token-head", "a first-layer head of the 2-layer model attends to the "
          "previous letter (the head K-composition reads)", f"{OURS} (the post, 2B)",
          "layer 1 uses head 2 of layer 0 'to shift the tokens back' (no score)", ours=True,
          value=lambda n: n["2l.prev_token_max.L0"],
          holds=lambda n: n["2l.prev_token_max.L0"] >= TOL["prev_token"],
          unit="previous-token score",
          test=f"best layer-0 previous-token score >= {TOL['prev_token']}",
          why=DERIVATION["prev_token"], scaled=True),
    _post("2l-needs-k-composition", "the 2-layer model needs K-composition: cutting layer 0 out "
          "of layer-1 keys costs loss", "the post, 2B (K-composition); its code's path losses",
          "2.62 (Q only) vs 1.39 (both)",
          value=lambda n: n["2l.path.q"] - n["2l.path.both"],
          holds=lambda n: n["2l.path.q"] - n["2l.path.both"] >= TOL["path_k"],
          unit="nats (keys cut - both)",
          test=f"loss with layer-1 keys cut from layer 0 >= full loss + {TOL['path_k']}",
          why=DERIVATION["path_k"], scaled=True),
    _post("2l-code-q-path", "the post's code (not its text, which credits K-composition only): "
          "cutting layer 0 out of layer-1 queries costs loss too", CODE,
          "2.52 (K only) vs 1.39 (both)",
          value=lambda n: n["2l.path.k"] - n["2l.path.both"],
          holds=lambda n: n["2l.path.k"] - n["2l.path.both"] >= TOL["path_q"],
          unit="nats (queries cut - both)",
          test=f"loss with layer-1 queries cut from layer 0 >= full loss + {TOL['path_q']}",
          why=DERIVATION["path_q"], scaled=True),
    _mechanism("2l"),
    _mechanism("smeared"),
    *CAUSAL_CLAIMS,
)


# --- the numbers every claim's tests are checked against (tests/test_claims_null.py) ------------
def source_like() -> dict[str, float]:
    """One seed as the post reports it (its numbers, its words made numbers): every claim holds."""
    n = {"chance.loss": math.log(26), "floor.loss": 0.708}
    for short, test, doubled in (("1l", 2.6, 3.6), ("smeared", 1.24, 2.31), ("2l", 1.40, 2.31)):
        n.update({f"{short}.test": test, f"{short}.doubled": doubled,
                  f"{short}.direct_copy": -0.99, f"{short}.predictable": 0.1,
                  f"{short}.shifted": 0.2, f"{short}.shorter": 0.3, f"{short}.longer": 0.3})
    n.update({"base.predictable": 0.0, "base.predictable.copier": 1.85, "base.shifted": 0.0,
              "base.shifted.copier": 2.0, "base.shorter": 1.55, "base.shorter.copier": 1.65,
              "base.longer": 1.8, "base.longer.copier": 2.0, "base.predictable.oracle": 0.3,
              "base.shifted.oracle": 0.6, "base.shorter.oracle": 0.2, "base.longer.oracle": 0.5})
    for short in ("1l", "smeared", "2l"):  # the margins' intervals, 0.05 nats either side
        for s in OUTSIDE:
            beyond, gain = n[f"base.{s}"] - n[f"{short}.{s}"], n[f"base.{s}.copier"] - n[f"{short}.{s}"]
            n.update({f"{short}.{s}.beyond_low": beyond - 0.05, f"{short}.{s}.beyond_high": beyond + 0.05,
                      f"{short}.{s}.gain_low": gain - 0.05, f"{short}.{s}.gain_high": gain + 0.05})
    n.update({"smeared.option1": 0.99, "smeared.option2": 0.73, "2l.option1": 0.73,
              "2l.option2": 6.42, "2l.copy_max.L0": -0.93, "2l.copy_min.L0": -1.0,
              "2l.copy_max.L1": 1.0, "2l.copy_min.L1": 0.9, "smeared.copying_heads": 2.0,
              "smeared.suppressing_heads": 2.0, "1l.copying_heads": 4.0,
              "2l.prev_token_max.L0": 0.9, "2l.path.direct": 3.12, "2l.path.k": 2.52,
              "2l.path.q": 2.62, "2l.path.both": 1.39, "2l.share_k": 0.6, "2l.share_q": 0.2,
              "2l.pref_clean": 4.0, "2l.pref_corrupted": 1.0, "2l.layer1_restores": 0.8,
              "smeared.recent_suppressing": 2.0, "2l.recent_min": -0.5})
    return n


LOSS_SETS = ("test", "doubled", "option1", "option2", "predictable", "shifted", "shorter",
             "longer")


def at_chance(n: Mapping[str, float]) -> dict[str, float]:
    """``n`` moved to what a model that learned nothing gives: every loss at ln 26, copy metrics
    and head counts 0, pattern scores at uniform attention (0.16), effects 0, the margins'
    intervals at the predictors' losses minus ln 26; the predictors without induction
    (``base.*``, no model's) as they were."""
    def null(k: str, v: float) -> float:
        if k.startswith(("chance.", "floor.", "base.")):
            return v
        if k.endswith(("_low", "_high")):
            s = k.split(".")[1]
            bar = n[f"base.{s}"] if ".beyond_" in k else n[f"base.{s}.copier"]
            return bar - n["chance.loss"]
        if k.split(".")[1] in LOSS_SETS or ".path." in k:
            return n["chance.loss"]
        return 0.16 if "prev_token" in k else 0.0
    return {k: null(k, v) for k, v in n.items()}


def floor_and_chance(task) -> tuple[float, float]:
    """(the task's loss floor, ln n_letters): the references of every loss claim."""
    return task.loss_floor, math.log(task.n_letters)
