"""Baselines of the random-transformers study (Zhong & Andreas 2024; see docs/sources.md,
study 3), in plain PyTorch.

* ``LSTMModel``: token embedding -> a 2-layer LSTM of width d -> linear unembedding.
* ``LinearisedTransformer``: the GPT-2-style transformer of the study with every attention
  pattern softmax(Q K^T) replaced by the lower-triangular matrix of ones, so a head outputs the
  prefix SUM of its values, sum_{s <= t} v_s W_O (no queries or keys at all); the next pre-LN
  LayerNorm absorbs the growing scale. The paper (rebuttal, width 512): parentheses 97.3 %,
  needle 17.7 %, decimal addition 26.4 %.

Both take ``tokens [batch, seq]`` and return logits ``[batch, seq, d_vocab]`` and carry a small
``cfg`` (``n_ctx``, ``d_vocab``, ``d_model``), which is all ``toymech.training.train`` needs, so
they train with the same loop, optimizer and schedule as the transformers, and the zoo
stores them like any other model (``BaselineConfig`` in the experiment's ``model``).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .config import BaselineConfig


class LSTMModel(nn.Module):
    def __init__(self, cfg: BaselineConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.lstm = nn.LSTM(cfg.d_model, cfg.d_model, num_layers=cfg.n_layers, batch_first=True)
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        hidden, _ = self.lstm(self.embed(tokens))
        return self.unembed(hidden)


class LinearisedBlock(nn.Module):
    """x <- x + W_O (A (LN(x) W_V)) with A = lower-triangular ones; x <- x + MLP(LN(x))."""

    def __init__(self, d: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.W_V, self.W_O = nn.Linear(d, d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        v = self.W_V(self.ln1(x))
        x = x + self.W_O(v.cumsum(dim=1))  # cumsum over positions = tril(ones) @ v
        return x + self.mlp(self.ln2(x))


class LinearisedTransformer(nn.Module):
    def __init__(self, cfg: BaselineConfig):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.d_vocab, cfg.d_model)
        self.pos_embed = nn.Parameter(torch.zeros(cfg.n_ctx, cfg.d_model))
        self.blocks = nn.ModuleList(LinearisedBlock(cfg.d_model) for _ in range(cfg.n_layers))
        self.ln_final = nn.LayerNorm(cfg.d_model)
        self.unembed = nn.Linear(cfg.d_model, cfg.d_vocab)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens) + self.pos_embed[: tokens.shape[1]]
        for block in self.blocks:
            x = block(x)
        return self.unembed(self.ln_final(x))


def build_baseline(cfg: BaselineConfig, device: str | torch.device = "cpu") -> nn.Module:
    """A fresh baseline; weights N(0, 0.02) like the transformers, residual outputs scaled."""
    gen = torch.Generator().manual_seed(cfg.seed)
    model = LSTMModel(cfg) if cfg.kind == "lstm" else LinearisedTransformer(cfg)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if cfg.kind == "lstm" and name.startswith("lstm"):
                bound = 1.0 / math.sqrt(cfg.d_model)  # PyTorch's own LSTM init, seeded
                p.copy_(torch.rand(p.shape, generator=gen) * 2 * bound - bound)
            elif name.endswith("bias") or ".ln" in name or name.startswith("ln_"):
                continue  # LayerNorm gains 1, biases 0
            else:
                std = 0.02 / (math.sqrt(2 * cfg.n_layers) if name.endswith(("W_O.weight",
                                                                             "mlp.2.weight"))
                              else 1.0)
                p.copy_(torch.randn(p.shape, generator=gen) * std)
    return model.to(device)
