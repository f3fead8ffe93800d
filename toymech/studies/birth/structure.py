"""Birth's structural measures of one run: what its memories look like, on measures that do not
stop at a ceiling, read through the same matrices whatever the run trained.

The argmax recall probes (``analysis.probes``) read 1.00 once the right target wins every row,
so two runs at 1.00 can hold very different memories. Per memory (W_K¹ previous token, W_K²
induction key, W_O² output copy; ``analysis.probes.memory_reading``) this module reads:

* the recall **margin** (``analysis.probes.row_margins``: the right target's score above its
  best competitor, in units of the competitors' spread) and its **share** of the way from a
  random memory (0) to the paper's hand-built construction (1), both read through the same
  parts: comparable across runs whose embeddings differ in norm;
* the **cosine** of the memory matrix with that construction (0: unrelated, 1: the construction
  up to scale);

each in three readings, so that two arms are compared through the same matrices:

* ``own``: the final memory through the run's own final parts (its W_E, W_pos, W_U and layer
  0's OV, trained or not);
* ``init_parts``: the final memory through the parts the run started from (identical for every
  arm of a seed: the model draws them from the seed whatever trains);
* ``at_init``: the memory at step 0 through those same initial parts (where training started).

W_F keeps its KL probe (``kl.W_F``, through the own parts) and gets its cosine. Beside them, the
**overlap** of the token embeddings' and the positions' top directions (``overlap_k``: half
the width; ``analysis.subspace_overlap``, its random-subspace null k/d in ``overlap.null``), at
the end and at init, and the exact list of matrices the run trained and kept frozen
(``trained_lists``).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Sequence
from typing import Any

import torch
from transformer_lens import HookedTransformer

from ...analysis import overlap_null, subspace_overlap
from ...analysis.probes import memory_parts, memory_reading

PROBED = ("W_K1", "W_K2", "W_O2")
READINGS = ("own", "init_parts", "at_init")
LAYER_MARK = {"0": "¹", "1": "²"}


def matrix_name(param: str) -> str | None:
    """The paper's name of a model parameter (``blocks.1.attn.W_K`` -> ``W_K²``,
    ``embed.W_E`` -> ``W_E``), or None for a bias (never trained here) or an unknown name."""
    parts = param.split(".")
    last = parts[-1]
    if not last.startswith("W_"):
        return None
    if parts[0] == "blocks" and len(parts) >= 4:
        return f"{last}{LAYER_MARK.get(parts[1], parts[1])}"
    return last if parts[0] in ("embed", "pos_embed", "unembed") else None


def trained_lists(model: HookedTransformer, freeze: Sequence[str]) -> tuple[list[str], list[str]]:
    """(trained, frozen): the paper's names (``matrix_name``) of ``model``'s weight matrices that
    a run with the freeze patterns ``freeze`` (``TrainConfig.freeze``) trains and keeps fixed,
    in the order the residual stream meets them."""
    trained, frozen = [], []
    for name in sorted((n for n, _ in model.named_parameters() if matrix_name(n)), key=_order):
        shown = matrix_name(name)
        (frozen if any(fnmatch.fnmatchcase(name, f) for f in freeze) else trained).append(shown)
    return trained, frozen


def _order(param: str) -> tuple:
    """Where a parameter is listed: embeddings, then each layer's W_Q, W_K, W_V, W_O, W_F, then
    the unembedding (the order the residual stream meets them)."""
    parts = param.split(".")
    if parts[0] == "blocks":
        return (1, int(parts[1]), ["W_Q", "W_K", "W_V", "W_O", "W_F"].index(parts[-1])
                if parts[-1] in ("W_Q", "W_K", "W_V", "W_O", "W_F") else 9)
    return ({"embed": 0, "pos_embed": 0, "unembed": 2}.get(parts[0], 3),
            0 if parts[0] == "embed" else 1, 0)


def overlap_k(parts: dict[str, torch.Tensor | None]) -> int:
    """How many top directions of the token embeddings and of the positions the overlap
    compares: half the width d, so that the random null k / d is 1/2 and the overlap can move
    by the comparison's cut toward separate subspaces (0) as well as toward one (1); fewer where
    the vocabulary or the sequence has fewer than d / 2 rows (the null then says so)."""
    E, P = parts["W_E"], parts["W_pos"]
    return max(1, min(E.shape[1] // 2, E.shape[0], *(P.shape[:1] if P is not None else ())))


def _overlap(parts: dict[str, torch.Tensor | None]) -> float:
    P = parts["W_pos"]
    if P is None or float(P.norm()) == 0.0:  # no positions: nothing to overlap
        return float("nan")
    return subspace_overlap(parts["W_E"], P, overlap_k(parts))


@torch.no_grad()
def structure_row(final: HookedTransformer, initial: HookedTransformer, pi_b: torch.Tensor,
                  triggers: torch.Tensor | None, non_triggers: torch.Tensor | None,
                  freeze: Sequence[str]) -> dict[str, Any]:
    """The run's structural columns (module docstring): ``final`` and ``initial`` its models at
    the end and at step 0, ``pi_b`` its task's bigram law, ``triggers`` the tokens its W_K²
    margin reads (None: every token) and ``non_triggers`` those its W_F KL reads, ``freeze`` its
    freeze patterns. Columns ``margin.<m>`` (own), ``margin.<m>.built``, ``margin.<m>.null``,
    ``margin.<m>.init_parts``; ``share.<m>[.<reading>]`` and ``cosine.<m>[.<reading>]`` for the
    readings (own without a suffix); ``kl.W_F``, ``cosine.W_F`` (with a W_F); ``overlap.E_pos``,
    ``overlap.E_pos.at_init``, ``overlap.null``, ``overlap.k``; ``trained`` and ``frozen``."""
    own_parts, init_parts = memory_parts(final), memory_parts(initial)
    reads = {"own": memory_reading(final, own_parts, pi_b, triggers, non_triggers),
             "init_parts": memory_reading(final, init_parts, pi_b, triggers, non_triggers),
             "at_init": memory_reading(initial, init_parts, pi_b, triggers, non_triggers)}
    row: dict[str, Any] = {}
    for m in PROBED:
        own = reads["own"][m]
        row[f"margin.{m}"] = own["margin"]
        row[f"margin.{m}.built"] = own["built"]
        row[f"margin.{m}.null"] = own["null"]
        row[f"margin.{m}.init_parts"] = reads["init_parts"][m]["margin"]
        for reading in READINGS:
            suffix = "" if reading == "own" else f".{reading}"
            row[f"share.{m}{suffix}"] = reads[reading][m]["share"]
            row[f"cosine.{m}{suffix}"] = reads[reading][m]["cosine"]
    if "W_F" in reads["own"]:
        row["kl.W_F"] = reads["own"]["W_F"]["kl"]
        row["cosine.W_F"] = reads["own"]["W_F"]["cosine"]
    row["overlap.E_pos"] = _overlap(own_parts)
    row["overlap.E_pos.at_init"] = _overlap(init_parts)
    k = overlap_k(own_parts)
    row["overlap.null"] = overlap_null(k, own_parts["W_E"].shape[1])
    row["overlap.k"] = k
    trained, frozen = trained_lists(final, freeze)
    row["trained"] = ", ".join(trained)
    row["frozen"] = ", ".join(frozen) or "none"
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in row.items()}


__all__ = ["PROBED", "READINGS", "matrix_name", "overlap_k", "structure_row",
           "trained_lists"]
