"""Study 1's measurement for maps (``toymech.maps``): one run's row, its label and the check
that a cell's setting can be measured at all."""

from __future__ import annotations

import math

import torch
from transformer_lens import HookedTransformer

from ... import analysis
from .claims import floor_and_chance
from .design import experiment
from .dynamics import probe_data
from .measure import MECHANISM_SETS, mechanism_label

MAP_LABEL = "content"  # the label of a map row that says the mechanism (induction by content) holds
MAP_EVAL_N = 512  # sequences per set a map measures each run on (its eval stream's first ones)


@torch.no_grad()
def map_row(run, size: str, seed: int) -> dict[str, object]:
    """One map run's row (``toymech.maps``): its losses on the training distribution (``test``,
    ``predictable``) and on the mechanism sets of its own task (each outside its training
    range: ``shifted``, ``shorter``, ``longer``), whether each is solved (yes / no: below half
    the chance loss), and its ``mechanism_label`` (content / position / neither). ``run``: a zoo
    entry or a bare model; ``size``: the run's size with its variant's knobs; ``seed``: its
    seed (its ``eval`` stream)."""
    model = run if isinstance(run, HookedTransformer) else run.model
    task = experiment("induction-2l", size, seed).task  # every model of a variant shares it
    sets = {k: v for k, v in probe_data(task, size, seed, model.cfg.device,
                                        eval_n=MAP_EVAL_N, n_causal=2).sets.items()
            if k in ("test", *MECHANISM_SETS)}
    losses = analysis.set_losses(model, sets)
    _, chance = floor_and_chance(task)
    row: dict[str, object] = {f"loss.{k}": round(v, 4) for k, v in losses.items()}
    row.update({f"solved.{k}": "yes" if losses.get(k, math.inf) < chance / 2 else "no"
                for k in MECHANISM_SETS})
    row["label"] = mechanism_label(losses, chance)
    return row


def map_check(size: str) -> None:
    """Refuse (ValueError) a setting ``size`` (a map cell's variant) that ``map_row`` could not
    measure, before anything trains: the sets it measures on are drawn once for a few
    sequences (a sequence too short for the two-block sets, say)."""
    task = experiment("induction-2l", size, 0).task
    probe_data(task, size, 0, "cpu", eval_n=1, n_pattern=1, n_causal=2)
