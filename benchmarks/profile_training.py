"""Where one ``train`` run's time goes, per phase: sampling, forward, loss, backward, optimizer
(with the schedule), evaluation (the logged rows, callbacks included), snapshots, and the rest
of the loop. Each phase is wrapped in ``torch.profiler.record_function`` and timed on the host
(CPU ops are synchronous); with ``--ops`` the profiler's table of the heaviest operators follows.

It trains a named experiment at its size's own schedule (evaluation every ``eval_every`` on
``eval_size`` sequences, its snapshots), cut to ``--steps``:

    python benchmarks/profile_training.py [--experiment induction-2l] [--size default]
        [--steps 300] [--threads 1] [--ops]
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from contextlib import contextmanager

import torch
from torch.profiler import ProfilerActivity, profile, record_function

from toymech import experiments
from toymech.models import build_model
from toymech.training import engines, loop, train

SECONDS: dict[str, float] = defaultdict(float)
_OPEN: list[str] = []  # phases under way: a nested one (the loss inside evaluation) counts once


@contextmanager
def phase(name: str):
    if _OPEN:
        yield
        return
    _OPEN.append(name)
    t0 = time.perf_counter()
    try:
        with record_function(name):
            yield
    finally:
        SECONDS[name] += time.perf_counter() - t0
        _OPEN.pop()


def wrap(owner, attr: str, name: str) -> None:
    inner = getattr(owner, attr)

    def timed(*args, **kwargs):
        with phase(name):
            return inner(*args, **kwargs)

    if isinstance(owner, type):
        setattr(owner, attr, timed)
    else:
        object.__setattr__(owner, attr, timed)  # a task is a frozen dataclass


def instrument(task) -> None:
    """Time the loop's phases by wrapping what it calls (the loop itself is not edited)."""
    wrap(task, "sample", "sampling")
    wrap(task, "loss", "loss")
    wrap(torch.Tensor, "backward", "backward")
    wrap(loop, "_log_rows", "evaluation")
    wrap(loop, "_record", "snapshots")
    eager_init = engines.EagerEngine.__init__

    def init(self, model, cfg):
        eager_init(self, model, cfg)
        fwd = self.forward

        def forward(tokens):
            with phase("forward"):
                return fwd(tokens)
        self.forward = forward
    engines.EagerEngine.__init__ = init
    optimizer = loop._optimizer

    def make(params, cfg):
        opt = optimizer(params, cfg)
        began: list[float] = []
        opt.register_step_pre_hook(lambda *_: began.append(time.perf_counter()))

        def post(*_):
            SECONDS["optimizer"] += time.perf_counter() - began.pop()
        opt.register_step_post_hook(post)
        return opt
    loop._optimizer = make


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiment", default="induction-2l")
    ap.add_argument("--size", default="default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ops", action="store_true", help="the profiler's operator table too")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    exp = experiments.get(args.experiment, args.size, args.seed)
    cfg = exp.train.replace(steps=min(args.steps, exp.train.steps))
    task = exp.task
    instrument(task)
    model = build_model(exp.model)
    with profile(activities=[ProfilerActivity.CPU]) if args.ops else _nothing() as prof:
        t0 = time.perf_counter()
        train(model, task, cfg, device="cpu", progress=False, log=None)
        total = time.perf_counter() - t0
    print(f"{args.experiment} {args.size}: {cfg.steps} steps, batch {cfg.batch_size}, "
          f"eval every {cfg.eval_every} on {cfg.eval_size}, {torch.get_num_threads()} thread(s), "
          f"{total:.1f} s ({1e3 * total / cfg.steps:.1f} ms per step)")
    rest = total - sum(SECONDS.values())
    for name, s in sorted({**SECONDS, "rest of the loop": rest}.items(), key=lambda kv: -kv[1]):
        print(f"  {name:18s} {s:7.2f} s  {100 * s / total:5.1f} %")
    if args.ops:
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


@contextmanager
def _nothing():
    yield None


if __name__ == "__main__":
    main()
