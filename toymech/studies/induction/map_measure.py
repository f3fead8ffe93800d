"""Study 1's measurement for maps (``toymech.maps``): the map's one test panel, one run's row (its
state, label, gaps to the predictors without the mechanism and causal evidence) and the check
that a cell's setting can be measured at all.

Every run of a map is judged on the same panel (``map_panel``: built once from every cell's
task, outside the training range of each, ``panel.build_panel``), against the same predictors
without the mechanism (``panel.baselines``: the in-context frequency copier and the position-only
copier fitted on the run's own training data), by one rule fixed before any map ran
(``panel.judge`` and its ``MARGIN``). A run that did not beat its own training distribution's
frequency copier is ``untrained``, one whose loss was still falling when it stopped is ``still
learning`` (``analysis.dynamics.history_still_learning``); neither gets a mechanism label.

The row's causal columns say what carries the copying in the run itself:

* ``kcut.<set>`` / ``qcut.<set>``: the loss added on the set when layer 0's output is removed
  from layer 1's keys / queries (``analysis.composition_path_losses``; 2-layer attention-only
  models), on the run's training distribution and on the panel's ``longer`` set. A model that
  copies by content through an induction head needs K-composition: its ``kcut`` is large.
* ``ablate.top`` / ``ablate.top_cost``: the head whose zero-ablation costs the most loss on the
  training distribution and that cost; ``ablate.heads``: how many heads cost more than ``MARGIN``
  each (the heads the copying runs through).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

import torch
from transformer_lens import HookedTransformer

from ... import analysis
from ...analysis.dynamics import history_still_learning
from ...core import check, seed_for
from ...devices import make_generator
from ...tasks import Batch
from ...tasks.repeated_blocks import RepeatedBlocks
from ..states import LEARNED, STILL_LEARNING, UNTRAINED
from .design import experiment
from .dynamics import probe_data
from .panel import MARGIN, Panel, baselines, build_panel, judge, panel_shapes

MAP_LABEL = "content"  # the label of a map row that says the mechanism (induction by content) holds
MAP_EVAL_N = 512  # sequences per set a map measures each run on
PANEL_SEED = seed_for(0, "panel")  # the panel's letters: the map's, never a run's
CAUSAL_N = 256  # sequences the causal columns are measured on (the first of each set)


@dataclass
class MapPanel:
    """A map's panel (``Panel``) and the baselines already computed on it, per cell task."""

    panel: Panel
    _baselines: dict[Any, dict[str, dict[str, float]]] = field(default_factory=dict, repr=False)

    def describe(self) -> str:
        """The panel in a line, as a table records it: ``shifted 6@9; shorter 3@0; ...``
        (block length @ offset), and the sets that did not fit."""
        text = "; ".join(f"{k} {p}@{o}" for k, (p, o) in self.panel.shapes.items())
        return text + (f"; left out: {', '.join(self.panel.left_out)}" if self.panel.left_out else "")

    def baselines_for(self, task: RepeatedBlocks, trained_on: Batch) -> dict[str, dict[str, float]]:
        """``panel.baselines`` for a cell's ``task`` (computed once per task; ``trained_on``:
        that task's predictable letters)."""
        key = task.key() if hasattr(task, "key") else repr(task)
        if key not in self._baselines:
            self._baselines[key] = baselines(self.panel, trained_on, task.n_letters)
        return self._baselines[key]


def map_panel(sizes: Sequence[Any]) -> MapPanel:
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


def _causal(model: HookedTransformer, sets: dict[str, Batch]) -> dict[str, object]:
    """The causal columns (module docstring) on ``sets`` (``train`` and, where built, ``longer``)."""
    out: dict[str, object] = {}
    small = {k: Batch(b.tokens[:CAUSAL_N], b.scored[:CAUSAL_N]).to(model.cfg.device)
             for k, b in sets.items()}
    if model.cfg.n_layers == 2 and model.cfg.attn_only:
        for name, batch in small.items():
            paths = analysis.composition_path_losses(model, batch)
            out[f"kcut.{name}"] = round(paths["Q-composition"] - paths["K and Q"], 4)
            out[f"qcut.{name}"] = round(paths["K-composition"] - paths["K and Q"], 4)
    ablated = analysis.ablation_losses(model, {"train": small["train"]})
    base = ablated.pop("none")["train"]
    costs = {head: losses["train"] - base for head, losses in ablated.items()}
    top = max(costs, key=costs.get)
    out.update({"ablate.top": top, "ablate.top_cost": round(costs[top], 4),
                "ablate.heads": sum(c > MARGIN for c in costs.values())})
    return out


@torch.no_grad()
def map_row(run, size: str, seed: int, *, panel: MapPanel | None = None) -> dict[str, object]:
    """One map run's row (``toymech.maps``): its loss on its own training distribution
    (``loss.train``: the predictable letters) and on every set of the map's ``panel``
    (``loss.<set>``), the best predictor without the mechanism on each (``base.<set>``), the
    run's ``state`` (learned / untrained / still learning), its ``label`` (content / partial /
    position, for learned runs only: ``panel.judge``), the block-length sets that can tell
    content from position for it (``judged_on``: ``panel.telling``), ``beyond_baseline`` (the
    smallest margin, in nats, by which it beats the best predictor without the mechanism on
    those sets: above ``MARGIN`` on all of them is ``content``), the panel it was judged on
    (``panel``) and the causal columns (module docstring).

    ``run``: a zoo entry or a bare model (never trained: judged untrained); ``size``: the run's
    size with its cell's knobs; ``seed``: its seed (its ``eval`` stream draws its own training
    distribution); ``panel``: the map's ``map_panel`` (None: a panel of this cell alone)."""
    model = run if isinstance(run, HookedTransformer) else run.model
    task = experiment("induction-2l", size, seed).task  # every model of a cell shares it
    panel = panel if panel is not None else map_panel([size])
    trained_on = _trained_on(task, seed, MAP_EVAL_N)
    sets = {"train": trained_on, **panel.panel.sets}
    losses = analysis.set_losses(model, {k: b.to(model.cfg.device) for k, b in sets.items()})
    base = panel.baselines_for(task, trained_on)
    verdict = judge(losses, base, _learning(run))
    row: dict[str, object] = {f"loss.{k}": round(v, 4) for k, v in losses.items()}
    row.update({f"base.{k}": round(b["best"], 4) for k, b in base.items()})
    row["panel"] = panel.describe()
    row["state"] = verdict["state"]
    row["label"] = verdict["label"] or ""
    tested = [k for k in verdict["judged_on"] if k in losses]
    row["judged_on"] = " ".join(verdict["judged_on"])
    row["beyond_baseline"] = (round(min(base[k]["best"] - losses[k] for k in tested), 4)
                              if tested else float("nan"))
    row["beyond.train"] = round(base["train"]["copier"] - losses["train"], 4)
    row.update(_causal(model, {k: sets[k] for k in ("train", "longer") if k in sets}))
    return row


def map_evidence(table) -> str:
    """The causal evidence of a map's table in words: per label of the learned 2-layer runs, how
    many runs and the median cost of cutting layer 0 out of layer 1's keys (``kcut``) and
    queries (``qcut``) on their training distribution and on the panel's longer blocks, and the
    median count of heads each carrying more than ``MARGIN`` of the loss (``ablate.heads``).
    Empty where the table has no such columns.

    ``table``: the map's table (one row per run, with its ``state`` and ``label``)."""
    if "kcut.train" not in table or "state" not in table:
        return ""
    learned = table[(table["state"].astype(str) == LEARNED) & table["kcut.train"].notna()]
    parts = []
    for label, runs in learned.groupby(learned["label"].astype(str), sort=True):
        cuts = [f"{c} " + " and ".join(f"{runs[f'{c}.{s}'].median():.2f} ({s})"
                                        for s in ("train", "longer")
                                        if f"{c}.{s}" in runs and runs[f"{c}.{s}"].notna().any())
                for c in ("kcut", "qcut") if f"{c}.train" in runs]
        heads = runs["ablate.heads"].median() if "ablate.heads" in runs else float("nan")
        parts.append(f"{label} ({len(runs)} runs): " + ", ".join(cuts)
                     + (f", heads carrying the loss {heads:g}" if heads == heads else ""))
    if not parts:
        return ""
    return ("Causal evidence, median over the learned 2-layer runs of each label (nats of loss "
            "added when layer 0 is cut out of layer 1's keys, kcut, or queries, qcut, on the "
            "run's own sequences (train) and the panel's longer blocks): " + "; ".join(parts) + ".")


def map_check(size: str) -> None:
    """Refuse (ValueError) a setting ``size`` (a map cell's variant) that ``map_row`` could not
    measure, before anything trains: the run's own sets and a panel of the cell alone are drawn
    for a few sequences."""
    task = experiment("induction-2l", size, 0).task
    probe_data(task, size, 0, "cpu", eval_n=1, n_pattern=1, n_causal=2)
    shapes, _ = panel_shapes([task])
    check(bool(shapes), "knobs", size, "a setting whose sequences fit at least one panel set "
          "(a block twice and one more letter)")


__all__ = ["LEARNED", "MAP_EVAL_N", "MAP_LABEL", "MapPanel", "STILL_LEARNING", "UNTRAINED",
           "map_check", "map_evidence", "map_panel", "map_row"]
