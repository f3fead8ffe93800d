"""A hook-free forward pass for the attention-only toys, for the training step.

``fast_forward(model)`` returns ``tokens -> logits`` computing exactly what ``model(tokens)``
computes (up to float rounding), straight from the model's own parameters: one fused QKV matmul
per layer (the weights concatenated inside the call, so gradients reach the same Parameters the
optimizer holds), attention as two batched matmuls with the scale and a precomputed additive
causal mask folded into ``baddbmm``, no hook points, einops or generic code paths. The model stays
the ordinary ``HookedTransformer``: analysis and evaluation keep calling ``model(...)``.

Supported (anything else gives None and the caller uses ``model(tokens)``): a plain
``HookedTransformer``, ``attn_only``, no normalization, causal attention by TransformerLens'
``Attention`` or toymech's ``ToyAttention`` (additive q/k tables ``sinusoidal_qk`` /
``post_sinusoidal_qk``, smeared keys ``per_head`` / ``per_position``), positions ``standard``,
``shortformer``, an additive table or none, no hooks attached. Biases are always applied (zero ones
cost a fused add), so ``use_bias`` either way is the same math.

Per layer, with x [batch, pos, d_model] the residual stream and P the per-position term:
    [q | k | v] = x [W_Q | W_K | W_V] + [b_Q | b_K | b_V] + P_pre
    (shortformer: P_pre = [pos W_Q | pos W_K | 0]; table T without smear: [T | T | 0];
     table with smear: [T | 0 | 0] and T added to k after smearing)
    k_j <- s_j k_j + (1 - s_j) k_{j-1}  (smear, s_0 = 1)
    x <- x + softmax(q k^T / attn_scale + M) v W_O + b_O,  M[i, j] = -inf for j > i
logits = x W_U + b_U.

On a CPU in float32 the embedding's gradient is one ``index_add_`` (``_Embedding``), and the
attention itself (the split into heads, smear, table, scores, causal softmax, A v, the heads
joined again) is ``_AttentionLayer``: the same math with a hand-written backward, computed
key-major (scores transposed, [key, query], so every small batched product writes an output
with the positions innermost, which the CPU's batched kernels handle faster than the head
dimensions innermost), the softmax as ``exp2`` of base-2 scores (faster than ``exp`` on the
shipped torch's CPU kernels) with the row maximum as a tree of pairwise maxima (faster than
``amax`` over short rows). Why each choice, with its figures: ``benchmarks/README.md``;
``benchmarks/bench_training.py`` measures it; ``tests/test_fast.py`` checks
it against autograd and 100 training steps against the hooked forward. Elsewhere (CUDA,
autocast, other dtypes) the attention is the plain ``baddbmm``/softmax/``bmm``.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
import torch.nn.functional as F
from transformer_lens import HookedTransformer
from transformer_lens.components import Attention, Embed, PosEmbed, TransformerBlock, Unembed

from .build import ToyAttention

Forward = Callable[[torch.Tensor], torch.Tensor]

_LOG2E = 1.0 / math.log(2.0)


def _previous_key(k: torch.Tensor) -> torch.Tensor:
    """k [batch, head, pos, d_head] shifted one position later: row j holds k_(j-1), row 0 k_0."""
    return torch.cat([k[:, :, :1], k[:, :, :-1]], 2)


def _column_max(s: torch.Tensor) -> torch.Tensor:
    """``s.amax(1, keepdim=True)`` for ``s`` [batch, n, m] as pairwise maxima of halves."""
    m = s
    while m.shape[1] > 1:
        half = m.shape[1] // 2
        top = torch.maximum(m[:, :half], m[:, half:2 * half])
        if m.shape[1] % 2:  # the odd row joins the first (top is a fresh tensor)
            top[:, :1] = torch.maximum(top[:, :1], m[:, 2 * half:])
        m = top
    return m


class _AttentionLayer(torch.autograd.Function):
    """One layer's attention from its projections to the heads' outputs, with a hand-written
    backward (first order only).

    qkv [batch*pos, 3*head*d_head] (q | k | v, head-major inside each), s the smear weights
    [head, pos or 1, 1] (s = 1 at the first key) or None, table [pos, d_head] a constant added to
    q and to the (smeared) k, or None, mask_t [pos, pos] the causal mask transposed (-inf where
    the key comes after the query), alpha the score scale. Returns z [batch*pos, head*d_head].
    Computed key-major (scores as [key, query]): every small batched product then writes an
    output with the positions innermost."""

    @staticmethod
    def forward(ctx, qkv, s, table, mask_t, alpha: float, heads: int):
        n = mask_t.shape[0]
        b, hd = qkv.shape[0] // n, qkv.shape[1] // 3
        dh = hd // heads
        parts = qkv.view(b, n, 3, heads, dh).permute(2, 0, 3, 1, 4).contiguous()
        q, k, v = parts.unbind(0)  # [b, head, pos, d_head] each, views of one copy
        k_raw = None
        if s is not None:
            k_raw = k
            k = torch.lerp(_previous_key(k), k, s)  # s k + (1 - s) k_prev
        if table is not None:
            q, k = q.add_(table), k.add_(table)
        q, k, v = (t.reshape(b * heads, n, dh) for t in (q, k, v))
        a_t = torch.baddbmm(mask_t, k, q.transpose(1, 2), alpha=alpha * _LOG2E)  # [bh, key, query]
        a_t = a_t.sub_(_column_max(a_t)).exp2_()  # base-2 scores: exp2 is the fast kernel here
        a_t = a_t.div_(a_t.sum(1, keepdim=True))
        z_t = torch.bmm(v.transpose(1, 2), a_t)  # [bh, d_head, query]
        ctx.save_for_backward(q, k, v, a_t, s, k_raw)
        ctx.alpha, ctx.heads = alpha, heads
        return z_t.view(b, heads, dh, n).permute(0, 3, 1, 2).reshape(b * n, hd)

    @staticmethod
    def backward(ctx, dz):
        q, k, v, a_t, s, k_raw = ctx.saved_tensors
        bh, n, dh = q.shape
        heads = ctx.heads
        b = bh // heads
        dz_t = dz.view(b, n, heads, dh).permute(0, 2, 3, 1).reshape(bh, dh, n)
        da_t = torch.bmm(v, dz_t)  # [bh, key, query]
        dv_t = torch.bmm(dz_t, a_t.transpose(1, 2))  # [bh, d_head, key]
        ds_t = da_t.mul_(a_t)  # softmax backward in place: a (da - sum(a da))
        ds_t = ds_t.addcmul_(a_t, ds_t.sum(1, keepdim=True), value=-1.0).mul_(ctx.alpha)
        dq_t = torch.bmm(k.transpose(1, 2), ds_t)  # [bh, d_head, query]
        dk_t = torch.bmm(q.transpose(1, 2), ds_t.transpose(1, 2)).view(b, heads, dh, n)
        d_s = None
        if s is not None:  # through k_j' = s_j k_j + (1 - s_j) k_(j-1), k_(-1) = k_0
            s_t = s.transpose(1, 2)  # [head, 1, pos or 1]
            passed = dk_t * (1.0 - s_t)
            if ctx.needs_input_grad[1]:
                d_s = (dk_t * (k_raw - _previous_key(k_raw)).transpose(2, 3)).sum((0, 2))[..., None]
                d_s = d_s.sum_to_size(s.shape)
            dk_t = dk_t * s_t
            dk_t[..., :-1] += passed[..., 1:]
            dk_t[..., :1] += passed[..., :1]
        dqkv = dz.new_empty(b, n, 3, heads, dh)
        dqkv[:, :, 0] = dq_t.view(b, heads, dh, n).permute(0, 3, 1, 2)
        dqkv[:, :, 1] = dk_t.permute(0, 3, 1, 2)
        dqkv[:, :, 2] = dv_t.view(b, heads, dh, n).permute(0, 3, 1, 2)
        return dqkv.view(b * n, 3 * heads * dh), d_s, None, None, None, None


class _Embedding(torch.autograd.Function):
    """``W_E[tokens]`` whose gradient is one ``index_add_`` into a zero table: the same sums as
    ``embedding``'s dense backward, cheaper on a CPU (``benchmarks/README.md``). First order
    only."""

    @staticmethod
    def forward(ctx, table, tokens):
        ctx.save_for_backward(tokens)
        ctx.rows = table.shape[0]
        return F.embedding(tokens, table)

    @staticmethod
    def backward(ctx, grad):
        (tokens,) = ctx.saved_tensors
        flat = grad.reshape(-1, grad.shape[-1])
        table = grad.new_zeros(ctx.rows, grad.shape[-1])
        return table.index_add_(0, tokens.reshape(-1), flat), None


def _hand_written(x: torch.Tensor) -> bool:
    """Whether the hand-written parts (``_Embedding``, ``_AttentionLayer``) apply to ``x``:
    CPU, float32, no autocast."""
    return (x.device.type == "cpu" and x.dtype == torch.float32
            and not torch.is_autocast_enabled("cpu"))


# HookedTransformerConfig fields whose non-default values change the forward pass.
_OFF = {"post_embedding_ln": False, "use_attention_sinks": False, "clip_qkv": None,
        "use_logn_attn": False, "n_key_value_heads": None, "attention_dir": "causal",
        "original_architecture": None, "use_split_qkv_input": False, "use_attn_in": False,
        "use_normalization_before_and_after": False, "use_qk_norm": False,
        "normalization_type": None, "attn_only": True}


def _supported(model: torch.nn.Module) -> bool:
    if type(model) is not HookedTransformer:  # a subclass may override forward
        return False
    cfg = model.cfg
    if any(getattr(cfg, k, v) != v for k, v in _OFF.items()):
        return False
    for cap in (cfg.output_logits_soft_cap, cfg.attn_scores_soft_cap):
        if cap is not None and cap > 0:
            return False
    if type(model.embed) is not Embed or type(model.unembed) is not Unembed:
        return False
    kind = cfg.positional_embedding_type
    if kind in ("standard", "shortformer"):
        if type(model.pos_embed) is not PosEmbed:
            return False
    elif kind != "rotary":
        return False
    for block in model.blocks:
        attn = block.attn
        if type(block) is not TransformerBlock or type(attn) not in (Attention, ToyAttention):
            return False
        if getattr(attn, "_attention_dir_override", None) not in (None, "causal"):
            return False
        toy = type(attn) is ToyAttention
        if kind == "rotary" and not (toy and (attn.additive_sinusoid or attn.no_positions)):
            return False  # true rotary is not reproduced here
        if toy and kind != "rotary" and attn.additive_sinusoid:
            return False
    # Hooks attached to the model would be skipped: keep the hooked forward then.
    return not any(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks
                   for m in model.modules())


def fast_forward(model: torch.nn.Module) -> Forward | None:
    """``tokens [batch, pos] -> logits [batch, pos, d_vocab]`` equal to ``model(tokens)`` for the
    models described in the module docstring, else None."""
    if not _supported(model):
        return None
    cfg = model.cfg
    n_heads, d_head = cfg.n_heads, cfg.d_head
    kind = cfg.positional_embedding_type
    masks: dict[tuple, torch.Tensor] = {}

    def causal_mask(n: int, like: torch.Tensor, keys_first: bool = False) -> torch.Tensor:
        key = (n, like.device, like.dtype, keys_first)
        if key not in masks:
            full = torch.full((n, n), float("-inf"), device=like.device, dtype=like.dtype)
            # [query, key]: 0 where the key is not after the query; keys_first: its transpose
            masks[key] = torch.tril(full, -1) if keys_first else torch.triu(full, diagonal=1)
        return masks[key]

    def generic(qkv, s, table, mask, alpha: float, batch: int, n: int) -> torch.Tensor:
        """The attention by autograd (CUDA, autocast, other dtypes): z [batch*pos, head*d_head]."""
        # -> [3, batch, head, pos, d_head], one copy for q, k and v together
        qkv = qkv.view(batch, n, 3, n_heads, d_head).permute(2, 0, 3, 1, 4).contiguous()
        q, k, v = qkv.unbind(0)
        if s is not None:
            k = s * k + (1.0 - s) * _previous_key(k)
        if table is not None:
            q, k = q + table, k + table
        q, k, v = (t.reshape(batch * n_heads, n, d_head) for t in (q, k, v))
        scores = torch.baddbmm(mask, q, k.transpose(1, 2), alpha=alpha)
        z = torch.bmm(scores.softmax(-1), v)
        return z.view(batch, n_heads, n, d_head).transpose(1, 2).reshape(batch * n, -1)

    def layer(x: torch.Tensor, attn, pos: torch.Tensor | None) -> torch.Tensor:
        batch, n, d_model = x.shape
        hd = n_heads * d_head
        w = torch.cat([attn.W_Q, attn.W_K, attn.W_V], 0)  # [3*head, d_model, d_head]
        w = w.permute(1, 0, 2).reshape(d_model, 3 * hd)
        bias = torch.cat([attn.b_Q, attn.b_K, attn.b_V], 0).reshape(3 * hd)
        table = attn.qk_sinusoid[:n] if getattr(attn, "additive_sinusoid", False) else None
        smear = getattr(attn, "smear", None)
        if pos is not None:  # shortformer: positions enter q and k inputs, never v
            pre = torch.cat([pos @ w[:, : 2 * hd], pos.new_zeros(n, hd)], 1) + bias
            qkv = torch.matmul(x, w) + pre
        else:
            qkv = torch.addmm(bias, x.reshape(batch * n, d_model), w)
        s = None
        if smear is not None:
            logit = attn.smear_logit
            if smear == "per_head":
                s = torch.sigmoid(logit)[:, None, None]  # [head, 1, 1]
            else:
                s = torch.sigmoid(logit[:, : n - 1])  # [head, pos - 1]
                s = torch.cat([s.new_ones(n_heads, 1), s], 1)[..., None]  # the first key kept
        if _hand_written(x) and (table is None or not table.requires_grad):
            z = _AttentionLayer.apply(qkv.reshape(batch * n, 3 * hd), s, table,
                                      causal_mask(n, x, keys_first=True), 1.0 / attn.attn_scale,
                                      n_heads)
        else:
            z = generic(qkv, s, table, causal_mask(n, x), 1.0 / attn.attn_scale, batch, n)
        out = torch.addmm(attn.b_O, z, attn.W_O.reshape(hd, d_model))
        return x + out.view(batch, n, d_model)

    def forward(tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[1]
        table = model.embed.W_E
        x = (_Embedding.apply(table, tokens) if _hand_written(table)
             else F.embedding(tokens, table))
        pos = None
        if kind == "standard":
            x = x + model.pos_embed.W_pos[:n]
        elif kind == "shortformer":
            pos = model.pos_embed.W_pos[:n]
        for block in model.blocks:
            x = layer(x, block.attn, pos)
        batch, _, d_model = x.shape
        logits = torch.addmm(model.unembed.b_U, x.reshape(batch * n, d_model), model.unembed.W_U)
        return logits.view(batch, n, -1)

    return forward
