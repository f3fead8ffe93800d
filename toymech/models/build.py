"""Build models from their configs: TransformerLens ``HookedTransformer``s (and baselines).

``ModelConfig`` (``toymech.models.config``) describes a model; ``to_hooked_config``
maps it onto a ``HookedTransformerConfig`` and ``build_model`` makes the model, swapping in
``ToyAttention`` where the config asks for something TransformerLens has no switch for:

* ``positions="sinusoidal_qk"``: fixed sinusoidal encodings ADDED to q and k after projection
  (the induction post's design; positions never enter the residual stream). It reuses
  TransformerLens' rotary code path (no positional embedding module, residual = token embedding,
  q/k after positions visible at ``hook_rot_q``/``hook_rot_k``), overriding the rotation by an
  addition.
* ``positions="post_sinusoidal_qk"``: the same addition with the post code's own table
  (``post_sinusoid_table``: column i at frequency 10000^(-2i/d_head), not the textbook
  10000^(-2(i//2)/d_head); row 0 all zeros), so q.k carries no clean function of s - t.
* ``positions="none"``: no positional information at all. The same rotary code path (no
  positional embedding module, residual = token embedding) with the rotation replaced by the
  identity: no position parameter, table or buffer enters the forward pass; only the causal mask
  lets a query tell where it is.
* ``smear_keys=True``: k_j <- s*k_j + (1-s)*k_{j-1} with s = sigmoid(alpha), the first key kept;
  ``smear="per_head"``: one learnable alpha per head (Olsson et al. 2022);
  ``smear="per_position"``: one per head and key position 1..n_ctx-1 (the post's code; parameter
  ``smear_logit`` [n_heads, n_ctx - 1]). ``smear_init`` is the initial sigmoid(alpha) in both;
  the post's alpha = 1.0 is ``smear_init = sigmoid(1.0)``. Smeared keys pass through
  ``hook_k_smeared`` (positions are added after smearing).
* ``init="torch_linear"``: every weight matrix drawn as PyTorch's ``nn.Linear`` default,
  U(-1/sqrt(fan_in), 1/sqrt(fan_in)), from ``torch.Generator().manual_seed(cfg.seed)``
  (``torch_linear_init``). The scores keep TransformerLens' scale 1/sqrt(d_head).

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

from .baselines import build_baseline
from .config import VARIANTS, BaselineConfig, ModelConfig


def to_hooked_config(cfg: ModelConfig, device: str | torch.device = "cpu") -> HookedTransformerConfig:
    """The ``HookedTransformerConfig`` for ``cfg`` on ``device`` (the additive q/k tables use
    the rotary code path)."""
    tl_positions = "rotary" if cfg.positions in (*ADDITIVE_TABLES, "none") else cfg.positions
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


def post_sinusoid_table(n_ctx: int, d_head: int) -> torch.Tensor:
    """[n_ctx, d_head], the induction post's table: angle A[p, i] = p / 10000^(2i/d_head) with i
    the column itself; P[p, i] = sin(A[p, i]) for even i, cos(A[p, i]) for odd i; P[0] = 0."""
    pos = torch.arange(n_ctx, dtype=torch.float64)[:, None]
    freq = torch.exp(-math.log(10000.0) * 2 * torch.arange(d_head, dtype=torch.float64) / d_head)
    angle = pos * freq
    table = torch.where(torch.arange(d_head) % 2 == 0, torch.sin(angle), torch.cos(angle))
    table[0] = 0.0
    return table.float()


# positions -> the table added to q and k after projection
ADDITIVE_TABLES = {"sinusoidal_qk": sinusoid_table, "post_sinusoidal_qk": post_sinusoid_table}


class ToyAttention(Attention):
    """TransformerLens ``Attention`` with an additive q/k position table and/or smeared keys
    (``build_model`` puts it in place of a block's attention).

    ``cfg``: the model's ``HookedTransformerConfig``; ``layer_id``: its block; ``qk_table``
    [n_ctx, d_head] or None; ``smear`` None, "per_head" or "per_position"; ``smear_init``: the
    smear weights' initial value in (0, 1); ``no_positions``: q and k pass the rotary step
    unchanged (``positions="none"``)."""

    def __init__(self, cfg: HookedTransformerConfig, layer_id: int,
                 qk_table: torch.Tensor | None, smear: str | None, smear_init: float = 0.73,
                 no_positions: bool = False):
        super().__init__(cfg, "global", layer_id)
        self.additive_sinusoid = qk_table is not None
        self.no_positions = no_positions
        self.smear = smear
        if qk_table is not None:
            # Not persistent: a pure function of the shape, rebuilt on load.
            self.register_buffer("qk_sinusoid", qk_table, persistent=False)
        if smear:
            logit = math.log(smear_init / (1.0 - smear_init))
            shape = (cfg.n_heads,) if smear == "per_head" else (cfg.n_heads, cfg.n_ctx - 1)
            self.smear_logit = nn.Parameter(torch.full(shape, logit, dtype=cfg.dtype))
            self.hook_k_smeared = HookPoint()  # [batch, pos, head_index, d_head]

    def calculate_qkv_matrices(self, query_input, key_input, value_input):
        """TransformerLens' queries, keys and values of ``query_input``, ``key_input`` and
        ``value_input``, with the keys smeared where the model has smeared keys."""
        q, k, v = super().calculate_qkv_matrices(query_input, key_input, value_input)
        if self.smear == "per_head":
            s = torch.sigmoid(self.smear_logit)[:, None]  # [head_index, 1]
            k_prev = torch.cat([k[:, :1], k[:, :-1]], dim=1)  # k_{j-1}; the first key is kept
            k = self.hook_k_smeared(s * k + (1.0 - s) * k_prev)
        elif self.smear == "per_position":
            n = k.shape[1]
            s = torch.sigmoid(self.smear_logit[:, : n - 1]).T[..., None]  # [pos-1, head_index, 1]
            rest = s * k[:, 1:] + (1.0 - s) * k[:, :-1]  # keys 1..n-1; the first key is kept
            k = self.hook_k_smeared(torch.cat([k[:, :1], rest], dim=1))
        return q, k, v

    def apply_rotary(self, x, past_kv_pos_offset=0, attention_mask=None):
        """Queries or keys ``x`` with positions applied: the additive q/k table (from
        ``past_kv_pos_offset``), TransformerLens' rotary step (with ``attention_mask``), or
        nothing for ``positions="none"``."""
        if self.no_positions:
            return x
        if not self.additive_sinusoid:
            return super().apply_rotary(x, past_kv_pos_offset, attention_mask)
        n = x.shape[1]
        table = self.qk_sinusoid[past_kv_pos_offset: past_kv_pos_offset + n]
        return x + table[None, :, None, :].to(x.dtype)


def build_model(cfg: ModelConfig | BaselineConfig, device: str | torch.device = "cpu"
                ) -> HookedTransformer:
    """A freshly initialised model for ``cfg`` (deterministic given cfg.seed) on ``device``:
    a ``HookedTransformer``, or a plain-PyTorch baseline for a ``BaselineConfig``.

    The model carries its config as ``model.toymech_config`` so checkpoints can save it.
    Example: ``build_model(ModelConfig(d_vocab=27, n_ctx=24, seed=0), "cpu")``.
    """
    if isinstance(cfg, BaselineConfig):
        model = build_baseline(cfg)
        model.toymech_config = cfg
        return model.to(device)
    hooked_cfg = to_hooked_config(cfg, "cpu")
    # TransformerLens 3.9 warns about its own deprecations and prints "Moving model to device".
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("ignore", DeprecationWarning)
        model = HookedTransformer(hooked_cfg)
    make_table = ADDITIVE_TABLES.get(cfg.positions)
    smear = cfg.smear if cfg.smear_keys else None
    none = cfg.positions == "none"
    if make_table or smear or none:
        for layer, block in enumerate(model.blocks):
            table = make_table(cfg.n_ctx, cfg.d_head) if make_table else None
            new = ToyAttention(hooked_cfg, layer, table, smear, cfg.smear_init, none)
            missing, unexpected = new.load_state_dict(block.attn.state_dict(), strict=False)
            assert not unexpected, unexpected
            block.attn = new
        model.setup()  # register the new hook points
    if cfg.init == "torch_linear":
        torch_linear_init(model, cfg.seed)
    if cfg.variant:
        VARIANTS[cfg.variant](model, cfg)
        model.setup()
    if not cfg.use_bias:
        for name, param in model.named_parameters():
            if name.split(".")[-1].startswith("b_"):
                param.requires_grad_(False)
    model.toymech_config = cfg
    return move(model, device)


def torch_linear_init(model: HookedTransformer, seed: int) -> None:
    """Redraw every weight matrix of ``model`` as PyTorch's ``nn.Linear`` default does
    (kaiming_uniform with a=sqrt(5)): W ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), fan_in = the
    inputs of the map, in parameter order from ``torch.Generator().manual_seed(seed)``
    (TransformerLens reseeds the
    global RNGs on construction, so they are not used). W_E counts as a bias-free Linear on
    one-hot tokens (fan_in d_vocab); W_O's fan_in is n_heads*d_head (the concatenated heads).
    Biases stay zero; learned positions, LayerNorm and smear parameters keep their own init."""
    gen = torch.Generator().manual_seed(seed)
    for name, param in model.named_parameters():
        kind = name.split(".")[-1]
        if kind in ("W_E", "W_U", "W_in", "W_out", "W_gate"):
            fan_in = param.shape[0]  # [d_in, d_out]
        elif kind in ("W_Q", "W_K", "W_V"):
            fan_in = param.shape[1]  # [n_heads, d_model, d_head]
        elif kind == "W_O":
            fan_in = param.shape[0] * param.shape[1]  # [n_heads, d_head, d_model]
        else:
            continue
        bound = 1.0 / math.sqrt(fan_in)
        with torch.no_grad():
            draw = torch.rand(param.shape, generator=gen, dtype=torch.float64)
            param.copy_((2 * draw - 1) * bound)


def move(model: HookedTransformer, device: str | torch.device) -> HookedTransformer:
    """``model.to(device)`` without TransformerLens' "Moving model to device" print."""
    with contextlib.redirect_stdout(io.StringIO()):
        return model.to(device)


def parameter_counts(model: nn.Module) -> tuple[int, int]:
    """(trainable, frozen) parameter counts of ``model``."""
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    frozen = sum(p.numel() for p in model.parameters() if not p.requires_grad)
    return trainable, frozen
