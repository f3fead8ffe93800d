"""Several seeds of one small config: stacked (torch.func + vmap) vs one after another.

    python benchmarks/bench_multiseed.py [--seeds 4] [--steps 100] [--width 16] [--task parentheses]
                                         [--device auto] [--threads 1]

Prints seconds for each way, the ratio sequential / stacked (> 1: stacking is faster) and the
largest difference between the two ways' trained parameters (they should agree to rounding).
"""

import argparse
import time

import torch

from toymech.devices import resolve_device
from toymech.models import build_model
from toymech.studies import random_transformers as rt
from toymech.training import train, train_stacked


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", type=int, default=4)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--width", type=int, default=16)
    ap.add_argument("--task", default="parentheses")
    ap.add_argument("--mode", default="random")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    args.device = resolve_device(args.device)
    exps = [rt.experiment(args.task, args.width, args.mode, "default", s, steps=args.steps,
                          eval_every=args.steps) for s in range(args.seeds)]
    t = time.perf_counter()
    sequential = []
    for e in exps:
        model = build_model(e.model, args.device)
        sequential.append(train(model, e.task, e.train, device=args.device, progress=False,
                                log=None).model)
    t_seq = time.perf_counter() - t
    t = time.perf_counter()
    stacked = train_stacked([build_model(e.model, args.device) for e in exps], exps[0].task,
                            [e.train for e in exps], device=args.device, progress=False, log=None)
    t_stack = time.perf_counter() - t
    diff = max(float((a - b).detach().abs().max()) for m1, r in zip(sequential, stacked)
               for m2 in [r.model]
               for a, b in zip(m1.parameters(), m2.parameters()))
    print(f"{args.seeds} seeds x {args.steps} steps, {args.task}, width {args.width}, "
          f"{args.mode}, device {args.device}, {args.threads} thread(s)")
    print(f"sequential {t_seq:.2f} s, stacked {t_stack:.2f} s, ratio {t_seq / t_stack:.2f}, "
          f"max parameter difference {diff:.2e}")


if __name__ == "__main__":
    main()
