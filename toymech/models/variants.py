"""Structural model variants, always registered (so any saved model loads in a fresh interpreter).

* ``birth_simplified``: the simplified 2-layer model of "Birth of a Transformer" (Bietti et al.
  2023; see docs/sources.md, study 2): 1 head per layer, no LayerNorm, W_Q = W_V = I, random
  token/positional embeddings and unembedding, layer-0 W_O random, an optional linear
  feed-forward W_F after layer 2 (``blocks.1.mlp.W_F``: h <- h + h W_F), optional tied
  unembedding. Which of its matrices train is the training config's business (``freeze``).
* ``gpt2_scaled``: GPT-2's initialisation of the residual projections (study 3, Zhong & Andreas
  2024).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn
from transformer_lens import HookedTransformer
from transformer_lens.hook_points import HookPoint

from ..core import check
from .config import ModelConfig, register_variant

BIRTH_SIMPLIFIED = "birth_simplified"
GPT2_SCALED = "gpt2_scaled"
SIMPLIFIED_DEFAULTS: dict[str, Any] = {
    "emb_std": None,    # std of the entries of W_E, W_pos (None: 1/sqrt(d), unit-norm rows)
    "init_std": None,   # std of trained matrices at init (None: 1/sqrt(d); 0: zero init)
    "ff": True,         # linear feed-forward W_F after layer 2
    "tied": False,      # unembedding = W_E^T
    "attn_scale": 1.0,  # scores x_t W_Q W_K^T x_s / attn_scale (the paper: no scaling)
}


class LinearFF(nn.Module):
    """h -> h W_F (a linear feed-forward layer, added to the residual by the block)."""

    def __init__(self, d_model: int):
        super().__init__()
        self.W_F = nn.Parameter(torch.zeros(d_model, d_model))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.W_F


class ZeroFF(nn.Module):
    """No feed-forward layer (a block whose MLP adds nothing)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros_like(x)


class TiedUnembed(nn.Module):
    """Unembedding with W_U = W_E^T (the embedding is referenced, not registered twice)."""

    def __init__(self, embed: nn.Module, d_vocab: int):
        super().__init__()
        self._embed = (embed,)  # a tuple: not a submodule, so its weights are saved once
        self.b_U = nn.Parameter(torch.zeros(d_vocab), requires_grad=False)
        self.hook_in = HookPoint()
        self.hook_out = HookPoint()

    @property
    def W_U(self) -> torch.Tensor:
        return self._embed[0].W_E.T

    def forward(self, residual: torch.Tensor) -> torch.Tensor:
        return self.hook_out(self.hook_in(residual) @ self.W_U + self.b_U)


def simplified_options(cfg: ModelConfig) -> dict[str, Any]:
    """The variant options with defaults filled in; unknown keys raise ValueError."""
    unknown = sorted(set(cfg.variant_options) - set(SIMPLIFIED_DEFAULTS))
    check(not unknown, "variant_options", unknown,
          f"keys among {', '.join(SIMPLIFIED_DEFAULTS)}")
    return {**SIMPLIFIED_DEFAULTS, **cfg.variant_options}


@register_variant(BIRTH_SIMPLIFIED, options=SIMPLIFIED_DEFAULTS)
def _build_simplified(model: HookedTransformer, cfg: ModelConfig) -> None:
    opts = simplified_options(cfg)
    d = cfg.d_model
    check(cfg.n_layers == 2 and cfg.n_heads == 1 and cfg.d_head == d and not cfg.attn_only
          and cfg.normalization is None and cfg.positions == "standard", "model",
          "config", f"{BIRTH_SIMPLIFIED}: 2 layers, 1 head, d_head = d_model, attn_only=False, "
          "normalization None, positions 'standard' (use simplified_config)")
    emb_std = opts["emb_std"] if opts["emb_std"] is not None else 1.0 / math.sqrt(d)
    init_std = opts["init_std"] if opts["init_std"] is not None else 1.0 / math.sqrt(d)
    g = torch.Generator().manual_seed(cfg.seed + 12345)  # never the global generator

    def randn(*shape: int, std: float) -> torch.Tensor:
        return torch.randn(*shape, generator=g) * std

    eye = torch.eye(d)
    with torch.no_grad():
        model.embed.W_E.copy_(randn(cfg.d_vocab, d, std=emb_std))
        model.pos_embed.W_pos.copy_(randn(cfg.n_ctx, d, std=emb_std))
        model.unembed.W_U.copy_(randn(d, cfg.d_vocab, std=1.0 / math.sqrt(d)))
        for layer, block in enumerate(model.blocks):
            block.attn.W_Q.copy_(eye[None])
            block.attn.W_V.copy_(eye[None])
            block.attn.W_K.copy_(randn(1, d, d, std=init_std))
            std_o = 1.0 / math.sqrt(d) if layer == 0 else init_std
            block.attn.W_O.copy_(randn(1, d, d, std=std_o))
            block.attn.attn_scale = float(opts["attn_scale"])
    model.blocks[0].mlp = ZeroFF()
    if opts["ff"]:
        ff = LinearFF(d)
        with torch.no_grad():
            ff.W_F.copy_(randn(d, d, std=init_std))
        model.blocks[1].mlp = ff
    else:
        model.blocks[1].mlp = ZeroFF()
    if opts["tied"]:
        model.unembed = TiedUnembed(model.embed, cfg.d_vocab)


@register_variant(GPT2_SCALED, options={"embed_std": None})
def _gpt2_scaled(model, cfg: ModelConfig) -> None:
    """GPT-2 initialisation: residual projections (attention W_O, MLP W_out) divided by
    sqrt(2 * n_layers), so the residual stream's variance does not grow with depth.

    Option ``embed_std``: the std of the token embedding W_E at init (None: ``init_range``, as
    GPT-2); W_E is rescaled, so no other weight changes."""
    scale = 1.0 / math.sqrt(2 * cfg.n_layers)
    embed_std = cfg.variant_options.get("embed_std")
    with torch.no_grad():
        if embed_std is not None:
            model.embed.W_E.mul_(embed_std / float(model.embed.W_E.std()))
        for block in model.blocks:
            block.attn.W_O.mul_(scale)
            if not cfg.attn_only:
                block.mlp.W_out.mul_(scale)
