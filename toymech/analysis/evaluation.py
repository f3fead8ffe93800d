"""Behavioural evaluation: loss per named set, per position, under head ablations, and with
layer-0 outputs removed from layer-1 queries and/or keys (which composition a model needs)."""

from __future__ import annotations

from typing import Iterable

import torch
from jaxtyping import Float
from transformer_lens import HookedTransformer

from ..core import check
from .heads import head_label
from ..tasks.base import Batch, masked_cross_entropy


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
def per_position_loss(model: HookedTransformer, batch: Batch) -> Float[torch.Tensor, "seq_minus_1"]:
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
