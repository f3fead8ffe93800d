"""Structural model variants, always registered (so any saved model loads in a fresh interpreter).

* ``birth_simplified``: the simplified 2-layer model of "Birth of a Transformer" (Bietti et al.
  2023; see docs/sources.md, study 2): 1 head per layer, no LayerNorm, W_Q = W_V = I, random
  token/positional embeddings and unembedding, layer-0 W_O random, an optional linear
  feed-forward W_F after layer 2 (``blocks.1.mlp.W_F``: h <- h + h W_F; ``ff_first`` adds one
  after layer 1 too, ``blocks.0.mlp.W_F``), optional tied unembedding. How positions enter is an
  option: ``pos`` random (the paper), sinusoidal or none; ``join`` add (the paper: x = W_E[z] +
  W_pos[t]) or concat (tokens in the first d/2 coordinates of the residual stream, positions in
  the other d - d/2, each embedding zero outside its half and kept there by a mask on the
  embedding's output, so the halves stay apart even when the embeddings train). Which of its
  matrices train is the training config's business (``freeze``).
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
from .build import sinusoid_table
from .config import ModelConfig, register_variant

BIRTH_SIMPLIFIED = "birth_simplified"
GPT2_SCALED = "gpt2_scaled"
SIMPLIFIED_DEFAULTS: dict[str, Any] = {
    "emb_std": None,    # std of the entries of W_E, W_pos (None: 1/sqrt(d), unit-norm rows)
    "init_std": None,   # std of trained matrices at init (None: 1/sqrt(d); 0: zero init)
    "ff": True,         # linear feed-forward W_F after layer 2
    "tied": False,      # unembedding = W_E^T
    "attn_scale": 1.0,  # scores x_t W_Q W_K^T x_s / attn_scale (the paper: no scaling)
    # Options added later: a config saved without them means the paper's choice.
    "ff_first": False,  # a second linear feed-forward W_F after layer 1
    "pos": "random",    # W_pos at init: random, sinusoidal (unit-norm rows) or none (zero)
    "join": "add",      # add: W_E[z] + W_pos[t]; concat: tokens and positions in halves
}
POS_INITS = ("random", "sinusoidal", "none")
JOINS = ("add", "concat")


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
    opts = {**SIMPLIFIED_DEFAULTS, **cfg.variant_options}
    check(opts["pos"] in POS_INITS, "pos", opts["pos"], f"one of {', '.join(POS_INITS)}")
    check(opts["join"] in JOINS, "join", opts["join"], f"one of {', '.join(JOINS)}")
    check(opts["join"] == "add" or cfg.d_model >= 2, "join", opts["join"],
          f"'add' with d_model={cfg.d_model} (concat needs two halves; an odd width gives "
          "the positions the larger one)")
    return opts


def _keep_half(module: nn.Module, inputs: Any, output: torch.Tensor) -> torch.Tensor:
    """Forward hook of a concatenated embedding: its output outside its half is zero (so that
    half never gets a gradient and stays zero while the embedding trains)."""
    return output * module.join_mask


def _half(w: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """``w`` zero outside the columns ``keep``, its rows rescaled to their norm before."""
    return w * keep * math.sqrt(w.shape[-1] / int(keep.sum()))


def _positions(drawn: torch.Tensor, kind: str, keep: torch.Tensor, norm: float
               ) -> torch.Tensor:
    """W_pos at init from the random draw ``drawn`` [n_ctx, d], inside the columns ``keep``:
    the draw (random), the sin/cos table with rows of norm ``norm`` (a random row's expected
    norm: sinusoidal), or zero (none)."""
    if kind == "random":
        return _half(drawn, keep) if not bool(keep.all()) else drawn
    if kind == "none":
        return torch.zeros_like(drawn)
    n_ctx, width = drawn.shape[0], int(keep.sum())
    table = sinusoid_table(n_ctx, width + width % 2)[:, :width]
    table = table / table.norm(dim=-1, keepdim=True).clamp(min=1e-12)
    out = torch.zeros_like(drawn)
    out[:, keep] = table * norm
    return out


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
    concat = opts["join"] == "concat"
    tok_d = d // 2 if concat else d  # concat: tokens in [0, d/2), positions in [d/2, d)
    tok_keep, pos_keep = torch.arange(d) < tok_d, torch.arange(d) >= (tok_d if concat else 0)
    with torch.no_grad():
        # The paper's draws in the paper's order whatever the options (the rest of the model is
        # the paper's at the same seed); a half keeps the norm of a whole row.
        w_e = randn(cfg.d_vocab, d, std=emb_std)
        model.embed.W_E.copy_(_half(w_e, tok_keep) if concat else w_e)
        w_pos = _positions(randn(cfg.n_ctx, d, std=emb_std), opts["pos"], pos_keep,
                           emb_std * math.sqrt(d))
        model.pos_embed.W_pos.copy_(w_pos)
        model.unembed.W_U.copy_(randn(d, cfg.d_vocab, std=1.0 / math.sqrt(d)))
        for layer, block in enumerate(model.blocks):
            block.attn.W_Q.copy_(eye[None])
            block.attn.W_V.copy_(eye[None])
            block.attn.W_K.copy_(randn(1, d, d, std=init_std))
            std_o = 1.0 / math.sqrt(d) if layer == 0 else init_std
            block.attn.W_O.copy_(randn(1, d, d, std=std_o))
            block.attn.attn_scale = float(opts["attn_scale"])
    for layer, on in ((1, opts["ff"]), (0, opts["ff_first"])):  # layer 2's first: its draws
        ff = LinearFF(d) if on else ZeroFF()                   # come first, as they always did
        if on:
            with torch.no_grad():
                ff.W_F.copy_(randn(d, d, std=init_std))
        model.blocks[layer].mlp = ff
    if concat:
        for module, mask in ((model.embed, tok_keep), (model.pos_embed, pos_keep)):
            module.register_buffer("join_mask", mask.float(), persistent=False)
            module.register_forward_hook(_keep_half)
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
