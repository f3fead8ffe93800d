"""Study 1's measurement for maps (``toymech.maps``): the map's one test panel, one run's row (its
state, label, margins with their intervals, the algorithm its predictions agree with most, label
stability and causal evidence) and the check that a cell's setting can be measured at all.

Every run of a map is judged on the same panel (``map_panel``: built once from every cell's
task, outside the training range of each, ``panel.build_panel``), against the same family of
predictors without induction fitted on the run's own training data (``panel.NULL_FAMILY``), by
one rule fixed before any map ran (``panel.judge``, with its ``MARGIN`` and the 95 % bootstrap
intervals of the margins over the panel's sequences). A run that did not beat its own training
distribution's frequency copier is ``untrained``; one whose loss was still falling when it
stopped (``analysis.dynamics.history_still_learning``), or whose label changed between half its
steps and its end (below), is ``still learning``; one whose label an interval could change, or
with fewer than two sets that can tell, is ``undecided``. None of them gets a label.

**Stable labels.** A label is final only where the run had it already at half its steps: the
rule is applied again to the stored snapshot nearest to half the run's steps (between a third
and two thirds of them; ``half_step``), and a run whose label (or state) differs there is
``still learning`` (the map's budget policy continues it). ``label_at_half`` and
``beyond_baseline_at_half`` are that snapshot's; ``label_stable`` says whether the two agree
(``yes`` / ``no``; empty where the run kept no snapshot in that range). The margin itself is not required to stay
put: a position run's margin may drift by nats without ever nearing the cut, and what a label
asserts is on which side of the cut each set lies.

**Behavioural fingerprint.** ``agreement.<algorithm>``: how often the run's most probable letter
is the algorithm's (``analysis.agreement``; ties among the algorithm's letters broken at random,
in expectation), over every scored letter of the panel: induction by content (``induction``),
copying ``k`` letters back for every block length the cell or the panel uses (``copy_<k>_back``)
and each member of the null family (``position`` is the absolute-position copier fitted on the
run's own data). ``fingerprint`` names the algorithm it agrees with most, ``fingerprint_agreement``
that agreement: the page shows it beside the label.

**Causal evidence** (2-layer attention-only runs), as a share of the run's advantage over the
best predictor without induction on a block-length set of the panel (its loss ``MARGIN`` or more
below that predictor's; empty where it has no such advantage):

* ``key_resample_share.<set>`` / ``query_resample_share.<set>``: the share of that advantage
  lost when layer 1's keys (queries) read layer 0's output from other sequences of the set at
  the same positions (``analysis.resample_path_losses``: what layer 0 writes about positions
  survives, what it writes about the letters does not). Induction by K-composition loses most
  of its advantage when its keys are resampled; above 1, the cut leaves it worse than the
  predictor.
* ``heads_removing_most.longer`` / ``n_heads_removing_most.longer``: the smallest set of heads
  (every head in the model) whose joint mean ablation removes more than half of the advantage on
  the longer blocks (``analysis.heads_reaching``: exhaustive up to two heads, greedy beyond;
  "not even every head" where ablating them all does not).

``label_earlier_rule`` is the label of the rule before issue 63 (``panel.earlier_label``) beside
the current one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ... import analysis
from ...analysis.baselines import Prediction, copy_back_prediction
from ...analysis.dynamics import history_still_learning
from ...core import Setting, check, seed_for
from ...devices import make_generator
from ...sweep.table import knob_columns
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks
from ..states import LEARNED, STILL_LEARNING, UNDECIDED, UNTRAINED
from .design import experiment
from .dynamics import probe_data
from .panel import (
    BLOCK_LENGTH_SETS,
    MARGIN,
    MECHANISM,
    MEMBERS,
    Panel,
    bars,
    beyond_interval,
    build_panel,
    earlier_label,
    judge,
    margin_bounds,
    margin_draws,
    panel_sets,
    panel_shapes,
    set_predictions,
)

MAP_LABEL = "content"  # the label of a map row that says the mechanism (induction by content) holds
MAP_EVAL_N = 512  # sequences per set a map measures each run on
PANEL_SEED = seed_for(0, "panel")  # the panel's letters: the map's, never a run's
CAUSAL_N = 256  # sequences the causal columns are measured on (the first of each set)
MOST = 0.5  # "removes most of the advantage": more than this share of it
# A text column's empty cell: NaN, which a table reads back alike from its CSV and its Parquet
# (an empty string would not: the CSV gives NaN back).
NONE = float("nan")


@dataclass
class MapPanel:
    """A map's panel (``Panel``) and the predictors already scored on it, per cell task."""

    panel: Panel
    _predictions: dict[Any, dict[str, dict[str, Prediction]]] = field(default_factory=dict,
                                                                      repr=False)

    def describe(self) -> str:
        """The panel in a line, as a table records it: ``shifted 6@9; shorter 3@0; ...``
        (block length @ offset), and the sets that did not fit."""
        text = "; ".join(f"{k} {p}@{o}" for k, (p, o) in self.panel.shapes.items())
        return text + (f"; left out: {', '.join(self.panel.left_out)}" if self.panel.left_out else "")

    def predictions_for(self, task: RepeatedBlocks, trained_on: Batch
                        ) -> dict[str, dict[str, Prediction]]:
        """``panel.set_predictions`` on the training distribution and every panel set for a
        cell's ``task`` (computed once per task; ``trained_on``: that task's predictable
        letters)."""
        key = task.key() if hasattr(task, "key") else repr(task)
        if key not in self._predictions:
            self._predictions[key] = set_predictions(panel_sets(self.panel, trained_on),
                                                     trained_on, task.n_letters)
        return self._predictions[key]


def map_panel(sizes: Sequence[Setting | str]) -> MapPanel:
    """The one panel of a map whose cells are ``sizes`` (each cell's size with its knobs: the
    study's ``with_knobs``): built from every cell's task, outside every cell's training range,
    ``MAP_EVAL_N`` sequences per set drawn from ``PANEL_SEED`` alone."""
    check(isinstance(sizes, (list, tuple)) and len(sizes) > 0, "sizes", sizes,
          "the map's cells (a non-empty list of sizes with their knobs)")
    tasks = [experiment("induction-2l", s, 0).task for s in sizes]
    return MapPanel(build_panel(tasks, MAP_EVAL_N, PANEL_SEED))


def _trained_on(task: RepeatedBlocks, seed: int, n: int) -> Batch:
    """The run's own training distribution, only the predictable letters, from its ``eval``
    stream (built for any block length and offset the task allows)."""
    return task.predictable(n, make_generator(seed_for(seed, "eval"), torch.device("cpu")))


def _learning(run) -> bool | None:
    """Whether the run's logged loss was still falling at its end (None: the log cannot tell;
    False for a bare model, which never trained and is judged untrained first)."""
    if isinstance(run, HookedTransformer):
        return False
    return history_still_learning(run.meta.get("history", []))


@dataclass(frozen=True)
class _Judged:
    """One model judged on the map's sets: its predictions, losses, verdict and margins."""

    predictions: dict[str, Prediction]
    losses: dict[str, float]
    verdict: dict[str, object]
    draws: dict[str, dict[str, torch.Tensor]]

    @property
    def outcome(self) -> str:
        """Its label where it has one, else its state."""
        return str(self.verdict["label"] if self.verdict["state"] == LEARNED
                   else self.verdict["state"])

    def beyond(self, base) -> float:
        tested = [k for k in self.verdict["judged_on"] if k in self.losses]
        return (min(base[k]["best"] - self.losses[k] for k in tested) if tested
                else float("nan"))


def _judge(model: HookedTransformer, sets: dict[str, Batch], preds, base, learning
           ) -> _Judged:
    mine = {k: analysis.model_prediction(model, b) for k, b in sets.items()}
    draws = margin_draws({k: p for k, p in mine.items() if k != "train"}, preds)
    losses = {k: p.loss for k, p in mine.items()}
    return _Judged(mine, losses, judge(losses, base, learning, MARGIN, margin_bounds(draws)),
                   draws)


def half_step(run) -> int | None:
    """The stored snapshot step nearest to half the run's steps, between a third and two thirds
    of them (None: a bare model, or no snapshot there): where ``map_row`` reads the label a
    second time. ``run``: a zoo entry."""
    if isinstance(run, HookedTransformer) or not run.snapshot_steps:
        return None
    steps = int(run.meta.get("train", {}).get("steps", max(run.snapshot_steps)))
    inside = [s for s in run.snapshot_steps if steps / 3 <= s <= 2 * steps / 3]
    return min(inside, key=lambda s: (abs(s - steps / 2), s)) if inside else None


def fingerprint(mine: dict[str, Prediction], preds: dict[str, dict[str, Prediction]],
                sets: dict[str, Batch], ks: Sequence[int], n_vocab: int) -> dict[str, object]:
    """The run's agreement with each candidate algorithm over every scored letter of ``sets``
    (module docstring): {"agreement.<name>": share, "fingerprint": the best-agreeing name,
    "fingerprint_agreement": its share}. ``mine``: the run's predictions on ``sets``;
    ``preds``: ``panel.set_predictions`` of them; ``ks``: the distances of ``copy_<k>_back``;
    ``n_vocab``: the letters."""
    totals: dict[str, float] = {}
    count = 0
    for name, batch in sets.items():
        n = len(mine[name].targets)
        candidates = {"induction": preds[name][MECHANISM],
                      **{f"copy_{k}_back": copy_back_prediction(batch, n_vocab, k) for k in ks},
                      **{m: preds[name][m] for m in MEMBERS}}
        for cand, p in candidates.items():
            totals[cand] = totals.get(cand, 0.0) + n * analysis.agreement(mine[name], p)
        count += n
    shares = {c: v / count for c, v in totals.items()}
    best = max(shares, key=shares.get)  # the first listed on a tie (induction first)
    return {**{f"agreement.{c}": round(v, 4) for c, v in shares.items()}, "fingerprint": best,
            "fingerprint_agreement": round(shares[best], 4)}


def _causal(model: HookedTransformer, sets: dict[str, Batch], base) -> dict[str, object]:
    """The causal columns (module docstring) on the panel's block-length ``sets``."""
    out: dict[str, object] = {}
    small = {k: Batch(b.tokens[:CAUSAL_N], b.scored[:CAUSAL_N]).to(model.cfg.device)
             for k, b in sets.items()}
    for name, batch in small.items():
        full = analysis.set_losses(model, {name: batch})[name]
        advantage = base[name]["best"] - full
        has = advantage > MARGIN
        if model.cfg.n_layers == 2 and model.cfg.attn_only:
            cut = analysis.resample_path_losses(model, batch)
            for kind, path in (("key", "keys"), ("query", "queries")):
                out[f"{kind}_resample_share.{name}"] = (round((cut[path] - full) / advantage, 4)
                                                        if has else float("nan"))
        if name == "longer":
            heads, _ = (analysis.heads_reaching(model, batch, full + MOST * advantage) if has
                        else (None, None))
            out["heads_removing_most.longer"] = (
                " ".join(analysis.head_label(*h) for h in heads) if heads
                else "not even every head" if has else NONE)
            out["n_heads_removing_most.longer"] = len(heads) if heads else float("nan")
    return out


@torch.no_grad()
def map_row(run, size: Setting | str, seed: int, *, panel: MapPanel | None = None
            ) -> dict[str, object]:
    """One map run's row (``toymech.maps``; the module docstring says what each part means):
    its loss on its own training distribution (``loss.train``: the predictable letters) and on
    every set of the map's ``panel`` (``loss.<set>``); per set the best predictor without
    induction (``base.<set>``, ``bar.<set>`` naming it), each member's loss
    (``null.<set>.<member>``) and induction's (``oracle.<set>``); the run's ``state`` (learned /
    untrained / still learning / undecided), its ``label`` (content / partial / position, for
    learned runs only: ``panel.judge``) and the earlier rule's (``label_earlier_rule``), the
    sets that can tell (``judged_on``), that it fails (``failed_on``), why it is undecided
    (``undecided_because``), ``beyond_baseline`` (the smallest margin, in nats, by which it
    beats the best predictor on the sets that can tell) with its 95 % bootstrap interval
    (``beyond_baseline.low``, ``.high``), the panel (``panel``), label stability, the
    fingerprint and the causal columns.

    ``run``: a zoo entry or a bare model (never trained: judged untrained); ``size``: the run's
    size with its cell's knobs; ``seed``: its seed (its ``eval`` stream draws its own training
    distribution); ``panel``: the map's ``map_panel`` (None: a panel of this cell alone)."""
    model = run if isinstance(run, HookedTransformer) else run.model
    task = experiment("induction-2l", size, seed).task  # every model of a cell shares it
    panel = panel if panel is not None else map_panel([size])
    trained_on = _trained_on(task, seed, MAP_EVAL_N)
    sets = panel_sets(panel.panel, trained_on)
    preds = panel.predictions_for(task, trained_on)
    base = bars(preds)
    final = _judge(model, sets, preds, base, _learning(run))
    verdict = dict(final.verdict)
    row: dict[str, object] = {f"loss.{k}": round(v, 4) for k, v in final.losses.items()}
    for k, b in base.items():
        row[f"base.{k}"] = round(b["best"], 4)
        row[f"bar.{k}"] = min(MEMBERS, key=lambda m: b[m])
        row[f"oracle.{k}"] = round(b[MECHANISM], 4)
        row.update({f"null.{k}.{m}": round(b[m], 4) for m in MEMBERS})
    row["panel"] = panel.describe()
    tested = [k for k in verdict["judged_on"] if k in final.losses]
    low, high = beyond_interval(final.draws, tested)
    row.update({"beyond_baseline": round(final.beyond(base), 4),
                "beyond_baseline.low": round(low, 4), "beyond_baseline.high": round(high, 4),
                "beyond.train": round(base["train"]["copier"] - final.losses["train"], 4)})
    # the label at half the run's steps: a label that changed since is not final
    at = half_step(run) if verdict["state"] in (LEARNED, UNDECIDED) else None
    row.update({"half_step": at if at is not None else NONE, "label_at_half": NONE,
                "beyond_baseline_at_half": NONE, "label_stable": NONE})
    if at is not None:
        then = _judge(run.model_at(at), sets, preds, base, False)
        row.update({"label_at_half": then.outcome,
                    "beyond_baseline_at_half": round(then.beyond(base), 4),
                    "label_stable": "yes" if then.outcome == final.outcome else "no"})
        if then.outcome != final.outcome:
            verdict.update(state=STILL_LEARNING, label=None)
    row["state"] = verdict["state"]
    row["label"] = verdict["label"] or ""
    row["label_earlier_rule"] = earlier_label(final.losses, base) or NONE
    row["judged_on"] = " ".join(verdict["judged_on"]) or NONE
    row["failed_on"] = " ".join(verdict["failed_on"]) or NONE
    row["undecided_because"] = verdict["undecided_because"] or NONE
    shown = {k: b for k, b in panel.panel.sets.items()}
    ks = sorted({*task.block_lens, *(p for p, _ in panel.panel.shapes.values())})
    row.update(fingerprint({k: final.predictions[k] for k in shown}, preds, shown, ks,
                           task.n_letters))
    row.update(_causal(model, {k: b for k, b in shown.items() if k in BLOCK_LENGTH_SETS}, base))
    return row


def map_evidence(table: pd.DataFrame) -> str:
    """The evidence behind a map's labels in words: the panel every run was judged on (and the
    sets it left out because they do not fit the map's shortest sequences), then per cell (runs
    that share the experiment and every knob: a label is never compared across a knob that
    moves with it), per label of its learned runs: how many runs, the algorithm their
    predictions agree with most (``fingerprint``, the commonest, with the median agreement) and,
    for 2-layer runs, the median share of their advantage over the best predictor without
    induction on the panel's longer blocks that resampling layer 0's output removes in layer 1's
    keys and queries and the median size of the smallest head set whose mean ablation removes
    most of it. Empty where the table has no fingerprint.

    ``table``: the map's table (one row per run, with its ``state``, ``label`` and knobs)."""
    if "fingerprint" not in table or "state" not in table:
        return ""
    panels = sorted({str(p) for p in table.get("panel", pd.Series(dtype=str)).dropna()})
    said = ("Judged on the panel " + " / ".join(panels)
            + (" (a set left out does not fit the map's shortest sequences)"
               if any("left out" in p for p in panels) else "") + ". ") if panels else ""
    learned = table[table["state"].astype(str) == LEARNED]
    columns = list(knob_columns(table).values())
    parts = []
    for key, runs in learned.groupby(["experiment", *columns], sort=False, dropna=False):
        cell = ", ".join(f"{name} {value}" for name, value in
                         zip(["experiment", *knob_columns(table)], key))
        parts.append(f"{cell}: " + "; ".join(
            _label_evidence(label, rows) for label, rows in
            runs.groupby(runs["label"].astype(str), sort=True)))
    if not parts:
        return said.strip()
    causal = ("; for 2-layer runs the share of their advantage over the best predictor "
              "without induction on the panel's longer blocks that resampling layer 0's output "
              "from other sequences removes in layer 1's keys and in its queries, and the size "
              "of the smallest head set whose mean ablation removes most of it (medians)"
              if _numbers(learned, "key_resample_share.longer").notna().any() else "")
    return (said + "Per cell (runs sharing every knob), each label's learned runs: the "
            f"algorithm their predictions agree with most (median agreement){causal}. "
            + " | ".join(parts) + ".")


def _label_evidence(label: str, rows: pd.DataFrame) -> str:
    """One label's runs of one cell in words (``map_evidence``)."""
    best = rows["fingerprint"].astype(str).mode().iloc[0]
    agree = pd.to_numeric(rows["fingerprint_agreement"], errors="coerce").median()
    text = f"{label} ({len(rows)} runs): fingerprint {best} {agree:.2f}"
    # a map of 1-layer models has no resample or head columns (they are 2-layer measures)
    shares = _numbers(rows, "key_resample_share.longer")
    if shares.notna().any():
        queries = _numbers(rows, "query_resample_share.longer").median()
        text += f", keys {shares.median():.2f}, queries {queries:.2f}"
    heads = _numbers(rows, "n_heads_removing_most.longer")
    if heads.notna().any():
        text += f", heads {heads.median():g}"
    return text


def _numbers(rows: pd.DataFrame, column: str) -> pd.Series:
    """``rows``' ``column`` as numbers (all NaN where the table has no such column)."""
    if column not in rows:
        return pd.Series(float("nan"), index=rows.index)
    return pd.to_numeric(rows[column], errors="coerce")


def map_check(size: Setting | str) -> None:
    """Refuse (ValueError) a setting ``size`` (a map cell's variant) that ``map_row`` could not
    measure, before anything trains: the run's own sets and a panel of the cell alone are drawn
    for a few sequences."""
    task = experiment("induction-2l", size, 0).task
    probe_data(task, size, 0, "cpu", eval_n=1, n_pattern=1, n_causal=2)
    shapes, _ = panel_shapes([task])
    check(bool(shapes), "knobs", size, "a setting whose sequences fit at least one panel set "
          "(a block twice and one more letter)")


__all__ = ["LEARNED", "MAP_EVAL_N", "MAP_LABEL", "MapPanel", "STILL_LEARNING", "UNDECIDED",
           "UNTRAINED", "fingerprint", "half_step", "map_check", "map_evidence", "map_panel",
           "map_row"]
