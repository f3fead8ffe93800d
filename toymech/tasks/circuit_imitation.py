"""Circuit imitation: match the next-token distribution of a random target transformer
(random-transformers study, reference.md §C).

Inputs are uniform random token strings. The target is a GPT-2-style transformer (pre-LN, GELU
MLP 4*d) of width ``target_width`` with every weight drawn N(0, 1/target_width) from
``target_seed`` (unit-scale activations at any width, so wider targets compute richer functions)
and its logits multiplied by ``logit_scale`` (sharper distributions: 2.0 gives top-token
probabilities of ~5-60 % over 64 tokens, like the paper's samples). The student is trained on
    KL(p_target || p_student) = sum_v p_target(v) (log p_target(v) - log p_student(v)),
averaged over all positions; ``metrics`` reports ``kl`` (nats), ``loss`` (= kl) and ``acc``
(argmax agreement). The target distribution travels in ``batch.extras["target_logp"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import torch

from .base import Batch, Task, check, register


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

    def __post_init__(self) -> None:
        check(isinstance(self.target_width, int) and self.target_width >= 2, "target_width",
              self.target_width, "an integer >= 2")
        check(isinstance(self.target_layers, int) and self.target_layers >= 1, "target_layers",
              self.target_layers, "an integer >= 1")
        check(isinstance(self.target_heads, int) and self.target_heads >= 1
              and self.target_width % self.target_heads == 0, "target_heads", self.target_heads,
              f"a divisor of target_width={self.target_width}")
        check(isinstance(self.n_tokens, int) and self.n_tokens >= 2, "n_tokens", self.n_tokens,
              "an integer >= 2")
        check(isinstance(self.length, int) and self.length >= 2, "length", self.length,
              "an integer >= 2")
        check(isinstance(self.logit_scale, (int, float)) and self.logit_scale > 0,
              "logit_scale", self.logit_scale, "a number > 0")
        check(isinstance(self.target_seed, int) and self.target_seed >= 0, "target_seed",
              self.target_seed, "an integer >= 0")

    @property
    def vocab(self) -> list[str]:
        return [str(i) for i in range(self.n_tokens)]

    @property
    def seq_len(self) -> int:
        return self.length

    @cached_property
    def _targets(self) -> dict[str, torch.nn.Module]:
        return {}

    def target(self, device: torch.device | str = "cpu") -> torch.nn.Module:
        """The frozen target model on ``device`` (built once per device, deterministic)."""
        key = str(device)
        if key not in self._targets:
            from ..models import ModelConfig, build_model  # models imports tasks: lazy
            cfg = ModelConfig(n_layers=self.target_layers, n_heads=self.target_heads,
                              d_model=self.target_width, d_vocab=self.n_tokens,
                              n_ctx=self.length, attn_only=False, normalization="LN",
                              positions="standard", use_bias=False,
                              init_range=self.target_width ** -0.5, seed=self.target_seed)
            state = torch.random.get_rng_state()  # building a model reseeds the global RNG
            model = build_model(cfg, device).eval().requires_grad_(False)
            torch.random.set_rng_state(state)
            self._targets[key] = model
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
