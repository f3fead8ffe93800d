"""Build models from their configs: TransformerLens ``HookedTransformer``s (and baselines).

``ModelConfig`` (``toymech.models.config``) describes a model; ``to_hooked_config``
maps it onto a ``HookedTransformerConfig`` and ``build_model`` makes the model, swapping in
``ToyAttention`` where the config asks for something TransformerLens has no switch for:

* ``positions="sinusoidal_qk"``: fixed sinusoidal encodings ADDED to q and k after projection
  (the induction post's design; positions never enter the residual stream). It reuses
  TransformerLens' rotary code path (no positional embedding module, residual = token embedding,
  q/k after positions visible at ``hook_rot_q``/``hook_rot_k``), overriding the rotation by an
  addition.
* ``smear_keys=True``: k_j <- s*k_j + (1-s)*k_{j-1} with s = sigmoid(alpha_h), one learnable
  alpha per head (Olsson et al. 2022); the smeared keys pass through ``hook_k_smeared``.

Biases: TransformerLens always creates them; ``use_bias=False`` keeps them at zero and
``requires_grad=False`` so the trainable count matches a bias-free model (5,760 parameters for the
1-layer toy, 9,856 for 2 layers).
"""

from __future__ import annotations

import contextlib
import io
import math
import warnings
from typing import Any

import torch
from torch import nn
from transformer_lens import HookedTransformer, HookedTransformerConfig
from transformer_lens.components import Attention
from transformer_lens.hook_points import HookPoint

from .config import VARIANTS, BaselineConfig, ModelConfig

def to_hooked_config(cfg: ModelConfig, device: str | torch.device = "cpu") -> HookedTransformerConfig:
    """The ``HookedTransformerConfig`` for ``cfg`` (sinusoidal_qk uses the rotary code path)."""
    tl_positions = "rotary" if cfg.positions == "sinusoidal_qk" else cfg.positions
    kwargs: dict[str, Any] = dict(
        n_layers=cfg.n_layers,
        n_heads=cfg.n_heads,
        d_model=cfg.d_model,
        d_head=cfg.d_head,
        d_vocab=cfg.d_vocab,
        n_ctx=cfg.n_ctx,
        attn_only=cfg.attn_only,
        act_fn=cfg.act_fn,
        normalization_type=cfg.normalization,
        positional_embedding_type=tl_positions,
        seed=cfg.seed,
        device=str(device),
        default_prepend_bos=False,
    )
    if not cfg.attn_only:
        kwargs["d_mlp"] = cfg.d_mlp
    if tl_positions == "rotary":
        kwargs["rotary_dim"] = cfg.d_head
    if cfg.init_range is not None:
        kwargs["initializer_range"] = cfg.init_range
    return HookedTransformerConfig(**kwargs)


def sinusoid_table(n_ctx: int, dim: int) -> torch.Tensor:
    """[n_ctx, dim]: S[p, 2i] = sin(p / 10000^(2i/dim)), S[p, 2i+1] = cos(p / 10000^(2i/dim))."""
    pos = torch.arange(n_ctx, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, dim, 2, dtype=torch.float64) / dim)
    table = torch.zeros(n_ctx, dim, dtype=torch.float64)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq)
    return table.float()


class ToyAttention(Attention):
    """TransformerLens ``Attention`` with additive sinusoidal q/k positions and/or smeared keys."""

    def __init__(self, cfg: HookedTransformerConfig, layer_id: int, additive_sinusoid: bool,
                 smear: bool, smear_init: float = 0.73):
        super().__init__(cfg, "global", layer_id)
        self.additive_sinusoid = additive_sinusoid
        self.smear = smear
        if additive_sinusoid:
            # Not persistent: a pure function of the shape, rebuilt on load.
            self.register_buffer("qk_sinusoid", sinusoid_table(cfg.n_ctx, cfg.d_head),
                                 persistent=False)
        if smear:
            logit = math.log(smear_init / (1.0 - smear_init))
            self.smear_logit = nn.Parameter(torch.full((cfg.n_heads,), logit, dtype=cfg.dtype))
            self.hook_k_smeared = HookPoint()  # [batch, pos, head_index, d_head]

    def calculate_qkv_matrices(self, query_input, key_input, value_input):
        q, k, v = super().calculate_qkv_matrices(query_input, key_input, value_input)
        if self.smear:
            s = torch.sigmoid(self.smear_logit)[:, None]  # [head_index, 1]
            k_prev = torch.cat([k[:, :1], k[:, :-1]], dim=1)  # k_{j-1}; the first key is kept
            k = self.hook_k_smeared(s * k + (1.0 - s) * k_prev)
        return q, k, v

    def apply_rotary(self, x, past_kv_pos_offset=0, attention_mask=None):
        if not self.additive_sinusoid:
            return super().apply_rotary(x, past_kv_pos_offset, attention_mask)
        n = x.shape[1]
        table = self.qk_sinusoid[past_kv_pos_offset: past_kv_pos_offset + n]
        return x + table[None, :, None, :].to(x.dtype)


def build_model(cfg: ModelConfig | BaselineConfig, device: str | torch.device = "cpu"
                ) -> HookedTransformer:
    """A freshly initialised model for ``cfg`` (deterministic given cfg.seed): a
    ``HookedTransformer``, or a plain-PyTorch baseline for a ``BaselineConfig``.

    The model carries its config as ``model.toymech_config`` so checkpoints can save it.
    """
    if isinstance(cfg, BaselineConfig):
        from .baselines import build_baseline
        model = build_baseline(cfg)
        model.toymech_config = cfg
        return model.to(device)
    hooked_cfg = to_hooked_config(cfg, "cpu")
    # TransformerLens 3.9 warns about its own deprecations and prints "Moving model to device".
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(hooked_cfg)
    additive = cfg.positions == "sinusoidal_qk"
    if additive or cfg.smear_keys:
        for layer, block in enumerate(model.blocks):
            new = ToyAttention(hooked_cfg, layer, additive, cfg.smear_keys, cfg.smear_init)
            missing, unexpected = new.load_state_dict(block.attn.state_dict(), strict=False)
            assert not unexpected, unexpected
            block.attn = new
        model.setup()  # register the new hook points
    if cfg.variant:
        VARIANTS[cfg.variant](model, cfg)
        model.setup()
    if not cfg.use_bias:
        for name, param in model.named_parameters():
            if name.split(".")[-1].startswith("b_"):
                param.requires_grad_(False)
    model.toymech_config = cfg
    return move(model, device)


def move(model: HookedTransformer, device: str | torch.device) -> HookedTransformer:
    """``model.to(device)`` without TransformerLens' "Moving model to device" print."""
    with contextlib.redirect_stdout(io.StringIO()):
        return model.to(device)


def parameter_counts(model: nn.Module) -> tuple[int, int]:
    """(trainable, frozen) parameter counts."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    return trainable, frozen
