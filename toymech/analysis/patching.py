"""Causal tests: activation patching per head / layer / position, and path patching.

Two runs of one model: a **clean** batch (the behaviour under study is present) and a
**corrupted** batch of the same shape (it is absent or different). A patched run is one of them
with some activations taken from the other:

* ``direction="denoise"``: the corrupted run receives clean activations (does this component
  suffice to bring the behaviour back?);
* ``direction="noise"``: the clean run receives corrupted activations (does the behaviour need
  this component?).

A ``Metric`` reads the patched run's logits ``[batch, pos, d_vocab]`` and returns a scalar
(``logit_diff``, ``target_logprob``, ``scored_loss``). ``Patched.effect`` normalises it:

    effect = (m_patched - m_target) / (m_source - m_target)

with ``m_target`` the metric of the run being patched (corrupted when denoising) and ``m_source``
that of the run the activations come from: 1 = the patch moves the whole gap, 0 = nothing.

**Path patching** (Wang et al. 2022, "Interpretability in the Wild"; Goldowsky-Dill et al. 2023)
from a sender head S to a receiver R's query, key or value input: every reader of the residual
stream keeps the target run's input except R's, which gets ``x + (r_S^source - r_S^target)``,
with ``r_S = z_S W_O^S`` the sender's result [batch, pos, d_model]. Everything downstream of R
runs freely. Receivers are ``(layer, head, "q"|"k"|"v")``, ``("mlp", layer)`` (the MLP input) or
``"logits"`` (the unembedding's input: the sender's direct path). LayerNorms are recomputed from
the patched input. Patching the sender into every reader downstream of it equals patching its
output (``patch_heads``): the tests check that identity on every model family.

Hooks: ``hook_z``, ``hook_q_input``/``hook_k_input``/``hook_v_input`` (with
``use_split_qkv_input``), ``hook_mlp_in`` (``use_hook_mlp_in``), read through
``run_with_cache`` and set through the ``hooks()`` context manager; the model's flags are
restored afterwards, even on error. Works on any ``HookedTransformer`` toymech builds (additive
q/k positions, smeared keys, shortformer, GPT-2-style, the Birth model) and on snapshot models
(``ZooEntry.model_at(step)``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import torch
from jaxtyping import Float
from transformer_lens import HookedTransformer

from ..core import check
from ..tasks.base import Batch, masked_cross_entropy
from .inputs import check_callable, check_tokens, check_transformer, finite

Metric = Callable[[torch.Tensor], torch.Tensor]
Head = tuple[int, int]
DIRECTIONS = ("denoise", "noise")
LAYER_SITES = ("resid_pre", "attn_out", "mlp_out")


# --- metrics ---------------------------------------------------------------------------------
def _check_targets(name: str, target: torch.Tensor, mask: torch.Tensor) -> None:
    check(isinstance(target, torch.Tensor) and isinstance(mask, torch.Tensor)
          and target.shape == mask.shape and target.ndim == 2 and mask.dtype == torch.bool
          and bool(mask.any()), name, tuple(getattr(target, "shape", ())),
          "token ids [batch, pos] with a bool mask of the same shape, at least one True")


def logit_diff(good: torch.Tensor, bad: torch.Tensor, mask: torch.Tensor) -> Metric:
    """Mean of ``logits[b, p, good[b, p]] - logits[b, p, bad[b, p]]`` over the positions where
    ``mask`` [batch, pos] is True (logits at p predict token p + 1)."""
    _check_targets("good", good, mask)
    check(bad.shape == good.shape, "bad", tuple(bad.shape), f"the shape of good {tuple(good.shape)}")

    def metric(logits: torch.Tensor) -> torch.Tensor:
        x = logits.float()
        diff = (x.gather(-1, good.to(x.device)[..., None])
                - x.gather(-1, bad.to(x.device)[..., None]))[..., 0]
        return diff[mask.to(x.device)].mean()
    return metric


def target_logprob(target: torch.Tensor, mask: torch.Tensor) -> Metric:
    """Mean log-probability log softmax(logits)[b, p, target[b, p]] where ``mask`` is True."""
    _check_targets("target", target, mask)

    def metric(logits: torch.Tensor) -> torch.Tensor:
        logp = torch.log_softmax(logits.float(), -1)
        return logp.gather(-1, target.to(logp.device)[..., None])[..., 0][mask.to(logp.device)].mean()
    return metric


def scored_loss(batch: Batch) -> Metric:
    """The task's loss: cross-entropy (nats) over ``batch``'s scored targets (lower is better;
    ``Patched.effect`` is signed by the gap, so it reads the same way as for a logit)."""
    check(isinstance(batch, Batch), "batch", type(batch).__name__, "a toymech Batch")
    return lambda logits: masked_cross_entropy(logits, batch.to(logits.device))


# --- results ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Patched:
    """Metric values of patched runs and of the two unpatched runs.

    ``values``: the patched runs' metric, shaped by the experiment ([n_layers, n_heads],
    [n_layers, n_heads, pos], [n_layers], ... or a 0-d tensor for one path). ``clean``,
    ``corrupted``: the metric of the unpatched clean and corrupted runs. ``direction``:
    "denoise" (corrupted run patched with clean activations) or "noise".
    """

    values: torch.Tensor
    clean: float
    corrupted: float
    direction: str

    @property
    def gap(self) -> float:
        """m_clean - m_corrupted: what the corruption changes."""
        return self.clean - self.corrupted

    @property
    def effect(self) -> torch.Tensor:
        """(m_patched - m_target) / (m_source - m_target) (see the module docstring); NaN where
        the two runs do not differ (a gap of exactly 0)."""
        target, source = ((self.corrupted, self.clean) if self.direction == "denoise"
                          else (self.clean, self.corrupted))
        span = source - target
        if span == 0:
            return torch.full_like(self.values, float("nan"))
        return (self.values - target) / span


# --- plumbing --------------------------------------------------------------------------------
def _pair(model, clean, corrupted, metric):
    """The checked inputs of every patching function (``analysis.inputs``): a HookedTransformer
    with finite weights, token ids it can read, two batches of one shape, a callable metric."""
    model = check_transformer(model)
    check_callable(metric, "metric", "logits [batch, pos, d_vocab] -> a scalar")
    clean, corrupted = (check_tokens(t, n, model.cfg.d_vocab, model.cfg.n_ctx).to(model.cfg.device)
                        for t, n in ((clean, "clean"), (corrupted, "corrupted")))
    check(clean.shape == corrupted.shape, "corrupted", tuple(corrupted.shape),
          f"the shape of clean {tuple(clean.shape)}")
    return clean, corrupted


def _direction(direction: str) -> str:
    check(direction in DIRECTIONS, "direction", direction, f"one of {DIRECTIONS}")
    return direction


def _heads(model: HookedTransformer, heads: Iterable[Head] | None, name: str = "heads"
           ) -> list[Head]:
    L, H = model.cfg.n_layers, model.cfg.n_heads
    if heads is None:
        return [(l, h) for l in range(L) for h in range(H)]
    out = []
    for head in heads:
        ok = (isinstance(head, (tuple, list)) and len(head) == 2
              and all(isinstance(x, int) and not isinstance(x, bool) for x in head)
              and 0 <= head[0] < L and 0 <= head[1] < H)
        check(ok, name, head, f"(layer, head) pairs with layer < {L} and head < {H}")
        out.append((int(head[0]), int(head[1])))
    check(bool(out), name, heads, "at least one (layer, head)")
    return out


def _position_mask(positions, shape: tuple[int, int], device) -> torch.Tensor:
    """[batch, pos] bool from None (every position), a [pos] or a [batch, pos] bool mask."""
    if positions is None:
        return torch.ones(shape, dtype=torch.bool, device=device)
    check(isinstance(positions, torch.Tensor) and positions.dtype == torch.bool
          and tuple(positions.shape) in (shape[1:], shape), "positions",
          tuple(getattr(positions, "shape", ())), f"None or a bool mask [pos] or {shape}")
    return positions.to(device).expand(shape)


@contextlib.contextmanager
def split_inputs(model: HookedTransformer):
    """Expose per-head q/k/v inputs (and MLP inputs) for the duration; the model's own flags are
    restored afterwards."""
    old = (model.cfg.use_split_qkv_input, model.cfg.use_hook_mlp_in)
    model.set_use_split_qkv_input(True)
    if not model.cfg.attn_only:
        model.set_use_hook_mlp_in(True)
    try:
        yield model
    finally:
        model.cfg.use_split_qkv_input, model.cfg.use_hook_mlp_in = old


@torch.no_grad()
def run_metric(model: HookedTransformer, tokens: torch.Tensor, metric: Metric,
               fwd_hooks: Sequence = (), run: str = "a patched run") -> float:
    """``metric`` of one (optionally hooked) run; a NaN or inf is a ValueError naming ``run``."""
    with model.hooks(fwd_hooks=list(fwd_hooks)):
        return finite(metric(model(tokens)), "metric", f"it gave a non-finite value on {run}")


@torch.no_grad()
def _cache(model, tokens, suffixes: tuple[str, ...]):
    _, cache = model.run_with_cache(tokens, names_filter=lambda n: n.endswith(suffixes))
    return cache


def replace_head(source_z: torch.Tensor, head: int, mask: torch.Tensor):
    """A ``hook_z`` hook putting ``source_z[:, :, head]`` where ``mask`` [batch, pos] holds."""
    def hook(z, hook):
        z[:, :, head] = torch.where(mask[..., None], source_z[:, :, head], z[:, :, head])
        return z
    return hook


def _patched(model, values: torch.Tensor, clean, corrupted, metric: Metric, direction: str
             ) -> Patched:
    """``values`` with the metric of the unpatched clean and corrupted runs."""
    return Patched(values, run_metric(model, clean, metric, run="the clean run"),
                   run_metric(model, corrupted, metric, run="the corrupted run"), direction)


# --- activation patching ---------------------------------------------------------------------
@torch.no_grad()
def patch_heads(model: HookedTransformer, clean: torch.Tensor, corrupted: torch.Tensor,
                metric: Metric, *, direction: str = "denoise", per_position: bool = False,
                positions: torch.Tensor | None = None) -> Patched:
    """Patch each head's output z (``hook_z``) from the source run into the target run.

    values: [n_layers, n_heads] (the head patched at every position in ``positions``, default
    all) or, with ``per_position``, [n_layers, n_heads, pos] (one position at a time).

    ``model`` runs on the ``clean`` and ``corrupted`` token batches; ``metric(logits)`` is the
    number patched (e.g. ``logit_diff``); ``direction``: ``denoise`` (corrupted run, clean
    activations) or ``noise``.
    """
    clean, corrupted = _pair(model, clean, corrupted, metric)
    direction = _direction(direction)
    source, target = (clean, corrupted) if direction == "denoise" else (corrupted, clean)
    z = _cache(model, source, ("hook_z",))
    L, H, (B, T) = model.cfg.n_layers, model.cfg.n_heads, clean.shape
    where = _position_mask(positions, (B, T), clean.device)
    masks = ([where & (torch.arange(T, device=clean.device) == p) for p in range(T)]
             if per_position else [where])
    values = torch.zeros(L, H, len(masks))
    for layer in range(L):
        src = z[f"blocks.{layer}.attn.hook_z"]
        for head in range(H):
            for i, mask in enumerate(masks):
                hook = (f"blocks.{layer}.attn.hook_z", replace_head(src, head, mask))
                values[layer, head, i] = run_metric(model, target, metric, [hook])
    values = values if per_position else values[..., 0]
    return _patched(model, values, clean, corrupted, metric, direction)


@torch.no_grad()
def patch_layers(model: HookedTransformer, clean: torch.Tensor, corrupted: torch.Tensor,
                 metric: Metric, *, site: str = "attn_out", direction: str = "denoise",
                 per_position: bool = False) -> Patched:
    """Patch a whole layer's ``site`` (``resid_pre``: the residual entering the block;
    ``attn_out``: its attention output; ``mlp_out``: its MLP output) from source into target.
    values: [n_layers] or, with ``per_position``, [n_layers, pos].

    ``model`` runs on the ``clean`` and ``corrupted`` token batches; ``metric(logits)`` is the
    number patched; ``direction``: ``denoise`` or ``noise``."""
    clean, corrupted = _pair(model, clean, corrupted, metric)
    check(site in LAYER_SITES, "site", site, f"one of {LAYER_SITES}")
    check(site != "mlp_out" or not model.cfg.attn_only, "site", site,
          "resid_pre or attn_out for an attention-only model")
    direction = _direction(direction)
    source, target = (clean, corrupted) if direction == "denoise" else (corrupted, clean)
    cache = _cache(model, source, (f"hook_{site}",))
    L, T = model.cfg.n_layers, clean.shape[1]
    cols = [torch.arange(T, device=clean.device) == p for p in range(T)] if per_position else [None]
    values = torch.zeros(L, len(cols))
    for layer in range(L):
        name = f"blocks.{layer}.hook_{site}"
        for i, col in enumerate(cols):
            def hook(x, hook, src=cache[name], col=col):
                return src.clone() if col is None else torch.where(col[None, :, None], src, x)
            values[layer, i] = run_metric(model, target, metric, [(name, hook)])
    values = values if per_position else values[:, 0]
    return _patched(model, values, clean, corrupted, metric, direction)


@torch.no_grad()
def patch_inputs(model: HookedTransformer, clean: torch.Tensor, corrupted: torch.Tensor,
                 metric: Metric, receivers, *, direction: str = "denoise",
                 positions: torch.Tensor | None = None) -> Patched:
    """Replace the q, k or v input of receiver heads (``(layer, head, "q"|"k"|"v")``, one or a
    list) by the source run's: every path into that input at once (e.g. the token a head reads
    through its values). ``positions`` [pos] or [batch, pos]: only there. values: 0-d.

    ``model`` runs on the ``clean`` and ``corrupted`` token batches; ``metric(logits)`` is the
    number patched; ``receivers``: the inputs replaced; ``direction``: ``denoise`` or
    ``noise``."""
    clean, corrupted = _pair(model, clean, corrupted, metric)
    direction = _direction(direction)
    receivers = _receivers(model, receivers, [(-1, 0)])
    check(all(isinstance(r, tuple) and len(r) == 3 for r in receivers), "receivers", receivers,
          "(layer, head, 'q'|'k'|'v') inputs")
    source, target = (clean, corrupted) if direction == "denoise" else (corrupted, clean)
    where = _position_mask(positions, tuple(clean.shape), clean.device)
    with split_inputs(model):
        cache = _cache(model, source, ("_input",))
        hooks = []
        for layer, head, s in receivers:
            name = f"blocks.{layer}.hook_{s}_input"

            def hook(x, hook, src=cache[name], head=head):
                x = x.clone()
                x[:, :, head] = torch.where(where[..., None], src[:, :, head], x[:, :, head])
                return x
            hooks.append((name, hook))
        value = run_metric(model, target, metric, hooks)
    return _patched(model, torch.tensor(value), clean, corrupted, metric, direction)


# --- path patching ---------------------------------------------------------------------------
def _one_receiver(r) -> bool:
    return r == "logits" or (isinstance(r, tuple) and (
        (len(r) == 2 and r[0] == "mlp") or (len(r) == 3 and isinstance(r[2], str))))


def _one_head(h) -> bool:
    return isinstance(h, tuple) and len(h) == 2 and all(isinstance(x, int) for x in h)


def _receivers(model: HookedTransformer, receivers, senders: list[Head]) -> list:
    """Normalised receivers, each after every sender: (l, h, "q"/"k"/"v"), ("mlp", l), "logits"."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    first = min(l for l, _ in senders)  # (-1, 0): no sender, every layer can receive
    items = [receivers] if _one_receiver(receivers) else list(receivers)
    check(bool(items), "receivers", receivers, "at least one receiver")
    out = []
    for r in items:
        if r == "logits":
            out.append(r)
        elif isinstance(r, (tuple, list)) and len(r) == 2 and r[0] == "mlp":
            check(not model.cfg.attn_only and isinstance(r[1], int) and first <= r[1] < L,
                  "receivers", r, f"('mlp', layer) with {first} <= layer < {L} (models with MLPs)")
            out.append(("mlp", int(r[1])))
        else:
            ok = (isinstance(r, (tuple, list)) and len(r) == 3 and r[2] in ("q", "k", "v")
                  and isinstance(r[0], int) and isinstance(r[1], int)
                  and first < r[0] < L and 0 <= r[1] < H)
            check(ok, "receivers", r, f"(layer, head, 'q'|'k'|'v') with {first} < layer < {L} "
                  f"and head < {H}, ('mlp', layer) or 'logits'")
            out.append((int(r[0]), int(r[1]), r[2]))
    return out


def downstream(model: HookedTransformer, sender: Head) -> list:
    """Every reader of ``model``'s residual stream after ``sender``: the q, k and v inputs of
    every head of later layers, every MLP from the sender's layer on, and the logits."""
    layer = sender[0]
    out: list = [(l, h, s) for l in range(layer + 1, model.cfg.n_layers)
                 for h in range(model.cfg.n_heads) for s in "qkv"]
    if not model.cfg.attn_only:
        out += [("mlp", l) for l in range(layer, model.cfg.n_layers)]
    return out + ["logits"]


def _results(model, z_cache, heads: list[Head]) -> torch.Tensor:
    """Σ over ``heads`` of r = z W_O: [batch, pos, d_model] (biases cancel in differences)."""
    total = 0.0
    for layer, head in heads:
        z = z_cache[f"blocks.{layer}.attn.hook_z"][:, :, head]  # [batch, pos, d_head]
        total = total + z @ model.blocks[layer].attn.W_O[head]
    return total


def _add_hooks(model, delta: torch.Tensor, receivers: list) -> list:
    by_site: dict[str, list] = {}
    for r in receivers:
        if r == "logits":
            by_site.setdefault(f"blocks.{model.cfg.n_layers - 1}.hook_resid_post", []).append(None)
        elif r[0] == "mlp":
            by_site.setdefault(f"blocks.{r[1]}.hook_mlp_in", []).append(None)
        else:
            by_site.setdefault(f"blocks.{r[0]}.hook_{r[2]}_input", []).append(r[1])
    hooks = []
    for name, heads in by_site.items():
        def hook(x, hook, heads=heads):
            if heads[0] is None:  # [batch, pos, d_model]
                return x + delta
            x = x.clone()
            for h in sorted(set(heads)):  # [batch, pos, head, d_model]
                x[:, :, h] = x[:, :, h] + delta
            return x
        hooks.append((name, hook))
    return hooks


@torch.no_grad()
def path_patch(model: HookedTransformer, clean: torch.Tensor, corrupted: torch.Tensor,
               metric: Metric, senders: Head | Sequence[Head], receivers, *,
               direction: str = "denoise", positions: torch.Tensor | None = None) -> Patched:
    """Path patching from ``senders`` (one (layer, head) or several, their results summed) to
    ``receivers`` (see the module docstring). ``positions`` [pos] or [batch, pos] bool: only
    the sender's result at those positions is patched. values: a 0-d tensor.

    ``model`` runs on the ``clean`` and ``corrupted`` token batches; ``metric(logits)`` is the
    number patched; ``direction``: ``denoise`` or ``noise``."""
    clean, corrupted = _pair(model, clean, corrupted, metric)
    direction = _direction(direction)
    senders = _heads(model, [senders] if _one_head(senders) else senders, "senders")
    receivers = _receivers(model, receivers, senders)
    source, target = (clean, corrupted) if direction == "denoise" else (corrupted, clean)
    delta = _results(model, _cache(model, source, ("hook_z",)), senders) - _results(
        model, _cache(model, target, ("hook_z",)), senders)
    delta = delta * _position_mask(positions, tuple(clean.shape), clean.device)[..., None]
    with split_inputs(model):
        value = run_metric(model, target, metric, _add_hooks(model, delta, receivers))
    return _patched(model, torch.tensor(value), clean, corrupted, metric, direction)


@torch.no_grad()
def composition_paths(model: HookedTransformer, clean: torch.Tensor, corrupted: torch.Tensor,
                      metric: Metric, *, direction: str = "denoise"
                      ) -> dict[str, Float[torch.Tensor, "l1 h1 l2 h2"]]:
    """Path patching of every earlier head into every later head's q, k and v input separately:
    {"q"|"k"|"v": patched metric [n_layers, n_heads, n_layers, n_heads]} (NaN where l2 <= l1),
    plus "clean" and "corrupted" (0-d). One run per (sender, receiver, input).

    ``model`` runs on the ``clean`` and ``corrupted`` token batches, ``metric(logits)`` the
    number patched, ``direction`` ``denoise`` or ``noise`` (as ``path_patch``)."""
    _pair(model, clean, corrupted, metric)
    L, H = model.cfg.n_layers, model.cfg.n_heads
    out = {s: torch.full((L, H, L, H), float("nan")) for s in "qkv"}
    base = None
    for l1 in range(L):
        for h1 in range(H):
            for l2 in range(l1 + 1, L):
                for h2 in range(H):
                    for s in "qkv":
                        p = path_patch(model, clean, corrupted, metric, (l1, h1), (l2, h2, s),
                                       direction=direction)
                        out[s][l1, h1, l2, h2] = p.values
                        base = p
    check(base is not None, "model", f"{L} layer(s)", "at least 2 layers for composition paths")
    out["clean"], out["corrupted"] = torch.tensor(base.clean), torch.tensor(base.corrupted)
    return out


def spread(effects: torch.Tensor) -> dict[str, float]:
    """How concentrated an effect is over components (e.g. heads): with a = ``abs(effects)`` (NaN
    dropped), ``top_share`` = max a / Σ a and ``effective_number`` = (Σ a)² / Σ a² (the
    participation ratio: 1 = one component carries it all, n = spread evenly over n)."""
    a = effects.detach().flatten().float().abs()
    a = a[~torch.isnan(a)]
    total = float(a.sum())
    if total == 0:
        return {"top_share": float("nan"), "effective_number": float("nan")}
    return {"top_share": float(a.max()) / total,
            "effective_number": total ** 2 / float((a ** 2).sum())}
