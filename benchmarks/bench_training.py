"""Training speed of the 2-layer induction toy, every variant measured in the same run, repeats
interleaved (so load changes hit all alike), medians and ratios against the plain loop:

* plain      : a plain PyTorch module with the same math (written here), a bare training loop;
* hooked     : the same bare loop calling the HookedTransformer's own ``model(tokens)``;
* fast       : the same bare loop calling ``toymech.models.fast.fast_forward(model)``;
* toymech    : ``toymech.training.train`` (uses the fast forward; target >= 1.0x plain);
* toymech-0  : ``train`` with ``TOYMECH_FAST=0`` (the hooked forward, as before the fast path).

MFU: the FLOPs of one training step are counted analytically (every matmul of the forward pass,
x 3 for forward + backward) and divided by the step time, against the fp32 matmul peak measured in
the same run on the same threads (``--peak-size`` square matmuls); the gap between the two is what
the step spends outside large matmuls (small batched matmuls, softmax, copies, dispatch).

``--whole-process`` also times ``toymech train induction-2l --size paper --steps N`` as a
subprocess against a subprocess running the plain loop for N steps (start-up included).

    python benchmarks/bench_training.py [--steps 300] [--device auto] [--threads N]
        [--repeats 3] [--whole-process [--process-steps 3000] [--process-repeats 1]]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import torch

from toymech import tasks
from toymech.devices import resolve_device
from toymech.models import ModelConfig, build_model
from toymech.models.fast import fast_forward
from toymech.models.reference import PlainAttnOnly, bare_loop_seconds
from toymech.training import TrainConfig, train


def _bare_loop(model, forward, task, steps, batch_size, device, seed=0) -> float:
    """steps/s of a bare AdamW loop (10 warm-up steps excluded) on ``forward``'s logits."""
    return 1.0 / bare_loop_seconds(model, forward, task, steps, batch_size, device, seed, warmup=10)


def plain_steps_per_s(task, steps, batch_size, device) -> float:
    model = PlainAttnOnly().to(device)
    return _bare_loop(model, model, task, steps, batch_size, device)


def hooked_steps_per_s(task, steps, batch_size, device) -> float:
    model = build_model(ModelConfig(n_layers=2), device)
    return _bare_loop(model, model, task, steps, batch_size, device)


def fast_steps_per_s(task, steps, batch_size, device) -> float:
    model = build_model(ModelConfig(n_layers=2), device)
    forward = fast_forward(model)
    assert forward is not None
    return _bare_loop(model, forward, task, steps, batch_size, device)


def toymech_steps_per_s(task, steps, batch_size, device, fast: bool = True) -> float:
    old = os.environ.get("TOYMECH_FAST")
    os.environ["TOYMECH_FAST"] = "1" if fast else "0"
    try:
        model = build_model(ModelConfig(n_layers=2), device)
        warm = TrainConfig(steps=10, batch_size=batch_size, eval_every=10, eval_size=64)
        train(model, task, warm, device=device, progress=False, log=None)
        cfg = TrainConfig(steps=steps, batch_size=batch_size, eval_every=steps, eval_size=64)
        result = train(model, task, cfg, device=device, progress=False, log=None)
    finally:
        if old is None:
            del os.environ["TOYMECH_FAST"]
        else:
            os.environ["TOYMECH_FAST"] = old
    return steps / result.seconds


def _sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def _timed(cmd: list[str], env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def whole_process(steps: int, threads: int | None, device: str, repeats: int) -> None:
    """Wall time of ``toymech train induction-2l --size paper --steps N`` vs the plain loop."""
    env = dict(os.environ)
    if threads:
        # TOYMECH_THREADS: the CLI's own thread policy would otherwise pick the free cores
        env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = env["TOYMECH_THREADS"] = str(threads)
    toymech = os.path.join(os.path.dirname(sys.executable), "toymech")
    plain_cmd = [sys.executable, __file__, "--plain-process", str(steps), "--device", device]
    if threads:
        plain_cmd += ["--threads", str(threads)]
    plain, ours = [], []
    with tempfile.TemporaryDirectory() as cache:
        ours_cmd = [toymech, "train", "induction-2l", "--size", "paper", "--steps", str(steps),
                    "--device", device, "--cache", cache, "--retrain", "-q"]
        for _ in range(repeats):
            plain.append(_timed(plain_cmd, env))
            ours.append(_timed(ours_cmd, env))
    p, o = _median(plain), _median(ours)
    print(f"whole process, {steps} steps: plain {p:.1f} s, toymech train {o:.1f} s "
          f"(runs: {', '.join(f'{x:.1f}' for x in plain)} / {', '.join(f'{x:.1f}' for x in ours)})")
    print(f"ratio (speed) toymech/plain = {p / o:.2f}")


def step_flops(batch: int, n_layers: int = 2, n_heads: int = 4, d_model: int = 32,
               d_vocab: int = 26, n_ctx: int = 24) -> float:
    """FLOPs of one training step of the toy: 2 * multiply-adds of every forward matmul (fused
    QKV, output projection, attention scores and mixing per layer, unembedding), x 3 for the
    backward pass (two matmuls per forward one)."""
    tokens, d_head = batch * n_ctx, d_model // n_heads
    per_layer = tokens * 4 * d_model * d_model + 2 * batch * n_heads * n_ctx * n_ctx * d_head
    forward = 2 * (n_layers * per_layer + tokens * d_model * d_vocab)
    return 3.0 * forward


def matmul_peak(device: torch.device, n: int = 1024, repeats: int = 10) -> float:
    """fp32 GFLOP/s of square n x n matmuls on ``device`` with the current threads (median)."""
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    a @ b
    times = []
    for _ in range(repeats):
        _sync(device)
        t = time.perf_counter()
        a @ b
        _sync(device)
        times.append(time.perf_counter() - t)
    return 2 * n ** 3 / _median(times) / 1e9


def _median(xs: list[float]) -> float:
    return sorted(xs)[len(xs) // 2]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch-size", type=int, default=256)
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--peak-size", type=int, default=1024)
    ap.add_argument("--whole-process", action="store_true")
    ap.add_argument("--process-steps", type=int, default=3000)
    ap.add_argument("--process-repeats", type=int, default=1)
    ap.add_argument("--plain-process", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    device = resolve_device(args.device)
    task = tasks.get("repeated_blocks")
    if args.plain_process is not None:  # the plain side of --whole-process
        plain_steps_per_s(task, args.plain_process, args.batch_size, device)
        return
    runs = {"plain": [], "hooked": [], "fast": [], "toymech": [], "toymech-0": []}
    measure = {"plain": plain_steps_per_s, "hooked": hooked_steps_per_s,
               "fast": fast_steps_per_s, "toymech": toymech_steps_per_s,
               "toymech-0": lambda *a: toymech_steps_per_s(*a, fast=False)}
    for _ in range(args.repeats):  # interleaved, so load changes hit every variant alike
        for name, fn in measure.items():
            runs[name].append(fn(task, args.steps, args.batch_size, device))
    print(f"device={device} threads={torch.get_num_threads()} batch={args.batch_size} "
          f"steps={args.steps} repeats={args.repeats}")
    if args.repeats:  # --repeats 0: the whole-process comparison only
        p = _median(runs["plain"])
        for name, xs in runs.items():
            print(f"{name:10s}: {_median(xs):7.1f} steps/s  {_median(xs) / p:5.2f}x plain  "
                  f"(runs: {', '.join(f'{x:.1f}' for x in xs)})")
        print("target (issue 43): toymech >= 1.50x plain")
        peak, flops = matmul_peak(device, args.peak_size), step_flops(args.batch_size)
        print(f"MFU: {flops / 1e6:.0f} MFLOP per step (analytic); fp32 matmul peak "
              f"{peak:.1f} GFLOP/s ({args.peak_size}^3, measured now)")
        for name, xs in runs.items():
            got = _median(xs) * flops / 1e9
            print(f"  {name:10s}: {got:6.1f} GFLOP/s = {100 * got / peak:4.1f} % of the peak")
    if args.whole_process:
        whole_process(args.process_steps, args.threads, args.device, args.process_repeats)


if __name__ == "__main__":
    main()
