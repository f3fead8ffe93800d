"""Circuit imitation: match the next-token distribution of a random target transformer
(Zhong & Andreas 2024; see docs/sources.md, study 3).

Inputs are uniform random token strings. The target (``RandomGPT2``, plain PyTorch, defined here
so the task needs nothing above the task layer) is a GPT-2-style transformer (pre-LN, causal
multi-head attention, GELU MLP 4*d, no biases) of width ``target_width`` with every weight drawn
N(0, 1/target_width) from a ``torch.Generator`` seeded with ``target_seed`` (unit-scale
activations at any width, so wider targets compute richer functions) and its logits multiplied
by ``logit_scale`` (sharper distributions: 2.0 gives top-token probabilities of ~5-60 % over 64
tokens, like the paper's samples). The student is trained on
    KL(p_target || p_student) = sum_v p_target(v) (log p_target(v) - log p_student(v)),
averaged over all positions; ``metrics`` reports ``kl`` (nats), ``loss`` (= kl) and ``acc``
(argmax agreement). The target distribution travels in ``batch.extras["target_logp"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch
from torch import nn

from .base import (
    Batch,
    Task,
    check,
    check_float,
    check_int,
    check_seed,
    is_int,
    register,
    set_checked,
)


@register("circuit_imitation")
@dataclass(frozen=True)
class CircuitImitation(Task):
    target_width: int = 64
    target_layers: int = 1
    target_heads: int = 2
    n_tokens: int = 512
    length: int = 16
    logit_scale: float = 2.0
    target_seed: int = 0
    # 2: the plain-PyTorch RandomGPT2 below. Part of the task's config (and so of zoo keys):
    # students trained against the earlier TransformerLens-built target are never reused.
    target_version: int = 2

    def __post_init__(self) -> None:
        set_checked(self, target_width=check_int("target_width", self.target_width, 2, 4096),
                    target_layers=check_int("target_layers", self.target_layers, 1, 64),
                    target_heads=check_int("target_heads", self.target_heads, 1, 256),
                    n_tokens=check_int("n_tokens", self.n_tokens, 2, 100_000),
                    length=check_int("length", self.length, 2, 4096),
                    logit_scale=check_float("logit_scale", self.logit_scale, 0.0, 1000.0,
                                            lo_open=True),
                    target_seed=check_seed(self.target_seed, "target_seed"))
        check(self.target_width % self.target_heads == 0, "target_heads", self.target_heads,
              f"a divisor of target_width={self.target_width}")
        check(is_int(self.target_version) and self.target_version == 2, "target_version",
              self.target_version, "2 (the only target this version builds)")

    @property
    def vocab(self) -> list[str]:
        return [str(i) for i in range(self.n_tokens)]

    @property
    def seq_len(self) -> int:
        return self.length

    @cached_property
    def _targets(self) -> dict[str, RandomGPT2]:
        return {}

    def target(self, device: torch.device | str = "cpu") -> RandomGPT2:
        """The frozen target model on ``device`` (built once per device; the same weights on
        every device, drawn on the CPU from ``target_seed``)."""
        key = str(device)
        if key not in self._targets:
            self._targets[key] = RandomGPT2(self.n_tokens, self.length, self.target_width,
                                            self.target_layers, self.target_heads,
                                            self.target_seed).to(device)
        return self._targets[key]

    @torch.no_grad()
    def target_logp(self, tokens: torch.Tensor) -> torch.Tensor:
        """[B, T, n_tokens] log-probabilities of the target's next-token distribution."""
        logits = self.target(tokens.device)(tokens).float() * self.logit_scale
        return torch.log_softmax(logits, dim=-1)

    def sample(self, batch_size: int, generator: torch.Generator) -> Batch:
        self.check_batch_size(batch_size)
        tokens = torch.randint(0, self.n_tokens, (batch_size, self.length), generator=generator,
                               device=generator.device)
        scored = torch.ones_like(tokens, dtype=torch.bool)
        scored[:, 0] = False
        return Batch(tokens, scored, {"target_logp": self.target_logp(tokens)})

    def loss(self, logits: torch.Tensor, batch: Batch) -> torch.Tensor:
        return kl_to_target(logits, batch)

    def metrics(self, logits: torch.Tensor, batch: Batch) -> dict[str, float]:
        kl = float(kl_to_target(logits, batch))
        agree = logits[:, :-1].argmax(-1) == batch.extras["target_logp"][:, :-1].argmax(-1)
        return {"loss": kl, "kl": kl, "acc": float(agree[batch.target_mask].float().mean())}


def kl_to_target(logits: torch.Tensor, batch: Batch) -> torch.Tensor:
    """Mean over scored positions of KL(p_target || softmax(logits)) in nats."""
    target = batch.extras["target_logp"][:, :-1]
    logq = torch.log_softmax(logits[:, :-1].float(), dim=-1)
    kl = (target.exp() * (target - logq)).sum(-1)
    mask = batch.target_mask
    return (kl * mask).sum() / mask.sum().clamp(min=1)


def _layer_norm(x: torch.Tensor) -> torch.Tensor:
    """LayerNorm at initialisation (gain 1, bias 0): (x - mean) / sqrt(var + 1e-5)."""
    return torch.nn.functional.layer_norm(x, x.shape[-1:])


class RandomGPT2(nn.Module):
    """A GPT-2-style transformer frozen at a random initialisation (the imitation target).

    x_0 = W_E[tokens] + W_pos[:T]
    x <- x + sum_h softmax(causal(LN(x) W_Q^h (LN(x) W_K^h)^T / sqrt(d_head))) LN(x) W_V^h W_O^h
    x <- x + GELU(LN(x) W_in) W_out                                     (W_in: [d, 4d])
    logits = LN(x) W_U                                                  [batch, T, n_tokens]

    Every weight is drawn N(0, 1/d) (d = ``width``) from one generator seeded with ``seed``, in
    a fixed order, on the CPU: the same function on every device.
    """

    def __init__(self, n_tokens: int, n_ctx: int, width: int, n_layers: int, n_heads: int,
                 seed: int):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        std = width ** -0.5

        def draw(*shape: int) -> nn.Parameter:
            return nn.Parameter(torch.randn(*shape, generator=gen) * std, requires_grad=False)

        self.n_heads, self.d_head = n_heads, width // n_heads
        self.W_E, self.W_pos = draw(n_tokens, width), draw(n_ctx, width)
        self.layers = nn.ModuleList()
        for _ in range(n_layers):
            layer = nn.Module()
            layer.W_QKV = draw(3, width, width)  # Q, K, V: [d_model, n_heads * d_head]
            layer.W_O, layer.W_in, layer.W_out = draw(width, width), draw(width, 4 * width), draw(
                4 * width, width)
            self.layers.append(layer)
        self.W_U = draw(width, n_tokens)
        self.eval()

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        B, T = tokens.shape
        x = self.W_E[tokens] + self.W_pos[:T]                                    # [B, T, d]
        causal = torch.ones(T, T, dtype=torch.bool, device=tokens.device).tril()
        for layer in self.layers:
            h = _layer_norm(x)
            q, k, v = (torch.einsum("btd,de->bte", h, w).view(B, T, self.n_heads, self.d_head)
                       .transpose(1, 2) for w in layer.W_QKV)                  # [B, H, T, dh]
            scores = (q @ k.transpose(-1, -2)) / self.d_head ** 0.5           # [B, H, T, T]
            pattern = scores.masked_fill(~causal, float("-inf")).softmax(-1)
            z = (pattern @ v).transpose(1, 2).reshape(B, T, -1)               # [B, T, d]
            x = x + z @ layer.W_O
            x = x + torch.nn.functional.gelu(_layer_norm(x) @ layer.W_in) @ layer.W_out
        return _layer_norm(x) @ self.W_U
