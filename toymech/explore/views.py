"""What the explorer shows, as pure functions of a model and one sequence.

Notation: tokens ``x_0 .. x_{T-1}``; logits at position p predict ``x_{p+1}``; ``A^{l,h}`` is
head (l, h)'s attention pattern [T, T] (query, key); ``z^{l,h}`` its value-weighted output
[T, d_head].

* predictions: ``softmax(logits[p])``, its top ``k`` tokens and probabilities, per position.
* loss at a scored position p: ``-log softmax(logits[p])[x_{p+1}]`` (nats).
* attention row at position p: ``A^{l,h}[p, :]``.
* direct logit attribution of head (l, h) to the target t at position p:
  ``DLA = LN_final(z^{l,h}[p] W_O^{l,h}) · W_U[:, t]``, the head's result projected on the
  target's unembedding direction, divided by the final LayerNorm's scale taken from the cache
  (centred first for LayerNorm) where the model has one. Read through TransformerLens'
  ``ActivationCache.stack_head_results`` and ``logit_attrs``.
* ablation: head (l, h)'s ``z`` replaced by 0 (``zero``) or by its mean over a reference batch,
  per position (``mean``), through forward hooks on ``hook_z`` that live only for one run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import torch
from transformer_lens import HookedTransformer

from ..analysis.evaluation import head_ablation_hooks
from ..core import check, is_int

KINDS = ("zero", "mean")
Ablation = tuple[int, int, str]  # (layer, head, kind)
TOP_K = 3


def check_head(model: HookedTransformer, layer: int, head: int) -> tuple[int, int]:
    """(layer, head) of ``model``, else a ValueError naming the bad one."""
    L, H = model.cfg.n_layers, model.cfg.n_heads
    check(is_int(layer) and 0 <= int(layer) < L, "layer",
          layer, f"an integer in 0..{L - 1} (the model has {L} layers)")
    check(is_int(head) and 0 <= int(head) < H, "head", head,
          f"an integer in 0..{H - 1} (the model has {H} heads per layer)")
    return int(layer), int(head)  # numpy integers too (a table's index), as Python ints


@torch.no_grad()
def head_means(model: HookedTransformer, tokens: torch.Tensor) -> dict[int, torch.Tensor]:
    """Per layer, every head's mean output over a reference batch ``tokens`` [B, T]:
    ``mean_b z[b, p, h, :]`` -> [T, n_heads, d_head] (what a ``mean`` ablation puts in)."""
    _, cache = model.run_with_cache(tokens.to(model.cfg.device),
                                    names_filter=lambda n: n.endswith("hook_z"))
    return {l: cache[f"blocks.{l}.attn.hook_z"].mean(0) for l in range(model.cfg.n_layers)}


def ablation_hooks(model: HookedTransformer, ablated: Iterable[Ablation],
                   means: dict[int, torch.Tensor] | None) -> list:
    """``hook_z`` forward hooks that zero or mean-ablate each (layer, head, kind)
    (``analysis.evaluation.head_ablation_hooks``)."""
    return head_ablation_hooks(ablated, model.cfg.n_layers, model.cfg.n_heads, means)


@torch.no_grad()
def run(model: HookedTransformer, tokens: torch.Tensor, hooks: Sequence = ()):
    """One cached forward pass of ``tokens`` [T] with ``hooks`` attached for this run only:
    (logits [T, d_vocab] float, the ActivationCache)."""
    with model.hooks(fwd_hooks=list(hooks)):
        logits, cache = model.run_with_cache(tokens[None].to(model.cfg.device))
    return logits[0].float(), cache


def predictions(logits: torch.Tensor, vocab: Sequence[str], k: int = TOP_K) -> list[list[tuple]]:
    """Per position, the ``k`` most probable next tokens with their probabilities."""
    probs = torch.softmax(logits, -1)
    top = probs.topk(min(k, probs.shape[-1]), dim=-1)
    return [[(vocab[int(i)], float(p)) for p, i in zip(ps, ids)]
            for ps, ids in zip(top.values, top.indices)]


def losses(logits: torch.Tensor, tokens: torch.Tensor, scored: torch.Tensor) -> dict[int, float]:
    """``{p: -log softmax(logits[p])[x_{p+1}]}`` for every p whose target ``x_{p+1}`` is scored."""
    logp = torch.log_softmax(logits[:-1], -1)
    nll = -logp.gather(-1, tokens[1:, None].to(logp.device))[:, 0]
    return {p: float(nll[p]) for p in range(len(nll)) if bool(scored[p + 1])}


def attention_rows(cache, n_layers: int, position: int) -> np.ndarray:
    """``A^{l,h}[position, :]`` for every head: [n_layers, n_heads, T]."""
    return np.stack([cache["pattern", l][0, :, position].detach().cpu().numpy()
                     for l in range(n_layers)])


def patterns(cache, n_layers: int) -> np.ndarray:
    """Every head's whole pattern: [n_layers, n_heads, T, T]."""
    return np.stack([cache["pattern", l][0].detach().cpu().numpy() for l in range(n_layers)])


def attribution(cache, model: HookedTransformer, position: int, target: int) -> np.ndarray:
    """Each head's direct logit attribution to ``target`` at ``position`` (module docstring):
    [n_layers, n_heads]."""
    stack = cache.stack_head_results(layer=-1, pos_slice=position)  # [L*H, 1, d_model]
    attrs = cache.logit_attrs(stack, tokens=torch.tensor([target]), pos_slice=position)
    return attrs.reshape(model.cfg.n_layers, model.cfg.n_heads).detach().cpu().numpy()
