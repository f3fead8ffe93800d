"""Study 3's causal tests: where a random (or normal) transformer keeps the solution of a task.

Pairs of inputs with different answers: the task's test sequences, each paired with another
test sequence that is scored at the same positions but whose answer differs there
(``answer_pairs``). The metric is the logit difference between the clean and the corrupted
answer at those positions. Each layer's attention and MLP output, and each head's output, is
patched from the clean into the corrupted run (denoising): the share of the gap each restores.

How spread out the effect is (``analysis.patching.spread`` over the heads' effects):
``top_share`` = the top head's |effect| over the sum, ``effective_number`` = (Σ|e|)² / Σe²
(1: one head; n: spread evenly over n). Shown beside subspace concentration (Zhong & Andreas,
who ask which parts of a random transformer carry a task; they make no patching claim, so this
module has no claim of its own: its numbers are descriptive).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch
from transformer_lens import HookedTransformer

from ...analysis import patching as P
from ...core import check, seed_for
from ...devices import make_generator
from ...tasks.base import Task

CAUSAL_CLAIMS: tuple = ()  # the source makes no causal claim (see the module docstring)


@dataclass(frozen=True)
class AnswerPairs:
    """clean / corrupted: [n, T] tokens scored at the same positions; good / bad: [n, T] the
    clean and the corrupted answer aligned with the logits (position p predicts p + 1); mask:
    [n, T] the positions where the two answers differ."""

    clean: torch.Tensor
    corrupted: torch.Tensor
    good: torch.Tensor
    bad: torch.Tensor
    mask: torch.Tensor

    def metric(self) -> P.Metric:
        return P.logit_diff(self.good, self.bad, self.mask)


def answer_pairs(task: Task, seed: int, n: int = 256, device: str | torch.device = "cpu"
                 ) -> AnswerPairs:
    """Up to ``n`` pairs from the task's test set (the ``probe`` stream of ``seed``): sequences
    grouped by which positions are scored, each paired with the next of its group; pairs whose
    answers agree everywhere are dropped."""
    check(isinstance(n, int) and n >= 2, "n", n, "an integer >= 2")
    gen = make_generator(seed_for(seed, "probe"), torch.device("cpu"))
    batch = task.eval_sets(max(2 * n, 64), gen)["test"]
    tokens, scored = batch.tokens.cpu(), batch.scored.cpu()
    keys = [tuple(row.nonzero()[:, 0].tolist()) for row in scored]
    groups: dict[tuple, list[int]] = {}
    for i, k in enumerate(keys):
        groups.setdefault(k, []).append(i)
    clean_idx, corr_idx = [], []
    for members in groups.values():
        for a, b in zip(members, members[1:] + members[:1]):
            if a != b:
                clean_idx.append(a)
                corr_idx.append(b)
    pred = torch.zeros_like(scored)
    pred[:, :-1] = scored[:, 1:]  # logits at p predict the scored token p + 1
    nxt = torch.cat([tokens[:, 1:], tokens[:, :1]], 1)
    ci, di = torch.tensor(clean_idx, dtype=torch.long), torch.tensor(corr_idx, dtype=torch.long)
    differ = pred[ci] & (nxt[ci] != nxt[di])
    keep = differ.any(1).nonzero()[:, 0][:n]
    check(len(keep) >= 2, "task", task.name, "a test set with answers that differ")
    ci, di = ci[keep], di[keep]
    dev = torch.device(device)
    return AnswerPairs(tokens[ci].to(dev), tokens[di].to(dev), nxt[ci].to(dev),
                       nxt[di].to(dev), differ[keep].to(dev))


def patch_effects(model: HookedTransformer, pairs: AnswerPairs) -> dict[str, Any]:
    """``heads`` [n_layers, n_heads] and per layer ``attn_out`` [n_layers] (and ``mlp_out``
    for models with MLPs): the share of the clean - corrupted logit gap each patch restores;
    ``gap`` = that gap (logits), ``clean`` the clean run's logit difference."""
    metric = pairs.metric()
    heads = P.patch_heads(model, pairs.clean, pairs.corrupted, metric)
    out: dict[str, Any] = {"gap": heads.gap, "clean": heads.clean, "heads": heads.effect}
    out["attn_out"] = P.patch_layers(model, pairs.clean, pairs.corrupted, metric,
                                     site="attn_out").effect
    if not model.cfg.attn_only:
        out["mlp_out"] = P.patch_layers(model, pairs.clean, pairs.corrupted, metric,
                                        site="mlp_out").effect
    return out


def causal_numbers(models: Mapping[tuple[str, str], HookedTransformer],
                   pairs: Mapping[str, AnswerPairs]) -> dict[str, float]:
    """One seed's numbers keyed ``<task>.<mode>.<quantity>``: ``gap``, ``top_share``,
    ``effective_number``, ``attn_L{l}`` / ``mlp_L{l}`` (layer effects)."""
    out: dict[str, float] = {}
    for (task_name, mode), model in models.items():
        e = patch_effects(model, pairs[task_name])
        key = f"{task_name}.{mode}"
        out[f"{key}.gap"] = e["gap"]
        out.update({f"{key}.{k}": v for k, v in P.spread(e["heads"]).items()})
        for site in ("attn_out", "mlp_out"):
            if site in e:
                out.update({f"{key}.{site[:-4]}_L{l}": float(v) for l, v in enumerate(e[site])})
    return out


def spread_table(numbers: Mapping[str, float]) -> pd.DataFrame:
    """``causal_numbers`` as one row per (task, mode): the gap, the spread over heads and each
    layer's attention / MLP effect."""
    rows: dict[tuple[str, str], dict[str, float]] = {}
    for key, value in numbers.items():
        task_name, mode, quantity = key.split(".", 2)
        rows.setdefault((task_name, mode), {})[quantity] = value
    df = pd.DataFrame.from_dict(rows, orient="index")
    df.index.names = ["task", "mode"]
    return df.rename(columns=_spread_label).round(3)


def spread_note(numbers: Mapping[str, float]) -> str:
    """Whether ``spread_table``'s shares mean anything: a share is of the clean - corrupted logit
    gap, so where that gap is not positive (the clean run does not prefer its own answer: the
    model has not learned the retrieval) the shares divide by a gap that is not there."""
    gaps = {key.rsplit(".", 1)[0]: v for key, v in numbers.items() if key.endswith(".gap")}
    flat = [f"{name.replace('.', ', ')} (gap {v:.3f} logits)" for name, v in gaps.items()
            if not v > 0]
    if not flat:
        return ("Every model here prefers its clean answer (a positive gap), so each share is a "
                "part of an effect that exists.")
    return ("The clean run does not prefer its own answer for " + "; ".join(flat) + ": the "
            "model has not learned the retrieval, so the shares below divide by a gap that is "
            "not there and say nothing about where an answer is kept.")


_SPREAD = {"gap": "answer logit gap, clean - corrupted (logits)",
           "top_share": "share of the heads' effect in the top head",
           "effective_number": "effective number of heads carrying it"}
_SITE = {"attn": "attention", "mlp": "MLP"}


def _spread_label(quantity: str) -> str:
    """A reader's name for a ``spread_table`` column (``attn_L1``: "layer 1 attention: share of
    the gap restored")."""
    if quantity in _SPREAD:
        return _SPREAD[quantity]
    site, _, layer = quantity.partition("_L")
    if site in _SITE and layer.isdigit():
        return f"layer {layer} {_SITE[site]}: share of the gap restored"
    return quantity


def causal_metrics(model: HookedTransformer, pairs: AnswerPairs) -> dict[str, float]:
    """The main effects for one training snapshot: ``gap``, ``top_share``,
    ``effective_number`` and the layer effects (one forward pass per head and layer)."""
    e = patch_effects(model, pairs)
    out = {"gap": e["gap"], **P.spread(e["heads"])}
    for site in ("attn_out", "mlp_out"):
        if site in e:
            out.update({f"{site[:-4]}_L{l}": float(v) for l, v in enumerate(e[site])})
    return out
