"""Behavioural evaluation: loss per named set, per position, a model's distribution at every
scored target (``model_prediction``, compared target by target with the predictors of
``analysis.baselines``), the loss under head ablations (zero or mean; the smallest set of heads
whose mean ablation takes the loss to a given level: ``heads_reaching``), and with layer 0's
output removed from layer 1's queries and/or keys (``composition_path_losses``) or replaced by
that of other sequences at the same positions (``resample_path_losses``)."""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

import torch
from jaxtyping import Float
from transformer_lens import HookedTransformer

from ..core import check
from ..tasks.base import Batch, masked_cross_entropy
from .baselines import Prediction
from .heads import head_label


@torch.no_grad()
def set_losses(model: HookedTransformer, sets: dict[str, Batch], fwd_hooks=()) -> dict[str, float]:
    """Mean cross-entropy (nats) on the scored targets of each named set.

    ``model`` is run on each batch of ``sets`` ({name: Batch}), with ``fwd_hooks``
    (TransformerLens (name, hook) pairs, e.g. ``head_ablation_hooks``) attached for that run
    only."""
    out = {}
    with model.hooks(fwd_hooks=list(fwd_hooks)):
        for name, batch in sets.items():
            batch = batch.to(model.cfg.device)
            out[name] = float(masked_cross_entropy(model(batch.tokens), batch))
    return out


@torch.no_grad()
def per_position_loss(model: HookedTransformer, batch: Batch) -> Float[torch.Tensor, "seq_minus_1"]:  # noqa: F821 (jaxtyping)
    """Mean loss of the target at each position 1..seq-1 (NaN where nothing is scored).

    ``model`` on the scored targets of ``batch``."""
    batch = batch.to(model.cfg.device)
    nll = masked_cross_entropy(model(batch.tokens), batch, reduction="none")
    return nll.nanmean(0).cpu()


def head_ablation_hooks(heads: Iterable[tuple], n_layers: int, n_heads: int,
                        means: dict[int, torch.Tensor] | None = None):
    """Forward hooks on ``hook_z`` that ablate each head of ``heads``: ``(layer, head)`` or
    ``(layer, head, "zero")`` sets its output z to 0; ``(layer, head, "mean")`` puts
    ``means[layer][:T, head]`` there (a [T, n_heads, d_head] mean output over reference
    sequences).

    ``n_layers`` and ``n_heads``: the model's (each head is checked against them)."""
    hooks = []
    for layer, head, *rest in heads:
        kind = rest[0] if rest else "zero"
        check(0 <= layer < n_layers and 0 <= head < n_heads, "head", (layer, head),
              f"(layer, head) with layer < {n_layers} and head < {n_heads}")
        check(kind in ("zero", "mean") and (kind == "zero" or (means and layer in means)),
              "kind", kind, "zero, or mean with the layer's mean head outputs given")

        def ablate(z, hook, head=head, kind=kind, layer=layer):
            z[:, :, head] = 0.0 if kind == "zero" else means[layer][: z.shape[1], head].to(z.dtype)
            return z

        hooks.append((f"blocks.{layer}.attn.hook_z", ablate))
    return hooks


def ablation_losses(model: HookedTransformer, sets: dict[str, Batch]
                    ) -> dict[str, dict[str, float]]:
    """Loss of every set with no ablation ('none') and with each single head zero-ablated.

    ``model`` on the scored targets of each batch of ``sets`` ({name: Batch})."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    out = {"none": set_losses(model, sets)}
    for layer in range(L):
        for head in range(H):
            out[head_label(layer, head)] = set_losses(
                model, sets, head_ablation_hooks([(layer, head)], L, H))
    return out


@torch.no_grad()
def composition_path_losses(model: HookedTransformer, batch: Batch) -> dict[str, float]:
    """Loss when layer 1's queries and/or keys see only the direct path (layer 0's attention
    output removed from their inputs); values always see everything.

    'direct only': neither Q nor K sees layer 0; 'K-composition': only keys see it;
    'Q-composition': only queries; 'K and Q': both (the unmodified model).

    The loss is ``model``'s on the scored targets of ``batch``.
    """
    check(model.cfg.n_layers == 2 and model.cfg.attn_only, "model", model.cfg.n_layers,
          "a 2-layer attention-only model")
    batch = batch.to(model.cfg.device)
    _, cache = model.run_with_cache(batch.tokens, names_filter="blocks.0.hook_attn_out")
    layer0 = cache["blocks.0.hook_attn_out"][:, :, None, :]  # [batch, pos, 1, d_model]

    def remove_layer0(x, hook):
        return x - layer0

    keep = {"direct only": ("q", "k"), "K-composition": ("q",), "Q-composition": ("k",),
            "K and Q": ()}
    out = {}
    model.set_use_split_qkv_input(True)
    try:
        for name, strip in keep.items():
            hooks = [(f"blocks.1.hook_{s}_input", remove_layer0) for s in strip]
            out[name] = set_losses(model, {"x": batch}, hooks)["x"]
    finally:
        model.set_use_split_qkv_input(False)
    return out


@torch.no_grad()
def model_prediction(model: HookedTransformer, batch: Batch) -> Prediction:
    """``model``'s distribution at every scored target of ``batch`` (row-major over
    ``batch.target_mask``, the order of ``analysis.baselines``' predictors), on the CPU."""
    batch = batch.to(model.cfg.device)
    log_probs = torch.log_softmax(model(batch.tokens)[:, :-1].float(), -1)
    rows, col = torch.nonzero(batch.target_mask, as_tuple=True)
    return Prediction(log_probs[rows, col].cpu(), batch.tokens[rows, col + 1].cpu(), rows.cpu(),
                      int(batch.tokens.shape[0]))


RESAMPLED = {"keys": ("k",), "queries": ("q",), "both": ("k", "q")}


@torch.no_grad()
def resample_path_losses(model: HookedTransformer, batch: Batch, shift: int = 1
                         ) -> dict[str, float]:
    """The loss on ``batch`` when layer 1's keys, queries or both read layer 0's attention
    output from OTHER sequences of the batch at the same positions (resample ablation of the
    path: sequence ``i`` gets that of sequence ``(i + shift) mod n``, a fixed derangement), the
    residual stream's other terms and layer 1's values untouched: {"none", "keys", "queries",
    "both"}. What layer 0 writes about positions survives (every sequence of a set has the same
    shape), what it writes about the letters does not; unlike removing layer 0's output
    (``composition_path_losses``), the inputs stay on the model's own distribution.

    ``model``: a 2-layer attention-only model; ``shift``: 1 to n - 1 for n sequences."""
    check(model.cfg.n_layers == 2 and model.cfg.attn_only, "model", model.cfg.n_layers,
          "a 2-layer attention-only model")
    n = int(batch.tokens.shape[0])
    check(isinstance(shift, int) and 1 <= shift < n, "shift", shift,
          f"an integer in 1..{n - 1} (another sequence of the batch's {n})")
    batch = batch.to(model.cfg.device)
    _, cache = model.run_with_cache(batch.tokens, names_filter="blocks.0.hook_attn_out")
    own = cache["blocks.0.hook_attn_out"]
    delta = (torch.roll(own, -shift, 0) - own)[:, :, None, :]  # [batch, pos, 1, d_model]

    def resample(x, hook):
        return x + delta

    out = {"none": set_losses(model, {"x": batch})["x"]}
    old = model.cfg.use_split_qkv_input
    model.set_use_split_qkv_input(True)
    try:
        for name, inputs in RESAMPLED.items():
            hooks = [(f"blocks.1.hook_{s}_input", resample) for s in inputs]
            out[name] = set_losses(model, {"x": batch}, hooks)["x"]
    finally:
        model.set_use_split_qkv_input(old)
    return out


@torch.no_grad()
def mean_head_outputs(model: HookedTransformer, batch: Batch) -> dict[int, torch.Tensor]:
    """{layer: [T, n_heads, d_head]} each head's output z of ``model`` averaged over ``batch``'s
    sequences at each position (what ``head_ablation_hooks`` puts in place of a mean-ablated
    head)."""
    _, cache = model.run_with_cache(batch.tokens.to(model.cfg.device),
                                    names_filter=lambda n: n.endswith("hook_z"))
    return {layer: cache[f"blocks.{layer}.attn.hook_z"].mean(0)
            for layer in range(model.cfg.n_layers)}


@torch.no_grad()
def heads_reaching(model: HookedTransformer, batch: Batch, target: float, exhaustive: int = 2
                   ) -> tuple[tuple[tuple[int, int], ...] | None, float]:
    """The smallest set of heads whose joint mean ablation (``mean_head_outputs`` of ``batch``)
    raises ``model``'s loss on ``batch`` to at least ``target``, and that loss: every set of
    1 to ``exhaustive`` heads is tried (the first that reaches it, in head order, at the
    smallest size), then the best such set is grown one head at a time, each time by the head
    that raises the loss most (a greedy bound beyond ``exhaustive``). (None, the loss with every
    head ablated) when even all the heads do not reach it."""
    check(isinstance(exhaustive, int) and exhaustive >= 1, "exhaustive", exhaustive,
          "an integer >= 1")
    batch = batch.to(model.cfg.device)
    L, H = model.cfg.n_layers, model.cfg.n_heads
    means = mean_head_outputs(model, batch)
    heads = [(layer, head) for layer in range(L) for head in range(H)]

    def loss(chosen) -> float:
        hooks = head_ablation_hooks([(l, h, "mean") for l, h in chosen], L, H, means)
        return set_losses(model, {"x": batch}, hooks)["x"]

    best: tuple = ()
    for size in range(1, min(exhaustive, len(heads)) + 1):
        tried = {chosen: loss(chosen) for chosen in combinations(heads, size)}
        reached = [c for c, v in tried.items() if v >= target]
        if reached:
            return reached[0], tried[reached[0]]
        best = max(tried, key=tried.get)
    while len(best) < len(heads):
        grown = {best + (h,): loss(best + (h,)) for h in heads if h not in best}
        best = max(grown, key=grown.get)
        if grown[best] >= target:
            return tuple(sorted(best)), grown[best]
    return None, loss(tuple(heads))
