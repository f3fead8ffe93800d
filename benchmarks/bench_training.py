"""Training speed of the 2-layer induction toy: toymech (TransformerLens HookedTransformer +
toymech's loop) against a plain PyTorch module with the same math, written here, measured in the
same run on the same batches. Prints steps/s of each and the ratio (target: toymech >= 0.8x).

    python benchmarks/bench_training.py [--steps 300] [--device auto] [--threads N]
"""

from __future__ import annotations

import argparse
import math
import time

import torch
from torch import nn

from toymech import tasks
from toymech.devices import make_generator, resolve_device
from toymech.models import ModelConfig, build_model, sinusoid_table
from toymech.tasks import masked_cross_entropy
from toymech.training import TrainConfig, train


class PlainAttnOnly(nn.Module):
    """Attention-only transformer, no biases/LayerNorm, sinusoids added to q and k."""

    def __init__(self, n_layers=2, n_heads=4, d_model=32, d_vocab=26, n_ctx=24):
        super().__init__()
        d_head = d_model // n_heads
        self.n_heads, self.d_head = n_heads, d_head
        self.W_E = nn.Parameter(torch.randn(d_vocab, d_model) * 0.1)
        self.W_U = nn.Parameter(torch.randn(d_model, d_vocab) * 0.1)
        self.qkv = nn.ModuleList(nn.Linear(d_model, 3 * d_model, bias=False) for _ in range(n_layers))
        self.out = nn.ModuleList(nn.Linear(d_model, d_model, bias=False) for _ in range(n_layers))
        self.register_buffer("sin", sinusoid_table(n_ctx, d_head))
        self.register_buffer("mask", torch.tril(torch.ones(n_ctx, n_ctx, dtype=torch.bool)))

    def forward(self, tokens):
        B, T = tokens.shape
        x = self.W_E[tokens]
        for qkv, out in zip(self.qkv, self.out):
            q, k, v = qkv(x).view(B, T, 3, self.n_heads, self.d_head).unbind(2)
            q, k = q + self.sin[:T, None], k + self.sin[:T, None]
            scores = torch.einsum("bqhd,bkhd->bhqk", q, k) / math.sqrt(self.d_head)
            scores = scores.masked_fill(~self.mask[:T, :T], float("-inf"))
            z = torch.einsum("bhqk,bkhd->bqhd", scores.softmax(-1), v).reshape(B, T, -1)
            x = x + out(z)
        return x @ self.W_U


def plain_steps_per_s(task, steps, batch_size, device, seed=0) -> float:
    model = PlainAttnOnly().to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1.0)
    gen = make_generator(seed, device)
    t0 = None
    for step in range(steps + 10):
        if step == 10:  # warm-up steps excluded, as for toymech below
            _sync(device)
            t0 = time.perf_counter()
        batch = task.sample(batch_size, gen)
        loss = masked_cross_entropy(model(batch.tokens), batch)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    _sync(device)
    return steps / (time.perf_counter() - t0)


def toymech_steps_per_s(task, steps, batch_size, device) -> float:
    model = build_model(ModelConfig(n_layers=2), device)
    warm = TrainConfig(steps=10, batch_size=batch_size, eval_every=10, eval_size=64)
    train(model, task, warm, device=device, progress=False, log=None)
    cfg = TrainConfig(steps=steps, batch_size=batch_size, eval_every=steps, eval_size=64)
    result = train(model, task, cfg, device=device, progress=False, log=None)
    return steps / result.seconds


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    task = tasks.get("repeated_blocks")
    plain, ours = [], []
    for _ in range(args.repeats):  # interleaved, so load changes hit both alike
        plain.append(plain_steps_per_s(task, args.steps, args.batch_size, device))
        ours.append(toymech_steps_per_s(task, args.steps, args.batch_size, device))
    p, o = sorted(plain)[len(plain) // 2], sorted(ours)[len(ours) // 2]
    print(f"device={device} threads={torch.get_num_threads()} batch={args.batch_size} "
          f"steps={args.steps} repeats={args.repeats}")
    print(f"plain PyTorch : {p:7.1f} steps/s (runs: {', '.join(f'{x:.1f}' for x in plain)})")
    print(f"toymech       : {o:7.1f} steps/s (runs: {', '.join(f'{x:.1f}' for x in ours)})")
    print(f"ratio toymech/plain = {o / p:.2f}  (target >= 0.80)")


if __name__ == "__main__":
    main()
